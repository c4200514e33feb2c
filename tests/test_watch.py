"""``hourly watch``: the pure parts with plain lists, then a watch over the commits of real stand-in
repositories night by night (``--until``): a planted regression confirmed by interleaved runs,
alerted, and hunted to its commit by a real ``hourly bisect``; the page opened in a real headless
browser. A watch over nightly wheels in a local index: a slow night suspected and not confirmed,
then a planted regression confirmed and alerted."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hourly.adapters.store import Store
from hourly.cli import main
from hourly.demo.repos import Change
from hourly.errors import UserError
from hourly.model import Pair
from hourly.watch import plan as P
from hourly.watch.run import dev_date
from hourly.watch_records import Alert, Build, Check

if __package__:
    from .waiting import wait_for
else:
    from waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
CULPRIT = "[XLA:GPU] Slower fusion heuristic"

#: three harmless commits on the afternoon of 2023-08-20, one every two hours, then the culprit and
#: a harmless commit after it: watched every 2h from 14:00, five builds (four of history, then the
#: culprit's with the typo: the hunt has two commits to tell apart)
CHANGES = [Change("xla" if i % 2 else "jax", f"2023-08-20T{15 + 2 * i:02d}:00:00Z", f"harmless change {i}",
                  {f"file{i}.txt": f"{i}\n"}) for i in range(3)]
CHANGES += [Change("xla", "2023-08-20T20:30:00Z", CULPRIT, {"perf/fusion.txt": "0.9\n"}),
            Change("xla", "2023-08-20T21:30:00Z", "[XLA] typo", {"typo.txt": "1\n"})]


# -- pure parts -------------------------------------------------------------------------------

def test_the_primary_metric_is_named_by_its_regex():
    assert P.metric_name(r"MLUPS:\s*(?P<value>[0-9.]+)") == "MLUPS"
    assert P.metric_name(r"dispatch_us:\s*(?P<value>[0-9.]+)") == "dispatch_us"
    assert P.metric_name(r"(?P<value>[0-9.]+) ms") == "metric"


def test_the_judges_state_is_replayed_from_the_checks_of_earlier_arrivals():
    index_of = {b: i for i, b in enumerate("abcdefgh")}
    checks = [Check(1, "m", "c", "b", "c", "rejected"), Check(2, "m", "e", "d", "e", "confirmed"),
              Check(3, "m", "g", "f", "g", "undecided"), Check(4, "other", "f", "e", "f", "confirmed")]
    # judging f: the rejected pair is not suspected again, the confirmed step's level is current
    assert P.watch_state("m", checks, index_of, set("abcde")) == (5, 4, {(1, 2)}, {(1, 2)})
    # judging e again (a killed run): its own check is not part of the state it is judged on
    assert P.watch_state("m", checks, index_of, set("abcd")) == (0, 0, {(1, 2)}, {(1, 2)})
    # an undecided pair is not suspected again, but is not ruled out either
    assert P.watch_state("m", checks, index_of, set("abcdefg")) == (5, 4, {(1, 2), (5, 6)}, {(1, 2)})


def test_a_hunts_answer_is_a_culprit_only_when_it_names_one():
    culprit = {"repo": "xla", "sha": "a" * 40, "subject": "s", "link": "https://github.com/openxla/xla/commit/a"}
    named = P.hunt_outcome("bisect", json.dumps({"regressions": [{"culprit": culprit, "range": ["a" * 40]}]}), 0, "")
    assert named.status == "culprit" and named.culprit == culprit
    unsure = P.hunt_outcome("bisect", json.dumps({"regressions": [
        {"culprit": None, "candidate": culprit, "reason": "the ends did not differ again", "range": []}]}), 4, "")
    assert unsure.status == "unsure" and unsure.candidate == culprit and "culprit" not in unsure.to_json()
    env = P.hunt_outcome("hunt", json.dumps({"steps": [{"culprit": None, "reason": "the change is in the "
                                                        "container's environment", "environment": [{"name": "CUDA"}]}]}), 0, "")
    assert env.status == "unsure" and env.environment == [{"name": "CUDA"}]
    failed = P.hunt_outcome("hunt", None, 1, "progress\nhourly: error: no image for 2023-08-22 — pick dates\n")
    assert failed.to_json() == {"status": "failed", "exit_code": 1, "reason": "no image for 2023-08-22 — pick dates"}
    assert P.hunt_outcome("bisect", "not json {", 3, "boom").status == "failed"


def _settings(**kw) -> P.WatchSettings:
    level = {"xla_repo": "/x", "jax_repo": "/j", "bench_cmd": "python3 b.py --n 'a b'", "metric_regex": "M: (?P<value>.*)",
             "repeats": 2, "python": "/py", "build_cmd": "build.sh", "bench_cwd": "/here", "cache_dir": None,
             "ref": "origin/main", "bench_timeout": None, "env": ["A=1"], "force": False}
    return P.WatchSettings("commits", {**level, **kw.pop("level", {})}, **kw)


def test_the_hunts_commands_carry_the_watchs_benchmark_and_window():
    w = _settings(higher_is_better=False, min_change=0.03, hunt_args=["--max-repeats", "6"])
    argv = P.bisect_command(w.level, {"xla": "x1", "jax": "j1"}, {"xla": "x2", "jax": "j2"}, w, "/wd")
    assert argv[:6] == ["hourly", "bisect", "--good", "xla@x1,jax@j1", "--bad", "xla@x2,jax@j2"]
    assert argv[argv.index("--bench-cmd") + 1] == "python3 b.py --n 'a b'" and "--lower-is-better" in argv
    assert argv[-5:] == ["--max-repeats", "6", "--workdir", "/wd", "--json"]
    assert argv[argv.index("--env") + 1] == "A=1" and argv[argv.index("--min-change") + 1] == "0.03"
    nightly = {"image": "reg/jax:nightly-{date}", "bench_cmd": "/bin/bash /dir/test.sh", "metric_regex": "M", "repeats": 1,
               "gpus": "none", "mounts": ["/src:/dir"], "env": [], "timeout": None, "pull": False}
    hunt = P.nightly_hunt_command(nightly, "2023-08-22", "2023-08-23", w, "/wd")
    assert hunt[:6] == ["hourly", "hunt", "--good-date", "2023-08-22", "--bad-date", "2023-08-23"]
    assert "--no-pull" in hunt and hunt[hunt.index("--mount") + 1] == "/src:/dir"
    # the job script runs the same argv (by this Python) and keeps its answer, log and exit status
    script = P.job_script(argv, "/usr/bin/python3", "/wd/a b")
    assert "cd '/wd/a b' || exit 1" in script
    line = next(ln for ln in script.splitlines() if ln.startswith("/usr/bin/python3"))
    cmd = shlex.split(line.split(" > ")[0])
    assert cmd == ["/usr/bin/python3", "-m", "hourly", *argv[1:]]
    assert f"> {P.ANSWER}.part 2> {P.HUNT_LOG}" in line and f"> {P.EXIT_FILE}" in script


def test_named_metrics_each_take_their_units_direction_and_the_hunt_follows_the_one_that_regressed():
    """With named metrics (--metrics) each series is judged in its unit's direction; an alert's hunt
    follows its largest regression's metric, reading every run's output as the watch did."""
    from hourly.watch.run import named_values
    w = _settings(metrics="all", metric="", level={"metric_samples": "all", "warmup_samples": 2})
    assert (w.direction_of("trace_ms"), w.direction_of("tokens_per_s"), w.direction_of("MLUPS")) == (False, True, True)
    assert _settings().direction_of("trace_ms") is True  # the regex's one metric: the watch's direction
    check = {**_check(1, "b", "c", "confirmed", 0.2, 40, 48), "metric": "trace_ms"}
    faster = {**_check(2, "b", "c", "confirmed", 0.1, 900, 990), "metric": "tokens_per_s"}
    alert = Alert(1, "c", "b", "c", checks=[1, 2], watch="key")
    report = P.WatchReport(w, "key", ["tokens_per_s", "trace_ms"], _report([], []).builds, {},
                           [Check.from_json(check), Check.from_json(faster)], [alert])
    assert P.alert_kind(alert, report) == "regression" and P.regression_metric(alert, report) == "trace_ms"
    assert [s["kind"] for s in P.alert_json(alert, report)["steps"]] == ["regression", "improvement"]
    argv = P.bisect_command(w.level, {"xla": "x1", "jax": "j1"}, {"xla": "x2", "jax": "j2"}, w, "/wd", "trace_ms")
    assert argv[argv.index("--metrics") + 1] == "all" and argv[argv.index("--metric") + 1] == "trace_ms"
    assert argv[argv.index("--metric-samples") + 1] == "all" and argv[argv.index("--warmup-samples") + 1] == "2"
    assert "--lower-is-better" in argv and "--higher-is-better" not in argv
    # one measurement's rows: a row that measured no name holds for every series kept (a gap each);
    # a metric the benchmark calls unavailable starts no series
    ok = [("trace_ms", "ok", 41.0, [41.0], [{"status": "ok"}]),
          ("peak_memory_bytes", "no_metric", None, [], [{"status": "no_metric", "unavailable": "cpu"}])]
    status, _, values = named_values(w, ok, ["trace_ms"])
    assert status == "ok" and set(values) == {"trace_ms"}
    status, _, values = named_values(w, [("", "crashed", None, [], [{"status": "crashed"}])], ["trace_ms", "step_ms"])
    assert status == "crashed" and values["step_ms"]["value"] is None and set(values) == {"trace_ms", "step_ms"}


def test_nightly_versions_carry_their_date():
    assert str(dev_date("0.4.36.dev20241001")) == "2024-10-01"
    assert dev_date("0.4.36") is None and dev_date("0.4.36.dev1") is None


@pytest.mark.parametrize("kw,message", [
    ({"source": "nightly"}, "--source must be containers or wheels or commits, not nightly"),
    ({"max_pairs": 4}, "--max-pairs must be 10 or more"),
    ({"executor": "cloud"}, "--executor 'cloud' is neither local nor slurm"),
    ({"hunt_image": "jax:latest"}, "--hunt-image 'jax:latest' has no {date}"),
    ({"step": "often"}, "often"),
    ({"since": "yesterday-ish"}, "yesterday-ish"),
    ({"notify_cmd": "'unclosed"}, "--notify-cmd"),
    # issue 33: the workdir was made, then "the window is reversed — swap --from and --to"
    ({"since": "2023-08-25", "until": "2023-08-24"}, "--until 2023-08-24 is before --since 2023-08-25 — swap them"),
    # a --since after now was stored as the watch's first date, then "the window is reversed — swap
    # --from and --to" (flags watch has not)
    ({"since": "2999-01-01"}, "--since 2999-01-01 is in the future"),
])
def test_bad_settings_are_one_line_with_the_fix(kw, message):
    source = kw.pop("source", "commits")
    w = dataclasses.replace(_settings(**kw), source=source)
    with pytest.raises(UserError) as e:
        w.validate()
    assert message in e.value.one_line() and e.value.fix


def _report(checks, alerts, builds=None, values=None) -> P.WatchReport:
    builds = builds or [{"build": b, "time": b, "status": "ok", "detail": None, "ident": {"xla": b, "jax": b},
                         "decision": None, "seq": i} for i, b in enumerate("abcdefghij")]
    return P.WatchReport(_settings(), "key", ["m"], [Build.from_json(b) for b in builds], values or {},
                         [Check.from_json(c) for c in checks], [Alert.from_json(a) for a in alerts])


def _check(i, before, after, verdict, change, lb, la):
    return {"id": i, "watch": "key", "metric": "m", "arrived": after, "before": before, "after": after,
            "verdict": verdict, "suspect": {"relative_change": change, "strength": 9.0, "source": "newest"},
            "result": {"change": change, "low": change - 0.01, "high": change + 0.01, "level_before": lb,
                       "level_after": la, "pairs": 10, "p_value": 0.001}}


def test_a_regression_undone_by_a_later_confirmed_step_is_recovered():
    checks = [_check(1, "b", "c", "confirmed", -0.2, 100, 80), _check(2, "e", "f", "rejected", 0.1, 80, 88),
              _check(3, "g", "h", "confirmed", 0.25, 80, 100.5)]
    alerts = [{"id": 1, "watch": "key", "arrived": "c", "before": "b", "after": "c", "checks": [1], "hunt": None,
               "recovery": None, "events": []}]
    rec = P.recoveries(_report(checks, alerts))
    assert rec == {1: {"metric": "m", "build": "h", "level": 100.5, "relative_to_before": pytest.approx(0.005)}}
    # a later step that does not come back within the minimum change is no recovery; a rejected one never is
    checks[2] = _check(3, "g", "h", "confirmed", 0.1, 80, 88)
    assert P.recoveries(_report(checks, alerts)) == {1: None}


def test_exit_codes_new_alert_unsure_quiet():
    r = _report([_check(1, "b", "c", "undecided", -0.03, 100, 97)], [])
    assert r.exit_code() == 0  # nothing of this run
    r.run.checks = [1]
    assert r.exit_code() == P.UNSURE_EXIT and "without settling" in r.unsure()[0]
    r.run.new_alerts = [1]
    assert r.exit_code() == P.ALERT_EXIT == 10


def test_a_drift_measured_again_is_said_to_be_one_not_unsure_at_the_cap():
    from hourly.analysis.arrival import MAX_PAIRS, confirm
    from hourly.render.watch import suspicion_text
    from hourly.watch.plan import confirmation_json
    old = [100.0 * (1 + 0.002 * math.sin(i)) for i in range(MAX_PAIRS)]
    c = confirm(old, [x * 1.03 for x in old], window=8)      # +3 % over eight builds: a drift
    drift = {**_check(1, "b", "c", "undecided", 0.03, 100, 103), "result": confirmation_json(c)}
    text = suspicion_text(Check.from_json(drift))
    assert "not confirmed, not ruled out (a change of +3.00% over a window of 8 builds" in text
    assert "unsure at the cap" not in text
    assert "unsure at the cap" in suspicion_text(Check.from_json(_check(2, "b", "c", "undecided", 0.03, 100, 103)))


def test_watch_settings_are_frozen_and_changed_by_replace():
    """A watch's settings are one value through a run: a change (the first run's --since, a later
    run's --until) is a new value made with dataclasses.replace, never an assignment."""
    w = _settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.since = "2023-08-01"  # type: ignore[misc]
    later = dataclasses.replace(w, since="2023-08-01")
    assert later.since == "2023-08-01" and w.since is None and later.level == w.level


