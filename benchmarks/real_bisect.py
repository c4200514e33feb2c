"""What the real-history bisection benchmarks share: run `hourly bisect --json` once, count, classify.

Used by benchmarks/real_noise_bisect.py (2024 history, eager dispatch) and
benchmarks/real_history_2026.py (2026 history, a transformer step's front end). Standard library
only: these scripts run where hourly is installed, and on the TPU machine.

What one run is counted by, none of it taken from hourly's own totals alone (they change with the
core, and a benchmark must count the same way before and after):

- ``process starts``: benchmark processes, from the tally file each one appends a line to
  (``real_jax/tally.py`` wraps the benchmark: ``--bench-cmd "python3 real_jax/tally.py BENCH ..."``);
  beside it, the runs hourly recorded in its store (warm-up runs included), as a cross-check;
- ``bench seconds``: the sum of those processes' wall times (on an accelerator host every
  benchmark process holds the chip from start to end: accelerator seconds);
- ``samples``: the values hourly counted (warm-up runs excluded), from its store;
- ``probes``: the states the bisection measured, one row each in the answer's ``probes`` (the ends,
  the probes, the confirmations, the edge checks); without an answer (the ends do not differ),
  the rows of the store's ``bisect_probes``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TALLY = HERE / "real_jax" / "tally.py"
TALLY_ENV = "REAL_BISECT_TALLY"


def classify(answer: dict, expect: str | None) -> tuple[str, str]:
    """(class, text) of one answer: exact / wrong / candidate / range / none."""
    if answer.get("error"):
        return "none", f"no answer: {answer['error']}"
    c = answer.get("culprit")
    if c:
        ok = expect is not None and c["sha"].startswith(expect)
        return ("exact" if ok else "wrong"), f"culprit {c['sha'][:10]} {c.get('subject', '')!r}"
    cand = answer.get("candidate")
    if cand:
        return "candidate", f"candidate (not confirmed) {cand['sha'][:10]} {cand.get('subject', '')!r}"
    if answer.get("range"):
        shas = " ".join(sha[:10] for sha in answer["range"][:8]) + (" …" if len(answer["range"]) > 8 else "")
        return "range", f"range of {len(answer['range'])} commits [{shas}] ({_short(answer.get('reason'))})"
    return "none", f"no culprit ({_short(answer.get('reason'))})"


def _short(reason: str | None, width: int = 160) -> str:
    """A reason cut for the table (the whole one is in run-<i>.json): a range's reason lists a log per state."""
    text = str(reason)
    return text if len(text) <= width else text[:width - 1] + "…"


def holds(answer: dict, expect: str | None) -> bool | None:
    """Whether a candidate or range holds the expected commit (None: no such answer, or nothing expected)."""
    if expect is None:
        return None
    if answer.get("candidate"):
        return answer["candidate"]["sha"].startswith(expect)
    if answer.get("range"):
        return any(sha.startswith(expect) for sha in answer["range"])
    return None


def tallied(path: Path) -> list[dict]:
    """The benchmark processes a run started, one dict per line of the tally file."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a killed process
    return out


def store_counts(workdir: Path) -> dict:
    """Runs (warm-up included) and samples hourly recorded in the workdir's store; {} without one."""
    db = workdir / "hourly.sqlite"
    if not db.is_file():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        runs = samples = 0
        for raw_runs, raw_samples in con.execute("SELECT runs, samples FROM measurements"):
            runs += len(json.loads(raw_runs or "[]"))
            samples += len(json.loads(raw_samples or "[]"))
        # the probes of every bisection in the store: also those of a run that ended without an answer
        (probe_rows,) = con.execute("SELECT count(*) FROM bisect_probes").fetchone()
        return {"store_runs": runs, "samples": samples, "probe_rows": probe_rows}
    except sqlite3.Error as e:  # the schema moved on: say so rather than count wrong
        return {"store_error": str(e)}
    finally:
        con.close()


@dataclass
class Run:
    """One `hourly bisect` run of a benchmark and what it cost."""
    index: int
    rc: int
    wall_s: float
    answers: list[dict]
    process_starts: int
    bench_s: float
    crashed_starts: int
    store: dict = field(default_factory=dict)
    load: dict = field(default_factory=dict)
    stopped: bool = False

    def as_json(self) -> dict:
        return {"run": self.index, "rc": self.rc, "wall_s": self.wall_s, "stopped": self.stopped, "answers": self.answers,
                "process_starts": self.process_starts, "crashed_starts": self.crashed_starts,
                "bench_s": self.bench_s, **self.store, "load": self.load}


