"""The jaxlib gate of ``--only jax`` (issue 33): a JAX commit whose own check refuses the installed
jaxlib is untestable, and the terminal says why (never "untestable; log None"); an environment that
patches or shims that check (some containers do) runs them with ``--no-jaxlib-gate``, and every
record of the hunt says the gate was overridden. Real git, a real stand-in jaxlib wheel in a real
venv, real pip builds of the jax package, real SQLite."""

from __future__ import annotations

import json
import sqlite3

from test_only import venv_with_jaxlib

from hourly.cli import main
from hourly.demo.repos import Change
from hourly.demo.split import JAXLIB_VERSION, jax_base_files, jax_version_py, write_bench

#: JAX's import-time check (jax/_src/lib/__init__.py) that refuses a jaxlib newer than itself
NEWER_CHECK = ("  msg = (f'jaxlib version {jaxlib_version} is newer than and '\n"
               "         f'incompatible with jax version {jax_version}. Please '\n")
SLOW = "Remove trivial execution from jax (slower dispatch)"
HISTORY = [
    Change("jax", "2023-08-24T01:00:00Z", "[lax] loop error messages", {"jax/_src/lax/control_flow/loops.py": "# loops\n"}),
    Change("jax", "2023-08-24T02:00:00Z", SLOW, {"jax/_src/interpreters/pxla.py": "# pxla\n",
                                                  "jax/perf/dispatch.txt": "0.9\n"}),
    Change("jax", "2023-08-24T03:00:00Z", "Document the pjit cache", {"docs/pjit.md": "pjit\n"}),
]


def base() -> dict[str, str]:
    """A JAX (0.4.13) older than the installed jaxlib, whose import check refuses it."""
    files = jax_base_files()
    files["jax/version.py"] = jax_version_py(version="0.4.13", minimum_jaxlib="0.4.10")
    files["jax/_src/lib/__init__.py"] = NEWER_CHECK
    return files


def run(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def common(made, python, bench, work) -> list[str]:
    return ["--only", "jax", "--jax-repo", str(made.jax), "--python", python, "--bench-cmd", f"python3 {bench}",
            "--workdir", str(work), "--warmup-runs", "0"]  # no check reads a warm-up run


def test_a_window_the_gate_refuses_says_why_in_both_modes(tmp_path, capsys, repos_cache):
    made = repos_cache(tmp_path / "repos", HISTORY, base={"jax": base()})  # made once, copied
    python = venv_with_jaxlib(tmp_path / "env")
    bench = write_bench(tmp_path / "bench")
    for mode in ("metric", "exit"):
        code, _, err = run(capsys, ["scan", "--from", "Aug 24 2023 00:30", "--to", "Aug 24 2023 02:30", "--mode", mode,
                                    *common(made, python, bench, tmp_path / f"work-{mode}")])
        assert code == 1, err
        line = err.strip().splitlines()[-1]
        assert "log None" not in err and "Traceback" not in err
        assert f"this jax (0.4.13) refuses a newer jaxlib at import, the installed jaxlib is {JAXLIB_VERSION}" in line
        assert "--no-jaxlib-gate" in line  # the way through, for an environment that runs them anyway


def test_no_jaxlib_gate_runs_the_refused_commits_and_every_record_says_so(tmp_path, capsys, repos_cache):
    made = repos_cache(tmp_path / "repos", HISTORY, base={"jax": base()})  # made once, copied
    python = venv_with_jaxlib(tmp_path / "env")
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    # the two states around the slower commit (both refused by the gate); the step at the window's
    # edge is not measured again by the scan: the bisection confirms it
    args = ["--from", "Aug 24 2023 01:30", "--to", "Aug 24 2023 02:30", *common(made, python, bench, work),
            "--no-confirm-edges"]
    code, out, err = run(capsys, ["scan", *args, "--no-jaxlib-gate", "--json"])
    # two pairs of one run each: the step rests on an assumed noise, named and no answer (exit 1)
    assert code == 1 and "cannot tell whether the step above is real" in err, err
    scan = json.loads(out)
    assert {p["status"] for p in scan["points"]} == {"ok"}  # none untestable: the environment runs them
    assert scan["pinned"]["jaxlib_gate"] == "overridden"
    code, shown, err = run(capsys, ["show", "--workdir", str(work)])
    assert code == 1 and "cannot tell whether the step above is real" in err, err
    assert "jaxlib gate overridden (--no-jaxlib-gate)" in " ".join(shown.split())  # wrapped at 80 columns
    with sqlite3.connect(work / "hourly.sqlite") as c:
        (pinned,) = c.execute("SELECT value FROM settings WHERE name='pinned'").fetchone()
    assert json.loads(pinned)["jaxlib_gate"] == "overridden"
    # the bisection reads the scan's settings: the gate stays overridden, and its answer says so
    code, out, err = run(capsys, ["bisect", "--json", "--workdir", str(work)])
    assert code == 0, err
    (a,) = json.loads(out)["regressions"]
    assert a["culprit"]["sha"] == made.shas[SLOW] and a["pinned"]["jaxlib_gate"] == "overridden"
    code, out, _ = run(capsys, ["bisect", "--workdir", str(work)])
    assert code == 0 and "jaxlib gate overridden (--no-jaxlib-gate)" in " ".join(out.split())
    code, _, err = run(capsys, ["report", "--workdir", str(work)])
    assert code == 0, err
    md = (work / "report" / "report.md").read_text()
    assert "jaxlib gate overridden" in md and "--no-jaxlib-gate" in md
    # the gate on again in the same workdir: measurements of their own, none of the override's reused
    code, _, err = run(capsys, ["scan", *args])
    assert code == 1 and "refuses a newer jaxlib" in err.strip().splitlines()[-1]
    _, out, _ = run(capsys, ["show", "--workdir", str(work), "--json"])
    assert {p["status"] for p in json.loads(out)["points"]} == {"untestable"}
    # and the override's bisection is no answer of this (gated) scan: listed apart, labelled
    code, _, err = run(capsys, ["report", "--workdir", str(work), "--out", str(tmp_path / "gated-report")])
    assert code == 0, err
    md = (tmp_path / "gated-report" / "report.md").read_text()
    assert "## Bisected culprits" not in md
    assert "measured under: the jaxlib gate overridden (--no-jaxlib-gate)" in md


def test_a_bisection_by_flags_whose_end_the_gate_refuses_says_why_once_and_the_way_through(tmp_path, capsys,
                                                                                           repos_cache):
    """`bisect --good --bad` straight from flags once said "has no metric (untestable: untestable: ...)"
    with no word of --no-jaxlib-gate."""
    made = repos_cache(tmp_path / "repos", HISTORY, base={"jax": base()})
    python = venv_with_jaxlib(tmp_path / "env")
    bench = write_bench(tmp_path / "bench")
    for mode in ("metric", "exit"):
        code, _, err = run(capsys, ["bisect", "--good", "2023-08-24T00:30Z", "--bad", "2023-08-24T02:30Z", "--mode", mode,
                                    *common(made, python, bench, tmp_path / f"work-{mode}")])
        assert code == 1, err
        line = " ".join(err.strip().splitlines()[-1].split())
        assert "untestable: untestable" not in err and "Traceback" not in err
        assert (f"is untestable: this jax (0.4.13) refuses a newer jaxlib at import, the installed jaxlib is "
                f"{JAXLIB_VERSION} — pass --good at a state the installed jaxlib runs; --no-jaxlib-gate") in line, line
