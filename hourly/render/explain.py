"""``hourly explain``'s records as terminal lines, and the report's "Explained" section."""

from __future__ import annotations

import difflib
from pathlib import Path

from hourly.analysis.detect import percent
from hourly.answers import Answer
from hourly.options import command_line
from hourly.render.console import escape_controls

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
    if rec.get("no_dump"):
        return [f"  HLO: not diffed — {rec['no_dump']['why']}"]
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


#: op-time rows listed, at most
MAX_OP_ROWS = 12


def _us(x: float) -> str:
    return f"{x:.1f} µs" if abs(x) < 1e4 else f"{x / 1e3:.2f} ms"


def _side(t: dict | None) -> str:
    return "—" if t is None else _us(t["median_us"])


def op_time_lines(ot: dict | None) -> list[str]:
    """The op-time join (hourly/analysis/op_times.py): per-call medians of each changed instruction
    in both states, largest increase first, and what the rest of the ops did."""
    if not ot:
        return []
    if ot.get("failed"):  # a culprit found by exit status whose failing state has no op times
        return [f"  op times: not joined — {ot['skipped']}"]
    if ot.get("skipped"):
        cmd = f"; `{ot['command']}` traces both states" if ot.get("command") else ""
        return [f"  op times: not joined ({ot['skipped']}){cmd}"]
    reading = (ot.get("reading") or {}).get("bad", {}).get("described") or f"{ot['source']} events"
    lines = [f"  op time per call (median of the calls in each dump run's trace: {reading}), "
             "good → bad, largest increase first:"]
    rows = ot.get("rows") or []
    if not rows:
        lines.append("    no changed instruction has an event of its own in the traces")
    for r in rows[:MAX_OP_ROWS]:
        sign = {"added": "+", "removed": "-", "changed": "~"}[r["kind"]]
        calls = "/".join(str(x["calls"]) if x else "0" for x in (r["good"], r["bad"]))
        noise = {True: " (within noise)", None: " (too few calls to judge the noise)"}.get(r["within_noise"], "")
        if r["kind"] != "changed":
            noise = ""
        lines.append(f"    {sign} {r['module']}/{r['name']} {r['opcode']}: {r['delta_us']:+.1f} µs{noise} "
                     f"({_side(r['good'])} → {_side(r['bad'])}, calls {calls})")
    if len(rows) > MAX_OP_ROWS:
        lines.append(f"    … {len(rows) - MAX_OP_ROWS} more")
    untimed = ot.get("untimed") or []
    if untimed:
        names = ", ".join(r["name"] for r in untimed[:8]) + (" …" if len(untimed) > 8 else "")
        lines.append(f"    untimed (no event of their own: inside a fusion or not a kernel): {names}")
    moved = ot.get("rest_moved") or []
    unjudged = ot.get("rest_unjudged") or []
    if not ot["rest"]:
        lines.append("    the rest: no other op is in both traces")
    elif not moved:
        judged = ot["rest"] - len(unjudged)
        lines.append(f"    the rest: {ot['rest']} op{'s' if ot['rest'] != 1 else ''} unchanged in the HLO, "
                     + (f"{judged} within noise" if judged else "none judged"))
    else:
        lines.append(f"    the rest: {len(moved)} of {ot['rest']} ops unchanged in the HLO moved beyond noise "
                     "(below the HLO: code generation, the runtime):")
        for r in moved[:MAX_OP_ROWS]:
            lines.append(f"      {r['op']}: {r['delta_us']:+.1f} µs ({_us(r['good']['median_us'])} → "
                         f"{_us(r['bad']['median_us'])})")
    if unjudged:
        lines.append("    not judged (fewer than 3 calls on a side, more than 5 % apart): "
                     + ", ".join(unjudged[:6]) + (" …" if len(unjudged) > 6 else ""))
    if ot.get("note"):
        lines.append(f"    note: {ot['note']}")
    lines.append(f"    traces: good {ot['traces']['good']}  bad {ot['traces']['bad']}")
    return lines


