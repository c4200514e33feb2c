"""Edges a newcomer meets in the first hour (issue 9, items 8 and 10): a dry run without a benchmark,
one-line errors that create nothing, the demo's next commands, and counted nouns that read right.

Every test drives the real CLI (``hourly.cli.main`` or a subprocess) over real repositories."""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from hourly.cli import main
from hourly.demo.hunt import next_commands, print_next
from hourly.text.plurals import plural
from tests.argv import with_flags


def run_cli(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def repo_args(made, work: Path) -> list[str]:
    return ["--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--workdir", str(work)]


# -- item 8: a dry run needs no benchmark ------------------------------------------------------

def test_dry_run_with_only_the_repositories_prints_the_plan(capsys, made, scan_args, venv_python, tmp_path):
    work = tmp_path / "work"
    day = ["scan", "--from", "Aug 24 2023", "--to", "Aug 24 2023", "--dry-run", *repo_args(made, work)]
    code, out, err = run_cli(capsys, day + ["--json"])
    assert code == 0, err
    plan = json.loads(out)
    assert len(plan["points"]) == 25 and {p["status"] for p in plan["points"]} == {"planned"}
    pairs = plan["distinct_pairs"]
    assert 1 < pairs < 25
    assert plan["plan"] == {"builds": pairs, "built": 0, "measured": None}
    assert not work.exists()  # a dry run touches nothing, not even the workdir

    code, out, err = run_cli(capsys, day)
    assert code == 0, err
    assert f"the scan would run {pairs} builds" in out and "Traceback" not in err

    # measure two hours for real; their pairs are then built (wheels cached) and measured
    scanned = json.loads(run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--json"))[1])
    done = {(p["xla"], p["jax"]) for p in scanned["points"]}
    assert scanned["builds"] == len(done)

    # the build cache is keyed by the build (command, Python, environment): another build has none
    assert json.loads(run_cli(capsys, day + ["--json"])[1])["plan"]["built"] == 0
    day += ["--build-cmd", str(made.build_script), "--python", venv_python]
    plan = json.loads(run_cli(capsys, day + ["--json"])[1])  # no --bench-cmd: "measured" is unknown
    assert plan["plan"] == {"builds": pairs - len(done), "built": len(done), "measured": None}
    assert {p["status"] for p in plan["points"] if (p["xla"], p["jax"]) in done} == {"built"}
    code, out, _ = run_cli(capsys, day)
    assert f"{plural(len(done), 'pair')} already built" in out and "--bench-cmd" in out

    with_bench = scan_args("Aug 24 2023", "Aug 24 2023", "--dry-run", "--json")
    plan = json.loads(run_cli(capsys, with_bench)[1])
    assert plan["plan"] == {"builds": pairs - len(done), "built": len(done), "measured": len(done)}
    assert {p["status"] for p in plan["points"] if (p["xla"], p["jax"]) in done} == {"cached"}
    assert {p["status"] for p in plan["points"] if (p["xla"], p["jax"]) not in done} == {"planned"}
    # --rerun measures again, but the cached wheels still spare the builds
    plan = json.loads(run_cli(capsys, with_bench + ["--rerun"])[1])
    assert plan["plan"]["builds"] == pairs - len(done)


def test_dry_run_still_needs_the_window(capsys, made, tmp_path):
    code, _, err = run_cli(capsys, ["scan", "--dry-run", *repo_args(made, tmp_path / "work")])
    assert code == 1 and "--from" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "work").exists()


# -- item 10: small edges ----------------------------------------------------------------------

def test_demo_into_a_file_is_a_one_line_error(capsys, tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("mine\n")
    code, _, err = run_cli(capsys, ["demo", str(afile)])
    assert code == 1, err
    assert "not a directory" in err and str(afile) in err and len(err.strip().splitlines()) == 1
    assert afile.read_text() == "mine\n"


def test_show_nightly_on_an_empty_workdir_points_to_hourly_nightly(capsys, tmp_path):
    for argv in (["show", "--nightly"], ["nightly", "--show"]):
        code, _, err = run_cli(capsys, argv + ["--workdir", str(tmp_path / "empty")])
        assert code == 1, err
        assert "`hourly nightly" in err and "hourly scan" not in err
    code, _, err = run_cli(capsys, ["releases", "--show", "--workdir", str(tmp_path / "empty")])
    assert code == 1 and "`hourly releases" in err and "hourly scan" not in err
    code, _, err = run_cli(capsys, ["show", "--workdir", str(tmp_path / "empty")])
    assert code == 1 and "`hourly scan" in err
    assert not (tmp_path / "empty").exists()


@pytest.mark.parametrize("change,message", [
    (["--from", "someday"], "cannot parse time"),
    (["--from", "Aug 26 2023", "--to", "Aug 24 2023"], "reversed"),
    # issue 44 case 5: two dates, reversed, were the one instant 2023-08-25T00:00Z, "no steps found"
    (["--from", "2023-08-25", "--to", "2023-08-24"], "the window is reversed: --from '2023-08-25' is after --to "
                                                     "'2023-08-24' — swap --from and --to"),
    # issue 44: a local time the clocks skipped was mapped to 03:30 without a word
    (["--from", "2023-03-12 02:30", "--to", "2023-03-12 05:00", "--tz", "America/Los_Angeles"],
     "'2023-03-12 02:30' is no time in America/Los_Angeles"),
    (["--metric-regex", "MLUPS: ("], "not a valid regular expression"),
    (["--bench-cwd", "/nonexistent/dir"], "not a directory"),
    (["--build-cmd", "no-such-build-jax.sh"], "build command not found"),
    (["--build-cmd", "none"], "--build-cmd none builds nothing, but a scan of both repositories builds jaxlib"),
    (["--build-cmd", "none", "--only", "xla"], "--only jax to hunt an editable JAX tree"),
    (["--ref", "origin/nope", "--no-sync"], "unknown ref"),
    (["--jax-repo", "/nonexistent/jax"], "does not exist"),
    # issue 33: every build failed on it and the error said to check --build-cmd
    (["--python", "/nonexistent/bin/python"], "--python /nonexistent/bin/python is not an executable Python here"),
    # issue 44: a build was made and "installed" by /bin/true, then every run crashed
    (["--python", "/bin/true"], "--python /bin/true is not a Python: asked for its version (python -S -c "),
    (["--python", "/bin/false"], "it exited with status 1 and printed nothing"),
    # issue 33: every instant stood at today's newest commits, "no steps found"
    (["--from", "Jan 1 2999", "--to", "Jan 2 2999"], "the window starts in the future (--from 2999-01-01T00:00:00Z"),
    # a benchmark program given by a path that is not there: found after the first build, the workdir made
    (["--bench-cmd", "/nonexistent/bench --n 3"], "benchmark command not found: /nonexistent/bench"),
    (["--bench-cmd", "./no-such-bench.sh"], "benchmark command not found: ./no-such-bench.sh"),
    # a bad --cherry-pick was found at the first build, with the workdir made
    (["--cherry-pick", "foo"], "--cherry-pick 'foo' is not REPO@SHA"),
    (["--cherry-pick", "jax@deadbeef"], "unknown ref 'deadbeef' in jax repository"),
    (["--cherry-pick", "xla@deadbeef", "--only", "jax", "--build-cmd", "none"],
     "--cherry-pick 'xla@deadbeef' names xla, but no xla tree is built here"),
])
def test_input_errors_create_no_workdir(capsys, scan_args, tmp_path, change, message):
    code, _, err = run_cli(capsys, with_flags(scan_args(), *change))
    assert code == 1 and message in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("command", ["scan", "bisect"])
def test_env_without_a_value_not_set_here_is_a_usage_error_that_creates_no_workdir(capsys, scan_args, tmp_path,
                                                                                   monkeypatch, command):
    """``--env NAME`` takes NAME's value from hourly's environment; not set there, it is a usage
    error (exit 2) naming both ways to pass it, before anything is made."""
    monkeypatch.delenv("NOEQUALS", raising=False)
    args = scan_args()
    if command == "bisect":
        args = ["bisect", "--good", "Aug 24 2023 12:00", "--bad", "Aug 24 2023 15:00", *args[args.index("--xla-repo"):]]
    code, _, err = run_cli(capsys, with_flags(args, "--env", "NOEQUALS"))
    assert code == 2, err
    assert ("--env NOEQUALS takes NOEQUALS's value from hourly's environment, and NOEQUALS is not set — "
            "export NOEQUALS=... before running hourly, or pass --env NOEQUALS=VALUE") in " ".join(err.split())
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("value", ["x", "0", "-3", "12.5", ""])
def test_an_env_hourly_samples_that_is_no_count_is_a_usage_error_that_creates_no_workdir(capsys, scan_args, tmp_path,
                                                                                         value):
    """``--env HOURLY_SAMPLES=…`` fixes the samples hourly asks each process for: a value that is
    not a count reached the benchmark while hourly counted its default (12) as asked — and said the
    benchmark did not follow it. A usage error instead, before anything is made."""
    code, _, err = run_cli(capsys, with_flags(scan_args(), "--env", f"HOURLY_SAMPLES={value}"))
    assert code == 2, err
    assert (f"--env HOURLY_SAMPLES={value}: the samples each benchmark process is asked for must be a whole "
            "number, 1 or more — pass e.g. --env HOURLY_SAMPLES=12 (or --samples 12)") in " ".join(err.split()), err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("change,said", [
    (["--step", "0h"], "--step must be longer than 0, not 0h — pass e.g. --step 1h"),
    (["--step", "10000000000d"], "--step must be shorter than 10,000 years, not 10000000000d"),  # was a traceback
    (["--env", "NO EQUALS"], "--env must be KEY=VALUE or a variable's NAME, not NO EQUALS — pass e.g. --env "
                             "KEY=VALUE"),
    (["--tz", "Nowhere/City"], "--tz must be an IANA time zone name (or UTC), not Nowhere/City — pass e.g. --tz "
                               "America/Los_Angeles"),
])
def test_a_bad_flag_value_is_a_usage_error(capsys, scan_args, tmp_path, change, said):
    """issue 44: --step 0h and --env FOO exited 1; a value the flag does not take is a usage error
    (exit 2, one line), as the README says."""
    code, _, err = run_cli(capsys, with_flags(scan_args(), *change))
    assert code == 2 and said in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "work").exists()


def test_a_state_shell_cannot_name_says_the_forms_not_cannot_parse_time(capsys, made, tmp_path):
    """issue 44: `hourly shell nosuch` said "cannot parse time 'nosuch'"."""
    code, _, err = run_cli(capsys, ["shell", "nosuch", "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
                                    "--workdir", str(tmp_path / "work")])
    assert code == 1 and "'nosuch' names no state — name one as a time (\"Aug 24 2023 13:00\"), xla@<sha>,jax@<sha>" in err
    assert "cannot parse time" not in err and not (tmp_path / "work").exists()


def test_an_empty_metrics_list_is_refused_not_read_as_not_given(capsys, scan_args, tmp_path):
    """issue 33: --metrics "" scanned the --metric-regex's one metric without a word."""
    code, _, err = run_cli(capsys, with_flags(scan_args(), "--metrics", ""))
    assert code == 2 and "--metrics '' is not all or a list of metric names — pass --metrics all" in err
    assert not (tmp_path / "work").exists()


def test_scan_without_a_benchmark_fails_before_touching_anything(capsys, made, tmp_path):
    argv = ["scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 13:00", *repo_args(made, tmp_path / "work")]
    code, _, err = run_cli(capsys, argv)
    assert code == 1 and "--bench-cmd" in err and "--dry-run" in err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("change,message", [
    (["--good", "someday"], "cannot parse time"),
    (["--jax-repo", "/nonexistent/jax"], "does not exist"),
    (["--python", "/nonexistent/bin/python"], "--python /nonexistent/bin/python is not an executable Python here"),
    (["--python", "/bin/true"], "--python /bin/true is not a Python"),
])
def test_bisect_input_errors_create_no_workdir(capsys, scan_args, tmp_path, change, message):
    args = scan_args()
    common = args[args.index("--xla-repo"):]  # repositories, build, python, benchmark, workdir
    code, _, err = run_cli(capsys, with_flags(["bisect", "--good", "Aug 24 2023 12:00", "--bad", "Aug 24 2023 15:00",
                                               *common], *change))
    assert code == 1 and message in err, err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("body,said,fix", [
    ("print('hello')\n", "(no_metric: metric never printed; log ",
     "— check --metric-regex against that log (the run exits 0 without a value it reads), or pick ends that measure"),
    ("import sys\nsys.exit(3)\n", "(crashed: exit code 3; log ", "— pick ends that measure, or use --mode exit for crashes")])
def test_an_end_without_a_metric_names_its_side_and_the_likely_fix(capsys, scan_args, tmp_path, body, said, fix):
    """issue 33: "an end ... has no metric", with "use --mode exit for crashes" also for a benchmark
    that exits 0 and prints no value the regex reads."""
    from hourly.analysis.judges.paired import END_ROUNDS
    bench = tmp_path / "bench_end.py"
    count = tmp_path / "processes"
    bench.write_text(f"open({str(count)!r}, 'a').write('x')\n" + body)
    code, out, err = run_cli(capsys, with_flags(_bisect(scan_args), "--bench-cmd", f"python3 {bench}"))
    flat = " ".join(err.split())
    assert code == 1 and re.search(r"the good end \w+/\w+ of 2023-08-24T12:00:00Z \.\. 2023-08-24T15:00:00Z has no metric ",
                                   flat), flat
    assert said in flat and fix in flat
    # said after the first rounds that show it, not after --max-repeats rounds of processes that fail
    assert 0 < len(count.read_text()) <= 2 * END_ROUNDS + 2, count.read_text()  # + a warm-up run each
    # show says why the bisection stopped, not "started, no answer yet; the same command again goes
    # on": the same command again stops the same way
    code, out, err = run_cli(capsys, ["show", "--workdir", str(tmp_path / "work")])
    shown = " ".join(out.split())
    assert code == 1 and "not finished: 2023-08-24T12:00:00Z → 2023-08-24T15:00:00Z (metric): stopped without an " \
                         "answer: the good end " in shown and fix in shown and "no answer yet" not in shown, shown
    assert run_cli(capsys, ["report", "--workdir", str(tmp_path / "work")])[0] == 0
    md = (tmp_path / "work" / "report" / "report.md").read_text()
    line = md.split("## Bisections not finished")[1].strip().splitlines()[0]
    assert line.startswith("- 2023-08-24T12:00:00Z → 2023-08-24T15:00:00Z (metric): stopped without an answer: the "
                           "good end "), line


def test_a_mode_that_bisects_none_of_the_scans_windows_names_the_ones_it_holds(capsys, scan_args, tmp_path):
    """issue 33: `bisect --mode exit` over a scan holding a regression said "nothing to bisect: the
    stored scan holds no window of that kind (regressions, crashes ...)", exit 0."""
    assert run_cli(capsys, scan_args())[0] == 0
    for mode in ("exit", "printed"):
        code, out, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work"), "--mode", mode])
        assert (code, out) == (1, "") and "nothing to bisect" not in err
        assert (f"the stored scan holds no window that --mode {mode} bisects, but 1 window of another kind "
                "(regression) — leave out --mode: each window is bisected in its own mode") in " ".join(err.split())


def test_nightly_input_errors_create_no_workdir(capsys, tmp_path):
    code, _, err = run_cli(capsys, ["nightly", "--from", "2023-07-06", "--to", "2023-07-01",
                                    "--workdir", str(tmp_path / "work")])
    assert code == 1 and "before" in err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("n,word,many,text", [
    (0, "build", None, "0 builds"), (1, "build", None, "1 build"), (2, "build", None, "2 builds"),
    (1, "point", None, "1 point"), (1, "match", "matches", "1 match"), (3, "match", "matches", "3 matches"),
])
def test_plural(n, word, many, text):
    assert plural(n, word, many) == text


def test_one_instant_reads_in_the_singular_and_no_steps_has_no_colon(capsys, scan_args, tmp_path):
    code, out, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00"))
    assert code == 0, err
    assert "1 build for 1 instant (1 distinct (xla, jax) pair)" in out
    # one pair: no commit landed in the window, said as such, never a bare "no steps found" (issue 44)
    said = "the window holds one (xla, jax) pair: no commit landed in it, so it has no step to find"
    assert said in " ".join(out.split()) and "no steps found" not in out and "steps found:" not in out
    code, out, err = run_cli(capsys, ["detect", str(tmp_path / "work")])
    assert code == 0, err
    assert "1 point (1 ok, 0 failed)" in out and "1 points" not in out and said in " ".join(out.split())


def test_demo_next_commands_are_one_quoted_line_each_and_run(capsys, scan_args, tmp_path):
    """The demo ends with these (its JSON carries them too: tests/test_report.py runs the demo)."""
    work = tmp_path / "a folder with spaces" / "work"
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--workdir", str(work)))
    assert code == 0, err
    out = io.StringIO()
    print_next(Console(file=out, width=40), next_commands(str(work)))
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["", "next, with this demo's results:"]
    commands = [shlex.split(line) for line in lines[2:]]
    assert commands == [["hourly", c, "--workdir", str(work)] for c in ("show", "bisect", "report")]
    for c in (commands[0], commands[2]):  # they work as printed
        code, _, err = run_cli(capsys, c[1:])
        assert code == 0, err


@pytest.mark.parametrize("argv", [["-h"], ["scan", "-h"], ["bisect", "-h"], ["explain", "-h"], ["bench", "-h"], ["watch", "-h"]])
def test_h_is_help_as_in_the_ecosystem(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: hourly") and "-h, --help" in out


def test_version_flag_prints_the_version(capsys):
    from hourly import __version__
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"hourly {__version__}"


def test_a_stop_signal_inside_a_fork_callback_is_asked_again_not_lost():
    # logging releases its lock in the parent after every fork (a subprocess): an exception raised
    # there is printed and ignored, so the handler defers instead of raising into it
    import logging
    import sys

    from hourly.cli import _unsafe_to_raise
    code = compile("def _releaseLock():\n    return sys._getframe()\n", logging.__file__, "exec")
    space = {"sys": sys}
    exec(code, space)
    assert _unsafe_to_raise(space["_releaseLock"]())
    assert not _unsafe_to_raise(sys._getframe())


def test_a_stop_signal_while_a_child_is_started_is_asked_again_not_raised_there():
    # an exception inside Popen leaves the child running with no Popen to kill it by: a build so
    # stopped rewrote build/requirements.in after the trees were restored (CI, SIGTERM)
    import subprocess
    import sys

    from hourly.cli import _unsafe_to_raise
    code = compile("def _execute_child():\n    return sys._getframe()\n", subprocess.__file__, "exec")
    space = {"sys": sys}
    exec(code, space)
    assert _unsafe_to_raise(space["_execute_child"]())


def test_a_stop_signal_inside_a_finalizer_is_asked_again_not_lost():
    # an exception raised in a __del__ (a Popen, a file, a cursor collected at any bytecode) is
    # printed as "Exception ignored in" and lost: the run went on as if Ctrl-C had not been pressed
    import os
    import signal
    import time

    from hourly.cli import _stop

    class Dropped:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # lands at the next bytecode: inside this __del__

    before = signal.signal(signal.SIGINT, _stop)
    try:
        with pytest.raises(KeyboardInterrupt):
            Dropped()  # collected at once
            time.sleep(2)
    finally:
        signal.signal(signal.SIGINT, before)


# -- issue 23 item 5: --help groups the options in panels, as plain text ---------------------------

def help_panels(capsys, argv) -> dict[str, list[str]]:
    """Panel title -> the flags listed under it, from the plain help of ``argv``."""
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert not set(out) & set("╭─╮│╰╯"), out  # click's plain text, no rich box
    panels: dict[str, list[str]] = {}
    for line in out.splitlines():
        if re.fullmatch(r"[A-Z][a-z]+:", line):
            panels[line[:-1]] = current = []
        elif panels and re.match(r"  -", line):
            current.append(re.match(r"  (?:-h, )?(--[\w-]+)", line).group(1))
    return panels


def test_help_groups_the_options_in_panels(capsys):
    panels = help_panels(capsys, ["bisect", "--help"])
    assert list(panels) == ["Options", "Window", "Repositories", "Build", "Benchmark", "Statistics",
                            "Executor", "Output"]
    assert panels["Window"] == ["--good", "--bad", "--tz"]
    assert {"--bench-cmd", "--metric-regex", "--repeats", "--mode"} <= set(panels["Benchmark"])
    assert {"--higher-is-better", "--min-change", "--max-repeats", "--flaky", "--walk-skips"} == set(panels["Statistics"])
    assert {"--executor", "--workers", "--slurm-arg"} <= set(panels["Executor"])
    assert {"--json", "--log", "--workdir"} <= set(panels["Output"])
    scan = help_panels(capsys, ["scan", "--help"])
    assert scan["Options"] == ["--rerun", "--config", "--help"]  # the command's own, then -h
    assert scan["Window"][:4] == ["--from", "--to", "--tz", "--step"]
    assert "--build-cmd" in scan["Build"] and "--dry-run" in scan["Output"]
    # the same flag is in the same panel in every command
    assert "--bench-cmd" in help_panels(capsys, ["nightly", "--help"])["Benchmark"]
    assert "--bench-cmd" in help_panels(capsys, ["releases", "--help"])["Benchmark"]


def test_help_shows_the_true_defaults(monkeypatch, capsys):
    from hourly.metric import DEFAULT_METRIC_REGEX
    monkeypatch.setenv("COLUMNS", "200")
    for command in ("scan", "bisect"):
        assert main([command, "--help"]) == 0
        flat = re.sub(r"\s+", " ", capsys.readouterr().out)
        assert f"[default: {DEFAULT_METRIC_REGEX}]" in flat  # the pattern itself, not "MLUPS"
        assert "wheel cache" not in flat and "cached apart, in --cache-dir (~/.cache/hourly)" in flat
        assert "none there means the JAX tree is installed editable" in flat


def test_the_command_list_joins_a_summarys_lines_with_one_space(monkeypatch, capsys):
    """issue 33: a summary wrapped in its docstring kept the indentation ("for a step in     tracing")."""
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out.split("Commands:\n")[1].splitlines()
    column = re.match(r"  \S+ +", listed[0]).end()  # where the summaries start
    summaries = [ln[column:].strip() for ln in listed if ln.strip()]
    assert not [s for s in summaries if "  " in s], summaries
    said = " ".join(summaries)
    assert "for a step in tracing, lowering or dispatch" in said and "(default, the settings file, a flag); with" in said


def test_help_lists_the_modes_each_command_takes(monkeypatch, capsys):
    """issue 33: scan's --help offered --mode printed, which scan refuses (bisect's mode alone)."""
    monkeypatch.setenv("COLUMNS", "200")
    said = {}
    for command in ("scan", "bisect"):
        assert main([command, "--help"]) == 0
        said[command] = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--mode <metric|exit> " in said["scan"] and "printed" not in said["scan"]
    assert "--mode <metric|exit|printed> " in said["bisect"]
    assert "printed: good when every run prints the metric, bad when one exits 0 without it" in said["bisect"]
    code, _, err = run_cli(capsys, ["scan", "--mode", "printed", "--from", "Aug 24 2023", "--to", "Aug 24 2023"])
    assert code == 2 and "--mode must be metric or exit, not printed" in err


# -- issue 23 item 6: conflicts are refused in one line, before anything is created ----------------

def _bisect(scan_args, *extra):
    args = scan_args()
    return with_flags(["bisect", "--good", "Aug 24 2023 12:00", "--bad", "Aug 24 2023 15:00",
                       *args[args.index("--xla-repo"):]], *extra)


@pytest.mark.parametrize("argv,message", [
    (lambda a: a() + ["--higher-is-better", "--lower-is-better"],
     "--higher-is-better and --lower-is-better contradict each other"),
    (lambda a: a() + ["--no-sync", "--sync"], "--sync and --no-sync contradict each other"),
    (lambda a: a() + ["--mode", "exit", "--metric-regex", r"T: (?P<value>\d+)"],
     "--mode exit and --metric-regex cannot go together"),
    (lambda a: a("Aug 24 2023 00:00", "Aug 24 2023 05:00", "--step", "1s"),
     "the window plans 18,001 instants (every 1s from 2023-08-24T00:00:00Z to 2023-08-24T05:00:00Z), "
     "more than --max-instants 10,000"),
    (lambda a: a("Aug 24 2023", "Aug 30 2023", "--max-instants", "100", "--dry-run"), "--max-instants 169 to plan"),
    (lambda a: _bisect(a, "--json", "--log"), "--json and --log cannot go together"),
    (lambda a: _bisect(a, "--mode", "exit", "--metric-regex", r"T: (?P<value>\d+)"),
     "--mode exit and --metric-regex cannot go together"),
    (lambda a: _bisect(a, "--lower-is-better", "--higher-is-better"), "contradict each other"),
    (lambda a: ["releases", "--show", "--dry-run", "--workdir", a()[a().index("--workdir") + 1]],
     "--show and --dry-run cannot go together"),
], ids=["direction", "sync", "exit-regex", "18001-instants", "max-instants", "json-log", "bisect-exit-regex",
        "bisect-direction", "releases-show-dry-run"])
def test_conflicts_are_one_line_usage_errors_that_create_nothing(capsys, scan_args, tmp_path, argv, message):
    code, out, err = run_cli(capsys, argv(scan_args))
    assert code == 2 and message in err, err
    assert err.startswith("hourly: error: ") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "work").exists()


def test_a_plan_of_many_instants_is_warned_about_first(capsys, made, tmp_path):
    day = ["scan", "--from", "Aug 24 2023", "--to", "Aug 24 2023", "--step", "2m", "--dry-run", "--json",
           *repo_args(made, tmp_path / "work")]
    code, out, err = run_cli(capsys, day)
    assert code == 0, err
    assert len(json.loads(out)["points"]) == 721
    (warning,) = err.strip().splitlines()
    assert warning.startswith("hourly: warning: the window plans 721 instants (every 2m from 2023-08-24T00:00:00Z")
    code, out, err = run_cli(capsys, [a if a != "2m" else "1h" for a in day])  # 25 instants: not a word
    assert code == 0 and err == ""


def test_demo_without_a_folder_says_where_it_kept_its_temporary_folder(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    code, out, err = run_cli(capsys, ["demo"])
    assert code == 0, err
    (folder,) = (tmp_path / "tmp").iterdir()
    last = out.strip().splitlines()[-1]
    assert last == f"{folder} is a temporary folder, kept for the commands above; when done: rm -rf {folder}"
    assert f"hourly show --workdir {folder / 'work'}" in out


@pytest.mark.parametrize("end,words", [("xla@zzzz", "'zzzz' is not a commit sha"),
                                       ("jax@12", "'12' is not a commit sha"),
                                       ("xla@abc1234,jax@nothex", "'nothex' is not a commit sha")])
def test_a_bad_sha_as_an_end_is_not_told_the_time_formats(capsys, scan_args, tmp_path, end, words):
    """issue 33: --good xla@zzzz was "cannot parse time 'xla@zzzz' — use "Aug 24 2023", ..."; it
    names the sha that is none and the form of one."""
    args = _bisect(scan_args)
    args[args.index("--good") + 1] = end
    code, out, err = run_cli(capsys, args)
    assert code == 1 and words in err and "cannot parse time" not in err, err
    assert "4 to 40 hex digits" in err and len(err.strip().splitlines()) == 1


def test_a_missing_origin_main_names_the_branch_origin_head_points_to(capsys, scan_args, made, tmp_path):
    """issue 33: a clone whose default branch is master has no origin/main; the error said only
    "unknown ref 'origin/main'", and now names the ref origin/HEAD points to and the flag to pass."""
    import subprocess
    for repo in (made.xla,):
        git = ["git", "-C", str(repo)]
        subprocess.run([*git, "update-ref", "refs/remotes/origin/master", "refs/remotes/origin/main"], check=True)
        subprocess.run([*git, "update-ref", "-d", "refs/remotes/origin/main"], check=True)
        subprocess.run([*git, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/master"], check=True)
    code, _, err = run_cli(capsys, scan_args() + ["--no-sync"])
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "unknown ref 'origin/main' in xla repository" in err
    assert "origin/HEAD points to origin/master" in err and "--xla-ref origin/master" in err
    # without origin/HEAD, the branches the remote has here are named
    subprocess.run(["git", "-C", str(made.xla), "symbolic-ref", "-d", "refs/remotes/origin/HEAD"], check=True)
    code, _, err = run_cli(capsys, scan_args() + ["--no-sync"])
    assert code == 1 and "the branches origin has here: origin/master" in err, err


def test_the_same_checkout_as_both_repositories_is_refused(capsys, made, venv_python, tmp_path):
    """`--xla-repo X --jax-repo X` (a typo, a path pasted twice) was planned and scanned: each state a
    commit of one history paired with another of the same."""
    work = tmp_path / "work"
    same = ["--xla-repo", str(made.jax), "--jax-repo", f"{made.jax}/", "--workdir", str(work)]
    for argv in (["scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 15:00", "--dry-run", *same],
                 ["bisect", "--good", "Aug 24 2023 12:00", "--bad", "Aug 24 2023 15:00", "--python", venv_python,
                  "--build-cmd", str(made.build_script), "--bench-cmd", f"python3 {made.bench_script}", *same]):
        code, out, err = run_cli(capsys, argv)
        assert code == 1, out + err
        assert (f"--xla-repo and --jax-repo are the same checkout, {made.jax} — pass your xla checkout as --xla-repo"
                in " ".join(err.split())), argv
        assert not work.exists()


def test_a_bisection_over_an_improvement_says_find_fix_and_that_advice_finds_it(capsys, made, venv_python,
                                                                                 tmp_path):
    """--good/--bad around an improvement said "swap --good and --bad", which the next run refused
    (--bad is not later than --good); the advice now names --find-fix, and following it finds the
    commit that made it better."""
    common = ["--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
              "--python", venv_python, "--bench-cmd", f"python3 {made.bench_script}", "--max-repeats", "6"]
    code, out, err = run_cli(capsys, ["bisect", "--good", "2023-08-26T02:00Z", "--bad", "2023-08-26T04:00Z",
                                      *common, "--workdir", str(tmp_path / "w1")])
    said = " ".join(err.split())
    assert code == 1 and "the bad end is not worse than the good end" in said, out + err
    assert "pass --find-fix with --bad at this --good and --good at this --bad" in said
    code, out, err = run_cli(capsys, ["bisect", "--find-fix", "--bad", "2023-08-26T02:00Z", "--good",
                                      "2023-08-26T04:00Z", *common, "--workdir", str(tmp_path / "w2"), "--json"])
    assert code == 0, err
    fix = made.shas["[XLA:GPU] Enable cuDNN fused attention"]
    assert fix in out


def test_bench_and_trace_out_that_cannot_be_written_are_one_line(capsys, tmp_path, monkeypatch):
    """`hourly bench --out DIR` (or a path under a file) and `hourly trace --out FILE/x` were
    `unexpected error: IsADirectoryError / FileExistsError / NotADirectoryError`, exit 3."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.py").write_text("def make():\n    return (lambda x: x), (1,)\n")
    (tmp_path / "plain").write_text("a file\n")
    for out, said in ((str(tmp_path), f"--out {tmp_path} is a directory"),
                      ("plain/x.log", f"cannot write --out plain/x.log ({tmp_path / 'plain'} is a file, not a directory)")):
        code, _, err = run_cli(capsys, ["bench", "b.py", "--out", out])
        assert code == 1 and "unexpected" not in err and len(err.strip().splitlines()) == 1, err
        assert said in err and "pass --out with a file path you can write to" in err
    assert (tmp_path / "plain").read_text() == "a file\n"
    for out, said in (("plain", "the trace folder plain is a file, not a directory"),
                      ("plain/x", f"the trace folder plain/x is under {tmp_path / 'plain'}, which is a file")):
        code, _, err = run_cli(capsys, ["trace", "--out", out, "--", "python3", "b.py"])
        assert code == 1 and "unexpected" not in err, err
        assert said in " ".join(err.split())


@pytest.mark.parametrize("flag,example", [("--workdir", "./hourly-work"), ("--xla-repo", "~/src/xla"),
                                          ("--jax-repo", "~/src/jax"), ("--bench-cwd", "."),
                                          ("--python", ".venv/bin/python"), ("--cache-dir", "~/.cache/hourly")])
def test_an_empty_path_is_refused_not_read_as_the_current_directory(capsys, scan_args, tmp_path, monkeypatch,
                                                                    flag, example):
    """`--workdir "$W"` with W unset was the current directory: a scan stored there, `show` read it;
    `--xla-repo ""` was the checkout the shell stood in."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, with_flags(scan_args(), flag, ""))
    assert code == 2, err
    assert (f"{flag} must not be empty (it would be the current directory), not '' — pass e.g. {flag} {example}"
            in " ".join(err.split()))
    assert not (tmp_path / "hourly.sqlite").exists() and not (tmp_path / "work").exists()
    (tmp_path / "hourly.toml").write_text(f'{flag[2:].replace("-", "_")} = ""\n')
    code, _, err = run_cli(capsys, ["config"])
    assert code == 1 and "must not be empty" in err, err
