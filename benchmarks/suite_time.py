"""Where the test suite's time goes: each test file's wall time, run alone, and the quick run's.

    python benchmarks/suite_time.py --quick            # `pytest -m "not slow"` on two workers, timed
    python benchmarks/suite_time.py --per-file         # every test file alone on one worker, in turn
    python benchmarks/suite_time.py --per-file tests/test_scan.py tests/test_bisect.py
    python benchmarks/suite_time.py --per-file --marker "not slow"
    python benchmarks/suite_time.py --per-file --write-durations   # and refresh tests/durations.json
    python benchmarks/suite_time.py --fixtures 5      # make_repos afresh against copy_repos

``--per-file`` runs each file with ``-n 0`` (one process), so the files' times add up to what two
workers share: their sum over two is the whole suite's wall time at best (perfect balance), and
the largest file, or the largest group of tests that must share a worker, bounds it from below.
It prints a table (file, tests, wall seconds, seconds in tests marked slow, the slowest test) and,
with ``--json``, writes every test's setup + call + teardown seconds, read from pytest's JUnit XML.
``--write-durations`` writes each file's seconds of test time, quick and slow apart, to
``tests/durations.json``: the weights by which tests/conftest.py hands the files to CI's two
workers heaviest first (files measured here replace their entries; the others are kept).

The machine's load average is printed beside every figure: on a shared machine the times grow
with it, so compare files measured at a like load, and relative costs rather than seconds.
Nothing here is asserted; the figures are published in benchmarks/README.md ("The test suite's time").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0]) if Path("/proc/loadavg").exists() else float("nan")


def slow_ids(files: list[str]) -> set[str]:
    """Node ids of the tests the suite marks slow (its conftest decides: markers, SLOW, engines)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q",
                          "--collect-only", "-m", "slow", *files], cwd=ROOT, capture_output=True, text=True).stdout
    return {line.strip() for line in out.splitlines() if "::" in line}


def junit_times(path: Path) -> dict[str, float]:
    """test id -> seconds (pytest's JUnit ``time`` is setup + call + teardown)."""
    times = {}
    for case in ET.parse(path).iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        parts = cls.split(".")
        file = "/".join(parts[:2]) + ".py" if len(parts) >= 2 else cls
        times[f"{file}::{name}"] = float(case.get("time", "0"))
    return times


def per_file(files: list[str], marker: str | None) -> list[dict]:
    slow = slow_ids(files)
    rows = []
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            xml = Path(tmp) / "j.xml"
            cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q",
                   f"--junitxml={xml}", f]
            if marker:
                cmd += ["-m", marker]
            l0, t0 = load(), time.monotonic()
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            wall, l1 = time.monotonic() - t0, load()
            tests = junit_times(xml) if xml.exists() else {}
        top = max(tests.items(), key=lambda kv: kv[1], default=("", 0.0))
        rows.append({"file": f, "rc": proc.returncode, "tests": len(tests), "wall_s": round(wall, 1),
                     "slow_s": round(sum(t for k, t in tests.items() if k in slow), 1),
                     "slowest": top[0].split("::", 1)[-1], "slowest_s": round(top[1], 1),
                     "load": [l0, l1], "times": tests, "slow_ids": sorted(k for k in tests if k in slow)})
        r = rows[-1]
        print(f"{f:38} {r['tests']:4} tests {r['wall_s']:7.1f} s  (slow {r['slow_s']:6.1f} s)  "
              f"slowest {r['slowest_s']:5.1f} s {r['slowest'][:50]}  load {l0:.1f}->{l1:.1f}  rc {proc.returncode}",
              flush=True)
    total = sum(r["wall_s"] for r in rows)
    slow_total = sum(r["slow_s"] for r in rows)
    print(f"{'sum':38} {sum(r['tests'] for r in rows):4} tests {total:7.1f} s  (slow {slow_total:6.1f} s); "
          f"over two workers at best {total / 2:.0f} s")
    return rows


