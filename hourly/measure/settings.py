"""Settings: defaults, then ``hourly.toml`` (or ``--config``), then flags — and where each came from.

The settings file is read strictly against the options of :mod:`hourly.options` (their types, and
the values they take); its top level and ``[scan]`` hold the scan-shaped settings every command
reads, a command's own table (``[bisect]``, ``[hunt]``, ...) that command's options."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hourly import options
from hourly.adapters.proc import parse_env, split_command
from hourly.errors import UsageError, UserError
from hourly.measure.benchmark import ALL_METRICS, SAMPLES_LAST, BenchSpec
from hourly.measure.build_cache import DEFAULT_CACHE_SIZE, build_identity, default_cache_dir, parse_size
from hourly.measure.native_inputs import DEFAULT_NATIVE_INPUTS
from hourly.metric import DEFAULT_METRIC_REGEX, METRIC_NAME, higher_is_better

if TYPE_CHECKING:
    from hourly.adapters.store import Store

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = "hourly.toml"
DEFAULT_BUILD_CMD = "build-jax.sh"
from hourly.measure.build_names import NO_BUILD, PIP_WHEEL  # noqa: E402,F401  (re-exported)

#: the version of the measurement key's recipe, recorded with the key in the store
KEY_VERSION = 2
#: the settings the measurement key is made of (with hourly's environment and --python's ABI)
KEY_FIELDS = ("bench_cmd", "bench_cwd", "env", "metric_regex", "python", "mode", "cherry_pick", "build_cmd",
              "jax_build_cmd", "only", "jaxlib_gate", "metrics", "metric", "metric_samples", "warmup_samples")


def _frozen(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _digest(ident: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def key_identity(s: "Settings", public: bool = False) -> dict[str, Any]:
    """Everything a measurement key is made of (``public``: secret-looking values redacted, for the store)."""
    build = s.build_identity()
    if public:
        from hourly.measure.build_cache import public_identity
        build = public_identity(build)
        return {"bench": _public_bench(s.bench_identity()), "build": build}
    return {"bench": s.bench_identity(), "build": build}


def _public_bench(bench: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's identity with its secret-looking environment values redacted: what the store
    keeps of it (the key itself is computed from the values: :func:`measure_key`)."""
    from hourly.text.privacy import redact_env
    return {**bench, "env": sorted(redact_env(dict(bench.get("env") or [])).items())}


def configured_identity(s: "Settings") -> dict[str, Any]:
    """The parts of the key the settings name (not hourly's environment, not the Python's ABI):
    equal configured parts mean the same measurements wherever the key is read. Kept in the store:
    secret-looking environment values redacted (a store that kept them reads as unequal, and the
    key is computed again: the same key)."""
    return {"bench": _public_bench(s.bench_identity()), "build_cmd": s.build_identity_cmd(), "only": s.only,
            "jax_package": s.jax_package_identity() if s.only is None else None}


#: the store's settings row where the scan records its key (hourly.scan.identity.record)
MEASURE_KEY = "measure_key"


def recorded_key(store: "Store", s: "Settings") -> str | None:
    """The key the stored scan measured under when ``s`` describes the same benchmark and build;
    for a store written before builds were in the key, the old key. None: compute it."""
    if not s.bench_cmd:
        return None
    rec = store.load_settings(MEASURE_KEY)
    if rec:
        try:
            configured_identity(s)
        except UserError:  # reported by the command that uses the build
            return None
        same = rec.get("configured") == json.loads(json.dumps(configured_identity(s)))
        return rec["key"] if same else None
    if store.load_settings("scan") is not None and s.bench_cmd:
        return s.legacy_bench_key()  # rows of an older hourly stay readable under their own key
    return None


def measure_key(s: "Settings") -> str:
    """The measurement key computed from ``s`` (see :meth:`Settings.bench_key`)."""
    return _digest({"v": KEY_VERSION, **key_identity(s)})


class ReadsMetrics:
    """How a level's settings read a run's output (the daily and the release level share it): their
    fields ``metrics``, ``metric_samples``, ``warmup_samples``, ``metric_regex`` and
    ``higher_is_better`` as the named metrics, a metric's direction and the reading spec."""

    metrics: str | None
    metric_samples: str
    warmup_samples: int
    metric_regex: str
    higher_is_better: bool

    def named_metrics(self) -> list[str] | None:
        """None for the regex's one metric; ``["all"]``; or the names (see Settings.named_metrics)."""
        from hourly.measure.settings import parse_metric_names
        return parse_metric_names(self.metrics)

    def direction_of(self, name: str) -> bool:
        """A named metric's direction: its unit's, else --higher-is-better/--lower-is-better."""
        from hourly.metric import higher_is_better
        unit = higher_is_better(name) if name else None
        return self.higher_is_better if unit is None else unit

    def add_reading(self, ident: dict) -> None:
        """How a run's output is read, into a level's key ``ident`` (its ``regex`` entry the regex's
        one metric), only where it is not one value per run as before named metrics: the keys of
        earlier workdirs stay as they were."""
        named = self.named_metrics()
        if named is not None:
            ident["metrics"] = sorted(named)
            ident.pop("regex")
        if self.metric_samples != "last":
            ident["metric_samples"] = self.metric_samples
        if self.warmup_samples:
            ident["warmup_samples"] = self.warmup_samples

    def read_spec(self) -> BenchSpec:
        """How a run's output is read (hourly.measure.benchmark.BenchSpec; the command is not run from it)."""
        from hourly.measure.benchmark import BenchSpec
        named = self.named_metrics()
        return BenchSpec([], metric_regex=self.metric_regex, samples=self.metric_samples,
                         warmup_samples=self.warmup_samples, metrics=None if named is None else tuple(named))


