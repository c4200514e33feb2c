"""What one benchmark process cost, read off the times its output lines were read
(hourly.adapters.proc.Result.line_times): seconds from its start to its first sample (opening the
chip, imports, set-up), seconds per sample after it, and seconds from its last sample to its exit
(the interpreter's end: on a TPU host, letting the chip go takes seconds, and the process holds
the chip until then). A sample is a line the metric is read from: a match of the metric regex, or
a ``METRIC name: value`` line in named mode.

hourly asks every benchmark process for a number of samples through the environment
(:data:`SAMPLES_VAR`, ``HOURLY_SAMPLES=n``); a benchmark that does not read it still works, and the
run says that the count was not followed (:func:`followed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the variable every benchmark run gets: the samples hourly asks one process for
SAMPLES_VAR = "HOURLY_SAMPLES"

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


@dataclass(frozen=True)
class Timing:
    """One process's cost: seconds to its first sample, seconds per sample after it (None with
    fewer than two samples), the samples timed, and seconds from the last sample to the process's
    exit (None: unknown — a run stored before it was kept, or one that timed out)."""

    first: float
    per_sample: float | None
    samples: int
    after: float | None = None

    @property
    def besides_samples(self) -> float:
        """The seconds the process cost that its samples did not: before the first, after the last."""
        return self.first + (self.after or 0.0)

    def as_dict(self) -> dict[str, float | int | None]:
        return {"first_sample_s": round(self.first, 4),
                **({} if self.after is None else {"after_last_sample_s": round(self.after, 4)}),
                # significant digits, not decimals: a fast benchmark's few microseconds a sample
                # rounded to 0.0, and a resumed bisection, reading its stored runs, then knew no cost
                # and started again from the default count
                "per_sample_s": None if self.per_sample is None else float(f"{self.per_sample:.4g}"),
                "timed_samples": self.samples}

    @classmethod
    def of(cls, run: dict) -> Timing | None:
        """A stored run's timing (``Run.as_dict``); None for a run stored without one."""
        first = run.get("first_sample_s")
        if not isinstance(first, (int, float)):
            return None
        per = run.get("per_sample_s")
        after = run.get("after_last_sample_s")
        return cls(float(first), float(per) if isinstance(per, (int, float)) else None,
                   int(run.get("timed_samples") or 1), float(after) if isinstance(after, (int, float)) else None)


def timing(output: str, line_times: tuple[float, ...] | list[float], pattern: re.Pattern,
           duration: float | None = None) -> Timing | None:
    """The process's :class:`Timing`: the stamps of the lines where ``pattern`` matches, and
    ``duration`` (the process's whole life, None when it did not exit of itself) less the last of
    them. None when its lines were not stamped (a container's runs, a result read back), the stamps
    do not line up with the output's lines, or no line holds a sample."""
    if not line_times:
        return None
    lines = _LINE.findall(output)
    if len(lines) != len(line_times):
        return None
    stamps = [t for line, t in zip(lines, line_times, strict=True) if pattern.search(line)]
    if not stamps:
        return None
    per = (stamps[-1] - stamps[0]) / (len(stamps) - 1) if len(stamps) > 1 else None
    after = None if duration is None else max(duration - stamps[-1], 0.0)
    return Timing(stamps[0], per, len(stamps), after)


def asked_of(env: dict[str, str]) -> int | None:
    """The samples a run's environment asks for (:data:`SAMPLES_VAR`), None when it asks for none
    (or for no whole number of them)."""
    raw = env.get(SAMPLES_VAR, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def followed(asked: int | None, printed: int) -> bool:
    """Whether a process that printed ``printed`` samples (its warm-up ones included) followed the
    count asked for; a run asked for none follows."""
    return asked is None or printed == asked
