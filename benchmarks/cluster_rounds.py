"""Rounds and builds of a whole ``hourly bisect --workers W`` over a three-day window with two steps
(issue 25, item 4): the Bisector itself, its rounds answered by an oracle executor.

    PYTHONPATH=. python benchmarks/cluster_rounds.py [--workers 1,4] [--seeds 5] [--noise 0.01]

Real git repositories (hourly.demo.repos): three days with an xla commit every 80 minutes and a jax
commit every 85 (107 candidate states), an xla commit that takes the metric down 7 % on day one and
a jax commit that takes it down 3 % on day two. ``hourly bisect --good <start> --bad <end>`` runs as
the command runs it (``run_bisect``: the ends, the window search in rounds, the confirmation of
each step, the rest of the window after it), with an executor of W workers that, instead of
building and running, records each requested state's samples from the oracle (its level: the
product of the planted factors it holds, times Gaussian noise of ``--noise`` per run, seeded) in
the store, as the Slurm executor records its jobs' results. So the rounds and builds are the
Bisector's own; only the time of a build is left out.

*rounds*: calls of the executor (a round waits for its slowest job: what wall time goes with);
*builds*: distinct states measured (what the cluster pays).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hourly.adapters.store import Measurement, Store  # noqa: E402
from hourly.bisect.records import BisectRequest  # noqa: E402
from hourly.bisect.search import run_bisect  # noqa: E402
from hourly.demo.repos import Change, make_repos  # noqa: E402
from hourly.execute.host import Counted  # noqa: E402
from hourly.measure.settings import effective, keyed  # noqa: E402
from hourly.model import Mode, Status  # noqa: E402

XLA_STEP = ("xla", "2023-08-25T05:20:00Z", "[XLA:GPU] slower fusion", 0.93)
JAX_STEP = ("jax", "2023-08-26T14:05:00Z", "slower dispatch", 0.97)
GOOD, BAD = "2023-08-24T00:00Z", "2023-08-27T00:00Z"


def changes() -> list[Change]:
    out = []
    for i in range(3 * 24 * 60 // 80):
        m = 20 + 80 * i
        out.append(Change("xla", f"2023-08-{24 + m // 1440}T{m % 1440 // 60:02d}:{m % 60:02d}:00Z", f"[XLA] change {i}",
                          {f"x/{i}.txt": "1\n"}))
    for i in range(3 * 24 * 60 // 85):
        m = 35 + 85 * i
        out.append(Change("jax", f"2023-08-{24 + m // 1440}T{m % 1440 // 60:02d}:{m % 60:02d}:00Z", f"jax change {i}",
                          {f"j/{i}.txt": "1\n"}))
    for repo, when, subject, _ in (XLA_STEP, JAX_STEP):
        out.append(Change(repo, when, subject, {f"perf/{repo}.txt": "1\n"}))
    return out


class OracleExecutor:
    """W workers a round; each request's samples from the oracle, recorded in the store."""

    def __init__(self, workers: int, level, noise: float, seed: int):
        self.workers = workers
        self.level, self.noise = level, noise
        self.rng = np.random.default_rng(seed)
        self.rounds: list[int] = []
        self.built: set = set()

    def measure_many(self, host, reqs):
        self.rounds.append(len(reqs))
        out = []
        for pair, count in reqs:
            new = pair not in self.built
            self.built.add(pair)
            xs = [float(x) for x in self.level(pair) * (1 + self.noise * self.rng.standard_normal(count))]
            m = Measurement(pair.xla, pair.jax, Status.OK.value, float(np.median(xs)), xs,
                            [{"returncode": 0, "value": x} for x in xs], origin=host.origin)
            host.store.add_measurement(host.key, m)
            out.append(Counted(m, int(new), count, count))
        return out

    def stream(self, host, reqs):
        yield from self.measure_many(host, reqs)

    @property
    def capabilities(self):
        from hourly.execute.executors import Capabilities
        return Capabilities(here=False, parallel=self.workers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,4")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--noise", type=float, default=0.01)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        made = make_repos(Path(tmp) / "repos", changes())
        culprits = {repo: made.shas[subject] for repo, _, subject, _ in (XLA_STEP, JAX_STEP)}
        factors = {repo: f for repo, _, _, f in (XLA_STEP, JAX_STEP)}
        print("| W | noise | culprits named | rounds (mean, max) | builds (mean, max) | states |")
        print("|---:|---:|---|---|---|---:|")
        for w in (int(x) for x in a.workers.split(",")):
            rounds, builds, named, states = [], [], [], 0
            for seed in range(a.seeds):
                work = Path(tmp) / f"w{w}-{seed}"
                s = keyed(effective(dict(xla_repo=str(made.xla), jax_repo=str(made.jax), build_cmd=str(made.build_script),
                                   python=sys.executable, workdir=str(work), sync=False,
                                   bench_cmd=f"python3 {made.bench_script}", repeats=3))[0])
                store = Store(work, create=True)
                from hourly.bisect.search import Bisector
                with Bisector(s, store, Mode.METRIC) as b:
                    anc = {r: {sha for sha, _ in b.walks[r]} for r in ("xla", "jax")}
                    order = {r: {sha: i for i, (sha, _) in enumerate(reversed(b.walks[r]))} for r in ("xla", "jax")}
                del anc

                def level(pair, order=order):
                    v = 1000.0
                    for r, sha in culprits.items():
                        if order[r][getattr(pair, r)] >= order[r][sha]:
                            v *= factors[r]
                    return v
                ex = OracleExecutor(w, level, a.noise, seed)
                answers = run_bisect(s, store, BisectRequest(GOOD, BAD, Mode.METRIC, 10), executor=ex)
                got = [x.culprit.sha for x in answers if x.culprit]
                named.append(got == [culprits["xla"], culprits["jax"]])
                rounds.append(len(ex.rounds))
                builds.append(len(ex.built))
                states = answers[0].states
            print(f"| {w} | {a.noise:.1%} | {sum(named)}/{len(named)} | {statistics.mean(rounds):.1f}, {max(rounds)} | "
                  f"{statistics.mean(builds):.1f}, {max(builds)} | {states} |")


if __name__ == "__main__":
    main()