@pytest.mark.parametrize("source,where", [("wheels", "--find-links or --index-url"), ("containers", "--image"),
                                          ("commits", "the checkouts and --ref")])
def test_a_watch_that_found_no_build_at_all_is_unsure_not_quiet(source, where):
    """issue 33: a first run over an empty --find-links folder said "nothing new since the start",
    exit 0, as a quiet night does; two builds are already "unsure" (too few to judge)."""
    w = dataclasses.replace(_settings(since="2023-08-01"), source=source)
    r = P.WatchReport(w, "key", ["m"], [], {}, [], [])
    assert r.exit_code() == P.UNSURE_EXIT
    assert r.unsure() == [f"no build found since 2023-08-01: nothing is watched yet — check {where}, and --since"]


def test_outside_text_is_escaped_in_the_markdown_and_the_page(tmp_path):
    from hourly.render.watch import alert_markdown, page_html
    evil = "<script>alert(1)</script> | *bold* [x](http://e)"
    checks = [_check(1, "b", "c", "confirmed", -0.2, 100, 80)]
    culprit = {"repo": "xla", "sha": "c" * 40, "subject": evil, "link": "https://github.com/openxla/xla/commit/" + "c" * 40}
    alerts = [{"id": 1, "watch": "key", "arrived": "c", "before": "b", "after": "c", "checks": [1],
               "hunt": {"status": "culprit", "culprit": culprit}, "recovery": None, "events": []}]
    r = _report(checks, alerts)
    md = alert_markdown(r.alerts[0], r)
    assert "<script>" not in md and "&lt;script&gt;" in md and r"\*bold\*" in md and r"\|" in md
    assert f"[`{'c' * 12}`](https://github.com/openxla/xla/commit/{'c' * 40})" in md
    page = page_html(r, {"m": "m.png"}, tmp_path)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'src="m.png"' in page and "alert 1" in page


