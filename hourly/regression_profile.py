"""``hourly profile``: traces and memory profiles of the last-good and first-bad states, compared.

For each regression (the bisected culprit's ends when a bisection stored them, else the scan's
detected steps, else ``--good``/``--bad`` given explicitly) both states are made the installed build
again (from the wheel cache when possible), the benchmark runs once under the JAX profiler
(:mod:`hourly.trace`), and the two captures are compared: device ops whose total time changed most,
and memory in use by allocation site. Everything lands in ``<workdir>/profiles/<name>/``.
Capture is opt-in: it never changes the numbers of a scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .bench import bench_env
from .build import Workspace
from .capture import TraceOptions, capture
from .config import Settings
from .model import Pair
from .profiles import compare
from .errors import UserError
from .locks import holds_store_lock
from .resolve import resolve_pairs
from .scan import Measurer, open_repos, pin_of, show, trees
from .steps import find_steps
from .store import Store
from .timeparse import parse_time


@dataclass
class Target:
    name: str
    good: Pair
    bad: Pair


@dataclass
class ProfileResult:
    target: Target
    good_dir: Path
    bad_dir: Path
    comparison_path: Path
    text: str


def parse_state(text: str, s: Settings) -> Pair:
    """``xla@<sha>,jax@<sha>`` (either may be omitted: then it is resolved at the other's time)
    or a time, resolved like the scan does."""
    xla, jax = open_repos(s)
    pin = pin_of(s, jax)  # --only: the pinned side is what it is at every instant
    parts = dict(p.split("@", 1) for p in text.split(",") if "@" in p)
    if parts:
        if set(parts) - {"xla", "jax"}:
            raise UserError(f"cannot read state {text!r}", "write xla@<sha>,jax@<sha> or a time")
        if pin and pin.side in parts:
            raise UserError(f"{pin.side} is pinned in this hunt (--only): {text!r} names a commit of it",
                            f"name a {pin.hunted} commit or a time")
        shas = {name: repo.resolve_sha(parts[name]) for name, repo in (("xla", xla), ("jax", jax))
                if name in parts}
        if pin:
            shas[pin.side] = pin.label
        if len(shas) == 2:
            return Pair(shas["xla"], shas["jax"])
        known = next(iter(shas))
        info = (xla if known == "xla" else jax).commits([shas[known]])[shas[known]]
        from datetime import datetime, timezone
        t = datetime.fromtimestamp(info.committer_time, timezone.utc)
        pair = resolve_pairs(xla, jax, [t], s.ref, s.first_parent, pin)[0].pair
        return Pair(shas.get("xla", pair.xla), shas.get("jax", pair.jax))
    t = parse_time(text, s.tz).when
    points = resolve_pairs(xla, jax, [t], s.ref, s.first_parent, pin)
    if not points:
        raise UserError(f"no commit of both repositories before {text!r}", "give a later time")
    return points[0].pair


def targets_from_store(store: Store, s: Settings) -> list[Target]:
    culprits = [(Pair(**a["last_good"]), Pair(**a["first_bad"])) for a in store.bisection_results()
                if a.get("last_good") and a.get("first_bad")]
    if culprits:  # the bisection's last-good/first-bad states, when there are any
        return [Target(f"regression-{i}", good, bad) for i, (good, bad) in enumerate(culprits, 1)]
    points = show(store, s).points
    if not any(p.status == "ok" for p in points):
        return []
    steps = [st for st in find_steps(points, s.higher_is_better)[0] if st.kind.value == "regression"]
    return [Target(f"step-{i}", Pair(st.before.xla, st.before.jax), Pair(st.after.xla, st.after.jax))
            for i, st in enumerate(steps, 1)]


@holds_store_lock
def run_profiles(store: Store, s: Settings, targets: list[Target], options: TraceOptions,
                 say=lambda text: None) -> list[ProfileResult]:
    if not targets:
        raise UserError("no regression to profile in this workdir",
                        "run `hourly scan` (and `hourly bisect`) first, or pass --good and --bad")
    xla, jax = open_repos(s)
    spec = s.bench_spec()
    env = bench_env(spec)
    results = []
    with Workspace(trees(xla, jax), force=s.force) as ws:
        m = Measurer(s, store, xla, jax, ws, pin_of(s, jax))
        for target in targets:
            base = store.workdir / "profiles" / target.name
            dirs = {}
            for side, pair in (("good", target.good), ("bad", target.bad)):
                say(f"{target.name}: {side} state xla {pair.xla[:10]} jax {pair.jax[:10]}")
                build = m.builder.prepare(pair)
                if not build.ok:
                    raise UserError(f"the {side} state of {target.name} does not build ({build.log_path})",
                                    "profile another pair with --good/--bad")
                cap = capture(spec.cmd, base / side, env=env, cwd=spec.cwd, python=s.python,
                              options=options, timeout=spec.timeout, check=False)
                if not cap.ok:
                    raise UserError(f"the benchmark failed under the profiler for the {side} state "
                                    f"(log {cap.out_dir / 'run.log'})", "check that it runs without hourly trace")
                dirs[side] = cap.out_dir
            comparison = compare(dirs["good"], dirs["bad"])
            text = comparison.render()
            path = base / "comparison.txt"
            path.write_text(text)
            results.append(ProfileResult(target, dirs["good"], dirs["bad"], path, text))
    return results
