"""Resolution agrees with git itself, for every instant, whatever the process's time zone."""

import os
import subprocess

import pytest

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.timeline import Resolver
from hourly.demo.repos import _git, _init
from hourly.measure.resolve import distinct_pairs, resolve_pairs
from hourly.timeparse import instants, parse_step, parse_time, window


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


def test_one_history_walk_per_repo_not_one_git_per_instant(made, monkeypatch):
    calls = []
    orig = GitRepo.git

    def counting(self, *args, **kw):
        calls.append(args[0])
        return orig(self, *args, **kw)

    monkeypatch.setattr(GitRepo, "git", counting)
    xla, jax = GitRepo(made.xla, "xla"), GitRepo(made.jax, "jax")
    times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step("30m"))
    resolve_pairs(xla, jax, times)
    assert calls.count("rev-list") == 2
