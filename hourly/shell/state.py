"""Which (xla, jax) state ``hourly shell STATE`` names.

- a time as the scan takes it (``"Aug 24 2023 13:00"``, ``2023-08-24T13:00Z``): the pair that stood
  then on the walked refs (first-parent), as the scan would build it;
- ``xla@A,jax@B``: exactly that pair; ``xla@A`` (or ``jax@B``) alone: the state once that commit
  landed (the other repository at its commit of that time), as ``--good``/``--bad`` read it;
- ``good`` / ``bad`` (``good:N`` / ``bad:N``): the last good / first bad state of the N-th stored
  bisection answer (1 the first; default: the last one); with no bisection stored, the two sides
  of the N-th window of the stored scan (the scan's points around its step or crash window);
- ``probe``: the probe a manual bisection waits at (or waited at when it was stopped);
  ``probe:N``: the N-th probe of the last stored bisection (``hourly bisect --json`` lists them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hourly.adapters.store import Store
from hourly.analysis.timeline import Resolver
from hourly.bisect.search import Bisector
from hourly.bisect.windows import default_mode, parse_end, windows_from_store
from hourly.errors import UserError
from hourly.measure.settings import Settings
from hourly.model import Pair

_PAIR = re.compile(r"^\s*xla@(?P<xla>[0-9a-fA-F]{4,40})\s*,\s*jax@(?P<jax>[0-9a-fA-F]{4,40})\s*$")
_NAMED = re.compile(r"^(?P<name>good|bad|probe)(?::(?P<n>-?\d+))?$")


#: every way to name a state, for a refusal
STATE_FORMS = ('a time ("Aug 24 2023 13:00"), xla@<sha>,jax@<sha>, xla@<sha>, jax@<sha>, good, bad, good:N, bad:N, '
               "probe or probe:N")


@dataclass
class Resolved:
    pair: Pair
    said: str  # the state as the person named it, and what it resolved to ("good of bisection 2 ...")


def resolve(text: str, b: Bisector, store: Store | None, s: Settings) -> Resolved:
    """The state ``text`` names (see the module's text); ``b`` gives the repositories and walks."""
    m = _NAMED.match(text.strip().lower())
    if m:
        if store is None:
            raise UserError(f"{text}: no results store to read it from",
                            "pass --workdir with the workdir of the scan or bisection")
        n = int(m["n"]) if m["n"] else None
        return _probe(store, n, text) if m["name"] == "probe" else _side(store, s, b, m["name"], n, text)
    p = _PAIR.match(text)
    if p:
        pair = Pair(b.repos["xla"].resolve_sha(p["xla"]) if "xla" in b.repos else p["xla"],
                    b.repos["jax"].resolve_sha(p["jax"]))
        return Resolved(pair, f"{text} (exactly that pair)")
    if "@" not in text and not any(c.isdigit() for c in text):  # no time, no commit: not "cannot parse time 'nosuch'"
        raise UserError(f"{text!r} names no state",
                        f"name one as {STATE_FORMS}")
    t = parse_end(text, s.tz, b.repos, b.walks, b.refs)
    return Resolved(at(b, t), f"{text} (the state that stood then on the walked refs)")


def at(b: Bisector, t: int) -> Pair:
    """The pair that stood at ``t`` on the bisector's walks."""
    got = {name: Resolver(b.walks[name]).at(t) for name in ("xla", "jax")}
    missing = [n for n, sha in got.items() if not sha]
    if missing:
        raise UserError(f"no {missing[0]} commit stood at that time on its ref (the history starts later)",
                        "pass a later time, or xla@<sha>,jax@<sha>")
    return Pair(str(got["xla"]), str(got["jax"]))


def _pick(items: list, n: int | None, what: str, text: str) -> tuple[Any, int]:
    if not items:
        raise UserError(f"{text}: the store holds no {what}", "run `hourly bisect` (or `hourly scan`) first")
    i = len(items) if n is None else n
    if not 1 <= i <= len(items):
        raise UserError(f"{text}: the store holds {len(items)} {what}{'s' if len(items) != 1 else ''}",
                        f"pass a number from 1 to {len(items)}")
    return items[i - 1], i


def _side(store: Store, s: Settings, b: Bisector, side: str, n: int | None, text: str) -> Resolved:
    from hourly.scan.identity import answers_by_build  # the investigation's build: another build's answer is not its
    answers = [a for a in answers_by_build(store, s).current if a.last_good and a.first_bad]
    if answers:
        a, i = _pick(answers, n, "bisection answer", text)
        st = a.last_good if side == "good" else a.first_bad
        assert st is not None
        w = a.window
        return Resolved(st, f"{text}: the {'last good' if side == 'good' else 'first bad'} "
                     f"state of bisection answer {i} ({w.good_time} .. {w.bad_time})")
    windows = windows_from_store(store, s, default_mode(store, s))
    w, i = _pick(windows, n, "window to bisect", text)
    t = w.good_time if side == "good" else w.bad_time
    return Resolved(at(b, t), f"{text}: the {side} side of the stored scan's window {i} ({w.note or w.origin})")


def _probe(store: Store, n: int | None, text: str) -> Resolved:
    if n is None:
        w = store.waiting()
        if not w:
            raise UserError(f"{text}: no manual bisection waits at a probe in {store.workdir}",
                            "pass probe:N for the N-th probe of the last bisection")
        return Resolved(Pair(w["xla"], w["jax"]), f"{text}: the probe a manual bisection waits at")
    bid = store.last_bisection()
    if bid is None:
        raise UserError(f"{text}: the store holds no bisection", "run `hourly bisect` first")
    rows = [r for r in store.probes(bid) if r["role"] == "probe"]
    r, i = _pick(rows, n, "probe", text)
    return Resolved(Pair(r["xla"], r["jax"]), f"{text}: probe {i} of the last bisection ({r['verdict']})")
