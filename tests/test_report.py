"""Detection on stored scans, the marked table, `hourly report`, and the demo end to end."""

import json
import re
import shlex
import struct
import subprocess
import sys

import pytest

from hourly.cli import main
from tests.argv import with_flags


@pytest.fixture(scope="module")
def build_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("build-cache")


@pytest.fixture(autouse=True)
def _one_build_cache(_no_user_config, build_cache, monkeypatch):
    """The tests of this file scan and bisect the demo's states again and again: one build cache
    for them all (as every workdir shares hourly's), so that each state is built once."""
    monkeypatch.setenv("HOURLY_CACHE_DIR", str(build_cache))


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_scan_marks_steps_and_detect_reads_the_store(capsys, scan_args, made, tmp_path):
    # the step (13:20) with three instants either side; no warm-up runs (nothing here reads them)
    out = run(capsys, scan_args("Aug 24 2023 11:00", "Aug 24 2023 16:00", "--repeats", "2", "--warmup-runs", "0"))
    assert "▼" in out and "1 step found" in out and "moved: xla" in " ".join(out.split())  # wrapped at 80
    found = json.loads(run(capsys, ["detect", str(tmp_path / "work"), "--json"]))
    assert [(c["before"], c["after"], c["kind"]) for c in found["changes"]] == [
        ("2023-08-24T13:00:00Z", "2023-08-24T14:00:00Z", "regression")]
    assert found["changes"][0]["relative_change"] < -0.06
    # one point per pair-run, labelled by its first instant, in time order
    labels = [p["label"] for p in found["points"]]
    assert labels == sorted(labels) and "2023-08-24T14:00:00Z" in labels
    shown = run(capsys, ["show", "--workdir", str(tmp_path / "work")])
    assert "▼" in shown


def test_a_report_with_min_change_says_the_steps_it_leaves_out(capsys, scan_args, made, tmp_path):
    # a -7 % step: `report --min-change 0.5` said "No step change was detected in the scanned window."
    run(capsys, scan_args("Aug 24 2023 11:00", "Aug 24 2023 16:00", "--repeats", "2", "--warmup-runs", "0"))
    work = tmp_path / "work"
    md_path = work / "report" / "report.md"
    run(capsys, ["report", "--workdir", str(work), "--min-change", "0.5"])
    md = md_path.read_text()
    assert "No step change was detected" not in md
    assert "1 step smaller than 0.5 (50 %, `--min-change 0.5`) is left out of this report: regression -" in md
    assert "between 2023-08-24T13:00:00Z and 2023-08-24T14:00:00Z" in md
    assert f"`hourly report --workdir {work}` lists every step" in md
    run(capsys, ["report", "--workdir", str(work)])  # every step: nothing left out, nothing said
    md = md_path.read_text()
    assert "left out of this report" not in md and "| 1 | regression | 2023-08-24T13:00:00Z |" in md


