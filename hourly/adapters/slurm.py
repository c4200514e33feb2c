"""The one adapter over Slurm's commands: ``sbatch``, ``squeue``, ``sacct``, ``scancel``, ``sinfo``.

Every call goes through hourly/adapters/proc.py. A call that fails because the controller is busy or out
of reach (``Socket timed out``, ``Unable to contact slurm controller`` …) is tried again with
tenacity; any other failure is a :class:`~hourly.errors.ProcessError` at once.

A job's state is read from ``squeue --states=all`` (which knows finished jobs for the
controller's ``MinJobAge``, 300 s by default) and, for a job squeue no longer knows, from
``sacct`` where the cluster keeps accounting. A job neither knows is :attr:`JobState.UNKNOWN`.
docs/slurm.md says why hourly drives these commands itself rather than through submitit.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from hourly.adapters import proc
from hourly.errors import ProcessError, UserError
from hourly.model import Named

#: words in a Slurm command's output that mean "the controller is busy or unreachable, try again"
TRANSIENT = ("socket timed out", "unable to contact slurm controller", "connection refused",
             "resource temporarily unavailable", "zero bytes were transmitted", "transport endpoint",
             "slurmctld is not responding", "connection timed out", "communication connection failure",
             "slurm_receive_msg", "temporarily unable to accept job", "try again later")
ATTEMPTS = 5
WAIT = wait_exponential(multiplier=0.5, min=0.5, max=20)
CALL_TIMEOUT = 120
#: the field separator of squeue/sacct's output (a job name or comment may hold "|")
SEP = "\x1f"


class JobState(Named):
    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    SUSPENDED = "SUSPENDED"
    REQUEUED = "REQUEUED"
    RESIZING = "RESIZING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    UNKNOWN = "UNKNOWN"  # neither squeue nor sacct knows the job (any more)

    @classmethod
    def parse(cls, text: str) -> "JobState":
        """``CANCELLED by 0``, ``RUNNING``, ``OUT_OF_ME+`` (sacct cuts) → the state."""
        word = text.strip().split(" ")[0].rstrip("+").upper()
        for s in cls:
            if s.value == word or (text.strip().endswith("+") and s.value.startswith(word) and word):
                return s
        return cls.UNKNOWN

    @property
    def active(self) -> bool:
        """Queued or running: the job may still write its result."""
        return self in (JobState.PENDING, JobState.CONFIGURING, JobState.RUNNING, JobState.COMPLETING,
                        JobState.SUSPENDED, JobState.REQUEUED, JobState.RESIZING)

    @property
    def cluster_fault(self) -> bool:
        """Ended by the cluster, not by the job's own work: worth submitting again."""
        return self in (JobState.CANCELLED, JobState.TIMEOUT, JobState.NODE_FAIL, JobState.PREEMPTED,
                        JobState.BOOT_FAIL, JobState.DEADLINE, JobState.OUT_OF_MEMORY)


@dataclass(frozen=True)
class Job:
    id: str
    name: str
    state: JobState
    comment: str = ""


def transient(e: BaseException) -> bool:
    """Whether a failed Slurm command failed because of the controller (busy, restarting, away)."""
    return isinstance(e, ProcessError) and (e.timed_out or any(w in e.tail.lower() for w in TRANSIENT))


@dataclass(frozen=True)
class SubmitOptions:
    """What every job of a run asks of the cluster (``--partition``, ``--time``, ``--gres``, the rest)."""

    partition: str | None = None
    time: str | None = None
    gres: str | None = None
    extra: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        out = []
        for flag, value in (("--partition", self.partition), ("--time", self.time), ("--gres", self.gres)):
            if value:
                out.append(f"{flag}={value}")
        return out + list(self.extra)


