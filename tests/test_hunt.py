"""``hourly hunt``: the pure parts (windows from the daily level, environment diff, the bisect
command, the answer rows and table), the combined ``xla@..,jax@..`` end on real repositories, and
one end-to-end hunt against the real Docker engine (tests/test_hunt_docker.py)."""

from __future__ import annotations

import dataclasses
import io
import json
from itertools import pairwise

import pytest
from rich.console import Console

from hourly.errors import UserError
from hourly.hunt import run as H
from hourly.model import NightlyPoint, Status
from hourly.nightly import plan as N
from hourly.render.hunt import answer_text, print_report


def P(d, status, value=None):
    p = NightlyPoint(d, f"img:{d}", Status(status), value=value, xla=f"x{d}", jax=f"j{d}")
    p.samples = [value - 0.5, value + 0.5] if value is not None else []
    return p


def test_every_regression_and_every_crash_window_becomes_a_window():
    pts = [P("2023-08-20", "ok", 100), P("2023-08-21", "ok", 100.4), P("2023-08-22", "ok", 99.6),
           P("2023-08-23", "ok", 80), P("2023-08-24", "ok", 80.3), P("2023-08-25", "crashed"),
           P("2023-08-26", "timeout"), P("2023-08-27", "ok", 79.8), P("2023-08-28", "missing"),
           P("2023-08-29", "ok", 80.1)]
    pts[8].xla = pts[8].jax = None
    steps = N.detect_steps(pts)
    ws = H.windows_of(pts, steps)
    assert [(w.good.date, w.bad.date, w.kind, w.mode.value) for w in ws] == [
        ("2023-08-22", "2023-08-23", "regression", "metric"),
        ("2023-08-24", "2023-08-25", "crash", "exit")]  # one crash window for two broken days
    reg = ws[0]
    assert reg.from_value == pytest.approx(100, abs=0.5) and reg.to_value == pytest.approx(80, abs=0.5)
    assert reg.end("good") == "xla@x2023-08-22,jax@j2023-08-22"
    # an improvement is not hunted; a date without commits cannot bound a window
    up = [P("2023-08-20", "ok", 80), P("2023-08-21", "ok", 80.2), P("2023-08-22", "ok", 100),
          P("2023-08-23", "ok", 100.3)]
    assert H.windows_of(up, N.detect_steps(up)) == []
    blind = [P("2023-08-20", "ok", 100), P("2023-08-21", "crashed")]
    blind[1].xla = None
    assert H.windows_of(blind, []) == []


def test_window_keys_differ_by_ends_kind_and_container():
    a, b = P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80)
    w = H.HuntWindow(a, b, "regression")
    assert w.key("k", "bad") == H.HuntWindow(a, b, "regression").key("k", "bad")
    assert len({w.key("k", "bad"), w.key("k", "good"), w.key("k2", "bad"),
                H.HuntWindow(a, b, "crash").key("k", "bad")}) == 4


def test_env_diff_lists_only_what_changed():
    good = {"CUDA_VERSION": "12.1.1", "PATH": "/bin", "pip:jax": "0.4.14", "NCCL_VERSION": "2.18"}
    bad = {"CUDA_VERSION": "12.2.0", "PATH": "/bin", "pip:jax": "0.4.14", "CUDNN_VERSION": "8.9"}
    assert H.env_diff(good, bad) == [
        {"name": "CUDA_VERSION", "good": "12.1.1", "bad": "12.2.0"},
        {"name": "CUDNN_VERSION", "good": None, "bad": "8.9"},
        {"name": "NCCL_VERSION", "good": "2.18", "bad": None}]
    assert H.env_diff(good, dict(good)) == []


def settings(tmp_path, **kw):
    s = N.NightlySettings("2023-08-20", "2023-08-26", mounts=[f"{tmp_path}:/dir"], gpus="none",
                          bench_cmd="python3 /dir/b.py --n 3", workdir=str(tmp_path / "w"),
                          higher_is_better=False, repeats=2)
    return H.HuntSettings(s, **kw)


def test_bisect_argv_carries_the_daily_levels_benchmark_and_direction(tmp_path):
    h = settings(tmp_path, build_cmd="/opt/build.sh", max_repeats=5)
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "crashed"), "crash")
    argv = H.bisect_argv(w, h, "/hourly-work/bisect/x")
    assert argv[:8] == ["hourly", "bisect", "--good", "xla@x2023-08-22,jax@j2023-08-22",
                        "--bad", "xla@x2023-08-23,jax@j2023-08-23", "--json", "--progress"]
    opts = dict(pairwise(argv[7:]))
    assert opts["--mode"] == "exit" and opts["--bench-cmd"] == "python3 /dir/b.py --n 3"
    assert opts["--workdir"] == "/hourly-work/bisect/x" and opts["--bench-cwd"] == "/dir"
    assert opts["--build-cmd"] == "/opt/build.sh" and opts["--max-repeats"] == "5"
    assert opts["--repeats"] == "2" and "--lower-is-better" in argv and "--xla-repo" not in argv
    assert opts["--cache-dir"] == "/hourly-work/cache"  # wheels land on the host
    assert "--jax-ref" not in argv and "--rerun" not in argv
    # hunt --rerun bisects again: the bisection inside, whose store on the host holds the window
    # finished, is told so (without it, it answered from that store at once)
    rerun = settings(tmp_path, rerun=True)
    assert "--rerun" in H.bisect_argv(w, rerun, "/hourly-work/bisect/x")
    assert "--rerun" in H.scanned_bisect_argv(rerun, "/hourly-work/bisect/x")
    # a repository's own ref (a JAX feature branch) reaches the bisection inside
    argv = H.bisect_argv(w, settings(tmp_path, jax_ref="origin/feature"), "/hourly-work/bisect/x")
    assert argv[argv.index("--jax-ref") + 1] == "origin/feature" and "--xla-ref" not in argv