def test_a_scan_whose_every_point_failed_is_no_all_clear_in_bisect_or_report(capsys, scan_args, made, tmp_path):
    """Every run crashed (--keep-going scanned on): bisect said "nothing to bisect" (exit 0), show
    printed the table with exit 0 and the report "No step change was detected in the scanned window"."""
    work = tmp_path / "work"
    code = main(scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--bench-cmd", "sh -c 'exit 1'",
                          "--keep-going", "--warmup-runs", "0"))
    assert code == 1, capsys.readouterr().err  # the scan says every run failed
    capsys.readouterr()
    for argv in (["bisect", "--workdir", str(work)], ["bisect", "--find-fix", "--workdir", str(work)]):
        assert main(argv) == 1, argv
        out, err = capsys.readouterr()
        assert "nothing to bisect" not in out + err
        assert "no point of the stored scan measured: every one failed (crashed: " in " ".join(err.split())
    for argv in (["show", "--workdir", str(work)], ["show", "--workdir", str(work), "--json"]):  # was exit 0
        assert main(argv) == 1, argv
        assert "every run of every measured pair crashed with exit code 1" in capsys.readouterr().err
    run(capsys, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    assert "No step change was detected" not in md
    assert "No point of the scan measured (each failed" in md and "## Points that did not measure" in md


def test_report_has_links_commits_reproduction_and_a_real_png(capsys, scan_args, made, tmp_path):
    # every 3h: both steps (13:20 on the 24th, the pull request merged 12:30 on the 25th), a broken
    # build's hour (05:40-08:15: 06:00) and the crash (16:00-19:30: 18:00), 12 builds instead of 36; no
    # warm-up runs
    run(capsys, scan_args("Aug 24 2023 09:00", "Aug 25 2023 20:00", "--step", "3h", "--warmup-runs", "0",
                          "--env", "XLA_FLAGS=--xla_gpu_autotune_level=0"))
    out = run(capsys, ["report", "--workdir", str(tmp_path / "work")])
    md_path = tmp_path / "work" / "report" / "report.md"
    assert str(md_path) in out
    md = md_path.read_text()
    fusion = made.shas["[XLA:GPU] Change priority fusion heuristic"]
    dispatch = made.shas["Use a faster dispatch path for pjit"]
    assert f"https://github.com/openxla/xla/commit/{fusion}" in md
    assert f"https://github.com/jax-ml/jax/commit/{dispatch}" in md
    assert r"\[XLA:GPU\] Change priority fusion heuristic" in md and "Fusion Author" in md  # escaped, as text
    assert "build_failed" in md  # the broken-build hours are listed
    assert "hourly scan --from" in md and "--bench-cmd" in md
    assert "XLA_FLAGS=--xla_gpu_autotune_level=0" in md and "Python" in md
    png = (tmp_path / "work" / "report" / "plot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width > 500 and height > 300


def test_demo_finds_every_planted_change(tmp_path):
    out = subprocess.run([sys.executable, "-m", "hourly", "demo", str(tmp_path / "demo"), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["planted"] and all(p["found"] for p in result["planted"]), result["planted"]
    assert len(result["steps"]) == len([p for p in result["planted"] if p["kind"] in ("regression", "improvement")])
    regressions = [p for p in result["planted"] if p["kind"] in ("regression", "crash")]
    assert [p["kind"] for p in regressions] == ["regression", "regression", "crash"]
    assert all(p["culprit_found"] for p in regressions)  # the crash bisected in exit mode, as a crash
    answers = result["bisect"]["regressions"]
    assert [a["kind"] for a in answers] == ["regression", "regression", "crash"]
    assert answers[2]["mode"] == "exit" and answers[2]["culprit"]["subject"] == "Rewrite custom_vjp residuals"
    culprits = [r["culprit"] for r in answers]
    assert culprits[0]["subject"] == "[XLA:GPU] Change priority fusion heuristic"
    assert culprits[1]["subject"].startswith("Merge pull request")
    assert culprits[1]["merged"][0]["subject"] == "Use a faster dispatch path for pjit"
    md = open(result["report"]).read()
    assert "Bisected culprits" in md and culprits[0]["sha"] in md
    crash = md.split("## Crash windows", 1)[1].split("\n## ", 1)[0]
    assert "Bisected:" in crash and "Rewrite custom_vjp residuals" in crash  # bisected: no command to bisect it
    assert "hourly bisect --mode exit --good 2023-08-25T15:00:00Z" not in crash
    assert "Use a faster dispatch path for pjit (by Dispatch Author, merged" in md  # the pull request's own subject
    workdir = str(tmp_path / "demo" / "work")
    assert result["next"] == [shlex.join(["hourly", c, "--workdir", workdir]) for c in ("show", "bisect", "report")]
    # the replayable log heads each window with its own kind (the crash window was "regression 3 of 3")
    log = subprocess.run([sys.executable, "-m", "hourly", "bisect", "--workdir", workdir, "--log"],
                         capture_output=True, text=True, timeout=300)
    assert log.returncode == 0, log.stderr
    heads = [ln.split(":")[0] for ln in log.stdout.splitlines() if ln.startswith("# ") and " of 3:" in ln]
    assert heads == ["# regression 1 of 3", "# regression 2 of 3", "# crash window 3 of 3"]


def test_each_window_of_a_bisect_log_is_headed_by_its_own_kind():
    from hourly.render.bisect import log_heading
    window = {"good_time": "2023-08-25T15:00:00Z", "bad_time": "2023-08-25T16:00:00Z"}
    assert log_heading({"kind": "crash", "window": window}, 3, 3).startswith(
        "# crash window 3 of 3: 2023-08-25T15:00:00Z .. 2023-08-25T16:00:00Z")
    assert log_heading({"kind": "regression", "window": window}, 1, 3).startswith("# regression 1 of 3")
    assert log_heading({"kind": "metric_lost", "window": window}, 2, 2).startswith(
        "# metric window (stops printing) 2 of 2")


def test_reproduce_command_is_complete_and_runs(capsys, scan_args, made, tmp_path, venv_python):
    import shlex
    cwd = tmp_path / "bench-dir"
    cwd.mkdir()
    run(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--env", "DEMO_NOISE=0.001",
                          "--bench-cwd", str(cwd), "--bench-timeout", "120", "--lower-is-better"))
    run(capsys, ["report", "--workdir", str(tmp_path / "work")])
    md = (tmp_path / "work" / "report" / "report.md").read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("hourly scan "))
    argv = shlex.split(line)
    for flag, value in (("--python", venv_python), ("--env", "DEMO_NOISE=0.001"), ("--bench-cwd", str(cwd)),
                        ("--bench-timeout", "120")):
        assert argv[argv.index(flag) + 1] == value, flag
    assert "--lower-is-better" in argv
    # the command runs as printed (into a new workdir)
    assert main(with_flags(argv[1:], "--workdir", str(tmp_path / "again"), "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["status"] for p in out["points"]] == ["ok", "ok"]


def test_a_scan_with_no_successful_point_gives_a_plot_that_says_so(tmp_path):
    from datetime import datetime

    from hourly.model import PointResult
    from hourly.render.report import _label_rows, plot
    pts = [PointResult(f"2023-08-24T{h:02d}:00:00Z", "x" * 40, "j" * 40, status)
           for h, status in enumerate(["build_failed", "crashed", "crashed", "timeout"])]
    path = plot(pts, [], tmp_path / "plot.png", "MLUPS")
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # labels that would overlap go to separate rows
    times = [datetime(2023, 8, 24, h) for h in range(10)]
    rows = _label_rows([(times[2], "a" * 40, "r"), (times[3], "b" * 40, "r"), (times[9], "c", "g")], times)
    assert rows[0][0] != rows[1][0] and rows[2][0] == 0


NASTY = "Faster <script>alert(1)</script> *dispatch* [x](http://e) `pjit` ~old~ $x$ 残差 🚀"


def _tables(md: str) -> list[list[str]]:
    tables, cur = [], []
    for line in md.splitlines():
        if line.lstrip().startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    return tables + ([cur] if cur else [])


def test_the_report_escapes_outside_text_names_pull_requests_and_places_culprits(capsys, tmp_path, venv_python):
    import re
    import warnings

    from hourly.adapters.store import Store
    from hourly.demo.repos import Change, make_repos
    from hourly.render.report import culprit_label
    from hourly.report.gather import split_answers
    made = make_repos(tmp_path / "repos", [
        Change("xla", "2023-08-24T00:30:00Z", "[XLA] Tidy one", {"t1.txt": "1\n"}),
        Change("xla", "2023-08-24T01:30:00Z", "[XLA] Tidy two", {"t2.txt": "1\n"}),
        Change("jax", "2023-08-24T02:10:00Z", NASTY, {"perf/dispatch.txt": "0.9\n"},
               merged_at="2023-08-24T03:20:00Z", author="Pipe | Author *x*"),
        Change("jax", "2023-08-24T03:40:00Z", "Pipes a | b in a table", {"p.txt": "1\n"}, author="Table | Breaker"),
        Change("jax", "2023-08-24T04:10:00Z", "Docs", {"d1.txt": "1\n"}),
        Change("jax", "2023-08-24T05:10:00Z", "More docs", {"d2.txt": "1\n"}),
        Change("jax", "2023-08-24T06:40:00Z", "Rewrite 残差 residuals 🚀", {"CRASH": "1\n"}),
    ])
    work = tmp_path / "work"
    flags = ["--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
             "--python", venv_python, "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(work)]
    # from 02:00: two instants before the step's window (03:00-04:00), three after it, then the crash;
    # no warm-up runs, here or in the bisection that reads the scan's settings: nothing reads them
    run(capsys, ["scan", "--from", "Aug 24 2023 02:00", "--to", "Aug 24 2023 08:00", "--no-sync", "--warmup-runs", "0",
                 *flags])
    run(capsys, ["bisect", "--workdir", str(work)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(capsys, ["report", "--workdir", str(work)])
    assert not [str(w.message) for w in caught if "Glyph" in str(w.message)]  # CJK and emoji in the plot's labels
    md = (work / "report" / "report.md").read_text()
    # outside text is text: no raw HTML, no formatting, no cell broken by a |
    assert "<script>" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert r"\*dispatch\*" in md and r"\[x\](http://e)" in md and r"\`pjit\`" in md and r"\~old\~ \$x\$" in md
    assert r"| Table \| Breaker | Pipes a \| b in a table |" in md
    for table in _tables(md):
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in table}) == 1, table
    # a merged pull request by its own subject, in its step's section, the markdown and the plot alike
    culprits = [ln for ln in md.splitlines() if "**culprit:" in ln]
    assert culprits and not [ln for ln in culprits if "Merge pull request" in ln]
    # ... and in each step's commit table: the merge row names the pull request and its author
    rows = [ln for ln in md.splitlines() if ln.lstrip().startswith("| [`")]
    assert rows and not [ln for ln in rows if "Merge pull request" in ln], rows
    assert [ln for ln in rows if "Pipe \\| Author \\*x\\*" in ln and "Faster &lt;script&gt;" in ln], rows
    section = md.split("## 1. Regression", 1)[1].split("\n## ", 1)[0]
    assert "**culprit: jax pull request [`" in section and r"Faster &lt;script&gt;" in section, section
    assert "(by Pipe \\| Author \\*x\\*, merged 2023-08-24T03:20:00Z)" in section, section
    answers = split_answers(Store(work, create=False)).current
    assert culprit_label(answers, "2023-08-24T03:00:00Z", "2023-08-24T04:00:00Z").startswith("jax ")
    assert "Faster <script>" in culprit_label(answers, "2023-08-24T03:00:00Z", "2023-08-24T04:00:00Z")
    # a crash window already bisected names its culprit, not the command that would bisect it
    crash = md.split("## Crash windows", 1)[1].split("\n## ", 1)[0]
    assert "hourly bisect --mode exit" not in crash and "Bisected:" in crash and "Rewrite 残差 residuals 🚀" in crash


def test_a_workdir_of_bisect_alone_reports_and_shows_its_answer_never_a_scan(capsys, made, venv_python, tmp_path):
    """`hourly bisect --good --bad` into a new workdir, then `report` and `show`: the bisection's
    culprit, said to be a bisection's (no scan was made), with the commands that scan the window and
    bisect it again — never "no step change was detected in the scanned window", an empty scan table
    or `hourly scan --from '' --to ''`."""
    work = tmp_path / "work"
    fusion = made.shas["[XLA:GPU] Change priority fusion heuristic"]
    run(capsys, ["bisect", "--good", "Aug 24 2023 12:00", "--bad", "Aug 24 2023 15:00", "--xla-repo", str(made.xla),
                 "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script), "--python", venv_python,
                 "--bench-cmd", f"python3 {made.bench_script}", "--warmup-runs", "0", "--workdir", str(work)])
    run(capsys, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    assert md.startswith("# Bisected by hourly (no scan in this workdir)") and "No scan was made in this workdir" in md
    assert "No step change" not in md and "Scanned " not in md and "scanned window" not in md
    assert "--from ''" not in md and "| # | kind |" not in md and "plot.png" not in md
    assert f"**culprit: xla [`{fusion[:12]}`]" in md
    scan = next(line for line in md.splitlines() if line.startswith("hourly scan "))
    assert "--from 2023-08-24T12:00:00Z --to 2023-08-24T15:00:00Z" in scan and f"--workdir {work}" in scan
    again = next(line for line in md.splitlines() if line.startswith("hourly bisect "))
    assert "--good 2023-08-24T12:00:00Z --bad 2023-08-24T15:00:00Z" in again
    assert not (work / "report" / "plot.png").exists()
    # the reproduce line is a command hourly takes: here it prints the stored answer
    assert fusion in run(capsys, shlex.split(again)[1:])

    shown = run(capsys, ["show", "--workdir", str(work)])
    assert "no scan" in shown and fusion in shown and "0 instants" not in shown and "hourly scan --from 2023" in shown
    got = json.loads(run(capsys, ["show", "--workdir", str(work), "--json"]))
    assert got["scanned"] is False and got["points"] == [] and got["unfinished"] == []
    assert [a["culprit"]["sha"] for a in got["regressions"]] == [fusion]
    # detect reads a scan's values: it names the bisection (it asked for --bench-cmd)
    assert main(["detect", str(work)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert (f"no scan in {work} for hourly detect to read: it holds a bisection (hourly bisect --good --bad) — "
            f"hourly show --workdir {work} prints its bisections") in err


def test_an_answers_bisect_command_keeps_its_mode_and_direction():
    """The report of a workdir without a scan names each answer's `hourly bisect` command: a fix found
    with --find-fix has its good end the later one again, an exit-mode window its --mode, a flaky or
    manual bisection its flag; the command parses as hourly's own."""
    from hourly.answers import Answer, AnswerWindow, ManualNote
    from hourly.measure.settings import effective
    from hourly.render.bisect import bisect_again_command
    s = effective({"xla_repo": "/x", "jax_repo": "/j", "bench_cmd": "python3 b.py", "workdir": "/w"}, None)[0]
    w = AnswerWindow("2023-08-24T12:00:00Z", "2023-08-24T15:00:00Z")
    fix = shlex.split(bisect_again_command(Answer(w, "exit", "fix"), s))
    assert fix[fix.index("--good") + 1] == "2023-08-24T15:00:00Z" and fix[fix.index("--bad") + 1] == "2023-08-24T12:00:00Z"
    assert "--find-fix" in fix and fix[fix.index("--mode") + 1] == "exit" and "--metric-regex" not in fix
    reg = shlex.split(bisect_again_command(Answer(w, "metric", "regression"), s))
    assert reg[:6] == ["hourly", "bisect", "--good", "2023-08-24T12:00:00Z", "--bad", "2023-08-24T15:00:00Z"]
    assert "--mode" not in reg and "--find-fix" not in reg and "--metric-regex" in reg
    flaky = shlex.split(bisect_again_command(Answer(w, "exit", "crash", flaky=True), s))
    assert "--flaky" in flaky and flaky[flaky.index("--mode") + 1] == "exit"
    manual = shlex.split(bisect_again_command(Answer(w, "manual", "crash", manual=ManualNote("exit", False, 3, "")), s))
    assert "--manual" in manual and manual[manual.index("--mode") + 1] == "exit"
    from typer.main import get_command

    from hourly.cli import app
    from hourly.commands.common import refuse_repeated
    bisect = get_command(app).commands["bisect"]  # type: ignore[attr-defined]
    for argv in (fix, reg, flaky, manual):  # each is a command line hourly's own parser takes
        refuse_repeated(bisect.params, argv[2:])
        assert bisect.make_context("bisect", argv[2:]).params["good"] == argv[3]


# -- issue 44 item 3: values near the float's limit are computed with, never an exit 3 -------------

def test_values_near_the_floats_limit_are_scanned_shown_detected_and_reported(capsys, scan_args, made, tmp_path):
    """The demo's MLUPS times 1.7e305 (about 1e308): a median of two runs, a level, a plot's axis
    once overflowed to inf ("regression nan ... inf ->", "cannot convert float NaN", exit 3)."""
    b = tmp_path / "huge.py"
    b.write_text("import re, subprocess, sys\n"
                 f"out = subprocess.run([sys.executable, {str(made.bench_script)!r}], capture_output=True, text=True).stdout\n"
                 "print('MLUPS:', float(re.search(r'MLUPS:\\s*([0-9.]+)', out).group(1)) * 1.7e305)\n")
    work = str(tmp_path / "work")
    out = run(capsys, scan_args("Aug 24 2023 11:00", "Aug 24 2023 16:00", "--bench-cmd", f"python3 {b}",
                                "--repeats", "2", "--warmup-runs", "0"))
    # the demo's -7 % step, read through its noise (-6.8 % to -7.4 % seen under load): as the JSON's bound below
    assert re.search(r"▼ -(6|7)\.\d%", out) and "inf" not in out and "nan" not in out, out
    found = json.loads(run(capsys, ["detect", work, "--json"]))
    (step,) = found["changes"]
    assert (step["before"], step["after"]) == ("2023-08-24T13:00:00Z", "2023-08-24T14:00:00Z")
    assert 9e307 < step["to_value"] < step["from_value"] < 1e308 and -0.08 < step["relative_change"] < -0.06
    for argv in (["show", "--workdir", work], ["detect", work], ["report", "--workdir", work]):
        out = run(capsys, argv)
        assert "inf" not in out and "nan" not in out, argv
    png = (tmp_path / "work" / "report" / "plot.png").read_bytes()
    assert png.startswith(b"\x89PNG")
