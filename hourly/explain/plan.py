"""The pure part of ``hourly explain``: which culprits, the XLA flags of each run, where things go,
the verdict words of the sweep and the revert check, and the stored record (``explain.json``)."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from hourly.adapters.store import Store
from hourly.answers import Answer, Commit
from hourly.errors import UserError
from hourly.measure.settings import Settings
from hourly.model import Pair, cut_side

#: the folder of a workdir where explain keeps its dumps, repros and records
FOLDER = "explain"
RECORD = "explain.json"
#: the origin of explain's build rows
EXPLAIN_ORIGIN = "explain"


@dataclass
class Target:
    step: int                 # 1-based, in the order the bisections finished
    good: Pair
    bad: Pair
    culprit: Commit | None    # the answer's culprit, when the bisection named one commit
    answer: Answer | None = None

    @property
    def name(self) -> str:
        return f"step-{self.step}"

    def title(self) -> str:
        c = self.culprit
        if c:
            return f"{c.repo} {c.sha[:10]} {c.subject}".rstrip()
        return f"xla {cut_side(self.good.xla, 10)}→{cut_side(self.bad.xla, 10)} jax {self.good.jax[:10]}→{self.bad.jax[:10]}"


@dataclass
class Options:
    sweep: bool = False
    try_flags: list[str] = field(default_factory=list)
    revert_check: bool = False
    revert_ref: str | None = None     # default: the settings' ref
    max_passes: int = 8               # passes measured in the sweep, at most
    repeats: int | None = None        # per setting in the sweep and the revert check [default: max(repeats, 3)]
    op_times: bool = True             # the dump runs under the JAX profiler, their op times joined onto the diff


def targets_from_store(store: Store, s: Settings, step: int | None = None,
                       key: str | None = None) -> tuple[list[Target], str | None]:
    """Every finished bisection of the current build with a last-good and a first-bad state
    (``step``: that one), numbered among them; and the line naming the answers of another build
    that were left out (None: none was). The current build: ``key``, else the one the workdir's
    investigation speaks for (hourly.scan.identity.answers_by_build, as the report takes them)."""
    from hourly.scan.identity import answers_by_build
    split = answers_by_build(store, s, key)
    left_out = split.left_out(store)
    out = []
    for i, a in enumerate((a for a in split.current if a.last_good and a.first_bad), 1):
        assert a.last_good is not None and a.first_bad is not None
        out.append(Target(i, a.last_good, a.first_bad, a.culprit, a))
    if not out:
        if left_out:
            raise UserError(f"no bisected regression under this build in {store.workdir}: {left_out}",
                            "run `hourly bisect` under this build, or explain with the build those were measured with")
        raise UserError(f"no bisected regression in {store.workdir}", "run `hourly bisect` first")
    if step is not None:
        picked = [t for t in out if t.step == step]
        if not picked:
            raise UserError(f"there is no step {step} in {store.workdir} (steps 1 to {len(out)})",
                            f"pass --step between 1 and {len(out)}")
        return picked, left_out
    return out, left_out


def xla_flags(user_env: dict[str, str], *extra: str, inherited: dict[str, str] | None = None) -> str:
    """The user's ``XLA_FLAGS`` (``--env`` first, else this process's environment) with ``extra``
    after them: added, never replacing what the user set."""
    inherited = dict(os.environ) if inherited is None else inherited
    base = user_env.get("XLA_FLAGS", inherited.get("XLA_FLAGS", ""))
    return " ".join(x for x in [base.strip(), *extra] if x)


def dump_flags(out: Path, passes: bool = False, modules: list[str] | None = None) -> list[str]:
    flags = [f"--xla_dump_to={out}", "--xla_dump_hlo_as_text"]
    if passes:
        flags.append("--xla_dump_hlo_pass_re=.*")
    if modules:
        flags.append("--xla_dump_hlo_module_re=" + "|".join(_re_escape(m) for m in modules))
    return flags


def _re_escape(name: str) -> str:
    return "".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in name)


def target_dir(workdir: Path, target: Target) -> Path:
    return Path(workdir) / FOLDER / target.name


def restored_fraction(value: float, good: float, bad: float) -> float:
    """How much of the step from ``good`` to ``bad`` a setting measuring ``value`` gives back (1: all)."""
    return (value - bad) / (good - bad) if good != bad else 0.0


def repro_commands(optimized: Path, before: Path | None, platform: str) -> list[str]:
    """The command lines that replay a dumped module (XLA's tools, built from the XLA tree)."""
    lines = [shlex.join(["run_hlo_module", f"--platform={platform}", "--reference_platform=",
                         "--run_xla_backend_only=true", "--xla_disable_all_hlo_passes=true", str(optimized)])]
    if before is not None:
        lines.append(shlex.join(["run_hlo_module", f"--platform={platform}", "--reference_platform=", str(before)]))
        lines.append(shlex.join(["hlo-opt", f"--platform={platform.lower()}", "--stage=hlo", str(before)]))
    else:
        lines.append(shlex.join(["hlo-opt", f"--platform={platform.lower()}", "--stage=llvm", str(optimized)]))
    return lines


def platform_of(path: Path) -> str:
    """``CPU`` or ``CUDA`` from a dump file's name (``…cpu_after_optimizations.txt``)."""
    name = Path(path).name
    if ".cpu_after" in name:
        return "CPU"
    if ".gpu_after" in name or ".sm_" in name:
        return "CUDA"
    return "Host"


def save_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str))
    os.replace(tmp, path)


def load_records(workdir: Path) -> list[dict]:
    """Every stored explain record of a workdir, by step."""
    folder = Path(workdir) / FOLDER
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.glob(f"step-*/{RECORD}"), key=lambda p: int(p.parent.name.split("-")[1])):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return out
