"""What hourly prints (issue #9, items 4-6), through the real CLI and a real pipe.

* Text from outside (commit subjects, paths, labels, commands) is printed verbatim: never read as
  rich markup, so ``[pallas] b`` keeps its tag and ``[/c] d`` is not a MarkupError.
* ``--help`` of every command shows every option's default.
* Through a pipe at COLUMNS=80, table cells are never cut (times and SHAs whole), commands to run
  are one line, and nothing colours the digits of a date or a SHA.

The repositories are real (hourly.fixtures.make_repos) and their commit subjects are the strings
above; the workdir itself lives under a folder whose name holds ``[/c] d``.

The scan and the colour outputs are real processes writing into a real pipe; the other commands
run in this process as a pipe sees them (``here``: 80 columns, no terminal, no colour), which prints
the same bytes (checked for each command when this was written): the colour test finds every plain
line printed here, of ``show`` and of the bisection, in what the colour processes wrote.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from hourly.adapters.store import Store
from hourly.cli import app, main
from hourly.demo.repos import Change, make_repos
from hourly.render.console import unwrap

A, B, C, D = "[XLA:GPU] a", "[pallas] b", "[/c] d", "[bold]e[/bold]"
SUBJECTS = [A, B, C, D]
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")

#: A regression whose window holds a build failure around the culprit (so bisection names a range
#: of three subjects), and a later improvement in jax (so the report lists the fourth).
CHANGES = [
    Change("xla", "2023-08-24T00:20:00Z", "[XLA] n1", {"n1.txt": "1\n"}),
    Change("jax", "2023-08-24T01:40:00Z", "jax n2", {"n2.txt": "1\n"}),
    Change("xla", "2023-08-24T02:20:00Z", "[XLA] n3", {"n3.txt": "1\n"}),
    Change("xla", "2023-08-24T03:10:00Z", A, {"BROKEN": "1\n"}),
    Change("xla", "2023-08-24T03:20:00Z", C, {"perf/slow.txt": "0.9\n"}),
    Change("xla", "2023-08-24T03:30:00Z", D, {"BROKEN": None}),
    Change("jax", "2023-08-24T04:40:00Z", "jax n4", {"n4.txt": "1\n"}),
    Change("xla", "2023-08-24T05:20:00Z", "[XLA] n5", {"n5.txt": "1\n"}),
    Change("jax", "2023-08-24T06:40:00Z", B, {"perf/pallas.txt": "1.1\n"}),
    Change("xla", "2023-08-24T07:20:00Z", "[XLA] n6", {"n6.txt": "1\n"}),
]


def pipe(*args: str, cwd: Path, colour: bool = False) -> subprocess.CompletedProcess:
    """``hourly ARGS | cat`` at 80 columns (with ``colour``: as a colour terminal would get it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE")}
    env.update(COLUMNS="80", LINES="50", TERM="xterm-256color")
    if colour:
        env["FORCE_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "hourly", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def as_a_pipe(monkeypatch) -> bool:
    """The environment :func:`pipe` gives hourly, set in this process; whether hourly's consoles here
    print as into that pipe. They read the width when they print but decide on colour when made (on
    import): made on a colour terminal (pytest -s there), they do not."""
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (("COLUMNS", "80"), ("LINES", "50"), ("TERM", "xterm-256color")):
        monkeypatch.setenv(name, value)
    from hourly.commands.common import console, err_console
    return not (console.color_system or err_console.color_system)


def here(capsys, monkeypatch, *args: str) -> str:
    """What ``hourly ARGS | cat`` prints at 80 columns (as :func:`pipe` runs it), run in this process
    (else the real pipe, see :func:`as_a_pipe`): stdout, once the command exited 0 with no MarkupError."""
    if not as_a_pipe(monkeypatch):
        return ok(pipe(*args, cwd=Path.cwd()))
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "MarkupError" not in err
    return out


def ok(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 0, res.stdout + res.stderr
    assert "MarkupError" not in res.stderr
    return res.stdout


def assert_no_cut_cells(out: str) -> None:
    assert "…" not in out, out
    for partial in re.findall(r"\d{4}-\d\d-\d\dT[\d:]*Z?", out):  # every time that starts ends whole
        assert TIME.fullmatch(partial), partial


@pytest.fixture(scope="module")
def hunt(tmp_path_factory, venv_python):
    """One real scan (and bisection) over repositories whose subjects look like markup."""
    root = tmp_path_factory.mktemp("text")
    made = make_repos(root / "repos", CHANGES)
    python = venv_python
    work = root / "w[" / "c] d" / "work"   # the path holds "[/c] d"
    args = ["--from", "2023-08-24T00:00Z", "--to", "2023-08-24T08:00Z", "--xla-repo", str(made.xla),
            "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script), "--python", python,
            "--bench-cmd", f"python3 {made.bench_script}", "--repeats", "2", "--warmup-runs", "0", "--workdir", str(work),
            "--no-sync"]  # no warm-up runs, in the scan or the bisection that reads its settings: nothing here reads one
    with pytest.MonkeyPatch.context() as mp:  # the tests' own settings (conftest) are not made yet
        for name, value in (("DEMO_NOISE", "0.002"), ("HOURLY_CACHE_DIR", str(root / "cache")),
                            ("HOURLY_LOG_DIR", str(root / "crash-logs"))):
            mp.setenv(name, value)
        mp.chdir(root)
        scan = subprocess.run([sys.executable, "-m", "hourly", "scan", *args], cwd=root,
                              env={**os.environ, "COLUMNS": "80"}, capture_output=True, text=True, timeout=600)
        assert scan.returncode == 0, scan.stderr
        if as_a_pipe(mp):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["bisect", "--workdir", str(work)])
            assert code == 0 and "MarkupError" not in err.getvalue(), err.getvalue()
            bisect = out.getvalue()
        else:
            bisect = ok(pipe("bisect", "--workdir", str(work), cwd=root))
    return dict(root=root, made=made, work=work, scan=scan.stdout, bisect=bisect, python=python)


@pytest.fixture
def shown(hunt, capsys, monkeypatch) -> str:
    """``hourly show | cat`` of the scan, at 80 columns, run once for the tests that read it."""
    if "shown" not in hunt:
        hunt["shown"] = here(capsys, monkeypatch, "show", "--workdir", str(hunt["work"]))
    return hunt["shown"]


# -- item 4: text from outside is text --------------------------------------------------------------

def stored_points(hunt, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["show", "--json", "--workdir", str(hunt["work"])]) == 0
    return json.loads(capsys.readouterr().out)["points"]


def test_scan_and_show_tables_keep_every_cell_whole(hunt, shown, capsys):
    points = stored_points(hunt, capsys)
    assert len(points) == 9
    for out in (hunt["scan"], shown):
        assert_no_cut_cells(out)
        rows = [line for line in out.splitlines() if TIME.search(line) and "│" in line]
        assert all(len(r) <= 80 for r in rows), rows  # the scan table fits an 80-column terminal too
        for p in points:  # every instant's row: its whole time and both SHAs as shown
            row = next(r for r in rows if p["time"] in r)
            assert p["xla"][:10] in row and p["jax"][:10] in row, row
        assert "▼" in out and "▲" in out


def test_bisect_answer_prints_subjects_verbatim(hunt, capsys, monkeypatch):
    out = hunt["bisect"]
    for subject in (A, C, D):  # the build failure hides the culprit: the range of three is named
        assert f" {subject}  https://github.com/openxla/xla/commit/" in out, out
    for line in out.splitlines():
        if "github.com" in line:  # links and SHAs stay whole on their line
            assert re.search(r"/commit/[0-9a-f]{40}$", line), line
    again = here(capsys, monkeypatch, "bisect", "--workdir", str(hunt["work"]))
    assert again == out  # the stored answer, and this process prints what the pipe got


def test_bisect_log_lines_are_whole(hunt, capsys, monkeypatch):
    out = here(capsys, monkeypatch, "bisect", "--log", "--workdir", str(hunt["work"]))
    assert "git bisect start '--first-parent'" in out
    marks = [line for line in out.splitlines() if line.startswith("git bisect ") and "start" not in line]
    assert marks and all(re.fullmatch(r"git bisect (good|bad|skip) [0-9a-f]{40}", m) for m in marks), out
    shas = {hunt["made"].shas[s] for s in (A, C, D)}
    assert shas & {m.split()[-1] for m in marks}


def test_report_lists_subjects_verbatim(hunt, capsys, monkeypatch):
    out = here(capsys, monkeypatch, "report", "--workdir", str(hunt["work"]))
    md_path = hunt["work"] / "report" / "report.md"
    assert f"report: {md_path}" in out.splitlines()
    md = md_path.read_text()
    from hourly.render import markdown as esc
    for subject in SUBJECTS:  # escaped for markdown (issue 23), so that it renders as the subject itself
        cell = esc.text(subject)
        assert f"| {cell} |" in md, subject
        assert re.sub(r"\\(.)", r"\1", cell) == subject
    # the command that reproduces the scan is one shell-quoted line that splits back to its words
    line = next(x for x in md.splitlines() if "hourly scan --from" in x)
    cmd = shlex.split(line[line.index("hourly scan"):].rstrip("`"))
    assert cmd[cmd.index("--xla-repo") + 1] == str(hunt["made"].xla)
    assert cmd[cmd.index("--bench-cmd") + 1] == f"python3 {hunt['made'].bench_script}"


def test_detect_prints_labels_verbatim(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "series.csv"
    labels = [f"{i:02d} {s}" for i, s in enumerate(SUBJECTS * 3)]  # a series is ordered by label
    rows = [f'"{label}",{100.0 + 0.1 * (i % 3) if i < 6 else 80.0 + 0.1 * (i % 3)}' for i, label in enumerate(labels)]
    csv.write_text("label,value\n" + "\n".join(rows) + "\n")
    out = here(capsys, monkeypatch, "detect", str(csv))
    for label in labels:
        assert label in out, label
    assert f"between {labels[5]} and {labels[6]}" in out


def test_detect_reads_the_store_under_a_bracketed_path(hunt, capsys, monkeypatch):
    out = here(capsys, monkeypatch, "detect", str(hunt["work"]))
    assert_no_cut_cells(out)
    assert "between 2023-08-24T03:00:00Z and 2023-08-24T04:00:00Z" in out


def config_rows(out: str) -> dict[str, tuple[str, str]]:
    """``hourly config``'s table: setting -> (value, from); a value wrapped or folded onto the next
    lines is joined again (with its spaces dropped, as a fold has none)."""
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("setting"))
    at_value, at_from = lines[head].index("value"), lines[head].index("from")
    rows: dict[str, list[str]] = {}
    for line in lines[head + 2:]:
        key, value, origin = line[:at_value].strip(), line[at_value:at_from].strip(), line[at_from:].strip()
        if key:
            rows[key] = [value, origin]
            last = key
        elif value:
            rows[last][0] += value
    return {k: (v.replace(" ", ""), o) for k, (v, o) in rows.items()}


def test_config_prints_values_verbatim(tmp_path, capsys, monkeypatch):
    (tmp_path / "hourly.toml").write_text(f'workdir = "{C}"\nbench_cmd = "python3 \'{D}.py\'"\n')
    rows = config_rows(here(capsys, monkeypatch, "config", "--config", str(tmp_path / "hourly.toml")))  # cwd: tmp_path
    assert rows["workdir"] == (json.dumps(str(tmp_path / C)).replace(" ", ""), str(tmp_path / "hourly.toml"))
    assert rows["bench_cmd"][0] == json.dumps(f"python3 '{D}.py'").replace(" ", "")


def test_config_is_a_narrow_table_of_toml_values_and_takes_the_scans_flags(tmp_path, capsys, monkeypatch):
    from hourly.metric import DEFAULT_METRIC_REGEX
    (tmp_path / "hourly.toml").write_text('repeats = 2\nenv = ["A=1", "B=2"]\n')
    out = here(capsys, monkeypatch, "config", "--repeats", "3", "--no-sync", "--tz", "Europe/Paris")  # cwd: tmp_path
    assert max(len(line) for line in out.splitlines()) <= 80, out  # a pipe is 80 columns
    rows = config_rows(out)
    assert rows["repeats"] == ("3", "flag") and rows["sync"] == ("false", "flag")
    assert rows["tz"] == ('"Europe/Paris"', "flag") and rows["first_parent"] == ("true", "default")
    assert rows["env"] == ('["A=1","B=2"]', "hourly.toml")
    assert rows["from"] == ("(notset)", "default")
    # the folders a run uses when none is given, not "(not set)"
    assert rows["cache_dir"] == (json.dumps(str(tmp_path / "cache")), "$HOURLY_CACHE_DIR")  # conftest's
    assert rows["wheel_dir"] == (json.dumps("/opt/jax-source/dist"), "default")  # the tree's dist/, as build-jax.sh
    assert rows["metric_regex"] == (f"'{DEFAULT_METRIC_REGEX}'", "default")  # a TOML literal string
    assert "None" not in out and "True" not in out and "'UTC'" not in out  # no Python reprs


def test_nightly_output_keeps_paths_and_commands_verbatim(tmp_path, capsys, monkeypatch):
    from hourly.model import NightlyPoint, Status
    from hourly.nightly import plan as N
    work = tmp_path / "n[" / "c] d"
    mount = f"{tmp_path / B}:/dir"
    bench = f"python3 '{D}.py' --tag '{A}'"
    s = N.NightlySettings(from_="2023-08-20", to="2023-08-23", mounts=[mount], bench_cmd=bench, workdir=str(work))
    store = Store(str(work))
    store.save_settings(N.LEVEL, s.as_dict())
    shas = {d: (f"{i}" * 40, f"{i + 4}" * 40) for i, d in enumerate(["2023-08-20", "2023-08-21", "2023-08-22",
                                                                      "2023-08-23"], 1)}
    for d, value in (("2023-08-20", 100.0), ("2023-08-21", 100.2), ("2023-08-22", 80.0), ("2023-08-23", 80.1)):
        store.add_nightly(s.key(), NightlyPoint(d, N.image_ref(s.image, N.parse_date(d)), Status.OK,
                                                "sha256:" + "ab" * 32, value, [value], *shas[d],
                                                detail=f"log {work}/{d}.log"))
    for args in (["nightly", "--show"], ["show", "--nightly"]):
        out = here(capsys, monkeypatch, *args, "--workdir", str(work))
        assert_no_cut_cells(out)
        assert f"the rest from {work}" in out
        assert f"good: xla {'2' * 40}  jax {'6' * 40}" in out and f"bad: xla {'3' * 40}" in out
        scan = next(line for line in out.splitlines() if line.strip().startswith("hourly scan"))
        assert shlex.split(scan) == ["hourly", "scan", "--from", "2023-08-21", "--to", "2023-08-22",
                                     "--bench-cmd", bench]
        container = next(line for line in out.splitlines() if line.strip().startswith("hourly container"))
        assert shlex.split(container) == ["hourly", "container", "--date", "2023-08-21"]


def test_profile_prints_paths_verbatim(hunt, capsys, monkeypatch):
    import importlib.util
    if importlib.util.find_spec("jax") is None:  # looked up, not imported (1-2 s of CPU): the profile runs it
        pytest.skip("jax is not installed")
    # whether the builds' venv finds jax, without importing it (1 s of CPU): the profile imports it
    found = subprocess.run([hunt["python"], "-c", "import importlib.util, sys; sys.exit(not importlib.util.find_spec('jax'))"],
                           capture_output=True)
    if found.returncode:
        pytest.skip("the builds' venv cannot import jax here (issue #9 item 2)")
    from test_profile import JAX_BENCH
    bench = hunt["made"].bench_script
    original = bench.read_text()
    bench.write_text(JAX_BENCH)
    try:
        out = here(capsys, monkeypatch, "profile", "--workdir", str(hunt["work"]))
    finally:
        bench.write_text(original)
    base = hunt["work"] / "profiles"
    assert any(line.startswith(f"regression-1: good {base / 'regression-1' / 'good'}") for line in out.splitlines()), out
    diff = next(line for line in out.splitlines() if line.startswith("memory diff with pprof:"))
    assert shlex.split(diff.split(":", 1)[1])[-1] == str(base / "regression-1" / "bad" / "memory.prof")


# -- item 6: a pipe, a colour terminal, commands on one line ---------------------------------------

def test_colour_never_splits_a_time_or_a_sha(hunt, shown, capsys):
    out = ok(pipe("show", "--workdir", str(hunt["work"]), cwd=hunt["root"], colour=True))
    assert "\x1b[" in out  # it is colour output
    for p in stored_points(hunt, capsys):
        assert p["time"] in out and p["xla"][:10] in out and p["jax"][:10] in out
    # every line of text (the summary, each step with its times and SHAs) has no escape code inside
    plain = shown
    lines = [x for x in plain.splitlines() if x.strip() and not set(x) & set("│┃━─")]
    assert any("between 2023-08-24T03:00:00Z and 2023-08-24T04:00:00Z" in x for x in unwrap(plain)), lines
    for line in lines:
        if "hourly scan" not in line:  # the title is styled as a whole
            assert line in out, line
    bisect = ok(pipe("bisect", "--workdir", str(hunt["work"]), cwd=hunt["root"], colour=True))
    for line in hunt["bisect"].splitlines():
        if not line.startswith(("regression", "  culprit")):  # a bold word starts these two
            assert line in bisect, line


def test_console_helpers_keep_text_and_commands_whole():
    from rich.table import Table

    from hourly.render import console as output
    buf = io.StringIO()
    con = output.console(file=buf, width=80, force_terminal=True, color_system="truecolor")
    cmd = ["hourly", "scan", "--from", "Aug 24 2023", "--bench-cmd", f"python3 /a/very/long/path/{C}/bench.py " * 3]
    output.print_command(con, cmd, prefix="  ")
    t = Table(title="t")
    for name in ("time (UTC)", "xla", "jax", "metric", "note"):
        t.add_column(name)
    t.add_row("2023-08-24T00:00:00Z", "0941a00937", "29598127e8", "576.8 ±0.08% (n=3)", f"{A} {B} {C} {D}")
    output.print_table(con, t)
    output.print_text(con, f"subject: {D} {C}")
    text = buf.getvalue()
    first = text.splitlines()[0]
    assert first == "  " + shlex.join(cmd)
    for cell in ("2023-08-24T00:00:00Z", "0941a00937", "29598127e8", "576.8 ±0.08% (n=3)"):
        assert cell in text
    assert f"subject: {D} {C}" in text
    assert "…" not in text


# -- item 5: --help shows every default ---------------------------------------------------------------

def _help_blocks(text: str) -> dict[str, str]:
    """Option name -> its help text (continuation lines joined), from click's plain help."""
    blocks: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^  (-[-\w]+)", line)
        if m:
            current = m.group(1)
            blocks[current] = line
        elif current and line.startswith("    ") and line.strip():
            blocks[current] += " " + line.strip()
        else:
            current = None
    return blocks


def _expected_default(param) -> str | None:
    """What the help must show as the default: a text, "" for any ``[default: ...]`` (or
    ``[required ...]``) written into the help, or None for a flag that is simply off unless given."""
    if isinstance(param.show_default, str):
        return param.show_default
    if param.is_flag and not param.secondary_opts and not param.default:
        return None
    if param.is_flag or param.default is None or isinstance(param.default, (list, tuple)):
        return ""  # --x/--no-x shows which one; a layered or absent default is written in the help
    return str(getattr(param.default, "value", param.default))


def test_help_of_every_command_shows_every_default(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    group = typer.main.get_command(app)
    assert len(group.commands) >= 12
    missing = []
    for name, command in group.commands.items():
        capsys.readouterr()
        assert main([name, "--help"]) == 0
        text = capsys.readouterr().out
        blocks = _help_blocks(text)
        for param in command.params:
            if param.param_type_name != "option" or param.hidden or param.name == "help":
                continue
            block = blocks.get(param.opts[0])
            assert block is not None, (name, param.opts, text)
            expected = _expected_default(param)
            if expected is None:
                continue
            shown = block.count("[default:") + block.count("[required")
            if shown == 0 or re.sub(r"\s+", "", expected) not in re.sub(r"\s+", "", block):
                missing.append(f"{name} {param.opts[0]}: {block.strip()}")
            elif shown > 1:
                missing.append(f"{name} {param.opts[0]} shows its default twice: {block.strip()}")
    assert not missing, "\n".join(missing)


def test_help_text_in_brackets_is_not_eaten(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["scan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Zone of times given without one [default: UTC]" in re.sub(r"\s+", " ", out)
    assert "(?P<value>...)" in out


def test_command_list_keeps_each_summary_whole_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "..." not in out.split("Commands:")[1]
    flat = re.sub(r"\s+", " ", out)
    for name, command in typer.main.get_command(app).commands.items():
        first = re.sub(r"\s+", " ", (command.help or "").strip().split("\n\n")[0])
        assert f"{name} {first}" in flat, name


# -- issue 23 item 6: show fits 80 columns and counts the scan's builds --------------------------------

def test_show_fits_80_columns_and_counts_the_scans_builds(hunt, shown):
    out = shown
    builds = next(line for line in hunt["scan"].splitlines() if " for 9 instants " in line)
    assert not builds.startswith("0 builds")
    assert builds in out.splitlines()  # the scan's builds, read from the store, not this command's (none)
    header = next(line for line in out.splitlines() if line.startswith("time (UTC)"))
    assert header.split("┃")[-1].strip() == "step" and "metric (n=2)" in header  # each point has 2 runs
    for line in out.splitlines():  # every line fits but a command to paste, which stays whole
        assert len(line) <= 80 or line.startswith("  hourly "), line
    commands = [line.strip() for line in out.splitlines() if line.startswith("  hourly bisect ")]
    assert all(shlex.split(c)[:2] == ["hourly", "bisect"] for c in commands)


def test_scan_table_with_an_edge_mark_fits_80_columns():
    from hourly.model import PointResult, ScanReport
    from hourly.render.console import HourlyConsole
    from hourly.render.scan import scan_table
    points = [PointResult(f"2023-08-24T0{i}:00:00Z", f"{i}" * 40, "a" * 40, "ok", 577.1, [577.0, 577.1, 577.2 + i])
              for i in range(3)]
    for mark in ("▼ -12.3% edge ✔", "▼ -12.3% outlier", "▼ -12.3% edge"):
        buf = io.StringIO()
        con = HourlyConsole(file=buf, width=80)
        con.print(scan_table(ScanReport(points, 3, 0), {2: mark}))
        assert max(len(line) for line in buf.getvalue().splitlines()) <= 80, buf.getvalue()
        assert mark in buf.getvalue()
