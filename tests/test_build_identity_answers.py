"""Answers measured under another build are never this build's answer (issue 33, item 3): a scan
with a build command that fails on the culprit, its bisection (a range), the same scan again with
a fixed build command, its bisection (the culprit). The report speaks for the build it shows and
lists the other build's answer apart, labelled with that build; ``hourly shell bad`` takes the
current build's answer. The demo's real repositories, builds, wheels and SQLite."""

from __future__ import annotations

import json
import re
import subprocess

from test_manual import env, hourly

from hourly.cli import main

FUSION = "[XLA:GPU] Change priority fusion heuristic"


def run(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def section(md: str, heading: str) -> str:
    """The markdown under ``## heading`` up to the next ``## `` heading."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    assert m, f"no section {heading!r} in:\n{md}"
    return m.group(1)


def test_the_report_shows_the_current_builds_answer_and_labels_the_other_builds_apart(capsys, scan_args, made,
                                                                                       tmp_path):
    fusion = made.shas[FUSION]
    broken = tmp_path / "broken-build.sh"  # fails on the culprit's XLA commit, as a build does on a bad day
    broken.write_text(f'#!/bin/bash\nif [ "$HOURLY_XLA_SHA" = {fusion} ]; then echo "ERROR: fetch failed"; exit 1; fi\n'
                      f'exec {made.build_script} "$@"\n')
    broken.chmod(0o755)
    work = tmp_path / "work"
    first = scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json")
    first[first.index("--build-cmd") + 1] = str(broken)
    run(capsys, first)
    (old,) = json.loads(run(capsys, ["bisect", "--json", "--workdir", str(work)]))["regressions"]
    assert old["culprit"] is None and fusion in old["range"]
    run(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json"))  # the fixed build command
    (new,) = json.loads(run(capsys, ["bisect", "--json", "--workdir", str(work)]))["regressions"]
    assert new["culprit"]["sha"] == fusion

    run(capsys, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    step = section(md, "1. Regression of " + md.split("## 1. Regression of ", 1)[1].split("\n", 1)[0])
    assert f"**culprit: xla [`{fusion[:12]}`]" in step and "no single culprit" not in step
    culprits = section(md, "Bisected culprits")
    assert culprits.count("### ") == 1 and fusion[:12] in culprits and "no single culprit" not in culprits
    other = section(md, "Answers measured under another build (not this report's)")
    assert other.count("### ") == 1 and "no single culprit" in other
    assert f"build command `{broken}`" in other  # labelled with the build it was measured under
    assert md.index("Bisected culprits") < md.index("under another build")

    # hourly shell bad: the first bad state of this build's answer (the culprit), not the range's
    got = subprocess.run(hourly("shell", "bad", "--workdir", str(work), "--", "python", "-c",
                                "import jax_demo; print('XLA', jax_demo.XLA_SHA)"),
                         capture_output=True, text=True, env=env(), timeout=300)
    assert got.returncode == 0, got.stderr
    assert f"XLA {fusion}" in got.stdout


def test_a_hunt_with_another_build_command_does_not_reuse_the_stored_answer():
    """``hourly hunt`` stores each window's answer under the window's key; a hunt again with another
    ``--build-cmd`` took the other build's answer from there and reported it as its own."""
    from hourly.hunt.run import HuntWindow
    from hourly.model import NightlyPoint, Status
    a = NightlyPoint("2023-08-22", "img:22", Status.OK, value=100.0, xla="a" * 40, jax="b" * 40)
    b = NightlyPoint("2023-08-23", "img:23", Status.OK, value=80.0, xla="c" * 40, jax="d" * 40)
    w = HuntWindow(a, b, "regression")
    default = w.key("k", "bad")
    assert w.key("k", "bad", None, None) == default  # keys of hunts stored before stay theirs
    assert len({default, w.key("k", "bad", None, "/opt/broken-build.sh"), w.key("k", "bad", None, "build-jax.sh --fixed")}) == 3
