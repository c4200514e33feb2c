"""Resolution agrees with git itself, for every instant, whatever the process's time zone."""

import os
import subprocess

import pytest

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.timeline import Resolver
from hourly.demo.repos import _git, _init
from hourly.measure.resolve import distinct_pairs, resolve_pairs
from hourly.text.timeparse import instants, parse_step, parse_time, window


def git_rev_list(path, before: str, first_parent: bool, tz: str) -> str:
    env = dict(os.environ, TZ=tz)
    cmd = ["git", "-C", str(path), "rev-list", "-1"] + (["--first-parent"] if first_parent else []) + \
          [f"--before={before}", "origin/main"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("process_tz", ["UTC", "Asia/Tokyo"])
@pytest.mark.parametrize("zone_name", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("first_parent", [True, False])
def test_agrees_with_git_rev_list_for_every_instant(made, monkeypatch, process_tz, zone_name, first_parent):
    """git reads a zone-less time in the process's zone; hourly reads it in --tz, never the process's.

    hourly runs under ``process_tz``; git gets the same zone-less wall-clock string under TZ=zone_name.
    """
    monkeypatch.setenv("TZ", process_tz)
    repos = [GitRepo(made.xla, "xla"), GitRepo(made.jax, "jax")]
    t0, t1 = window("Aug 23 2023", "Aug 26 2023", tz=zone_name)
    times = instants(t0, t1, parse_step("1h"))
    points = {p.time: p.pair for p in resolve_pairs(repos[0], repos[1], times, "origin/main", first_parent,
                                                                 allow_missing=True)}
    zone = parse_time("2023-01-01", tz=zone_name).zone
    for t in times:
        local = t.astimezone(zone).strftime("%b %d %Y %H:%M:%S")  # what the guide's loop gives git
        want = (git_rev_list(made.xla, local, first_parent, zone_name),
                git_rev_list(made.jax, local, first_parent, zone_name))
        got = (points[t].xla, points[t].jax) if t in points else ("", "")
        assert got == want, local
    assert len(points) > 50


def test_first_parent_never_picks_an_unmerged_pull_request_commit(made):
    xla, jax = GitRepo(made.xla, "xla"), GitRepo(made.jax, "jax")
    times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step("1h"))
    fp = resolve_pairs(xla, jax, times, first_parent=True)
    plain = resolve_pairs(xla, jax, times, first_parent=False)
    pr_commits = set(made.branch_shas.values())
    assert not pr_commits & {p.pair.jax for p in fp}
    # the guide's plain loop does pick them, in the hours between a PR's commit and its merge
    assert pr_commits & {p.pair.jax for p in plain}
    assert len(distinct_pairs(fp)) < len(fp)


def test_non_monotonic_committer_dates(tmp_path):
    """Along real histories a child can carry an older committer date than its parent."""
    up = tmp_path / "up"
    _init(up, {"a": "1"}, "2023-08-24T00:00:00Z")
    for i, when in enumerate(["2023-08-24T05:00:00Z", "2023-08-24T03:00:00Z", "2023-08-24T04:00:00Z",
                              "2023-08-24T09:00:00Z", "2023-08-24T08:30:00Z"]):
        (up / "a").write_text(str(i))
        _git(up, "commit", "-qam", f"c{i}", when=when)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(up), str(clone)], check=True)
    repo = GitRepo(clone, "xla")
    r = Resolver(repo.history("origin/main"))
    for t in instants(*window("Aug 23 2023 23:00", "Aug 24 2023 10:00"), parse_step("15m")):
        expected = git_rev_list(clone, f"@{int(t.timestamp())}", True, "UTC") or None
        assert r.at(int(t.timestamp())) == expected


def test_one_history_walk_per_repo_not_one_git_per_instant(made):
    """Two git processes in all, one windowed walk per repository (no rev-parse beside it), for 97
    instants as for 7."""
    from hourly.adapters import proc
    xla, jax = GitRepo(made.xla, "xla"), GitRepo(made.jax, "jax")
    for step in ("30m", "8h"):
        times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step(step))
        before = proc.spawned
        resolve_pairs(xla, jax, times)
        assert proc.spawned - before == 2, step


def test_an_unknown_ref_is_still_one_line_naming_it(made):
    from hourly.errors import UserError
    xla, jax = GitRepo(made.xla, "xla"), GitRepo(made.jax, "jax")
    with pytest.raises(UserError, match="unknown ref 'origin/nope' in xla"):
        resolve_pairs(xla, jax, instants(*window("Aug 24 2023", "Aug 25 2023"), parse_step("1h")), "origin/nope")


# -- the window walk: only the part of the history the window needs ------------------------------

#: committer dates (hours after Aug 24 2023 00:00 UTC) of main's commits, oldest first: children
#: older than their parents below the window, a commit dated far in the future deep in the history,
#: one near the tip dated below everything, and a pull request merged in between
OUT_OF_ORDER = [0, 10, 2, 20, 30, 25, 60, "merge", 40, 41, 35, 50, 45, 5, 70, 55, 80]
PR_HOURS = (33, 43)  # the pull request's own commit, its merge (the "merge" entry)