def test_named_metrics_reach_the_daily_levels_windows_and_the_commands_inside(tmp_path):
    """--metrics: every named metric's regression is a window of its own that follows it (its
    bisection and scan inside take --metrics and --metric, in the metric's unit's direction), a
    crash window is hunted once, in exit mode (no metric read); --metric keeps one metric's windows."""
    from hourly.adapters.store import Store
    s = N.NightlySettings("2023-08-01", "2023-08-10", mounts=[f"{tmp_path}:/dir"], gpus="none", metrics="all",
                          metric_samples="all", warmup_samples=2, bench_cmd="python3 /dir/jaxbench_phases.py",
                          workdir=str(tmp_path / "w"))
    store = Store(tmp_path / "w")
    for i in range(10):
        day = f"2023-08-{i + 1:02d}"
        common = dict(digest=f"sha256:{i}", xla=f"x{i}", jax=f"j{i}")
        if i == 9:  # the last date crashes: every metric's
            store.add_nightlies(s.key(), [NightlyPoint(day, f"img:{day}", Status.CRASHED, **common)])
            continue
        lower = 40.0 * (1.3 if i >= 4 else 1.0)
        step = 2.5 * (1.2 if i >= 7 else 1.0)
        store.add_nightlies(s.key(), [
            NightlyPoint(day, f"img:{day}", Status.OK, value=lower, samples=[lower * 0.999, lower * 1.001],
                         metric="lower_ms", **common),
            NightlyPoint(day, f"img:{day}", Status.OK, value=step, samples=[step * 0.999, step * 1.001],
                         metric="step_ms", **common)])
    report = N.stored_nightly(store, s)
    ws = H.daily_windows(report)
    assert [(w.good.date, w.bad.date, w.kind, w.metric) for w in ws] == [
        ("2023-08-04", "2023-08-05", "regression", "lower_ms"),
        ("2023-08-07", "2023-08-08", "regression", "step_ms"),
        ("2023-08-09", "2023-08-10", "crash", None)]
    assert [w.metric for w in H.daily_windows(report, "step_ms")] == ["step_ms", None]
    with pytest.raises(UserError, match="--metric trace_ms is not a metric the daily level recorded"):
        H.daily_windows(report, "trace_ms")
    h = H.HuntSettings(s, scan_step="1h")
    argv = H.bisect_argv(ws[0], h, "/hourly-work/bisect/x")
    opts = dict(pairwise(argv))
    assert opts["--metrics"] == "all" and opts["--metric"] == "lower_ms" and "--lower-is-better" in argv
    assert opts["--metric-samples"] == "all" and opts["--warmup-samples"] == "2"
    crash = H.bisect_argv(ws[2], h, "/hourly-work/bisect/x")
    assert "--metric" not in crash and "--metrics" not in crash and "--metric-samples" not in crash
    from datetime import datetime, timezone
    t0, t1 = datetime(2023, 8, 7, tzinfo=timezone.utc), datetime(2023, 8, 8, tzinfo=timezone.utc)
    scan = H.scan_argv(ws[1], h, "/x", t0, t1)
    assert dict(pairwise(scan))["--metric"] == "step_ms"
    bis = H.scanned_bisect_argv(h, "/x", ws[1])
    assert bis[bis.index("--metric") + 1] == "step_ms"
    # each metric's answer is its own; the two bisections of one window would share its workdir
    twin = H.HuntWindow(ws[0].good, ws[0].bad, "regression", metric="step_ms")
    assert ws[0].key("k", "bad") != twin.key("k", "bad")
    assert ws[0].key("k", "bad", per_metric=False) == twin.key("k", "bad", per_metric=False)
    assert H.HuntWindow(ws[0].good, ws[0].bad, "regression").key("k", "bad") == ws[0].key("k", "bad", per_metric=False)
    row = H.step_row(ws[0], {"regressions": []})
    assert row.metric == "lower_ms" and row.run_samples == 0
    out = io.StringIO()
    print_report(Console(file=out, width=200), H.HuntReport(rows=[row, H.step_row(ws[2], {"regressions": []})]))
    assert "regression of lower_ms" in out.getvalue() and "crash of" not in out.getvalue()
    store.close()