def run_hourly(cmd: list[str], env: dict, deadline: float | None) -> tuple[int, str, str, bool]:
    """(exit status, stdout, stderr, stopped) of hourly run in its own process group. Past
    ``deadline`` seconds (or on Ctrl-C) the group gets SIGINT — hourly's own stop: it ends its
    benchmark and records what it measured, and a later run with the same workdir goes on — then
    SIGKILL 30 s later."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=deadline)
        return p.returncode, out, err, False
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as e:
        os.killpg(p.pid, signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        if isinstance(e, KeyboardInterrupt):
            raise
        return p.returncode, out, err, True


def bisect_once(index: int, hourly_args: list[str], workroot: Path, workdir: Path, expect: str | None,
                env: dict | None = None, fresh: bool = True, deadline: float | None = None) -> Run:
    """Run ``hourly bisect --json`` (its arguments in ``hourly_args``, without --workdir/--json) in a
    fresh ``workdir`` (``fresh=False``: the one there, a stopped bisection going on, its tally
    counting on), stopped after ``deadline`` seconds; its stdout and stderr are kept beside it as
    run-<index>.json/.stderr."""
    if fresh:
        subprocess.run(["rm", "-rf", str(workdir)], check=True)
    workdir.mkdir(parents=True, exist_ok=True)
    tally = workdir / "tally.jsonl"
    # --progress: the progress lines (one per benchmark process of a verdict) go to the .stderr kept
    # beside the answer, as a person at the terminal sees them
    cmd = [sys.executable, "-m", "hourly", "bisect", *hourly_args, "--workdir", str(workdir), "--json", "--progress"]
    load_before = os.getloadavg()
    start = time.monotonic()
    rc, stdout, stderr, stopped = run_hourly(cmd, {**os.environ, **(env or {}), TALLY_ENV: str(tally)}, deadline)
    wall = time.monotonic() - start
    load_after = os.getloadavg()
    (workroot / f"run-{index}.stderr").write_text(stderr)
    (workroot / f"run-{index}.json").write_text(stdout)  # the whole answer, probes and samples
    try:
        answers = json.loads(stdout)["regressions"]
    except (ValueError, KeyError):
        # hourly refuses a window whose ends do not differ with one line and exit 1: no step
        last = (stderr.strip().splitlines() or ["(no output)"])[-1]
        answers = [{"error": f"stopped after {deadline:.0f} s; go on with --resume" if stopped else last}]
    out = []
    for a in answers:
        cls, text = classify(a, expect)
        out.append({"class": cls, "text": text, "holds_expected": holds(a, expect), "builds": a.get("builds"),
                    "runs": a.get("runs"), "states": a.get("states"), "probes": len(a.get("probes") or []),
                    "confirmed": a.get("confirmed")})
    store = store_counts(workdir)
    for a in out:  # an answer-less run (the ends did not differ, stopped): the store's probe rows
        if not a["probes"] and store.get("probe_rows"):
            a["probes"] = store["probe_rows"]
    procs = tallied(tally)
    # a run resumed over several calls: its wall time is theirs together
    with open(workdir / "walls.txt", "a") as f:
        f.write(f"{wall:.1f}\n")
    wall = sum(float(x) for x in (workdir / "walls.txt").read_text().split())
    return Run(index, rc, round(wall, 1), out, len(procs),
               round(sum(x.get("seconds", 0.0) for x in procs), 1), sum(1 for x in procs if x.get("rc")),
               store,
               {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
               stopped)


def row(r: Run) -> str:
    """One line of the table for each answer of a run."""
    lines = []
    for a in r.answers or [{"class": "none", "text": "(no answer)", "probes": 0}]:
        match = {"exact": "yes", "wrong": "NO"}.get(a["class"]) or (
            "holds it" if a.get("holds_expected") else "-" if a.get("holds_expected") is None else "misses it")
        lines.append(f"{r.index:>3} {a.get('probes', 0):>6} {r.process_starts:>6} "
                     f"{r.store.get('samples', '?'):>7} {r.wall_s:>7.0f} {r.bench_s:>7.0f} {r.rc:>4}  "
                     f"{match:9} {a['class']:9} {a['text']}")
    return "\n".join(lines)


HEADER = f"{'run':>3} {'probes':>6} {'starts':>6} {'samples':>7} {'wall_s':>7} {'bench_s':>7} {'exit':>4}  " \
         f"{'matches':9} {'answer':9} detail"


class Load:
    """``n`` CPU-bound processes beside the benchmark (busy Python loops, each pinned to one core
    in turn), started on entry and ended, by their own ids, on exit."""

    def __init__(self, n: int):
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Load:
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [None]
        for i in range(self.n):
            core = cores[i % len(cores)]
            pin = f"import os; os.sched_setaffinity(0, {{{core}}})\n" if core is not None else ""
            self.procs.append(subprocess.Popen([sys.executable, "-c", pin + "while True: pass"]))
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def skip(name: str, why: str) -> int:
    """The line a benchmark prints when it cannot run here (CI: no clone, no jaxlib); exit 0."""
    print(f"{name}: skipped — {why}")
    return 0
