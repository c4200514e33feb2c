"""Resolution on the real first-parent histories of xla and jax (Jun–Oct 2023), replayed into git.

``shared/data/history/hours_aug24-26_2023.csv`` records what git picked on the real repositories for
each hour of the guide's loop, in UTC and in Los Angeles. hourly must pick the same first-parent
commits, for every hour, reading zone-less times in --tz whatever the process's zone.
"""

import csv
from pathlib import Path

import pytest

from hourly.adapters.gitrepo import GitRepo
from hourly.demo.repos import replay_history
from hourly.measure.resolve import distinct_pairs, resolve_pairs
from hourly.text.timeparse import instants, parse_step, parse_time, window

HISTORY = Path(__file__).resolve().parents[2] / "shared" / "data" / "history"
pytestmark = pytest.mark.skipif(not (HISTORY / "hours_aug24-26_2023.csv").exists(),
                                reason=f"the real history data is not at {HISTORY}")


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    maps = {name: replay_history(HISTORY / f"{name}_2023-06_10.csv", root / name) for name in ("xla", "jax")}
    hours = list(csv.DictReader(open(HISTORY / "hours_aug24-26_2023.csv")))
    return root, maps, hours


@pytest.mark.parametrize("zone,suffix", [("UTC", "UTC"), ("America/Los_Angeles", "LA")])
def test_every_hour_matches_what_git_picked_on_the_real_repositories(real, monkeypatch, zone, suffix):
    root, maps, hours = real
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # the process's own zone must not matter
    xla, jax = GitRepo(root / "xla", "xla"), GitRepo(root / "jax", "jax")
    times = [parse_time(h["label"], tz=zone).when for h in hours]
    points = resolve_pairs(xla, jax, times)
    assert len(points) == len(hours) == 75
    for h, p in zip(hours, points, strict=True):
        assert int(p.time.timestamp()) == int(h[f"ts_if_TZ_{suffix}"])
        assert maps["xla"][p.pair.xla] == h[f"xla_revlist_{suffix}"], h["label"]
        assert maps["jax"][p.pair.jax] == h[f"jax_first_parent_{suffix}"], h["label"]


def test_the_window_without_duplicates_holds_43_pairs(real):
    root, maps, hours = real
    xla, jax = GitRepo(root / "xla", "xla"), GitRepo(root / "jax", "jax")
    times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step("1h"))
    points = resolve_pairs(xla, jax, times)
    assert len(points) == 73  # the guide's 75 hours less its two 24:00 duplicates
    assert len(distinct_pairs(points)) == 43
