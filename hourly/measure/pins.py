"""Pins read from git: which XLA commit a JAX commit names (and which LLVM or Triton commit an XLA
commit names), whether the dependency's checkout has it, and the time pairing's states that
combine a JAX commit with an XLA commit older than its pin. The text parsing is
:mod:`hourly.analysis.pins`."""

from __future__ import annotations

from dataclasses import dataclass

from hourly.adapters import proc
from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.pins import PIN_FILES, PINNED_BY, parse_pin
from hourly.errors import ProcessError, UserError
from hourly.model import Pair


@dataclass(frozen=True)
class PinRecord:
    dep: str    # xla, llvm, triton
    owner: str  # the commit of the pinning repository (jax for xla, xla for llvm and triton)
    rev: str    # the revision the file names (a full sha once resolved)
    path: str   # the file that names it


class MissingPin(UserError):
    """A pin names a commit the dependency's checkout does not have."""


class PinReader:
    """The pins of ``dep`` in the commits of ``owner`` (the pinning repository's checkout), cached;
    ``dep_repo``: the dependency's checkout, where each pin must resolve."""

    def __init__(self, owner: GitRepo, dep: str, dep_repo: GitRepo | None = None):
        self.owner, self.dep, self.dep_repo = owner, dep, dep_repo
        self._cache: dict[str, PinRecord | None] = {}
        self._resolved: dict[str, str] = {}

    def prefetch(self, shas: list[str]) -> None:
        """Read the pins of many commits at once: every pin file of each in ONE ``git cat-file
        --batch`` (a scan prices its pins in a constant number of processes, not one per pair)."""
        todo = [sha for sha in dict.fromkeys(shas) if sha not in self._cache]
        texts = self.owner.files_at([(sha, f.path) for sha in todo for f in PIN_FILES[self.dep]])
        for sha in todo:
            self._cache[sha] = None
            for f in PIN_FILES[self.dep]:
                text = texts.get((sha, f.path))
                rev = parse_pin(f, text) if text is not None else None
                if rev:
                    self._cache[sha] = PinRecord(self.dep, sha, rev, f.path)
                    break

    def resolve_all(self, revs: list[str]) -> None:
        """Resolve many pins in the dependency's checkout in ONE process; what it lacks stays
        unresolved (:meth:`resolve` then names the fetch)."""
        assert self.dep_repo is not None
        todo = [r for r in dict.fromkeys(revs) if r not in self._resolved]
        for rev, full in self.dep_repo.commits_of(todo).items():
            if full:
                self._resolved[rev] = full

    def find(self, sha: str) -> PinRecord | None:
        """The pin at ``sha``, or None when none of the files names one."""
        if sha not in self._cache:
            self._cache[sha] = None
            for f in PIN_FILES[self.dep]:
                text = self.owner.file_at(sha, f.path)
                rev = parse_pin(f, text) if text is not None else None
                if rev:
                    self._cache[sha] = PinRecord(self.dep, sha, rev, f.path)
                    break
        return self._cache[sha]

    def pin(self, sha: str) -> PinRecord:
        """The pin at ``sha``, resolved in the dependency's checkout (a full sha): a file that names
        none, or a commit the checkout lacks, is a one-line error naming the fix."""
        rec = self.find(sha)
        owner = PINNED_BY[self.dep]
        if rec is None:
            files = ", ".join(f.path for f in PIN_FILES[self.dep])
            raise UserError(f"{owner}@{sha[:12]} names no {self.dep.upper()} pin (read {files})",
                            f"pass --pairing time, or a {owner} ref whose commits pin {self.dep.upper()}")
        return PinRecord(rec.dep, rec.owner, self.resolve(rec), rec.path)

    def resolve(self, rec: PinRecord) -> str:
        if rec.rev in self._resolved:
            return self._resolved[rec.rev]
        repo = self.dep_repo
        assert repo is not None  # a reader that resolves pins is given the dependency's checkout
        try:
            full = repo.git("rev-parse", "--verify", "--quiet", f"{rec.rev}^{{commit}}").strip()
        except ProcessError:
            full = ""
        if not full:
            raise MissingPin(f"{PINNED_BY[self.dep]}@{rec.owner[:12]} pins {self.dep}@{rec.rev[:12]} ({rec.path}), "
                             f"a commit the {self.dep} checkout {repo.path} does not have",
                             f"fetch it: git -C {repo.path} fetch origin {rec.rev}")
        self._resolved[rec.rev] = full
        return full

    def moves(self, old: str, new: str) -> tuple[PinRecord, PinRecord] | None:
        """The pins before and after ``old`` → ``new`` (owner commits) when the step moves the pin."""
        a, b = self.find(old), self.find(new)
        if a is None or b is None or a.rev == b.rev:
            return None
        return a, b


