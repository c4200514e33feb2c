"""Every option defined once, one encoder of settings back into a command line, and the usage
errors (issue 34 items 3 and 4, issue 33's leaked secret and rough edges).

The CLI runs for real (``hourly.cli.main``, its top-level handler, in the test's process) over the
demo's repositories; the registry and the encoder are plain data and functions, checked as such."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
from enum import Enum
from pathlib import Path

import pytest
from test_settings_strict import hourly as in_process

from hourly import options
from hourly.cli import main
from hourly.options import BY_NAME, OPTIONS, TAKES

HOURLY = Path(__file__).resolve().parent.parent / "hourly"


def run_cli(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def hourly(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``hourly ARGS`` from ``cwd`` through its top-level handler, in this process (a process per call
    cost ~0.3 s of CPU importing hourly; test_settings_strict checks the process once)."""
    return in_process(*args, cwd=cwd)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hourly: error: "), err
    return lines[0]


# -- item 3: every flag declared once ----------------------------------------------------------

def test_every_flag_is_declared_once_and_every_command_takes_its_options_from_there():
    flags = [o.flag for o in OPTIONS] + [o.off for o in OPTIONS if o.off]
    assert len(flags) == len(set(flags))
    assert len({o.name for o in OPTIONS}) == len(OPTIONS)
    from typer.main import get_command

    from hourly.cli import app
    commands = get_command(app).commands  # type: ignore[attr-defined]
    assert set(commands) == set(TAKES)
    for name, cmd in commands.items():
        opts = [p for p in cmd.params if p.param_type_name == "option" and p.name != "help"]
        assert [p.name for p in opts] == list(TAKES[name]), name  # in TAKES' order, nothing else
        for p in opts:
            declared = options.option(name, p.name)
            assert p.opts[0] == declared.flag and list(p.secondary_opts) == ([declared.off] if declared.off else [])
            assert p.help.startswith(declared.help), (name, p.name)
            assert p.multiple == declared.repeatable


def test_no_option_is_declared_outside_the_registry():
    # typer options are made in one place (commands/common.typer_option), from hourly/options.py
    found = {str(p.relative_to(HOURLY)): re.findall(r"(?:typer\.Option|\bOpt)\(.*", p.read_text())
             for p in HOURLY.rglob("*.py")}
    assert {k: len(v) for k, v in found.items() if v} == {"commands/common.py": 1, "cli.py": 1}
    assert '"--version"' in found["cli.py"][0]  # the app's own flag, before any command


def test_a_command_parameter_that_is_no_option_of_it_is_refused_when_hourly_starts():
    from hourly.commands.common import command

    def nightly(from_=None, to=None, flags=None, mode=None):  # nightly takes no --mode
        pass
    with pytest.raises(TypeError, match=r"\['mode'\] are no options"):
        command("nightly")(nightly)


def test_help_shows_each_flag_in_its_declared_panel(capsys):
    assert main(["releases", "--help"]) == 0
    out = capsys.readouterr().out
    build = out[out.index("\nBuild:"):out.index("\nBenchmark:")]
    assert "--with" in build and "--installer" in build and "--from" not in build


# -- the encoder ---------------------------------------------------------------------------------

def test_the_encoder_writes_each_kind_of_value_and_refuses_an_option_the_command_lacks():
    argv = options.argv("scan", {"from_": "Aug 24 2023", "higher_is_better": False, "sync": False, "force": True,
                                 "env": ["A=1", "B=2"], "bench_timeout": 3600.0, "warmup_runs": 0, "tz": None})
    assert argv == ["hourly", "scan", "--from", "Aug 24 2023", "--lower-is-better", "--no-sync", "--force",
                    "--env", "A=1", "--env", "B=2", "--bench-timeout", "3600", "--warmup-runs", "0"]
    with pytest.raises(KeyError, match="hourly nightly takes no option 'good'"):
        options.argv("nightly", {"good": "x"})