def test_metric_is_checked_against_the_daily_levels_metrics(tmp_path, capsys):
    from hourly.cli import main
    with pytest.raises(UserError, match="reads the --metric-regex's one metric"):
        settings(tmp_path, metric="lower_ms").validate()
    # on the command line: a usage error, before any container or store
    code = main(["hunt", "--from", "2023-08-01", "--to", "2023-08-03", "--metric", "lower_ms", "--gpus", "none",
                 "--workdir", str(tmp_path / "w")])
    assert code == 2 and "--metrics all" in capsys.readouterr().err and not (tmp_path / "w").exists()
    h = settings(tmp_path, metric="lower_ms")
    h = dataclasses.replace(h, nightly=dataclasses.replace(h.nightly, metrics="step_ms"))
    with pytest.raises(UserError, match="is not one of --metrics step_ms"):
        h.validate()
    with pytest.raises(UserError, match="not a metric's name"):
        settings(tmp_path, metric="9 bad").validate()


def test_settings_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(UserError, match="--bisect-in must be bad or good, not middle"):  # the option's rule
        settings(tmp_path, bisect_in="middle").validate()
    with pytest.raises(UserError, match="between 0 and 1"):
        settings(tmp_path, min_change=2).validate()
    with pytest.raises(UserError, match="--dates must be all or search, not some"):
        settings(tmp_path, dates="some").validate()
    with pytest.raises(UserError, match="go together"):
        settings(tmp_path, good_date="2023-08-22").validate()
    with pytest.raises(UserError, match="not after"):
        settings(tmp_path, good_date="2023-08-23", bad_date="2023-08-22").validate()
    from dataclasses import replace
    a, b = settings(tmp_path), settings(tmp_path)
    b = replace(b, nightly=replace(b.nightly, workdir=str(tmp_path / "other")))
    assert a.workdir_id() != b.workdir_id() and a.workdir_id() == settings(tmp_path).workdir_id()


def test_the_settings_of_a_hunt_and_its_levels_are_frozen_and_validation_returns_new_ones(tmp_path, monkeypatch):
    """Issue 34: validation returns the settings checked (the default mount pinned, paths made
    absolute) and changes nothing it was given; a hunt's run state is no setting of it."""
    import dataclasses

    from hourly.releases.plan import ReleaseSettings
    monkeypatch.chdir(tmp_path)
    nightly = N.NightlySettings("2023-08-20", "2023-08-26", gpus="none")  # no --mount: $PWD:/dir, pinned now
    checked = nightly.validate()
    assert nightly.mounts == [] and checked.mounts == [f"{tmp_path}:/dir"]
    hunt = H.HuntSettings(nightly)
    assert hunt.validate().nightly == checked and hunt.nightly.mounts == []
    (tmp_path / "bench").mkdir()
    rel = ReleaseSettings("0.1.0", "0.2.0", bench_cmd="python b.py", bench_cwd="bench", cache_dir="cache",
                          find_links="wheels", deps_as_of_release=False)
    got = rel.validate()
    assert (rel.bench_cwd, rel.cache_dir, rel.find_links) == ("bench", "cache", "wheels")  # as given
    assert (got.bench_cwd, got.cache_dir, got.find_links) == (str(tmp_path / "bench"), str(tmp_path / "cache"),
                                                             str(tmp_path / "wheels"))
    for frozen, name in ((checked, "mounts"), (got, "bench_cwd"), (hunt, "rerun")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, name, None)
    assert not any(f.name.startswith("_") for f in dataclasses.fields(H.HuntSettings))  # run state: H.HuntRun
    assert H.HuntRun().run_id != H.HuntRun().run_id and H.HuntRun().rerun is None
    stored = hunt.validate().as_dict()  # what the hunt stores: every setting, and the levels' as dicts
    assert stored["nightly"]["mounts"] == [f"{tmp_path}:/dir"] and stored["releases"] is None
    assert set(stored) == {f.name for f in dataclasses.fields(H.HuntSettings)}


CULPRIT = {"repo": "xla", "sha": "ab" * 20, "subject": "[XLA:GPU] [bold]fusion[/bold] heuristic",
           "author": "A. Author", "committer_time": "2023-08-22T12:00:00Z",
           "link": "https://github.com/openxla/xla/commit/" + "ab" * 20}


def test_rows_and_table_name_the_culprit_verbatim(tmp_path):
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80), "regression", 100.0, 80.0)
    answer = {"regressions": [{"culprit": CULPRIT, "range": [], "builds": 4, "runs": 11},
                              {"culprit": None, "range": ["cd" * 20, "ef" * 20], "builds": 1, "runs": 2}],
              "reason": None}
    row = H.step_row(w, answer)
    assert row.culprit is not None and (row.good_date, row.bad_date, row.kind, row.culprit.to_json(), row.range) == (
        "2023-08-22", "2023-08-23", "regression", CULPRIT, None)
    assert (row.builds, row.runs) == (5, 13) and row.more == [{"range": ["cd" * 20, "ef" * 20]}]
    assert json.loads(json.dumps(row.to_json()))["culprit"] == CULPRIT  # the --json answer
    buf = io.StringIO()
    print_report(Console(file=buf, width=240), H.HuntReport([row], bisected=1))
    out = buf.getvalue()
    assert "[bold]fusion[/bold]" in out and CULPRIT["link"] in out and "-20.0%" in out


