"""``hourly explain``'s records as terminal lines, and the report's "Explained" section."""

from __future__ import annotations

from pathlib import Path

from hourly.analysis.detect import percent

#: instructions listed per module, at most
MAX_CHANGES = 12

POINT_AT = ("every optimized module is identical in both states: the change lies below the HLO — "
            "code generation (LLVM IR, PTX), the runtime, or the compiler's pinned dependencies "
            "(LLVM in third_party/llvm/workspace.bzl, Triton under third_party/triton/)")


def _change_lines(c: dict, indent: str = "    ") -> list[str]:
    sign = {"added": "+", "removed": "-", "changed": "~"}[c["kind"]]
    name = c["bad"] if c["kind"] != "removed" else c["good"]
    what = f" ({'; '.join(c['what'])})" if c.get("what") else ""
    renamed = f" (was {c['good']})" if c["kind"] == "changed" and c["good"] != c["bad"] else ""
    lines = [f"{indent}{sign} {name} {c['opcode']}{renamed}{what}"]
    line = c["bad_line"] if c["kind"] != "removed" else c["good_line"]
    if line:
        lines.append(f"{indent}    {line}")
    inner = c.get("inner") or []
    for i in inner[:MAX_CHANGES]:
        lines += _change_lines(i, indent + "    ")
    if len(inner) > MAX_CHANGES:
        lines.append(f"{indent}    … {len(inner) - MAX_CHANGES} more inside")
    return lines


def hlo_lines(rec: dict) -> list[str]:
    lines = []
    mods = rec.get("modules") or []
    if rec.get("no_modules"):
        return ["  no optimized module was dumped (does the benchmark compile with XLA in its own process?)"]
    same = [m for m in mods if m["identical"]]
    if rec.get("identical"):
        lines.append(f"  HLO: {len(mods)} optimized module{'s' if len(mods) != 1 else ''}, all identical")
        lines.append(f"  {POINT_AT}")
        ir = rec.get("llvm_ir") or {}
        if ir.get("compared"):
            d = ir.get("differ") or []
            lines.append(f"  LLVM IR left by the backend: {len(d)} of {ir['compared']} files differ"
                         + (f" ({', '.join(d[:4])}{' …' if len(d) > 4 else ''})" if d else ""))
        return lines
    lines.append(f"  HLO: {len(mods)} optimized modules, {len(same)} identical"
                 + (f" ({', '.join(m['key'] for m in same[:6])}{' …' if len(same) > 6 else ''})" if same else ""))
    for m in mods:
        if m["identical"]:
            continue
        lines.append(f"  {m['key']}: {m['summary']}")
        for c in m["changes"][:MAX_CHANGES]:
            lines += _change_lines(c)
        if len(m["changes"]) > MAX_CHANGES:
            lines.append(f"    … {len(m['changes']) - MAX_CHANGES} more")
    return lines


def _num(x: float) -> str:
    return f"{x:.4g}"


def sweep_lines(sw: dict) -> list[str]:
    lines = []
    if sw.get("passes"):
        lines.append(f"  passes whose effect differs: {', '.join(sw['passes'])}")
    elif "passes" in sw:
        lines.append("  no pass's effect differs between the states (or no per-pass dump)")
    lines.append(f"  levels: last good {_num(sw['good_median'])}, first bad {_num(sw['bad_median'])}")
    for r in sw.get("measured", []):
        if r["verdict"] == "failed":
            lines.append(f"    {r['flag']}: the benchmark failed ({r.get('detail')})")
        else:
            lines.append(f"    {r['flag']}: {_num(r['median'])} — {r['verdict']} "
                         f"({percent(r['restored']).lstrip('+')} of the step)")
    if sw.get("workaround"):
        lines.append(f"  workaround: XLA_FLAGS={sw['workaround']}")
    else:
        lines.append("  no setting tried restores the good level")
    if sw.get("skipped_passes"):
        lines.append(f"  not measured (--max-passes): {', '.join(sw['skipped_passes'])}")
    return lines


def revert_sentence(rv: dict) -> str:
    what = f"{rv.get('repo')} {str(rv.get('culprit') or '')[:10]}".strip()
    v = rv.get("verdict", "")
    if v == "restores":
        frac = rv.get("restored")
        pct = f" {frac * 100:.0f} %" if frac is not None else ""
        return (f"reverting {what} on {rv['ref']} restores{pct} ({_num(rv['tip_median'])} → "
                f"{_num(rv['reverted_median'])})")
    if v == "does not restore it":
        return (f"reverting {what} on {rv['ref']} does not restore it ({_num(rv['tip_median'])} → "
                f"{_num(rv['reverted_median'])})")
    if v == "no single culprit to revert":
        return "no single culprit commit to revert"
    return f"{what} {v}" if v.startswith(("does not", "is not")) else f"revert of {what} on {rv['ref']}: {v}"


def explain_lines(rec: dict) -> list[str]:
    """One record as terminal lines (text from outside is printed verbatim)."""
    lines = [f"{rec['name']}: {rec['title']}"]
    lines += hlo_lines(rec)
    rp = rec.get("repro")
    if rp:
        lines.append(f"  repro: {rp['optimized']}")
        if rp.get("fusion_file"):
            lines.append(f"  repro of {rp['largest']} alone: {rp['fusion_file']}")
        for c in rp["commands"][:1] + (rp.get("fusion_commands") or [])[:1]:
            lines.append(f"    {c}")
        lines.append(f"    (all the command lines: {rp['readme']})")
    if rec.get("sweep"):
        lines.append("  sweep (first-bad state):")
        lines += sweep_lines(rec["sweep"])
    if rec.get("revert"):
        lines.append("  revert check: " + revert_sentence(rec["revert"]))
    lines.append(f"  dumps: good {rec['dumps']['good']}  bad {rec['dumps']['bad']}")
    return lines


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("`", "'")


def report_section(workdir: Path) -> list[str]:
    """The report's "Explained" section, one part per culprit; [] when explain never ran."""
    from hourly.explain.plan import load_records
    recs = load_records(workdir)
    if not recs:
        return []
    md = ["## Explained", ""]
    for rec in recs:
        md.append(f"### {_md(rec['name'])}: {_md(rec['title'])}")
        md.append("")
        md.append("```")
        md += hlo_lines(rec)
        md.append("```")
        md.append("")
        rp = rec.get("repro")
        if rp:
            md.append(f"- repro HLO: `{rp['optimized']}`" + (f"; {_md(rp['largest'])} alone: `{rp['fusion_file']}`"
                                                              if rp.get("fusion_file") else ""))
            md.append(f"  - replay: `{rp['commands'][0]}`")
        sw = rec.get("sweep")
        if sw:
            md.append(f"- workaround: `XLA_FLAGS={sw['workaround']}`" if sw.get("workaround")
                      else "- workaround: none of the settings tried restores the good level")
            for r in sw.get("measured", []):
                if r["verdict"] != "failed":
                    md.append(f"  - `{r['flag']}`: {_num(r['median'])} ({r['verdict']}; good "
                              f"{_num(sw['good_median'])}, bad {_num(sw['bad_median'])})")
        if rec.get("revert"):
            md.append(f"- revert check: {_md(revert_sentence(rec['revert']))}")
        md.append(f"- dumps: `{rec['dumps']['good']}` (last good), `{rec['dumps']['bad']}` (first bad)")
        md.append("")
    return md