def older_than_pin(xla: GitRepo, x: str, pin: str) -> bool:
    """``x`` is a strict ancestor of ``pin``: the XLA of the pair is older than the JAX commit's own pin."""
    return x != pin and xla.is_ancestor(x, pin)


def behind_pins(pairs: list[Pair], xla: GitRepo | None, jax: GitRepo) -> dict:
    """The time pairing against the pins: per pair (``"<xla>:<jax>"``) whose XLA commit is older than
    its JAX commit's pin, that pin; and per JAX commit its pin where one was read (None for a JAX
    history without pin files, or --only). Pins the XLA checkout lacks are listed apart."""
    out: dict = {"behind_pin": {}, "pins": {}, "unknown": {}}
    if xla is None:
        return out
    reader = PinReader(jax, "xla", xla)
    reader.prefetch([p.jax for p in pairs])  # one process for every pin file of every JAX commit
    recs = {p.jax: reader.find(p.jax) for p in pairs}
    reader.resolve_all([r.rev for r in recs.values() if r is not None])
    pinned: list[tuple[Pair, str]] = []
    for p in pairs:
        rec = recs[p.jax]
        if rec is None:
            continue
        try:
            pin = reader.resolve(rec)
        except MissingPin:
            out["unknown"][p.jax] = rec.rev
            continue
        out["pins"][p.jax] = pin
        pinned.append((p, pin))
    older = _older_than_pins(xla, [(p.xla, pin) for p, pin in pinned])
    for p, pin in pinned:
        if (p.xla, pin) in older:
            out["behind_pin"][f"{p.xla}:{p.jax}"] = pin
    return out


def _older_than_pins(xla: GitRepo, pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(x, pin)`` whose ``x`` is a strict ancestor of ``pin``, in a number of processes that
    grows with the distinct pins (about one a day), not with the pairs: the merge base of every
    ``x`` (one process), then per pin the commits it reaches above that base (one ``rev-list``)."""
    todo = [(x, pin) for x, pin in dict.fromkeys(pairs) if x != pin]
    if not todo:
        return set()
    xs = sorted({x for x, _ in todo})
    res = proc.run(["git", "merge-base", "--octopus", *xs], cwd=xla.path, check=False) if len(xs) > 1 else None
    base: str | None
    if res is None:
        base = xs[0]
    else:
        words = res.output.split() if res.ok else []
        base = words[0] if words else None
    if base is None:  # no common history: ask each pair (rare, and still right)
        return {(x, pin) for x, pin in todo if older_than_pin(xla, x, pin)}
    older: set[tuple[str, str]] = set()
    for pin in dict.fromkeys(pin for _, pin in todo):
        # every x descends from base, so x is an ancestor of pin iff pin reaches it above base's parents
        reach = set(xla.git("rev-list", pin, "--not", f"{base}^@", "--").split())
        older |= {(x, q) for x, q in todo if q == pin and x in reach}
    return older


def dep_range(repo: GitRepo, old: str, new: str) -> list[tuple[str, int]]:
    """The first-parent commits of ``old..new`` in the dependency's checkout, oldest first, with
    their committer times."""
    return [(c.sha, c.committer_time) for c in reversed(repo.log(old, new, first_parent=True))]