def test_rows_an_older_hunt_stored_read_back_typed_and_print_as_they_were_written():
    """``hunt-rows`` (what ``hourly report`` reads) as an earlier hunt stored it: the same JSON out,
    key for key; a row from before run_samples and named metrics reads with their defaults."""
    from hourly.answers import HuntRow
    stored = {"good_date": "2023-08-22", "bad_date": "2023-08-23", "kind": "regression", "metric": None,
              "from_value": 100.0, "to_value": 80.0, "culprit": CULPRIT, "range": None, "reason": None,
              "environment": None, "builds": 4, "runs": 11, "run_samples": 0, "more": [{"range": ["cd" * 20]}],
              "bisected_in": "bad", "scan": None, "log": "/w/logs/hunt/x.log", "error": None,
              "explained": [{"stage": "hlo"}], "release": [{"last_good": "0.4.1", "first_bad": "0.4.2",
                                                            "kind": "regression"}]}
    row = HuntRow.from_json(stored)
    assert row.culprit is not None and row.culprit.sha == "ab" * 20 and row.release and row.explained
    assert json.dumps(row.to_json()) == json.dumps(stored)
    older = {k: v for k, v in stored.items() if k not in ("metric", "run_samples", "explained", "release")}
    row = HuntRow.from_json(older)
    assert (row.metric, row.run_samples, row.explained, row.release) == (None, 0, None, None)
    assert answer_text(row).startswith("xla abababababab [XLA:GPU] [bold]fusion[/bold] heuristic")


def test_an_environment_answer_shows_the_diff():
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80), "regression", 100.0, 80.0)
    row = H.step_row(w, {"regressions": [], "reason": "the change is in the container's environment",
                         "environment": [{"name": "CUDA_VERSION", "good": "12.1", "bad": "12.2"}]})
    assert row.culprit is None and row.builds == 0
    text = answer_text(row)
    assert "container's environment" in text and "CUDA_VERSION: 12.1 → 12.2" in text


def test_a_combined_end_is_the_state_once_both_commits_landed(tmp_path):
    from hourly.adapters.gitrepo import GitRepo
    from hourly.bisect.search import parse_end
    from hourly.demo.repos import Change, make_repos
    made = make_repos(tmp_path, [Change("xla", "2023-08-24T01:00:00Z", "x1", {"a": "1"}),
                                 Change("jax", "2023-08-24T02:00:00Z", "j1", {"b": "1"}),
                                 Change("xla", "2023-08-24T03:00:00Z", "x2", {"a": "2"})])
    repos = {"xla": GitRepo(made.xla, "xla"), "jax": GitRepo(made.jax, "jax")}
    walks = {n: r.history("origin/main") for n, r in repos.items()}
    x1, j1, x2 = made.shas["x1"], made.shas["j1"], made.shas["x2"]
    t = parse_end(f"xla@{x1},jax@{j1}", "UTC", repos, walks)
    assert t == parse_end(f"jax@{j1}", "UTC", repos, walks) > parse_end(f"xla@{x1}", "UTC", repos, walks)
    assert parse_end(f"xla@{x2},jax@{j1}", "UTC", repos, walks) == parse_end(f"xla@{x2}", "UTC", repos, walks)


def test_a_window_that_could_not_be_bisected_says_why_and_counts_as_failed():
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "crashed"), "crash", 100.0, None)
    ok = H.step_row(w, {"regressions": [{"culprit": CULPRIT, "builds": 1, "runs": 2}]})
    bad = H.step_row(w, {"regressions": [], "error": "the bisection failed — see the log"})
    report = H.HuntReport([ok, bad])
    assert report.failed == [bad] and answer_text(bad) == "not bisected: the bisection failed — see the log"
    buf = io.StringIO()
    print_report(Console(file=buf, width=240), report)
    assert "not bisected" in buf.getvalue() and "crash" in buf.getvalue()


@pytest.mark.parametrize("n,first_bad", [(2, 1), (9, 1), (9, 8), (30, 13), (64, 40)])
def test_dates_search_finds_the_boundary_with_few_measurements(n, first_bad):
    seen = []

    def is_good(i):
        seen.append(i)
        return i < first_bad

    assert H.search_dates(n, is_good) == (first_bad - 1, first_bad)
    assert len(seen) <= 2 * max(1, n).bit_length() and len(set(seen)) == len(seen)


def test_dates_search_steps_past_dates_it_cannot_judge():
    missing = {5, 6, 9}
    assert H.search_dates(12, lambda i: None if i in missing else i < 7) == (4, 7)
    assert H.search_dates(12, lambda i: None if i in missing else i < 10) == (8, 10)
    with pytest.raises(UserError, match="no good date"):
        H.search_dates(5, lambda i: False)