def parse_metric_names(metrics: str | None) -> list[str] | None:
    """``--metrics``: None (the regex's one metric), ``["all"]``, or the names; a name that is no
    metric's name is a user error (an empty one too: never read as not given)."""
    if metrics is None:
        return None
    import re
    names = [n.strip() for n in str(metrics).split(",") if n.strip()]
    bad = [n for n in names if n != ALL_METRICS and not re.match(METRIC_NAME + r"\Z", n)]
    if not names or bad:
        raise UserError(f"--metrics {metrics!r} is not all or a list of metric names",
                        "pass --metrics all, or the names of the METRIC lines, e.g. --metrics trace_ms,lower_ms")
    return [ALL_METRICS] if ALL_METRICS in names else names


def is_phase_harness(bench_cmd: str | None) -> bool:
    """Whether a benchmark command runs hourly's per-phase harness (``jaxbench_phases.py`` by its
    path, or ``-m hourly.jaxbench_phases``): its every phase is recorded as a named metric."""
    if not bench_cmd:
        return False
    try:
        words = shlex.split(bench_cmd)
    except ValueError:
        return False
    return any(Path(w).name == "jaxbench_phases.py" or w == "hourly.jaxbench_phases" for w in words)


def _default_tree(new: str, old: str) -> str:
    """Nightly containers keep sources at /opt/xla-source (older) or /opt/xla (newer)."""
    return old if Path(old).exists() or not Path(new).exists() else new


