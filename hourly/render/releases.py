"""The release level on the terminal (the table, the steps in words) and in `hourly report`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly import options
from hourly.adapters.store import Store
from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.model import ReleasePoint, Status
from hourly.releases.plan import LEVEL, ReleaseReport, ReleaseSettings, ReleaseStep, stored_releases
from hourly.render.console import PlainPrint
from hourly.text.plurals import plural, status_counts

if TYPE_CHECKING:  # rich's table is imported where one is made
    from rich.console import Console
    from rich.table import Table

# --------------------------------------------------------------------------------------------
# terminal output

def fmt_value(p: ReleasePoint) -> str:
    if p.value is None:
        return p.status.value
    text = f"{p.value:.4g}"
    if p.spread is not None:
        text += f" ±{p.spread * 100:.1f}%"
    return text


def mark(st: ReleaseStep) -> str:
    if st.kind == "crash":
        return f"✗ {st.after.status.value}"
    return ("▼ " if st.kind == "regression" else "▲ ") + f"{(st.change or 0) * 100:+.1f}%"


def table(report: ReleaseReport) -> Table:
    from rich.table import Table
    t = Table(title="hourly releases", caption=f"wheels: {report.settings.source().split(':', 1)[1]}")
    t.add_column("jax", no_wrap=True)
    t.add_column("jaxlib", no_wrap=True)
    t.add_column("released", no_wrap=True)
    if report.metrics is not None:  # one column per named metric, each with its steps' marks
        return _metrics_table(report, t)
    t.add_column("metric", justify="right", no_wrap=True)
    t.add_column("", no_wrap=True)
    marks: dict[int, str] = {}  # by id() of a step's later point
    for st in report.steps:
        marks[id(st.after)] = " ".join(filter(None, [marks.get(id(st.after)), mark(st)]))
    for p in report.points:
        style = None if p.status is Status.OK else (
            "dim" if p.status in (Status.MISSING, Status.INSTALL_FAILED) else "red")
        t.add_row(p.version, p.jaxlib or "-", p.date or "unknown", fmt_value(p), marks.get(id(p), ""), style=style)
    return t


def _metrics_table(report: ReleaseReport, t: Table) -> Table:
    metrics = report.metrics or []
    marks = []
    for m in metrics:
        t.add_column(f"{m.name} {'↑' if m.higher_is_better else '↓'}", justify="right", no_wrap=True)
        marks.append({st.after.version: mark(st) for st in m.steps})
    for i, p in enumerate(report.points):
        cells = []
        for m, mk in zip(metrics, marks, strict=True):
            q = m.points[i]
            cells.append(f"{fmt_value(q)} {mk.get(q.version, '')}".rstrip())
        style = None if p.status is Status.OK else (
            "dim" if p.status in (Status.MISSING, Status.INSTALL_FAILED) else "red")
        t.add_row(p.version, p.jaxlib or "-", p.date or "unknown", *cells, style=style)
    return t


def metric_lines(report: ReleaseReport) -> list[str]:
    """Per named metric: what it did, then each of its steps in words with its next commands."""
    from hourly.analysis.moved import Verdict
    out = []
    for m in report.metrics or []:
        mv = m.moved
        for st in m.steps:  # detection's steps and the crashes, with their tags and next commands
            lines = describe_step(st)
            out += [f"{m.name}: {lines[0]}", *lines[1:]]
        if mv.verdict == Verdict.UNCHANGED:
            out.append(f"{m.name}: unchanged: no step of ±{mv.bound * 100:.1f} % or more with {mv.side} or more "
                       f"releases on each side (noise ±{mv.noise * 100:.2g} % per release, {mv.points} releases)")
        elif mv.verdict != Verdict.MOVED:
            out.append(f"{m.name}: {mv.verdict}: {mv.why}")
    return out


def describe_step(st: ReleaseStep) -> list[str]:
    """A step in words: what changed, the releases, tags, commits, XLA pins, next commands."""
    if st.kind == "crash":
        head = f"✗ {st.after.status.value} from jax {st.after.version} on"
    else:
        head = (f"{mark(st)} {st.kind} ({st.level_before:.4g} → {st.level_after:.4g},"
                f" z={st.strength:.0f})")
    good, bad = ("last good", "first bad") if st.kind != "improvement" else ("before", "after")
    lines = [f"{head}: {good} jax {st.before.version} (jaxlib {st.before.jaxlib}, released "
             f"{st.before.date or 'unknown'}), {bad} jax {st.after.version} (jaxlib {st.after.jaxlib}, released "
             f"{st.after.date or 'unknown'})",
             f"  tags: {', '.join(st.tags)}"]
    f = st.facts
    if f.unknown:
        lines.append(f"  JAX commits between the tags and XLA pins: unknown ({f.unknown})")
    else:
        lines.append(f"  {f.commits} JAX commits between the tags; XLA pinned {f.xla_before or 'unknown'} → "
                     f"{f.xla_after or 'unknown'}")
    for cmd in st.commands:
        who = ("containers (nightly images)" if cmd.startswith("hourly nightly") else
               "JAX only (the same jaxlib on both sides)" if cmd.startswith("hourly bisect --only jax")
               else "sources (two repositories)")
        lines.append(f"  next, {who}:")
        lines.append(f"    {cmd}")
    return lines


def print_report(console: Console, report: ReleaseReport) -> None:
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    console.print(table(report))
    console.print(f"{status_counts(report.points, 'release')};"
                  f" {report.measured} measured now, the rest from {report.settings.workdir}"
                  + (f"; installer: {report.installer}" if report.installer and report.measured else ""), **kw)
    for p in report.points:
        if p.status is not Status.OK and p.detail:
            console.print(f"  jax {p.version}: {p.status.value}: {p.detail}", **kw)
    console.print(report.summary + (":" if report.steps and not report.gaps else ""), **kw)
    if report.metrics is not None:
        for line in metric_lines(report):
            console.print(f"  {line}", **kw)
    for st in report.steps if report.metrics is None else []:
        for line in describe_step(st):
            console.print(f"  {line}", **kw)
    if report.steps and report.undecided:
        console.print(f"more steps may hide: {report.undecided}", **kw)
    for g in report.gaps:
        inside = any(st.before is g.after and st.after is g.before for st in report.steps)
        console.print(f"  no measurement for {g.describe()}"
                      + ("; inside the step above, whose commands measure those days" if inside else
                         f"; the nightly containers of those days fill it:\n    {g.command}" if g.command else ""),
                      **kw)


# --------------------------------------------------------------------------------------------
# markdown (for `hourly report`)

def command_line(s: ReleaseSettings) -> str:
    """The `hourly releases` command that reproduces the stored results."""
    return options.command_line("releases", {
        "from_": s.from_, "to": s.to, "bench_cmd": s.bench_cmd, "repeats": s.repeats, "bench_cwd": s.bench_cwd or None,
        "metric_regex": s.metric_regex if s.metric_regex != DEFAULT_METRIC_REGEX else None,
        "higher_is_better": False if not s.higher_is_better else None,
        "extra": s.extra or None, "index_url": s.index_url or None, "find_links": s.find_links or None,
        "python": s.python or None, "jax_repo": s.jax_repo or None, "with_": s.with_,
        "deps_today": not s.deps_as_of_release,
        "metrics": s.metrics, "metric_samples": s.metric_samples if s.metric_samples != "last" else None,
        "warmup_samples": s.warmup_samples or None, "env": s.env, "pre": s.pre})


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def release_markdown(store: Store) -> list[str]:
    """The release level's section of the report; [] when the workdir has no release results."""
    return release_section(stored_releases(store) if store.load_settings(LEVEL) else None)


