"""``hourly report``: a markdown file (and a PNG plot) ready to paste into a JAX/XLA issue, written
from a :class:`~hourly.report.data.ReportData` alone (hourly.report.gather reads the store, detects
the steps, lists the commits and captures the environment before a word is written)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hourly.analysis.detect import EdgeCheck, EdgeVerdict, percent
from hourly.analysis.steps import crash_windows, group_points, step_key
from hourly.answers import Answer, build_difference
from hourly.model import COMMIT_URLS, REPOS, PointResult, Step, cut_side
from hourly.render import markdown as esc
from hourly.render.environment import environment_lines
from hourly.render.explain import report_section as explained_section
from hourly.render.plot_text import drawable
from hourly.render.profile import report_section as profiles_section
from hourly.render.releases import release_section
from hourly.render.steps import bisect_command, unresolved
from hourly.report.data import Answers, CommitsByStep, ReportData, ScanData
from hourly.text.plurals import plural
from hourly.text.privacy import redact_word

if TYPE_CHECKING:
    from hourly.measure.settings import Settings


@dataclass
class ReportFiles:
    markdown: Path
    plot: Path | None


def link(repo: str, sha: str) -> str:
    if not all(c in "0123456789abcdef" for c in sha):  # --only jax: the pinned jaxlib, not a commit
        return f"{esc.code(sha)} (pinned)"
    return f"[`{sha[:12]}`]({COMMIT_URLS[repo].format(sha=sha)})"


def _commits_section(commits: CommitsByStep, step: Step) -> list[str]:
    lines = []
    for name in REPOS:
        old, new = getattr(step.before, name), getattr(step.after, name)
        if old == new:
            lines.append(f"- **{name}**: unchanged at {link(name, old)}")
            continue
        found = commits.get((name, old, new))
        if found is None:
            lines.append(f"- **{name}**: {link(name, old)} → {link(name, new)} (repository not available)")
            continue
        lines.append(f"- **{name}**: {link(name, old)} → {link(name, new)}, "
                     f"{plural(found.total, 'first-parent commit')}:")
        lines.append("")
        lines.append("  | commit | committed (UTC) | author | subject |")
        lines.append("  |---|---|---|---|")
        for c in found.shown:
            # a merged pull request by its own subject and author, as the culprit line and terminal name it
            lines.append(f"  | {link(name, c.sha)} | {c.committed} | {esc.cell(c.author)} | "
                         f"{esc.cell(esc.subject(c.known()))} |")
        if found.total > len(found.shown):
            lines.append(f"  | … | | | {found.total - len(found.shown)} more |")
        lines.append("")
    return lines


#: How each failed status is drawn in the plot's status strip: (row, marker, colour, words).
FAILURE_MARKERS = {
    "build_failed": (0, "x", "tab:gray", "build failed"),
    "crashed": (1, "v", "tab:red", "crashed"),
    "timeout": (1, "s", "tab:orange", "timed out"),
    "no_metric": (1, "o", "tab:purple", "no metric printed"),
}


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def culprit_label(answers: list[Answer], before: str, after: str) -> str | None:
    """``xla 69ce7f18 [XLA:GPU] Change priority fusion…`` for the bisected culprit whose commit
    landed between ``before`` and ``after`` (UTC labels), or None when none was bisected."""
    for a in answers:
        c = a.culprit
        if c and before < c.committer_time <= after:
            return f"{c.repo} {c.sha[:8]} {_short(esc.subject(c))}"
    return None


def answer_for(answers: list[Answer], before: str, after: str) -> Answer | None:
    """The finished bisection of the window ``before`` .. ``after`` (UTC labels): the one whose
    window it is, else the one whose culprit landed in it."""
    for a in answers:
        w = a.window
        if (w.good_time, w.bad_time) in ((before, after), (after, before)) and not a.error:
            return a
    for a in answers:
        c = a.culprit
        if c and before < c.committer_time <= after:
            return a
    return None


def culprit_line(answer: Answer | dict) -> str:
    """``- **culprit: jax [`sha`](link)** subject (by author, committed …)``, every outside word escaped;
    a bisection without a single commit says what range remains."""
    from hourly.render.bisect import CULPRIT_LABELS
    a = Answer.of(answer)
    c = a.culprit
    label = CULPRIT_LABELS.get(a.kind or "", "culprit")
    if not c and a.candidate:  # not confirmed on re-measurement: never a culprit
        c = a.candidate
        label = "candidate, not confirmed on re-measurement"
    elif not c:
        shown = ", ".join(f"`{sha[:12]}`" for sha in a.range)
        return (f"- no single culprit: the range {shown} remains ({esc.text(a.reason or 'untestable states')})"
                + (f"; next: {esc.text(a.next)}" if a.next else ""))
    merged = c.merged  # a pull request: its own subject and author, merged by this commit
    what, author = ("pull request ", merged[-1].author) if merged else ("", c.author)
    return (f"- **{label}: {c.repo} {what}[`{c.sha[:12]}`]({c.link})** {esc.text(esc.subject(c))} "
            f"(by {esc.text(author)}, {'merged' if merged else 'committed'} {c.committer_time})"
            + (f"; next: {esc.text(a.next)}" if a.unconfirmed else ""))


def _label_rows(labels: list[tuple], times: list[datetime]) -> list[tuple[int, bool]]:
    """(row, text to the right of its time?) per label, so that no two labels overlap: the width
    of a label is estimated from its length (8-point text on a 10-inch plot)."""
    t0, t1 = times[0], times[-1]
    total = (t1 - t0).total_seconds() or 1.0
    taken: list[list[tuple[float, float]]] = []
    out = []
    for t, text, _ in labels:
        x = (t - t0).total_seconds() / total
        w = 0.0065 * (len(text) + 2)
        left = x + w <= 1.02 or x - w < 0
        span = (x, x + w) if left else (x - w, x)
        free = next((i for i, spans in enumerate(taken)
                     if all(span[1] <= a or span[0] >= b for a, b in spans)), None)
        if free is None:
            free = len(taken)
            taken.append([])
        taken[free].append(span)
        out.append((free, left))
    return out


def plot(points: list[PointResult], steps: list[Step], path: Path, metric: str,
         answers: list[Answer] | None = None) -> Path:
    """The metric over time: the median line (broken at failed points), the repeats as dots, each
    step as a band labelled with its change and bisected culprit; failed points as distinct markers
    in a strip of their own under the data, so that they never hide a measurement."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    answers = answers or []
    times = [datetime.strptime(p.time, "%Y-%m-%dT%H:%M:%SZ") for p in points]
    failed = [(t, p) for t, p in zip(times, points, strict=True) if p.status in FAILURE_MARKERS]
    fig, (ax, strip) = plt.subplots(2, 1, sharex=True, figsize=(10, 5.2), dpi=110,
                                    gridspec_kw={"height_ratios": [6, 1]})
    ok = [(t, p) for t, p in zip(times, points, strict=True) if p.status == "ok" and p.value is not None]
    # values past 1e100 are drawn in units of a power of ten (near 1e308 the axis's own arithmetic
    # overflows: its span, its ticks)
    top = max((abs(v) for _, p in ok for v in (*p.samples, p.value) if v is not None), default=0.0)
    power = math.floor(math.log10(top)) if top > 1e100 and math.isfinite(top) else 0
    unit = 10.0 ** -power
    # the median line, one run of consecutive measured points at a time
    runs: list[list[tuple]] = [[]]
    for t, p in zip(times, points, strict=True):
        if p.status == "ok" and p.value is not None:
            runs[-1].append((t, p.value * unit))
        elif p.status in FAILURE_MARKERS and runs[-1]:
            runs.append([])
    for i, run in enumerate(r for r in runs if r):
        ax.plot([t for t, _ in run], [v for _, v in run], "-", color="tab:blue", lw=1.2,
                label="median" if i == 0 else None)
    if ok:
        xs = [t for t, p in ok for _ in p.samples]
        ys = [v * unit for _, p in ok for v in p.samples]
        ax.plot(xs, ys, ".", color="tab:blue", alpha=0.5, ms=4, label="repeats")
        medians = [p.value * unit for _, p in ok if p.value is not None]  # every ok point has one
        lo = min(ys + medians)
        hi = max(ys + medians)
        span = (hi - lo) or abs(hi) * 0.05 or 1.0
    else:
        ax.text(0.5, 0.5, "no successful measurement: every point failed (see the strip below)",
                transform=ax.transAxes, ha="center", va="center", fontsize=11, color="tab:red")
        ax.set_yticks([])
    labels = []  # (time, text, colour): each step's band and each crash window, with its culprit
    for st in steps:
        color = "tab:red" if st.kind.value == "regression" else "tab:green"
        t0, t1 = times[st.before_index], times[st.after_index]
        for a in (ax, strip):
            a.axvspan(t0, t1, color=color, alpha=0.2)
        culprit = culprit_label(answers, st.before.time, st.after.time)
        labels.append((t1, percent(st.change.relative_change) + (f"  {culprit}" if culprit else ""), color))
    for w in crash_windows(points):
        if w.kind != "crash":
            continue
        t0, t1 = times[w.before_index], times[w.after_index]
        for a in (ax, strip):
            a.axvspan(t0, t1, color="tab:purple", alpha=0.2)
        culprit = culprit_label(answers, w.before.time, w.after.time)
        labels.append((t1, "crash" + (f"  {culprit}" if culprit else ""), "tab:purple"))
    labels.sort(key=lambda x: x[0])
    rows = _label_rows(labels, times)
    for (t1, text, color), (row, left) in zip(labels, rows, strict=True):
        text, families = drawable(text)  # CJK, emoji: a font that has them, or a placeholder
        ax.text(t1, 0.97 - 0.085 * row, f" {text} ", transform=ax.get_xaxis_transform(), fontsize=8,
                color=color, va="top", ha="left" if left else "right", **({"family": families} if families else {}),
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": color, "alpha": 0.9, "lw": 0.5})
    if ok:  # headroom above the points for the rows of labels
        n_rows = 1 + max((r for r, _ in rows), default=-1) + 1
        ax.set_ylim(lo - 0.08 * span, hi + span * (0.1 + 0.15 * n_rows))
    _status_strip(strip, failed)
    ax.set_ylabel(metric if not power else f"{metric} (×1e{power})")
    ax.grid(alpha=0.3)
    strip.grid(alpha=0.3, axis="x")
    if ok:
        ax.legend(loc="lower left", fontsize=8)
    fig.autofmt_xdate()
    fig.subplots_adjust(left=0.08, right=0.85, top=0.97, bottom=0.17, hspace=0.06)
    fig.savefig(path)
    plt.close(fig)
    return path


def _status_strip(strip: Any, failed: list[tuple]) -> None:  # strip: a matplotlib Axes
    """The plot's status strip: one row for build failures, one for runs that failed."""
    shown = set()
    for t, p in failed:
        row, marker, color, words = FAILURE_MARKERS[p.status]
        strip.plot([t], [row], marker, color=color, ms=6, mfc="none" if marker == "o" else color,
                   label=None if words in shown else words)
        shown.add(words)
    strip.set_ylim(-0.7, 1.7)
    strip.set_yticks([0, 1], ["build", "run"], fontsize=8)
    if shown:
        strip.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
    else:
        strip.text(0.5, 0.5, "every point measured", transform=strip.transAxes, ha="center", va="center",
                   fontsize=8, color="tab:gray")
    strip.set_xlabel("time (UTC)")


def bisect_sections(answers: Answers) -> list[str]:
    """The culprit of every finished bisection under the current build, with its window and ends;
    then, apart, the answers measured under another build, each labelled with it."""
    md: list[str] = []
    if answers.current:
        only_candidates = all(a.unconfirmed for a in answers.current)
        md += ["## Bisected candidates, not confirmed" if only_candidates else "## Bisected culprits", ""]
        for a in answers.current:
            md += _answer_lines(a)
    if answers.others:
        md += ["## Answers measured under another build (not this report's)", "",
               "These bisections measured under another build or benchmark than the one this report shows: "
               "they answer for that build, not for the steps above (`hourly bisect` again bisects under this one).", ""]
        for label, a in _labelled(answers):
            md += _answer_lines(a, f"- measured under: {label}")
    return md


def other_measurements_section(data: ReportData) -> list[str]:
    """The measurements this workdir holds under another benchmark or build than the scan's: another
    hunt in the same workdir, which this report does not show (how to see it is said)."""
    if not data.other_measurements:
        return []
    idents = data.answers.idents if data.answers else {}
    key = data.answers.key if data.answers else None
    current = idents.get(key) if key else None
    md = ["## Measurements of another benchmark or build in this workdir", "",
          "This workdir also holds measurements that this report does not show: it reports the newest scan's "
          "benchmark and build alone. To report on one of these, run its `hourly scan` command again in this "
          "workdir (its stored measurements are reused, nothing is measured again), then `hourly report`.", ""]
    md += [f"- {build_difference(idents.get(k), current, k, esc.code)}: {plural(n, 'state')} measured"
           for k, n in data.other_measurements.items()]
    return md + [""]


def _labelled(answers: Answers) -> list[tuple[str, Answer]]:
    """Each answer of another build with what that build was (its parts that differ from the
    current one's)."""
    current = answers.idents.get(answers.key) if answers.key else None
    return [(build_difference(answers.idents.get(k), current, k, esc.code), a) for k, a in answers.others]


def _answer_lines(a: Answer, under: str | None = None) -> list[str]:
    """One bisection's answer: its window, the culprit (or range), how it was reached."""
    md = []
    w = a.window
    md.append(f"### {w.good_time} → {w.bad_time}" + (f": {esc.text(w.note)}" if w.note else "")
              + (f" (metric {esc.code(a.metric)})" if a.metric else ""))
    md.append("")
    if under:
        md.append(under)
    md.append(culprit_line(a))
    if a.blame:
        from hourly.render.bisect import BLAME_WORDS
        md.append(f"- blame (mixed pairs tested): {BLAME_WORDS.get(a.blame, a.blame)}")
    for side, pair in (("last_good", a.last_good), ("first_bad", a.first_bad)):
        if pair:
            md.append(f"- {side.replace('_', ' ')}: xla {link('xla', pair.xla)}, jax {link('jax', pair.jax)}")
    manual = a.manual
    if manual:  # hourly bisect --manual: a person's verdicts, nothing re-measured
        by = [p for p in a.probes if p.manual]
        md.append(f"- by hand (`hourly bisect --manual`): {plural(len(by), 'verdict')} given by a person, "
                  f"the ends {esc.text(manual.ends or 'taken as given')}; not re-measured")
        for p in by:
            md.append(f"  - {p.role} xla `{p.xla[:12]}` jax `{p.jax[:12]}`: {p.verdict} "
                      f"({esc.text(p.reason or '')})")
    md.append(f"- {plural(a.builds, 'build')}, {plural(a.runs, 'benchmark run')}"
              + (f" ({plural(a.run_samples, 'sample')} counted)" if a.run_samples else "")
              + (", confirmed by re-measuring both ends" if a.confirmed and not manual else ""))
    if a.sampling:  # what the verdicts cost, and how each process was sampled (docs/measuring.md)
        from hourly.render.bisect import sampling_words
        md.append(f"- cost: {esc.text(sampling_words(a.sampling))}")
    md.append("")
    return md


def plot_names(data: ReportData) -> list[str]:
    """The plots the report shows, first the one under its reproduction (none without a scan): the
    metric over time, or each named metric's that moved (the one metric's when there is one)."""
    scan = data.scan
    if scan is None:
        return []
    if scan.findings is None:
        return ["plot.png"] if scan.points else []
    return [f"plot-{_slug(f.metric.name)}.png" for f in _plotted(scan)]


def _plotted(scan: ScanData) -> list:
    """The named metrics drawn: each that moved, or the one metric there is."""
    found = scan.findings or []
    moved = [f for f in found if f.moved.steps]
    return [f for f in found if f in moved or len(found) == 1]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def write_report(data: ReportData, out_dir: Path | None = None) -> ReportFiles:
    """The report of ``data`` (hourly.report.gather.gather_report) in ``out_dir`` (default: the
    workdir's ``report`` folder): its plots and ``report.md``."""
    out_dir = Path(out_dir) if out_dir else data.workdir / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = _draw_plots(data, out_dir)
    path = out_dir / "report.md"
    path.write_text(markdown(data))
    return ReportFiles(path, plots[0] if plots else None)


def _draw_plots(data: ReportData, out_dir: Path) -> list[Path]:
    scan = data.scan
    if scan is None:
        return []
    answers = data.answers.current if data.answers else []
    if scan.findings is None:
        return [plot(scan.points, scan.steps, out_dir / name, scan.metric, answers) for name in plot_names(data)]
    return [plot(f.metric.points, f.moved.steps, out_dir / name, f.metric.name,
                 [a for a in answers if a.metric == f.metric.name])
            for f, name in zip(_plotted(scan), plot_names(data), strict=True)]


def markdown(data: ReportData) -> str:
    """The report's markdown; values of secret-looking variables redacted, and with
    ``data.anonymous`` no host name."""
    releases_md = release_section(data.releases)
    if data.scan is None and data.answers is not None:
        # `hourly bisect --good --bad` alone: its answers, never a scanned window it did not measure
        return "\n".join(_bisection_markdown(data, releases_md))
    if data.scan is None:  # the release level alone
        return "\n".join(["# Performance changes between JAX releases, found by hourly", "", *releases_md])
    if data.scan.findings is not None:  # every named metric (--metrics, the per-phase harness)
        return "\n".join(_per_metric_markdown(data, data.scan, releases_md))
    scan, s = data.scan, data.settings
    points, steps = scan.points, scan.steps
    answers = data.answers.current if data.answers else []
    min_change = data.min_change
    names = plot_names(data)
    md = [f"# Performance change{'s' if len(steps) != 1 else ''} found by hourly", ""]
    md += _gaps_section(scan, data.resume_command)
    md += _steps_sections(points, steps, data.commits, s, scan.metric, scan.edge_checks, answers, scan.pinned,
                          left_out=_left_out_line(scan.left_out, min_change, data.workdir)
                          if scan.left_out and min_change else None, scan=scan)
    md += _crash_section(scan, s, answers)
    md += _failed_section(points)
    md.extend(bisect_sections(data.answers or Answers([], [])))
    md.extend(other_measurements_section(data))
    md.extend(explained_section(data.explained))  # hourly explain's records, when it ran
    md.extend(releases_md)
    md += _reproduce_section(data, names[0] if names else None)
    return "\n".join(md)


def _per_metric_markdown(data: ReportData, scan: ScanData, releases_md: list[str]) -> list[str]:
    """The report of a scan that recorded several named metrics: what each did, in one table, then
    per metric its steps (each with its commits, its bisected culprit or the command that bisects
    it) and its plot."""
    from hourly.analysis.moved import Verdict
    from hourly.render.metrics import step_command
    s = data.settings
    points = scan.points
    found = scan.findings or []
    answers = data.answers.current if data.answers else []
    md = [f"# Performance change{'s' if sum(len(f.moved.steps) for f in found) != 1 else ''} found by hourly, "
          f"per metric", ""]
    md += _gaps_section(scan, data.resume_command)
    if points:
        md += [f"Scanned {points[0].time} → {points[-1].time} ({plural(len(points), 'instant')}, "
               f"{plural(len({(p.xla, p.jax) for p in points}), 'distinct (xla, jax) pair')}); every run recorded "
               f"{plural(len(found), 'named metric')}, each measured in the same runs of the same builds.", ""]
    md += ["| metric | better | what it did |", "|---|---|---|"]
    for f in found:
        m = f.moved
        if m.verdict == Verdict.MOVED:
            what = "; ".join(f"{st.kind.value} {percent(st.change.relative_change)} between {st.before.time} and "
                             f"{st.after.time}" for st in m.steps)
        elif m.verdict == Verdict.UNCHANGED:
            assert m.bound is not None
            what = (f"unchanged: no step of ±{m.bound * 100:.1f} % or more with {m.side} or more points on each side "
                    f"(noise ±{(m.noise or 0) * 100:.2g} % per point)")
        else:
            what = f"{m.verdict}: {esc.text(m.why or '')}"
        md.append(f"| {esc.code(f.metric.name)} | {'higher' if f.metric.higher_is_better else 'lower'} | {esc.cell(what)} |")
    md.append("")
    for f in found:
        name = f.metric.name
        mine = [a for a in answers if a.metric == name]
        md += [f"## {esc.text(name)}: {'higher' if f.metric.higher_is_better else 'lower'} is better", ""]
        if not f.moved.steps:
            md += [f"{esc.text(f.moved.short())}.", ""]
        else:
            md += _steps_sections(f.metric.points, f.moved.steps, data.commits, s, name, f.metric.edge_checks or {},
                                  mine, level="###", direction=f.metric.higher_is_better, intro=False)
            for st in f.moved.steps:
                if answer_for(mine, st.before.time, st.after.time) is None:
                    md += [f"Bisect the {percent(st.change.relative_change)} step of `{name}`:", "", "```sh",
                           step_command(st, name, s.workdir), "```", ""]
    md += _crash_section(scan, s, [a for a in answers if not a.metric])
    md += _failed_section(points)
    md.extend(bisect_sections(data.answers or Answers([], [])))
    md.extend(other_measurements_section(data))
    md.extend(explained_section(data.explained))
    md.extend(releases_md)
    names = plot_names(data)
    md += _reproduce_section(data, names[0] if names else None)
    for extra in names[1:]:
        md += [f"![{Path(extra).stem[5:]} over time]({extra})", ""]
    return md


def _bisection_markdown(data: ReportData, releases_md: list[str]) -> list[str]:
    """The report of a workdir that ``hourly bisect --good --bad`` made without a scan: the
    bisections' answers (of the current build; another build's apart), the ones not finished, and
    how to reproduce them — and, said first, that no scan was made, so nothing here is a table of
    steps or a plot of the metric over time (the scan command that would make one is named)."""
    from hourly.render.bisect import bisect_again_command, scan_window_command, unfinished_text
    s = data.settings
    split = data.answers or Answers([], [])
    unfinished = unfinished_text(data.unfinished, outside=esc.text)  # a stopped one's why: log paths, words
    answers = split.current
    windows = [(a.window.good_time, a.window.bad_time) for a in answers + [a for _, a in split.others]]
    title = ("Bisected by hourly" if answers else "Nothing bisected yet") + " (no scan in this workdir)"
    md = [f"# {title}", "",
          "No scan was made in this workdir: it holds `hourly bisect --good … --bad …` alone. The answers below "
          "are the bisections'; no series of the metric over time was measured, so this report has no table of "
          "steps and no plot, and says nothing of other changes in or around the windows bisected.", ""]
    if windows:
        md += ["A scan of the window measures that series (in this workdir, beside the bisections):", "",
               "```sh", scan_window_command(s, windows), "```", ""]
    if not answers:
        md += ["**No bisection of this build has finished in this workdir: there is no answer to report.**"
               + (" Answers measured under another build are listed apart below." if split.others else ""), ""]
    md.extend(bisect_sections(split))
    if unfinished:
        md += ["## Bisections not finished", "", *[f"- {line}" for line in unfinished], ""]
    md.extend(explained_section(data.explained))
    md.extend(releases_md)
    again = [bisect_again_command(a, s) for a in answers]
    how = ("The bisection" + ("s" if len(again) > 1 else "") + " (here, the same command prints the stored answer; "
           "with another `--workdir` it measures its window afresh):", again) if again else None
    tail = _reproduce_section(data, None, how) if how else _environment_section(data, None)
    if data.env_now:  # no scan recorded it: what --python holds now, not necessarily what was measured
        at = tail.index("## Environment") + 2
        tail[at:at] = ["Captured when this report was written (no scan recorded it): `--python` holds the state "
                       "last installed, not necessarily either end of a window.", ""]
    md += tail
    return md


def _left_out_line(left_out: list[Step], min_change: float, workdir: Path) -> str:
    """The steps smaller than ``--min-change`` that the report leaves out, each with its window, and
    the command that lists them."""
    each = "; ".join(f"{st.change.kind.value} {percent(st.change.relative_change)} between {st.before.time} "
                     f"and {st.after.time}" for st in left_out)
    return (f"{plural(len(left_out), 'step')} smaller than {min_change:.4g} ({min_change * 100:.4g} %, `--min-change "
            f"{min_change:g}`) {'is' if len(left_out) == 1 else 'are'} left out of this report: {esc.text(each)}. "
            f"`hourly report --workdir {esc.text(str(workdir))}` lists every step.")


def _steps_sections(points: list[PointResult], steps: list[Step], commits: CommitsByStep, s: Settings, metric: str,
                    checks: dict | None = None, answers: list[Answer] | None = None,
                    pinned: str | None = None, level: str = "##", direction: bool | None = None,
                    intro: bool = True, left_out: str | None = None, scan: ScanData | None = None) -> list[str]:
    """The scanned window, the table of steps, and one section per step with its commits (an edge
    step with what measuring it again said, ``checks``: hourly.scan.table.edge_checks; ``pinned``:
    what a one-repository hunt held, hourly.measure.pinned.pinned_line); ``level``: the steps'
    heading, ``direction``: the metric's (the settings' by default), ``intro``: the window's lines;
    ``scan``: why no step can be told, where none was found."""
    checks = checks or {}
    windows, gaps = (scan.windows, scan.gaps) if scan else ([], [])
    higher = s.higher_is_better if direction is None else direction
    md = []
    if points and intro:
        md.append(f"Scanned {points[0].time} → {points[-1].time} ({plural(len(points), 'instant')}, "
                  f"{plural(len({(p.xla, p.jax) for p in points}), 'distinct (xla, jax) pair')}), metric `{metric}` "
                  f"({'higher' if higher else 'lower'} is better).")
        md.append("")
        md.append("JAX and XLA paired by pin (each JAX commit with the XLA commit its pin names; `--pairing pin`)."
                  if getattr(s, "pairing", "time") == "pin" else
                  "JAX and XLA paired by time (the commits that stood at each instant; `--pairing time`).")
        if pinned:
            md += ["", esc.text(pinned) + "."]
    if intro:
        md.append("")
    if left_out:  # --min-change left steps out: the table is not every step the scan shows
        md.append(left_out if steps else "No step change at least as large as --min-change was detected; " + left_out)
    elif not steps and points and not any(p.status == "ok" for p in points):
        md.append("No point of the scan measured (each failed: the points that did not measure are listed "
                  "below), so no step can be told from it: fix the benchmark or the build, then run the scan again "
                  "with `--rerun`.")
    elif not steps and windows:
        md.append("No step change was detected in the measured values; the benchmark changes how it ends"
                  " (it crashes, or stops printing the metric): see the windows below.")
    elif not steps and gaps:
        md.append("No step change was detected in the part of the window measured so far; the scan is "
                  "**incomplete** (above), and a step may lie in what is not measured.")
    elif not steps and scan and scan.undecided:  # never "no step" from differences that may be the steps
        md.append(f"No step can be told from the noise yet: {esc.text(scan.undecided or '')}.")
    elif not steps and direction is None and (blind := _unresolved(scan)):  # nor below what the noise lets show
        md.append(f"No step can be told from the noise at 1 %: {esc.text(blind)}.")
    elif not steps:
        md.append("No step change was detected in the scanned window.")
    md.append("")
    md.append("| # | kind | before (UTC) | after (UTC) | metric before → after | change | points each side |")
    md.append("|---|---|---|---|---|---|---|")
    for i, st in enumerate(steps, 1):
        c, n = st.change, st.numbers()
        md.append(f"| {i} | {c.kind.value} | {st.before.time} | {st.after.time} | "
                  f"{n.levels()} | {percent(n.relative_change)}"
                  + (_edge_tag(checks.get(step_key(st))) if c.edge else "") + f" | {n.counts()} |")
    md.append("")
    for i, st in enumerate(steps, 1):
        c = st.change
        md.append(f"{level} {i}. {c.kind.value.capitalize()} of {percent(c.relative_change)} "
                  f"between {st.before.time} and {st.after.time}")
        md.append("")
        if c.edge:
            md.append(_edge_sentence(checks.get(step_key(st))))
            md.append("")
        n = st.numbers()
        md.append(f"- level {n.levels()}: medians of the scan's points on each side ({n.counts()})")
        md.append(f"- last point before: {st.before.time}, xla {link('xla', st.before.xla)}, "
                  f"jax {link('jax', st.before.jax)}, {_value(st.before)}")
        md.append(f"- first point after: {st.after.time}, xla {link('xla', st.after.xla)}, "
                  f"jax {link('jax', st.after.jax)}, {_value(st.after)}")
        bisected = answer_for(answers or [], st.before.time, st.after.time)
        if bisected:  # the answer where the step is, not only in the closing section
            md.append(culprit_line(bisected))
        md.append("")
        md.append("Commits in the window (first-parent, oldest first):")
        md.append("")
        md.extend(_commits_section(commits, st))
        md.append("")
    return md


def _edge_tag(check: EdgeCheck | None) -> str:
    if check is None or check.verdict is EdgeVerdict.UNMEASURED:
        return " (edge)"
    return f" (edge, {check.verdict.value})"


def _edge_sentence(check: EdgeCheck | None) -> str:
    """What an edge step is, and what measuring its pair and the neighbour again said."""
    if check is None or check.verdict is EdgeVerdict.UNMEASURED:
        failed = " Measuring it again failed." if check is not None else ""
        return f"Edge step: one pair on its side.{failed} Measure that pair again to confirm before bisecting."
    change_again = check.relative_change
    assert change_again is not None  # measured again (not UNMEASURED): check_edge sets the numbers
    again = (f"that pair and its neighbour measured again read {check.level_before:.4g} → {check.level_after:.4g}"
             f" ({percent(change_again)}; {check.samples_before} / {check.samples_after} samples)")
    if check.verdict is EdgeVerdict.CONFIRMED:
        return f"Edge step (one pair on its side), **confirmed**: {again}."
    if check.verdict is EdgeVerdict.REVERSED:
        return (f"Edge step (one pair on its side), **not confirmed, and not an outlier**: {again}, the other way."
                " One run per pair cannot read this step: scan again with more repeats before bisecting.")
    return (f"Edge step (one pair on its side), **not confirmed**: {again}. The scan's value was an outlier;"
            " there is nothing to bisect.")


def _unresolved(scan: ScanData | None) -> str | None:
    """Where a step of 1 % could not have shown through the scan's noise: the smallest that could,
    and the scan that measures each pair often enough (hourly.scan.resolution); None: it could."""
    line = unresolved(scan.resolution) if scan else None
    return None if line is None or scan is None else f"{line}; {scan.resolution_fix}"


def _gaps_section(scan: ScanData, command: str) -> list[str]:
    """An incomplete scan says so first: which instants are not measured, and the command that
    measures them (the same scan again resumes)."""
    if not scan.gaps:
        return []
    total = len({(p.xla, p.jax) for p in scan.points})
    md = ["## Incomplete scan", "",
          f"{scan.unmeasured} of {total} distinct (xla, jax) pairs of the window are not measured yet "
          "(the scan was interrupted or stopped early); nothing below speaks for them:", ""]
    for g in scan.gaps:
        span = g["from"] if g["from"] == g["to"] else f"{g['from']} → {g['to']}"
        md.append(f"- {span} ({plural(g['instants'], 'instant')}, {plural(g['pairs'], 'pair')})")
    md += ["", "Run the same scan again to measure them (it resumes; measured pairs are kept):", "",
           "```sh", command, "```", ""]
    return md


def _crash_section(scan: ScanData, s: Settings, answers: list[Answer] | None = None) -> list[str]:
    """Every window where the benchmark goes from running to crashing (or back), or stops printing
    its metric while still exiting 0 (or prints it again), with the command that bisects it, or
    the answer once it is bisected."""
    windows = scan.windows
    if not windows:
        return []
    md = ["## Crash windows and windows where the metric stops", ""]
    for w in windows:
        moved = ", ".join(f"{name} {link(name, getattr(w.before, name))} → {link(name, getattr(w.after, name))}"
                          for name in REPOS if getattr(w.before, name) != getattr(w.after, name))
        what = {"crash": (f"**crash** between {w.before.time} (runs) and {w.after.time} ({w.after.status})",
                          "Bisect it"),
                "fix": (f"**fix** between {w.before.time} ({w.before.status}) and {w.after.time} (runs again)",
                        "Find the commit that fixed it"),
                "metric_lost": (f"**metric lost** between {w.before.time} (printed) and {w.after.time} (runs, "
                                f"but prints no metric: {w.after.status})", "Bisect it by whether the metric is printed"),
                "metric_back": (f"**metric back** between {w.before.time} ({w.before.status}) and {w.after.time} "
                                "(printed again)", "Find the commit that brought it back")}[w.kind]
        bisected = answer_for(answers or [], w.before.time, w.after.time)
        if bisected:
            md.append(f"- {what[0]}; moved: {moved or 'nothing'}. Bisected:")
            md += ["", f"  {culprit_line(bisected)}", ""]
        else:
            md.append(f"- {what[0]}; moved: {moved or 'nothing'}. {what[1]}:")
            md += ["", "  ```sh", f"  {bisect_command(w, s.workdir)}", "  ```", ""]
    md.append("")
    return md


def _value(p: PointResult) -> str:
    """A point's own value as the scan measured it, with its sample count."""
    if p.value is None:
        return p.status
    if p.run_samples is not None:  # runs that printed many samples: each run's value is their median
        return f"{p.value:.4g} (median of {plural(len(p.samples), 'run')}' values, {plural(p.run_samples, 'sample')} in all)"
    return f"{p.value:.4g}" + (f" (median of {len(p.samples)} samples)" if len(p.samples) > 1 else "")


def _failed_section(points: list[PointResult]) -> list[str]:
    """The points that did not measure, consecutive instants of one pair together."""
    md = []
    failed = [p for p in points if p.status != "ok"]
    if failed:
        md.append("## Points that did not measure")
        md.append("")
        for g in group_points(points):
            p = g.point
            if p.status == "ok":
                continue
            when = p.time if g.first == g.last else f"{p.time} … {points[g.last].time}"
            md.append(f"- {when}: {p.status} (xla `{cut_side(p.xla, 12)}`, jax `{p.jax[:12]}`)"
                      + (f" — {esc.text(p.detail)}" if p.detail else ""))
        md.append("")
    return md


def _reproduce_section(data: ReportData, plot_name: str | None,
                       commands: tuple[str, list[str]] | None = None) -> list[str]:
    """How to reproduce the measurement (``commands``: what introduces them and the command lines;
    default: the stored scan's), the environment, the plot and any profiles."""
    s = data.settings
    said, lines = commands or ("The measurement (inside the nightly container, per pair):", [data.scan_command])
    md = ["## Reproduce", "", said, "", "```sh", *lines, "```", ""]
    bench = f"Benchmark command: {esc.code(redact_word(s.bench_cmd or ''))}" + \
        (f" in {esc.code(s.bench_cwd)}" if s.bench_cwd else "")
    if commands is None:  # the scan's runs per pair (a bisection's answer says its own runs)
        bench += (f", {plural(s.repeats, 'run')} per pair"
                  + (f" counted after {plural(s.warmup_runs, 'warm-up run')} of each freshly installed state "
                     "(recorded, not counted: a state's first run is slow)." if getattr(s, "warmup_runs", 0)
                     and s.mode != "exit" else "."))
    else:
        bench += "."
    md += [bench, ""]
    return md + _environment_section(data, plot_name)


def _environment_section(data: ReportData, plot_name: str | None) -> list[str]:
    """The environment, the plot and any profiles."""
    md = ["## Environment", ""]
    md.extend(environment_lines(data.env, data.anonymous))
    md.append("")
    if plot_name:
        md.append("## Plot")
        md.append("")
        md.append(f"![metric over time]({plot_name})")
        md.append("")
    md += profiles_section(data.profiles)
    return md
