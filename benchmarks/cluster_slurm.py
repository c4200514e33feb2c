"""``hourly bisect --executor slurm --workers W`` for real, over the three days of
benchmarks/cluster_rounds.py (issue 25, item 4), on the single-node Slurm of .ci/slurm-up.sh.

    bash .ci/slurm-up.sh && PYTHONPATH=. python benchmarks/cluster_slurm.py [--workers 4] [--noise 0.002] [--local]

The same window as cluster_rounds.py (real git repositories: an xla commit every 80 minutes, a jax
commit every 85, an xla commit taking the metric down 7 % on day one and a jax commit 3 % on day
two), but every request a real Slurm job: the stand-in build script builds a real wheel of the
state, the stand-in benchmark imports it and prints the metric (its level: the product of the
factors of the commits it holds, with Gaussian noise ``--noise`` per run, DEMO_NOISE). The command
is the CLI's, as a user runs it; its ``--json`` answers give the rounds (calls of the executor) and
jobs, the store the states measured (the builds the cluster paid).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_rounds import BAD, GOOD, JAX_STEP, XLA_STEP, changes  # noqa: E402

from hourly.demo.hunt import make_venv  # noqa: E402
from hourly.demo.repos import make_repos  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--noise", type=float, default=0.002)
    ap.add_argument("--local", action="store_true", help="the same bisection here, one state a round (no Slurm)")
    a = ap.parse_args()
    factor = {subject: f for _, _, subject, f in (XLA_STEP, JAX_STEP)}
    cs = [replace(c, files={k: f"{factor[c.subject]}\n" for k in c.files}) if c.subject in factor else c
          for c in changes()]
    with tempfile.TemporaryDirectory(dir=os.environ.get("HOURLY_SLURM_TMP")) as tmp:
        made = make_repos(Path(tmp) / "repos", cs)
        python = make_venv(Path(tmp) / "venv")
        work = Path(tmp) / "work"
        argv = [sys.executable, "-m", "hourly", "bisect", "--json", "--good", GOOD, "--bad", BAD,
                "--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
                "--python", python, "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(work),
                "--repeats", "3", "--max-repeats", "10"]
        argv += [] if a.local else ["--executor", "slurm", "--workers", str(a.workers)]
        env = dict(os.environ, DEMO_NOISE=str(a.noise), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        t0 = time.time()
        p = subprocess.run(argv, capture_output=True, text=True, env=env)
        wall = time.time() - t0
        if p.returncode != 0 or not p.stdout.lstrip().startswith("{"):
            print(p.stdout[-2000:], p.stderr[-4000:], sep="\n")
            raise SystemExit(f"hourly bisect exited {p.returncode}")
        answers = json.loads(p.stdout)["regressions"]
        want = [made.shas[XLA_STEP[2]], made.shas[JAX_STEP[2]]]
        got = [(r.get("culprit") or {}).get("sha") for r in answers]
        db = sqlite3.connect(work / "hourly.sqlite")
        states = db.execute("SELECT COUNT(DISTINCT xla || jax) FROM measurements WHERE origin='bisect'").fetchone()[0]
        jobs = sum(r["jobs"] for r in answers)
        print("| executor | noise | culprits named | rounds | jobs | states built | wall |")
        print("|---|---:|---|---:|---:|---:|---:|")
        print(f"| {'local' if a.local else f'slurm, W={a.workers}'} | {a.noise:.1%} | {'both, exactly' if got == want else got} | "
              f"{sum(r['rounds'] for r in answers)} | {jobs} | {states} | {wall:.0f} s |")


if __name__ == "__main__":
    main()
