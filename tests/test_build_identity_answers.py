"""Answers measured under another build are never this build's answer (issue 33, item 3): a scan
with a build command that fails on the culprit, its bisection (a range), the same scan again with
a fixed build command, its bisection (the culprit). The report speaks for the build it shows and
lists the other build's answer apart, labelled with that build; ``hourly shell bad`` takes the
current build's answer. The demo's real repositories, builds, wheels and SQLite."""

from __future__ import annotations

import json
import re

from hourly.cli import main

FUSION = "[XLA:GPU] Change priority fusion heuristic"


def run(capsys, argv: list[str], expect: int = 0) -> str:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == expect, err
    return out


def section(md: str, heading: str) -> str:
    """The markdown under ``## heading`` up to the next ``## `` heading."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    assert m, f"no section {heading!r} in:\n{md}"
    return m.group(1)


def test_the_report_shows_the_current_builds_answer_and_labels_the_other_builds_apart(capfd, scan_args, made,
                                                                                       tmp_path):
    fusion = made.shas[FUSION]
    broken = tmp_path / "broken-build.sh"  # fails on the culprit's XLA commit, as a build does on a bad day
    broken.write_text(f'#!/bin/bash\nif [ "$HOURLY_XLA_SHA" = {fusion} ]; then echo "ERROR: fetch failed"; exit 1; fi\n'
                      f'exec {made.build_script} "$@"\n')
    broken.chmod(0o755)
    work = tmp_path / "work"
    # the step at the window's edge is not measured again by the scans (test_scan's edge tests): the
    # bisections measure its states themselves; no check reads a warm-up run
    first = scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json", "--no-confirm-edges", "--warmup-runs", "0")
    first[first.index("--build-cmd") + 1] = str(broken)
    # two pairs of one run each (the culprit's own commit is no scanned pair): the scan's step rests on
    # an assumed noise (exit 1, "cannot tell"); the bisections measure its ends themselves
    run(capfd, first, expect=1)
    (old,) = json.loads(run(capfd, ["bisect", "--json", "--workdir", str(work)]))["regressions"]
    assert old["culprit"] is None and fusion in old["range"]
    # the fixed build command (the same two pairs: exit 1 again)
    run(capfd, scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json", "--no-confirm-edges",
                         "--warmup-runs", "0"), expect=1)
    (new,) = json.loads(run(capfd, ["bisect", "--json", "--workdir", str(work)]))["regressions"]
    assert new["culprit"]["sha"] == fusion

    run(capfd, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    step = section(md, "1. Regression of " + md.split("## 1. Regression of ", 1)[1].split("\n", 1)[0])
    assert f"**culprit: xla [`{fusion[:12]}`]" in step and "no single culprit" not in step
    culprits = section(md, "Bisected culprits")
    assert culprits.count("### ") == 1 and fusion[:12] in culprits and "no single culprit" not in culprits
    other = section(md, "Answers measured under another build (not this report's)")
    assert other.count("### ") == 1 and "no single culprit" in other
    assert f"build command `{broken}`" in other  # labelled with the build it was measured under
    assert md.index("Bisected culprits") < md.index("under another build")

    # hourly shell bad: the first bad state of this build's answer (the culprit), not the range's (in
    # this process: the command it runs writes to the inherited stdout, which capfd reads)
    capfd.readouterr()
    code = main(["shell", "bad", "--workdir", str(work), "--", "python", "-c",
                 "import jax_demo; print('XLA', jax_demo.XLA_SHA)"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert f"XLA {fusion}" in out


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


# -- explain and profile take the current build's answers (issue 33, item 3, as the report does) ------

def _answer(good: str, bad: str, culprit: str, xla: tuple[str, str]):
    from hourly.answers import Answer, AnswerWindow, Commit
    from hourly.model import Pair
    return Answer(AnswerWindow(good, bad, "flags"), "metric", "regression",
                  culprit=Commit("xla", xla[1], "a subject", "someone", bad, f"https://x/{xla[1]}"),
                  last_good=Pair(xla[0], "j" * 40), first_bad=Pair(xla[1], "j" * 40), confirmed=True)


def two_builds(made, tmp_path, finish_new: bool = True):
    """A workdir of `hourly bisect --good/--bad` alone (no scan) holding one answer measured with a
    broken build command (an older key) and, newest, the current build's bisection (finished or
    not): a real store, the demo's real repositories in its settings."""
    from hourly.adapters.store import Store
    from hourly.measure.settings import BISECT_SETTINGS, effective
    s = effective({"xla_repo": str(made.xla), "jax_repo": str(made.jax), "bench_cmd": "python3 bench.py",
                   "build_cmd": str(made.build_script), "workdir": str(tmp_path / "work")}, None)[0]
    store = Store(s.workdir)
    store.save_settings(BISECT_SETTINGS, s.as_dict())
    for key, cmd, (good, bad), xla, done in (
            ("k-old", "/opt/broken-build.sh", ("2023-08-24T12:00:00Z", "2023-08-24T15:00:00Z"), ("a" * 40, "b" * 40), True),
            ("k-new", str(made.build_script), ("2023-08-24T12:00:00Z", "2023-08-24T14:00:00Z"), ("a" * 40, "c" * 40),
             finish_new)):
        store.note_measure_key(key, {"bench": {"cmd": ["python3", "bench.py"]}, "build": {"cmd": [cmd]}})
        bid, _, _ = store.bisection(key, {"bench_key": key, "mode": "metric", "good_time": 0, "bad_time": 1,
                                          "good_xla": xla[0], "good_jax": "j" * 40, "bad_xla": xla[1],
                                          "bad_jax": "j" * 40})
        if done:
            store.finish_bisection(bid, _answer(good, bad, "", xla).to_json())
    return store, s


