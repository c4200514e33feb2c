"""``hourly watch --source containers`` against the real Docker engine and the loopback registry:
nightly images made locally (busybox, a value per image), pushed to the registry and listed from it
(``--list-tags``), a slow night that measuring again does not confirm, a planted step that it does,
``--notify-cmd`` that fails once and delivers on the next run, and the dates tried one by one
when the tags are not listed (a date without an image is a gap). The hunt that names a commit from a
container watch: tests/test_hunt_docker.py (it needs the day images with sources and builds)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hourly.adapters.containers import listed
from hourly.adapters.store import Store
from hourly.cli import main
from hourly.watch import plan as P

pytest_plugins = ["tests.conftest_docker"] if __package__ else ["conftest_docker"]

if __package__:
    from .docker_fixtures import NightlySpec, build_nightly_set
else:
    from docker_fixtures import NightlySpec, build_nightly_set

#: ten nightlies (none on 09-03), 100 until 09-07, then 80: the planted step on 09-08
SPECS = tuple(NightlySpec(f"2023-09-{d:02d}", mode="missing" if d == 3 else "ok", value=100.0 if d < 8 else 80.0)
              for d in range(1, 11))

#: the benchmark in every image: its value with ±0.3 % noise, 15 % lower while /dir/slow-night exists
#: (the night's machine, not the image)
TEST_SH = """#!/bin/sh
v=$(cat /opt/bench/value)
f=1
[ -f /dir/slow-night ] && f=0.85
s=$(od -An -N4 -tu4 /dev/urandom)
awk -v v="$v" -v f="$f" -v s="$s" 'BEGIN { srand(s); printf "MLUPS: %.3f\\n", v * f * (1 + (rand() - 0.5) * 0.006) }'
"""

NOTIFY = """\
import json, os, sys
doc = json.load(sys.stdin)
out = os.environ["NOTIFY_OUT"]
with open(out, "a") as f:
    f.write(json.dumps(doc) + "\\n")
if os.path.exists(out + ".fail"):
    os.unlink(out + ".fail")
    print("the chat server said 503", file=sys.stderr)
    sys.exit(2)