def test_the_printed_line_redacts_secret_looking_values_and_the_run_argv_keeps_them():
    values = {"bench_cmd": "env GH_TOKEN=inl1ne python3 b.py", "env": ["API_TOKEN=s3cret", "N=4"]}
    line = options.command_line("scan", values)
    assert "s3cret" not in line and "inl1ne" not in line
    words = shlex.split(line)
    assert words[words.index("--env") + 1] == "API_TOKEN=<redacted>" and "N=4" in words
    assert "GH_TOKEN=<redacted>" in words[words.index("--bench-cmd") + 1]
    assert "API_TOKEN=s3cret" in options.argv("scan", values)  # what runs must carry the value
    from hourly.text.privacy import redact_argv
    assert redact_argv(["--env=AWS_SECRET_ACCESS_KEY=x", "--slurm-arg=--export=ALL,MY_TOKEN=y", "PATH=/bin"]) == [
        "--env=AWS_SECRET_ACCESS_KEY=<redacted>", "--slurm-arg=--export=ALL,MY_TOKEN=<redacted>", "PATH=/bin"]


def test_a_printed_scan_command_runs_as_the_settings_it_came_from(made, venv_python, tmp_path, capsys):
    from hourly.measure.settings import effective
    from hourly.scan.table import scan_command
    flags = dict(from_="Aug 24 2023 12:00", to="Aug 24 2023 13:00", xla_repo=str(made.xla), jax_repo=str(made.jax),
                 build_cmd=str(made.build_script), python=venv_python, bench_cmd="python3 b.py",
                 workdir=str(tmp_path / "w"), first_parent=False, repeats=3, env=["N=4"], bench_timeout=90.0)
    s = effective(flags)[0]
    line = scan_command(s)
    code, out, err = run_cli(capsys, [*shlex.split(line)[1:], "--dry-run", "--json"])
    assert code == 0, err
    again = effective({k: v for k, v in _flags_of(shlex.split(line)[2:]).items()})[0]
    assert again.as_dict() == s.as_dict()


def _flags_of(words: list[str]) -> dict:
    """The values a command line gives, by option name (as the scan reads them)."""
    out: dict = {}
    i = 0
    while i < len(words):
        opt = options.BY_FLAG.get(words[i]) or next(o for o in OPTIONS if o.off == words[i])
        if opt.is_flag:
            out[opt.name] = words[i] == opt.flag
            i += 1
            continue
        value = words[i + 1]
        typed = int(value) if opt.type is int else float(value) if opt.type is float else value
        out[opt.name] = out.get(opt.name, []) + [typed] if opt.repeatable else typed
        i += 2
    return out


# -- issue 33: the secret, over every place a resume or next command is printed -------------------

SECRET, INLINE = "s3cret", "inl1ne"


