"""The real-noise benchmark on 2026 history: `hourly bisect --only jax` over real jax-ml/jax commits.

    python benchmarks/real_history_2026.py --jax-clone /work/jaxclone --python /work/jax2026/bin/python
    python benchmarks/real_history_2026.py ... --window crash --runs 1 --load 1 --json
    python benchmarks/real_history_2026.py ... --window change --runs 2 -- --max-repeats 40

Without ``--jax-clone`` and ``--python`` (or without the window's commits in the clone) it prints
why it skips and exits 0: CI has neither (a clone of jax-ml/jax, a Python with jaxlib 0.10.2).

Every state runs with the jaxlib of ``--python`` (0.10.2, the one on the package index for the
jax main commits of 2026-05-21 → 07-16); each state's ``jax`` package is built from its commit
with ``pip wheel`` (the default of ``--only jax``). The windows (docs/real-history.md says how
they were found and measured):

- ``change`` (default): 2026-06-16 20:00 → 06-17 14:00 UTC, 19 states. The merge 03652b8bba
  (PR #38415 "leave-no-trace", 2026-06-16 21:59 −07:00) makes ``EvalTrace.process_primitive``
  enter ``set_current_trace(self)`` around every eager primitive: eager ``lax.neg`` of an 8-vector
  ≈10.3 → ≈11.3 µs on this CPU (+9–10 %). Benchmark: real_jax/dispatch_op.py ``--op neg --stat
  min``. Expected: the culprit 03652b8bba.
- ``crash``: 2026-06-04 22:00 → 06-09 00:00 UTC (``--bad`` the earlier, ``--good`` the later:
  ``--find-fix``), 51 states, 34 of them in two crash windows
  (cd8549e7cf → 702e27b25c, 16 commits, and f1e823f13d → a4d60cd1ec, 18) where the transformer
  benchmark stops at its first random key with ``RuntimeError: valid_dtypes is not set``: their
  jax calls jaxlib's C++ ``canonicalize_value`` without ``set_valid_dtypes``, which jaxlib 0.10.2
  (cut from main on 06-17) needs. Benchmark: real_jax/frontend_step.py ``--dispatch``, metric eager
  ``lax.neg`` (``dispatch_us:``): ≈11.3 µs up to the first window, ≈10.3 µs after it. The fix
  (``--find-fix``: the good end is the later one) is 1587193cb8 ("In Primitive.bind, canonicalize
  first", the first state after the first window); f1e823f13d reverts it and 7e9ead3744 rolls it
  forward, both at the edges of the second window. The crashing states cannot be judged, so no
  single commit can be named: the honest answer is a range holding the first window and
  1587193cb8 (or a candidate 1587193cb8 said to border a crash window).
- ``tpu``: 2026-06-17 02:00 → 05:30 UTC, 3 states (613eaa50fe, 0404721baa, 03652b8bba): the
  ``change`` window narrowed to its culprit's neighbours, for the TPU machine's one call
  (benchmarks/tpu/session.sh), where every benchmark process spends 6–11 s opening the chip. The
  same benchmark with 50 blocks (the minimum of more blocks is steadier, and they cost well under a
  second against the ≈15 s of a process there) and ``--warmup-runs 0`` (the benchmark warms up
  itself: no process is spent on a run that is not counted). It runs on the default backend: the
  TPU there, the CPU here. Expected: the culprit 03652b8bba.
- ``tpu-frontend``: 2026-06-08 21:45 → 06-09 04:00 UTC, 11 states, ``--find-fix`` (the good end
  is the later one): tracing the transformer's training step (real_jax/frontend_step.py ``--each
  trace``: every repeat a sample, as many as hourly asks for) got faster between the end of the
  second crash window (7e9ead3744) and 06-09 01:12 UTC: ≈94.7 → ≈87.5 ms on the TPU machine with its
  TPU backend (−7.6 %, 3 processes each), −8 to −10 % on the CPU here. Expected: the fix 862f20256a
  ("Merge pull request #38168 from mattjj:accum-ct-avals": the transpose accumulates cotangent
  avals, fewer zeros built). The front-end case of an accelerator host: every process opens the chip.
  ``--min-change 0.05``: at 2 % a probe at an end's level took over 5 rounds of 3 processes of
  25-40 s on the TPU machine and was still unsure (processes' medians spread ~1 % there).
- ``flat``: 2026-06-11 12:00 → 19:00 UTC, 15 states, eager ``lax.neg`` 10.2–10.6 µs on each of
  them (3 processes each, quiet machine). Expected: no culprit.

Every state of these windows builds with ``pip wheel`` under Python 3.11 (the TPU machine's):
from 5ab345f1b4 (2026-06-18 05:50 −07:00, "Drop support for Python 3.11") on, jax's
``requires-python`` is ``>=3.12`` and a 3.11 ``--python`` refuses to build it.

``--good/--bad/--expect`` take another window. Each run gets a fresh workdir; the build cache
(``--cache-dir``, default ``<workroot>/cache``) is shared, a wheel built from a commit being the
same wheel every time (``--fresh-cache``: each run its own). ``--load N`` runs N CPU-bound
processes (busy loops, pinned one per core in turn) beside each run. The benchmark is wrapped in
real_jax/tally.py, so each run counts its benchmark processes itself (benchmarks/real_bisect.py).

Per run: probes (states measured: ends, probes, confirmations), process starts (benchmark
processes), samples (values hourly counted), wall seconds, bench seconds (the processes' wall
time: accelerator seconds on a TPU host, where each one holds the chip), the answer (culprit /
candidate / range / none / error) and whether it matches what the window expects. Exit 1 when a
run named a wrong culprit, 130 when a run was stopped at ``--deadline`` (``--resume`` goes on with
it), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_bisect import HEADER, TALLY, Load, bisect_once, row, skip  # noqa: E402

HERE = Path(__file__).resolve().parent
DISPATCH = f"{HERE / 'real_jax' / 'dispatch_op.py'} --op neg --stat min --calls 200 --blocks 20"
DISPATCH_TPU = f"{HERE / 'real_jax' / 'dispatch_op.py'} --op neg --stat min --calls 200 --blocks 50"
# every block a sample, as many as hourly asks for (HOURLY_SAMPLES): the cost-aware verdicts
DISPATCH_EACH = f"{HERE / 'real_jax' / 'dispatch_op.py'} --op neg --calls 200 --each"
# the same op on the host's CPU device, on an accelerator host (the process still opens the chip):
# on a TPU a blocked eager op is a ≈580 µs round trip to the chip, where JAX's 1 µs is lost
DISPATCH_HOST = f"{DISPATCH_EACH} --device cpu"
# on the accelerator, the calls queued (blocked once a block): what a program's eager ops cost it
DISPATCH_PIPE = f"{DISPATCH_EACH} --pipelined"
FRONTEND = f"{HERE / 'real_jax' / 'frontend_step.py'} --dispatch --repeats 5"
US = r"dispatch_us:\s*(?P<value>[0-9.]+)"
# the front end on an accelerator host: tracing a transformer's training step, every repeat a sample,
# as many as hourly asks for (the process still opens the chip: the backend is the machine's default)
FRONTEND_EACH = f"{HERE / 'real_jax' / 'frontend_step.py'} --each trace"
EACH_MS = r"each_ms:\s*(?P<value>[0-9.]+)"

# window: good, bad, the benchmark, its metric, the commit expected (None: none), the answer's
# class expected, more hourly flags
WINDOWS = {
    "change": dict(good="2026-06-16 20:00", bad="2026-06-17 14:00", bench=DISPATCH, metric=US,
                   expect="03652b8bba", expect_class="exact", flags=[]),
    # the change window's culprit and its two neighbours: the TPU machine's one call
    "tpu": dict(good="2026-06-17 02:00", bad="2026-06-17 05:30", bench=DISPATCH_TPU, metric=US,
                expect="03652b8bba", expect_class="exact", flags=["--warmup-runs", "0"]),
    # the same three states, every block of a process a sample, hourly choosing how many
    "tpu-samples": dict(good="2026-06-17 02:00", bad="2026-06-17 05:30", bench=DISPATCH_EACH, metric=US,
                        expect="03652b8bba", expect_class="exact",
                        flags=["--warmup-runs", "0", "--metric-samples", "all", "--warmup-samples", "2"]),
    # the change window (19 states) on an accelerator host, every block a sample: the op on the host's
    # CPU device (tpu-host) or queued on the accelerator (tpu-pipe)
    "tpu-host": dict(good="2026-06-16 20:00", bad="2026-06-17 14:00", bench=DISPATCH_HOST, metric=US,
                     expect="03652b8bba", expect_class="exact",
                     flags=["--warmup-runs", "0", "--metric-samples", "all", "--warmup-samples", "2"]),
    "tpu-pipe": dict(good="2026-06-16 20:00", bad="2026-06-17 14:00", bench=DISPATCH_PIPE, metric=US,
                     expect="03652b8bba", expect_class="exact",
                     flags=["--warmup-runs", "0", "--metric-samples", "all", "--warmup-samples", "2"]),
    # the front end: tracing the transformer's step got ≈8-10 % faster between 06-08 22:28 and 06-09
    # 01:12 UTC (outside the crash windows); --find-fix: the good end is the fixed, later one
    "tpu-frontend": dict(good="2026-06-09 04:00", bad="2026-06-08 21:45", bench=FRONTEND_EACH, metric=EACH_MS,
                         expect="862f20256a", expect_class="exact",
                         flags=["--find-fix", "--warmup-runs", "0", "--metric-samples", "all",
                                "--warmup-samples", "2", "--min-change", "0.05"]),
    # --find-fix: the good end is the fixed, later one
    "crash": dict(good="2026-06-09 00:00", bad="2026-06-04 22:00", bench=FRONTEND, metric=US,
                  expect="1587193cb8", expect_class="range", flags=["--find-fix"]),
    "flat": dict(good="2026-06-11 12:00", bad="2026-06-11 19:00", bench=DISPATCH, metric=US,
                 expect=None, expect_class="none", flags=[]),
}


def jaxlib_of(python: str) -> str | None:
    p = subprocess.run([python, "-c", "import jaxlib.version as v; print(v.__version__)"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jax-clone", help="a clone of jax-ml/jax holding May–July 2026 (its tree is checked out)")
    ap.add_argument("--python", help="the Python the states run with: jaxlib 0.10.2 installed (or on a .pth)")
    ap.add_argument("--window", choices=sorted(WINDOWS), default="change")
    ap.add_argument("--good"), ap.add_argument("--bad")
    ap.add_argument("--expect", help="the commit expected instead of the window's ('' for none)")
    ap.add_argument("--sha-map", help="the map.txt of a linear copy (benchmarks/tpu/linear_copy.py): the "
                                      "expected commit is looked up there, the copy's commits having new ids")
    ap.add_argument("--deadline", type=float, help="stop a run after this many seconds (hourly's own stop, "
                                                   "SIGINT); --resume goes on with it")
    ap.add_argument("--resume", action="store_true",
                    help="keep a run's workdir when there is one: the bisection goes on where a stopped one "
                         "left off, its tally counting on (the TPU machine's 10-minute calls)")
    ap.add_argument("--bench", help="another benchmark command (python3 SCRIPT ARGS; it is wrapped in tally.py)")
    ap.add_argument("--metric-regex")
    ap.add_argument("--ref", default="origin/main")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--load", type=int, default=0, help="CPU-bound processes beside each run [default: 0]")
    ap.add_argument("--workroot", default="real-history-2026")
    ap.add_argument("--cache-dir")
    ap.add_argument("--fresh-cache", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("extra", nargs="*", help="more hourly bisect flags, after --")
    args = ap.parse_args()
    name = "real_history_2026"
    if not args.jax_clone or not args.python:
        return skip(name, "give --jax-clone (a clone of jax-ml/jax) and --python (a Python with jaxlib 0.10.2, "
                          "e.g. a venv with jaxlib==0.10.2 numpy scipy ml_dtypes opt_einsum wheel setuptools); "
                          "see docs/real-history.md")
    w = dict(WINDOWS[args.window])
    if args.good or args.bad:
        w.update(good=args.good or w["good"], bad=args.bad or w["bad"], expect=None, expect_class="any", flags=[])
    if args.expect is not None:
        w.update(expect=args.expect or None, expect_class=w["expect_class"] if args.expect else "none")
        if args.expect and w["expect_class"] in ("any", "none"):
            w["expect_class"] = "exact"
    if args.sha_map and w["expect"]:
        mapped = [new for orig, _, new in (ln.partition(" ") for ln in Path(args.sha_map).read_text().splitlines())
                  if orig.startswith(w["expect"])]
        if len(mapped) != 1:
            return skip(name, f"{args.sha_map} does not map {w['expect']} (make the copy over the window)")
        w["expect"] = mapped[0][:12]
    if args.bench:
        w["bench"] = args.bench.removeprefix("python3 ").removeprefix("python ")
    if args.metric_regex:
        w["metric"] = args.metric_regex
    clone = Path(args.jax_clone)
    last = max(w["good"], w["bad"])
    have = subprocess.run(["git", "-C", str(clone), "rev-list", "-1", "--first-parent", f"--before={last} +0000",
                           args.ref], capture_output=True, text=True)
    if have.returncode or not have.stdout.strip():
        return skip(name, f"{clone} holds no {args.ref} history up to {last} UTC (fetch jax-ml/jax)")
    if w["expect"] and subprocess.run(["git", "-C", str(clone), "cat-file", "-e", f"{w['expect']}^{{commit}}"],
                                      capture_output=True).returncode:
        return skip(name, f"{clone} does not hold jax commit {w['expect']}; fetch it")
    jaxlib = jaxlib_of(args.python)
    if jaxlib is None:
        return skip(name, f"{args.python} cannot import jaxlib; install jaxlib==0.10.2 there")
    workroot = Path(args.workroot).resolve()
    workroot.mkdir(parents=True, exist_ok=True)
    cache = Path(args.cache_dir).resolve() if args.cache_dir else workroot / "cache"
    bench = f"python3 {TALLY} {w['bench']}"
    results = []
    if not args.json:
        print(f"window {args.window}: {w['good']} .. {w['bad']} UTC, expected "
              f"{w['expect'] or 'no culprit'} ({w['expect_class']}); jaxlib {jaxlib}; load {args.load}; "
              f"bench {w['bench']}\n{HEADER}", flush=True)
    for i in range(1, args.runs + 1):
        workdir = workroot / f"run-{i}"
        hourly_args = ["--only", "jax", "--jax-repo", str(clone), "--ref", args.ref, "--python", args.python,
                       "--good", w["good"], "--bad", w["bad"], "--tz", "UTC", "--bench-cmd", bench,
                       "--metric-regex", w["metric"], "--lower-is-better",
                       "--cache-dir", str(workdir / "cache" if args.fresh_cache else cache),
                       *w["flags"], *args.extra]
        with Load(args.load):
            r = bisect_once(i, hourly_args, workroot, workdir, w["expect"], fresh=not args.resume,
                            deadline=args.deadline)
        results.append(r)
        if not args.json:
            print(row(r), flush=True)
    classes = [a["class"] for r in results for a in r.answers]
    wrong = classes.count("wrong")
    summary = {"window": args.window, "good": w["good"], "bad": w["bad"], "expect": w["expect"],
               "expect_class": w["expect_class"], "jaxlib": jaxlib, "load": args.load,
               "bench": w["bench"], "hourly_args_extra": w["flags"] + args.extra,
               "command": shlex.join([sys.executable, *sys.argv]), "cpus": os.cpu_count(),
               "runs": [r.as_json() for r in results], "exact": classes.count("exact"), "wrong": wrong,
               "process_starts": [r.process_starts for r in results]}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{classes.count('exact')} exact, {wrong} wrong of {args.runs} runs; process starts "
              f"{summary['process_starts']}; raw answers in {workroot}/run-*.json")
    if any(r.stopped for r in results):
        return 130  # as hourly's own stop: call again with --resume to go on
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
