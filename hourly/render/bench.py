"""``hourly bench``'s output: a table per phase (median, spread, samples), the phases that could not
be measured, and the options that feed the same harness to a scan; or one JSON object."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hourly.measure.phases import PhaseReport, PhaseStats, ScanOptions
from hourly.render.console import command_line, print_text
from hourly.text.plurals import plural

_UNIT_WORDS = {"ms": "ms", "us": "µs", "ns": "ns", "s": "s", "bytes": "B"}


def _value(stats: PhaseStats, value: float) -> str:
    if stats.unit == "bytes":
        return f"{value:,.0f}"
    return f"{value:.4g}"


def phase_table(report: PhaseReport) -> Table:
    t = Table(title="hourly bench: each phase's samples from one process")
    for name, justify in (("phase", "left"), ("unit", "left"), ("median", "right"), ("IQR", "right"),
                          ("IQR %", "right"), ("min", "right"), ("max", "right"), ("samples", "right"),
                          ("better", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for name, s in report.phases.items():
        spread = f"{s.iqr / s.median * 100:.1f}" if s.median else "—"
        t.add_row(name, _UNIT_WORDS.get(s.unit, s.unit), _value(s, s.median), _value(s, s.iqr), spread,
                  _value(s, min(s.samples)), _value(s, max(s.samples)), str(len(s.samples)),
                  {True: "higher", False: "lower", None: "?"}[s.higher_is_better])
    return t


def print_report(con: Console, report: PhaseReport, scan: ScanOptions) -> None:
    if report.header:
        print_text(con, report.header)
    if report.phases:
        con.print(phase_table(report))
    for name, reason in report.unavailable.items():
        print_text(con, f"{name}: not available — {reason}")
    for name, rejected in report.no_value.items():
        print_text(con, f"{name}: printed only values that are no finite number ({', '.join(rejected[:3])})")
    for name, s in report.phases.items():
        if s.rejected:
            print_text(con, f"{name}: {plural(len(s.rejected), 'value')} not counted, no finite number "
                            f"({', '.join(s.rejected[:3])})")
    if report.log:
        print_text(con, f"full output: {report.log}")
    print_scan_options(con, scan)


def print_scan_options(con: Console, scan: ScanOptions) -> None:
    print_text(con, "")
    print_text(con, "hunt every phase at once with hourly scan, nightly or releases: each is recorded as its own "
                    "metric, and each step's bisection follows its phase with --metric NAME (the harness runs "
                    "under each state's python3; hourly need not be installed there):")
    cwd = ["--bench-cwd", scan.bench_cwd] if scan.bench_cwd else []
    print_text(con, "  " + command_line(["--bench-cmd", scan.bench_cmd, *cwd]))
    print_text(con, "or one phase alone, one value per run, with its MEDIAN line and its direction:")
    for name, flags in scan.per_metric.items():
        print_text(con, f"  {name}: {command_line(flags)}")
    print_text(con, "add --phases NAME (e.g. --phases step) to the --bench-cmd to measure that phase alone, "
                    "which makes each run cheaper")
    if scan.nightly:
        print_text(con, "in hourly nightly or hunt (the harness and this folder mounted in each container):")
        print_text(con, "  " + command_line(scan.nightly))
    elif scan.nightly_gap:
        print_text(con, f"in hourly nightly: {scan.nightly_gap}")


def report_json(report: PhaseReport, scan: ScanOptions) -> dict:
    return {
        "command": report.command,
        "header": report.header,
        "log": report.log,
        "phases": {name: s.as_dict() for name, s in report.phases.items()},
        "unavailable": report.unavailable,
        "no_value": {name: list(r) for name, r in report.no_value.items()},
        "warnings": report.warnings,
        "scan_options": {"bench_cmd": scan.bench_cmd, "bench_cwd": scan.bench_cwd,
                         "per_metric": scan.per_metric, "nightly": scan.nightly,
                         "nightly_gap": scan.nightly_gap},
    }