class Slurm:
    """The cluster as hourly sees it. ``attempts``: tries of a call the controller failed."""

    def __init__(self, attempts: int = ATTEMPTS, wait: Any = WAIT) -> None:
        self.attempts = attempts
        self.wait = wait

    def _run(self, argv: list[str], check: bool = True, env: dict[str, str] | None = None) -> proc.Result:
        retry = Retrying(stop=stop_after_attempt(self.attempts), wait=self.wait,
                         retry=retry_if_exception(transient), reraise=True)
        return retry(proc.run, argv, timeout=CALL_TIMEOUT, check=check, env=env)

    @staticmethod
    def installed() -> bool:
        return all(shutil.which(c) for c in ("sbatch", "squeue", "scancel", "sinfo"))

    def reachable(self) -> str | None:
        """None when a controller answers and a partition is up; else why not (one line)."""
        if not self.installed():
            return "Slurm's commands (sbatch, squeue, scancel, sinfo) are not on PATH"
        try:
            res = Slurm(attempts=1)._run(["sinfo", "-h", "-o", "%P %a"], check=False)
        except UserError as e:
            return e.one_line()
        if not res.ok:
            return f"sinfo failed: {res.tail(1) or res.returncode}"
        if not any(line.split()[-1:] == ["up"] for line in res.output.splitlines()):
            return "no partition is up (sinfo)"
        return None

    def submit(self, script: Path, *, name: str, comment: str, output: Path, chdir: Path,
               options: SubmitOptions = SubmitOptions(), env: dict[str, str] | None = None) -> str:
        """``sbatch`` ``script``; returns the job id. ``env``: the environment sbatch is started in
        (None: this process's), which the job gets (sbatch's ``--export=ALL``): how a secret reaches
        the job without being a word of its script."""
        argv = ["sbatch", "--parsable", f"--job-name={name}", f"--comment={comment}", f"--output={output}",
                f"--chdir={chdir}", "--kill-on-invalid-dep=yes", *options.argv(), str(script)]
        try:
            res = self._run(argv, env=env)
        except ProcessError as e:
            raise UserError(f"sbatch refused the job: {_last(e.tail)}",
                            "check --partition, --time, --gres and --slurm-arg against `sinfo` and the "
                            "cluster's rules") from e
        return res.output.strip().splitlines()[-1].split(";")[0]

    def jobs(self, name: str) -> list[Job]:
        """Every job named ``name`` that squeue knows, finished ones included."""
        res = self._run(["squeue", "-h", "--states=all", f"--name={name}", "-o",
                         SEP.join(("%i", "%T", "%j", "%k"))])
        return [j for j in map(_job, res.output.splitlines()) if j]

    def accounted(self, ids: list[str]) -> dict[str, Job]:
        """What sacct says of ``ids`` (nothing where the cluster keeps no accounting)."""
        if not ids or not shutil.which("sacct"):
            return {}
        res = self._run(["sacct", "-n", "-P", "-X", f"--delimiter={SEP}", "-j", ",".join(ids),
                         "-o", "JobID,State,JobName,Comment"], check=False)
        if not res.ok:  # "Slurm accounting storage is disabled"
            return {}
        return {j.id: j for j in map(_job, res.output.splitlines()) if j}

    def states(self, name: str, ids: list[str]) -> dict[str, JobState]:
        """The state of each of ``ids`` (jobs named ``name``)."""
        known = {j.id: j.state for j in self.jobs(name)}
        missing = [i for i in ids if i not in known]
        known.update({i: j.state for i, j in self.accounted(missing).items()})
        return {i: known.get(i, JobState.UNKNOWN) for i in ids}

    def cancel(self, ids: list[str]) -> None:
        if ids:
            self._run(["scancel", *ids], check=False)  # a job that ended meanwhile is no error


def _job(line: str) -> Job | None:
    parts = line.split(SEP)
    if len(parts) < 4 or not parts[0].strip():
        return None
    comment = parts[3] if parts[3] != "(null)" else ""
    return Job(parts[0].strip(), parts[2], JobState.parse(parts[1]), comment)


def _last(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"
