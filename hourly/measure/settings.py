"""Settings: defaults, then ``hourly.toml`` (or ``--config``), then flags — and where each came from."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hourly.adapters.proc import parse_env, split_command
from hourly.errors import UserError
from hourly.measure.benchmark import BenchSpec
from hourly.measure.build_cache import DEFAULT_CACHE_SIZE, build_identity, default_cache_dir, parse_size
from hourly.measure.native_inputs import DEFAULT_NATIVE_INPUTS
from hourly.metric import DEFAULT_METRIC_REGEX

if TYPE_CHECKING:
    from hourly.adapters.store import Store

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = "hourly.toml"
DEFAULT_BUILD_CMD = "build-jax.sh"
#: the built-in build of the pure-Python jax package: ``python -m pip wheel --no-deps
#: --no-build-isolation`` of the checkout into a wheel folder of hourly's own
PIP_WHEEL = "pip-wheel"
#: a build command meaning "nothing to build: the tree is installed editable, a checkout is all it takes"
NO_BUILD = "none"





#: the version of the measurement key's recipe, recorded with the key in the store
KEY_VERSION = 2


def _digest(ident: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def key_identity(s: "Settings", public: bool = False) -> dict[str, Any]:
    """Everything a measurement key is made of (``public``: secret-looking values redacted, for the store)."""
    build = s.build_identity()
    if public:
        from hourly.measure.build_cache import public_identity
        build = public_identity(build)
    return {"bench": s.bench_identity(), "build": build}


def configured_identity(s: "Settings") -> dict[str, Any]:
    """The parts of the key the settings name (not hourly's environment, not the Python's ABI):
    equal configured parts mean the same measurements wherever the key is read."""
    return {"bench": s.bench_identity(), "build_cmd": s.build_identity_cmd(), "only": s.only,
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


def _default_tree(new: str, old: str) -> str:
    """Nightly containers keep sources at /opt/xla-source (older) or /opt/xla (newer)."""
    return old if Path(old).exists() or not Path(new).exists() else new


@dataclass
class Settings:
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

    def bench_spec(self) -> BenchSpec:
        return BenchSpec(self.bench_argv(), self.bench_cwd, self.env_dict(), self.metric_regex,
                         self.bench_timeout, self.python, expect_metric=self.mode != "exit")

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
        if self.cherry_pick:  # measurements of patched states never mix with plain ones
            ident["cherry_pick"] = sorted(self.cherry_pick)
        if self.only == "jax" and not self.jaxlib_gate:  # states the gate refuses were run: never mixed with gated ones
            ident["jaxlib_gate"] = "overridden"
        return ident

    def build_identity(self) -> dict[str, Any]:
        """How the states are built, as the wheel cache sees it (build command, the build's
        environment, the Python ABI, cherry-picks; the jax package's own build in a
        two-repository hunt). Reads hourly's environment and asks ``--python`` its ABI."""
        ident = build_identity(self.build_identity_cmd(), self.env_dict(), self.python, self.cherry_pick)
        if self.only is None:
            ident["jax_package"] = self.jax_package_identity()
        return ident

    def bench_key(self) -> str:
        """The key of every measurement: everything that determines it — the benchmark
        (:meth:`bench_identity`) and the build it ran on (:meth:`build_identity`). The one place the
        key is computed: a changed build or benchmark measures again instead of reusing.

        Settings read from a store (:func:`stored_settings`) that describe the same benchmark and
        build configuration as its scan carry the key that scan recorded, so ``show`` and
        ``report`` read the same rows from another shell or machine (commands that build check that
        the key they would compute is that one: hourly.scan.identity)."""
        recorded = getattr(self, "_recorded_key", None)
        return recorded if recorded is not None else measure_key(self)

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
        return asdict(self)


FIELD_NAMES = {f.name for f in fields(Settings)}
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


def _key(name: str) -> str:
    k = name.replace("-", "_")
    return "from_" if k == "from" else k


#: the tables a settings file may have (its settings may also stand at top level)
SECTIONS = ("scan",)


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