def sweep_lines(sw: dict) -> list[str]:
    lines = []
    if sw.get("passes"):
        lines.append(f"  passes whose effect differs: {', '.join(sw['passes'])}")
    elif "passes" in sw:
        lines.append("  no pass's effect differs between the states (or no per-pass dump)")
    if sw.get("by_status"):  # a culprit found by exit status: each setting's runs passed or failed
        lines.append(f"  judged by exit status: the first-bad state fails {sw['bad_rate']:.0%} of its runs; "
                     "a setting restores when every run under it passes")
        for r in sw.get("measured", []):
            lines.append(f"    {r['flag']}: {r['verdict']} ({r['why']})")
        lines.append(f"  workaround: XLA_FLAGS={sw['workaround']}" if sw.get("workaround")
                     else "  no setting tried makes the first-bad state pass")
        if sw.get("skipped_passes"):
            lines.append(f"  not measured (--max-passes): {', '.join(sw['skipped_passes'])}")
        return lines
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
    if rv.get("by_status") and "tip_runs" in rv:  # judged by exit status: runs passed of runs
        t, r = rv["tip_runs"], rv.get("reverted_runs") or {"passed": 0, "runs": 0}
        runs = f"the tip passes {t['passed']} of {t['runs']} runs, reverted {r['passed']} of {r['runs']}"
        if v == "does not fail at the tip":
            return f"{what} need not be reverted on {rv['ref']}: it does not fail there ({runs})"
        return f"reverting {what} on {rv['ref']}: {v} ({runs}{'; ' + rv['why'] if rv.get('why') else ''})"
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


def code_lines(rec: dict) -> list[str]:
    """Below the HLO: the LLVM IR files of a changed module, and the PTX diff or why it was not made."""
    lines = []
    ir = rec.get("llvm_ir") or {}
    if not rec.get("identical") and ir.get("compared") is not None and (ir.get("compared") or ir.get("only_bad")
                                                                        or ir.get("only_good")):
        d = ir.get("differ") or []
        extra = "".join(f"; only {side.split('_')[1]}: {', '.join(ir[side][:4])}{' …' if len(ir[side]) > 4 else ''}"
                        for side in ("only_good", "only_bad") if ir.get(side))
        lines.append(f"  LLVM IR left by the backend: {len(d)} of {ir['compared']} files in both differ"
                     + (f" ({', '.join(d[:4])}{' …' if len(d) > 4 else ''})" if d else "") + extra)
    ptx = rec.get("ptx")
    if ptx and not ptx.get("made"):
        lines.append(f"  PTX diff: not made — {ptx['why']}; it needs {ptx['needs']}: run `{ptx['command']}` there")
    elif ptx:
        for f in ptx.get("files", []):
            d = f["differ"]
            lines.append(f"  PTX {f['file']}: {len(d)} of {f['kernels']} kernels differ"
                         + (f" ({', '.join(d[:6])}{' …' if len(d) > 6 else ''})" if d else "")
                         + (f"; only first-bad: {', '.join(f['only_bad'][:6])}" if f["only_bad"] else "")
                         + (f"; only last-good: {', '.join(f['only_good'][:6])}" if f["only_good"] else ""))
        for side in ("only_good", "only_bad"):
            if ptx.get(side):
                lines.append(f"  PTX files only {side.split('_')[1]}: {', '.join(ptx[side][:6])}")
    return lines


#: the width of each column of the dump runs' outputs set side by side
COLUMN = 60
_STATE = {"good": "last good", "bad": "first bad"}