@pytest.fixture(scope="module")
def out_of_order(tmp_path_factory):
    up = tmp_path_factory.mktemp("ooo") / "up"
    _init(up, {"a": "0"}, "2023-08-24T00:00:00Z")

    for i, h in enumerate(OUT_OF_ORDER[1:], 1):
        if h == "merge":
            _git(up, "checkout", "-q", "-b", "pr", "main~2")
            (up / "pr.txt").write_text("pr")
            _git(up, "add", "pr.txt")
            _commit(up, "pr commit", PR_HOURS[0])
            _git(up, "checkout", "-q", "main")
            _merge(up, PR_HOURS[1])
            continue
        (up / "a").write_text(str(i))
        _git(up, "add", "a")
        _commit(up, f"c{i}", h)
    clone = up.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(up), str(clone)], check=True)
    return GitRepo(clone, "xla")


def _env_at(h):
    ts = f"{1692835200 + int(h * 3600)} +0000"
    return {**os.environ, "GIT_AUTHOR_DATE": ts, "GIT_COMMITTER_DATE": ts, "GIT_AUTHOR_NAME": "A",
            "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL": "c@example.com"}


def _commit(path, subject, h):
    subprocess.run(["git", "commit", "-q", "-m", subject], cwd=path, env=_env_at(h), check=True)


def _merge(path, h):
    subprocess.run(["git", "merge", "-q", "--no-ff", "pr", "-m", "Merge pr"], cwd=path, env=_env_at(h), check=True)


def _interesting(repo):
    """Every committer date of the history, a second before and after it, and the ends beyond."""
    stamps = {ts for _, ts in repo.history("origin/main", False)}
    return sorted({s + d for s in stamps for d in (-1, 0, 1)} | {min(stamps) - 3600, max(stamps) + 3600})


@pytest.mark.parametrize("first_parent", [True, False])
def test_the_window_walk_answers_every_instant_as_the_whole_walk(out_of_order, first_parent):
    """Exhaustive, in pure code: every window [a, b] of the interesting instants, every instant in it."""
    from hourly.analysis.timeline import window_walk
    walk = out_of_order.history("origin/main", first_parent)
    dates = [ts for _, ts in walk]
    assert dates != sorted(dates, reverse=True)  # the dates really are out of order
    whole = Resolver(walk)
    marks = _interesting(out_of_order)
    for i, a in enumerate(marks):
        for b in marks[i:]:
            part = Resolver(window_walk(walk, b, a))
            for t in marks[i:]:
                if t > b:
                    break
                assert part.at(t) == whole.at(t), (a, b, t)


@pytest.mark.parametrize("first_parent", [True, False])
def test_git_reads_exactly_the_window_walk_and_git_agrees(out_of_order, first_parent):
    """git's own windowed walk (--before, read until the window's bottom) is the pure window walk,
    and its answers are the guide's ``git rev-list -1 --before=T`` for every instant."""
    from hourly.analysis.timeline import window_walk
    repo = out_of_order
    walk = repo.history("origin/main", first_parent)
    marks = _interesting(repo)
    guide = {t: git_rev_list(repo.path, f"@{t}", first_parent, "UTC") or None for t in marks}
    assert Resolver(walk).at(marks[0]) is None and guide[marks[0]] is None
    coarse = marks[::4] + [marks[-1]]
    for i, a in enumerate(coarse):
        for b in coarse[i:]:
            part = repo.history("origin/main", first_parent, newest=b, oldest=a)
            assert part == window_walk(walk, b, a), (a, b)
            assert len(part) <= len(walk)
            r = Resolver(part)
            for t in marks:
                if a <= t <= b:
                    assert r.at(t) == guide[t], (a, b, t)


def test_a_window_deep_below_the_tip_reads_few_commits(out_of_order):
    walk = out_of_order.history("origin/main")
    lo, hi = 1692835200 + 20 * 3600, 1692835200 + 21 * 3600  # hours 20..21: c3 and below it
    part = out_of_order.history("origin/main", newest=hi, oldest=lo)
    # git skips the commits dated after the window (c13 at hour 5 near the tip is kept: it answers
    # every instant of the window) and stops at the first commit dated at or before its start
    assert [ts for _, ts in part] == [1692835200 + 5 * 3600]
    assert len(part) < len(walk) / 4


def test_run_until_stops_a_long_output_and_leaves_no_process():
    """The walk's reader: ``yes`` never ends by itself; stopped after 3 lines it is gone."""
    import time

    from hourly.adapters import proc
    from hourly.errors import ProcessError
    t0 = time.monotonic()
    res = proc.run_until(["sh", "-c", "echo $$ > /dev/stderr; exec yes"], lambda line: line.startswith("y"))
    assert res.ok and res.output.splitlines()[-1] == "y"
    assert time.monotonic() - t0 < 10
    pid = int(res.output.splitlines()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # a process that ends before any line stops it is a plain run: its output, its failure
    assert proc.run_until(["sh", "-c", "echo a; echo b"], lambda line: False).output == "a\nb\n"
    with pytest.raises(ProcessError):
        proc.run_until(["sh", "-c", "echo no; exit 3"], lambda line: False)
    with pytest.raises(ProcessError) as e:
        proc.run_until(["sleep", "30"], lambda line: False, timeout=0.5)
    assert e.value.timed_out