def test_report_on_a_hunt_workdir_has_every_window_and_the_daily_series(tmp_path):
    from hourly.adapters.store import Store
    from hourly.cli import main
    from hourly.render import markdown as esc
    s = N.NightlySettings("2023-08-20", "2023-08-25", mounts=[f"{tmp_path}:/dir"], gpus="none",
                          workdir=str(tmp_path / "w"))
    store = Store(s.workdir)
    store.save_settings(N.LEVEL, s.as_dict())
    pts = [P("2023-08-20", "ok", 100), P("2023-08-21", "ok", 100.3), P("2023-08-22", "ok", 99.8),
           P("2023-08-23", "ok", 80), P("2023-08-24", "ok", 80.2), P("2023-08-25", "crashed")]
    for p in pts:
        p.image = N.image_ref(s.image, N.parse_date(p.date))
        store.add_nightly(s.key(), p)
    reg = H.HuntWindow(pts[2], pts[3], "regression", 100.0, 80.0)
    env = H.HuntWindow(pts[4], pts[5], "crash", 80.2, None)
    rows = [H.step_row(reg, {"regressions": [{"culprit": CULPRIT, "builds": 3, "runs": 9}]}),
            H.step_row(env, {"regressions": [], "reason": "the change is in the container's environment",
                             "environment": [{"name": "CUDA_VERSION", "good": "12.1", "bad": "12.2"}]})]
    store.save_settings("hunt-rows", H.HuntReport(rows).as_json())
    assert main(["report", "--workdir", s.workdir]) == 0
    md = (tmp_path / "w" / "report" / "report.md").read_text()
    assert f"[`{CULPRIT['sha'][:12]}`]({CULPRIT['link']})" in md
    assert esc.text(CULPRIT["subject"]) in md and CULPRIT["subject"] not in md  # outside text, escaped
    assert "| CUDA_VERSION | 12.1 | 12.2 |" in md and "| 2023-08-25 |" in md and "crashed" in md
    assert (tmp_path / "w" / "report" / "plot.png").stat().st_size > 0


def test_bisect_into_a_new_workdir_takes_a_combined_end(tmp_path):
    """The hunt's bisection always starts in a new workdir: its input check knows the combined end.
    Every end is an instant of the merged timeline (a combined ``xla@..,jax@..`` the instant both had
    landed), so a combined end and a one-repository end compare as instants: one that names the very
    state of the other is refused as such, not bisected as an empty window."""
    from hourly.bisect.search import check_new_window
    from hourly.demo.repos import Change, make_repos
    from hourly.measure.settings import effective, keyed
    made = make_repos(tmp_path, [Change("xla", "2023-08-24T01:00:00Z", "x1", {"a": "1"}),
                                 Change("jax", "2023-08-24T02:00:00Z", "j1", {"b": "1"}),
                                 Change("xla", "2023-08-24T03:00:00Z", "x2", {"a": "2"})])
    x1, j1, x2 = made.shas["x1"], made.shas["j1"], made.shas["x2"]
    s = keyed(effective({"xla_repo": str(made.xla), "jax_repo": str(made.jax), "bench_cmd": "true"}, None)[0])
    check_new_window(s, f"xla@{x1},jax@{j1}", f"xla@{x2}")  # combined good end, one repository's bad end
    check_new_window(s, f"xla@{x1},jax@{j1}", f"xla@{x2},jax@{j1}")  # as the hunt gives them: both combined
    check_new_window(s, f"jax@{j1}", f"xla@{x2},jax@{j1}")
    # jax@j1 is the state (x1, j1): the combined good end's own state
    with pytest.raises(UserError, match="name the same state .*2023-08-24T02:00:00Z.*nothing lies between them"):
        check_new_window(s, f"xla@{x1},jax@{j1}", f"jax@{j1}")
    with pytest.raises(UserError, match="is not later than --good"):
        check_new_window(s, f"xla@{x2},jax@{j1}", f"jax@{j1}")
    with pytest.raises(UserError, match="not a commit sha"):
        check_new_window(s, "xla@nothex,jax@1234", "jax@1234")


# -- --scan-step: the hourly scan inside the container before the bisection ----------------------

def test_scan_window_ends_at_the_bad_pair_and_starts_whole_steps_before_the_good_one():
    from datetime import datetime, timedelta, timezone
    good = datetime(2023, 8, 22, 4, 0, tzinfo=timezone.utc)
    bad = datetime(2023, 8, 23, 16, 30, tzinfo=timezone.utc)
    t0, t1 = H.scan_window(good, bad, timedelta(hours=1))
    assert t1 == bad  # its last instant resolves to the bad image's pair, never to a later commit
    assert t0 == datetime(2023, 8, 22, 3, 30, tzinfo=timezone.utc) and t0 <= good < t0 + timedelta(hours=1)
    assert (t1 - t0) % timedelta(hours=1) == timedelta(0)
    assert H.scan_window(good, good + timedelta(hours=2), timedelta(hours=1)) == (good, good + timedelta(hours=2))
    # ends at the same instant (or reversed): still a window of one step
    assert H.scan_window(bad, bad, timedelta(hours=1)) == (bad - timedelta(hours=1), bad)