def test_control_and_bidi_characters_in_a_subject_are_shown_as_escapes_on_the_page(tmp_path):
    """A U+202E in a culprit's subject reverses the rest of its line, an ESC sequence hides in it:
    the page shows each as its escape, as the markdown and the terminal do."""
    from hourly.render.watch import alert_markdown, page_html
    subject = "Speed up \u202eesuf\u202c fusion \x1b[31mred\x1b[0m\x07"
    checks = [_check(1, "b", "c", "confirmed", -0.2, 100, 80)]
    culprit = {"repo": "xla", "sha": "c" * 40, "subject": subject, "link": "https://github.com/openxla/xla/commit/" + "c" * 40}
    alerts = [{"id": 1, "watch": "key", "arrived": "c", "before": "b", "after": "c", "checks": [1],
               "hunt": {"status": "culprit", "culprit": culprit}, "recovery": None, "events": []}]
    builds = [{"build": b, "time": b, "status": "ok", "detail": "exit 1: \u202etuo" if b == "d" else None,
               "ident": {"xla": b, "jax": b}, "decision": None, "seq": i} for i, b in enumerate("abcdefghij")]
    r = _report(checks, alerts, builds=builds)
    page = page_html(r, {"m": "m.png"}, tmp_path)
    for raw in ("\u202e", "\u202c", "\x1b", "\x07"):
        assert raw not in page, repr(raw)
    assert "Speed up \\u202eesuf\\u202c fusion \\x1b[31mred\\x1b[0m\\x07" in page
    assert "exit 1: \\u202etuo" in page
    assert "\u202e" not in alert_markdown(r.alerts[0], r) and "\\u202eesuf" in alert_markdown(r.alerts[0], r)


def test_the_plot_draws_a_rejected_night_off_the_line_shades_the_confirmed_step_alone_and_says_what_each_mark_is():
    """A one-night dip (e) that measuring again rejected is a ring apart, not part of the line; the
    alert's window (d..h, its other steps') is wider than this metric's confirmed step (g -> h):
    the band is the step's two builds; the legend names the line, the ring and the band."""
    import matplotlib.pyplot as plt

    from hourly.render.watch import plot_figure, plot_parts
    levels = dict(zip("abcdefghij", [100, 100.5, 99.6, 100.2, 84, 99.8, 100.1, 80.3, 80, 79.6], strict=True))
    values = {b: {"m": {"value": v, "samples": [v, v]}} for b, v in levels.items()}
    checks = [_check(1, "d", "e", "rejected", -0.16, 100, 99.9), _check(2, "g", "h", "confirmed", -0.2, 100, 80)]
    alerts = [{"id": 1, "watch": "key", "arrived": "h", "before": "d", "after": "h", "checks": [2],
               "hunt": None, "recovery": None, "events": []}]
    r = _report(checks, alerts, values=values)
    parts = plot_parts(r, "m")
    assert [x for x, _ in parts["line"]] == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert parts["rejected"] == [(4, 84.0)]
    assert [(x0, x1, kind) for x0, x1, _, kind, _ in parts["bands"]] == [(6, 7, "regression")]
    fig = plot_figure(r, "m")
    try:
        (ax,) = fig.axes
        drawn = [list(line.get_xdata()) for line in ax.get_lines() if line.get_linestyle() == "-"]
        assert drawn == [[0, 1, 2, 3, 5, 6, 7, 8, 9]]
        (band,) = ax.patches
        corners = ax.transData.inverted().transform(band.get_transform().transform(band.get_path().vertices))
        assert sorted({round(float(x), 6) for x, _ in corners}) == [6, 7]
        labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        assert labels == ["m: each build's median (dots: runs)", "suspected, rejected when measured again",
                          "confirmed regression (the step's two builds)"]
    finally:
        plt.close(fig)


