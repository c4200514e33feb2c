"""What a person sees of ``hourly watch``: the terminal lines, the markdown alert to paste or post,
and the static page of a workdir (``<workdir>/watch/index.html``: a plot per metric with the
alerts and culprits marked, the tables, links to the hunts' reports) that opens from disk: no
server, no network, no script or style from elsewhere.

Text from outside (commit subjects, image names, reasons, logs) is data everywhere: escaped for
HTML with :func:`hourly.render.markdown.html_text`, for markdown with hourly/render/markdown.py,
printed verbatim on the console; in all three a control character or bidirectional override is
shown as its escape (``\x1b``, ``\u202e``), never acted on."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from rich.console import Console

from hourly.render import markdown as md
from hourly.render.console import command_line, print_wrapped
from hourly.watch.plan import PAGE_DIR, WatchReport, alert_json, in_series
from hourly.watch_records import Alert, Build, Check, HuntOutcome

ARROW = {"regression": "▼", "improvement": "▲"}


def _pct(x: Any) -> str:
    return "?" if x is None or not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:+.1%}"


def _num(x: Any) -> str:
    if x is None or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "-"
    return f"{x:.4g}"


def _sha(c: dict[str, Any] | None) -> str:
    return str((c or {}).get("sha", ""))[:12]


def source_line(report: WatchReport) -> str:
    w, lv = report.settings, report.settings.level
    what = {"containers": f"nightly images {lv.get('image')}",
            "wheels": f"nightly wheels on {lv.get('find_links') or lv.get('index_url') or 'https://pypi.org/simple'}",
            "commits": f"the history of {lv.get('xla_repo')} and {lv.get('jax_repo')} every {w.step}"}[w.source]
    if w.metrics is None:
        direction = "higher is better" if w.higher_is_better else "lower is better"
        series = f"{', '.join(report.metrics)} ({direction})"
    else:  # named metrics: each in its unit's direction
        series = ", ".join(f"{m} ({'higher' if w.direction_of(m) else 'lower'} is better)" for m in report.metrics) \
            or "every named metric, none printed yet"
    return f"hourly watch: {what}; {series}; workdir {w.workdir}"


def step_text(s: dict[str, Any]) -> str:
    """``MLUPS -20.0% (100 → 80), measured again over 10 interleaved pairs (-20.3% .. -19.8%)``."""
    return (f"{s['metric']} {_pct(s['change'])} ({_num(s['level_before'])} → {_num(s['level_after'])}), "
            f"measured again over {s['pairs']} interleaved pairs ({_pct(s['low'])} .. {_pct(s['high'])})")


def suspicion_text(c: Check) -> str:
    s, r = c.suspect, c.result or {}
    how = {"fit": "the detector's fit of the history", "newest": "the newest builds beyond their level"}.get(
        s.get("source") or "", s.get("source"))
    verdict = {"rejected": "not confirmed: any change is under the minimum change",
               "undecided": "not confirmed, not ruled out" + ("" if r.get("note") else ": unsure at the cap"),
               "pending": "being measured again"}.get(c.verdict, c.verdict)
    again = (f"; measured again over {r.get('pairs')} interleaved pairs: {_pct(r.get('change'))} "
             f"({_pct(r.get('low'))} .. {_pct(r.get('high'))})") if r else ""
    note = f" ({r['note']})" if r.get("note") else ""
    return (f"{c.metric} {_pct(s.get('relative_change'))} suspected on {c.arrived}'s arrival between "
            f"{c.before} and {c.after} ({how}, {s.get('strength', 0):.1f} standard errors){again}: "
            f"{verdict}{note}")


def decision_text(b: Build, report: WatchReport, why: bool = False) -> str:
    """What the arrival of ``b`` decided, per metric: ``MLUPS: quiet``, ``MLUPS: suspect → rejected``."""
    verdicts = {c.id: c.verdict for c in report.checks}
    out = []
    for m, d in (b.decision or {}).items():
        text = f"{m}: {d.get('status')}"
        checked = [verdicts.get(i, "?") for i in d.get("checks") or []]
        if checked:
            text += " → " + ", ".join(checked)
        if why and d.get("why"):
            text += f" ({d['why']})"
        out.append(text)
    return "; ".join(out)


def hunt_text(h: HuntOutcome | None) -> str:
    """The hunt's state in words: a culprit only when the hunt named one."""
    if h is None:
        return "hunt: not started yet"
    st = h.status
    if st == "culprit":
        c = h.culprit or {}
        return f"culprit: {c.get('repo')} {_sha(c)} {md.subject(c)} {c.get('link', '')}".rstrip()
    if st == "unsure":
        extra = f"; candidate {cand.get('repo')} {_sha(cand)}, not confirmed" if (cand := h.candidate) else ""
        return f"hunt ended unsure, no culprit: {h.reason}{extra}"
    if st == "failed":
        return f"hunt failed ({1 if h.tries is None else h.tries} tries): {h.reason}; log {h.log}"
    if st in ("submitted", "running"):
        return f"hunt running as Slurm job {h.job} (a later run reads its answer)"
    if st == "off":
        return "not hunted (--no-hunt); to hunt it: " + command_line(h.command or [])
    return f"not hunted: {h.reason}"