def test_scan_and_bisect_argv_of_a_scanned_window(tmp_path):
    from datetime import datetime, timezone
    h = settings(tmp_path, build_cmd="/opt/build.sh", scan_step="1h", max_repeats=5, jax_repo="/src/jax")
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "crashed"), "crash")
    t0, t1 = datetime(2023, 8, 22, 3, 30, tzinfo=timezone.utc), datetime(2023, 8, 23, 16, 30, tzinfo=timezone.utc)
    argv = H.scan_argv(w, h, "/hourly-work/bisect/x", t0, t1)
    opts = dict(pairwise(argv[2:]))
    assert argv[:2] == ["hourly", "scan"] and opts["--from"] == "2023-08-22T03:30:00Z"
    assert opts["--to"] == "2023-08-23T16:30:00Z" and opts["--step"] == "1h" and opts["--mode"] == "exit"
    assert opts["--bench-cmd"] == "python3 /dir/b.py --n 3" and opts["--build-cmd"] == "/opt/build.sh"
    assert opts["--jax-repo"] == "/src/jax" and opts["--cache-dir"] == "/hourly-work/cache"
    assert {"--json", "--no-sync", "--keep-going", "--lower-is-better"} <= set(argv)
    bis = H.scanned_bisect_argv(h, "/hourly-work/bisect/x")
    assert bis[:2] == ["hourly", "bisect"] and "--good" not in bis and "--mode" not in bis  # the scan's windows
    assert dict(pairwise(bis))["--max-repeats"] == "5" and "/hourly-work/bisect/x" in bis
    # a scanned window's answer is stored apart from a directly bisected one
    assert w.key("k", "bad", "1h") != w.key("k", "bad") and w.key("k", "bad", None) == w.key("k", "bad")
    with pytest.raises(UserError, match="cannot parse step"):
        settings(tmp_path, scan_step="hourly").validate()


def test_a_scanned_rows_answer_says_what_was_scanned():
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 100), "regression", 100.0, 80.0)
    row = H.step_row(w, {"regressions": [], "reason": "the change is in the container's environment: x",
                         "scan": {"from": "a", "to": "b", "step": "1h", "instants": 37, "pairs": 6}})
    assert row.scan is not None and row.scan["pairs"] == 6
    assert answer_text(row).splitlines()[0] == "hourly scan: 37 instants every 1h, 6 pairs"


# -- the daily level keeps apart images of the same commits ----------------------------------------

def test_dates_with_the_same_commits_but_different_images_are_kept_apart():
    pts = [P(f"2023-08-2{i}", "ok", v) for i, v in enumerate([100, 100.3, 99.8, 85, 85.2, 84.9])]
    for i, p in enumerate(pts):  # one commit pair for all: the images differ (a new CUDA at day 3)
        p.xla, p.jax, p.digest = "x", "j", f"sha256:{i}"
    steps = N.detect_steps(pts)
    assert [(st.before_index, st.after_index, st.kind.value) for st in steps] == [(2, 3, "regression")]
    (w,) = H.windows_of(pts, steps)
    assert (w.good.date, w.bad.date) == ("2023-08-22", "2023-08-23") and w.same_sources
    # the same image on several dates (same digest) is still one point, as before
    for p in pts:
        p.digest = "sha256:same"
    assert N.detect_steps(pts) == []


# -- CUDA, cuDNN, NCCL ----------------------------------------------------------------------------

def test_toolkit_versions_from_variables_pip_packages_and_library_files():
    from hourly.hunt.cuda_versions import library_versions, toolkit_versions
    libs = ["/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3",
            "/usr/local/cuda/lib64/libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so.12.2.140",
            "/usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so.8", "/usr/lib/libfoo.so.1"]
    assert library_versions(libs) == {"/usr/lib/x86_64-linux-gnu/libnccl.so": "2.18.3",
                                      "/usr/local/cuda/lib64/libcudart.so": "12.2.140",
                                      "/usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so": "8",
                                      "/usr/lib/libfoo.so": "1"}
    env = {"CUDA_VERSION": "12.2.0", "NV_CUDNN_VERSION": "8.9.4.25-1+cuda12.2",
           "pip:nvidia-cudnn-cu12": "8.9.4.25", "NV_LIBNCCL_PACKAGE_VERSION": "2.18.3-1", "PATH": "/bin"}
    got = toolkit_versions(env, libs)
    assert got == {
        "CUDA": "12.2.0 (CUDA_VERSION), 12.2.140 (/usr/local/cuda/lib64/libcudart.so)",
        "cuDNN": "8.9.4.25 (NV_CUDNN_VERSION, pip nvidia-cudnn-cu12), "
                 "8 (/usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so)",
        "NCCL": "2.18.3 (NV_LIBNCCL_PACKAGE_VERSION, /usr/lib/x86_64-linux-gnu/libnccl.so)"}
    assert toolkit_versions({"PATH": "/bin", "pip:numpy": "1.26"}, []) == {}
    assert toolkit_versions({"pip:nvidia_nccl_cu12": "2.19.3"}, [])["NCCL"] == "2.19.3 (pip nvidia-nccl-cu12)"


def test_env_diff_puts_cuda_cudnn_and_nccl_first():
    good = {"A": "1", "NCCL": "2.17.1 (NCCL_VERSION)", "CUDA": "12.1 (CUDA_VERSION)", "pip:x": "1"}
    bad = {"A": "2", "NCCL": "2.18.3 (NCCL_VERSION)", "CUDA": "12.2 (CUDA_VERSION)", "pip:x": "1",
           "cuDNN": "8.9 (CUDNN_VERSION)"}
    assert [d["name"] for d in H.env_diff(good, bad)] == ["CUDA", "cuDNN", "NCCL", "A"]


