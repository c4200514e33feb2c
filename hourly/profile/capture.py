"""Capture: run a Python benchmark command under the JAX profiler (:mod:`hourly.harness.trace`, through
:func:`hourly.adapters.proc.run`) and return a :class:`CaptureResult`; used by ``hourly trace`` and
``hourly profile``. :func:`hourly.profile.compare.compare` compares two capture folders.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from hourly.adapters import proc
from hourly.errors import UsageError, UserError
from hourly.profile.compare import load_capture

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?$")
# interpreter options that take a value as the next argument
_OPTIONS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}


@dataclass
class TraceOptions:
    host_tracer_level: int | None = None
    python_tracer_level: int | None = None
    device_tracer_level: int | None = None
    memprof_at: list[str] = field(default_factory=list)
    # hourly profile's front-end profile (hourly.profile.frontend): the harness target to profile
    # at each state (None: none), its folder, its processes per state and each one's rounds
    front_end_target: str | None = None
    front_end_cwd: str | None = None
    front_end_processes: int = 4
    front_end_repeats: int = 7
    front_end_warmup: int = 2
    front_end_iters: int = 100

    def to_args(self) -> list[str]:
        args = []
        for flag, value in (("--host-tracer-level", self.host_tracer_level),
                            ("--python-tracer-level", self.python_tracer_level),
                            ("--device-tracer-level", self.device_tracer_level)):
            if value is not None:
                args += [flag, str(value)]
        if self.memprof_at:
            args += ["--memprof-at", ",".join(self.memprof_at)]
        return args


def is_python(arg: str) -> bool:
    """``python``, ``python3``, ``python3.11`` or a path to one (e.g. ``/venv/bin/python``)."""
    return bool(_PYTHON_NAME.match(Path(arg).name))


def tracing_command(cmd: list[str], out_dir: str | os.PathLike, options: TraceOptions | None = None,
                    python: str | None = None) -> list[str]:
    """Rewrite a benchmark command so that it runs under ``python -m hourly.harness.trace``.

    ``python [interpreter options] script.py args`` and ``python -m module args`` keep their
    interpreter and options; ``script.py args`` runs under ``python`` (default: this Python).
    Anything else cannot be traced from outside and raises :class:`UserError`.
    """
    if not cmd:
        raise UsageError("no benchmark command given",
                         "put it after --: hourly trace -- python bench.py")
    options = options or TraceOptions()
    ours = ["-m", "hourly.harness.trace", "--out", str(out_dir), *options.to_args(), "--"]
    if is_python(cmd[0]):
        interpreter, i = [cmd[0]], 1
        while i < len(cmd) and cmd[i].startswith("-") and cmd[i] != "-m":
            if cmd[i] == "-c":
                raise UserError("`python -c` programs cannot be traced",
                                "save the code to a script and trace `python script.py`")
            if cmd[i] == "-":
                raise UserError("a program read from stdin cannot be traced",
                                "save it to a script and trace `python script.py`")
            interpreter.append(cmd[i])
            if cmd[i] in _OPTIONS_WITH_VALUE and i + 1 < len(cmd):
                interpreter.append(cmd[i + 1])
                i += 1
            i += 1
        rest = cmd[i:]
        if not rest or (rest[0] == "-m" and len(rest) < 2):
            raise UsageError(f"`{' '.join(cmd)}` names no script or module",
                             "give `python script.py args` or `python -m module args`")
        return [*interpreter, *ours, *rest]
    if cmd[0].endswith(".py"):
        return [python or sys.executable, *ours, *cmd]
    raise UserError(f"cannot trace `{' '.join(cmd)}`: it is not a Python command",
                    "give the Python command itself, e.g. `hourly trace -- python bench.py --n 3`")


@dataclass
class CaptureResult:
    out_dir: Path
    command: list[str]
    result: proc.Result
    manifest: dict

    @property
    def ok(self) -> bool:
        return self.result.ok and self.manifest.get("status") == "ok"

    @property
    def output(self) -> str:
        return self.result.output

    @property
    def perfetto(self) -> Path | None:
        return load_capture(self.out_dir).perfetto

    @property
    def memory_profile(self) -> Path | None:
        return load_capture(self.out_dir).memory_profile


def hourly_pythonpath() -> str:
    """A fresh folder holding only a link to this ``hourly`` package, for PYTHONPATH.

    The benchmark's Python may be another interpreter (the build under test); exposing just
    ``hourly`` (whose tracer needs only the standard library and JAX) keeps its own packages first.
    """
    package = Path(__file__).resolve().parents[1]  # hourly/, not hourly/profile/ where this module is
    folder = tempfile.mkdtemp(prefix="hourly-pythonpath-")
    os.symlink(package, Path(folder) / "hourly", target_is_directory=True)
    return folder


def capture(cmd: list[str], out_dir: str | os.PathLike, env: dict[str, str] | None = None,
            cwd: str | os.PathLike | None = None, python: str | None = None,
            options: TraceOptions | None = None, timeout: float | None = None,
            log_path: str | os.PathLike | None = None, check: bool = True) -> CaptureResult:
    """Run ``cmd`` under the JAX profiler, writing the capture to ``out_dir``.

    ``env`` is merged over ``os.environ``. With ``check`` a failing benchmark raises
    :class:`~hourly.errors.ProcessError` (the capture folder keeps what was written).
    """
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    full = tracing_command(cmd, out_dir, options, python)
    shim = hourly_pythonpath()
    merged = {**os.environ, **(env or {})}
    merged["PYTHONPATH"] = os.pathsep.join(p for p in (shim, merged.get("PYTHONPATH")) if p)
    try:
        result = proc.run(full, cwd=cwd, env=merged, timeout=timeout,
                          log_path=log_path or out_dir / "run.log", check=check)
    finally:
        shutil.rmtree(shim, ignore_errors=True)
    return CaptureResult(out_dir, full, result, load_capture(out_dir).manifest)


def default_out_dir(base: str | os.PathLike = "hourly-work") -> Path:
    """A new folder under the workdir (``./hourly-work`` unless given)."""
    return Path(base) / "traces" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
