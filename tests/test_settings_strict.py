"""Settings and inputs are checked strictly (issue #22, item 9): a wrong type or name in hourly.toml,
a metric regex whose number is a guess, and grep output without file names are each one line that
says what to write instead, not a run on a misread value.

Every test runs hourly's own entry, ``hourly.cli.main`` (the one top-level handler that turns a
UserError into its one line and exit 1), on real files in the directory a user would run it from.
It runs in the test's process: a ``python -m hourly`` process per call cost ~0.3 s of CPU importing
hourly, 10 s for this file, and what the process adds (``sys.exit`` of that code, nothing else on
its stdout) is checked once, by the quoted-false test, in a process of its own.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from hourly.cli import main


def hourly(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``hourly ARGS`` run from ``cwd`` through hourly's top-level handler, in this process: its
    exit code and what it printed on each stream."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["hourly", *args], code, out.getvalue(), err.getvalue())


def hourly_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m hourly ARGS`` in a process of its own, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "hourly", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    """The one line hourly's top-level handler prints for a UserError (exit 1, nothing on stdout)."""
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hourly: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


# -- hourly.toml: types ------------------------------------------------------------------------

@pytest.mark.parametrize("text, key, expected, fix", [
    ('higher_is_better = "false"\n', "higher_is_better", "a boolean", "write higher_is_better = false, without quotes"),
    ('[scan]\nhigher_is_better = "no"\n', "[scan] higher_is_better", "a boolean", "higher_is_better = true or"),
    ('[scan]\nfirst-parent = "true"\n', "[scan] first-parent", "a boolean", "write first-parent = true"),
    ('repeats = "3"\n', "repeats", "an integer", "write repeats = 3, without quotes"),
    ("repeats = 2.5\n", "repeats", "an integer", "a whole number"),
    ('bench_timeout = "60"\n', "bench_timeout", "a number", "write bench_timeout = 60, without quotes"),
    ('bench_cmd = ["python3", "b.py"]\n', "bench_cmd", "a string", "one string in quotes"),
    ("from = 2023-08-24\n", "from", "a string", 'from = "2023-08-24"'),
    ('env = ["A=1", 2]\n', "env", "an array of strings", 'env = ["..."]'),
    ('[env]\nA = "1"\n', "env", "an array of strings", 'env = ["..."]'),
])
def test_a_value_of_the_wrong_type_is_one_line_naming_file_key_and_type(tmp_path, text, key, expected, fix):
    (tmp_path / "hourly.toml").write_text(text)
    line = one_line_error(hourly("config", cwd=tmp_path))
    assert f"hourly.toml: {key} is " in line
    assert f"expected {expected}" in line and fix in line


def test_a_quoted_false_is_never_read_as_true_by_the_command_that_uses_it(tmp_path):
    """The bug: ``higher_is_better = "false"`` is a non-empty string, so a scan took it for true.
    Run as a user runs it, in a process: its exit status is 1 and its one line all it prints."""
    (tmp_path / "hourly.toml").write_text('higher_is_better = "false"\n')
    r = hourly_process("scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 14:00",
                       "--bench-cmd", "python3 bench.py", "--workdir", "w", cwd=tmp_path)
    assert r.stdout == ""
    line = one_line_error(r)
    assert line == one_line_error(hourly("scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 14:00",
                                 "--bench-cmd", "python3 bench.py", "--workdir", "w", cwd=tmp_path))
    assert "higher_is_better" in line and "without quotes" in line
    assert not (tmp_path / "w").exists()  # refused before the workdir was made


