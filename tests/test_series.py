"""Loading series (grep output, CSV) and the `detect` command through a real Typer app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from hourly.analysis.detect import detect_changes
from hourly.analysis.series import PointStatus, natural_key, parse_grep_lines
from hourly.commands.detect import detect
from hourly.errors import UsageError, UserError
from hourly.render.scan import change_marks, format_change
from hourly.scan.sources import load_csv, load_grep_text, load_series

ISSUE_GREP = """\
OUT-a:MLUPS: 100
OUT-b:MLUPS: 100.1
OUT-c:MLUPS: 99.9
OUT-d:  File "/home/me/lbm/MLUPS3d.py", line 212, in <module>
OUT-e:MLUPS: 90
OUT-f:MLUPS: 90.2
"""


def make_app() -> typer.Typer:
    app = typer.Typer()
    app.command()(detect)

    @app.command()
    def version() -> None:  # a second command, so `detect` is a subcommand as in hourly
        typer.echo("0")

    return app


def run(args: list[str]):
    return CliRunner().invoke(make_app(), ["detect", *args])


@pytest.fixture
def grep_file(tmp_path: Path) -> Path:
    p = tmp_path / "runs.txt"
    p.write_text(ISSUE_GREP)
    return p


def test_grep_lines_label_value_and_failed_traceback(grep_file):
    s = load_grep_text(grep_file)
    assert s.labels == ["OUT-a", "OUT-b", "OUT-c", "OUT-d", "OUT-e", "OUT-f"]
    assert [p.value for p in s.points] == [100.0, 100.1, 99.9, None, 90.0, 90.2]
    assert s.points[3].status is PointStatus.FAILED


def test_grep_repeats_become_samples_and_labels_sort_naturally():
    s = parse_grep_lines(["run10:MLUPS: 5", "run2:MLUPS: 3", "run2:MLUPS: 4", "run2:MLUPS: 8",
                          "Binary file run3 matches", "", "run1:MLUPS: 1.5e0"])
    assert s.labels == ["run1", "run2", "run10"]
    assert s.points[1].samples == (3.0, 4.0, 8.0)
    assert s.points[1].value == 4.0
    assert s.points[0].value == 1.5
    assert natural_key("OUT-2") < natural_key("OUT-10")


def test_grep_with_custom_metric_regex():
    s = parse_grep_lines(["a:step time 12.5 ms", "b:step time 13.0 ms", "c:oops"],
                         metric_regex=r"time (?P<value>[0-9.]+) ms")
    assert [p.value for p in s.points] == [12.5, 13.0, None]


def test_bad_inputs_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_grep_text(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("no colon here\n")
    with pytest.raises(UserError, match="no `LABEL"):
        load_grep_text(empty)
    with pytest.raises(UserError, match="not a valid regular expression"):
        parse_grep_lines(["a:MLUPS: 1"], metric_regex="(")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("when,mlups\n1,2\n")
    with pytest.raises(UserError, match="'label' and 'value'") as e:
        load_csv(bad_csv)
    assert e.value.fix


def test_csv_empty_and_unparsable_values_are_failed(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("label,value,note\nday-10,537.0,\nday-2,577.1,x\nday-3,,crash\nday-4,n/a,\n"
                 "day-5,536.5,\n")
    s = load_csv(p)
    assert s.labels == ["day-2", "day-3", "day-4", "day-5", "day-10"]
    assert [str(pt.status) for pt in s.points] == ["ok", "failed", "failed", "ok", "ok"]


def test_cli_grep_json_is_the_issue_example(grep_file):
    r = run([str(grep_file), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["points"][3] == {"label": "OUT-d", "value": None, "status": "failed"}
    assert out["points"][0] == {"label": "OUT-a", "value": 100.0, "status": "ok"}
    assert len(out["changes"]) == 1
    c = out["changes"][0]
    assert (c["before"], c["after"], c["kind"]) == ("OUT-c", "OUT-e", "regression")
    assert c["relative_change"] == pytest.approx(-0.1, abs=0.005)
    assert set(c) == {"before", "after", "from_value", "to_value", "relative_change", "kind", "edge", "edge_check",
                      "n_before", "n_after"}
    assert c["edge"] is False and c["edge_check"] is None
    assert set(out) == {"points", "changes", "order", "undecided", "resolution"} and out["undecided"] is None


def test_cli_grep_table_marks_the_step(grep_file):
    r = run([str(grep_file)])
    assert r.exit_code == 0, r.output
    assert "▼ regression -9.9%" in r.output
    assert "regression -9.9% between OUT-c and OUT-e" in r.output
    assert "failed" in r.output


def test_cli_csv_lower_is_better_and_min_change(tmp_path):
    p = tmp_path / "times.csv"
    rows = [f"t{i},{v}" for i, v in enumerate([10.0, 10.02, 9.98, 10.01, 10.3, 10.29, 10.31, 10.3,
                                               12.0, 12.02, 11.98, 12.01])]
    p.write_text("label,value\n" + "\n".join(rows) + "\n")
    out = json.loads(run([str(p), "--json", "--lower-is-better"]).output)
    assert [(c["before"], c["after"], c["kind"]) for c in out["changes"]] == [
        ("t3", "t4", "regression"), ("t7", "t8", "regression")]
    out = json.loads(run([str(p), "--json", "--lower-is-better", "--min-change", "0.1"]).output)
    assert [(c["before"], c["after"]) for c in out["changes"]] == [("t7", "t8")]
    out = json.loads(run([str(p), "--json"]).output)
    assert {c["kind"] for c in out["changes"]} == {"improvement"}


def test_cli_metric_regex(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("".join(f"r{i}:time: {v} s\n" for i, v in enumerate([5, 5.01, 4.99, 5, 6, 6.01, 5.99, 6])))
    out = json.loads(run([str(p), "--json", "--lower-is-better",
                          "--metric-regex", r"time: (?P<value>[0-9.]+)"]).output)
    assert [(c["before"], c["after"], c["kind"]) for c in out["changes"]] == [("r3", "r4", "regression")]


def test_cli_errors_reach_the_top_level_handler(tmp_path):
    r = run([str(tmp_path / "nope.txt")])
    assert isinstance(r.exception, UserError)
    r = run([str(tmp_path / "nope.txt"), "--min-change", "-1"])
    assert isinstance(r.exception, UsageError)


def test_default_source_without_a_workdir_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="no results store at ./hourly-work") as e:
        load_series(None)
    assert "hourly scan" in (e.value.fix or "")


def test_format_change_and_marks():
    values = [100, 100.1, 99.9, None, 90, 90.2]
    labels = list("abcdef")
    (c,) = detect_changes(values)
    assert format_change(c, labels).startswith("regression -9.9% between c and e: 100 -> 90.1")
    assert change_marks([c]) == {3: "│", 4: "▼ regression -9.9%"}


def test_cli_edge_step_is_reported_and_marked(tmp_path):
    # issue 11: a new level at the last point only is an edge step, in the table, the line and JSON
    p = tmp_path / "runs.txt"
    p.write_text("".join(f"OUT-{i:02d}:MLUPS: {v}\n" for i, v in
                         enumerate([577.0, 577.4, 576.8, 577.2, 576.9, 577.3, 537.0])))
    out = json.loads(run([str(p), "--json"]).output)
    (c,) = out["changes"]
    assert (c["before"], c["after"], c["kind"], c["edge"]) == ("OUT-05", "OUT-06", "regression", True)
    text = " ".join(run([str(p)]).output.split())   # the console wraps long lines
    assert "▼ regression -6.9% edge" in text
    assert "edge step: one point on its side, measure it again to confirm" in text


def test_cli_default_floor_and_no_plus_zero(tmp_path):
    # 0.3 % shift in 0.01 % noise: significant, below the 1 % floor; shown with --min-change 0
    p = tmp_path / "runs.csv"
    vals = [577.0, 577.05, 576.98, 577.02, 577.01, 575.3, 575.28, 575.33, 575.31, 575.29]
    p.write_text("label,value\n" + "".join(f"d{i},{v}\n" for i, v in enumerate(vals)))
    assert json.loads(run([str(p), "--json"]).output)["changes"] == []
    low = run([str(p), "--min-change", "0"]).output
    assert "regression -0.30% between d4 and d5" in low and "+0.0%" not in low and "-0.0%" not in low


# -- issue 33 item 2: `hourly detect` never says "no step found" from differences that may be steps

@pytest.mark.parametrize("values", [[100, 80, 80, 60], [100, 100, 80, 80, 60], [100, 80, 80, 60, 60]])
def test_detect_on_a_short_single_valued_series_says_it_cannot_tell(tmp_path, capsys, values):
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text("label,value\n" + "".join(f"r{i},{v}\n" for i, v in enumerate(values)))
    code = main(["detect", str(p)])
    out, err = capsys.readouterr()
    assert code == 1 and "no step found" not in out
    assert "too few points to tell noise from steps" in out
    assert err.startswith("hourly: error: too few points to tell noise from steps") and "3 times" in err
    assert main(["detect", str(p), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["changes"] == [] and got["undecided"].startswith("too few points")
    # three runs per label, each level's runs alike: the repeats measure the noise, both steps show
    p.write_text("label,value\n" + "".join(f"r{i},{v * f}\n" for i, v in enumerate(values)
                                          for f in (1.0, 1.001, 0.999)))
    assert main(["detect", str(p), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert len(got["changes"]) == 2 and got["undecided"] is None


# -- issue 33 item 6: nothing left out without a word; `hourly detect -` reads standard input --------

def test_a_csv_row_without_a_label_is_named_not_dropped_silently(tmp_path, capsys):
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text("label,value\na,100\n,90\nb,100.1\n  ,80\nc,99.9\n")
    assert main(["detect", str(p), "--json"]) == 1  # three points of one run each: noise unmeasured
    out, err = capsys.readouterr()
    assert [pt["label"] for pt in json.loads(out)["points"]] == ["a", "b", "c"]
    assert "2 rows without a label left out" in err and "line 3" in err and "line 5" in err
    assert "',90'" in err


def test_a_csv_quote_left_open_is_refused_not_read_as_one_label(tmp_path, capsys):
    """A stray quote read every row after it as one field: the 200 % step there was lost and detect
    said "no step found", exit 0."""
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text('label,value\na,1\nb,1.001\nc,0.999\nd,1\n"e,3\nf,3\ng,3\nh,3\n')
    assert main(["detect", str(p)]) == 1
    out, err = capsys.readouterr()
    assert "no step found" not in out + err
    assert "runs.csv: the row of line 6 \'\"e,3\' runs over lines 6-9" in err and "close the quote" in err
    p.write_text('label,value\na,1\nb,1\n"c\nd",3\ne,3\n')  # a label over two lines: one line of output each
    assert main(["detect", str(p)]) == 1
    assert "the row of line 4" in capsys.readouterr().err
    p.write_text('label,value\na,1\n"b, c",1\nd,1\ne,1\n')  # a quoted label on its own line reads as it is
    assert main(["detect", str(p), "--json"]) == 0
    assert [pt["label"] for pt in json.loads(capsys.readouterr().out)["points"]] == ["a", "b, c", "d", "e"]


def test_an_output_file_given_to_detect_is_never_told_to_be_overwritten(tmp_path, capsys):
    """`hourly detect OUT-01` (one raw output) said to run `grep -H MLUPS OUT* > OUT-01`, which empties
    OUT-01 before grep reads it; from standard input it said `> <stdin>`."""
    import io
    import sys

    from hourly.cli import main
    out1 = tmp_path / "OUT-01"
    out1.write_text("step 1\nMLUPS: 100\n")
    assert main(["detect", str(out1)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "carry no file name" in err and "`grep -H MLUPS OUT* > runs.txt`, then `hourly detect runs.txt`" in err
    assert "> OUT-01" not in err
    stdin, sys.stdin = sys.stdin, io.StringIO("MLUPS: 100\nMLUPS: 90\n")
    try:
        assert main(["detect", "-"]) == 1
    finally:
        sys.stdin = stdin
    err = " ".join(capsys.readouterr().err.split())
    assert "`grep -H MLUPS OUT* | hourly detect -`" in err and "<stdin>`" not in err


def test_a_grep_line_without_a_label_is_named(tmp_path, capsys):
    from hourly.cli import main
    p = tmp_path / "runs.txt"
    p.write_text("a:MLUPS: 100\n:MLUPS: 90\nb:MLUPS: 100.2\n")
    assert main(["detect", str(p), "--json"]) == 1  # two points of one run each: noise unmeasured
    out, err = capsys.readouterr()
    assert [pt["label"] for pt in json.loads(out)["points"]] == ["a", "b"]
    assert "1 line without a label left out" in err and "line 2" in err


@pytest.mark.parametrize("text", ["label,value\na,100\nb,100.1\nc,99.9\nd,90\ne,90.2\nf,89.9\n", ISSUE_GREP])
def test_detect_reads_standard_input_given_as_a_dash(monkeypatch, capsys, text):
    import io

    from hourly.cli import main
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["detect", "-", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert len(got["points"]) == 6 and [c["kind"] for c in got["changes"]] == ["regression"]


def test_detect_of_an_empty_standard_input_is_one_line(monkeypatch, capsys):
    import io

    from hourly.cli import main
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["detect", "-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hourly: error: <stdin>") and len(err.strip().splitlines()) == 1


# -- issue 33: "no step found" only from a series that could show one --------------------------------

@pytest.mark.parametrize("rows,said", [("a,1\nb,nan\n", "1 point with a value (1 failed): a step needs two at least"),
                                       ("a,nan\n", "0 points with a value (1 failed): a step needs two at least"),
                                       ("a,5\n", "1 point with a value: a step needs two at least")])
def test_detect_on_fewer_than_two_values_says_so_not_no_step(tmp_path, capsys, rows, said):
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text("label,value\n" + rows)
    code = main(["detect", str(p)])
    out, err = capsys.readouterr()
    assert code == 1 and "no step found" not in out
    assert f"hourly: error: {p}: {said} — give at least two points with a value" in " ".join(err.split())


def test_detect_on_a_folder_without_a_store_names_its_own_argument(tmp_path, capsys):
    """detect takes its workdir as SOURCE: the error once told it to pass --workdir, which it has not."""
    from hourly.cli import main
    code = main(["detect", str(tmp_path)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 1 and "--workdir" not in err
    assert f"no results store in {tmp_path} — run `hourly scan` into it first, or give detect the workdir a scan " \
           "used" in err


# -- issue 44: a value read as no number failed its point without a word ("2 failed") ---------------

def _detect_cli(capsys, args):
    from hourly.cli import main
    capsys.readouterr()
    code = main(["detect", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_csv_values_that_are_no_number_say_why_their_points_failed(tmp_path, capsys):
    p = tmp_path / "times.csv"
    p.write_text("label,value\nt1,5ms\nt2,6ms\nt3,5\nt4,5.01\nt5,1,234.5\nt6,\"1,234.5\"\n")
    s = load_csv(p)
    assert [pt.value for pt in s.points] == [None, None, 5.0, 5.01, None, 1234.5]
    code, out, err = _detect_cli(capsys, [str(p)])
    assert "6 points (3 ok, 3 failed)" in out, out
    assert (f"hourly: warning: {p}: 3 values read as no number, their points failed (t1: row 2: '5ms', which is no "
            "number; t2: row 3: '6ms', which is no number; t5: row 6: 't5,1,234.5' has more fields than the header "
            "(quote a number with a comma: \"1,234.5\")) — print the number plainly (digits, one '.', e.g. 1234.5)") in err, err


def test_grep_lines_read_digit_groups_and_a_number_read_two_ways_fails_its_label(tmp_path, capsys):
    """A label with one number hourly will not guess at is failed whatever its other lines say
    (another line's value would be a silent pick)."""
    p = tmp_path / "runs.txt"
    p.write_text("OUT-1:MLUPS: 1,234.5\nOUT-2:MLUPS: 1,234.7\nOUT-3:MLUPS: 999.5\nOUT-3:MLUPS: 1,000\n"
                 "OUT-4:MLUPS: nan\n")
    s = load_grep_text(p)
    assert [pt.value for pt in s.points] == [1234.5, 1234.7, None, None]
    code, out, err = _detect_cli(capsys, [str(p)])
    assert ("2 values read as no number, their points failed (OUT-3: captured '1', followed by ',000': '1,000' "
            "reads as 1000 (a thousands comma) or 1.000 (a decimal comma); OUT-4: captured 'nan', not a finite "
            "number)") in err, err


@pytest.mark.parametrize("values", [(100, 99, 98), (100, 103), (100, 100), (100, 100.1, 99.9)])
def test_too_few_points_of_one_run_each_cannot_tell_steps_or_their_absence(tmp_path, capsys, values):
    """Under 4 points of one run each the noise is assumed (0.2 %), not measured: a step "7x its
    standard error" or "no step found" would rest on that guess alone."""
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text("label,value\n" + "".join(f"r{i},{v}\n" for i, v in enumerate(values)))
    code = main(["detect", str(p)])
    out, err = capsys.readouterr()
    err = " ".join(err.split())
    assert code == 1 and "no step found" not in out and "resolution:" not in out
    assert "too few points to measure the noise: one run per point and under 4 points" in err
    assert err.endswith("measure each point 3 times (as many `LABEL:` lines or CSV rows per label) and run hourly detect again")
    assert main(["detect", str(p), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["undecided"].startswith("too few points to measure the noise") and got["resolution"] is None


def test_three_runs_a_point_measure_the_noise_and_answer(tmp_path, capsys):
    """The fix the line names works: the same three points measured three times each answer."""
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text("label,value\n" + "".join(f"r{i},{v * f}\n" for i, v in enumerate((100, 99, 98))
                                          for f in (1.0, 1.001, 0.999)))
    assert main(["detect", str(p), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["undecided"] is None and got["resolution"]["noise_source"] == "repeats"
    assert [c["kind"] for c in got["changes"]] == ["regression"]


def test_commit_shas_keep_the_files_order_and_the_order_is_said(tmp_path, capsys):
    """SHAs in time order once were sorted by label: a step between commits not next to each other."""
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    shas = ["f00d1e5", "abc1234", "9e2a77b", "0bad5ee", "77aa001", "3c3c3c3"]
    p.write_text("label,value\n" + "".join(f"{s},{v}\n" for s, v in zip(shas, [100, 100.1, 99.9, 120, 120.2, 119.9], strict=True)))
    assert main(["detect", str(p), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [pt["label"] for pt in got["points"]] == shas
    (step,) = got["changes"]
    assert (step["before"], step["after"]) == ("9e2a77b", "0bad5ee")
    assert got["order"].startswith("in the order of the input")
    assert main(["detect", str(p)]) == 0
    assert "points in the order of the input" in capsys.readouterr().out


@pytest.mark.parametrize("labels, expected, order", [
    (["2023-08-25", "2023-08-24T05:00Z", "2023-08-24 03:00"],
     ["2023-08-24 03:00", "2023-08-24T05:00Z", "2023-08-25"], "sorted by time"),
    (["OUT-10", "OUT-2", "OUT-1"], ["OUT-1", "OUT-2", "OUT-10"], "sorted by the numbers"),
    (["OUT-b", "OUT-a", "OUT-c"], ["OUT-b", "OUT-a", "OUT-c"], "in the order of the input"),
    (["1234567", "7654321", "0000001"], ["1234567", "7654321", "0000001"], "in the order of the input"),
])
def test_labels_are_sorted_only_where_they_carry_an_order(labels, expected, order):
    from hourly.analysis.series import parse_csv_text
    s = parse_csv_text("label,value\n" + "".join(f"{lab},1\n" for lab in labels))
    assert s.labels == expected and s.order.startswith(order)


@pytest.mark.parametrize("command, value", [("detect", "5"), ("detect", "1"), ("report", "5")])
def test_a_min_change_of_one_or_more_is_a_percentage_typed_as_a_fraction(tmp_path, capsys, command, value):
    """`detect --min-change 5` once hid every step under +500 % (bisect and watch refuse it)."""
    from hourly.cli import main
    p = tmp_path / "runs.csv"
    p.write_text("label,value\na,100\nb,100\n")
    argv = [command, str(p)] if command == "detect" else [command, "--workdir", str(tmp_path)]
    assert main([*argv, "--min-change", value]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"--min-change must lie from 0 up to 1 (a fraction of the level: 0.05 for 5 %), not {float(value)}" in err