def release_section(report: ReleaseReport | None) -> list[str]:
    """The release level's section of the report from its stored results; [] without them."""
    if report is None:
        return []
    s = report.settings
    md = ["## Release level (`hourly releases`)", "",
          f"Released wheels from `{s.source().split(':', 1)[1]}`, benchmark `{s.bench_cmd}`, "
          f"{plural(s.repeats, 'run')} per release, "
          f"{'higher' if s.higher_is_better else 'lower'} is better.", ""]
    if report.metrics is not None:
        return md + _metrics_markdown(report, s)
    md += ["| jax | jaxlib | released | metric | step |", "|---|---|---|---|---|"]
    marks = {id(st.after): mark(st) for st in report.steps}
    for p in report.points:
        md.append(f"| {p.version} | {p.jaxlib or '-'} | {p.date or 'unknown'} | {_md(fmt_value(p))} | "
                  f"{marks.get(id(p), '')} |")
    md.append("")
    failed = [p for p in report.points if p.status is not Status.OK and p.detail]
    for p in failed:
        md.append(f"- jax {p.version}: {p.status.value} — {_md(p.detail or '')}")
    if failed:
        md.append("")
    if not report.steps:
        md.append("No step between releases was detected." if not (report.gaps or report.undecided)
                  else f"{_md(report.summary)}.")
        md.append("")
    for g in report.gaps:
        md.append(f"- no measurement for {_md(g.describe())}" + (f"; fill it with `{g.command}`" if g.command else ""))
    if report.gaps:
        md.append("")
    for st in report.steps:
        lines = describe_step(st)
        md.append(f"### {lines[0]}")
        md.append("")
        md.extend(f"- {line.strip()}" for line in lines[1:] if not line.strip().startswith("hourly "))
        if st.commands:
            md.append("")
            md.append("```sh")
            md.extend(st.commands)
            md.append("```")
        md.append("")
    md += ["Reproduce:", "", "```sh", command_line(s), "```", ""]
    return md


def _metrics_markdown(report: ReleaseReport, s: ReleaseSettings) -> list[str]:
    """The release level's section for several named metrics: one column each, what each did, each
    step with its next commands (``--metric``)."""
    metrics = report.metrics or []
    md = ["| jax | jaxlib | released | " + " | ".join(f"`{_md(m.name)}` ({'higher' if m.higher_is_better else 'lower'})"
                                                      for m in metrics) + " |",
          "|---|---|---|" + "---|" * len(metrics)]
    marks = [{st.after.version: mark(st) for st in m.steps} for m in metrics]
    for i, p in enumerate(report.points):
        cells = [f"{_md(fmt_value(m.points[i]))} {mk.get(p.version, '')}".rstrip() for m, mk in zip(metrics, marks, strict=True)]
        md.append(f"| {p.version} | {p.jaxlib or '-'} | {p.date or 'unknown'} | " + " | ".join(cells) + " |")
    md += ["", f"Per metric: {_md(report.summary)}.", ""]
    for line in metric_lines(report):
        md.append(f"    {line}" if line.startswith("    hourly ") else f"- {_md(line.strip())}")
    md += ["", "Reproduce:", "", "```sh", command_line(s), "```", ""]
    return md