def test_the_plot_of_values_near_the_floats_limit_is_drawn_in_a_unit_it_names(tmp_path):
    """Values near 1e308 (positive, negative, or both): their span and the room past them are inf,
    and matplotlib cannot set such an axis (the page's plot failed). They are drawn divided by a
    power of ten that the axis names, the line where the values are."""
    import matplotlib.pyplot as plt

    from hourly.render.watch import plot_figure, plot_metric
    for sign in ((1, 1, 1, 1), (-1, -1, -1, -1), (-1, 1, 1, -1)):
        levels = dict(zip("abcd", [s * v for s, v in zip(sign, (1.0e308, 1.02e308, 1.5e308, 1.7e308), strict=True)],
                          strict=True))
        values = {b: {"m": {"value": v, "samples": [v, v * 0.999]}} for b, v in levels.items()}
        checks = [_check(1, "b", "c", "confirmed", 0.4, 1.02e308, 1.5e308)]
        alerts = [{"id": 1, "watch": "key", "arrived": "c", "before": "b", "after": "c", "checks": [1],
                   "hunt": None, "recovery": None, "events": []}]
        r = _report(checks, alerts, values=values)
        assert plot_metric(r, "m", tmp_path / "m.png").stat().st_size > 0
        fig = plot_figure(r, "m")
        try:
            (ax,) = fig.axes
            assert ax.get_ylabel() == "m (× 1e308)"
            (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
            assert list(line.get_ydata()) == pytest.approx([v / 1e308 for v in levels.values()])
            lo, hi = ax.get_ylim()
            assert lo <= min(line.get_ydata()) and max(line.get_ydata()) <= hi
        finally:
            plt.close(fig)


#: another process that holds a workdir's store lock (as a watch running there does) until its stdin closes
HOLD_STORE = ("import sys; from hourly.adapters.locks import store_lock; store_lock(sys.argv[1]).acquire(); "
              "print('held', flush=True); sys.stdin.read()")


def test_two_watches_on_one_workdir_never_run_at_once(tmp_path, capsys):
    work = tmp_path / "work"
    Store(work)
    # another process holds it (a second lock in this one would nest): this one is told who
    holder = subprocess.Popen([sys.executable, "-c", HOLD_STORE, str(work)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        code, out, err = _run(capsys, ["watch", "--source", "containers", "--workdir", str(work), "--no-pull",
                                       "--image", "nowhere.invalid/jax:nightly-{date}"])
    finally:
        holder.communicate(timeout=60)
    assert code == 1 and "in use by another hourly" in err and f"pid {holder.pid} " in err, err


def _run(capsys, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_commands_that_read_a_scan_say_a_watchs_workdir_holds_a_watch(tmp_path, capsys):
    """issue 33: bisect and detect on a watch's workdir asked for a benchmark command, show and
    report for a scan: each names what the workdir holds and what reads it. (What the workdir holds
    is the watch's stored settings, the same for every source: here a watch of nightly wheels whose
    first run found none yet.)"""
    work = tmp_path / "work"
    (tmp_path / "wheels").mkdir()
    code, out, err = _run(capsys, ["watch", "--source", "wheels", "--find-links", str(tmp_path / "wheels"),
                                   "--since", "2023-08-01", "--until", "2023-08-08", "--bench-cmd", "python bench.py",
                                   "--release-cache-dir", str(tmp_path / "envs"), "--workdir", str(work)])
    assert code == P.UNSURE_EXIT and "no build found since 2023-08-01" in out, out + err
    # profile asked for a benchmark command, explain to run `hourly bisect` (refused there), shell good
    # named /opt/xla-source
    for argv in (["show", "--workdir", str(work)], ["report", "--workdir", str(work)],
                 ["bisect", "--workdir", str(work)], ["detect", str(work)], ["profile", "--workdir", str(work)],
                 ["explain", "--workdir", str(work)], ["shell", "good", "--workdir", str(work), "--", "true"]):
        code, out, err = _run(capsys, argv)
        assert (code, out) == (1, ""), argv
        assert (f"hourly: error: no scan in {work} for hourly {argv[0]} to read: it holds a watch (hourly watch) — "
                f"hourly watch --show --workdir {work} prints it (its page: {work / 'watch' / 'index.html'})") \
            in " ".join(err.split()), argv
    assert not (work / "report").exists()


def test_samples_on_a_watch_is_hourly_samples_in_every_run_of_its_builds(tmp_path, capsys):
    """--samples N on a level that does not choose the count (watch, releases, nightly) is
    HOURLY_SAMPLES=N in each run's environment, kept with the watch's settings for its later runs;
    given beside --env HOURLY_SAMPLES it is a usage error (they would disagree)."""
    work = tmp_path / "work"
    (tmp_path / "wheels").mkdir()
    base = ["watch", "--source", "wheels", "--find-links", str(tmp_path / "wheels"), "--since", "2023-08-01",
            "--until", "2023-08-08", "--bench-cmd", "python bench.py", "--release-cache-dir", str(tmp_path / "envs")]
    code, out, err = _run(capsys, [*base, "--samples", "7", "--workdir", str(work)])
    assert code == P.UNSURE_EXIT, out + err
    assert "HOURLY_SAMPLES=7" in Store(work).load_settings("watch")["settings"]["level"]["env"]
    code, out, err = _run(capsys, [*base, "--samples", "7", "--env", "HOURLY_SAMPLES=9",
                                   "--workdir", str(tmp_path / "both")])
    assert code == 2 and "--samples and --env HOURLY_SAMPLES" in err, out + err


def test_env_without_a_value_takes_it_from_hourlys_environment_and_a_pasted_redacted_value_is_refused(
        tmp_path, capsys, monkeypatch):
    """``--env NAME`` is NAME's value in hourly's environment (how a secret is passed without being
    written down); NAME not set there, or ``NAME=<redacted>`` pasted from a printed line, is a usage
    error (exit 2) that says how to pass the secret, before the workdir is made."""
    work = tmp_path / "work"
    (tmp_path / "wheels").mkdir()
    base = ["watch", "--source", "wheels", "--find-links", str(tmp_path / "wheels"), "--since", "2023-08-01",
            "--until", "2023-08-08", "--bench-cmd", "python bench.py", "--release-cache-dir", str(tmp_path / "envs"),
            "--workdir", str(work)]
    monkeypatch.delenv("HOURLY_TEST_API_TOKEN", raising=False)
    code, out, err = _run(capsys, [*base, "--env", "HOURLY_TEST_API_TOKEN=<redacted>"])
    assert code == 2 and out == "", out + err
    assert ("--env HOURLY_TEST_API_TOKEN=<redacted> passes the word <redacted>: hourly prints a secret's value so, "
            "never the value itself — export HOURLY_TEST_API_TOKEN=<its value> and pass --env HOURLY_TEST_API_TOKEN "
            "(the value is then taken from hourly's environment)") in " ".join(err.split())
    code, out, err = _run(capsys, [*base, "--env", "HOURLY_TEST_API_TOKEN"])
    assert code == 2 and out == "", out + err
    assert ("--env HOURLY_TEST_API_TOKEN takes HOURLY_TEST_API_TOKEN's value from hourly's environment, and "
            "HOURLY_TEST_API_TOKEN is not set — export HOURLY_TEST_API_TOKEN=... before running hourly, or pass "
            "--env HOURLY_TEST_API_TOKEN=VALUE") in " ".join(err.split())
    assert not work.exists()
    # set: the watch runs (no nightly there yet: unsure, not a usage error), and keeps the name alone
    monkeypatch.setenv("HOURLY_TEST_API_TOKEN", "s3cret")
    code, out, err = _run(capsys, [*base, "--env", "HOURLY_TEST_API_TOKEN"])
    assert code == P.UNSURE_EXIT, out + err
    assert Store(work).load_settings(P.LEVEL)["settings"]["level"]["env"] == ["HOURLY_TEST_API_TOKEN"]
    assert (work / "hourly.sqlite").stat().st_mode & 0o777 != 0o600  # it holds no secret
    # a later run from the store alone (cron) needs it in its environment too, and says so
    monkeypatch.delenv("HOURLY_TEST_API_TOKEN")
    code, out, err = _run(capsys, ["watch", "--workdir", str(work), "--until", "2023-08-08"])
    assert code == 2 and "export HOURLY_TEST_API_TOKEN=..." in " ".join(err.split()), out + err


def test_a_secret_given_as_a_value_is_kept_for_the_owner_alone_and_a_hunt_script_passes_its_name(tmp_path):
    """What holds a secret's value is its owner's alone: the store (and its write-ahead log) and a
    job's request; a hunt's command passes ``--env NAME`` and the value goes in its environment."""
    from hourly.execute.jobfiles import write_json
    from hourly.text.privacy import env_from_environment, holds_secret
    argv = ["hourly", "bisect", "--env", "API_TOKEN=s3cret", "--env=GH_TOKEN=t0k", "--env", "A=1", "--env", "B_TOKEN"]
    assert env_from_environment(argv) == (
        ["hourly", "bisect", "--env", "API_TOKEN", "--env=GH_TOKEN", "--env", "A=1", "--env", "B_TOKEN"],
        {"API_TOKEN": "s3cret", "GH_TOKEN": "t0k"})
    assert holds_secret({"level": {"env": ["A=1", "API_TOKEN=s3cret"]}})
    assert holds_secret({"cmd": ["env API_TOKEN=s3cret python b.py"]})
    assert holds_secret({"environment": {"API_TOKEN": "s3cret"}})
    assert not holds_secret({"level": {"env": ["A=1", "API_TOKEN", "API_TOKEN=<redacted>"]}, "key": "ab12", "n": 3})
    store = Store(tmp_path / "w")
    store.save_settings("plain", {"env": ["A=1"]})
    assert store.path.stat().st_mode & 0o777 == 0o644 & ~_umask()
    store.save_settings("watch", {"settings": {"level": {"env": ["API_TOKEN=s3cret"]}}})
    for p in (store.path, Path(f"{store.path}-wal")):
        assert p.stat().st_mode & 0o777 == 0o600, p
    write_json(tmp_path / "request.json", {"settings": {"env": ["API_TOKEN=s3cret"]}})
    write_json(tmp_path / "plain.json", {"settings": {"env": ["A=1"]}})
    assert (tmp_path / "request.json").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "plain.json").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


# -- a watch over the commits of stand-in repositories, night by night ---------------------------

@pytest.fixture
def watched(repos_cache, venv_python, tmp_path):
    made = repos_cache(tmp_path / "repos", CHANGES, start="2023-08-19T12:00:00Z")
    work = tmp_path / "work"
    args = ["watch", "--source", "commits", "--since", "2023-08-20T14:00Z", "--step", "2h",
            "--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
            # the benchmark needs its token (12 characters: not the word <redacted>), here and in the hunt
            "--python", venv_python, "--repeats", "2",
            "--bench-cmd", f"sh -c 'test ${{#HF_TOKEN}} -eq 12 || exit 9; exec python3 {made.bench_script}'",
            "--warmup-runs", "0", "--env", "HF_TOKEN=s3cret-value", "--workdir", str(work),
            # the hunt's bisection: two samples a state tell a 10 % step in 0.2 % noise (10 runs, not 20-28)
            "--hunt-arg=--max-repeats=2"]
    return made, work, args


def test_a_watch_since_a_future_date_is_refused_before_its_workdir_is_made(watched, capsys):
    made, work, args = watched
    args = [a if a != "2023-08-20T14:00Z" else "2999-01-01" for a in args]
    code, out, err = _run(capsys, args)
    assert code == 1, out + err
    assert "--since 2999-01-01 is in the future" in err and "pass a --since in the past" in err
    assert "--from" not in err and "Traceback" not in err
    assert not work.exists()  # nothing stored: a later run without --since does not inherit it


def test_a_commit_watch_alerts_on_the_confirmed_step_and_hunts_its_commit(watched, capsys):
    made, work, args = watched
    # night 1: the history (four builds); the newest judged quiet
    code, out, err = _run(capsys, [*args, "--until", "2023-08-20 20:00"])
    assert code == 0, out + err
    assert "4 new build(s)" in out
    # the culprit's night: suspected, measured again against the build before it (run in turn, each
    # installed once into an environment of its own), confirmed, alerted, hunted to its commit
    code, out, err = _run(capsys, [*args, "--until", "2023-08-20 22:00"])
    assert code == P.ALERT_EXIT, out + err
    store = Store(work)
    key = store.load_settings("watch")["key"]
    (alert,) = store.watch_alerts(key)
    assert (alert.before, alert.after) == ("2023-08-20T20:00:00Z", "2023-08-20T22:00:00Z")
    confirmed = [c for c in store.watch_checks(key) if c.verdict == "confirmed"]
    assert [c.id for c in confirmed] == alert.checks
    result = confirmed[0].result
    assert result is not None and result["change"] == pytest.approx(-0.1, abs=0.015) and result["pairs"] >= 10
    ident = {b.build: b.ident for b in store.watch_builds(key)}
    assert sorted(d.name for d in (work / "states").iterdir()) == sorted(
        Pair(ident[end]["xla"], ident[end]["jax"]).key() for end in (alert.before, alert.after))
    hunt = alert.hunt
    assert hunt is not None and hunt.status == "culprit" and hunt.culprit and hunt.command and hunt.workdir, hunt
    assert hunt.culprit["sha"] == made.shas[CULPRIT] and hunt.culprit["subject"] == CULPRIT
    assert Path(hunt.workdir).parent == work / "hunts"
    # the hunt ran with the benchmark's token (its benchmark checks it), which no file of the hunt
    # holds: its script passes --env HF_TOKEN, the value is in its environment; the script is the
    # owner's, and so is the store that keeps the watch's settings (the value with them)
    script = Path(hunt.workdir) / P.JOB_SCRIPT
    assert "--env HF_TOKEN " in script.read_text() and "s3cret" not in script.read_text()
    assert script.stat().st_mode & 0o777 == 0o700
    assert (work / "hourly.sqlite").stat().st_mode & 0o777 == 0o600
    hunt_files = [p for p in Path(hunt.workdir).rglob("*") if p.is_file() and p.suffix not in (".pyc", ".so")]
    assert hunt_files and not [p for p in hunt_files if b"s3cret" in p.read_bytes()]
    assert hunt.command[hunt.command.index("--env") + 1] == "HF_TOKEN"
    assert "s3cret" not in json.dumps([a.to_json() for a in store.watch_alerts(key)])
    assert hunt.command[-4:] == ["--max-repeats=2", "--workdir", hunt.workdir, "--json"]  # --hunt-arg, as given
    assert "▼ alert 1 (new): regression" in out and made.shas[CULPRIT][:12] in out
    # the markdown alert and the page
    md = (work / "watch" / "alert-1.md").read_text()
    assert r"\[XLA:GPU\] Slower fusion heuristic" in md and made.shas[CULPRIT][:12] in md
    page = (work / "watch" / "index.html").read_text()
    assert 'src="MLUPS.png"' in page and made.shas[CULPRIT][:12] in page
    assert "s3cret" not in page + md + out + err
    # the same night again, as cron runs it (the workdir alone: the watch is read from its store):
    # nothing new, nothing measured or hunted, and it says so
    runs_before = len(store.watch_runs(confirmed[0].id))
    code, out, err = _run(capsys, ["watch", "--workdir", str(work), "--until", "2023-08-20 22:00"])
    assert code == 0 and "nothing new since 2023-08-20T22:00:00Z" in out, out + err
    assert len(store.watch_runs(confirmed[0].id)) == runs_before
    code, out, err = _run(capsys, ["watch", "--workdir", str(work), "--show"])
    assert code == 0 and "5 builds stored, newest 2023-08-20T22:00:00Z" in out and CULPRIT in out, out + err
    # the page opens from disk in a real browser and shows the plot
    shows_the_plot(work / "watch" / "index.html")


# -- the page in a real headless browser -------------------------------------------------------

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but chromium is not installed; CI must open the watch page (bash .ci/chromium-up.sh)",
                        pytrace=False)
        pytest.skip("chromium is not installed (bash .ci/chromium-up.sh, as root)")
    return exe


def shows_the_plot(page: Path) -> None:
    """Open ``page`` from disk in headless chromium: the plot image loaded (the DOM says its natural
    width) and the screenshot shows it (the plot's box holds the line's blue and many non-white pixels).
    One browser does both: it prints the DOM once the page has loaded, then takes the screenshot."""
    from matplotlib.image import imread
    exe = chromium()
    with tempfile.TemporaryDirectory() as profile, tempfile.TemporaryDirectory() as shots:
        shot = Path(shots) / "page.png"
        res = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1100,900",
                              "--dump-dom", f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        assert 'data-loaded="1000"' in res.stdout, res.stdout[:2000]
        assert shot.exists(), res.stderr[-2000:]
        pixels = imread(str(shot))[..., :3]
    # the plot is the page's first image, 1000x420 right under the one-line title (16 px margin)
    box = pixels[50:470, 16:1016]
    non_white = (box.sum(axis=2) < 2.9).mean()
    blue = ((box[..., 2] > 0.6) & (box[..., 0] < 0.3) & (box[..., 1] < 0.6)).sum()
    assert non_white > 0.02 and blue > 200, (non_white, blue)


# -- a watch over nightly wheels in a local index ------------------------------------------------

WHEEL_BENCH = """\
import os, random
import jax
slow = 1.15 if os.path.exists("slow-night") else 1.0  # the night's machine, not the nightly
print("dispatch_us:", jax.DISPATCH_US * slow * (1 + random.uniform(-0.002, 0.002)))
"""


def _nightlies(dist: Path) -> Path:
    """Into ``dist``: jax and jaxlib 0.5.0.dev20230801 .. dev20230809, each jax with a trivial jit's
    dispatch time (``DISPATCH_US``) of 100 µs and a tracing time (``TRACE_MS``) of 40 ms, 120 µs and
    50 ms from the nightly of 08-08 on (regressions: lower is better)."""
    if __package__:
        from .test_releases import write_wheel
    else:
        from test_releases import write_wheel
    dist.mkdir(parents=True, exist_ok=True)
    for day in range(1, 10):
        v = f"0.5.0.dev202308{day:02d}"
        dispatch, trace = (100.0, 40.0) if day < 8 else (120.0, 50.0)
        write_wheel(dist, "jax", v, {"jax/__init__.py": f'import jaxlib\n__version__ = "{v}"\nDISPATCH_US = {dispatch}\n'
                                                        f'TRACE_MS = {trace}\n'},
                    [f'jaxlib=={v}; extra == "cpu"'], when=(2023, 8, day))
        write_wheel(dist, "jaxlib", v, {"jaxlib/__init__.py": f'__version__ = "{v}"\n'}, when=(2023, 8, day))
    return dist


@pytest.fixture(scope="module")
def nightly_wheels(tmp_path_factory) -> tuple[Path, Path]:
    """The nightlies of :func:`_nightlies`, and the folder of their environments (``--release-cache-dir``):
    made by the first watch of this file that installs a nightly, found ready there by the next, as a
    watch's later runs find them."""
    root = tmp_path_factory.mktemp("nightly-wheels")
    return _nightlies(root / "dist"), root / "envs"


def test_a_wheels_watch_installs_each_nightly_and_alerts_on_the_confirmed_regression_not_the_slow_night(
        nightly_wheels, tmp_path, capsys):
    wheels, envs = nightly_wheels
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "bench.py").write_text(WHEEL_BENCH)
    work = tmp_path / "work"
    args = ["watch", "--source", "wheels", "--find-links", str(wheels), "--since", "2023-08-01",
            "--bench-cmd", "python bench.py", "--bench-cwd", str(bench), "--metric-regex", r"dispatch_us:\s*(?P<value>[0-9.]+)",
            "--lower-is-better", "--release-cache-dir", str(envs), "--workdir", str(work)]
    # the first nights: the history (four nightlies); the newest judged quiet
    code, out, err = _run(capsys, [*args, "--until", "2023-08-04"])
    assert code == 0 and "4 new build(s)" in out, out + err
    # a slow night: the new nightly reads 15 % slow, is measured again against the one before it,
    # interleaved, on the same slow machine: no step, no alert
    (bench / "slow-night").write_text("slow\n")
    code, out, err = _run(capsys, [*args, "--until", "2023-08-05", "--json"])
    (bench / "slow-night").unlink()
    doc = json.loads(out)
    assert code == 0, err
    assert doc["alerts"] == [] and doc["exit_code"] == 0
    (check,) = doc["checks"]
    assert check["verdict"] == "rejected" and check["suspect"]["relative_change"] > 0.1
    assert abs(check["result"]["change"]) < 0.02 and check["result"]["pairs"] >= 10
    # two quiet nights, then the regression's: suspected, confirmed, alerted
    code, out, err = _run(capsys, [*args, "--until", "2023-08-08", "--json"])
    assert code == P.ALERT_EXIT, out + err
    doc = json.loads(out)
    assert [b["build"] for b in doc["builds"]] == [f"0.5.0.dev202308{d:02d}" for d in range(1, 9)]
    (alert,) = doc["alerts"]
    assert (alert["before"]["build"], alert["after"]["build"]) == ("0.5.0.dev20230807", "0.5.0.dev20230808")
    assert alert["after"]["jaxlib"] == "0.5.0.dev20230808" and alert["kind"] == "regression"
    (step,) = alert["steps"]
    assert step["metric"] == "dispatch_us" and step["change"] == pytest.approx(0.2, abs=0.01)
    # no commits to bisect and no --hunt-image: not hunted, and the alert says how
    assert alert["hunt"]["status"] == "not started" and "--hunt-image" in alert["hunt"]["reason"]
    # the slow night is said as suspected and not confirmed, and is no alert
    code, out, err = _run(capsys, ["watch", "--workdir", str(work), "--show"])
    assert code == 0 and "suspected, not confirmed" in out, out + err
    assert "rejected" not in out.split("alerts:")[1].split("▼")[0]


#: a stand-in of hourly's per-phase harness (by its file name): every process prints 5 samples of
#: each phase; trace_ms follows the wheel (+25 % from the nightly of 08-08 on), step_ms and
#: tokens_per_s do not
PHASE_BENCH = """\
import random
import jax
for _ in range(5):
    print("METRIC trace_ms:", jax.TRACE_MS * (1 + random.uniform(-0.002, 0.002)))
    print("METRIC step_ms:", 2.5 * (1 + random.uniform(-0.002, 0.002)))
    print("METRIC tokens_per_s:", 900.0 * (1 + random.uniform(-0.002, 0.002)))
print("UNAVAILABLE peak_memory_bytes: the stand-in has no device")
"""


def test_a_watch_over_the_per_phase_harness_keeps_a_series_per_phase_and_alerts_on_the_phase_that_moved(
        nightly_wheels, tmp_path, capsys):
    """The per-phase harness (found by its file name) records every phase as a series of its own,
    each in its unit's direction (no --lower-is-better given: trace_ms up is a regression,
    tokens_per_s is a rate): the phase that moved is alerted, the others are not, and the alert's
    hunt would follow that phase (--metrics all --metric trace_ms, lower is better)."""
    wheels, envs = nightly_wheels
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "jaxbench_phases.py").write_text(PHASE_BENCH)
    work = tmp_path / "work"
    code, out, err = _run(capsys, ["watch", "--source", "wheels", "--find-links", str(wheels),
                                   "--since", "2023-08-01", "--until", "2023-08-08",
                                   "--bench-cmd", "python jaxbench_phases.py", "--bench-cwd", str(bench),
                                   "--release-cache-dir", str(envs), "--workdir", str(work),
                                   "--hunt-image", "ghcr.io/example/jax:nightly-{date}", "--no-hunt", "--json"])
    assert code == P.ALERT_EXIT, out + err
    doc = json.loads(out)
    assert doc["metrics"] == ["step_ms", "tokens_per_s", "trace_ms"]  # every phase a series; none primary
    assert doc["direction"] == {"step_ms": False, "tokens_per_s": True, "trace_ms": False}
    newest = doc["builds"][-1]
    assert newest["build"] == "0.5.0.dev20230808" and set(newest["values"]) == {"step_ms", "tokens_per_s", "trace_ms"}
    # one value per process (the median of its 5 samples), each process's samples kept with its run
    trace = newest["values"]["trace_ms"]
    assert len(trace["samples"]) == 3 and all(len(r["samples"]) == 5 for r in trace["runs"] if not r.get("warmup"))
    assert trace["value"] == pytest.approx(50.0, rel=0.01)
    (alert,) = doc["alerts"]
    assert (alert["before"]["build"], alert["after"]["build"]) == ("0.5.0.dev20230807", "0.5.0.dev20230808")
    (step,) = alert["steps"]
    assert step["metric"] == "trace_ms" and step["kind"] == "regression" and step["higher_is_better"] is False
    assert step["change"] == pytest.approx(0.25, abs=0.01) and alert["kind"] == "regression"
    hunt = alert["hunt"]["command"]
    assert alert["hunt"]["status"] == "off"
    assert hunt[:2] == ["hourly", "hunt"] and "--lower-is-better" in hunt
    assert hunt[hunt.index("--metrics") + 1] == "all" and hunt[hunt.index("--metric") + 1] == "trace_ms"
    assert not any(c["metric"] != "trace_ms" and c["verdict"] == "confirmed" for c in doc["checks"])
    # the series are kept per metric in the store, read back by a run with the workdir alone
    code, out, err = _run(capsys, ["watch", "--workdir", str(work), "--show"])
    assert code == 0 and "trace_ms (lower is better)" in out and "tokens_per_s (higher is better)" in out, out + err