# -- --from-release: the release level in front of the funnel --------------------------------------

def test_host_bench_maps_the_container_command_onto_the_mounts_sources():
    from hourly.hunt.from_releases import host_bench
    mounts = ["/home/u/bench:/dir", "/data/sets:/dir/data:ro", "/scratch:/tmp/s"]
    cmd, cwd = host_bench("python3 /dir/MLUPS3d.py 256 --in=/dir/data/a.npz /tmp/s/x /opt/y 'a b'",
                          mounts, "/dir")
    assert cmd == "python3 /home/u/bench/MLUPS3d.py 256 --in=/data/sets/a.npz /scratch/x /opt/y 'a b'"
    assert cwd == "/home/u/bench"
    # nothing mounted where the containers start: the host's own directory
    assert host_bench("python3 bench.py", ["/home/u/b:/work"], None) == ("python3 bench.py", None)


def test_day_ranges_from_release_steps():
    from types import SimpleNamespace as NS

    from hourly.hunt.from_releases import day_ranges

    def step(kind, a, b):
        return NS(kind=kind, before=NS(version="a", date=a), after=NS(version="b", date=b))
    s1, s2 = step("regression", "2023-07-06", "2023-07-20"), step("crash", "2023-07-21", "2023-07-31")
    up, far = step("improvement", "2023-08-01", "2023-08-09"), step("regression", "2023-09-10", "2023-09-12")
    undated = step("regression", None, "2023-09-30")
    got = day_ranges([far, s1, up, s2, undated])
    # the day before the last good release (its tag precedes the upload) through the first bad one;
    # touching ranges merge; improvements and undated steps are not hunted
    assert [(a.isoformat(), b.isoformat(), len(sts)) for a, b, sts in got] == [
        ("2023-07-05", "2023-07-31", 2), ("2023-09-09", "2023-09-12", 1)]
    assert [(a.isoformat(), b.isoformat()) for a, b, _ in day_ranges([s1], margin_days=0)] == [
        ("2023-07-06", "2023-07-20")]


def test_hunt_from_release_input_errors_are_one_line(capsys, tmp_path):
    from hourly.cli import main
    w = ["--workdir", str(tmp_path / "w")]
    # flags that do not go together are usage errors (exit 2)
    assert main(["hunt", "--from-release", "0.4.13", *w]) == 2
    assert "--from-release and --to-release go together" in capsys.readouterr().err
    assert main(["hunt", "--from-release", "0.4.13", "--to-release", "0.4.20", "--from", "2023-07-06", *w]) == 2
    assert "finds the days itself" in capsys.readouterr().err
    assert main(["hunt", "--from-release", "0.4.13", "--to-release", "0.4.20", "--dates", "search",
                 "--mount", f"{tmp_path}:/dir", *w]) == 2
    assert "finds the days itself" in capsys.readouterr().err
    assert main(["hunt", "--from-release", "0.4.20", "--to-release", "0.4.13",
                 "--mount", f"{tmp_path}:/dir", *w]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--to-release 0.4.13 is before --from-release 0.4.20" in err
    assert not (tmp_path / "w").exists()


def test_nightly_output_for_a_boundary_between_two_images_of_the_same_commits(tmp_path):
    from hourly.render.nightly import print_report as print_nightly
    pts = [P(f"2023-08-2{i}", "ok", v) for i, v in enumerate([100, 100.3, 85, 85.2])]
    for i, p in enumerate(pts):
        p.xla, p.jax, p.digest = "x" * 40, "j" * 40, f"sha256:{i}"
    s = N.NightlySettings("2023-08-20", "2023-08-23", mounts=[f"{tmp_path}:/dir"], workdir=str(tmp_path))
    steps = N.detect_steps(pts)
    report = N.NightlyReport(pts, N.find_boundary(pts, [(st.before_index, st.after_index,
                                                        st.change.relative_change) for st in steps]), s, 0, steps)
    buf = io.StringIO()
    print_nightly(Console(file=buf, width=200), report)
    out = buf.getvalue()
    assert "boundary: 2023-08-21 (good) → 2023-08-22 (bad" in out
    assert "the change is in the container's environment" in out
    assert "hourly hunt --good-date 2023-08-21 --bad-date 2023-08-22" in out and "hourly scan" not in out


def test_hunt_explain_asks_the_bisection_inside_and_carries_its_records_to_the_host(tmp_path):
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80), "regression")
    assert "--explain" not in H.bisect_argv(w, settings(tmp_path), "/hourly-work/bisect/x")
    h = settings(tmp_path, explain=True)
    assert "--explain" in H.bisect_argv(w, h, "/hourly-work/bisect/x")
    assert "--explain" in H.scanned_bisect_argv(h, "/hourly-work/bisect/x")
    rec = {"step": 1, "name": "step-1", "dir": "/hourly-work/bisect/x/explain/step-1",
           "dumps": {"good": "/hourly-work/bisect/x/explain/step-1/good", "bad": "/elsewhere/bad"}}
    answer = {"regressions": [{"culprit": {"sha": "a" * 40}, "explained": rec}], "bisected_in": "img"}
    mapped = H.host_paths(answer, "/hourly-work", str(tmp_path / "w"))
    ex = mapped["regressions"][0]["explained"]
    assert ex["dir"] == f"{tmp_path / 'w'}/bisect/x/explain/step-1"
    assert ex["dumps"] == {"good": f"{tmp_path / 'w'}/bisect/x/explain/step-1/good", "bad": "/elsewhere/bad"}
    assert H.host_paths("/hourly-workshop", "/hourly-work", "/h") == "/hourly-workshop"
    assert H.step_row(w, mapped).explained == [ex]
    assert "explained" not in H.step_row(w, {"regressions": [{"culprit": {"sha": "b"}}]}).to_json()
    # a window bisected before without --explain is bisected again with it
    assert H.unexplained({"regressions": [{"culprit": {"sha": "b"}}]})
    assert not H.unexplained(answer) and not H.unexplained({"regressions": [{"culprit": None}]})