def test_valid_values_of_every_kind_still_load(tmp_path):
    (tmp_path / "hourly.toml").write_text(
        'repeats = 2\nbench_timeout = 90\nbuild_timeout = 1.5\ncache_size = 0\nenv = "A=1"\n'
        '[scan]\nhigher_is_better = false\nfirst-parent = false\nfrom = "Aug 24 2023"\n'
        'cherry_pick = ["jax@abc"]\nbench-cmd = "python3 b.py"\n')
    r = hourly("config", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = {k: v["value"] for k, v in json.loads(r.stdout).items() if v["from"] == "hourly.toml"}
    assert got == {"repeats": 2, "bench_timeout": 90, "build_timeout": 1.5, "cache_size": 0, "env": ["A=1"],
                   "higher_is_better": False, "first_parent": False, "from_": "Aug 24 2023",
                   "cherry_pick": ["jax@abc"], "bench_cmd": "python3 b.py"}


# -- hourly.toml: names --------------------------------------------------------------------------

def test_an_unknown_section_is_an_error_naming_the_nearest_one(tmp_path):
    (tmp_path / "hourly.toml").write_text('[scann]\nrepeats = 3\n')
    line = one_line_error(hourly("config", cwd=tmp_path))
    assert "hourly.toml: unknown section [scann]" in line and "did you mean [scan]?" in line
    (tmp_path / "hourly.toml").write_text('[bench]\nrepeats = 3\n')
    line = one_line_error(hourly("config", cwd=tmp_path))
    assert "unknown section [bench]" in line and "at top level or under [scan]" in line


@pytest.mark.parametrize("text, where, near", [
    ('bench_cmnd = "python3 b.py"\n', "unknown setting 'bench_cmnd'", "did you mean bench_cmd?"),
    ('[scan]\nrepeat = 3\n', "[scan] unknown setting 'repeat'", "did you mean repeats?"),
    ('[scan]\nhigher-is-beter = false\n', "[scan] unknown setting 'higher-is-beter'", "did you mean higher_is_better?"),
])
def test_an_unknown_setting_is_an_error_naming_the_nearest_one(tmp_path, text, where, near):
    (tmp_path / "hourly.toml").write_text(text)
    line = one_line_error(hourly("config", cwd=tmp_path))
    assert f"hourly.toml: {where}" in line and near in line


def test_the_file_named_by_config_is_the_one_named_in_the_error(tmp_path):
    other = tmp_path / "conf" / "mine.toml"
    other.parent.mkdir()
    other.write_text('[scan]\nconfirm_edges = "off"\n')
    line = one_line_error(hourly("config", "--config", str(other), cwd=tmp_path))
    assert f"{other}: [scan] confirm_edges is a string \"off\", expected a boolean" in line


# -- --metric-regex -----------------------------------------------------------------------------

HASHED = "".join(f"OUT-{i}:commit 1234567 MLUPS: {v}\n" for i, v in enumerate([577.1, 577.3, 576.9, 577.0,
                                                                                 520.2, 520.0, 520.4, 520.1]))


def test_a_regex_with_several_unnamed_groups_is_refused_not_read_as_its_first_number(tmp_path):
    """The bug: ``([0-9a-f]{7}) MLUPS: ([0-9.]+)`` read each line as 1234567, the commit hash."""
    (tmp_path / "runs.txt").write_text(HASHED)
    line = one_line_error(hourly("detect", "runs.txt", "--json", "--metric-regex",
                                 r"commit ([0-9a-f]{7}) MLUPS: ([0-9.]+)", cwd=tmp_path))
    assert "has 2 groups and none is named value" in line and "(?P<value>...)" in line
    r = hourly("detect", "runs.txt", "--json", "--metric-regex",
               r"commit (?:[0-9a-f]{7}) MLUPS: ([0-9.]+)", cwd=tmp_path)  # the fix it names: one group
    assert r.returncode == 0, r.stderr
    assert [p["value"] for p in json.loads(r.stdout)["points"]][:2] == [577.1, 577.3]
    r = hourly("detect", "runs.txt", "--json", "--metric-regex",
               r"commit ([0-9a-f]{7}) MLUPS: (?P<value>[0-9.]+)", cwd=tmp_path)  # or: name it
    assert r.returncode == 0, r.stderr
    assert [c["kind"] for c in json.loads(r.stdout)["changes"]] == ["regression"]


def test_detect_refuses_such_a_regex_even_for_a_source_it_does_not_read_with_it(tmp_path):
    (tmp_path / "runs.csv").write_text("label,value\na,1\nb,2\n")
    line = one_line_error(hourly("detect", "runs.csv", "--metric-regex", r"(\w+): (\d+)", cwd=tmp_path))
    assert "--metric-regex" in line and "none is named value" in line


def test_a_scan_refuses_such_a_regex_before_it_builds_anything(scan_args, tmp_path):
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 14:00", "--metric-regex", r"(MLUPS): ([0-9.]+)")
    line = one_line_error(hourly(*args, cwd=tmp_path))
    assert "has 2 groups" in line
    assert not (tmp_path / "work").exists() and not (tmp_path / "cache").exists()


def test_regexes_that_say_which_group_is_the_number_still_work():
    from hourly.metric import compile_metric_regex, parse_metric
    assert parse_metric("at 1234567 MLUPS: 5.5", r"(\d+) MLUPS: (?P<value>[0-9.]+)") == 5.5
    assert parse_metric("MLUPS: 5.5", r"MLUPS: ([0-9.]+)") == 5.5
    assert parse_metric("run 3 MLUPS: 5.5", r"run (?:\d+) MLUPS: ([0-9.]+)") == 5.5
    assert compile_metric_regex(r"(?P<n>\d+)").groups == 1  # one group, whatever its name


# -- grep output without file names --------------------------------------------------------------

def outputs(tmp_path: Path) -> Path:
    """Benchmark logs OUT-0..OUT-7 as a nightly loop leaves them, with a step after OUT-3."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for i, v in enumerate([577.1, 577.3, 576.9, 577.0, 520.2, 520.0, 520.4, 520.1]):
        (logs / f"OUT-{i}").write_text(f"step 1\nMLUPS: {v}\ndone\n")
    return logs


def shell(cmd: str, cwd: Path) -> None:
    subprocess.run(["bash", "-c", cmd], cwd=cwd, check=True)


@pytest.mark.parametrize("grep", ["cat OUT-* | grep MLUPS", "grep MLUPS OUT-3"])
def test_grep_output_without_file_names_is_an_error_that_says_grep_h(tmp_path, grep):
    """The bug: 'MLUPS: 577.1' became one failed point labelled MLUPS, and "no step found"."""
    logs = outputs(tmp_path)
    shell(f"{grep} > ../runs.txt", logs)
    line = one_line_error(hourly("detect", "runs.txt", cwd=tmp_path))
    assert "runs.txt: lines like 'MLUPS: 5" in line and "carry no file name" in line
    assert "grep -H MLUPS OUT* > runs.txt" in line


def test_the_same_logs_grepped_with_h_find_the_step(tmp_path):
    logs = outputs(tmp_path)
    shell("grep -H MLUPS OUT-* > ../runs.txt", logs)
    r = hourly("detect", "runs.txt", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [(c["before"], c["after"], c["kind"]) for c in json.loads(r.stdout)["changes"]] == [
        ("OUT-3", "OUT-4", "regression")]


def test_a_crashed_run_among_named_lines_is_still_a_failed_point(tmp_path):
    logs = outputs(tmp_path)
    (logs / "OUT-5").write_text('  File "/lbm/MLUPS3d.py", line 212, in <module>\n')
    shell("grep -H MLUPS OUT-* > ../runs.txt", logs)
    r = hourly("detect", "runs.txt", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    points = {p["label"]: p["status"] for p in json.loads(r.stdout)["points"]}
    assert points["OUT-5"] == "failed" and points["OUT-4"] == "ok"


# -- detect reads the direction from hourly.toml --------------------------------------------------

TIMES = "label,value\n" + "".join(f"t{i},{v}\n" for i, v in enumerate([10.0, 10.02, 9.98, 10.01,
                                                                       12.0, 12.02, 11.98, 12.01]))


def kinds(r: subprocess.CompletedProcess) -> list[str]:
    assert r.returncode == 0, r.stderr
    return [c["kind"] for c in json.loads(r.stdout)["changes"]]


def test_detect_takes_the_direction_from_hourly_toml_and_the_flag_wins(tmp_path):
    (tmp_path / "times.csv").write_text(TIMES)
    assert kinds(hourly("detect", "times.csv", "--json", cwd=tmp_path)) == ["improvement"]  # default: higher
    (tmp_path / "hourly.toml").write_text("[scan]\nhigher_is_better = false\n")
    assert kinds(hourly("detect", "times.csv", "--json", cwd=tmp_path)) == ["regression"]
    assert kinds(hourly("detect", "times.csv", "--json", "--higher-is-better", cwd=tmp_path)) == ["improvement"]


def test_detect_takes_the_direction_from_the_file_given_with_config(tmp_path):
    (tmp_path / "times.csv").write_text(TIMES)
    (tmp_path / "times.toml").write_text("higher_is_better = false\n")
    assert kinds(hourly("detect", "times.csv", "--json", "--config", "times.toml", cwd=tmp_path)) == ["regression"]
    (tmp_path / "times.toml").write_text('higher_is_better = "false"\n')
    line = one_line_error(hourly("detect", "times.csv", "--config", "times.toml", cwd=tmp_path))
    assert "times.toml: higher_is_better is a string" in line


@pytest.mark.parametrize("text,said", [
    ('env = ["A=1", "NO EQUALS"]\n', 'hourly.toml: env = ["A=1", "NO EQUALS"] must be KEY=VALUE or a variable\'s NAME'),
    ('step = "0h"\n', 'hourly.toml: step = "0h" must be longer than 0 — write e.g. step = "1h"'),
    ('tz = "Nowhere/City"\n', 'hourly.toml: tz = "Nowhere/City" must be an IANA time zone name (or UTC)'),
])
def test_a_value_the_flag_refuses_is_refused_in_the_file_too(tmp_path, text, said):
    """issue 44: the rules of --env, --step and --tz hold for each value of the file (each item of an array)."""
    (tmp_path / "hourly.toml").write_text(text)
    assert said in one_line_error(hourly("config", cwd=tmp_path))
