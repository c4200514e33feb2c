"""The seam between a bisection's drives and its judges stays narrow (docs/architecture.md, "Judges
and the lab"): the faces a drive sees of a judge are Protocols of at most 8 members, and nothing
outside hourly/analysis/judges/ asks a judge what class it is (``isinstance``, ``type(j) is``,
``getattr(judge, ...)``) — which one a judge is taken as is decided in one place there
(``chain_judge``, ``window_judge``, ``paired_judge``)."""

from __future__ import annotations

import ast
from pathlib import Path

import hourly

PACKAGE = Path(hourly.__file__).parent
JUDGES = PACKAGE / "analysis" / "judges"

#: the narrow faces, by module: each at most MOST members
NARROW = {"chain.py": ("ChainJudge", "RateTest"), "window.py": ("WindowJudge", "PairedJudge")}
#: the drives: they see a judge only through the faces above
DRIVES = ("drive.py", "chain_drive.py", "metric_drive.py", "step_session.py", "paired_rounds.py", "answer.py")
MOST = 8


def members(source: str, name: str) -> list[str]:
    """The members a Protocol class declares: its annotated attributes, methods and properties."""
    (cls,) = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == name]
    out = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("__"):
            out.append(node.name)
    return out


def _names(node: ast.AST) -> str:
    return ast.unparse(node)


def questions(source: str) -> list[str]:
    """Every place ``source`` asks a judge what it is: ``isinstance``/``getattr`` of something named a
    judge (``judge``, ``j``, ``….judge``) or against a judge class, and ``type(j) is``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            first = _names(node.args[0])
            judgey = first in ("j", "judge") or first.endswith(".judge") or first.endswith("_judge")
            if node.func.id in ("isinstance", "getattr", "hasattr") and (
                    judgey or (len(node.args) > 1 and "Judge" in _names(node.args[1]))):
                found.append(ast.unparse(node))
            elif node.func.id == "type" and judgey:
                found.append(ast.unparse(node))
    return found


def test_the_faces_a_drive_sees_of_a_judge_have_at_most_8_members():
    for module, names in NARROW.items():
        source = (JUDGES / module).read_text()
        for name in names:
            got = members(source, name)
            assert 0 < len(got) <= MOST, (name, got)


def judge_classes_used(source: str) -> list[str]:
    """Every ``SomeJudge.member`` ``source`` reads: a judge's class reached round its faces."""
    return sorted({ast.unparse(n) for n in ast.walk(ast.parse(source))
                   if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id.endswith("Judge")})


def test_the_drives_reach_no_judge_class_round_the_faces():
    used = {name: got for name in DRIVES if (got := judge_classes_used((PACKAGE / "bisect" / name).read_text()))}
    assert used == {}
    assert judge_classes_used("MetricJudge.failed(ev)\nx.judge.call(ev)") == ["MetricJudge.failed"]


def test_the_member_count_reads_attributes_methods_and_properties():
    source = '''
class P(Protocol):
    """doc"""
    a: int

    @property
    def b(self) -> int: ...

    def c(self) -> None: ...

    def __call__(self) -> None: ...
'''
    assert members(source, "P") == ["a", "b", "c"]


def test_no_module_outside_the_judges_asks_a_judge_what_it_is():
    asked = {str(p.relative_to(PACKAGE)): q for p in PACKAGE.rglob("*.py")
             if JUDGES not in p.parents and (q := questions(p.read_text()))}
    assert asked == {}


def test_the_question_finder_sees_each_way_of_asking():
    source = '''
def f(lab, j, judge, self):
    isinstance(lab.judge, FlakyJudge)
    type(j) is ExitJudge
    getattr(j, "near_breaks", False)
    getattr(self.judge, "paired", False)
    isinstance(x, ManualJudge)
    isinstance(v, ProcessValue)
    getattr(lab, "seconds", 0.0)
'''
    assert sorted(questions(source)) == sorted([
        "isinstance(lab.judge, FlakyJudge)", "type(j)", "getattr(j, 'near_breaks', False)",
        "getattr(self.judge, 'paired', False)", "isinstance(x, ManualJudge)"])
