"""Every command line hourly prints for the user to run goes through the one encoder
(``hourly.options.command_line`` / ``hourly.options.join``): quoted as a shell splits it back, and
secret-looking values redacted (hourly.text.privacy). None is written by hand with an f-string."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from hourly import options
from hourly.analysis.detect import Change, ChangeKind
from hourly.analysis.steps import CrashWindow
from hourly.errors import UserError
from hourly.model import PointResult, Step

HOURLY = Path(__file__).resolve().parent.parent / "hourly"

#: a place with a space in it, and a secret given with --env
SPACED = "/tmp/my work dir"
SECRET = "API_TOKEN=s3cret"

#: ``hourly COMMAND --flag {value}`` in a string (its pieces on several lines joined first): a
#: command line spelled by hand, which quotes nothing and redacts nothing
HAND_WRITTEN = re.compile(r"hourly (?:%s)(?: --[\w-]+)* --[\w-]+ \{" % "|".join(re.escape(c) for c in options.TAKES))
#: the end of a string continued by the next one: ``"\n    f"``
CONTINUED = re.compile(r"[\"']\s*\n\s*f?[\"']")


def hand_written(text: str) -> list[str]:
    """The hand-written command lines in a module's text, its continued strings joined."""
    return [m.group(0) for m in HAND_WRITTEN.finditer(CONTINUED.sub("", text))]

#: lines left to the modules being rewritten at the same time (render/report.py's ReportData,
#: bisect/'s narrow seams): each routes its own line through the encoder there
PENDING = {"hourly/render/report.py", "hourly/bisect/windows.py"}


def test_no_command_line_is_spelled_by_hand():
    found = []
    for path in sorted(HOURLY.rglob("*.py")):
        rel = path.relative_to(HOURLY.parent).as_posix()
        if rel in PENDING or rel == "hourly/options.py":
            continue
        found += [f"{rel}: {line}" for line in hand_written(path.read_text())]
    assert not found, "build these with hourly.options.command_line:\n" + "\n".join(found)


def test_the_pattern_finds_a_hand_written_line():
    """The check above is no check unless its pattern meets the lines it is for."""
    assert hand_written('f"hourly show --workdir {store.workdir} lists them"')
    assert hand_written('"the same dates through `hourly hunt --good-date "\n    f"{b.good.date} --bad-date"')
    assert hand_written('f"hourly show --nightly --workdir {w} prints them"')
    assert not hand_written('"run `hourly bisect --retry-failed` or explain another step"')
    assert not hand_written('f"it holds a bisection (hourly bisect --good "\n  "--bad)", f"{line} prints"')


def _point(time: str) -> PointResult:
    return PointResult(time, "x" * 40, "j" * 40, "ok", 1.0)


def test_a_metrics_bisection_line_quotes_the_workdir():
    """render/metrics joined its words with shlex alone (no redaction): now the encoder's."""
    from hourly.render.metrics import step_command, window_command
    before, after = _point("2023-08-24T01:00:00+00:00"), _point("2023-08-24T02:00:00+00:00")
    change = Change(0, 1, 1.0, 1.2, 0.2, 5.0, ChangeKind.REGRESSION)
    line = step_command(Step(change, before, after, 0, 1), "lower_ms", SPACED)
    assert shlex.split(line) == ["hourly", "bisect", "--metric", "lower_ms", "--good", before.time, "--bad",
                                 after.time, "--workdir", SPACED]
    fix = Change(0, 1, 1.2, 1.0, -0.2, 5.0, ChangeKind.IMPROVEMENT)
    words = shlex.split(step_command(Step(fix, before, after, 0, 1), "lower_ms", SPACED))
    assert words[4:6] == ["--find-fix", "--bad"] and words[-1] == SPACED
    window = CrashWindow("metric_lost", before, after, 0, 1)
    words = shlex.split(window_command(window, "lower_ms", SPACED))
    assert words[:4] == ["hourly", "bisect", "--metric", "lower_ms"] and words[-2:] == ["--workdir", SPACED]


def test_the_resume_line_quotes_a_spaced_path_and_redacts_a_secret_env():
    from hourly.measure.settings import effective
    from hourly.scan.table import scan_command
    s, _ = effective({"xla_repo": SPACED, "jax_repo": "/j", "bench_cmd": "python3 b.py", "env": [SECRET],
                      "workdir": SPACED})
    line = scan_command(s)
    words = shlex.split(line)
    assert "s3cret" not in line and "API_TOKEN=<redacted>" in words
    assert words[words.index("--workdir") + 1] == SPACED and words[words.index("--xla-repo") + 1] == SPACED


@pytest.mark.parametrize("level,command", [("nightly", ["hourly", "show", "--nightly", "--workdir"]),
                                           ("releases", ["hourly", "releases", "--show", "--workdir"]),
                                           ("watch", ["hourly", "watch", "--show", "--workdir"])])
def test_a_workdir_of_another_level_is_named_in_a_line_a_shell_reads_back(tmp_path, level, command):
    from hourly.adapters.store import Store
    from hourly.commands.common import require_a_scan
    wd = tmp_path / "my work"
    store = Store(str(wd))
    store.save_settings(level, {"workdir": str(wd)})
    with pytest.raises(UserError) as e:
        require_a_scan(store, "report")
    line = (e.value.fix or "").split(" prints")[0]
    assert shlex.split(line) == [*command, str(store.workdir)]
    store.close()


def test_the_manual_bisections_hint_quotes_the_workdir():
    from hourly.bisect.manual import Asked
    from hourly.model import Pair
    from hourly.render.manual import asked_lines
    asked = Asked("probe", Pair("x" * 40, "j" * 40), {}, {}, "python3", workdir=SPACED)
    hint = asked_lines(asked)[-1]
    assert shlex.split(hint.split("shell: ", 1)[1]) == ["hourly", "mark", "good|bad|skip|unsure", "--workdir", SPACED]


def test_the_encoder_redacts_an_env_secret_and_quotes_a_path():
    line = options.command_line("bisect", {"env": [SECRET, "N=4"], "workdir": SPACED})
    assert shlex.split(line) == ["hourly", "bisect", "--env", "API_TOKEN=<redacted>", "--env", "N=4",
                                 "--workdir", SPACED]