def test_explain_and_profile_take_the_current_builds_answers_and_say_what_they_left_out(made, tmp_path):
    from hourly.explain.plan import targets_from_store as explain_targets
    from hourly.measure.settings import stored_settings
    from hourly.profile.run import targets_from_store as profile_targets
    store, _ = two_builds(made, tmp_path)
    s = stored_settings(store)
    targets, left_out = explain_targets(store, s)
    assert [(t.step, t.bad.xla) for t in targets] == [(1, "c" * 40)]  # the broken build's culprit is not step 1
    assert left_out and "/opt/broken-build.sh" in left_out and "2023-08-24T12:00:00Z .. 2023-08-24T15:00:00Z" in left_out
    assert "left out 1 bisection answer measured under another build" in left_out
    profiled, said = profile_targets(store, s)
    assert [(t.name, t.bad.xla) for t in profiled] == [("regression-1", "c" * 40)] and said == left_out
    store2, _ = two_builds(made, tmp_path / "one", finish_new=True)
    with store2.transaction() as c:  # one build only: nothing left out, nothing said
        c.execute("DELETE FROM bisections WHERE bench_key='k-old'")
    assert explain_targets(store2, stored_settings(store2))[1] is None


def test_explain_and_profile_refuse_another_builds_answer_with_one_line(made, tmp_path, capsys):
    store, s = two_builds(made, tmp_path, finish_new=False)  # the current build's bisection has no answer yet
    for argv in (["explain", "--workdir", s.workdir], ["profile", "--workdir", s.workdir]):
        capsys.readouterr()
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "under this build" in err and "/opt/broken-build.sh" in err and "left out 1 bisection answer" in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_bisect_workdir_without_an_answer_of_this_build_says_so_in_report_and_show(made, tmp_path, capsys):
    """No scan, the current build's bisection not finished, another build's answer stored: the
    report and show say there is no answer of this build, list the other build's apart and the
    unfinished bisection; show exits 1. A workdir with nothing in it is one line, not an empty table."""
    store, s = two_builds(made, tmp_path, finish_new=False)
    capsys.readouterr()
    assert main(["report", "--workdir", s.workdir]) == 0
    md = (tmp_path / "work" / "report" / "report.md").read_text()
    assert md.startswith("# Nothing bisected yet (no scan in this workdir)")
    assert "No bisection of this build has finished in this workdir" in md and "## Bisected culprits" not in md
    other = section(md, "Answers measured under another build (not this report's)")
    assert "/opt/broken-build.sh" in other and "b" * 12 in other
    assert "started, no answer yet" in section(md, "Bisections not finished")
    assert "No step change" not in md and "Scanned " not in md
    capsys.readouterr()
    assert main(["show", "--workdir", s.workdir]) == 1
    out, err = capsys.readouterr()
    assert "measured under another build (build command /opt/broken-build.sh)" in out and "not finished:" in out
    assert "no bisection of this build has finished" in err and len(err.strip().splitlines()) == 1

    from hourly.adapters.store import Store
    empty = Store(tmp_path / "empty")  # a store and nothing else
    for argv in (["show", "--workdir", str(empty.workdir)], ["report", "--workdir", str(empty.workdir)]):
        assert main(argv) == 1
        assert "no scan and no bisection in" in capsys.readouterr().err
    assert not (empty.workdir / "report").exists()