def test_no_printed_command_carries_a_secret_looking_value(capsys, scan_args, tmp_path):
    """The bug: `--env API_TOKEN=s3cret` came back in the clear in the incomplete-scan note, --json's
    "resume", two error messages and the report's incomplete-scan section."""
    work = tmp_path / "work"
    never = f"env GH_TOKEN={INLINE} python3 -c 'raise SystemExit(1)'"  # a benchmark that never works:
    argv = scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--bench-cmd", never,  # the scan stops
                     "--env", f"API_TOKEN={SECRET}")                                   # at its first pair
    seen = []
    code, out, err = run_cli(capsys, argv)
    assert code == 1
    seen += [out, err]
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work)])  # the note, and the error
    flat = " ".join((out + err).split())  # lines wrap at the terminal's width
    assert code == 1 and "run the same scan again to resume: hourly scan" in flat and "resume it: hourly scan" in flat
    seen += [out, err]
    code, out, err = run_cli(capsys, ["show", "--json", "--workdir", str(work)])
    resume = json.loads(out)["resume"]
    assert "API_TOKEN=<redacted>" in shlex.split(resume)
    seen += [out, err]
    # pasted as it is, it would give the benchmark the word <redacted>: refused, saying how to pass them
    pasted = shlex.split(resume)[1:]
    code, out, err = run_cli(capsys, pasted)
    flat = " ".join(err.split())
    assert code == 2 and out == "" and "passes the word <redacted> where GH_TOKEN's value goes" in flat, err
    assert "export GH_TOKEN=<its value> and write $GH_TOKEN" in flat
    i = pasted.index("--bench-cmd")
    code, out, err = run_cli(capsys, pasted[:i] + pasted[i + 2:] + ["--bench-cmd", "python3 b.py"])
    flat = " ".join(err.split())
    assert code == 2 and "--env API_TOKEN=<redacted> passes the word <redacted>" in flat, err
    assert "export API_TOKEN=<its value> and pass --env API_TOKEN" in flat
    seen += [out, err]
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work)])
    assert code == 1 and "resume the scan with the same command" in err
    seen += [out, err]
    assert main(["report", "--workdir", str(work), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Incomplete scan" in md and resume in md and "## Reproduce" in md
    seen += [md, *capsys.readouterr()]
    # the line printed after Ctrl-C or a stop signal, with the command as it was given
    from hourly.cli import stopped_line
    seen.append(stopped_line(130, argv))
    assert "resume with" in seen[-1] and "API_TOKEN=<redacted>" in seen[-1]
    seen += _next_commands()
    for text in seen:
        assert SECRET not in text and INLINE not in text, text


def _next_commands() -> list[str]:
    """The commands the daily and the release level hand over to, and the release report's."""
    from hourly.model import NightlyPoint, ReleasePoint, Status
    from hourly.nightly.plan import Boundary, NightlySettings, next_commands
    from hourly.releases.plan import ReleaseGap, ReleaseSettings, ReleaseStep, gap_command
    from hourly.releases.plan import next_commands as release_next
    from hourly.render.releases import command_line
    bench = f"env GH_TOKEN={INLINE} python3 /dir/b.py"
    n = NightlySettings("2023-08-20", "2023-08-26", bench_cmd=bench, env=[f"API_TOKEN={SECRET}"])
    good = NightlyPoint("2023-08-21", "img", Status.OK, value=100.0)
    bad = NightlyPoint("2023-08-22", "img", Status.OK, value=80.0)
    lines = next_commands(Boundary(good, bad, "slower", -0.2), n)
    r = ReleaseSettings("0.4.13", "0.4.20", bench_cmd=bench, env=[f"API_TOKEN={SECRET}"], jax_repo="/src/jax")
    before = ReleasePoint("0.4.13", "0.4.13", "2023-07-01T00:00:00Z", Status.OK, 100.0)
    after = ReleasePoint("0.4.14", "0.4.13", "2023-07-20T00:00:00Z", Status.OK, 80.0)
    lines += release_next(ReleaseStep("slower", before, after), r)
    lines.append(gap_command(ReleaseGap([after], before, None), r) or "")
    lines.append(command_line(r))
    assert len(lines) == 7 and "API_TOKEN=<redacted>" in lines[-1]
    return lines


# -- issue 33: usage errors exit 2; hourly.toml's mistakes name the file ------------------------

_BAD = {"x>=0": "-1", "x>=1": "0", "x>=10": "9", "0<=x<=1": "2", "0<=x<=3": "4"}
_BAD_OF = {id(options.POSITIVE): "0", id(options.FRACTION): "5", id(options.RELATIVE): "-1",
           id(options.KEY_VALUE): "no pe"}  # a NAME alone is taken (its value from the environment)
#: the arguments a command needs before its options are read
_ARGS = {"mark": ["good"], "shell": ["good"], "compare-profiles": ["a", "b"], "trace": [], "bench": ["b.py"]}


def _refuses_empty_alone(rule) -> bool:
    try:
        return bool(rule.test("")) and not rule.test("x")
    except TypeError:  # a number's rule
        return False


def _walk():
    for command, names in TAKES.items():
        for name in names:
            opt = options.option(command, name)
            if opt.rule is None:
                continue
            bad = _BAD.get(opt.rule.bounds) or _BAD_OF.get(id(opt.rule))
            if bad is None and _refuses_empty_alone(opt.rule):  # a path (options.a_place): only "" is refused
                bad = ""
            if bad is None and isinstance(opt.type, type) and issubclass(opt.type, Enum):  # a choice click takes
                bad = next(m.value for m in opt.type if opt.problem(m.value))               # and the rule refuses
            yield command, opt, "nope" if bad is None else bad


@pytest.mark.parametrize("command,opt,bad", list(_walk()), ids=lambda v: getattr(v, "flag", v))
def test_every_value_an_option_refuses_is_a_one_line_usage_error(capsys, tmp_path, command, opt, bad):
    argv = [command, *_ARGS.get(command, []), f"{opt.flag}={bad}"]
    if command == "trace":
        argv += ["--", "true"]
    code, out, err = run_cli(capsys, argv)
    assert code == 2, err
    line = one_line(err)
    assert line.startswith(f"hourly: error: {opt.flag} ") and f"pass e.g. {opt.flag} {opt.rule.example}" in line
    assert not list(tmp_path.glob("hourly-work*"))


def test_the_walk_covers_the_flags_the_issue_names():
    walked = {(c, o.flag) for c, o, _ in _walk()}
    assert {("scan", "--repeats"), ("bisect", "--min-change"), ("bisect", "--max-repeats"), ("hunt", "--min-change"),
            ("scan", "--workers"), ("nightly", "--every"), ("explain", "--step"), ("detect", "--min-change")} <= walked


@pytest.mark.parametrize("argv,message", [
    (["scan", "--repeats", "0"], "--repeats must be 1 or more, not 0"),
    (["bisect", "--min-change", "5"], "--min-change must lie between 0 and 1 (a fraction of the level), not 5.0"),
    (["scan", "--mode", "printed"], "--mode must be metric or exit, not printed"),
    (["scan", "--mode", "exit", "--metrics", "all"], "--mode exit and --metrics cannot go together"),
    (["bisect", "--mode", "exit", "--metrics", "all"], "--mode exit and --metrics cannot go together"),
    (["scan", "--workers", "2"], "--workers 2 needs --executor slurm"),
    (["profile", "--good", "x"], "--good and --bad go together"),
    (["hunt", "--good-date", "2023-08-01"], "--good-date and --bad-date go together"),
    (["nightly"], "the nightly scan needs dates"),
    (["container"], "which nightly?"),
    (["releases", "--from", "0.4.13", "--to", "0.4.14", "--bench-cmd", "true", "--index-url", "http://x",
      "--find-links", "."], "--index-url and --find-links both name where wheels come from"),
])
def test_usage_errors_exit_2_in_one_line(capsys, tmp_path, argv, message):
    code, _, err = run_cli(capsys, [*argv, "--workdir", str(tmp_path / "w")])
    assert code == 2 and message in one_line(err), err
    assert not (tmp_path / "w").exists()


def test_a_single_valued_flag_given_twice_is_refused(tmp_path):
    """The bug: two --python kept the last one silently."""
    r = hourly("scan", "--python", "/usr/bin/python3", "--python=/opt/py", "--dry-run", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert one_line(r.stderr) == ("hourly: error: --python given 2 times (/usr/bin/python3, /opt/py), but it takes "
                                  "one value — pass --python once")
    r = hourly("scan", "--force", "--force", cwd=tmp_path)
    assert r.returncode == 2 and "--force given 2 times, but it takes one value" in r.stderr
    # a repeatable flag may be repeated; what follows -- is someone else's
    r = hourly("scan", "--env", "A=1", "--env", "B=2", "--xla-repo", str(tmp_path / "none"), cwd=tmp_path)
    assert r.returncode == 1 and "given 2 times" not in r.stderr
    r = hourly("shell", "good", "--workdir", str(tmp_path / "none"), "--", "x", "--workdir", "y", cwd=tmp_path)
    assert "given 2 times" not in r.stderr
    r = hourly("scan", "--bench-cmd", "x API_TOKEN=s3cret", "--bench-cmd", "y", cwd=tmp_path)
    assert r.returncode == 2 and "s3cret" not in r.stderr


def test_a_value_the_settings_file_gives_is_checked_and_named_with_the_file(tmp_path):
    (tmp_path / "hourly.toml").write_text("repeats = 0\n")
    r = hourly("config", cwd=tmp_path)
    assert r.returncode == 1
    assert one_line(r.stderr) == "hourly: error: hourly.toml: repeats = 0 must be 1 or more — write e.g. repeats = 1"
    (tmp_path / "hourly.toml").write_text("cache_size = true\n")
    line = one_line(hourly("config", cwd=tmp_path).stderr)
    assert "hourly.toml: cache_size is a boolean true" in line and '"true"' not in line
    assert 'cache_size = "50G"' in line
    (tmp_path / "hourly.toml").write_text('pairing = "pinned"\n')
    assert "hourly.toml: pairing = \"pinned\" must be time or pin" in hourly("config", cwd=tmp_path).stderr


# -- hourly.toml configures every command's options ------------------------------------------------

def test_a_commands_table_gives_the_options_its_command_line_left_out(tmp_path):
    from hourly.commands.common import _resolve
    config = tmp_path / "conf.toml"
    config.write_text("[bisect]\nmax_repeats = 30\nmin_change = 0.05\nrepeats = 3\n"
                      "[hunt]\nmax-repeats = 9\ndates = \"search\"\n")
    values = {"max_repeats": 20, "min_change": 0.02, "config": str(config)}
    _resolve("bisect", values, given={"config"})
    assert values["max_repeats"] == 30 and values["min_change"] == 0.05 and values["repeats"] == 3
    values = {"max_repeats": 40, "min_change": 0.02, "config": str(config)}
    _resolve("bisect", values, given={"config", "max_repeats"})  # the flag wins
    assert values["max_repeats"] == 40 and values["min_change"] == 0.05
    values = {"config": str(config)}
    _resolve("hunt", values, given={"config"})
    assert values == {"config": str(config), "max_repeats": 9, "dates": "search"}


def test_a_commands_table_reaches_the_command(tmp_path):
    (tmp_path / "hourly.toml").write_text('[nightly]\nimage = "ghcr.io/nvidia/jax:latest"\n')
    r = hourly("nightly", "--from", "2023-08-20", "--to", "2023-08-22", "--workdir", "w", cwd=tmp_path)
    assert "--image 'ghcr.io/nvidia/jax:latest' has no {date}" in one_line(r.stderr)
    (tmp_path / "hourly.toml").write_text("[bisect]\nmin_change = 5\n")
    r = hourly("bisect", "--workdir", "w", cwd=tmp_path)
    assert r.returncode == 1 and "hourly.toml: [bisect] min_change = 5 must lie between 0 and 1" in one_line(r.stderr)
    assert not (tmp_path / "w").exists()


def test_hourly_config_shows_each_commands_table_with_where_each_value_came_from(capsys, tmp_path):
    """`hourly config --command NAME`: every option NAME's table may set, as NAME would take it — a
    flag, its table, the shared settings (for the scan settings of a command that reads them, and
    workdir and the direction for every command), the default — and where each came from."""
    (tmp_path / "hourly.toml").write_text('python = "/opt/py/bin/python"\nrepeats = 2\nenv = ["HF_TOKEN=s3cret"]\n'
                                          "higher_is_better = false\n"
                                          "[bisect]\nmax_repeats = 30\nrepeats = 5\n"
                                          "[nightly]\nevery = 2\n[explain]\nrepeats = 4\n")

    def table(*argv):
        code, out, err = run_cli(capsys, ["config", "--json", *argv])
        assert code == 0, err
        got = json.loads(out)
        return got["command"], {k: (v["value"], v["from"]) for k, v in got["settings"].items()}
    name, bisect = table("--command", "bisect")
    assert name == "bisect" and set(bisect) == {o.name for o in options.options_of("bisect") if o.toml}
    assert bisect["max_repeats"] == (30, "hourly.toml [bisect]") and bisect["repeats"] == (5, "hourly.toml [bisect]")
    assert bisect["python"] == ("/opt/py/bin/python", "hourly.toml")  # the shared settings, which bisect reads
    assert bisect["env"] == (["HF_TOKEN=<redacted>"], "hourly.toml") and bisect["higher_is_better"] == (False, "hourly.toml")
    assert bisect["min_change"] == (0.02, "default") and bisect["mode"] == (None, "default")  # bisect's own --mode
    assert bisect["cache_dir"][0] and bisect["cache_dir"][1] in ("default", "$HOURLY_CACHE_DIR")  # the folder used
    _, flagged = table("--command", "bisect", "--repeats", "7")
    assert flagged["repeats"] == (7, "flag")
    _, nightly = table("--command", "nightly")  # the daily level reads its own options, not the scan's
    assert nightly["every"] == (2, "hourly.toml [nightly]") and nightly["repeats"] == (1, "default")
    assert nightly["env"][1] == "default" and nightly["higher_is_better"] == (False, "hourly.toml")
    assert nightly["bench_cmd"] == ("/bin/bash /dir/test.sh", "default")
    _, explain = table("--command", "explain")
    assert explain["repeats"] == (4, "hourly.toml [explain]") and explain["python"] == ("/opt/py/bin/python", "hourly.toml")
    code, out, _ = run_cli(capsys, ["config", "--command", "bisect"])
    assert code == 0 and "hourly bisect settings" in out and "hourly.toml [bisect]" in out and "s3cret" not in out
    code, _, err = run_cli(capsys, ["config", "--command", "report", "--repeats", "3"])
    assert code == 2 and "hourly report takes no --repeats" in one_line(err)
    code, _, err = run_cli(capsys, ["config", "--command", "version"])
    assert code == 2 and "--command must be a command with a table in hourly.toml" in one_line(err)


@pytest.mark.parametrize("text,line", [
    ("[bisect]\nmax_repeat = 3\n", "hourly.toml: [bisect] unknown setting 'max_repeat' — did you mean max_repeats? "
                                   "(`hourly bisect --help` lists its options)"),
    ('[bisect]\nmax_repeats = "30"\n', "hourly.toml: [bisect] max_repeats is a string \"30\", expected an integer — "
                                       "write max_repeats = 30, without quotes"),
    ("[bisekt]\nmax_repeats = 3\n", "hourly.toml: unknown section [bisekt] — did you mean [bisect]?"),
    ('[nightly]\nimage = 3\n', "hourly.toml: [nightly] image is an integer 3, expected a string"),
    ('[scan]\nmax_instants = 0\n', "hourly.toml: [scan] max_instants = 0 must be 1 or more"),
])
def test_a_commands_table_is_read_strictly(tmp_path, text, line):
    (tmp_path / "hourly.toml").write_text(text)
    r = hourly("config", cwd=tmp_path)  # any command that reads the file reads all of it
    assert r.returncode == 1 and one_line(r.stderr).startswith(f"hourly: error: {line}"), r.stderr


# -- settings: immutable, the key a declared field ---------------------------------------------------

def test_settings_are_immutable_and_carry_their_key_through_replace(made, tmp_path):
    from hourly.measure.settings import effective, keyed
    s = effective({"xla_repo": str(made.xla), "jax_repo": str(made.jax), "bench_cmd": "python3 b.py"})[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.repeats = 3  # type: ignore[misc]
    with pytest.raises(RuntimeError, match="keyed"):
        s.bench_key()  # never keyed: a programming error, not a silent computation
    k = keyed(s)
    assert k.bench_key() == keyed(s).bench_key() == keyed(k).bench_key()
    assert dataclasses.replace(k, higher_is_better=False).bench_key() == k.bench_key()  # not in the key
    moved = dataclasses.replace(k, env=["XLA_FLAGS=--xla_gpu_autotune_level=0"])
    with pytest.raises(RuntimeError):
        moved.bench_key()  # derived with another benchmark: its old key would mix the two
    assert keyed(moved).bench_key() != k.bench_key()
    assert "key" not in k.as_dict() and "key_for" not in k.as_dict()


def test_bench_key_starts_no_process_keyed_does_once(made, venv_python, tmp_path):
    from hourly.adapters import proc
    from hourly.measure.settings import effective, keyed
    python = tmp_path / "bin" / "python3"  # a Python of its own path: its ABI is asked once
    python.parent.mkdir()
    python.symlink_to(venv_python)
    s = effective({"xla_repo": str(made.xla), "jax_repo": str(made.jax), "bench_cmd": "python3 b.py",
                   "python": str(python)})[0]
    before = proc.spawned
    k = keyed(s)
    assert proc.spawned == before + 1
    for _ in range(3):
        k.bench_key()
    assert proc.spawned == before + 1


def test_the_key_of_stored_settings_does_not_depend_on_the_order_of_calls(capsys, scan_args, tmp_path):
    from hourly.adapters.store import Store
    from hourly.measure.settings import MEASURE_KEY, stored_settings
    from hourly.scan.identity import check_store
    assert run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--json"))[0] == 0
    store = Store(tmp_path / "work")
    recorded = store.load_settings(MEASURE_KEY)["key"]
    s = stored_settings(store)
    assert s.bench_key() == recorded
    built = check_store(store, s, uses_scan=True)  # a new Settings: s keeps its key
    assert built.bench_key() == recorded and s.bench_key() == recorded
    assert stored_settings(store).bench_key() == recorded


# -- item 4: executors say what they can do ---------------------------------------------------------

def test_make_executor_leaves_its_flags_as_they_are_and_executors_say_what_they_can_do():
    from hourly.execute.executors import LocalExecutor, SlurmExecutor, make_executor
    flags = {"executor": None, "workers": None, "partition": None, "time": None, "gres": None, "slurm_arg": None,
             "repeats": 3}
    copy = dict(flags)
    assert isinstance(make_executor(flags), LocalExecutor)
    assert flags == copy
    local = LocalExecutor().capabilities
    assert local.here and local.parallel == 1 and not local.profiles and local.interleaves
    slurm = SlurmExecutor(4, slurm=object()).capabilities  # type: ignore[arg-type]  # never asked here
    assert not slurm.here and slurm.parallel == 4 and slurm.profiles
    assert not slurm.interleaves  # its jobs run on nodes of their own: paired rounds are the local executor's


def test_no_level_tests_an_executor_by_its_class():
    found = [str(p.relative_to(HOURLY)) for p in HOURLY.rglob("*.py")
             if re.search(r"isinstance\([^)]*(Local|Slurm)Executor", p.read_text())]
    assert found == []


def test_every_option_the_settings_file_takes_has_a_toml_kind():
    from hourly.measure.settings import FIELD_NAMES, _kind
    for name in FIELD_NAMES:
        assert _kind(BY_NAME[name]) in ("bool", "int", "float", "str", "list", "size")


def test_the_levels_next_commands_come_from_the_one_encoder_and_parse_as_they_were_set():
    """The daily and release levels' "measure each again" commands are written by options.command_line
    (secrets redacted) and hourly's own parser reads back the settings they came from: a redacted
    secret pasted as it is refused with how to pass it (``--env NAME``, the value in the environment)."""
    from typer.main import get_command

    from hourly.cli import app
    from hourly.errors import UsageError
    from hourly.nightly.plan import NightlySettings, nightly_command
    from hourly.releases.plan import ReleaseSettings, releases_command
    group = get_command(app)
    n = NightlySettings("2023-08-20", "2023-08-25", mounts=["/a:/dir"], env=["HF_TOKEN=s3cret", "A=1"], pull=False,
                        higher_is_better=False, timeout=3600.0, repeats=3, workdir="/w")
    argv = shlex.split(nightly_command(n, rerun=True))
    with pytest.raises(UsageError, match="export HF_TOKEN=<its value> and pass --env HF_TOKEN"):
        group.commands["nightly"].make_context("nightly", argv[2:])  # type: ignore[attr-defined]
    argv = ["HF_TOKEN" if w == "HF_TOKEN=<redacted>" else w for w in argv]
    got = group.commands["nightly"].make_context("nightly", argv[2:]).params  # type: ignore[attr-defined]
    assert (got["from_"], got["to"], got["repeats"], got["timeout"], got["mount"], got["pull"]) == \
        ("2023-08-20", "2023-08-25", 3, 3600.0, ["/a:/dir"], False)
    assert got["env"] == ["HF_TOKEN", "A=1"] and got["higher_is_better"] is False and got["rerun"]
    r = ReleaseSettings("0.4.1", "0.4.4", bench_cmd="python3 b.py", env=["API_KEY=s3cret"], with_=["numpy<2"],
                        pre=True, deps_as_of_release=False, timeout=60.0, installer="pip", workdir="/w")
    argv = shlex.split(releases_command(r))
    with pytest.raises(UsageError, match="pass --env API_KEY"):
        group.commands["releases"].make_context("releases", argv[2:])  # type: ignore[attr-defined]
    argv = ["API_KEY" if w == "API_KEY=<redacted>" else w for w in argv]
    got = group.commands["releases"].make_context("releases", argv[2:]).params  # type: ignore[attr-defined]
    assert (got["bench_cmd"], got["bench_timeout"], got["with_"], got["pre"], got["deps_today"], got["rerun"]) == \
        ("python3 b.py", 60.0, ["numpy<2"], True, True, False)
    assert got["env"] == ["API_KEY"] and got["installer"].value == "pip" and got["workdir"] == "/w"


def test_hourly_config_shows_the_settings_bisect_takes_from_the_workdirs_scan(capsys, scan_args, made, tmp_path):
    """`hourly config --workdir W --command bisect` said xla_repo "/opt/xla-source" and bench_cmd "not
    set" (default) for a workdir whose scan `hourly bisect --workdir W` takes them from."""
    work = tmp_path / "work"
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--repeats", "3",
                                             "--warmup-runs", "0"))
    assert code == 0, err

    def table(*argv):
        code, out, err = run_cli(capsys, ["config", "--json", "--workdir", str(work), *argv])
        assert code == 0, err
        return {k: (v["value"], v["from"]) for k, v in json.loads(out)["settings"].items()}
    shared = run_cli(capsys, ["config", "--json", "--workdir", str(work)])[1]
    assert json.loads(shared)["python"]["from"] == "default"  # the shared settings: no command's base
    scanned = scan_args()
    venv_python = scanned[scanned.index("--python") + 1]
    for command in ("bisect", "shell", "profile", "explain"):
        assert table("--command", command)["python"] == (venv_python, "stored scan")
    bisect = table("--command", "bisect")
    assert bisect["xla_repo"] == (str(made.xla), "stored scan") and bisect["jax_repo"] == (str(made.jax), "stored scan")
    assert bisect["bench_cmd"] == (f"python3 {made.bench_script}", "stored scan") and bisect["repeats"] == (3, "stored scan")
    assert table("--command", "shell")["xla_repo"] == (str(made.xla), "stored scan")
    assert table("--command", "bisect", "--repeats", "5")["repeats"] == (5, "flag")  # a flag still wins
    # the scan itself takes no base: a new scan into W needs its own --bench-cmd
    assert table("--command", "scan")["bench_cmd"] == (None, "default")
    # a workdir with no store: the defaults, and none is made
    code, out, err = run_cli(capsys, ["config", "--json", "--workdir", str(tmp_path / "none"), "--command", "bisect"])
    assert code == 0, err
    assert json.loads(out)["settings"]["bench_cmd"] == {"value": None, "from": "default"}
    assert not (tmp_path / "none").exists()