def print_report(con: Console, report: WatchReport) -> None:
    kw: dict[str, Any] = dict(soft_wrap=True, highlight=False, markup=False)
    con.print(source_line(report), **kw)
    run = report.run
    judged = [b for b in report.builds if in_series(b)]
    newest = judged[-1].build if judged else None
    if run.showed:
        con.print(f"{len(judged)} builds stored, newest {newest or 'none'} (--show: nothing looked for or measured)", **kw)
    elif run.nothing_new:
        con.print(f"nothing new since {newest or 'the start'}: no new build, nothing to judge or hunt", **kw)
    else:
        if run.new_builds:
            con.print(f"{len(run.new_builds)} new build(s): {', '.join(run.new_builds)}", **kw)
        if run.judged:
            con.print(f"judged on arrival: {', '.join(run.judged)}", **kw)
    for n in run.notes:
        print_wrapped(con, n)
    for b in report.builds[-12:]:
        cells = [b.build, b.status]
        for m in report.metrics:
            v = report.value(b.build, m)
            cells.append(f"{m} {_num((v or {}).get('value'))}")
        cells.append(decision_text(b, report) or ("not judged yet" if in_series(b) else ""))
        con.print("  " + "  ".join(c for c in cells if c), **kw)
    doubts = report.suspected_not_confirmed
    if doubts:
        con.print("suspected, not confirmed (no alert):", **kw)
        for c in doubts:
            print_wrapped(con, "  " + suspicion_text(c))
    if report.alerts:
        con.print("alerts:", **kw)
    for a in report.alerts:
        j = alert_json(a, report)
        new = " (new)" if a.id in run.new_alerts else ""
        head = f"{ARROW.get(j['kind'], '')} alert {a.id}{new}: {j['kind']} between {a.before} and {a.after}"
        con.print(head, **kw)
        for s in j["steps"]:
            print_wrapped(con, "    " + step_text(s))
        print_wrapped(con, "    " + hunt_text(a.hunt))
        if a.recovery:
            r = a.recovery
            con.print(f"    already recovered at {r['build']} ({r['metric']} {_num(r['level'])}, "
                      f"{_pct(r['relative_to_before'])} from the level before)", **kw)
    for line in report.unsure():
        print_wrapped(con, "not sure: " + line)
    for f in run.notify_failures:
        print_wrapped(con, "notify failed: " + f)


# --------------------------------------------------------------------------------------------
# the markdown alert