def write_durations(rows: list[dict], path: Path) -> dict:
    """Each measured file's quick and slow seconds and test counts into ``path`` (keyed by file name,
    as tests/conftest.py weighs them), over what it held; files that failed to run are left out."""
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    for r in rows:
        if not r["times"] or r["rc"] not in (0, 1):
            continue
        slow = {k for k in r["times"] if k in r["slow_ids"]}
        known[Path(r["file"]).name] = {
            "quick_s": round(sum(t for k, t in r["times"].items() if k not in slow), 1),
            "quick": len(r["times"]) - len(slow),
            "slow_s": round(sum(r["times"][k] for k in slow), 1), "slow": len(slow)}
    # a file a line: a branch that re-measures a file changes its line alone
    path.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(known.items()))
                    + "\n}\n")
    return known


def quick(marker: str, workers: int) -> dict:
    l0, t0 = load(), time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", str(workers), "-q",
                           "-m", marker], cwd=ROOT, capture_output=True, text=True)
    wall, l1 = time.monotonic() - t0, load()
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    print(f'pytest -m "{marker}" -n {workers}: {wall:.1f} s wall, load {l0:.1f}->{l1:.1f}: {last}')
    return {"marker": marker, "workers": workers, "wall_s": round(wall, 1), "load": [l0, l1], "summary": last,
            "rc": proc.returncode}


def fixtures(n: int) -> dict:
    """Seconds to make the demo's repositories afresh (what ``made`` did per test before) against
    copying a pristine set (what it does now), each ``n`` times: the median of each."""
    import statistics
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import copy_repos  # noqa: E402

    from hourly.demo.repos import DEMO_CHANGES, make_repos
    with tempfile.TemporaryDirectory() as tmp:
        pristine = make_repos(Path(tmp) / "pristine", DEMO_CHANGES)
        made, copied = [], []
        for i in range(n):
            t0 = time.monotonic()
            make_repos(Path(tmp) / f"m{i}", DEMO_CHANGES)
            made.append(time.monotonic() - t0)
            t0 = time.monotonic()
            copy_repos(pristine, Path(tmp) / f"c{i}")
            copied.append(time.monotonic() - t0)
    r = {"make_repos_s": round(statistics.median(made), 3), "copy_repos_s": round(statistics.median(copied), 3),
         "n": n, "load": load()}
    print(f"demo repositories: make_repos {r['make_repos_s']:.3f} s, copy_repos {r['copy_repos_s']:.3f} s "
          f"(median of {n}; {r['make_repos_s'] / r['copy_repos_s']:.0f}x; load {r['load']:.1f})")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="test files (default: every tests/test_*.py)")
    ap.add_argument("--per-file", action="store_true")
    ap.add_argument("--quick", action="store_true", help='time `pytest -m "not slow"` on --workers workers')
    ap.add_argument("--marker", default=None, help='-m expression (--quick: default "not slow")')
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fixtures", type=int, metavar="N", help="time make_repos against copy_repos N times")
    ap.add_argument("--write-durations", action="store_true",
                    help="with --per-file: write each file's seconds to tests/durations.json")
    ap.add_argument("--json", type=Path, help="write every figure, each test's seconds included, here")
    a = ap.parse_args()
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    files = a.files or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))
    result: dict = {"cpus": os.cpu_count()}
    if a.quick:
        result["quick"] = quick(a.marker or "not slow", a.workers)
    if a.per_file:
        result["files"] = per_file(files, a.marker)
        if a.write_durations:
            if a.marker:
                ap.error("--write-durations needs every test of each file: leave out --marker")
            write_durations(result["files"], ROOT / "tests" / "durations.json")
    if a.fixtures:
        result["fixtures"] = fixtures(a.fixtures)
    if not (a.quick or a.per_file or a.fixtures):
        ap.error("say --quick, --per-file, --fixtures N, or several")
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