def side_by_side(left: list[str], right: list[str], width: int = COLUMN) -> list[str]:
    """Two outputs in two columns, lines aligned as ``diff --side-by-side`` aligns them: a line in
    both has no mark, ``|`` a line that differs, ``<`` one only on the left, ``>`` one only on the
    right. Lines are shown whole (control characters escaped): a left line wider than its column
    goes on over the next rows, with nothing on their right."""
    left = [escape_controls(x).expandtabs() for x in left]
    right = [escape_controls(x).expandtabs() for x in right]
    rows: list[tuple[str | None, str, str | None]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if op == "equal":
            rows += [(left[i], " ", right[j]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
            continue
        ls, rs = left[i1:i2], right[j1:j2]
        for k in range(max(len(ls), len(rs))):
            lt, rt = (ls[k] if k < len(ls) else None), (rs[k] if k < len(rs) else None)
            rows.append((lt, "|" if lt is not None and rt is not None else "<" if rt is None else ">", rt))
    out = []
    for lt, mark, rt in rows:
        text = lt or ""
        chunks = [text[i:i + width] for i in range(0, len(text), width)] or [""]
        for k, chunk in enumerate(chunks):
            last = k == len(chunks) - 1
            line = f"{chunk:<{width}} {mark if last else ' '} {rt if last and rt is not None else ''}"
            out.append(line.rstrip())
    return out


def outcome_lines(rec: dict) -> list[str]:
    """A culprit found by exit status: how each state's dump run ended, and both outputs side by
    side (their last lines; the logs hold all of them)."""
    oc = rec.get("outcomes")
    if not oc:
        return []
    g, b = oc["good"], oc["bad"]
    lines = [f"  the dump runs: last good {g['how']}, first bad {b['how']}"
             + (" (the failure the bisection found)" if g["passed"] and not b["passed"] else "")]
    if rec.get("outcomes_note"):
        lines.append(f"  note: {rec['outcomes_note']}")
    shown = {side: (f"last {len(oc[side]['tail'])} of {oc[side]['lines']} lines" if oc[side]["lines"] > len(oc[side]["tail"])
                    else f"{oc[side]['lines']} line{'s' if oc[side]['lines'] != 1 else ''}") for side in ("good", "bad")}
    head = f"{_STATE['good']} ({g['how']}; {shown['good']})"
    lines.append("  their outputs, side by side:")
    lines.append(f"    {head:<{COLUMN - 4}}   {_STATE['bad']} ({b['how']}; {shown['bad']})")
    lines += [f"    {x}".rstrip() for x in side_by_side(g["tail"], b["tail"], COLUMN - 4)]
    lines.append(f"    logs: good {g['log']}  bad {b['log']}")
    return lines


def explain_lines(rec: dict) -> list[str]:
    """One record as terminal lines (text from outside is printed verbatim)."""
    lines = [f"{rec['name']}: {rec['title']}"]
    lines += hlo_lines(rec)
    lines += outcome_lines(rec)
    lines += op_time_lines(rec.get("op_times"))
    lines += code_lines(rec)
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


def explained_stage_lines(ex: dict | None) -> list[str]:
    """The ``explained`` entry of one bisection answer (``--explain``): the record's lines, or why not."""
    if not ex:
        return []
    if ex.get("skipped"):
        return [f"  explain: skipped ({ex['skipped']})"]
    if ex.get("error"):
        return [f"  explain failed: {ex['error']}" + (f" — {ex['fix']}" if ex.get("fix") else "")
                + (f" (then `{ex['command']}`)" if ex.get("command") else "")]
    return ["explained " + explain_lines(ex)[0], *explain_lines(ex)[1:],
            "  (the sweep and the revert check: `" + command_line("explain", {
                "workdir": Path(ex["dir"]).parent.parent, "step": ex["step"], "sweep": True,
                "revert_check": True}) + "`)"]


def explained_lines(answers: list[Answer] | list[dict]) -> list[str]:
    """Every answer's ``explained`` entry (``hourly bisect --explain``)."""
    out: list[str] = []
    for a in answers:
        out += explained_stage_lines(Answer.of(a).explained)
    return out


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("`", "'")


def report_section(recs: list[dict]) -> list[str]:
    """The report's "Explained" section from the workdir's explain records (hourly.explain.plan.
    load_records), one part per culprit; [] when explain never ran."""
    if not recs:
        return []
    md = ["## Explained", ""]
    for rec in recs:
        md += record_markdown(rec)
    return md


def record_markdown(rec: dict, heading: str = "###") -> list[str]:
    """One explain record as markdown (the report's part of one culprit)."""
    md: list[str] = []
    if rec.get("skipped") or rec.get("error"):
        return [f"- explain: {_md(explained_stage_lines(rec)[0].strip())}", ""]
    md.append(f"{heading} {_md(rec['name'])}: {_md(rec['title'])}")
    md.append("")
    block = [*hlo_lines(rec), *outcome_lines(rec), *op_time_lines(rec.get("op_times")), *code_lines(rec)]
    md.append("```")
    md += [escape_controls(line).replace("```", "'''") for line in block]  # text from outside: no fence closes here
    md.append("```")
    md.append("")
    rp = rec.get("repro")
    if rp:
        md.append(f"- repro HLO: `{rp['optimized']}`" + (f"; {_md(rp['largest'])} alone: `{rp['fusion_file']}`"
                                                          if rp.get("fusion_file") else ""))
        md.append(f"  - replay: `{rp['commands'][0]}`")
    sw = rec.get("sweep")
    if sw and sw.get("by_status"):
        md.append(f"- workaround: `XLA_FLAGS={sw['workaround']}`" if sw.get("workaround")
                  else "- workaround: none of the settings tried makes the first-bad state pass")
        for r in sw.get("measured", []):
            md.append(f"  - `{r['flag']}`: {r['verdict']} ({_md(r['why'])})")
    elif sw:
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