def alert_markdown(a: Alert, report: WatchReport) -> str:
    """One alert as markdown to paste into an issue or post to a channel; every outside word escaped."""
    j = alert_json(a, report)
    title = ", ".join(f"{s['metric']} {_pct(s['change'])}" for s in j["steps"])
    lines = [f"### hourly watch: {j['kind']} ({md.text(title)}) between {md.code(a.before)} and {md.code(a.after)}",
             "", "| metric | before | after | change | interval | pairs |", "|---|---|---|---|---|---|"]
    for s in j["steps"]:
        lines.append(f"| {md.cell(s['metric'])} | {_num(s['level_before'])} | {_num(s['level_after'])} | "
                     f"{_pct(s['change'])} | {_pct(s['low'])} .. {_pct(s['high'])} | {s['pairs']} |")
    lines += ["", "Confirmed by measuring both builds again, interleaved (before, after, before, after, ...); "
                  "the change and its interval are those of the fresh runs.", ""]
    for side in ("before", "after"):
        b = j[side]
        what = ", ".join(f"{k} {md.code(v)}" for k, v in b.items() if k not in ("build", "time") and v)
        lines.append(f"- **{side}**: {md.code(b['build'])}" + (f" ({what})" if what else ""))
    h = a.hunt
    if h is not None and h.status == "culprit":
        c = h.culprit or {}
        lines.append(f"- **culprit**: {md.text(c.get('repo'))} [{md.code(_sha(c))}]({c.get('link', '')}) "
                     f"{md.text(md.subject(c))}")
    elif h is not None:
        lines.append(f"- **hunt**: {md.text(hunt_text(h))}")
    else:
        lines.append("- **hunt**: not started yet")
    if a.recovery:
        r = a.recovery
        lines.append(f"- **already recovered** at {md.code(r['build'])} ({_pct(r['relative_to_before'])} "
                     "from the level before)")
    return "\n".join(lines) + "\n"


def notify_payload(a: Alert, report: WatchReport) -> dict[str, Any]:
    """What ``--notify-cmd`` reads on its stdin: the alert's JSON, its markdown and the page."""
    return {**alert_json(a, report), "markdown": alert_markdown(a, report),
            "page": str(page_dir(report) / "index.html")}


# --------------------------------------------------------------------------------------------
# the page


def page_dir(report: WatchReport) -> Path:
    return Path(report.settings.workdir).expanduser().absolute() / PAGE_DIR


