"""Seeded searches dumped to text: the check that a refactoring of the bisection changed no behaviour.

Every search here is deterministic (planted histories, seeded noise, lambdas for the measurements:
tests/test_drive.py's table lab, no git, no builds, no processes): the window search
(hourly.analysis.step_search.StepSearch) alone — sequential, in rounds of W states, with crash
windows, paired through a rounds callback — and whole bisections through the drive (hourly.bisect.drive)
in every mode (exit status, flaky, printed, manual, metric paired and in rounds, find-fix, crash
windows, a drifting machine, a killed run resumed). It prints every measurement asked for, every
verdict, every row recorded, every event and every answer's JSON.

Run it before and after a change and compare:

    python benchmarks/seeded_dump.py > before.txt   # on the commit before
    python benchmarks/seeded_dump.py > after.txt
    cmp before.txt after.txt

The two outputs must be byte-identical. (Some seconds.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_drive import Drifting, H, Table, bisect, both, index, level, line, manual_lab, noisy  # noqa: E402

from hourly.analysis.judges import Verdict  # noqa: E402
from hourly.analysis.paired import Block  # noqa: E402
from hourly.analysis.step_search import StepSearch  # noqa: E402
from hourly.model import Mode, Pair  # noqa: E402

OUT: list[str] = []


def out(*parts: object) -> None:
    OUT.append(" ".join(str(p) for p in parts))


def js(x: object) -> str:
    return json.dumps(x, sort_keys=True, default=repr)


def drive(name: str, lab: Table, good: int, bad: int, kind: str = "regression") -> None:
    out("==", name)
    try:
        answers = bisect(lab, good, bad, kind)
    except Exception as e:  # an error is an outcome too: its words are dumped
        out("error", type(e).__name__, getattr(e, "message", str(e)), getattr(e, "fix", ""))
        answers = []
    for a in answers:
        out("answer", js(a.to_json()))
    for bid in sorted(lab.rows):
        for r in lab.rows[bid]:
            out("row", bid, js(r))
    for ev in lab.handler.log:
        out("event", js(ev))
    out("rounds", lab.rounds, "jobs", lab.jobs, "sizes", js(lab.sizes), "apart", lab.apart)


def drives() -> None:
    for workers in (1, 3):
        for n in (4, 7, 10):
            for c in range(1, n):
                drive(f"exit n={n} c={c} w={workers}",
                      Table(line(n), Mode.EXIT, rc=lambda p, k, c=c: 3 if index(p.xla) >= c else 0, workers=workers),
                      0, (n - 1) * H, "crash")
        n = 9
        for c in range(1, n):
            for f in range(1, n - 1):
                drive(f"exit-fails n={n} c={c} f={f} w={workers}",
                      Table(line(n), Mode.EXIT, rc=lambda p, k, c=c: 3 if index(p.xla) >= c else 0,
                            fails={Pair(f"x{f}", "j0")}, workers=workers), 0, (n - 1) * H, "crash")
        drive(f"exit-skips w={workers}", Table(line(10), Mode.EXIT, workers=workers,
                                               rc=lambda p, k: 3 if index(p.xla) >= 7 else
                                               125 if index(p.xla) in (2, 3) else 0), 0, 9 * H, "crash")
        for seed in range(3):
            rng = np.random.default_rng(seed)
            drive(f"flaky seed={seed} w={workers}",
                  Table(line(10), Mode.EXIT, workers=workers, flaky=True, max_repeats=20,
                        rc=lambda p, k, rng=rng: 134 if index(p.xla) >= 6 and rng.random() < 0.4 else 0),
                  0, 9 * H, "crash")
            rng2 = np.random.default_rng(seed)
            drive(f"turns-flaky seed={seed} w={workers}",
                  Table(line(10), Mode.EXIT, workers=workers,
                        rc=lambda p, k, rng=rng2: 134 if index(p.xla) >= 6 and rng.random() < 0.5 else 0),
                  0, 9 * H, "crash")
        for find_fix in (False, True):
            def lost(p, k, find_fix=find_fix):
                gone = index(p.xla) >= 5
                return "no_metric" if gone != find_fix else "ok"
            drive(f"printed fix={find_fix} w={workers}",
                  Table(line(11), Mode.PRINTED, rc=lambda p, k: 0, status=lost, value=lambda p, k: 500.0,
                        find_fix=find_fix, workers=workers), 0, 10 * H, "regression")
        for n in (5, 9):
            for c in range(1, n):
                drive(f"metric n={n} c={c} w={workers}",
                      Table(line(n), Mode.METRIC, value=lambda p, k, c=c: level(("xla", c, 0.9))(p), repeats=2,
                            workers=workers), 0, (n - 1) * H)
        for seed in range(4):
            drive(f"metric-noisy seed={seed} w={workers}",
                  Table(line(12), Mode.METRIC, value=noisy(level(("xla", 4, 0.95), ("xla", 9, 0.95)), 0.01, seed),
                        repeats=1, max_repeats=24, workers=workers), 0, 11 * H)
        drive(f"metric-three w={workers}",
              Table(line(12), Mode.METRIC, value=level(("xla", 3, 0.92), ("xla", 6, 1.05), ("xla", 9, 0.97)),
                    repeats=2, workers=workers), 0, 11 * H)
        drive(f"metric-fix w={workers}", Table(line(6), Mode.METRIC, value=level(("xla", 3, 1.1)), repeats=2,
                                               find_fix=True, workers=workers), 0, 5 * H, "improvement")
        drive(f"metric-not-worse w={workers}", Table(line(6), Mode.METRIC, value=level(("xla", 3, 1.1)),
                                                     repeats=2, workers=workers), 0, 5 * H)
        for repo in ("xla", "jax"):
            drive(f"blame-metric {repo} w={workers}", Table(both(), Mode.METRIC, value=level((repo, 3, 0.9)),
                                                            repeats=2, workers=workers), 2 * H + 1800, 4 * H)
            drive(f"blame-exit {repo} w={workers}",
                  Table(both(at=3, n=8), Mode.EXIT, workers=workers,
                        rc=lambda p, k, repo=repo: 3 if index(getattr(p, repo)) >= 3 else 0), 0, 7 * H, "crash")
        drive(f"samples-per-run w={workers}", Table(both(), Mode.METRIC, value=level(("xla", 3, 0.9)), repeats=2,
                                                    samples_per_run=5, metric="lower_ms", workers=workers),
              2 * H + 1800, 4 * H)
        drive(f"unconfirmed w={workers}", Table(line(8), Mode.EXIT, workers=workers,
                                                rc=lambda p, k: 1 if index(p.xla) >= 5 and k == 0 else 0),
              0, 7 * H, "crash")
    for shape in (dict(drift=-0.15), dict(drift=0.12, period=80)):
        for c in (3, 9):
            for paired in (True, False):
                drive(f"drift {shape} c={c} paired={paired}",
                      Table(line(12), Mode.METRIC, value=Drifting(level(("xla", c, 0.9)), **shape, seed=c),
                            paired=paired), 0, 11 * H)
    drive("apart", Table(line(10), Mode.METRIC, value=level(("xla", 6, 0.9)), interleaves=False), 0, 9 * H)
    for f, last in ((1, 3), (2, 2), (4, 7)):
        for c in (2, 5, 9):
            lab = Table(line(12), Mode.METRIC, value=level(("xla", c, 0.9)),
                        rc=lambda p, k, f=f, last=last: 1 if f <= index(p.xla) <= last else 0)
            lab.crash_lines = {Pair(f"x{f}", "j0"): "RuntimeError: planted"}
            drive(f"crash-window {f}..{last} c={c}", lab, 0, 11 * H)
    for mode, kw in ((Mode.EXIT, dict(rc=lambda p, k: 3 if index(p.xla) >= 9 else 0)),
                     (Mode.METRIC, dict(value=level(("xla", 9, 0.9)), repeats=2))):
        for workers in (1, 3):
            for cut in (1, 3, 5):
                lab = Table(line(20), mode, workers=workers, raise_after=cut, **kw)
                try:
                    bisect(lab, 0, 19 * H, "crash" if mode is Mode.EXIT else "regression")
                except KeyboardInterrupt:
                    out("killed", mode, workers, cut)
                lab.raise_after = None
                drive(f"resumed {mode} w={workers} cut={cut}", lab, 0, 19 * H,
                      "crash" if mode is Mode.EXIT else "regression")
    for bad_from in (3, 8):
        lab = manual_lab(lambda p, b=bad_from: Verdict.BAD if index(p.xla) >= b else Verdict.GOOD)
        drive(f"manual bad>={bad_from}", lab, 0, 11 * H)
        out("asked", js([(r, p, w) for r, p, w in lab.witness.asked]))
    lab = manual_lab(lambda p: Verdict.BAD if index(p.xla) >= 6 else Verdict.SKIP if index(p.xla) in (4, 5)
                     else Verdict.UNSURE if index(p.xla) == 2 else Verdict.GOOD)
    drive("manual skips", lab, 0, 11 * H)
    lab = manual_lab(lambda p: Verdict.BAD if index(p.xla) >= 7 else Verdict.GOOD, waiting=Pair("x5", "j0"))
    drive("manual resumed", lab, 0, 11 * H)


def searches() -> None:
    """The window search alone: every measurement asked for, every verdict, its steps and state."""
    def dump(name: str, s: StepSearch, result: object) -> None:
        out("== search", name)
        out("result", js(result))
        out("samples", js({k: s.samples[k] for k in sorted(s.samples)}))
        out("failed", js(s.failed), "unsure", js(sorted(s.unsure)), "dropped", js(s.dropped))
        out("verdicts", js({k: repr(v) for k, v in sorted(s.verdicts.items())}))
        out("more_after", s.more_after, "rounds", s.rounds, "windows", js(s.windows), "drifts", js(s.drifts))

    for seed in range(6):
        for n in (6, 11, 17):
            rng = np.random.default_rng(seed * 100 + n)
            steps = sorted(rng.choice(np.arange(1, n), size=1 + seed % 3, replace=False).tolist())
            lv = [100.0 * 0.93 ** sum(i >= s for s in steps) for i in range(n)]
            sigma = 0.002 * (1 + seed % 3)
            for workers in (0, 1, 3):
                r = np.random.default_rng(seed)
                calls: list = []

                def measure(i: int, c: int, r=r, lv=lv, sigma=sigma, calls=calls) -> list[float]:
                    calls.append((i, c))
                    return [float(x) for x in lv[i] * (1 + sigma * r.standard_normal(c))]

                def many(reqs: dict[int, int], measure=measure) -> dict[int, list[float] | None]:
                    return {i: measure(i, c) for i, c in reqs.items()}
                heard: list = []
                s = StepSearch(n, measure, repeats=2, max_repeats=16, min_change=0.03,
                               on_verdict=lambda i, j, heard=heard: heard.append((i, repr(j))),
                               stop_at_regression=seed % 2 == 1)
                res = s.run() if workers == 0 else s.run_rounds(many, workers)
                name = f"seq seed={seed} n={n} steps={steps} w={workers}"
                dump(name, s, [repr(x) for x in (res if workers == 0 else res[0])])
                out("calls", js(calls))
                out("heard", js(heard))

    for seed in range(4):
        n = 16
        f, last, c = 3 + seed, 6 + seed, 11 - seed
        edges: list = []
        r = np.random.default_rng(seed)

        def measure(i: int, k: int, r=r, f=f, last=last, c=c) -> list[float] | None:
            if f <= i <= last:
                return None
            return [float(x) for x in (100.0 if i < c else 90.0) * (1 + 0.003 * r.standard_normal(k))]
        s = StepSearch(n, measure, repeats=2, max_repeats=12, crash_windows=True,
                       on_edge=lambda i, crashed, edges=edges: edges.append((i, crashed)))
        res = s.run()
        dump(f"crash seed={seed} window={f}..{last} c={c}", s, [repr(x) for x in res])
        out("edges", js(edges), "crashes", js(sorted(s.crashed)))

    for seed in range(4):
        n = 12
        c = 3 + 2 * seed
        r = np.random.default_rng(seed)
        tick = [0]
        notes: list = []

        def value(i: int, r=r, c=c, tick=tick) -> float:
            tick[0] += 1
            return (100.0 if i < c else 91.0) * (1 + 0.1 * tick[0] / 200) * (1 + 0.004 * r.standard_normal())

        def rounds(states: list[int], count: int, stop_on: int | None, value=value) -> list[Block]:
            got: list[Block] = []
            for k in range(count):
                order = states if k % 2 == 0 else list(reversed(states))
                got.append({i: value(i) for i in order})
            return got
        from hourly.analysis.judges.paired import PairedMetricJudge
        s = StepSearch(n, lambda i, k, value=value: [value(i) for _ in range(k)], repeats=2, max_repeats=16,
                       judge=PairedMetricJudge(), rounds=rounds, on_note=notes.append)
        res = s.run()
        dump(f"paired seed={seed} c={c}", s, [repr(x) for x in res])
        out("notes", js(notes), "checked", js({str(k): v[0] for k, v in sorted(s.checked.items())}))
        out("outcomes", js({str(k): v for k, v in sorted(s.outcomes.items())}))


def main() -> None:
    searches()
    drives()
    sys.stdout.write("\n".join(OUT) + "\n")


if __name__ == "__main__":
    main()