def _runs_stored(work: Path) -> int:
    import sqlite3
    path = work / "hourly.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5) as c:
            return c.execute("SELECT count(*) FROM watch_runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_watch_killed_while_confirming_goes_on_with_the_pairs_it_stored(watched, capsys):
    made, work, args = watched
    args = [*args, "--no-hunt"]
    code, out, err = _run(capsys, [*args, "--until", "2023-08-20 20:00"])
    assert code == 0, out + err
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "hourly", *args, "--until", "2023-08-20 22:00"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert wait_for(lambda: _runs_stored(work) >= 3 or p.poll() is not None, timeout=300, every=0.05)
        assert p.poll() is None, p.stdout.read().decode() if p.stdout else ""
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    kept = _runs_stored(work)
    store = Store(work)
    key = store.load_settings("watch")["key"]
    def measured_at() -> list[tuple]:
        return store.conn.execute("SELECT build, created FROM watch_values ORDER BY build").fetchall()
    measured = measured_at()
    (pending,) = store.watch_checks(key)
    assert pending.verdict == "pending" and kept >= 3
    # the same command again: the build is not measured again, the pairs go on from where they were
    code, out, err = _run(capsys, [*args, "--until", "2023-08-20 22:00"])
    assert code == P.ALERT_EXIT, out + err
    (check,) = store.watch_checks(key)
    assert check.verdict == "confirmed" and check.result and check.result["pairs"] == _runs_stored(work) >= 10
    assert measured_at() == measured and measured[-1][0] == "2023-08-20T22:00:00Z"
    assert len(store.watch_alerts(key)) == 1


# -- the hunt as a Slurm job --------------------------------------------------------------------

@pytest.fixture(scope="session")
def _cluster():
    from hourly.adapters.slurm import Slurm
    slurm = Slurm()
    why = slurm.reachable()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the Slurm tests on a real cluster, but none is reachable: {why} "
                        "(.ci/run starts one with .ci/slurm-up.sh)")
        pytest.skip(f"no Slurm reachable: {why} (bash .ci/slurm-up.sh starts a single-node one)")
    return slurm