def _file_name(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", metric) or "metric"


def plot_parts(report: WatchReport, metric: str) -> dict[str, Any]:
    """What the plot of ``metric`` draws, by build position (pure): ``line`` (position, median) of
    every build whose value stands; ``rejected`` (position, median) of the builds whose suspected
    step measuring again rejected (drawn apart, a marker off the line: a slow night is not the
    level); ``undecided`` (position, median) of those neither confirmed nor ruled out (on the line,
    ringed); ``bands`` (from, to, alert, kind, change) of each confirmed step of this metric: the
    step's own two builds, not the alert's whole window (an alert may hold other metrics' steps)."""
    builds = [b for b in report.builds if in_series(b)]
    pos = {b.build: i for i, b in enumerate(builds)}

    def at(build: str) -> tuple[int, float] | None:
        v = (report.value(build, metric) or {}).get("value")
        return (pos[build], float(v)) if build in pos and v is not None else None

    mine = [c for c in report.checks if c.metric == metric]
    # a build another check confirmed as the step's new level stands, whatever an earlier check said
    confirmed_at = {c.after for c in mine if c.verdict == "confirmed"}
    rejected_at = {c.after for c in mine if c.verdict == "rejected"} - confirmed_at
    undecided_at = {c.after for c in mine if c.verdict == "undecided"} - confirmed_at - rejected_at
    line = [p for b in builds if b.build not in rejected_at and (p := at(b.build)) is not None]
    bands = []
    for a in report.alerts:
        j = alert_json(a, report)
        for s in j["steps"]:
            if s["metric"] == metric and s["before"] in pos and s["after"] in pos:
                bands.append((pos[s["before"]], pos[s["after"]], a, j["kind"], s["change"]))
    return {"builds": builds, "line": line, "bands": bands,
            "rejected": sorted(p for b in rejected_at if (p := at(b)) is not None),
            "undecided": sorted(p for b in undecided_at if (p := at(b)) is not None),
            "failed": [i for i, b in enumerate(builds) if b.status not in ("ok",)]}


def plot_unit(values: list[float]) -> tuple[float, str]:
    """What the plot divides the values by, and the words its axis says it with: a power of ten
    that brings values past 1e150 near 1 ("× 1e308"), since values near the float's limit have no
    span, no room past them and no ticks that fit a float (matplotlib cannot draw them); else 1."""
    import math

    from hourly.analysis.detect import OVERFLOW_GUARD
    top = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    if top <= OVERFLOW_GUARD:
        return 1.0, ""
    e = math.floor(math.log10(top))
    return 10.0 ** e, f" (× 1e{e})"


def plot_figure(report: WatchReport, metric: str) -> Any:
    """The metric over the builds (a matplotlib figure; :func:`plot_parts` says what is where):
    each build's median (the line) and runs (dots); a night whose suspected step measuring again
    rejected as a grey ring off the line, one neither confirmed nor ruled out ringed in orange on
    it; failed builds as crosses in a strip at the bottom; each confirmed step's two builds shaded
    (red a regression, green an improvement) and labelled with its alert, change and culprit. The
    legend under the plot says what each mark is."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from hourly.render.plot_text import drawable
    parts = plot_parts(report, metric)
    values = {b.build: report.value(b.build, metric) or {} for b in parts["builds"]}
    unit, unit_words = plot_unit([y for _, y in parts["line"] + parts["rejected"]]
                                 + [float(x) for v in values.values() for x in v.get("samples") or [] if x is not None])
    if unit != 1.0:  # values near 1e308: drawn in that unit (the axis says which)
        parts = dict(parts, **{k: [(x, y / unit) for x, y in parts[k]] for k in ("line", "rejected", "undecided")})
    builds = parts["builds"]
    xs = list(range(len(builds)))
    fig, ax = plt.subplots(figsize=(10, 4.2), dpi=100)
    handles: list[Any] = []
    rejected = {i for i, _ in parts["rejected"]}
    for i, b in enumerate(builds):
        v = values[b.build]
        samples = [float(s) / unit for s in v.get("samples") or [] if s is not None]
        if samples:
            ax.plot([i] * len(samples), samples, ".", color="tab:gray" if i in rejected else "tab:blue",
                    alpha=0.5, ms=4)
    every = [y for _, y in parts["line"] + parts["rejected"]]
    if parts["line"]:
        (h,) = ax.plot([x for x, _ in parts["line"]], [y for _, y in parts["line"]], "-", color="tab:blue", lw=1.4)
        handles.append((h, f"{drawable(metric)[0]}: each build's median (dots: runs)"))
    if every:
        lo, hi = min(every), max(every)
        span = (hi - lo) or abs(hi) * 0.05 or 1.0
        ax.set_ylim(lo - 0.25 * span, hi + 0.45 * span)
    else:
        ax.text(0.5, 0.5, "no build measured yet", transform=ax.transAxes, ha="center", va="center")
    if parts["rejected"]:
        (h,) = ax.plot([x for x, _ in parts["rejected"]], [y for _, y in parts["rejected"]], "o", mfc="none",
                       mec="tab:gray", ms=11, mew=1.5, ls="none")
        handles.append((h, "suspected, rejected when measured again"))
    if parts["undecided"]:
        (h,) = ax.plot([x for x, _ in parts["undecided"]], [y for _, y in parts["undecided"]], "o", mfc="none",
                       mec="tab:orange", ms=11, mew=1.5, ls="none")
        handles.append((h, "suspected, not confirmed nor ruled out"))
    if parts["failed"]:
        (h,) = ax.plot(parts["failed"], [ax.get_ylim()[0]] * len(parts["failed"]), "x", color="tab:red", ms=8,
                       ls="none", clip_on=False)
        handles.append((h, "failed build"))
    kinds = set()
    for row, (x0, x1, a, kind, change) in enumerate(parts["bands"]):
        color = "tab:red" if kind == "regression" else "tab:green"
        ax.axvspan(x0, x1, color=color, alpha=0.2)
        kinds.add(kind)
        hunt = a.hunt
        label = f"alert {a.id}: {_pct(change)}"
        if hunt is not None and hunt.status == "culprit":
            label += f"  {(hunt.culprit or {}).get('repo')} {_sha(hunt.culprit)[:8]}"
        elif hunt is not None and hunt.status == "unsure":
            label += "  hunt unsure"
        text, families = drawable(label)
        font: dict[str, Any] = {"family": families} if families else {}
        right = x1 > 0.6 * max(len(builds) - 1, 1)  # near the right edge: the label to the band's left, inside
        ax.text(x0 if right else x1, 0.97 - 0.09 * (row % 4), f" {text} ", transform=ax.get_xaxis_transform(),
                fontsize=8, color=color, va="top", ha="right" if right else "left", **font,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": color, "alpha": 0.9, "lw": 0.5})
    for kind in ("regression", "improvement"):
        if kind in kinds:
            color = "tab:red" if kind == "regression" else "tab:green"
            handles.append((Patch(color=color, alpha=0.2), f"confirmed {kind} (the step's two builds)"))
    step = max(1, len(builds) // 12)
    ax.set_xticks(xs[::step])
    # whole up to a commit time's 20 characters (a nightly wheel's version ends with its date)
    ax.set_xticklabels([builds[i].build[:24] for i in xs[::step]], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(drawable(metric)[0] + unit_words)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if handles:  # under the plot, across: it hides no build
        fig.subplots_adjust(bottom=fig.subplotpars.bottom + 0.08 * ((len(handles) + 2) // 3))
        fig.legend([h for h, _ in handles], [t for _, t in handles], loc="lower center", ncol=min(3, len(handles)),
                   fontsize=8, frameon=False)
    return fig


def plot_metric(report: WatchReport, metric: str, path: Path) -> Path:
    """:func:`plot_figure` as a PNG at ``path``, written whole (a temporary name, then renamed)."""
    import matplotlib.pyplot as plt
    fig = plot_figure(report, metric)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def _e(x: object) -> str:
    return md.html_text(x)


def _rel(path: str | Path | None, base: Path) -> str | None:
    """A link from the page to ``path`` (relative: the folder can be moved or copied whole)."""
    if not path:
        return None
    p = Path(path)
    if not p.exists():
        return None
    return os.path.relpath(p, base)


def _links(a: Alert, base: Path) -> list[tuple[str, str]]:
    out = [("markdown alert", f"alert-{a.id}.md")]
    wd = Path(a.hunt.workdir) if a.hunt is not None and a.hunt.workdir else None
    if wd is not None:
        for label, p in (("hunt report", wd / "report" / "report.md"), ("hunt answer", wd / "answer.json"),
                         ("hunt log", wd / "hunt.log")):
            rel = _rel(p, base)
            if rel:
                out.append((label, rel))
    return out


def page_html(report: WatchReport, plots: dict[str, str], base: Path) -> str:
    """The page: the summary, a plot per metric, the alerts (steps, hunt, recovery, links), the
    suspicions not confirmed with their evidence, and the builds."""
    run = report.run
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>hourly watch: {_e(report.settings.workdir)}</title>",
             "<style>body{font-family:DejaVu Sans,Arial,sans-serif;margin:16px;color:#222;background:#fff}"
             "h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:18px 0 6px}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
             ".plot{display:block;width:1000px;height:420px;border:1px solid #ddd}"
             ".regression{color:#b00}.improvement{color:#070}.muted{color:#666}code{font-size:12px}</style>",
             "</head><body>", "<h1>hourly watch</h1>"]
    # the plots first, right under the one-line title: where a screenshot finds them
    for metric in report.metrics:
        src = plots.get(metric)
        if src:
            parts.append(f'<img class="plot" id="plot-{_e(_file_name(metric))}" src="{_e(src)}" '
                         f'alt="{_e(metric)} over the builds" width="1000" height="420" '
                         'onload="this.setAttribute(\'data-loaded\', this.naturalWidth)">')
    parts.append(f'<p class="muted">{_e(source_line(report))}</p>')
    judged = [b for b in report.builds if in_series(b)]
    summary = (f"{len(judged)} builds, newest {_e(judged[-1].build) if judged else 'none'}; "
               f"{len(report.alerts)} alert(s), {len(report.suspected_not_confirmed)} suspicion(s) not confirmed")
    if not run.showed:
        summary += "; last run: " + ("nothing new" if run.nothing_new else
                                     f"{len(run.new_builds)} new build(s), {len(run.new_alerts)} new alert(s)")
    parts.append(f"<p>{summary}</p>")
    unsure = report.unsure()
    if unsure:
        parts.append("<h2>Not sure</h2><ul>" + "".join(f"<li>{_e(u)}</li>" for u in unsure) + "</ul>")
    parts.append("<h2>Alerts</h2>")
    if not report.alerts:
        parts.append("<p>none</p>")
    for a in reversed(report.alerts):
        j = alert_json(a, report)
        parts.append(f'<div class="alert" id="alert-{a.id}"><h3 class="{_e(j["kind"])}">'
                     f'{_e(ARROW.get(j["kind"], ""))} alert {a.id}: {_e(j["kind"])} between '
                     f'<code>{_e(a.before)}</code> and <code>{_e(a.after)}</code></h3><ul>')
        for s in j["steps"]:
            parts.append(f"<li>{_e(step_text(s))}</li>")
        h = a.hunt
        if h is not None and h.status == "culprit":
            c = h.culprit or {}
            link = str(c.get("link") or "")
            href = f' href="{_e(link)}"' if link.startswith("https://") else ""
            parts.append(f"<li><b>culprit</b>: {_e(c.get('repo'))} <a{href}><code>{_e(_sha(c))}</code></a> "
                         f"{_e(md.subject(c))}</li>")
        else:
            parts.append(f"<li>{_e(hunt_text(h))}</li>")
        if a.recovery:
            r = a.recovery
            parts.append(f"<li>already recovered at <code>{_e(r['build'])}</code> "
                         f"({_e(_pct(r['relative_to_before']))} from the level before)</li>")
        links = " · ".join(f'<a href="{_e(href)}">{_e(label)}</a>' for label, href in _links(a, base))
        parts.append(f"<li>{links}</li></ul></div>")
    parts.append("<h2>Suspected, not confirmed</h2>")
    doubts = report.suspected_not_confirmed
    parts.append("<ul>" + "".join(f"<li>{_e(suspicion_text(c))}</li>" for c in doubts) + "</ul>" if doubts
                 else "<p>none</p>")
    head = "".join(f"<th>{_e(m)}</th>" for m in report.metrics)
    parts.append(f"<h2>Builds</h2><table><tr><th>build</th><th>status</th>{head}<th>on arrival</th><th>what</th></tr>")
    for b in reversed(report.builds):
        cells = []
        for m in report.metrics:
            v = report.value(b.build, m) or {}
            samples = v.get("samples") or []
            cells.append(f"<td>{_e(_num(v.get('value')))}" + (f" <span class=\"muted\">({len(samples)} runs)</span>"
                                                             if len(samples) > 1 else "") + "</td>")
        decided = decision_text(b, report, why=True)
        ident = ", ".join(f"{k} {str(v)[:40]}" for k, v in (b.ident or {}).items() if v)
        detail = f" {b.detail}" if b.detail else ""
        parts.append(f"<tr><td><code>{_e(b.build)}</code></td><td>{_e(b.status)}{_e(detail)}</td>"
                     f"{''.join(cells)}<td>{_e(decided)}</td><td class=\"muted\">{_e(ident)}</td></tr>")
    parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_page(report: WatchReport) -> Path:
    """``<workdir>/watch/index.html``, a PNG per metric and ``alert-<id>.md`` per alert, each file
    written whole (a temporary name, then renamed): the page opens from disk."""
    base = page_dir(report)
    base.mkdir(parents=True, exist_ok=True)
    plots = {}
    for m in report.metrics:
        name = f"{_file_name(m)}.png"
        plot_metric(report, m, base / name)
        plots[m] = name
    for a in report.alerts:
        _write(base / f"alert-{a.id}.md", alert_markdown(a, report))
    page = base / "index.html"
    _write(page, page_html(report, plots, base))
    return page


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(text)
    os.replace(tmp, path)