def test_a_window_answered_without_a_bisection_is_not_counted_as_bisected():
    """issue 33: "1 window(s); 1 bisected now" for a window whose two images held the same commits
    (nothing was bisected); the count says how each window was answered."""
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80), "regression", 100.0, 80.0)
    same = {"regressions": [], "bisected_in": None, "log": None, "bisected": False,
            "reason": "the change is in the container's environment: both images hold the same xla and jax commits"}
    report = H.HuntReport()
    report.rows.append(H.step_row(w, same))
    report.answered_now(same)
    assert (report.bisected, report.answered) == (0, 1)
    buf = io.StringIO()
    print_report(Console(file=buf, width=240), report)
    assert "1 window: 1 answered now without a bisection" in buf.getvalue()
    assert "bisected now" not in buf.getvalue()
    bisected = {"regressions": [{"culprit": CULPRIT, "range": [], "builds": 4, "runs": 11}]}
    report.rows.append(H.step_row(w, bisected))
    report.answered_now(bisected)
    report.rows.append(H.step_row(w, bisected))  # a third from the store
    assert report.counts() == "3 windows: 1 bisected now, 1 answered now without a bisection, 1 from the store"


def test_ends_neither_shown_to_differ_nor_alike_are_not_called_the_environments_change(tmp_path):
    """The bisection inside says its ends were not shown to differ, nor to be alike (noise hid it):
    the hunt must not answer "the change is in the container's environment" from that, but say it
    could not tell, with the fix (ends Wald's test reads alike still give the environment:
    test_hunt_docker.py::test_hunt_names_the_planted_commit_and_survives_kill_9)."""
    from hourly.adapters.containers import RunResult
    h = settings(tmp_path, max_repeats=5)
    w = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80), "regression", 100, 80)
    log = tmp_path / "hunt.log"
    untold = ("hourly: error: the ends of 2023-08-22 .. 2023-08-23 were not shown to differ, nor to be alike "
              "(-7.1 %, paired over 5 rounds, 1.1 standard errors (5.4 needed at this look for a 1 % false rate)): "
              "the processes' spread hides what lies between them — pass a larger --max-repeats\n")
    with pytest.raises(UserError, match=r"could not tell whether the sources at both ends differ: the ends of "
                                        r"2023-08-22 .. 2023-08-23 were not shown to differ, nor to be alike "
                                        r".* — pass a larger --max-repeats \(finished windows are kept\)") as e:
        H._answer(w, h, "img:2023-08-22", tmp_path / "none.json", RunResult(1, untold, 1.0), log, None, None)
    assert "environment" not in str(e.value)


def test_the_bisection_inside_is_asked_for_a_quarter_of_the_days_step(tmp_path):
    """Whether the commits hold the day's step: a window whose day fell 20 % asks for changes of
    5 % or more (ends alike within the noise are then shown alike in a few rounds, and the hunt can
    name the environment); a small day's step keeps the default; a crash has no level; the user's
    --min-change wins."""
    fell = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 80), "regression", 100, 80)
    argv = H.bisect_argv(fell, settings(tmp_path), "/w")
    assert argv[argv.index("--min-change") + 1] == "0.05"
    assert H.window_min_change(settings(tmp_path), fell) == 0.05
    small = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "ok", 95), "regression", 100, 95)
    assert H.window_min_change(settings(tmp_path), small) is None
    assert "--min-change" not in H.bisect_argv(small, settings(tmp_path), "/w")
    crash = H.HuntWindow(P("2023-08-22", "ok", 100), P("2023-08-23", "crashed"), "crash")
    assert "--min-change" not in H.bisect_argv(crash, settings(tmp_path), "/w")
    mine = H.bisect_argv(fell, settings(tmp_path, min_change=0.01), "/w")
    assert mine[mine.index("--min-change") + 1] == "0.01"
    scanned = H.scanned_bisect_argv(settings(tmp_path), "/w", fell)
    assert scanned[scanned.index("--min-change") + 1] == "0.05"
