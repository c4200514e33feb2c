"""Time pairing vs pin pairing on the real June–October 2023 histories (issue 27).

For every three-day window of June–October 2023 (``../shared/data/history/``: the first-parent
histories of XLA and JAX and the XLA pin of every JAX commit, ``jax_xla_pin_2023-06_10.csv``):

* the distinct states each pairing has — the bisection's candidate states (time: the merged
  timeline of both repositories, as hourly.analysis.bisection.candidate_states makes it; pin: JAX's
  first-parent commits, each with its pin, as hourly.bisect.pairing.PinPairing makes them) — and
  the builds an hourly scan of the window needs (distinct pairs at the hourly instants);
* how often the time pairing builds a JAX commit against an XLA commit older than its own pin (of
  its candidate states and of its hourly pairs), and how far ahead of the pin its XLA is otherwise;
* the builds to an XLA culprit planted in the window (``--plants`` per window, seeded), with oracle
  verdicts (a state is bad when its XLA holds the culprit), hourly's probe order
  (hourly.analysis.bisection.next_probe): time pairing (its two ends, its probes; exact when the
  step that brings the culprit brings no other XLA commit and no JAX commit, else the mixed
  pairs' two builds are added) versus pin pairing with the descent into the pin bump (its ends and
  probes over JAX's states; then inside the bump's XLA commits, JAX held at the culprit: the new
  good end and the probes; the bad end is the culprit state, built already).

Run: ``python benchmarks/pin_pairing.py [--plants 10] [--seed 1]``. Pure computation, seconds.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hourly.analysis.bisection import COST_BUILD, COST_MEASURED, State, Verdict, bounds, candidate_states, next_probe
from hourly.analysis.timeline import Resolver
from hourly.model import Pair

HISTORY = [Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "history",
           Path("/work/shared/data/history")]
DAYS = 3
HOUR = 3600


def load():
    base = next(p for p in HISTORY if (p / "xla_2023-06_10.csv").exists())
    walks = {}
    for name in ("xla", "jax"):
        rows = list(csv.DictReader(open(base / f"{name}_2023-06_10.csv")))
        walks[name] = [(r["sha"], int(r["committer_time_unix"])) for r in reversed(rows)]  # newest first
    pins = {r["jax_sha"]: r["xla_pin_sha"] for r in csv.DictReader(open(base / "jax_xla_pin_2023-06_10.csv"))}
    return walks, pins


def bisect_builds(states: list[State], bad) -> tuple[int, int]:
    """Builds (ends + probes, each distinct state once) and the first bad index, by next_probe."""
    n = len(states)
    verdicts: dict[int, Verdict] = {}
    built = {0, n - 1}
    while True:
        i = next_probe(n, verdicts, {k: COST_MEASURED if k in built else COST_BUILD for k in range(1, n - 1)})
        if i is None:
            break
        built.add(i)
        verdicts[i] = Verdict.BAD if bad(states[i].pair) else Verdict.GOOD
    return len(built), bounds(n, verdicts).hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plants", type=int, default=10, help="XLA culprits planted per window")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    walks, pins = load()
    xpos = {sha: len(walks["xla"]) - i for i, (sha, _) in enumerate(walks["xla"])}  # larger: newer
    jax_res, xla_res = Resolver(walks["jax"]), Resolver(walks["xla"])
    start = datetime(2023, 6, 1, tzinfo=timezone.utc)
    end = datetime(2023, 11, 1, tzinfo=timezone.utc)
    rows = []
    skipped = 0
    t = start
    while t + timedelta(days=DAYS) <= end:
        t0, t1 = int(t.timestamp()), int((t + timedelta(days=DAYS)).timestamp())
        t += timedelta(days=DAYS)
        time_states = candidate_states(walks, t0, t1)
        jax_states = candidate_states({"xla": [("-", 0)], "jax": walks["jax"]}, t0, t1)
        if len(time_states) < 2 or len(jax_states) < 2 or any(st.pair.jax not in pins for st in jax_states):
            skipped += 1
            continue
        pin_states = [State(st.time, Pair(pins[st.pair.jax], st.pair.jax)) for st in jax_states]
        if any(st.pair.xla not in xpos for st in pin_states):
            skipped += 1  # a pin older than the XLA history of the data
            continue
        bumps = [xpos[b.pair.xla] - xpos[a.pair.xla] for a, b in zip(pin_states, pin_states[1:]) if a.pair.xla != b.pair.xla]
        hourly = [(xla_res.at(h), jax_res.at(h)) for h in range(t0, t1 + 1, HOUR)]
        scan_time = len(set(hourly))
        scan_pin = len({j for _, j in hourly})

        def older(x: str, j: str) -> bool:
            return j in pins and pins[j] in xpos and xpos[x] < xpos[pins[j]]
        behind_states = sum(older(st.pair.xla, st.pair.jax) for st in time_states)
        behind_hourly = sum(older(x, j) for x, j in set(hourly))
        ahead = [xpos[st.pair.xla] - xpos[pins[st.pair.jax]] for st in time_states if st.pair.jax in pins
                 and pins[st.pair.jax] in xpos]
        # plants: XLA commits inside a pin bump of the window (both pairings can reach them)
        lo, hi = xpos[pin_states[0].pair.xla], xpos[pin_states[-1].pair.xla]
        inside = [sha for sha, _ in walks["xla"] if lo < xpos[sha] <= hi]
        plants = rng.sample(inside, min(args.plants, len(inside))) if inside else []
        time_builds, pin_builds, time_exact = [], [], 0
        for c in plants:
            cp = xpos[c]
            b, hi_i = bisect_builds(time_states, lambda p: xpos[p.xla] >= cp)
            lg, fb = time_states[hi_i - 1].pair, time_states[hi_i].pair
            exact = xpos[fb.xla] - xpos[lg.xla] == 1 and lg.jax == fb.jax
            if not exact and lg.jax != fb.jax and xpos[fb.xla] - xpos[lg.xla] == 1:
                b += 2  # both moved: the mixed pairs say which
                exact = True
            time_exact += exact
            time_builds.append(b)
            b1, hi_j = bisect_builds(pin_states, lambda p: xpos[p.xla] >= cp)
            old, new, j = pin_states[hi_j - 1].pair.xla, pin_states[hi_j].pair.xla, pin_states[hi_j].pair.jax
            bump = [State(0, Pair(sha, j)) for sha, _ in reversed(walks["xla"]) if xpos[old] <= xpos[sha] <= xpos[new]]
            b2, k = bisect_builds(bump, lambda p: xpos[p.xla] >= cp)
            assert bump[k].pair.xla == c
            pin_builds.append(b1 + b2 - 1)  # the bump's bad end is the culprit state, built already
        rows.append(dict(window=t0, time_states=len(time_states), pin_states=len(pin_states), scan_time=scan_time,
                         scan_pin=scan_pin, behind_states=behind_states, behind_hourly=behind_hourly,
                         hourly_pairs=len(set(hourly)), ahead=statistics.median(ahead) if ahead else 0,
                         plants=len(plants), bumps=bumps, time_builds=time_builds, pin_builds=pin_builds, time_exact=time_exact))

    def mean(key):
        return statistics.mean(r[key] for r in rows)
    all_time = [b for r in rows for b in r["time_builds"]]
    all_pin = [b for r in rows for b in r["pin_builds"]]
    n_plants = sum(r["plants"] for r in rows)
    print(f"{len(rows)} three-day windows, June–October 2023 ({skipped} left out: a pin older than the data's XLA history)")
    moves = [len(r["bumps"]) for r in rows]
    sizes = [b for r in rows for b in r["bumps"]]
    print(f"pin moves per window: mean {statistics.mean(moves):.1f}, windows without one {sum(m == 0 for m in moves)} of "
          f"{len(rows)}; XLA commits per pin bump: median {statistics.median(sizes):.0f}, max {max(sizes)}")
    print("| per window (mean) | time pairing | pin pairing |")
    print("|---|---|---|")
    print(f"| candidate states (bisection) | {mean('time_states'):.1f} | {mean('pin_states'):.1f} |")
    print(f"| builds of an hourly scan (distinct pairs at 72 instants) | {mean('scan_time'):.1f} | {mean('scan_pin'):.1f} |")
    print(f"| states with XLA older than the JAX commit's pin | {sum(r['behind_states'] for r in rows)} of "
          f"{sum(r['time_states'] for r in rows)} | 0 (by construction) |")
    print(f"| hourly pairs with XLA older than the pin | {sum(r['behind_hourly'] for r in rows)} of "
          f"{sum(r['hourly_pairs'] for r in rows)} | 0 |")
    print(f"| XLA commits the time pairing's XLA is ahead of the pin (median of window medians; max) | "
          f"{statistics.median(r['ahead'] for r in rows):.0f}; {max(r['ahead'] for r in rows):.0f} | 0 |")
    print(f"| builds to a planted XLA culprit ({n_plants} plants, in the {sum(bool(r['plants']) for r in rows)} windows whose pin moved) | {statistics.mean(all_time):.1f} "
          f"(exact {sum(r['time_exact'] for r in rows)} of {n_plants}) | {statistics.mean(all_pin):.1f} with the descent "
          f"(exact {n_plants} of {n_plants}) |")


if __name__ == "__main__":
    main()