def test_a_hunt_on_slurm_is_one_job_whose_answer_a_later_run_reads(_cluster, watched, capsys):
    made, work, args = watched
    args = [*args, "--executor", "slurm"]
    code, out, err = _run(capsys, [*args, "--until", "2023-08-20 20:00"])
    assert code == 0, out + err
    code, out, err = _run(capsys, [*args, "--until", "2023-08-20 22:00"])
    assert code == P.ALERT_EXIT, out + err
    store = Store(work)
    key = store.load_settings("watch")["key"]
    (alert,) = store.watch_alerts(key)
    assert alert.hunt is not None and alert.hunt.status in ("submitted", "running") and alert.hunt.job
    assert "hunt running as Slurm job" in out
    # later runs (cron's next ones) find nothing new and read the job's answer once it is there
    def hunted() -> bool:
        code, out, err = _run(capsys, [*args, "--until", "2023-08-20 22:00"])
        assert code == 0, out + err
        h = store.watch_alerts(key)[0].hunt
        return h is not None and h.status not in ("submitted", "running")
    assert wait_for(hunted, timeout=600, every=2)
    hunt = store.watch_alerts(key)[0].hunt
    assert hunt is not None and hunt.status == "culprit" and hunt.culprit and hunt.culprit["sha"] == made.shas[CULPRIT], hunt
    assert (Path(hunt.workdir or "") / f"slurm-{hunt.job}.out").exists()


