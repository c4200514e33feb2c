"""The records of ``hourly watch`` (hourly/watch/): a build it found, the check of a step it
suspected, an alert it raised and what that alert's hunt said — each written to JSON in one place (``to_json``: what the store keeps and
``--json`` prints) and read back with ``from_json``.

Rows stored by an older hourly lack some keys: they read back with their defaults. A hunt's
outcome is kept with the keys it was written with, in their order, so that what a store holds is
printed as it was written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

Json = dict[str, Any]


def _decoded(value: Any) -> Any:
    """A JSON column's value: decoded when it is text (a row of the store; empty: None), else as given."""
    if isinstance(value, (str, bytes)):
        return json.loads(value) if value else None
    return value


@dataclass(frozen=True)
class Build:
    """One build a watch found: ``build`` its id (a date, a version, a commit pair's label), its
    ``status`` (``pending``: not measured yet; ``missing``: found without an image or wheels), what
    it is (``ident``: the image and digest, the wheel versions, the commits) and, once judged, each
    metric's ``decision`` (None: not judged yet)."""

    build: str
    time: str | None = None
    status: str = "pending"
    detail: str | None = None
    ident: dict[str, Any] = field(default_factory=dict)
    decision: dict[str, dict[str, Any]] | None = None
    seq: int = 0  # the order of arrival in its watch
    watch: str = ""

    def to_json(self) -> Json:
        """The build as ``hourly watch --json`` prints it (without its values)."""
        return {"build": self.build, "time": self.time, "status": self.status, "detail": self.detail,
                "ident": self.ident, "decision": self.decision}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Build":
        """A build from its JSON or from a row of ``watch_builds`` (``ident`` and ``decision`` as
        stored text, decoded here)."""
        decision = d.get("decision")
        return cls(d["build"], d.get("time"), d.get("status") or "pending", d.get("detail"),
                   _decoded(d.get("ident")) or {}, _decoded(decision) if decision else None,
                   int(d.get("seq") or 0), d.get("watch") or "")


@dataclass(frozen=True)
class Check:
    """The check of a step of ``metric`` suspected on ``arrived``'s arrival between the builds
    ``before`` and ``after``: the ``suspect``'s evidence, the ``verdict`` of measuring both builds
    again (``pending``, ``confirmed``, ``rejected``, ``undecided``) and its numbers (``result``:
    None while pending)."""

    id: int
    metric: str
    arrived: str
    before: str
    after: str
    verdict: str = "pending"
    suspect: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    watch: str = ""

    def to_json(self) -> Json:
        """The check as ``hourly watch --json`` prints it."""
        return {"id": self.id, "metric": self.metric, "arrived": self.arrived, "before": self.before,
                "after": self.after, "verdict": self.verdict, "suspect": self.suspect, "result": self.result}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Check":
        """A check from its JSON or from a row of ``watch_checks`` (``suspect`` and ``result`` as
        stored text, decoded here)."""
        return cls(int(d["id"]), d["metric"], d["arrived"], d["before"], d["after"], d.get("verdict") or "pending",
                   _decoded(d.get("suspect")) or {}, _decoded(d.get("result")) if d.get("result") else None,
                   d.get("watch") or "")


#: every key a hunt's outcome may hold, in the order a new one is written
HUNT_KEYS = ("command", "status", "culprit", "job", "job_name", "state", "exit_code", "more", "reason", "candidate",
             "range", "environment", "log", "report", "kind", "workdir", "tries")


@dataclass(frozen=True)
class HuntOutcome:
    """What an alert's hunt says now. ``status``: ``culprit`` (a commit named: ``culprit``, the
    others in ``more``), ``unsure`` (ended without one: ``reason``, a ``candidate`` it could not
    confirm, the ``range`` of commits, the containers' ``environment``), ``failed`` (no answer:
    ``reason``, ``tries``), ``submitted``/``running`` (a Slurm ``job``), ``off`` (--no-hunt),
    ``not started`` or ``not hunted`` (``reason``). ``command``: the hunt's command as shown
    (secrets as ``--env NAME``); ``workdir``, ``log``, ``report``: where its files are."""

    status: str
    command: list[str] | None = None
    culprit: dict[str, Any] | None = None
    job: str | None = None
    job_name: str | None = None
    state: str | None = None
    exit_code: int | None = None
    more: list[dict[str, Any]] | None = None
    reason: str | None = None
    candidate: dict[str, Any] | None = None
    range: list[str] | None = None
    environment: list[dict[str, Any]] | None = None
    log: str | None = None
    report: str | None = None
    kind: str | None = None
    workdir: str | None = None
    tries: int | None = None
    #: the keys it holds, in their order (a key held with the value None is written as null)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> Json:
        keys = self.keys or tuple(k for k in HUNT_KEYS if getattr(self, k) is not None)
        return {k: getattr(self, k) for k in keys}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "HuntOutcome":
        known = [k for k in d if k in HUNT_KEYS]
        given = {k: d[k] for k in known}
        given["status"] = str(d.get("status") or "")
        return cls(**given, keys=tuple(known if "status" in known else ["status", *known]))

    def updated(self, **changes: Any) -> "HuntOutcome":
        """This outcome with ``changes``, a key not held before added after the others."""
        return HuntOutcome.from_json({**self.to_json(), **changes})

    @property
    def answered(self) -> bool:
        """Whether the hunt answered: a culprit named, or ended unsure."""
        return self.status in ("culprit", "unsure")


@dataclass(frozen=True)
class Alert:
    """A confirmed step (or steps, ``checks``) on ``arrived``'s arrival over the window ``before``
    .. ``after``, with its hunt, its recovery (a later confirmed step back to the level before:
    ``metric``, ``build``, ``level``, ``relative_to_before``) and the ``events`` not delivered yet."""

    id: int
    arrived: str
    before: str
    after: str
    checks: list[int] = field(default_factory=list)
    hunt: HuntOutcome | None = None
    recovery: dict[str, Any] | None = None
    events: list[str] = field(default_factory=list)
    watch: str = ""

    def to_json(self) -> Json:
        """The alert as the store keeps it (its JSON columns)."""
        return {"id": self.id, "watch": self.watch, "arrived": self.arrived, "before": self.before,
                "after": self.after, "checks": self.checks, "hunt": self.hunt.to_json() if self.hunt else None,
                "recovery": self.recovery, "events": self.events}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Alert":
        """An alert from its JSON or from a row of ``watch_alerts`` (the JSON columns as stored
        text, decoded here; an empty column: no hunt, no recovery, no checks, no events)."""
        hunt = _decoded(d.get("hunt")) if d.get("hunt") else None
        return cls(int(d["id"]), d["arrived"], d["before"], d["after"], list(_decoded(d.get("checks")) or []),
                   HuntOutcome.from_json(hunt) if hunt else None,
                   _decoded(d.get("recovery")) if d.get("recovery") else None,
                   list(_decoded(d.get("events")) or []), d.get("watch") or "")
