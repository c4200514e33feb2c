"""What investigation a workdir holds, and which key its measurements were made under.

A workdir holds one investigation: one pair of repositories (xla and jax, by the commits its scan
resolved, so the same history at another path is the same investigation) over one window of time.
A scan may rerun it or extend its window (a later ``--to``, an earlier ``--from``, windows that
meet); a scan of other repositories, or of a window that does not meet the stored one, would mix
the two investigations' points in one table and is refused (:func:`check_scan`). ``bisect`` and
``profile`` refuse other repositories too (:func:`check_store`).

The key of the measurements (``Settings.bench_key``: the benchmark and the build) is recorded by
the scan with what it was made of. Commands that build against a stored scan (bisect, profile)
must measure under the scan's key; when theirs differs (another build command or environment,
another Python, or a store an older hourly wrote) they say what differs instead of reading the
scan's rows as theirs or finding no scan at all (:func:`check_store`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.store import Store
from hourly.answers import Answer, build_difference
from hourly.errors import UserError
from hourly.measure.settings import (
    KEY_VERSION,
    MEASURE_KEY,
    Settings,
    configured_identity,
    key_identity,
    keyed,
    measure_key,
    with_key,
)
from hourly.model import Status
from hourly.text.plurals import plural
from hourly.text.timeparse import parse_step, window

#: the store's settings rows this module writes
INVESTIGATION = "investigation"
LEVEL = "hourly"  # hourly.scan.table.LEVEL (not imported: table pulls in detection)
#: The origin of the scan's own measurements; bisect, confirmation and profile add rows of their
#: own origin and never change what the scan's table shows (hourly.scan.table reads it from here).
SCAN_ORIGIN = "scan"

NEW_WORKDIR = "pass a new --workdir for this investigation, or the settings of the one stored there"


def record(store: Store, s: Settings, t0: float, t1: float) -> None:
    """Note the scan's key (with what made it) and its window, widened by what was stored before."""
    old = store.load_settings(INVESTIGATION) or {}
    if old.get("window"):
        t0, t1 = min(t0, old["window"][0]), max(t1, old["window"][1])
    store.save_settings(INVESTIGATION, {"window": [t0, t1], "xla_repo": s.xla_repo, "jax_repo": s.jax_repo,
                                        "only": s.only})
    public = key_identity(s, public=True)
    store.save_settings(MEASURE_KEY, {"version": KEY_VERSION, "key": s.bench_key(), "configured": _plain(configured_identity(s)),
                                      "identity": public})
    store.note_measure_key(s.bench_key(), _plain(public))


def note_key(store: Store, s: Settings) -> None:
    """Note what the key a command measures under is made of (``hourly bisect``: its answers are
    labelled with their build once another build is the current one)."""
    store.note_measure_key(s.bench_key(), _plain(key_identity(s, public=True)))


def answer_key(store: Store, s: Settings) -> str | None:
    """The measurement key whose bisection answers speak for the workdir's investigation: the one
    the stored scan measured under (its table is what show and report print), else, in a workdir
    of ``hourly bisect --good --bad`` alone, the newest bisection's. Answers under another key
    were measured with another build or benchmark: never this investigation's answer."""
    if store.points(LEVEL) and s.bench_cmd:
        try:
            return keyed(s, store).bench_key()  # settings read from the store carry the scan's key
        except UserError:  # a build that cannot be described now (the check of a command that builds says why)
            pass
    return store.newest_bisection_key()


@dataclass(frozen=True)
class BuildAnswers:
    """The store's finished bisections split by the build they were measured under: ``current``,
    under ``key`` (:func:`answer_key`: the build the workdir's investigation speaks for), and
    ``others``, each with the measurement key it was measured under — another build or benchmark,
    never this investigation's answer (the report lists them apart, labelled; explain, profile and
    shell leave them out and say so)."""

    key: str | None
    current: list[Answer]
    others: list[tuple[str, Answer]]

    def left_out(self, store: Store, what: str = "bisection answer") -> str | None:
        """One line naming the answers of another build that were left out and what their build
        was (None: none was)."""
        if not self.others:
            return None
        idents = store.measure_keys()
        current = idents.get(self.key) if self.key else None
        labels = sorted({build_difference(idents.get(k), current, k) for k, _ in self.others})
        windows = ", ".join(f"{a.window.good_time} .. {a.window.bad_time}" for _, a in self.others)
        return (f"left out {plural(len(self.others), what)} measured under another build or benchmark "
                f"({'; '.join(labels)}): {windows} (`hourly report` lists {'it' if len(self.others) == 1 else 'them'} "
                "apart; `hourly bisect` again measures under this one)")


