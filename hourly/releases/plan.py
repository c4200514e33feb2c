"""``hourly releases``: the release level, the first bad JAX release from the wheels people install.

For every ``jax`` version on the package index between ``--from`` and ``--to`` (both included,
in version order; dev/nightly versions with ``--pre``): pair it with its jaxlib (the same version
when the index has it, else the newest jaxlib that jax's own ``Requires-Dist`` allows), make one
virtual environment per pair under ``--cache-dir`` (uv when it is installed, pip otherwise),
run the benchmark in it ``--repeats`` times, and store the result in the workdir's store (table
``releases``, one row per attempt; a killed run resumes with the versions not finished yet).
Versions without an installable file for this Python and platform are listed as *missing*, with
the reason. Steps come from hourly's detection (direction, noise floor) plus crash boundaries;
each names the last good and first bad releases, their git tags, the JAX commits and XLA pins
between them when a JAX checkout is given, and the commands that narrow it further.

This module holds the level's settings, the versions and their pairing, the steps and the
hand-off, and the report of what the store holds (``show``); releases_run.py makes the
environments and runs the benchmark; releases_render.py draws the table and the markdown.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from hourly import options
from hourly.adapters.package_index import DistFile, LocalDir, PackageIndex, SimpleIndex, jaxlib_requirements
from hourly.adapters.store import Store
from hourly.adapters.venvs import TargetPython
from hourly.errors import UsageError, UserError
from hourly.measure.settings import ReadsMetrics
from hourly.metric import DEFAULT_METRIC_REGEX, compile_metric_regex, higher_is_better
from hourly.model import InstallerKind, PointResult, ReleasePoint, Status
from hourly.text.plurals import found, plural

if TYPE_CHECKING:
    from hourly.adapters.gitrepo import CommitInfo
    from hourly.analysis.detect import Detection
    from hourly.analysis.resolution import Resolution

LEVEL = "releases"


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return str(Path(base).expanduser() / "hourly" / "releases")


#: Results that are final: a rerun of the same command does not measure these again.
FINISHED = {Status.OK, Status.CRASHED, Status.TIMEOUT, Status.NO_METRIC}


# --------------------------------------------------------------------------------------------
# settings

@dataclass(frozen=True)
class ReleaseSettings(ReadsMetrics):
    """The release level's settings: frozen; :meth:`validate` returns them checked, their paths
    absolute (derive others with ``dataclasses.replace``)."""

    from_: str
    to: str
    bench_cmd: str = ""
    bench_cwd: str | None = None
    env: list[str] = field(default_factory=list)
    metric_regex: str = DEFAULT_METRIC_REGEX
    repeats: int = 1
    timeout: float | None = None
    higher_is_better: bool = True
    extra: str | None = None
    with_: list[str] = field(default_factory=list)
    index_url: str | None = None
    find_links: str | None = None
    pre: bool = False
    python: str | None = None
    installer: str = InstallerKind.AUTO.value
    cache_dir: str = field(default_factory=default_cache_dir)
    jax_repo: str | None = None
    workdir: str = "hourly-work"
    rerun: bool = False
    #: each environment resolves numpy, scipy, ... as of its release (uv's --exclude-newer);
    #: False (--deps-today): today's versions, which old jaxlibs crash with
    deps_as_of_release: bool = True
    #: named metrics (``--metrics``): None reads the regex's one metric; "all" or "a,b" records
    #: every (or each listed) ``METRIC name:`` line, each line a sample
    metrics: str | None = None
    metric_samples: str = "last"  # the regex's metric: "all" takes every match as a sample
    warmup_samples: int = 0       # each run's first K matches (per name) are its warm-up

    def bounds(self) -> tuple[Version, Version]:
        try:
            lo, hi = Version(self.from_), Version(self.to)
        except InvalidVersion as e:
            raise UserError(f"{e}: --from and --to take jax versions", "pass e.g. --from 0.4.13 --to 0.4.20") from e
        if hi < lo:
            raise UserError(f"--to {self.to} is before --from {self.from_}", "swap them")
        return lo, hi

    def argv(self) -> list[str]:
        try:
            argv = shlex.split(self.bench_cmd)
        except ValueError as e:
            raise UserError(f"cannot split --bench-cmd ({e})", "check its quotes") from e
        if not argv:
            raise UserError("the release level needs a benchmark", 'pass --bench-cmd "python bench.py"')
        return argv

    def env_dict(self) -> dict[str, str]:
        from hourly.adapters.proc import parse_env  # the one --env check: KEY=VALUE, or KEY from hourly's environment
        return parse_env(list(self.env))

    def requirements(self, version: str, jaxlib: str) -> list[str]:
        jax = f"jax[{self.extra}]=={version}" if self.extra else f"jax=={version}"
        return [jax, f"jaxlib=={jaxlib}", *self.with_]

    def validate(self, benchmark: bool = True) -> ReleaseSettings:
        """These settings checked before anything runs, returned with relative paths made absolute
        now, so the stored settings (``--show`` from elsewhere) keep meaning the same directories.
        ``benchmark=False`` (a dry run) does not ask for a benchmark command."""
        self.bounds()
        if benchmark or self.bench_cmd:
            self.argv()
        self.env_dict()
        compile_metric_regex(self.metric_regex)
        self.named_metrics()
        options.refuse("releases", {"metric_samples": self.metric_samples, "warmup_samples": self.warmup_samples,
                                    "repeats": self.repeats, "bench_timeout": self.timeout})
        if self.index_url and self.find_links:
            raise UsageError("--index-url and --find-links both name where wheels come from",
                            "pass one of them")
        if self.extra is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", self.extra):
            raise UserError(f"--extra {self.extra!r} is not an extra's name", "pass e.g. --extra cuda12")
        for w in self.with_:
            try:
                Requirement(w)
            except InvalidRequirement as e:
                raise UserError(f"--with {w!r} is not a requirement ({e})", "write it like 'numpy<2'") from e
        if self.deps_as_of_release and InstallerKind(self.installer) is InstallerKind.PIP:
            raise UserError("installing each release's dependencies as of its release needs uv "
                            "(pip cannot exclude newer uploads)",
                            "drop --installer pip, or pass --deps-today to install today's (pin with --with)")
        InstallerKind(self.installer)

        def absolute(path: str) -> str:
            return str(Path(path).expanduser().absolute())
        bench_cwd = absolute(self.bench_cwd or os.getcwd())
        if not Path(bench_cwd).is_dir():
            raise UserError(f"--bench-cwd {bench_cwd} is not a directory", "pass an existing directory")
        jax_repo = absolute(self.jax_repo) if self.jax_repo else None
        if jax_repo and not Path(jax_repo).is_dir():
            raise UserError(f"--jax-repo {jax_repo} is not a directory",
                            "pass a JAX checkout with its tags, or leave --jax-repo out")
        return replace(self, bench_cwd=bench_cwd, cache_dir=absolute(self.cache_dir), jax_repo=jax_repo,
                       find_links=absolute(self.find_links) if self.find_links else None)

    def source(self) -> str:
        return f"find-links:{self.find_links}" if self.find_links else f"index:{self.index_url or SimpleIndex().url}"

    def key(self, target: TargetPython) -> str:
        """What makes two results comparable: the benchmark, where it runs, what is installed
        with jax (extra, --with, the wheels' source) and the Python minor version."""
        ident: dict[str, Any] = {"cmd": self.argv(), "cwd": self.bench_cwd, "env": sorted(self.env_dict().items()),
                 "regex": self.metric_regex, "extra": self.extra, "with": sorted(self.with_),
                 "source": self.source(), "python": target.short}
        if self.deps_as_of_release:
            ident["deps"] = "as of release"
        self.add_reading(ident)
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def make_index(self) -> PackageIndex:
        if self.find_links:
            return LocalDir(self.find_links)
        return SimpleIndex(self.index_url or SimpleIndex().url, Path(self.cache_dir) / "downloads")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# versions and pairs (pure, given the index's file lists)

@dataclass
class Planned:
    version: str
    jaxlib: str | None
    released: str | None           # ISO 8601 UTC, from the index's upload time or the file
    missing: str | None = None     # why this release cannot be installed here
    pairing: str = ""              # how the jaxlib was chosen
    yanked: str | None = None


def choose_jaxlib(version: Version, jaxlib_versions: list[Version], requires: list[str] | None,
                  extra: str | None) -> tuple[Version | None, str]:
    """The jaxlib released with jax ``version``: the same version when the index has it;
    otherwise the newest jaxlib, not newer than jax, allowed by jax's Requires-Dist for
    ``jax[extra]`` (then ``jax[cpu]``, then jax alone, then the ``minimum-jaxlib`` extra as a
    lower bound). Returns (choice or None, how it was chosen / why there is none)."""
    if version in jaxlib_versions:
        return version, "same version"
    requires = requires or []
    reqs = []
    for e in dict.fromkeys([extra or "cpu", "cpu", None]):  # each includes the unconditional ones
        reqs = jaxlib_requirements(requires, e)
        if reqs:
            break
    spec = SpecifierSet()
    for r in reqs:
        spec &= r.specifier
    if not reqs:
        for r in jaxlib_requirements(requires, "minimum-jaxlib"):
            for s in r.specifier:
                spec &= SpecifierSet(f">={s.version}" if s.operator in ("==", "===", "~=") else str(s))
    if not str(spec) and not reqs:
        return None, f"jaxlib {version} is not on the index and jax {version} names no jaxlib requirement"
    allowed = [v for v in jaxlib_versions if v <= version and spec.contains(v, prereleases=True)]
    if not allowed:
        return None, (f"jaxlib {version} is not on the index, and no jaxlib there satisfies jax {version}'s "
                      f"requirement jaxlib{spec}")
    return max(allowed), f"jaxlib {version} is not on the index; the newest allowed by jaxlib{spec}"


def _pythons(files: list[DistFile]) -> str:
    interp = sorted({t.interpreter for f in files for t in f.tags},
                    key=lambda s: (len(s), s))
    return ", ".join(interp) or "none"


def _summarise(files: list[DistFile]) -> str:
    platforms = sorted({t.platform for f in files for t in f.tags})
    return f"wheels for {_pythons(files)} on {', '.join(platforms) or 'no platform'}"


def plan_releases(index: PackageIndex, s: ReleaseSettings, target: TargetPython) -> list[Planned]:
    """Every jax version of the window with its jaxlib and, when it cannot be installed, why."""
    lo, hi = s.bounds()
    jax_files = index.files("jax")
    if not jax_files:
        raise UserError(f"no jax on {index.describe()}", "check --index-url / --find-links")
    jaxlib_files = index.files("jaxlib")
    by_jax: dict[Version, list[DistFile]] = {}
    for f in jax_files:
        by_jax.setdefault(f.version, []).append(f)
    by_jaxlib: dict[Version, list[DistFile]] = {}
    for f in jaxlib_files:
        by_jaxlib.setdefault(f.version, []).append(f)
    pre = s.pre or lo.is_prerelease or hi.is_prerelease
    versions = sorted(v for v in by_jax if lo <= v <= hi and (pre or not v.is_prerelease))
    if not versions:
        raise UserError(f"no jax release between {s.from_} and {s.to} on {index.describe()}",
                        "widen --from/--to" + ("" if pre else ", or pass --pre for dev versions"))
    jaxlib_versions = sorted(by_jaxlib)
    out = []
    for v in versions:
        files = by_jax[v]
        times = [f.uploaded for f in files if f.uploaded]
        released = min(times).strftime("%Y-%m-%dT%H:%M:%SZ") if times else None
        yanked = next((f.yanked for f in files if f.yanked), None)
        installable = [f for f in files if f.compatible(set(target.tags), target.version)]
        requires = None
        if v not in by_jaxlib and installable:
            best = sorted(installable, key=lambda f: f.kind != "wheel")[0]
            requires = index.requires(best)
        lib, how = choose_jaxlib(v, jaxlib_versions, requires, s.extra)
        p = Planned(str(v), str(lib) if lib else None, released, pairing=how, yanked=yanked)
        if not installable:
            p.missing = (f"no jax {v} file installs on Python {target.version} here "
                         f"({_summarise(files) if any(f.kind == 'wheel' for f in files) else 'no sdist or wheel'})")
        elif lib is None:
            p.missing = how
        elif not any(f.compatible(set(target.tags), target.version) for f in by_jaxlib[lib]):
            p.missing = (f"no jaxlib {lib} wheel for {target.short} on this platform "
                         f"(the index has {_summarise(by_jaxlib[lib])})")
        out.append(p)
    return out


# --------------------------------------------------------------------------------------------
# results

# --------------------------------------------------------------------------------------------
# steps and the hand-off

def jax_tag(version: str) -> str:
    return f"jax-v{version}"


def jaxlib_tag(version: str) -> str:
    return f"jaxlib-v{version}"


_XLA_COMMIT = re.compile(r"""XLA_COMMIT\s*=\s*["']([0-9a-f]{7,40})["']""")


def xla_pin(workspace_bzl: str | None) -> str | None:
    """The XLA commit in JAX's ``third_party/xla/workspace.bzl`` (pure)."""
    m = _XLA_COMMIT.search(workspace_bzl or "")
    return m.group(1) if m else None


@dataclass
class TagFacts:
    """What a JAX checkout says about the releases on both sides of a step."""

    commits: int | None = None          # JAX commits in jax-vA..jax-vB
    xla_before: str | None = None       # XLA commit pinned at jax-vA
    xla_after: str | None = None
    time_before: str | None = None      # the tags' commit times (ISO UTC)
    time_after: str | None = None
    unknown: str | None = None          # why the facts are unknown

    def as_json(self) -> dict[str, Any]:
        return {"jax_commits": self.commits, "xla_before": self.xla_before, "xla_after": self.xla_after,
                "tag_time_before": self.time_before, "tag_time_after": self.time_after, "unknown": self.unknown}


def tag_facts(jax_repo: str | None, before: str, after: str) -> TagFacts:
    """Commits between ``jax-v<before>`` and ``jax-v<after>`` and XLA pins, from a JAX checkout."""
    if not jax_repo:
        return TagFacts(unknown="no --jax-repo: pass a JAX checkout (with tags) for commits and XLA pins")
    from hourly.adapters.gitrepo import GitRepo
    repo = GitRepo(jax_repo, "jax")
    a, b = repo.tag(jax_tag(before)), repo.tag(jax_tag(after))
    if a is None or b is None:
        lacking = [jax_tag(v) for v, c in ((before, a), (after, b)) if c is None]
        return TagFacts(unknown=f"{repo.path} has no tag {' or '.join(lacking)} (git fetch --tags)")
    path = "third_party/xla/workspace.bzl"

    def iso(c: CommitInfo) -> str:
        return datetime.fromtimestamp(c.committer_time, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    return TagFacts(repo.count(a.sha, b.sha), xla_pin(repo.file_at(a.sha, path)),
                    xla_pin(repo.file_at(b.sha, path)), iso(a), iso(b))


@dataclass
class ReleaseStep:
    kind: str                      # "regression" | "improvement" | "crash"
    before: ReleasePoint           # last good release (last before the step)
    after: ReleasePoint            # first bad release (first after it)
    change: float | None = None    # relative change of the metric
    level_before: float | None = None
    level_after: float | None = None
    strength: float | None = None
    facts: TagFacts = field(default_factory=TagFacts)
    commands: list[str] = field(default_factory=list)

    @property
    def tags(self) -> list[str]:
        out = [f"{jax_tag(self.before.version)}..{jax_tag(self.after.version)}"]
        if (self.before.jaxlib, self.after.jaxlib) != (self.before.version, self.after.version) \
                and self.before.jaxlib and self.after.jaxlib:
            out.append(f"{jaxlib_tag(self.before.jaxlib)}..{jaxlib_tag(self.after.jaxlib)}")
        return out

    def as_json(self) -> dict[str, Any]:
        side = lambda p: {"version": p.version, "jaxlib": p.jaxlib, "released": p.released}
        return {"kind": self.kind, "relative_change": self.change, "from_value": self.level_before,
                "to_value": self.level_after, "strength": self.strength, "last_good": side(self.before),
                "first_bad": side(self.after), "tags": self.tags, **self.facts.as_json(),
                "next_commands": self.commands}


def release_detection(points: list[ReleasePoint], higher_is_better: bool) -> tuple[list[ReleaseStep], Any]:
    """Detection over the releases that ran (missing ones are left out, failed ones are gaps),
    plus every good → crashed/timed-out boundary (pure), and the detection behind it (None without
    a measured release): its ``too_short`` says when the releases cannot tell noise from steps."""
    steps, detection, _ = _release_detection(points, higher_is_better)
    return steps, detection


def _release_detection(points: list[ReleasePoint], higher_is_better: bool) -> tuple[list[ReleaseStep], Any, Any]:
    """:func:`release_detection` and the releases' resolution (hourly.analysis.resolution; None
    under two measured releases)."""
    from hourly.analysis.detect import ChangeKind
    from hourly.analysis.resolution import resolution
    from hourly.analysis.steps import find_steps
    ran = [p for p in points if p.status not in (Status.MISSING, Status.INSTALL_FAILED)]
    steps: list[ReleaseStep] = []
    detection = res = None
    if any(p.status is Status.OK for p in ran):
        rows = [PointResult(p.version, f"xla-of-{p.version}", p.version, p.status.value, p.value, list(p.samples))
                for p in ran]
        found, detection, groups = find_steps(rows, higher_is_better)
        res = resolution(detection, [len(g.samples or []) for g in groups])
        for st in found:
            c = st.change
            steps.append(ReleaseStep("regression" if st.kind is ChangeKind.REGRESSION else "improvement",
                                     ran[st.before_index], ran[st.after_index], c.relative_change,
                                     c.level_before, c.level_after, c.strength))
    for prev, p in pairwise(ran):
        if prev.status is Status.OK and p.status in (Status.CRASHED, Status.TIMEOUT):
            steps.append(ReleaseStep("crash", prev, p))
    steps.sort(key=lambda st: Version(st.after.version))
    return steps, detection, res


def unresolved_note(res: Resolution | None, s: ReleaseSettings) -> str | None:
    """Where a step of the default --min-change (1 %) could not have shown through the releases'
    noise: one line, "why; fix" as :func:`undecided_note`'s (the smallest step that could, and the
    command that measures each release often enough to see 1 %); else None."""
    from hourly.analysis.detect import DEFAULT_MIN_CHANGE
    from hourly.analysis.resolution import repeats_fix, size, unresolved_words
    if res is None or res.resolves(DEFAULT_MIN_CHANGE):
        return None
    fix = repeats_fix(res, DEFAULT_MIN_CHANGE, "release",
                      lambda n: releases_command(replace(s, repeats=n), rerun=True))
    return (f"{unresolved_words(res, DEFAULT_MIN_CHANGE)} ({res.points} releases, {res.repeats} "
            f"run{'s' if res.repeats != 1 else ''} each, noise {size(res.noise)} per release, a step must be "
            f"{res.threshold:.1f}× its standard error); {fix}")


#: Runs of each release asked for when one value per release cannot tell noise from steps.
UNDECIDED_REPEATS = 3


def undecided_note(detection: Detection | None, s: ReleaseSettings, metric: str | None = None) -> str | None:
    """One line when the releases are too few to tell noise from steps (Detection.too_short),
    with the command that tells (each release measured several times); else None. ``metric``: the
    named metric whose releases these are."""
    from hourly.analysis.steps import too_short
    why = too_short(detection, "release") if detection is not None else None
    if why is None or detection is None:
        return None
    if metric:
        why = f"{metric}: {why}"
    if detection.repeated:
        return (f"{why}; measure the releases around them too (a wider --from/--to), or the days between "
                "two of them in their nightly containers (`hourly nightly`)")
    return (f"{why}; measure each release {UNDECIDED_REPEATS} times to tell: "
            f"{releases_command(replace(s, repeats=max(UNDECIDED_REPEATS, s.repeats)), rerun=True)}")


def releases_command(s: ReleaseSettings, rerun: bool = False) -> str:
    """The ``hourly releases`` command of these settings, through the one encoder (values of
    secret-looking --env redacted)."""
    default = ReleaseSettings(s.from_, s.to)

    def given(name: str) -> Any:
        v = getattr(s, name)
        return v if v is not None and v != getattr(default, name) else None

    return options.command_line("releases", [
        ("from_", s.from_), ("to", s.to), ("bench_cmd", s.bench_cmd),
        *((n, given(n)) for n in ("bench_cwd", "metric_regex", "metrics", "metric_samples", "warmup_samples",
                                  "repeats")),
        ("bench_timeout", given("timeout")),
        *((n, given(n)) for n in ("extra", "index_url", "find_links", "python", "installer", "cache_dir",
                                  "jax_repo")),
        ("with_", list(s.with_)), ("env", list(s.env)), ("pre", s.pre or None),
        ("deps_today", None if s.deps_as_of_release else True),
        ("higher_is_better", None if s.higher_is_better else False), ("workdir", s.workdir),
        ("rerun", rerun or None)])


def _bench_args(s: ReleaseSettings, crash: bool = False) -> dict[str, Any]:
    """The benchmark's options of the commands the release level hands over to: how a run's output
    is read as this level read it (an exit-status bisection, ``crash``, reads no metric)."""
    return {"bench_cmd": s.bench_cmd,
            "metric_regex": s.metric_regex if s.metric_regex != DEFAULT_METRIC_REGEX and not crash else None,
            "metrics": None if crash else s.metrics,
            "metric_samples": s.metric_samples if s.metric_samples != "last" and not crash else None,
            "warmup_samples": s.warmup_samples or None if not crash else None,
            "repeats": s.repeats if s.repeats > 1 else None}


def nightly_command(start: str, end: str, s: ReleaseSettings) -> str:
    """The daily level (nightly containers) from ``start`` to ``end`` with the same benchmark."""
    return options.command_line("nightly", {"from_": start, "to": end, **_bench_args(s),
                                            "higher_is_better": False if not s.higher_is_better else None})


def next_commands(step: ReleaseStep, s: ReleaseSettings, metric: str = "") -> list[str]:
    """The nightly-container scan between the two release dates, the two-repository bisection
    between the two releases' times (their tags' commit times when known), and, when both
    releases use the same jaxlib, the JAX-only bisection (``--only jax``) of the same window; a
    named ``metric``'s bisections follow it (``--metric``)."""
    out = []
    if step.before.date and step.after.date:
        out.append(nightly_command(step.before.date, step.after.date, s))
    good = step.facts.time_before or step.before.released
    bad = step.facts.time_after or step.after.released
    if good and bad:
        crash = step.kind == "crash"
        # a named metric's unit says its direction to the bisection itself
        direction = not crash and not s.higher_is_better and not (metric and higher_is_better(metric) is not None)
        cmd = {"good": good, "bad": bad, **_bench_args(s, crash),
               "metric": metric or None if not crash else None,
               "bench_cwd": s.bench_cwd if s.bench_cwd and Path(s.bench_cwd) != Path.cwd() else None,
               "mode": "exit" if crash else None,
               "higher_is_better": False if direction else None,
               "jax_repo": s.jax_repo or None}
        out.append(options.command_line("bisect", cmd))
        if step.before.jaxlib and step.before.jaxlib == step.after.jaxlib:
            # jaxlib did not change: the step is in JAX's Python, hunted with the installed jaxlib
            out.append(options.command_line("bisect", {"only": "jax", **cmd}))
    return out


#: Results that hold no measurement: the release never ran here.
UNMEASURED = (Status.MISSING, Status.INSTALL_FAILED)


@dataclass
class ReleaseGap:
    """Consecutive releases of the window with no measurement (missing, or failed to install):
    a step inside them is invisible at this level."""

    points: list[ReleasePoint]
    after: ReleasePoint | None = None    # the last release before the gap with a result
    before: ReleasePoint | None = None   # the first release after it with a result
    command: str | None = None           # what measures the gap's days instead

    @property
    def versions(self) -> list[str]:
        return [p.version for p in self.points]

    def describe(self) -> str:
        """"jax 0.4.14, 0.4.15 (2 missing), between jax 0.4.13 and 0.4.18"."""
        counts: dict[str, int] = {}
        for p in self.points:
            counts[p.status.value] = counts.get(p.status.value, 0) + 1
        where = (f", between jax {self.after.version} and {self.before.version}" if self.after and self.before
                 else f", after jax {self.after.version}" if self.after
                 else f", before jax {self.before.version}" if self.before else "")
        return f"jax {', '.join(self.versions)} ({', '.join(f'{n} {k}' for k, n in counts.items())}){where}"

    def as_json(self) -> dict[str, Any]:
        return {"versions": self.versions, "statuses": [p.status.value for p in self.points],
                "after": self.after.version if self.after else None,
                "before": self.before.version if self.before else None, "command": self.command}


def find_gaps(points: list[ReleasePoint]) -> list[ReleaseGap]:
    """The runs of consecutive releases without a measurement, with the releases that have one
    on either side (pure)."""
    gaps: list[ReleaseGap] = []
    run: list[ReleasePoint] = []
    last: ReleasePoint | None = None
    for p in [*points, None]:
        if p is not None and p.status in UNMEASURED:
            run.append(p)
            continue
        if run:
            gaps.append(ReleaseGap(run, last, p))
            run = []
        last = p
    return gaps


def gap_command(gap: ReleaseGap, s: ReleaseSettings) -> str | None:
    """The nightly containers over the gap's days (from the release before it to the one after
    it; the gap's own release dates at the window's ends): they bring their own dependencies."""
    start = (gap.after.date if gap.after else None) or gap.points[0].date
    end = (gap.before.date if gap.before else None) or gap.points[-1].date
    return nightly_command(start, end, s) if start and end else None


def summary(steps: list[ReleaseStep], points: list[ReleasePoint], gaps: list[ReleaseGap],
            undecided: str | None = None) -> str:
    """The finding in one line; never a plain "no steps found" while releases lack a measurement,
    or while they are too few to tell noise from steps (``undecided``: :func:`undecided_note`)."""
    if undecided and not steps:
        return undecided
    if not gaps:
        return found(len(steps), "step").rstrip(":")
    lacking = [v for g in gaps for v in g.versions]
    head = (plural(len(steps), "step") + " found" if steps else
            f"no step among the {plural(len(points) - len(lacking), 'measured release')}")
    return f"{head}; no measurement for jax {', '.join(lacking)}"


# --------------------------------------------------------------------------------------------
# running

@dataclass
class ReleaseMetric:
    """One named metric of the release level (``--metrics``): its releases, its steps, what it did."""

    name: str
    higher_is_better: bool
    points: list[ReleasePoint]
    steps: list[ReleaseStep] = field(default_factory=list)
    moved: Any = None  # hourly.analysis.moved.Moved (its steps are detection's, ``steps`` with tags)

    def as_json(self) -> dict[str, Any]:
        return {"higher_is_better": self.higher_is_better, "points": [p.as_json() for p in self.points],
                **(self.moved.as_json() if self.moved else {}), "steps": [st.as_json() for st in self.steps]}


@dataclass
class ReleaseReport:
    points: list[ReleasePoint]
    steps: list[ReleaseStep]
    settings: ReleaseSettings
    measured: int = 0
    installer: str | None = None     # the installer of this run ("uv (...)" / "pip (...)")
    gaps: list[ReleaseGap] = field(default_factory=list)
    #: named metrics: each metric's releases and steps (``points`` and ``steps`` are the first's)
    metrics: list[ReleaseMetric] | None = None
    #: too few releases to tell noise from steps, and the command that tells (undecided_note); None: they can
    undecided: str | None = None

    @property
    def summary(self) -> str:
        if self.metrics is not None:
            from hourly.analysis.moved import summary as per_metric
            head = summary([st for m in self.metrics for st in m.steps], self.points, self.gaps, self.undecided)
            return f"{head}; per metric: {per_metric([m.moved for m in self.metrics])}" if self.metrics else head
        return summary(self.steps, self.points, self.gaps, self.undecided)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"points": [p.as_json() for p in self.points],
                               "steps": [st.as_json() for st in self.steps], "gaps": [g.as_json() for g in self.gaps],
                               "summary": self.summary, "installer": self.installer, "undecided": self.undecided}
        if self.metrics is not None:
            from hourly.analysis.moved import summary as per_metric
            out["metrics"] = {m.name: m.as_json() for m in self.metrics}
            out["moved"] = per_metric([m.moved for m in self.metrics])
        return out


def stored_releases(store: Store, s: ReleaseSettings | None = None, key: str | None = None, measured: int = 0,
         installer: str | None = None) -> ReleaseReport:
    """The stored release results of the window (the last run's settings unless ``s``)."""
    if s is None or key is None:
        saved = store.load_settings(LEVEL)
        if not saved:
            raise UserError(f"no release results in {store.workdir}",
                            "run `hourly releases --from 0.4.13 --to 0.4.20 --bench-cmd ...` first")
        s = ReleaseSettings(**saved["settings"])
        key = saved["key"]
    lo, hi = s.bounds()
    pre = s.pre or lo.is_prerelease or hi.is_prerelease

    def window(have: dict[str, ReleasePoint]) -> list[ReleasePoint]:
        return sorted((p for v, p in have.items() if lo <= Version(v) <= hi and (pre or not Version(v).is_prerelease)),
                      key=lambda p: Version(p.version))
    named = s.named_metrics()
    metrics: list[ReleaseMetric] | None = None
    if named is None:
        points = window(store.releases(key))
        found_steps, detection, res = _release_detection(points, s.higher_is_better)
        steps = _with_facts(found_steps, s)
        undecided = undecided_note(detection, s)
        if undecided is None and not steps:  # never "no steps found" (nor "no step among the measured
            undecided = unresolved_note(res, s)  # releases" beside a gap) below what the noise lets show
    else:
        metrics, undecided = _release_metrics(store, s, key, named, window)
        points = metrics[0].points if metrics else window(store.releases(key, metric=None))
        steps = metrics[0].steps if metrics else []
    gaps = find_gaps(points)
    for g in gaps:
        g.command = gap_command(g, s)
    return ReleaseReport(points, steps, s, measured, installer, gaps, metrics, undecided)


def _with_facts(steps: list[ReleaseStep], s: ReleaseSettings, metric: str = "") -> list[ReleaseStep]:
    for st in steps:
        st.facts = tag_facts(s.jax_repo, st.before.version, st.after.version)
        st.commands = next_commands(st, s, metric)
    return steps


def _release_metrics(store: Store, s: ReleaseSettings, key: str, named: list[str],
                     window: Callable[[dict[str, ReleasePoint]], list[ReleasePoint]]
                     ) -> tuple[list[ReleaseMetric], str | None]:
    """Every named metric's releases, steps and what it did (a release measured without a row of
    the metric did not print it); and the first metric with no step whose releases are too few to
    tell noise from steps (:func:`undecided_note`), else None."""
    from hourly.analysis.moved import what_moved
    names = store.release_metric_names(key) if "all" in named else named
    any_row = store.releases(key, metric=None)
    out = []
    undecided = None
    for name in names:
        have = store.releases(key, metric=name)
        for v, p in any_row.items():
            if v not in have:
                have[v] = ReleasePoint(p.version, p.jaxlib, p.released, Status.NO_METRIC, installer=p.installer,
                                       env=p.env, detail=f"{name} never printed; the runs printed other metrics",
                                       metric=name)
        points = window(have)
        direction = s.direction_of(name)
        found_steps, detection = release_detection(points, direction)
        steps = _with_facts(found_steps, s, name)
        ran = [p for p in points if p.status not in UNMEASURED]
        rows = [PointResult(p.version, f"xla-of-{p.version}", p.version, p.status.value, p.value, list(p.samples))
                for p in ran]
        moved, _ = what_moved(name, rows, direction, incomplete=bool(find_gaps(points)))
        out.append(ReleaseMetric(name, direction, points, steps, moved))
        if undecided is None and not steps:
            undecided = undecided_note(detection, s, name)
    return out, undecided
