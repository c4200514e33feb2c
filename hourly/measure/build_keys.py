"""What a build is and what making a state the installed build takes: the build's spec
(:class:`BuildSpec`), its cache keys, and the pricing of a state by what it rebuilds (:class:`BuildKeys`,
:class:`Need`). Builds are priced by their inputs (docs/builds.md): a build that leaves a jaxlib wheel is
cached as jaxlib (under the XLA commit and JAX's native inputs, :mod:`hourly.measure.native_inputs`) and
the ``jax`` package (under the JAX commit). The building itself is hourly.measure.build's
(:class:`~hourly.measure.build.Builder`, which keys its cache entries here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hourly.adapters.gitrepo import GitRepo
from hourly.measure.build_cache import WheelCache, build_identity, default_cache_dir, entry_key
from hourly.measure.resolve import Pair
from hourly.model import Named

if TYPE_CHECKING:
    from hourly.measure.native_inputs import NativeKeys


@dataclass
class BuildSpec:
    cmd: list[str]
    wheel_dir: Path
    python: str
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    cache_dir: Path | None = None     # default: hourly.measure.build_cache.default_cache_dir()
    cache_size: int | None = None     # bytes; None: no bound
    picks: list[str] = field(default_factory=list)  # --cherry-pick specs (part of the identity)
    ident_cmd: list[str] | None = None  # the command as the identity names it [default: cmd]
    package_only: bool = False  # --only jax: cmd builds the jax package alone (no jaxlib)
    #: where the wheels are installed [default: python]: with --only jax the workdir's overlay over
    #: --python (hourly.measure.pinned.host_overlay), never --python itself
    install_python: str | None = None
    #: builds priced by their inputs (two-repository hunts): the jax package's own build (argv;
    #: [] when the tree is installed editable; None: jaxlib and jax are never cached apart), how the
    #: identity names it, and the patterns of JAX's native inputs (hourly.measure.native_inputs)
    jax_cmd: list[str] | None = None
    jax_ident_cmd: list[str] | None = None
    native_inputs: list[str] = field(default_factory=list)


class Need(Named):
    """What making a state the installed build takes (the bisection prices states by it)."""

    CACHED = "cached"   # everything is in the cache: an install
    JAX = "jax"         # jaxlib is cached: the jax package alone is built (seconds)
    BUILD = "build"     # a full build (jaxlib too)


#: wheels of a build that belong to the jax package; every other wheel is jaxlib's (plugins too)
def is_jax_package(wheel: Path) -> bool:
    return wheel.name.startswith("jax-")


class BuildKeys:
    """A build's cache keys and the price of a state (what making it the installed build takes),
    from the cache alone: what a :class:`~hourly.measure.build.Builder` is without trees to build in."""

    def __init__(self, jax_repo: GitRepo, spec: BuildSpec):
        self.jax_repo = jax_repo
        self.spec = spec
        self.cache_root = Path(spec.cache_dir or default_cache_dir()) / "wheels"
        self.cache = WheelCache(self.cache_root, spec.cache_size)
        self._identity: dict | None = None
        self._native: NativeKeys | None = None
        self._jax_identity: dict | None = None

    @property
    def identity(self) -> dict:
        """How this builder builds (command, environment, Python ABI): with the pair, the cache key."""
        if self._identity is None:
            self._identity = build_identity(self.spec.ident_cmd or self.spec.cmd, self.spec.env, self.spec.python,
                                            self.spec.picks)
        return self._identity

    def build_key(self, pair: Pair) -> str:
        return entry_key(pair.key(), pair.xla, pair.jax, self.identity)

    def cache_dir(self, pair: Pair) -> Path:
        return self.cache.entry(self.build_key(pair))

    def cached_wheels(self, pair: Pair, touch: bool = False) -> list[Path]:
        return self.cache.get(self.build_key(pair), touch)

    # -- builds priced by their inputs (hourly.measure.native_inputs) -------------------------------------------
    @property
    def split(self) -> bool:
        """Whether jaxlib and the jax package are cached apart (two-repository hunts)."""
        return self.spec.jax_cmd is not None and not self.spec.package_only

    def _native_keys(self) -> NativeKeys:
        if self._native is None:
            from hourly.measure.native_inputs import DEFAULT_NATIVE_INPUTS, NativeKeys
            self._native = NativeKeys(self.jax_repo, self.spec.native_inputs or DEFAULT_NATIVE_INPUTS)
        return self._native

    def native_key(self, jax_sha: str) -> str:
        return self._native_keys()(jax_sha)

    def jaxlib_key(self, pair: Pair) -> str:
        """jaxlib's cache entry: the XLA commit, JAX's native inputs, and how it is built."""
        native = self.native_key(pair.jax)
        return entry_key(f"jaxlib-{pair.xla[:12]}-{native[:12]}", pair.xla, f"native:{native}", self.identity)

    def jax_key(self, pair: Pair) -> str:
        """The jax package's cache entry: the JAX commit and how the package is built."""
        if self._jax_identity is None:
            self._jax_identity = build_identity(self.spec.jax_ident_cmd or self.spec.jax_cmd or [], self.spec.env,
                                                self.spec.python, self.spec.picks)
        return entry_key(f"jax-{pair.jax[:12]}", "", pair.jax, self._jax_identity)

    def needs(self, pairs: list[Pair]) -> dict[Pair, Need]:
        """:meth:`need` of every pair, with a constant number of git processes however many pairs:
        the native keys of all their JAX commits come from one batch (:meth:`NativeKeys.prefetch`)."""
        if self.split:
            self.prefetch_native([p.jax for p in pairs if not self.cached_wheels(p)])
        return {p: self.need(p) for p in pairs}

    def prefetch_native(self, jax_shas: list[str]) -> None:
        """Compute the native keys of these JAX commits in one batch (two git processes)."""
        self._native_keys().prefetch(jax_shas)

    def need(self, pair: Pair) -> Need:
        """What making ``pair`` the installed build takes now."""
        if self.cached_wheels(pair):
            return Need.CACHED
        if self.split and self.cache.get(self.jaxlib_key(pair)):
            return Need.CACHED if not self.spec.jax_cmd or self.cache.get(self.jax_key(pair)) else Need.JAX
        return Need.BUILD