def other_scans(store: Store, key: str | None) -> dict[str, int]:
    """{measurement key: states its scan measured} of every key but ``key`` that a scan measured under
    in this workdir (another benchmark or build), in the order first measured."""
    return {k: n for k, n in store.measured_keys(SCAN_ORIGIN).items() if k != key}


def other_measurements(store: Store, s: Settings, key: str | None, now: str | None = None) -> str | None:
    """One line naming the scans' measurements the workdir holds under other keys than ``key`` (another
    benchmark, or the same one built another way: :func:`~hourly.answers.build_difference` against
    ``s``), and how to see them; None when it holds none. A workdir scanned with one benchmark and then
    another holds two hunts, of which ``show`` and ``report`` read the newest scan's alone (a
    bisection's answers under another build are said apart: :meth:`BuildAnswers.left_out`). ``now``:
    the command that measures under ``key`` (``this scan``)."""
    others = other_scans(store, key)
    if not others:
        return None
    idents = store.measure_keys()
    current = idents.get(key) if key and key in idents else _plain(key_identity(s, public=True)) if s.bench_cmd else None
    said = "; ".join(f"{build_difference(idents.get(k), current, k)} ({plural(n, 'state')})" for k, n in others.items())
    return (f"note: workdir {store.workdir} also holds measurements under another benchmark or build: {said}. "
            + (f"{now[0].upper()}{now[1:]} measures under its own key, apart from them; " if now else "")
            + f"`hourly show` and `hourly report` read the newest scan's alone: to see "
            f"{'that one' if len(others) == 1 else 'one of those'} again, run its `hourly scan` command again in this "
            "workdir (its stored measurements are reused, nothing is measured again), or give each benchmark a "
            "--workdir of its own")


def answers_by_build(store: Store, s: Settings, key: str | None = None) -> BuildAnswers:
    """The store's finished answers split by build (:class:`BuildAnswers`): those under ``key``
    (default: :func:`answer_key`) and the others, oldest first."""
    key = key if key is not None else answer_key(store, s)
    current: list[Answer] = []
    others: list[tuple[str, Answer]] = []
    for k, stored in store.bisection_answers():
        a = Answer.from_json(stored)
        if key is None or k == key:
            current.append(a)
        else:
            others.append((k, a))
    return BuildAnswers(key, current, others)


def _plain(value: Any) -> Any:
    """As JSON gives it back (tuples are lists)."""
    return json.loads(json.dumps(value))


# -- the checks ---------------------------------------------------------------------------------

def _stored_window(store: Store) -> tuple[float, float] | None:
    inv = store.load_settings(INVESTIGATION)
    if inv and inv.get("window"):
        return inv["window"][0], inv["window"][1]
    stored = store.load_settings("scan") or {}
    if stored.get("from_") and stored.get("to"):
        try:
            a, b = window(stored["from_"], stored["to"], stored.get("tz") or "UTC")
        except UserError:
            return None
        return a.timestamp(), b.timestamp()
    return None


def _hunted(only: str | None) -> tuple[str, ...]:
    return ("jax",) if only == "jax" else ("xla", "jax")  # --only jax: xla is the installed jaxlib's