"""


@pytest.fixture(scope="module")
def watched_images(docker_client, registry, test_scan_id):
    ns = build_nightly_set(docker_client, f"localhost/hourly-test/watch-{test_scan_id}:nightly-{{date}}",
                           f"{registry}/hourly-{test_scan_id}/watch:nightly-{{date}}", SPECS)
    yield ns
    for d in ns.dates:
        for ref in (ns.local_template.format(date=d), ns.registry_template.format(date=d)):
            try:
                docker_client.images.remove(ref, force=True)
            except Exception:
                pass


def _run(capsys, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.docker
def test_a_container_watch_lists_the_tags_rejects_a_slow_night_and_alerts_on_the_step(
        docker_client, watched_images, tmp_path, capsys, monkeypatch):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "test.sh").write_text(TEST_SH)
    notify = tmp_path / "notify.py"
    notify.write_text(NOTIFY)
    out_file = tmp_path / "notified.jsonl"
    monkeypatch.setenv("NOTIFY_OUT", str(out_file))
    work = tmp_path / "work"
    args = ["watch", "--source", "containers", "--image", watched_images.registry_template, "--list-tags",
            "--since", "2023-09-01", "--gpus", "none", "--mount", f"{bench}:/dir", "--repeats", "3",
            "--no-hunt", "--notify-cmd", f"{sys.executable} {notify}", "--workdir", str(work)]
    # the history: 09-01, 09-02, 09-04, 09-05 (no tag for 09-03: not a build)
    code, out, err = _run(capsys, [*args, "--until", "2023-09-05"])
    assert code == 0, out + err
    store = Store(work)
    key = store.load_settings("watch")["key"]
    assert [b.build for b in store.watch_builds(key)] == ["2023-09-01", "2023-09-02", "2023-09-04", "2023-09-05"]
    # a slow night: the new image reads 15 % low, measured again against 09-05 on the same machine
    (bench / "slow-night").write_text("")
    code, out, err = _run(capsys, [*args, "--until", "2023-09-06"])
    (bench / "slow-night").unlink()
    assert code == 0, out + err
    (check,) = store.watch_checks(key)
    assert check.verdict == "rejected" and (check.before, check.after) == ("2023-09-05", "2023-09-06")
    assert store.watch_alerts(key) == [] and not out_file.exists()
    # the step: confirmed on 09-08's arrival; the notification fails once: said, exit 1, kept
    (tmp_path / "notified.jsonl.fail").write_text("")
    code, out, err = _run(capsys, [*args, "--until", "2023-09-08"])
    assert code == 1 and "--notify-cmd failed for 1 alert(s)" in err and "the chat server said 503" in err, out + err
    (alert,) = store.watch_alerts(key)
    # the window holds the step; it may start at 09-05 (09-07 read at the old level once, 09-06 the
    # slow night: the step could be on either side of them until the hunt measures them)
    assert alert.after == "2023-09-08" and alert.before in ("2023-09-05", "2023-09-07")
    assert alert.events == ["new"] and alert.hunt is not None and alert.hunt.status == "off"
    hunt = alert.hunt.command or []
    assert hunt[:6] == ["hourly", "hunt", "--good-date", alert.before, "--bad-date", "2023-09-08"]
    assert hunt[hunt.index("--image") + 1] == watched_images.registry_template
    # the next run: nothing new, the alert delivered now (exit 10: new to whoever reads it)
    code, out, err = _run(capsys, [*args, "--until", "2023-09-08"])
    assert code == P.ALERT_EXIT and "nothing new since 2023-09-08" in out, out + err
    sent = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(sent) == 2 and sent[-1]["id"] == alert.id and sent[-1]["events"] == ["new"]
    (step,) = sent[-1]["steps"]
    assert step["change"] == pytest.approx(-0.2, abs=0.01) and step["pairs"] >= 10
    assert sent[-1]["after"]["image"] == watched_images.registry_template.format(date="2023-09-08")
    assert "### hourly watch: regression" in sent[-1]["markdown"] and sent[-1]["page"].endswith("index.html")
    assert store.watch_alerts(key)[0].events == []
    # once more: quiet
    code, out, err = _run(capsys, [*args, "--until", "2023-09-08"])
    assert code == 0 and len(out_file.read_text().splitlines()) == 2
    assert [c.name for c in listed(docker_client, {"label": "hourly.level=watch"})] == []


@pytest.mark.docker
def test_without_listing_each_dates_tag_is_tried_and_a_date_without_one_is_a_gap(
        docker_client, watched_images, tmp_path, capsys):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "test.sh").write_text(TEST_SH)
    def watch(work: Path, since: str, until: str) -> tuple[int, dict]:
        code, out, err = _run(capsys, ["watch", "--source", "containers", "--image", watched_images.local_template,
                                       "--no-pull", "--since", since, "--until", until, "--gpus", "none",
                                       "--mount", f"{bench}:/dir", "--repeats", "1", "--workdir", str(work), "--json"])
        return code, json.loads(out)
    code, doc = watch(tmp_path / "early", "2023-09-01", "2023-09-04")
    assert [(b["build"], b["status"]) for b in doc["builds"]] == [
        ("2023-09-01", "ok"), ("2023-09-02", "ok"), ("2023-09-03", "missing"), ("2023-09-04", "ok")]
    assert "not present locally" in doc["builds"][2]["detail"]
    # too short a history to judge the newest: said, exit 11, never quiet
    assert code == P.UNSURE_EXIT and any("3 are needed" in u for u in doc["run"]["unsure"])
    # a date whose nightly is not out yet is looked for again, not given up on
    code, doc = watch(tmp_path / "late", "2023-09-09", "2023-09-12")
    assert [b["build"] for b in doc["builds"]] == ["2023-09-09", "2023-09-10"]
    assert any("no image yet for 2023-09-11 .. 2023-09-12" in n for n in doc["run"]["notes"])
    assert os.path.exists(tmp_path / "late" / "watch" / "index.html") and Path(doc["page"]).name == "index.html"
    # published late: the next run measures it
    repo = watched_images.local_template.rsplit(":", 1)[0]
    docker_client.images.get(watched_images.local_template.format(date="2023-09-10")).tag(repo, "nightly-2023-09-11")
    try:
        code, doc = watch(tmp_path / "late", "2023-09-09", "2023-09-12")
    finally:
        docker_client.images.remove(watched_images.local_template.format(date="2023-09-11"))
    assert [b["build"] for b in doc["builds"]] == ["2023-09-09", "2023-09-10", "2023-09-11"]
    assert doc["run"]["new_builds"] == ["2023-09-11"]
