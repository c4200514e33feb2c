"""``hourly report``: a markdown file (and a PNG plot) ready to paste into a JAX/XLA issue."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import environment
from .config import Settings
from .gitrepo import COMMIT_URLS, GitRepo
from .model import REPOS, PointResult, Step
from .detect import percent
from .privacy import redact_assignments
from .scan import show
from .steps import find_steps, group_points
from .store import Store
from .words import plural

MAX_COMMITS = 50


@dataclass
class ReportFiles:
    markdown: Path
    plot: Path | None


def link(repo: str, sha: str) -> str:
    if not all(c in "0123456789abcdef" for c in sha):  # --only jax: the pinned jaxlib, not a commit
        return f"`{sha}` (pinned)"
    return f"[`{sha[:12]}`]({COMMIT_URLS[repo].format(sha=sha)})"


def scan_command(s: Settings) -> str:
    """The `hourly scan` command line that reproduces the stored measurement."""
    argv = ["hourly", "scan", "--from", s.from_ or "", "--to", s.to or "", "--tz", s.tz, "--step", s.step,
            "--xla-repo", s.xla_repo, "--jax-repo", s.jax_repo, "--ref", s.ref,
            "--build-cmd", s.build_cmd, "--bench-cmd", s.bench_cmd or "", "--repeats", str(s.repeats),
            "--metric-regex", s.metric_regex]
    if not s.first_parent:
        argv.append("--no-first-parent")
    if s.only:  # a one-repository hunt: what stayed put is part of the reproduction
        argv += ["--only", s.only] + (["--jax-ref", s.jax_ref] if s.jax_ref else [])
        if s.only == "jax":
            argv[argv.index("--xla-repo"):argv.index("--xla-repo") + 2] = []
    if s.bench_cwd:
        argv += ["--bench-cwd", s.bench_cwd]
    for e in redact_assignments(s.env):
        argv += ["--env", e]
    return shlex.join(argv)


def _commits_section(repos: dict[str, GitRepo | None], step: Step) -> list[str]:
    lines = []
    for name in REPOS:
        old, new = getattr(step.before, name), getattr(step.after, name)
        if old == new:
            lines.append(f"- **{name}**: unchanged at {link(name, old)}")
            continue
        repo = repos.get(name)
        if repo is None:
            lines.append(f"- **{name}**: {link(name, old)} → {link(name, new)} (repository not available)")
            continue
        commits = repo.log(old, new)
        lines.append(f"- **{name}**: {link(name, old)} → {link(name, new)}, "
                     f"{plural(len(commits), 'first-parent commit')}:")
        lines.append("")
        lines.append("  | commit | committed (UTC) | author | subject |")
        lines.append("  |---|---|---|---|")
        for c in reversed(commits[:MAX_COMMITS]):
            when = datetime.fromtimestamp(c.committer_time, timezone.utc).strftime("%Y-%m-%d %H:%M")
            subject = c.subject.replace("|", "\\|")
            lines.append(f"  | {link(name, c.sha)} | {when} | {c.author} | {subject} |")
        if len(commits) > MAX_COMMITS:
            lines.append(f"  | … | | | {len(commits) - MAX_COMMITS} more |")
        lines.append("")
    return lines


def _open_repos(s: Settings) -> dict[str, GitRepo | None]:
    out: dict[str, GitRepo | None] = {}
    for name, path in (("xla", s.xla_repo), ("jax", s.jax_repo)):
        try:
            out[name] = GitRepo(path, name)
        except Exception:  # noqa: BLE001 - a report is still useful without the commit lists
            out[name] = None
    return out


def plot(points: list[PointResult], steps: list[Step], path: Path, metric: str) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [datetime.strptime(p.time, "%Y-%m-%dT%H:%M:%SZ") for p in points]
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=110)
    ok = [(t, p) for t, p in zip(times, points) if p.status == "ok" and p.value is not None]
    if ok:
        ax.plot([t for t, _ in ok], [p.value for _, p in ok], "-", color="tab:blue", lw=1.2, label="median")
        xs = [t for t, p in ok for _ in p.samples]
        ys = [v for _, p in ok for v in p.samples]
        ax.plot(xs, ys, ".", color="tab:blue", alpha=0.5, ms=4, label="repeats")
    failed = [(t, p) for t, p in zip(times, points) if p.status != "ok"]
    if failed:
        low = min((p.value for _, p in ok), default=0.0)
        ax.plot([t for t, _ in failed], [low] * len(failed), "x", color="tab:red", ms=7,
                label="failed (" + ", ".join(sorted({p.status for _, p in failed})) + ")")
    for st in steps:
        color = "tab:red" if st.kind.value == "regression" else "tab:green"
        ax.axvspan(times[st.before_index], times[st.after_index], color=color, alpha=0.2)
        ax.annotate(percent(st.change.relative_change), (times[st.after_index], st.change.level_after),
                    textcoords="offset points", xytext=(4, 6), fontsize=8, color=color)
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def bisect_sections(store: Store) -> list[str]:
    """The culprit of every finished bisection, with its window and ends."""
    answers = store.bisection_results()
    if not answers:
        return []
    md = ["## Bisected culprits", ""]
    for a in answers:
        w = a.get("window", {})
        md.append(f"### {w.get('good_time')} → {w.get('bad_time')}" + (f": {w['note']}" if w.get("note") else ""))
        md.append("")
        c = a.get("culprit")
        if c:
            md.append(f"- **culprit: {c['repo']} [`{c['sha'][:12]}`]({c['link']})** {c['subject']} "
                      f"(by {c.get('author')}, committed {c.get('committer_time')})")
        else:
            shown = ", ".join(f"`{sha[:12]}`" for sha in a.get("range", []))
            md.append(f"- no single culprit: the range {shown} remains ({a.get('reason') or 'untestable states'})")
        if a.get("blame"):
            md.append(f"- blame: {a['blame']}")
        for side in ("last_good", "first_bad"):
            pair = a.get(side)
            if pair:
                md.append(f"- {side.replace('_', ' ')}: xla {link('xla', pair['xla'])}, jax {link('jax', pair['jax'])}")
        md.append(f"- {plural(a.get('builds', 0), 'build')}, {plural(a.get('runs', 0), 'benchmark run')}"
                  + (", confirmed by re-measuring both ends" if a.get("confirmed") else ""))
        md.append("")
    return md


def write_report(store: Store, s: Settings, out_dir: Path | None = None,
                 min_change: float | None = None, anonymous: bool = False) -> ReportFiles:
    """The report; values of secret-looking variables are redacted, and ``anonymous`` leaves out
    the host name."""
    from .releases_render import release_markdown
    out_dir = Path(out_dir) if out_dir else store.workdir / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    releases_md = release_markdown(store)
    if releases_md and not store.points("hourly"):  # the release level alone
        path = out_dir / "report.md"
        path.write_text("\n".join(["# Performance changes between JAX releases, found by hourly", "",
                                   *releases_md]))
        return ReportFiles(path, None)
    points = show(store, s).points
    ok = [p for p in points if p.status == "ok"]
    steps = find_steps(points, s.higher_is_better, min_change)[0] if ok else []
    metric = "metric"
    if "MLUPS" in s.metric_regex:
        metric = "MLUPS"
    plot_path = plot(points, steps, out_dir / "plot.png", metric) if points else None
    repos = _open_repos(s)
    env = store.load_settings("environment") or environment.capture(s.python, s.env_dict())

    md = [f"# Performance change{'s' if len(steps) != 1 else ''} found by hourly", ""]
    md += _steps_sections(points, steps, repos, s, metric)
    md += _failed_section(points)
    md.extend(bisect_sections(store))
    md.extend(releases_md)
    md += _reproduce_section(s, env, plot_path, store.workdir, anonymous)
    path = out_dir / "report.md"
    path.write_text("\n".join(md))
    return ReportFiles(path, plot_path)


def _steps_sections(points: list[PointResult], steps: list[Step], repos, s: Settings, metric: str) -> list[str]:
    """The scanned window, the table of steps, and one section per step with its commits."""
    md = []
    if points:
        md.append(f"Scanned {points[0].time} → {points[-1].time} ({plural(len(points), 'instant')}, "
                  f"{plural(len({(p.xla, p.jax) for p in points}), 'distinct (xla, jax) pair')}), metric `{metric}` "
                  f"({'higher' if s.higher_is_better else 'lower'} is better).")
    md.append("")
    if not steps:
        md.append("No step change was detected in the scanned window.")
    md.append("")
    md.append("| # | kind | before (UTC) | after (UTC) | metric before → after | change |")
    md.append("|---|---|---|---|---|---|")
    for i, st in enumerate(steps, 1):
        c = st.change
        md.append(f"| {i} | {c.kind.value} | {st.before.time} | {st.after.time} | "
                  f"{c.level_before:.4g} → {c.level_after:.4g} | {percent(c.relative_change)}"
                  + (" (edge)" if c.edge else "") + " |")
    md.append("")
    for i, st in enumerate(steps, 1):
        c = st.change
        md.append(f"## {i}. {c.kind.value.capitalize()} of {percent(c.relative_change)} "
                  f"between {st.before.time} and {st.after.time}")
        md.append("")
        if c.edge:
            md.append("Edge step: one pair on its side; measure that pair again to confirm before bisecting.")
            md.append("")
        md.append(f"- last point before: {st.before.time}, xla {link('xla', st.before.xla)}, "
                  f"jax {link('jax', st.before.jax)}, {c.level_before:.4g}")
        md.append(f"- first point after: {st.after.time}, xla {link('xla', st.after.xla)}, "
                  f"jax {link('jax', st.after.jax)}, {c.level_after:.4g}")
        md.append("")
        md.append("Commits in the window (first-parent, oldest first):")
        md.append("")
        md.extend(_commits_section(repos, st))
        md.append("")
    return md


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
            md.append(f"- {when}: {p.status} (xla `{p.xla[:12]}`, jax `{p.jax[:12]}`)"
                      + (f" — {p.detail}" if p.detail else ""))
        md.append("")
    return md


def _reproduce_section(s: Settings, env: dict, plot_path: Path | None, workdir: Path,
                       anonymous: bool = False) -> list[str]:
    """How to reproduce the measurement, the environment, the plot and any profiles."""
    md = ["## Reproduce"]
    md.append("")
    md.append("The measurement (inside the nightly container, per pair):")
    md.append("")
    md.append("```sh")
    md.append(scan_command(s))
    md.append("```")
    md.append("")
    md.append(f"Benchmark command: `{s.bench_cmd}`" + (f" in `{s.bench_cwd}`" if s.bench_cwd else "")
              + f", {plural(s.repeats, 'run')} per pair.")
    md.append("")
    md.append("## Environment")
    md.append("")
    md.extend(environment.render_markdown(env, anonymous))
    md.append("")
    if plot_path:
        md.append("## Plot")
        md.append("")
        md.append(f"![metric over time]({plot_path.name})")
        md.append("")
    profiles = sorted((workdir / "profiles").glob("*/comparison.txt")) \
        if (workdir / "profiles").is_dir() else []
    if profiles:
        md.append("## Traces and memory profiles")
        md.append("")
        for comp in profiles:
            md.append(f"- {comp.parent.name}: `{comp.parent}` (comparison: `{comp}`)")
        md.append("")
    return md