def _repo_problem(store: Store, s: Settings, repos: dict[str, GitRepo | None]) -> str | None:
    """Why the stored scan's repositories are not ``repos``, or None when they are the same."""
    stored = store.load_settings("scan")
    if not stored:
        return None
    points = store.points(LEVEL)
    names = [n for n in _hunted(s.only) if n in _hunted(stored.get("only")) and repos.get(n) is not None]
    for name in names:
        repo = repos[name]
        assert repo is not None
        before = stored.get(f"{name}_repo")
        shas = []
        if points:
            col = 1 if name == "xla" else 2
            shas = list(dict.fromkeys([points[0][col], points[-1][col]]))
        if shas:
            missing = [sha for sha in shas if not _has(repo, sha)]
            if missing:
                return (f"it holds a scan of another {name} repository ({before}: its commit {missing[0][:12]}"
                        f" is not in {repo.path})")
        elif before and str(before) != str(repo.path):
            return f"it holds a scan of another {name} repository ({before}, not {repo.path})"
    return None


def _has(repo: GitRepo, sha: str) -> bool:
    try:
        repo.git("cat-file", "-e", f"{sha}^{{commit}}")
        return True
    except Exception:  # noqa: BLE001 — a missing object is git's error exit
        return False


def check_scan(store: Store, s: Settings, repos: dict[str, GitRepo | None]) -> None:
    """Refuse a scan into a workdir that holds another investigation (other repositories, or a
    window that does not meet the stored one); a rerun or a widened window passes."""
    why = _repo_problem(store, s, repos)
    if why is None:
        have = _stored_window(store)
        if have is not None:
            a, b = window(s.from_, s.to, s.tz)  # type: ignore[arg-type]  # check() made sure of both
            step = parse_step(s.step).total_seconds()
            t0, t1 = a.timestamp(), b.timestamp()
            if t0 > have[1] + step or t1 < have[0] - step:
                why = f"it holds the scan of {_when(have[0])} .. {_when(have[1])}, which this window does not meet"
    if why:
        raise UserError(f"workdir {store.workdir} holds another investigation: {why}", NEW_WORKDIR)


def check_store(store: Store, s: Settings, uses_scan: bool) -> Settings:
    """For bisect and profile (commands that build against a store): the store's repositories must
    be these; and when the command reads the stored scan (``uses_scan``: no --good/--bad), or ``s``
    carries the scan's key, the key it builds under must be the scan's. Returns ``s`` keyed with
    the key it builds under (computed now: a command that builds measures under its own key)."""
    if store.load_settings("scan") is None:
        return with_key(s, measure_key(s))
    from hourly.measure.measurer import open_repos
    xla, jax = open_repos(s)
    why = _repo_problem(store, s, {"xla": xla, "jax": jax})
    if why:
        raise UserError(f"workdir {store.workdir} holds another investigation: {why}", NEW_WORKDIR)
    if uses_scan:
        check_metric_recorded(store, s)
    fresh = measure_key(s)
    rec = store.load_settings(MEASURE_KEY)
    scan_key = rec["key"] if rec else s.legacy_bench_key()
    carried = s.key == scan_key and s.key_for == s.key_basis()  # stored_settings gave it the scan's key
    if fresh == scan_key or (not uses_scan and not carried):
        return with_key(s, fresh)
    if rec is None:
        what = "an older hourly, which did not key measurements by the build"
    else:
        what = "another " + (_differs(rec.get("identity") or {}, key_identity(s, public=True)) or "build")
    raise UserError(f"the scan in {store.workdir} measured under {what}: its measurements are not"
                    " this build's",
                    "run `hourly scan` again with these settings (the same workdir: the old rows stay under"
                    " their key), or give this command the scan's settings and environment")


