"""``hourly report`` on a hunt workdir: the daily series with its plot and every window's answer,
as markdown ready to paste into a JAX/XLA issue."""

from __future__ import annotations

from pathlib import Path

from hourly.adapters.store import Store
from hourly.answers import HuntRow
from hourly.model import PointResult, Status
from hourly.render import markdown as esc
from hourly.render.report import ReportFiles, plot

#: the last hunt's answer rows, stored by hourly/hunt/run.py at the end of each run
ROWS = "hunt-rows"


def _cell(text: object) -> str:
    return esc.cell(text)


def write_hunt_report(store: Store, out_dir: Path | None = None) -> ReportFiles:
    from hourly.nightly.plan import stored_nightly
    out_dir = Path(out_dir) if out_dir else store.workdir / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    nightly = stored_nightly(store)
    rows = [HuntRow.from_json(r) for r in (store.load_settings(ROWS) or {}).get("steps", [])]
    s = nightly.settings
    points = [PointResult(f"{p.date}T00:00:00Z", p.xla or "-", p.jax or "-", p.status.value, p.value,
                          list(p.samples)) for p in nightly.points]
    plot_path = None
    if any(p.status is Status.OK for p in nightly.points):
        plot_path = plot(points, nightly.steps, out_dir / "plot.png",
                         "MLUPS" if "MLUPS" in s.metric_regex else "metric")
    md = [f"# {len(rows)} change{'s' if len(rows) != 1 else ''} hunted down by hourly", "",
          f"Nightly images {esc.code(s.image)} from {s.from_} to {s.to}, benchmark {esc.code(s.bench_cmd)}.", ""]
    if plot_path:
        md += [f"![daily series]({plot_path.name})", ""]
    md += ["| good day | bad day | kind | from | to | answer | builds | runs |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r.culprit
        if c:  # markdown made here, every outside word escaped: not passed through _cell again
            answer = f"{c.repo} [`{c.sha[:12]}`]({c.link}) {esc.cell(esc.subject(c))}"
        elif r.error:
            answer = f"not bisected: {esc.cell(r.error)}"
        else:
            answer = esc.text(r.reason or "")
            if r.range:
                answer = f"range of {len(r.range)} commits: " + ", ".join(f"`{x[:10]}`" for x in r.range) + ". " + answer
        md.append("| " + " | ".join([*(_cell(x) for x in (
            r.good_date, r.bad_date, r.kind, "-" if r.from_value is None else f"{r.from_value:.4g}",
            "-" if r.to_value is None else f"{r.to_value:.4g}")), answer, str(r.builds), str(r.runs)]) + " |")
    scanned = [(r, r.scan) for r in rows if r.scan]
    if scanned:
        md += ["", "Windows scanned inside the container before bisecting (`--scan-step`):", ""]
        md += [f"- {r.good_date} → {r.bad_date}: every {scan['step']} from {scan['from']} to "
               f"{scan['to']}, {scan['instants']} instants, {scan['pairs']} distinct pairs"
               for r, scan in scanned]
    entered = {(x["last_good"], x["first_bad"], x["kind"]) for r in rows for x in r.release or []}
    if entered:
        md += ["", "Entered at the release level: the days searched are those of "
               + ", ".join(f"jax {a} → {b} ({k})" for a, b, k in sorted(entered)) + "."]
    for r in rows:
        if r.environment:
            md += ["", f"## {r.good_date} → {r.bad_date}: what differs between the two images", "",
                   "| name | good | bad |", "|---|---|---|"]
            md += [f"| {_cell(d['name'])} | {_cell(d['good'] or '(unset)')} | {_cell(d['bad'] or '(unset)')} |"
                   for d in r.environment]
    explained = [(r, ex) for r in rows for ex in r.explained or []]
    if explained:  # hourly hunt --explain
        from hourly.render.explain import record_markdown
        md += ["", "## Explained", ""]
        for r, ex in explained:
            md += [f"{r.good_date} → {r.bad_date}:", ""] + record_markdown(ex)
    from hourly.render.releases import release_markdown
    releases_md = release_markdown(store)
    if releases_md:
        md += ["", *releases_md]
    md += ["", "## Daily level", "", "| date | image | xla | jax | status | value |", "|---|---|---|---|---|---|"]
    for p in nightly.points:
        md.append(f"| {p.date} | {esc.code(p.image, in_table=True)} | {(p.xla or '-')[:10]} | {(p.jax or '-')[:10]} | "
                  f"{p.status.value} | {'-' if p.value is None else f'{p.value:.4g}'} |")
    path = out_dir / "report.md"
    path.write_text("\n".join(md) + "\n")
    return ReportFiles(path, plot_path)