#: a Settings field's annotation -> (does a TOML value fit it, what it expects); cache_size also
#: takes a number of bytes, the lists also one string (a list of one)
_TYPES: dict[str, tuple[Any, str]] = {
    "bool": (lambda v: isinstance(v, bool), "a boolean (true or false)"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float | None": (_is_number, "a number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "str | None": (lambda v: isinstance(v, str), "a string"),
    "list[str]": (lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
                  "an array of strings"),
}
_FIELD_TYPES = {f.name: str(f.type) for f in fields(Settings)}


def _type_fix(name: str, annotation: str, v: Any) -> str:
    """How to write ``name`` in the file so that it has the type ``annotation`` wants."""
    text = v.strip().lower() if isinstance(v, str) else None
    if annotation == "bool":
        if text in ("true", "false"):
            return f"write {name} = {text}, without quotes"
        return f"write {name} = true or {name} = false"
    if annotation == "int":
        return f"write {name} = {text}, without quotes" if text and text.isdigit() else f"write a whole number, e.g. {name} = 3"
    if annotation == "float | None":
        try:
            float(text)  # type: ignore[arg-type]
            return f"write {name} = {text}, without quotes"
        except (TypeError, ValueError):
            return f"write a number of seconds, e.g. {name} = 3600"
    if annotation == "list[str]":
        return f'write an array of strings, e.g. {name} = ["..."]'
    return f'write it in quotes, e.g. {name} = "{_shown(v)}"' if not isinstance(v, (list, dict)) else f'write one string in quotes, e.g. {name} = "..."'


def _check_value(p: Path, where: str, name: str, v: Any) -> None:
    """A one-line error when the file's ``name`` has the wrong TOML type for its setting."""
    annotation = _FIELD_TYPES[_key(name)]
    fits, expected = _TYPES[annotation]
    if _key(name) == "cache_size":  # parse_size also takes a number of bytes
        fits, expected = (lambda x: isinstance(x, str) or _TYPES["int"][0](x)), 'a size such as "50G" or a number of bytes'
    if fits(v):
        return
    if isinstance(v, list):
        odd = next((x for x in v if not isinstance(x, str)), None)
        got = f"an array with {_toml_type(odd)} {_shown(odd)} in it" if odd is not None else "an array"
    else:
        got = f"{_toml_type(v)} {_shown(v)}" if not isinstance(v, dict) else "a table"
    raise UserError(f"{p}: {where}{name} is {got}, expected {expected}", _type_fix(name, annotation, v))


def _shown(v: Any) -> str:
    """A scalar as the file has it."""
    if isinstance(v, bool):
        return str(v).lower()
    return json.dumps(v, default=str) if isinstance(v, (str, list, dict)) else str(v)


def _nearest(name: str, candidates: list[str]) -> str | None:
    import difflib
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def load_config(path: str | None) -> tuple[dict[str, Any], str | None]:
    """Values from the config file: ``--config`` path, else ./hourly.toml when present.

    Each value must have its setting's type (a quoted "false" is not false); an unknown table or
    setting is an error naming the nearest valid one."""
    p = Path(path) if path else Path(CONFIG_NAME)
    if not p.exists():
        if path:
            raise UserError(f"config file {path} does not exist", "pass --config with an existing file")
        return {}, None
    given = "pass --config with a TOML file" if path else f"move ./{CONFIG_NAME} away, or pass --config with a TOML file"
    if p.is_dir():
        raise UserError(f"config file {p.absolute()} is a directory", given)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise UserError(f"cannot read config file {p.absolute()} ({e.strerror})", given) from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{p} is not valid TOML ({e})", "fix the file or pass --config with another") from e
    settings = sorted(n.rstrip("_") for n in FIELD_NAMES)
    items = []  # (where, name, value), top level first so that [scan] wins
    for name, v in data.items():
        if isinstance(v, dict) and name in SECTIONS:
            continue
        if isinstance(v, dict) and _key(name) not in FIELD_NAMES:
            near = _nearest(name, list(SECTIONS))
            raise UserError(f"{p}: unknown section [{name}]",
                            f"did you mean [{near}]?" if near else
                            f"settings go at top level or under [{SECTIONS[0]}]")
        items.append(("", name, v))
    for section in SECTIONS:
        if isinstance(data.get(section), dict):
            items += [(f"[{section}] ", name, v) for name, v in data[section].items()]
    values = {}
    for where, name, v in items:
        k = _key(name)
        if k not in FIELD_NAMES:
            near = _nearest(name.replace("-", "_"), settings)
            raise UserError(f"{p}: {where}unknown setting {name!r}",
                            f"did you mean {near}? (`hourly config` lists the settings)" if near else
                            "remove it; `hourly config` lists the settings")
        _check_value(p, where, name, v)
        values[k] = v
    return values, str(p)


def effective(flags: dict[str, Any], config_path: str | None = None,
              base: dict[str, Any] | None = None) -> tuple[Settings, dict[str, str]]:
    """Merge defaults < ``base`` (e.g. a stored scan's settings) < config file < flags.

    Flags whose value is None were not given. Returns the settings and where each came from.
    """
    file_values, file_name = load_config(config_path)
    s = Settings()
    origin = {name: "default" for name in FIELD_NAMES}
    for layer, label in ((base or {}, "stored scan"), (file_values, file_name or ""),
                         ({k: v for k, v in flags.items() if v is not None}, "flag")):
        for k, v in layer.items():
            k = _key(k)
            if k in FIELD_NAMES:
                if k in ("env", "cherry_pick", "native_inputs") and isinstance(v, (list, tuple)) and not v and label == "flag":
                    continue
                setattr(s, k, list(v) if isinstance(v, tuple) else v)
                origin[k] = label
    for k, v in _canonical(asdict(s), Path.cwd()).items():
        setattr(s, k, v)
    _validate(s)
    return s, origin


def _validate(s: Settings) -> None:
    if not isinstance(s.repeats, int) or s.repeats < 1:
        raise UserError(f"repeats must be a positive integer, not {s.repeats!r}", "pass --repeats 1 or more")
    if not isinstance(s.warmup_runs, int) or isinstance(s.warmup_runs, bool) or s.warmup_runs < 0:
        raise UserError(f"warmup_runs must be 0 or more, not {s.warmup_runs!r}", "pass --warmup-runs 1 (0: none)")
    for name in ("bench_timeout", "build_timeout"):
        v = getattr(s, name)
        if v is not None and (not isinstance(v, (int, float)) or v <= 0):
            raise UserError(f"{name} must be a positive number of seconds, not {v!r}", f"fix --{name.replace('_', '-')}")
    if s.mode not in ("metric", "exit"):
        raise UserError(f"mode must be metric or exit, not {s.mode!r}", "pass --mode metric or --mode exit")
    s.mode = str(s.mode.value if hasattr(s.mode, "value") else s.mode)
    s.cache_bytes()  # a one-line error now rather than after the first build
    if s.pairing not in ("time", "pin"):
        raise UserError(f"pairing must be time or pin, not {s.pairing!r}", "pass --pairing time or --pairing pin")
    if s.pairing == "pin" and s.only in ("jax", "xla"):
        raise UserError("--pairing pin builds each JAX commit with the XLA commit it pins, but --only holds one "
                        "repository still", "leave --only out, or pass --pairing time")
    if s.only in ("both", ""):  # a later command may widen a stored one-repository scan again
        s.only = None
    if s.only is not None and s.only not in ("jax", "xla"):
        raise UserError(f"--only {s.only!r} is not a repository", "pass --only jax, --only xla or --only both")
    if s.xla_ref and s.only == "jax":
        raise UserError("--xla-ref names XLA's history, but --only jax keeps XLA at the installed jaxlib",
                        "leave --xla-ref out, or hunt both repositories (--only both)")
    if isinstance(s.env, str):
        s.env = [s.env]
    if isinstance(s.cherry_pick, str):
        s.cherry_pick = [s.cherry_pick]
    if isinstance(s.native_inputs, str):
        s.native_inputs = [s.native_inputs]


def workdir_setting(workdir: str | None, config_path: str | None = None) -> str:
    """The workdir: ``--workdir``, else the settings file's, else the default."""
    s, _ = effective({"workdir": workdir}, config_path)
    return s.workdir


#: the store key of a bisection's own settings in a workdir no scan made (``hourly bisect --good
#: --bad`` into a new workdir): the base of later commands there (explain, report, profile, a rerun)
BISECT_SETTINGS = "bisect-settings"


def stored_settings(store: Store, config_path: str | None = None, **flags: Any) -> Settings:
    """The settings of the stored scan (else of the workdir's own bisection), under the settings
    file and the flags given now."""
    stored = store.load_settings("scan") or store.load_settings(BISECT_SETTINGS)
    s, _ = effective(flags, config_path, base=stored_scan_settings(stored, store.workdir))
    s._recorded_key = recorded_key(store, s)  # type: ignore[attr-defined]  # read by bench_key
    return s