@dataclass(frozen=True)
class Settings:
    """The scan-shaped settings (scan, show, bisect, shell, profile, explain, report), immutable once
    :func:`effective` made them: derive others with :func:`dataclasses.replace`. ``key`` is the
    measurement key (:func:`keyed`), kept with the settings it was made for."""

    xla_repo: str = field(default_factory=lambda: _default_tree("/opt/xla", "/opt/xla-source"))
    jax_repo: str = field(default_factory=lambda: _default_tree("/opt/jax", "/opt/jax-source"))
    from_: str | None = None
    to: str | None = None
    tz: str = "UTC"
    step: str = "1h"
    ref: str = "origin/main"
    xla_ref: str | None = None  # XLA's own ref [default: ref]
    first_parent: bool = True
    sync: bool = True
    build_cmd: str = DEFAULT_BUILD_CMD
    only: str | None = None  # "jax" or "xla": hunt one repository, the other stays put (hourly.measure.pinned)
    #: --only jax: JAX commits whose own check refuses the installed jaxlib are untestable (False:
    #: --no-jaxlib-gate, an environment that patches the check runs them; recorded everywhere)
    jaxlib_gate: bool = True
    #: JAX's own ref [default: ref]; with --only xla the JAX commit kept [default: the checkout's HEAD]
    jax_ref: str | None = None
    jax_build_cmd: str = PIP_WHEEL  # builds the jax package alone; "none": the tree is installed editable
    native_inputs: list[str] = field(default_factory=lambda: list(DEFAULT_NATIVE_INPUTS))  # hourly.measure.native_inputs
    build_timeout: float | None = None
    wheel_dir: str | None = None  # default: <jax_repo>/dist
    cache_dir: str | None = None  # default: hourly.measure.build_cache.default_cache_dir()
    cache_size: str = DEFAULT_CACHE_SIZE  # least recently used builds go past it; "0": no bound
    python: str = field(default_factory=lambda: sys.executable)
    bench_cmd: str | None = None
    bench_cwd: str | None = None
    env: list[str] = field(default_factory=list)
    cherry_pick: list[str] = field(default_factory=list)  # REPO@SHA applied on top of every state
    repeats: int = 1
    warmup_runs: int = 1  # runs of a state just installed that are recorded but not counted
    bench_timeout: float | None = None
    metric_regex: str = DEFAULT_METRIC_REGEX
    #: "last": a run's value is the metric's last match; "all": every match is a sample (many per process)
    metric_samples: str = SAMPLES_LAST
    warmup_samples: int = 0  # the first K matches of each process are its warm-up, never counted
    #: the samples each benchmark process is asked for (``HOURLY_SAMPLES``); None: hourly chooses
    #: them from the measured costs and noise (hourly.measure.sample_size)
    samples: int | None = None
    #: named metrics: None reads the regex's one metric (the per-phase harness: "all" by itself);
    #: "all" records every ``METRIC name:`` line's name, "a,b" those names
    metrics: str | None = None
    #: the named metric bisect, profile and explain follow (and the scan's fail-fast and edges
    #: read first) [default: the one name of --metrics, else none: each command that follows one says so]
    metric: str | None = None
    higher_is_better: bool = True
    mode: str = "metric"  # a hourly.model.Mode value: "exit" scans pass/fail by exit code, no metric
    workdir: str = "hourly-work"
    force: bool = False
    rerun: bool = False
    retry_failed: bool = False
    keep_going: bool = False  # scan on after a first measured pair whose every run failed
    confirm_edges: bool = True  # measure an edge step's pair and its neighbour again (hourly.scan.run.confirm_edges)
    #: how JAX and XLA are paired: "time" (the commits that stood at one instant) or "pin" (each JAX
    #: commit with the XLA commit it pins; hourly.bisect.pairing, docs/bisect.md)
    pairing: str = "time"
    llvm_repo: str | None = None    # an LLVM checkout: a bisection descends into XLA's LLVM pin bumps
    triton_repo: str | None = None  # a Triton checkout: the same for XLA's Triton pin bumps
    #: the key every measurement of these settings is stored under (:func:`keyed`: the stored scan's
    #: recorded key, else computed), and the fields it was made for (:meth:`key_basis`): settings
    #: derived with another benchmark or build carry no usable key until keyed again. Not a setting:
    #: never stored, shown or read from hourly.toml.
    key: str | None = field(default=None, compare=False, repr=False, metadata={"derived": True})
    key_for: tuple | None = field(default=None, compare=False, repr=False, metadata={"derived": True})

    # -- derived ----------------------------------------------------------------------------
    def ref_of(self, repo: str) -> str:
        """The ref whose history is walked in ``repo`` (xla or jax): its own (--xla-ref,
        --jax-ref), else --ref."""
        own = self.xla_ref if repo == "xla" else self.jax_ref if repo == "jax" else None
        return own or self.ref

    def refs(self) -> dict[str, str]:
        """``{"xla": ref, "jax": ref}``: each repository's walked ref (:meth:`ref_of`)."""
        return {name: self.ref_of(name) for name in ("xla", "jax")}

    def env_dict(self) -> dict[str, str]:
        return parse_env(self.env)

    def bench_argv(self) -> list[str]:
        if not self.bench_cmd:
            raise UserError("no benchmark command", 'pass --bench-cmd "python3 bench.py ..." or set bench_cmd in hourly.toml')
        return split_command(self.bench_cmd, "--bench-cmd", "pass the command that runs the benchmark")

    def build_argv(self) -> list[str]:
        if self.only == "jax":
            return self.jax_package_argv()
        if self.build_cmd.strip() == NO_BUILD:  # only a JAX tree alone can be installed editable
            where = "--only xla" if self.only == "xla" else "a scan of both repositories"
            raise UserError(f"--build-cmd {NO_BUILD} builds nothing, but {where} builds jaxlib at every XLA commit",
                            f"pass the build command (e.g. {DEFAULT_BUILD_CMD}), or --only jax to hunt an editable "
                            f"JAX tree with --build-cmd {NO_BUILD}")
        argv = split_command(self.build_cmd, "--build-cmd", "pass the build command, e.g. build-jax.sh")
        if "/" in argv[0] and not Path(argv[0]).is_absolute():
            argv[0] = str(Path(argv[0]).absolute())
        return argv

    def jax_package_cmd(self) -> str:
        """The command that builds the jax package alone: with --only jax a --build-cmd that was
        given replaces --jax-build-cmd (so ``--build-cmd none`` means an editable tree)."""
        if self.only == "jax" and self.build_cmd != DEFAULT_BUILD_CMD:
            return self.build_cmd
        return self.jax_build_cmd

    def jax_package_argv(self) -> list[str]:
        """argv of the jax package's build; [] when the tree is installed editable (nothing to run)."""
        cmd = self.jax_package_cmd().strip()
        if cmd == NO_BUILD:
            return []
        if cmd == PIP_WHEEL:
            return [self.python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--wheel-dir", str(self.resolved_wheel_dir()), "."]
        argv = split_command(cmd, "--jax-build-cmd", f"pass {PIP_WHEEL}, {NO_BUILD} or the command that builds the jax wheel")
        if "/" in argv[0] and not Path(argv[0]).is_absolute():
            argv[0] = str(Path(argv[0]).absolute())
        return argv

    def jax_package_identity(self) -> list[str]:
        cmd = self.jax_package_cmd().strip()
        return [cmd] if cmd in (PIP_WHEEL, NO_BUILD) else self.jax_package_argv()

    def build_identity_cmd(self) -> list[str]:
        """The build command as the cache's identity sees it (the built-in one by name, so the
        identity does not change with the workdir its wheel folder lies in)."""
        if self.only == "jax" and self.jax_package_cmd().strip() == PIP_WHEEL:
            return [PIP_WHEEL]
        return self.build_argv()

    def run_python(self) -> str:
        """The Python the states are installed into and the benchmark runs with: ``--python``, or
        with ``--only jax`` the workdir's overlay over it (:func:`hourly.measure.pinned.run_python`)."""
        from hourly.measure.pinned import run_python
        return run_python(self)

    def bench_spec(self) -> BenchSpec:
        named = self.named_metrics()
        return BenchSpec(self.bench_argv(), self.bench_cwd, self.env_dict(), self.metric_regex,
                         self.bench_timeout, self.run_python(), expect_metric=self.mode != "exit",
                         samples=self.metric_samples, warmup_samples=self.warmup_samples,
                         metrics=None if named is None else tuple(named), primary=self.primary_metric() or None)

    def named_metrics(self) -> list[str] | None:
        """Which named metrics a run records: None for the regex's one metric; ``["all"]`` for every
        ``METRIC name:`` line; else the names. The per-phase harness (``jaxbench_phases`` in
        --bench-cmd) records all of them unless a --metric-regex of its own was given; --metric
        alone records all and follows that one. An exit-status run reads none."""
        if self.mode == "exit":
            return None
        if self.metrics:
            return parse_metric_names(self.metrics)
        if self.metric or (self.metric_regex == DEFAULT_METRIC_REGEX and is_phase_harness(self.bench_cmd)):
            return [ALL_METRICS]
        return None

    def primary_metric(self) -> str | None:
        """The metric the commands that follow one read (bisect, profile, explain): ``""`` for the
        regex's one metric (the rows of every store before named metrics), the name of --metric, the
        one name of --metrics; None when a run records several names and none was chosen."""
        named = self.named_metrics()
        if named is None:
            return ""
        if self.metric:
            return self.metric
        return named[0] if len(named) == 1 and named[0] != ALL_METRICS else None

    def require_primary(self, command: str, names: list[str] | None = None) -> str:
        """The primary metric, or a user error naming the metrics to choose from."""
        primary = self.primary_metric()
        if primary is not None:
            return primary
        known = ", ".join(names or []) or "the names its METRIC lines print"
        raise UserError(f"{command} follows one metric, and this benchmark records several ({known})",
                        "pass --metric NAME (the command each step prints has it)")

    def direction_of(self, name: str) -> bool:
        """Whether higher is better for metric ``name``: what its unit says
        (:func:`hourly.metric.higher_is_better`: ``_ms`` lower, ``_per_s`` higher), else the
        settings' direction (--higher-is-better/--lower-is-better); the regex's metric (``""``) and
        the primary, when a direction was given for it, take the settings'."""
        if name and name != self.metric:
            unit = higher_is_better(name)
            if unit is not None:
                return unit
        return self.higher_is_better

    def bench_identity(self) -> dict[str, Any]:
        """What the benchmark is: command, directory, environment, regex, Python (and the mode of an
        exit-status scan, the cherry-picks of patched states).

        The directory is absolute in the settings (see :func:`effective`), so it reads the same from
        wherever hourly is started."""
        ident: dict[str, Any] = {"cmd": self.bench_argv(),
                                 "cwd": str(Path(self.bench_cwd).absolute()) if self.bench_cwd else None,
                                 "env": sorted(self.env_dict().items()), "regex": self.metric_regex,
                                 "python": self.python}
        if self.mode == "exit":  # an exit-status scan's runs are not a metric scan's (metric keys omit the mode)
            ident["mode"] = "exit"
        else:  # how a run's output is read, when not the one value per run of every key before
            named = self.named_metrics()
            if named is not None:
                ident["metrics"] = sorted(named)
                ident.pop("regex")  # named lines are read, not the regex
            if self.metric_samples != SAMPLES_LAST:
                ident["metric_samples"] = self.metric_samples
            if self.warmup_samples:
                ident["warmup_samples"] = self.warmup_samples
        if self.cherry_pick:  # measurements of patched states never mix with plain ones
            ident["cherry_pick"] = sorted(self.cherry_pick)
        if self.only == "jax" and not self.jaxlib_gate:  # states the gate refuses were run: never mixed with gated ones
            ident["jaxlib_gate"] = "overridden"
        return ident

    def build_identity(self) -> dict[str, Any]:
        """How the states are built, as the wheel cache sees it (build command, the build's
        environment, the Python ABI, cherry-picks; the jax package's own build in a
        two-repository hunt; with ``--only jax`` the kept jaxlib, libtpu and plugins, each version
        and location). Reads hourly's environment and asks ``--python`` its ABI."""
        ident = build_identity(self.build_identity_cmd(), self.env_dict(), self.python, self.cherry_pick)
        if self.only is None:
            ident["jax_package"] = self.jax_package_identity()
        if self.only == "jax":  # what the states run on: jaxlib, libtpu, the plugins, and where each lies
            from hourly.measure.pinned import fingerprint
            ident["pinned"] = fingerprint(self)
        return ident

    def bench_key(self) -> str:
        """The key of every measurement: everything that determines it — the benchmark
        (:meth:`bench_identity`) and the build it ran on (:meth:`build_identity`) — as
        :func:`keyed` set it; a changed build or benchmark measures again instead of reusing.
        Reads the field: it never computes the key (computing it may ask ``--python`` its ABI, a
        process), so settings that were never keyed, or were derived with another benchmark or
        build since, are a programming error here, not a silent recomputation.

        Settings read from a store (:func:`stored_settings`) that describe the same benchmark and
        build configuration as its scan carry the key that scan recorded, so ``show`` and
        ``report`` read the same rows from another shell or machine (commands that build check that
        the key they would compute is that one: hourly.scan.identity)."""
        if self.key is None or self.key_for != self.key_basis():
            raise RuntimeError("settings used to measure without their key: pass them through "
                               "hourly.measure.settings.keyed() first (again after replace() changes the "
                               "benchmark or the build)")
        return self.key

    def key_basis(self) -> tuple:
        """The fields the measurement key is made of (a cheap stand-in for the key itself: equal
        bases, equal keys on one machine)."""
        return tuple(_frozen(getattr(self, name)) for name in KEY_FIELDS)

    def legacy_bench_key(self) -> str:
        """The key of measurements stored before builds were part of it (benchmark identity alone)."""
        return _digest(self.bench_identity())

    def resolved_wheel_dir(self) -> Path:
        if self.wheel_dir:
            return Path(self.wheel_dir)
        if self.only == "jax":  # hourly's own folder: whatever is in the tree's dist/ is not ours
            return Path(self.workdir).absolute() / "jax-wheels"
        return Path(self.jax_repo) / "dist"

    def resolved_cache_dir(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else default_cache_dir()

    def cache_bytes(self) -> int | None:
        return parse_size(self.cache_size)

    def as_dict(self) -> dict[str, Any]:
        """The settings (what is stored, shown and sent to a Slurm job), without the key."""
        return {k: v for k, v in asdict(self).items() if k in FIELD_NAMES}


#: the settings (the key and what it was made for are derived, not settings)
FIELD_NAMES = {f.name for f in fields(Settings) if not f.metadata.get("derived")}
#: settings that name a place: stored absolute and normalized, so they mean the same from anywhere
PATH_SETTINGS = ("xla_repo", "jax_repo", "bench_cwd", "wheel_dir", "workdir", "cache_dir", "llvm_repo", "triton_repo")
#: flags that apply to the command they are given to, never to later commands reading the store
ONE_OFF = ("force", "rerun", "retry_failed", "keep_going")


def _absolute(value: str, base: Path) -> str:
    p = Path(value).expanduser()
    return os.path.normpath(p if p.is_absolute() else base / p)


def _canonical(values: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative places in ``values`` made absolute against ``base`` (symlinks are kept: a venv's
    python is a link that must stay one)."""
    out = dict(values)
    for name in PATH_SETTINGS:
        if isinstance(out.get(name), str) and out[name]:
            out[name] = _absolute(out[name], base)
    py = out.get("python")
    if isinstance(py, str) and os.sep in py:
        out["python"] = _absolute(py, base)
    cmd = out.get("build_cmd")
    if isinstance(cmd, str):
        try:
            argv = shlex.split(cmd)
        except ValueError:
            argv = []  # reported when the build command is used
        if argv and os.sep in argv[0] and not Path(argv[0]).expanduser().is_absolute():
            out["build_cmd"] = shlex.join([_absolute(argv[0], base), *argv[1:]])
    return out


def scan_dir_of(stored_workdir: str | None, store_workdir: Path) -> Path:
    """The directory an old scan (which stored relative paths) ran in: the store's directory less
    the relative workdir it was given (``hourly-work`` found at /a/b/hourly-work ran in /a/b);
    when that cannot tell, the directory holding the workdir."""
    found = Path(os.path.normpath(store_workdir))
    if stored_workdir and not Path(stored_workdir).expanduser().is_absolute():
        rel = Path(os.path.normpath(stored_workdir)).parts
        if rel and rel[0] != ".." and found.parts[-len(rel):] == rel:
            return Path(*found.parts[:-len(rel)])
    return found.parent


def stored_scan_settings(stored: dict[str, Any] | None, store_workdir: str | Path) -> dict[str, Any]:
    """A stored scan's settings as the base of a later command (show, report, bisect, profile):
    one-off flags dropped; relative places, which stores written before hourly stored them
    absolute may hold, resolved against the directory that scan ran in (:func:`scan_dir_of`)."""
    if not stored:
        return {}
    out = {k: v for k, v in stored.items() if k not in ONE_OFF}
    return _canonical(out, scan_dir_of(stored.get("workdir"), Path(store_workdir)))


def _name(key: str) -> str:
    """The option (and Settings field) a key of hourly.toml names: ``from`` is ``from_``, ``bench-cmd``
    is ``bench_cmd``."""
    k = key.replace("-", "_")
    return k if k in options.BY_NAME or f"{k}_" not in options.BY_NAME else f"{k}_"


#: the table of the scan-shaped settings every command reads (they may also stand at top level)
SHARED = "scan"
#: the commands whose own options hourly.toml configures, each in a table of its name
COMMAND_SECTIONS = options.commands_with_a_table()


@dataclass(frozen=True)
class ConfigFile:
    """``hourly.toml`` as read: ``shared``, the scan-shaped settings at top level and under [scan]
    (every command that takes them: :func:`effective`); ``sections``, each command's own table,
    option name -> value (the command layer gives them to the options not given as flags)."""

    path: str | None = None
    shared: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)


def _toml_type(v: Any) -> str:
    """What a TOML value is, in the words of the TOML spec."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a float"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "a table"
    return "a date or time"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _kind(opt: options.Option) -> str:
    """How hourly.toml writes the option's value: bool, int, float, list or str (an enum's word)."""
    if opt.name == "cache_size":  # a size such as "50G", or a number of bytes
        return "size"
    t = opt.type
    return {bool: "bool", int: "int", float: "float", list: "list"}.get(t, "str")


#: kind -> (does a TOML value fit it, what it expects); a list also takes one string (a list of one)
_TYPES: dict[str, tuple[Any, str]] = {
    "bool": (lambda v: isinstance(v, bool), "a boolean (true or false)"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float": (_is_number, "a number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "size": (lambda v: isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)),
             'a size such as "50G" or a number of bytes'),
    "list": (lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
             "an array of strings"),
}


def _type_fix(name: str, kind: str, v: Any) -> str:
    """How to write ``name`` in the file so that it has the type ``kind`` wants."""
    text = v.strip().lower() if isinstance(v, str) else None
    if kind == "bool":
        if text in ("true", "false"):
            return f"write {name} = {text}, without quotes"
        return f"write {name} = true or {name} = false"
    if kind == "int":
        return f"write {name} = {text}, without quotes" if text and text.isdigit() else f"write a whole number, e.g. {name} = 3"
    if kind == "float":
        try:
            float(text)  # type: ignore[arg-type]
            return f"write {name} = {text}, without quotes"
        except (TypeError, ValueError):
            return f"write a number of seconds, e.g. {name} = 3600"
    if kind == "size":
        return f'write a size in quotes, e.g. {name} = "50G", or a number of bytes (0: no bound)'
    if kind == "list":
        return f'write an array of strings, e.g. {name} = ["..."]'
    return f'write it in quotes, e.g. {name} = "{_shown(v)}"' if not isinstance(v, (list, dict)) else f'write one string in quotes, e.g. {name} = "..."'


def _check_value(p: Path, where: str, name: str, v: Any, opt: options.Option) -> None:
    """A one-line error naming the file and the key when the file's ``name`` has the wrong TOML type
    for its option, or a value the option refuses (``repeats = 0``)."""
    kind = _kind(opt)
    fits, expected = _TYPES[kind]
    if not fits(v):
        if isinstance(v, list):
            odd = next((x for x in v if not isinstance(x, str)), None)
            got = f"an array with {_toml_type(odd)} {_shown(odd)} in it" if odd is not None else "an array"
        else:
            got = f"{_toml_type(v)} {_shown(v)}" if not isinstance(v, dict) else "a table"
        raise UserError(f"{p}: {where}{name} is {got}, expected {expected}", _type_fix(name, kind, v))
    choices = [m.value for m in opt.type] if isinstance(opt.type, type) and issubclass(opt.type, Enum) else None
    problem = (f"must be {' or '.join(choices)}" if choices and v not in choices else None) or opt.problem(v)
    if problem:
        example = opt.rule.example if opt.rule else (choices or ["..."])[0]
        shown = example if kind in ("int", "float") else json.dumps(example)
        raise UserError(f"{p}: {where}{name} = {_shown(v)} {problem}", f"write e.g. {name} = {shown}")


def _shown(v: Any) -> str:
    """A scalar as the file has it."""
    if isinstance(v, bool):
        return str(v).lower()
    return json.dumps(v, default=str) if isinstance(v, (str, list, dict)) else str(v)


def _nearest(name: str, candidates: list[str]) -> str | None:
    import difflib
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def _takes(command: str) -> dict[str, options.Option]:
    """The options ``command``'s table may set, by TOML key (the scan's table: every scan-shaped
    setting too, which every command reads)."""
    names = [n for n in options.TAKES[command] if options.BY_NAME[n].of(command).toml]
    if command == SHARED:
        names += sorted(FIELD_NAMES)
    return {options.BY_NAME[n].key: options.BY_NAME[n].of(command) for n in names}


def load_config(path: str | None) -> ConfigFile:
    """The settings file: ``--config`` path, else ./hourly.toml when present.

    Each value must have its option's type (a quoted "false" is not false) and be one the option
    takes; an unknown table or key is an error naming the nearest valid one. Every error names the
    file and the key."""
    p = Path(path) if path else Path(CONFIG_NAME)
    if not p.exists():
        if path:
            raise UserError(f"config file {path} does not exist", "pass --config with an existing file")
        return ConfigFile()
    given = "pass --config with a TOML file" if path else f"move ./{CONFIG_NAME} away, or pass --config with a TOML file"
    if p.is_dir():
        raise UserError(f"config file {p.absolute()} is a directory", given)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise UserError(f"cannot read config file {p.absolute()} ({e.strerror})", given) from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{p} is not valid TOML ({e})", "fix the file or pass --config with another") from e
    shared_keys = {options.BY_NAME[n].key: options.BY_NAME[n].of(SHARED) for n in FIELD_NAMES}
    tables = {SHARED: {}} if not isinstance(data.get(SHARED), dict) else {SHARED: data[SHARED]}
    top = {}
    for name, v in data.items():
        if isinstance(v, dict) and name in COMMAND_SECTIONS:
            tables[name] = v
        elif isinstance(v, dict) and _name(name) not in FIELD_NAMES:
            near = _nearest(name, list(COMMAND_SECTIONS))
            raise UserError(f"{p}: unknown section [{name}]",
                            f"did you mean [{near}]?" if near else
                            f"settings go at top level or under [{SHARED}], a command's own options under its "
                            "name ([bisect], [hunt], ...)")
        else:
            top[name] = v
    shared: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for where, command, items in [("", None, top)] + [(f"[{c}] ", c, t) for c, t in tables.items()]:
        known = shared_keys if command is None else _takes(command)
        for name, v in items.items():
            key = name.replace("-", "_")
            opt = known.get(key) or known.get(key.rstrip("_"))  # from, or its field's name from_
            if opt is None:
                near = _nearest(key, sorted(known))
                lists = "`hourly config` lists the settings" if command in (None, SHARED) else \
                    f"`hourly {command} --help` lists its options"
                raise UserError(f"{p}: {where}unknown setting {name!r}",
                                f"did you mean {near}? ({lists})" if near else f"remove it; {lists}")
            _check_value(p, where, name, v, opt)
            if command is None or (command == SHARED and opt.name in FIELD_NAMES):
                shared[opt.name] = v
            else:
                sections.setdefault(command, {})[opt.name] = v
    return ConfigFile(str(p), shared, sections)


def effective(flags: dict[str, Any], config_path: str | None = None,
              base: dict[str, Any] | None = None) -> tuple[Settings, dict[str, str]]:
    """Merge defaults < ``base`` (e.g. a stored scan's settings) < config file < flags.

    Flags whose value is None were not given. Returns the settings and where each came from
    ("default", "stored scan", the file's name, "flag"). A value refused here is a usage error
    (exit 2) when flags alone gave it, else an error naming the file it came from.
    """
    file = load_config(config_path)
    values = Settings().as_dict()
    origin = {name: "default" for name in FIELD_NAMES}
    for layer, label in ((base or {}, "stored scan"), (file.shared, file.path or ""),
                         ({k: v for k, v in flags.items() if v is not None}, "flag")):
        for k, v in layer.items():
            if k in FIELD_NAMES:
                if k in ("env", "cherry_pick", "native_inputs") and isinstance(v, (list, tuple)) and not v and label == "flag":
                    continue
                values[k] = list(v) if isinstance(v, tuple) else v
                origin[k] = label
    values = _canonical(values, Path.cwd())
    _validate(values, origin)
    if values["metric"] and origin["higher_is_better"] in ("default", "stored scan") \
            and higher_is_better(values["metric"]) is not None:
        # a named primary's direction is its unit's unless given here or in the settings file
        values["higher_is_better"] = bool(higher_is_better(values["metric"]))
    return Settings(**values), origin


def command_settings(command: str, flags: dict[str, Any], config_path: str | None = None
                     ) -> tuple[dict[str, Any], dict[str, str], Settings | None]:
    """What ``hourly COMMAND`` would take for each option its table in hourly.toml may set, and where
    each came from, as the command layers them: a flag given here (one ``command`` takes), else its
    table (``<file> [command]``), else — for a scan setting of a command that reads the shared
    settings (:data:`hourly.options.SHARED_READERS`; every command for ``workdir`` and
    ``higher_is_better``) — the file's top level or [scan], else the workdir's stored scan (of
    bisect, profile, explain and shell, which read it under the file: "stored scan"), else the default.
    Returns ({option name: value}, {option name: where from}, and for a command that reads the
    shared settings the scan settings it would take)."""
    file = load_config(config_path)
    section = file.sections.get(command, {})
    table = f"{file.path} [{command}]"
    takes = {opt.name: opt for opt in _takes(command).values()}
    given = {n: v for n, v in flags.items() if v is not None and n in takes}  # flags: those given
    reader = command in options.SHARED_READERS
    shared = {n for n in takes if n in FIELD_NAMES and n not in options.OWN_READING.get(command, ())
              and (reader or n in ("workdir", "higher_is_better"))}
    layered = {**{n: v for n, v in section.items() if n in shared}, **{n: v for n, v in given.items() if n in shared}}
    base = _stored_base(layered.get("workdir"), config_path) if command in STORED_READERS else None
    s, origin = effective(layered, config_path, base=base)
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    for n, opt in takes.items():
        if n in shared:
            values[n] = getattr(s, n)
            where[n] = "flag" if n in given else table if n in section else origin[n]
        elif n in given:
            values[n], where[n] = given[n], "flag"
        elif n in section:
            values[n], where[n] = section[n], table
        else:
            values[n], where[n] = opt.default, "default"
    return values, where, s if reader else None


#: the commands that take a workdir's stored scan (else its own bisection's settings) as their base
STORED_READERS = ("bisect", "shell", "profile", "explain")


def _stored_base(workdir: str | None, config_path: str | None) -> dict[str, Any] | None:
    """The settings of the scan (else the bisection) stored in the workdir ``hourly config`` shows a
    command for, as that command reads them; None when it holds no store."""
    from hourly.adapters.store import STORE_NAME, Store
    folder = workdir_setting(workdir, config_path)
    if not (Path(folder).expanduser() / STORE_NAME).is_file():
        return None
    store = Store(folder, create=False, read_only=True)
    return stored_scan_settings(store.load_settings("scan") or store.load_settings(BISECT_SETTINGS), store.workdir)


def _fault(origin: dict[str, str], names: tuple[str, ...], message: str, fix: str) -> UserError:
    """The error of a value refused: a usage error (exit 2) when flags gave every value involved,
    else one naming the settings file that gave one (exit 1)."""
    sources = [origin.get(n, "default") for n in names]
    if all(src == "flag" for src in sources):
        return UsageError(message, fix)
    files = [src for src in sources if src not in ("flag", "default", "stored scan")]
    return UserError(f"{files[0]}: {message}" if files else message, fix)


#: the settings whose option has a rule (hourly.options): the rule is their one check, here for the
#: values a stored scan or a caller gives as for a flag (the command layer) and the settings file
#: (:func:`load_config`)
RULED = tuple(name for name in sorted(FIELD_NAMES) if name in options.BY_NAME and options.BY_NAME[name].of(SHARED).rule)


def _validate(v: dict[str, Any], origin: dict[str, str]) -> None:
    """Check the merged values (and normalise them in place: the mode as its word, --only both as
    none, a lone string as a list of one)."""
    v["mode"] = str(getattr(v["mode"], "value", v["mode"]))
    for name in RULED:
        refused = options.BY_NAME[name].of(SHARED).refusal(v[name])
        if refused:
            raise _fault(origin, (name,), *refused)
    _check_metric_names(v, origin)
    try:
        parse_size(v["cache_size"])  # a one-line error now rather than after the first build
    except UserError as e:
        raise _fault(origin, ("cache_size",), e.message, e.fix or "") from None
    if v["only"] in ("both", ""):  # a later command may widen a stored one-repository scan again
        v["only"] = None
    if v["pairing"] == "pin" and v["only"] in ("jax", "xla"):
        raise _fault(origin, ("pairing", "only"), "--pairing pin builds each JAX commit with the XLA commit it pins, "
                     "but --only holds one repository still", "leave --only out, or pass --pairing time")
    if v["xla_ref"] and v["only"] == "jax":
        raise _fault(origin, ("xla_ref", "only"), "--xla-ref names XLA's history, but --only jax keeps XLA at the "
                     "installed jaxlib", "leave --xla-ref out, or hunt both repositories (--only both)")
    for name in ("env", "cherry_pick", "native_inputs"):
        if isinstance(v[name], str):
            v[name] = [v[name]]


def _check_metric_names(v: dict[str, Any], origin: dict[str, str]) -> None:
    import re
    name = re.compile(METRIC_NAME + r"\Z")
    metrics, metric = v["metrics"], v["metric"]
    try:
        names = parse_metric_names(metrics)
    except UserError as e:
        raise _fault(origin, ("metrics",), e.message, e.fix or "") from None
    if metric is not None and not name.match(str(metric)):
        raise _fault(origin, ("metric",), f"--metric {metric!r} is not a metric's name",
                     "pass the name of a METRIC line, e.g. --metric lower_ms")
    if names is not None and metric and ALL_METRICS not in names and metric not in names:
        raise _fault(origin, ("metric", "metrics"), f"--metric {metric} is not one of --metrics {metrics}",
                     f"add it: --metrics {metrics},{metric}")


def with_metric(s: Settings, metric: str) -> Settings:
    """``s`` following the named ``metric``, in its unit's direction when its name says one. Its key
    is kept where what a run records is the same (the key depends on which metrics are read, not on
    the one followed); else the result carries no usable key until :func:`keyed` again."""
    unit = higher_is_better(metric)
    out = replace(s, metric=metric, higher_is_better=s.higher_is_better if unit is None else unit)
    if s.key is not None and s.key_for == s.key_basis() and out.named_metrics() == s.named_metrics():
        return with_key(out, s.key)
    return out


def workdir_setting(workdir: str | None, config_path: str | None = None) -> str:
    """The workdir: ``--workdir``, else the settings file's, else the default."""
    s, _ = effective({"workdir": workdir}, config_path)
    return s.workdir


#: the store key of a bisection's own settings in a workdir no scan made (``hourly bisect --good
#: --bad`` into a new workdir): the base of later commands there (explain, report, profile, a rerun)
BISECT_SETTINGS = "bisect-settings"


def stored_settings(store: Store, config_path: str | None = None, **flags: Any) -> Settings:
    """The settings of the stored scan (else of the workdir's own bisection), under the settings
    file and the flags given now, keyed (:func:`keyed`: the key the scan recorded when they describe
    its benchmark and build). Settings that cannot be keyed yet (no benchmark: a manual bisection's)
    come back without a key, for the command to key once it has completed them."""
    stored = store.load_settings("scan") or store.load_settings(BISECT_SETTINGS)
    s, _ = effective(flags, config_path, base=stored_scan_settings(stored, store.workdir))
    try:
        return keyed(s, store)
    except UserError:  # no benchmark, a build command that does not split: the command that uses them says so
        return s


def keyed(s: Settings, store: Store | None = None) -> Settings:
    """``s`` with its measurement key (read by :meth:`Settings.bench_key`): the key the stored scan
    recorded when ``store`` holds a scan of the same benchmark and build configuration
    (:func:`recorded_key`), else the key computed from ``s`` (:func:`measure_key`: it may ask
    ``--python`` its ABI, a process). The one place a key is set; settings whose key was made for
    their own fields come back as they are."""
    if s.key is not None and s.key_for == s.key_basis():
        return s
    key = (recorded_key(store, s) if store is not None else None) or measure_key(s)
    return with_key(s, key)


def with_key(s: Settings, key: str) -> Settings:
    """``s`` keyed with ``key`` (made for its fields as they are now)."""
    return replace(s, key=key, key_for=s.key_basis())
