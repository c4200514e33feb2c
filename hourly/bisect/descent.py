"""Descent into a pin bump: when the bisected culprit moves a dependency's pin, bisect on inside
the dependency (docs/bisect.md, "Descent into a pin bump").

* A JAX culprit of a pin-paired bisection (``--pairing pin``) that moves the XLA pin: the states
  are XLA's first-parent commits between the old pin and the new one, each built with JAX at the
  culprit (the build gets the XLA checkout as ``HOURLY_XLA_PATH``, as for every state: the real
  build passes it as ``--local_xla_path`` / ``--override_repository=xla=...``).
* An XLA culprit (of either pairing, or of the descent above) that moves LLVM's pin
  (``third_party/llvm/workspace.bzl``) or Triton's: the states are that repository's first-parent
  commits between the two pins in ``--llvm-repo`` / ``--triton-repo``, built with JAX and XLA held
  at the culprit; the build gets the dependency's checkout as ``HOURLY_LLVM_PATH`` /
  ``HOURLY_TRITON_PATH`` (the real build: ``--override_repository=llvm-raw=$HOURLY_LLVM_PATH``) and
  the held XLA tree as ``HOURLY_XLA_PATH``.

Each level is a :class:`~hourly.bisect.search.Bisector` over :class:`~hourly.bisect.pairing.ListedStates`:
its verdicts, measurements and answer are stored like any bisection's, and a second run reads them.
The answer of the top level gains ``chain`` (one link per level), ``chain_text`` and ``descent``
(the answers of the levels below); a level that cannot go on says why in ``descent_stopped``.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace

from hourly.adapters.gitrepo import COMMIT_URLS, GitRepo
from hourly.adapters.store import Store
from hourly.analysis.bisection import State
from hourly.analysis.pins import chain_text
from hourly.answers import Answer, Commit
from hourly.bisect.events import BisectHandler
from hourly.bisect.pairing import ListedStates
from hourly.bisect.records import BisectRequest, Window
from hourly.bisect.search import Bisector
from hourly.errors import UserError
from hourly.execute.executors import Executor
from hourly.measure.build import DESCENT_VAR, Workspace
from hourly.measure.pins import PinReader, behind_pins, dep_range
from hourly.measure.settings import Settings, keyed
from hourly.model import Mode, Pair

#: the dependencies an XLA commit pins, and the setting that names each one's checkout
XLA_DEPS = (("llvm", "llvm_repo", "--llvm-repo"), ("triton", "triton_repo", "--triton-repo"))
#: how deep a chain goes (JAX → XLA → LLVM or Triton)
MAX_LEVELS = 3


def descend(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler, executor: Executor | None,
            answers: list[Answer]) -> list[Answer]:
    """Every answer whose culprit moves a pin, bisected on inside the dependency (in place); a
    time-paired answer's states that failed to build while older than their pin say so."""
    for a in answers:
        if a.culprit and not a.error:
            _descend_one(s, store, req, handler, executor, a)
        if (a.pairing or "time") == "time" and not a.error:
            _behind_pin_failures(s, store, a)
    return answers


def _behind_pin_failures(s: Settings, store: Store, a: Answer) -> None:
    """The probes skipped for a failed build whose XLA commit is older than their JAX commit's pin:
    ``build_failed_behind_pin`` (xla, jax, pin) and the reason, as the scan's table says it."""
    failed = [p for p in a.probes if p.verdict == "skip"
              and (rec := store.build(p.xla, p.jax)) is not None and rec.status == "failed"]
    if not failed or s.only:
        return
    xla, jax = GitRepo(s.xla_repo, "xla"), GitRepo(s.jax_repo, "jax")
    found = behind_pins([p.pair for p in failed], xla, jax)["behind_pin"]
    if found:
        a.build_failed_behind_pin = [{"xla": k.split(":")[0], "jax": k.split(":")[1], "pin": v}
                                     for k, v in found.items()]
        a.behind_pin_reason = (f"{len(found)} untestable state{'s' if len(found) != 1 else ''} combine a JAX commit "
                               "with an XLA commit older than its pin: JAX may need an XLA feature it does not "
                               "have yet (--pairing pin builds each JAX commit with its pin)")


def _link(c: Commit, bumps: str | None = None) -> dict:
    return {"repo": c.repo, "sha": c.sha, "subject": c.subject, "link": c.link, "bumps": bumps}