def test_outside_text_is_printed_verbatim_on_the_console():
    from rich.console import Console

    from hourly.render.console import console
    from hourly.render.watch import print_report
    subject = "[bold]fusion[/bold] :smile: <b>"
    checks = [_check(1, "b", "c", "confirmed", -0.2, 100, 80)]
    culprit = {"repo": "xla", "sha": "c" * 40, "subject": subject, "link": "https://github.com/openxla/xla/commit/c"}
    alerts = [{"id": 1, "watch": "key", "arrived": "c", "before": "b", "after": "c", "checks": [1],
               "hunt": {"status": "culprit", "culprit": culprit}, "recovery": None, "events": []}]
    con: Console = console(width=200, record=True)
    print_report(con, _report(checks, alerts))
    text = con.export_text()
    assert subject in text and "▼ alert 1: regression between b and c" in text


@pytest.mark.parametrize("level", ["scan", "nightly", "releases"])
def test_a_watch_into_another_levels_workdir_is_refused(tmp_path, capsys, level):
    """A watch started into a scan's workdir was accepted without a word: its tables and the scan's mixed."""
    work = tmp_path / "work"
    store = Store(work)
    store.save_settings(level, {"workdir": str(work)})
    store.close()
    (tmp_path / "wheels").mkdir()
    code, out, err = _run(capsys, ["watch", "--source", "wheels", "--find-links", str(tmp_path / "wheels"),
                                   "--since", "2023-08-01", "--until", "2023-08-08", "--bench-cmd", "python bench.py",
                                   "--release-cache-dir", str(tmp_path / "envs"), "--workdir", str(work)])
    held = {"scan": "a scan (hourly scan)", "nightly": "the daily level's results (hourly nightly)",
            "releases": "the release level's results (hourly releases)"}[level]
    assert (code, out) == (1, "")
    assert (f"hourly: error: {work} holds {held}: a watch keeps a workdir of its own — pass --workdir a new folder "
            "for the watch, e.g. --workdir work-watch") in " ".join(err.split())
    assert not (work / "watch").exists()