def check_metric_recorded(store: Store, s: Settings) -> None:
    """The named metric followed (--metric) must be one the stored scan recorded: a name it never
    recorded is said with the names it did (verbatim), never taken for another benchmark (its key
    differs) nor answered "nothing to bisect" (no window of a metric never measured)."""
    if not s.metric or s.mode == "exit":
        return
    rec = store.load_settings(MEASURE_KEY)
    if rec is None or not store.all_latest(rec["key"]):
        return  # an older hourly's store, or a scan that measured nothing: said by the command
    names = store.metric_names(rec["key"])
    if s.metric in names:
        _require_measured(store, rec["key"], s.metric, names)
        return
    named = "metrics" in ((rec.get("configured") or {}).get("bench") or {})  # a scan of named metrics
    if named and not names:
        return  # no run printed a name (every one crashed, say): its crash windows are bisected all the same
    scan = store.load_settings("scan") or {}
    if names:
        raise UserError(f"no metric named `{s.metric}` was recorded in {store.workdir}: its scan recorded "
                        + ", ".join(f"`{n}`" for n in names), "pass --metric with one of those names")
    regex = scan.get("metric_regex")
    read = f"with --metric-regex `{regex}`" if regex else "with its regex"
    raise UserError(f"no metric named `{s.metric}` was recorded in {store.workdir}: its scan read one unnamed"
                    f" metric {read}, and no named ones",
                    "leave out --metric to follow that metric; to follow named metrics, scan again with"
                    " --metrics all and a benchmark that prints `METRIC name: value` lines")


def _require_measured(store: Store, key: str, metric: str, names: list[str]) -> None:
    """A named metric every state recorded without a value (``UNAVAILABLE peak_memory_bytes``: no
    device memory on the CPU) is not measured: said with why and the names that were, never
    answered "nothing to bisect"."""
    rows = [m for m in store.all_latest(key, metric=metric).values() if m.metric == metric]
    if not rows or any(m.status == Status.OK.value for m in rows):
        return
    measured = [n for n in names if n != metric
                and any(m.status == Status.OK.value and m.metric == n for m in store.all_latest(key, metric=n).values())]
    why = next((m.detail for m in rows if m.detail), rows[0].status)
    raise UserError(f"`{metric}` was not measured in {store.workdir}: no state of its scan has a value of it ({why})",
                    "pass --metric with one it measured: " + ", ".join(f"`{n}`" for n in measured) if measured else
                    "make the benchmark print it (that reason says why it did not), and scan again")


def _differs(old: dict, new: dict) -> str | None:
    """What differs between two key identities, in words."""
    ob, nb = old.get("build") or {}, new.get("build") or {}
    parts = []
    if _plain(old.get("bench")) != _plain(new.get("bench")):
        parts.append("benchmark")
    if ob.get("cmd") != nb.get("cmd") or ob.get("jax_package") != nb.get("jax_package"):
        parts.append("build command")
    oe, ne = dict(map(tuple, ob.get("env") or [])), dict(map(tuple, nb.get("env") or []))
    names = sorted(k for k in set(oe) | set(ne) if oe.get(k) != ne.get(k))
    if names:
        parts.append("build environment (" + ", ".join(names[:4]) + (" …" if len(names) > 4 else "") + ")")
    if ob.get("python_abi") != nb.get("python_abi"):
        parts.append(f"Python ABI ({ob.get('python_abi')} → {nb.get('python_abi')})")
    if ob.get("cherry_pick") != nb.get("cherry_pick"):
        parts.append("cherry-picks")
    op, np_ = ob.get("pinned") or {}, nb.get("pinned") or {}
    moved = sorted(k for k in set(op) | set(np_) if _plain(op.get(k)) != _plain(np_.get(k)))
    if moved:  # --only jax: the kept jaxlib, libtpu, plugins ([version, location] each)
        said = sorted((_moved(k, op.get(k), np_.get(k)) for k in moved), key=lambda s: " at " in s)
        parts.append("installed " + ", ".join(said[:4]) + (" …" if len(said) > 4 else ""))
    return ", ".join(parts) or None


def _moved(name: str, old: Any, new: Any) -> str:
    """A kept package that differs, in words: its versions, else its folders."""
    def parts(entry: Any) -> tuple[str, str]:
        if isinstance(entry, (list, tuple)) and len(entry) == 2:
            return str(entry[0]), str(entry[1])
        return ("none", "") if not entry else (str(entry), "")
    (v0, at0), (v1, at1) = parts(old), parts(new)
    return f"{name} {v0} → {v1}" if v0 != v1 else f"{name} at {at0} → {at1}"


def _when(ts: float) -> str:
    from datetime import datetime, timezone
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