def _descend_one(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler, executor: Executor | None,
                 top: Answer) -> None:
    assert top.culprit is not None  # descend() passes answers that name one
    chain = [_link(top.culprit)]
    levels: list[Answer] = []
    a = top
    held_xla: str | None = None  # the XLA commit held while LLVM or Triton moves
    for _ in range(MAX_LEVELS - 1):
        c = a.culprit
        lg, fb = a.last_good, a.first_bad
        assert c is not None and lg is not None and fb is not None  # a level that named its culprit
        if c.repo == "jax" and a.pairing == "pin" and lg.xla != fb.xla:
            dep, old, new = "xla", lg.xla, fb.xla
            chain[-1]["bumps"] = "xla"
            xla = GitRepo(s.xla_repo, "xla")
            sub = _bisect_inside(s, store, req, handler, executor, a, "xla", xla, old, new, fb.jax, None)
        elif c.repo == "xla":
            found = _xla_bump(s, c.sha, lg.xla)
            if found is None:
                break
            dep, setting, flag, old, new = found
            chain[-1]["bumps"] = dep
            if not getattr(s, setting):
                top.descent_stopped = (f"xla {c.sha[:12]} moves {dep.upper()}'s pin {old[:12]} → {new[:12]}: "
                                       f"pass {flag} with a {dep} checkout to bisect inside it")
                break
            held_xla = c.sha
            dep_repo = GitRepo(getattr(s, setting), dep)
            sub = _bisect_inside(s, store, req, handler, executor, a, dep, dep_repo, old, new, fb.jax, held_xla)
        else:
            break
        if isinstance(sub, str):
            top.descent_stopped = sub
            break
        levels.append(sub)
        if not sub.culprit:
            why = "a candidate not confirmed on re-measurement" if sub.candidate else sub.reason
            top.descent_stopped = f"inside the {dep.upper()} pin bump {old[:12]} → {new[:12]}: no single commit ({why})"
            break
        chain.append(_link(sub.culprit))
        a = sub
        if dep != "xla":  # LLVM and Triton pin nothing hourly follows
            break
    if len(chain) > 1 or top.descent_stopped:
        top.chain = chain
        top.chain_text = chain_text(chain)
        top.descent = levels


def _xla_bump(s: Settings, x: str, before: str) -> tuple[str, str, str, str, str] | None:
    """The first dependency whose pin the XLA step ``before`` → ``x`` moves: (dep, setting, flag, old, new)."""
    xla = GitRepo(s.xla_repo, "xla")
    for dep, setting, flag in XLA_DEPS:
        moved = PinReader(xla, dep).moves(before, x)
        if moved:
            return dep, setting, flag, moved[0].rev, moved[1].rev
    return None


def _bisect_inside(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler, executor: Executor | None,
                   a: Answer, dep: str, repo: GitRepo, old: str, new: str, jax: str, held_xla: str | None) -> Answer | str:
    """One level: the dependency's commits ``old`` → ``new`` (first parent), everything else held.
    Returns its answer, or the line saying why it could not be bisected."""
    owner_repo = GitRepo(s.jax_repo, "jax") if dep == "xla" else GitRepo(s.xla_repo, "xla")
    assert a.last_good is not None and a.first_bad is not None and a.culprit is not None
    owners = (a.last_good.jax, a.first_bad.jax) if dep == "xla" else (a.last_good.xla, a.first_bad.xla)
    reader = PinReader(owner_repo, dep, repo)
    try:
        old_full, new_full = (reader.pin(o).rev for o in owners)
    except UserError as e:
        return e.one_line()
    walk = [(old_full, repo.commits([old_full])[old_full].committer_time)] + dep_range(repo, old_full, new_full)
    if len(walk) < 2 or walk[-1][0] != new_full:
        return (f"{dep} {new[:12]} is not on the first-parent history after {old[:12]} in {repo.path}: "
                f"bisect it by hand there (git bisect start {new[:12]} {old[:12]})")
    times: list[int] = []
    for _, t in walk:  # strictly increasing: the window's times select states
        times.append(max(t, times[-1] + 1) if times else t)
    states = [State(t, Pair(sha, jax)) for (sha, _), t in zip(walk, times, strict=True)]
    sub_s = s if dep == "xla" else _held_settings(s, dep, repo, held_xla)
    mode = Mode(a.mode)
    w = Window(times[0], times[-1], "descent", f"inside the {dep.upper()} pin bump of {a.culprit.repo} "
               f"{a.culprit.sha[:12]}", kind=a.kind or "regression")
    with ExitStack() as stack:
        if held_xla is not None:  # XLA's tree stays at the culprit while the dependency moves
            xla = GitRepo(s.xla_repo, "xla")
            stack.enter_context(Workspace([xla], force=s.force))
            xla.checkout(held_xla)
        with Bisector(sub_s, store, mode, replace(req, good=None, bad=None), handler, executor,
                      pairing=ListedStates(states, dep, walk)) as b:
            got = b.bisect(w)
    sub = got[0]
    if sub.error:
        return f"inside the {dep.upper()} pin bump {old[:12]} → {new[:12]}: {sub.error}"
    if dep != "xla":  # the pair's "xla" side named the dependency's commit
        if sub.culprit:
            sub.culprit = replace(sub.culprit, repo=dep, link=COMMIT_URLS[dep].format(sha=sub.culprit.sha))
        if sub.candidate:
            sub.candidate = replace(sub.candidate, repo=dep, link=COMMIT_URLS[dep].format(sha=sub.candidate.sha))
    sub.descent_of = {"dep": dep, "old_pin": old_full, "new_pin": new_full, "held_jax": jax, "held_xla": held_xla}
    return sub


def _held_settings(s: Settings, dep: str, repo: GitRepo, held_xla: str | None) -> Settings:
    """The settings of a level below XLA: the pairs' "xla" side is ``dep``'s checkout, XLA's tree is
    held at the culprit (its path and commit in the build's environment, which keys the builds)."""
    xla_path = str(GitRepo(s.xla_repo, "xla").path)
    env = list(s.env) + [f"{DESCENT_VAR}={dep}", f"HOURLY_HELD_XLA_DIR={xla_path}",
                         f"HOURLY_HELD_XLA_SHA={held_xla}"]
    picks = [p for p in s.cherry_pick if p.startswith("jax@")]  # an XLA cherry-pick has no tree to go on here
    return keyed(replace(s, xla_repo=str(repo.path), xla_ref=None, env=env, cherry_pick=picks))
