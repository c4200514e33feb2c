"""The typed records of ``hourly watch`` (hourly/watch_records.py) over a real SQLite store: rows an
older hourly wrote (builds, checks, alerts and their hunts) read into them, and what is stored is written back as it was."""

from __future__ import annotations

import json

from hourly.adapters.store import Store
from hourly.watch_records import Alert, Build, Check, HuntOutcome

CULPRIT = {"repo": "xla", "sha": "c" * 40, "subject": "s", "author": "a", "committer_time": "t",
           "link": "https://github.com/openxla/xla/commit/" + "c" * 40}
#: hunts as earlier versions wrote them, each with the keys of its own path in that path's order
#: (a Slurm job's answer read by a later run: ``job`` after ``log``; not started: ``command`` last)
OLD_HUNTS = [
    {"command": ["hourly", "bisect"], "status": "culprit", "culprit": CULPRIT, "exit_code": 0, "more": [],
     "log": "/w/hunts/alert-1/hunt.log", "job": "12", "report": None, "kind": "bisect",
     "workdir": "/w/hunts/alert-1", "tries": 0},
    {"status": "not started", "reason": "pass --hunt-image", "command": None},
    {"command": ["hourly", "hunt"], "status": "submitted", "job": "7", "job_name": "hourly-watch-ab",
     "kind": "hunt", "workdir": "/w/hunts/alert-3", "tries": 0},
    {"status": "failed", "reason": "boom"},  # older still: no tries, no log
]


def _old_rows(store: Store) -> None:
    with store.transaction() as c:
        c.execute("INSERT INTO watch_builds (watch, build, seq, time, ident, status, detail, decision, created,"
                  " updated) VALUES ('w', '2023-08-24', 1, '2023-08-24', '{\"image\": \"i\", \"digest\": null}',"
                  " 'ok', NULL, '{\"MLUPS\": {\"status\": \"quiet\", \"why\": \"\", \"checks\": []}}', 1, 1)")
        c.execute("INSERT INTO watch_builds (watch, build, seq, time, ident, status, detail, decision, created,"
                  " updated) VALUES ('w', '2023-08-25', 2, NULL, '{}', 'missing', 'no image', NULL, 1, 1)")
        for verdict, result in (("pending", None), ("confirmed", '{"change": -0.1, "pairs": 10}')):
            c.execute("INSERT INTO watch_checks (watch, metric, arrived, before, after, suspect, verdict, result,"
                      " created, updated) VALUES ('w', 'MLUPS', 'b', 'a', 'b', '{\"strength\": 9.0}', ?, ?, 1, 1)",
                      (verdict, result))
        for i, hunt in enumerate([*OLD_HUNTS, None], start=1):
            c.execute("INSERT INTO watch_alerts (watch, arrived, before, after, checks, hunt, recovery, events,"
                      " created, updated) VALUES ('w', 'b', 'a', 'b', ?, ?, ?, ?, 1, 1)",
                      (json.dumps([i]), json.dumps(hunt) if hunt is not None else None,
                       json.dumps({"metric": "m", "build": "c", "level": 1.0, "relative_to_before": 0.0})
                       if i == 1 else "null", json.dumps(["new"]) if i == 1 else ""))


def test_an_older_stores_watch_rows_read_into_the_typed_records_and_print_as_they_were_written(tmp_path):
    store = Store(tmp_path / "w")
    _old_rows(store)
    built, missing = store.watch_builds("w")
    assert built == Build("2023-08-24", "2023-08-24", "ok", None, {"image": "i", "digest": None},
                          {"MLUPS": {"status": "quiet", "why": "", "checks": []}}, 1, "w")
    assert missing.status == "missing" and missing.detail == "no image" and missing.decision is None
    assert missing.time is None and missing.ident == {}
    pending, confirmed = store.watch_checks("w")
    assert pending == Check(1, "MLUPS", "b", "a", "b", "pending", {"strength": 9.0}, None, "w")
    assert confirmed.verdict == "confirmed" and confirmed.result == {"change": -0.1, "pairs": 10}
    assert list(confirmed.to_json()) == ["id", "metric", "arrived", "before", "after", "verdict", "suspect", "result"]
    alerts = store.watch_alerts("w")
    assert [type(a) for a in alerts] == [Alert] * 5 and [a.checks for a in alerts] == [[1], [2], [3], [4], [5]]
    first = alerts[0]
    assert first.events == ["new"] and first.recovery == {"metric": "m", "build": "c", "level": 1.0,
                                                           "relative_to_before": 0.0}
    assert first.hunt is not None and first.hunt.status == "culprit" and first.hunt.culprit == CULPRIT
    assert first.hunt.job == "12" and first.hunt.tries == 0
    assert alerts[3].hunt == HuntOutcome("failed", reason="boom") and alerts[3].hunt.tries is None
    assert alerts[4].hunt is None and alerts[4].recovery is None and alerts[4].events == []
    # each hunt is printed (``--json``, the notify payload) as it was written: its keys, their order
    for alert, old in zip(alerts[:len(OLD_HUNTS)], OLD_HUNTS, strict=True):
        assert alert.hunt is not None and json.dumps(alert.hunt.to_json()) == json.dumps(old)


def test_an_alert_updated_keeps_its_hunt_as_written_and_adds_a_new_key_after_the_others(tmp_path):
    store = Store(tmp_path / "w")
    _old_rows(store)
    not_started = store.watch_alerts("w")[1]
    store.update_watch_alert(not_started.id, add_events=["hunted"])  # the hunt left as it is
    (stored,) = store.conn.execute("SELECT hunt FROM watch_alerts WHERE id=?", (not_started.id,)).fetchone()
    assert stored == json.dumps(OLD_HUNTS[1])
    assert store.watch_alerts("w")[1].events == ["hunted"]
    assert not_started.hunt is not None
    later = not_started.hunt.updated(reason="now with --hunt-image", tries=1)
    store.update_watch_alert(not_started.id, hunt=later)
    (stored,) = store.conn.execute("SELECT hunt FROM watch_alerts WHERE id=?", (not_started.id,)).fetchone()
    assert list(json.loads(stored)) == ["status", "reason", "command", "tries"]
    assert store.watch_alerts("w")[1].hunt == HuntOutcome("not started", reason="now with --hunt-image", tries=1)


def test_a_new_hunt_outcome_writes_the_keys_it_holds():
    h = HuntOutcome("failed", reason="no answer", exit_code=1)
    assert h.to_json() == {"status": "failed", "exit_code": 1, "reason": "no answer"}
    assert HuntOutcome.from_json(h.to_json()) == h and not h.answered
    assert HuntOutcome.from_json({"status": "unsure", "candidate": None}).to_json() == {"status": "unsure",
                                                                                        "candidate": None}
    b = Build("0.5.0.dev20230801", "2023-08-01", ident={"version": "0.5.0.dev20230801"})
    assert Build.from_json(b.to_json()) == b and b.status == "pending" and b.decision is None
