"""The records of a bisection: a window to bisect and a judged state (a probe)."""

from __future__ import annotations

from hourly.model import Pair

from dataclasses import dataclass, field
from hourly.analysis.bisection import Verdict


@dataclass
class Window:
    good_time: int
    bad_time: int
    origin: str  # "detect", "flags" or "exit transitions"
    note: str = ""
    #: "regression" (metric, worse after) or "crash" (exit status good → bad); with --find-fix,
    #: "improvement" (metric, better after) or "fix" (exit status bad → good)
    kind: str = "regression"



@dataclass
class Probe:
    role: str  # end, probe, confirm, blame
    pair: Pair
    verdict: Verdict
    reason: str = ""
    samples: list[float] = field(default_factory=list)
    returncodes: list = field(default_factory=list)
    builds: int = 0
    runs: int = 0
    between: bool = False  # between the ends: another step comes after this state

    def row(self) -> dict:
        return {"role": self.role, "xla": self.pair.xla, "jax": self.pair.jax, "verdict": self.verdict.value,
                "between": self.between, "reason": self.reason, "samples": self.samples, "returncodes": self.returncodes,
                "builds": self.builds, "runs": self.runs}

