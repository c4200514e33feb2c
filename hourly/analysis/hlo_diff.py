"""HLO text, parsed and compared structurally: what a compiler change did to a compiled program.

Pure text processing, standard library only. It reads the text XLA writes with
``--xla_dump_hlo_as_text`` (``module_0004.jit_f.cpu_after_optimizations.txt``):

* :func:`parse_module` — the module's name, its entry layout and its computations, each a list of
  instructions ``%name = type opcode(operands), attrs`` (``ROOT`` marked). The stack-frame tables
  XLA prints under the header, ``metadata={…}`` (source lines, op names) and the ``%`` sigils are
  dropped: they say where an op came from, not what it computes.
* Canonical form — every instruction is named by its *position* in its computation (``#3``), every
  called computation by its canonical text's digest, so XLA's numbering (``mul.0`` vs ``mul.1``,
  ``module_0003.`` prefixes) and meaningless renames (``%mul.0`` → ``%integer_pow.0``) vanish: two
  modules compute the same program exactly when their canonical texts are equal.
* :func:`diff_modules` — instructions of the entry computation (and inside each fusion they call)
  added, removed or changed, paired by opcode in program order (``difflib``), each reported with
  its name in the first-bad module so it can be found in the dump and in a trace.
* :func:`match_modules` — the modules of two dump folders paired by module name and entry
  computation layout, whatever numbering XLA gave the files.
* :func:`pass_effects` — the per-pass dumps of one module (``--xla_dump_hlo_pass_re=.*``) as the
  canonical change each pass made, so two states' pass pipelines can be compared.
* :func:`extract_computation` — one fused computation as a standalone module (a repro).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: attributes that name called computations
CALL_ATTRS = ("calls", "to_apply", "condition", "body", "branch_computations", "true_computation",
              "false_computation", "scatter", "select")
#: attributes that say where an op came from, not what it does
IGNORED_ATTRS = ("metadata", "origin", "statistics")

_HEADER = re.compile(r"^HloModule\s+(?P<name>[^\s,]+)(?P<rest>.*)$")
_COMP = re.compile(r"^(?P<entry>ENTRY\s+)?%?(?P<name>[^\s(]+)\s*\((?P<params>.*)\)\s*->\s*(?P<ret>.*?)\s*\{\s*$")
_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")


@dataclass
class Instruction:
    name: str
    type: str
    opcode: str
    operands: list[str]       # names of operand instructions ([] for literal payloads)
    payload: str              # the text inside the parentheses when it is not operands (constant(0), parameter(1))
    attrs: list[tuple[str, str | None]]   # (key, value); a bare flag has no value
    root: bool = False

    def calls(self) -> list[str]:
        out = []
        for k, v in self.attrs:
            if k in CALL_ATTRS and v is not None:
                out += [m.group(1) for m in _NAME.finditer(v)]
        return out

    def attr(self, key: str) -> str | None:
        return next((v for k, v in self.attrs if k == key), None)

    def line(self) -> str:
        """The instruction as HLO text (metadata dropped)."""
        inner = ", ".join(f"%{o}" for o in self.operands) if self.operands else self.payload
        attrs = "".join(f", {k}={v}" if v is not None else f", {k}" for k, v in self.attrs)
        return f"{'ROOT ' if self.root else ''}%{self.name} = {self.type} {self.opcode}({inner}){attrs}"


@dataclass
class Computation:
    name: str
    entry: bool
    header: str               # the line as written (``%fused_computation (param_0: f32[]) -> f32[] {``)
    instructions: list[Instruction] = field(default_factory=list)

    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions}


@dataclass
class Module:
    name: str
    header: str
    computations: dict[str, Computation]
    entry_name: str
    path: Path | None = None

    @property
    def entry(self) -> Computation:
        return self.computations[self.entry_name]

    @property
    def entry_layout(self) -> str:
        m = re.search(r"entry_computation_layout=(\{.*?\})(?:,\s*\w+=|$)", self.header)
        return m.group(1) if m else ""

    def canonical(self) -> Canonical:
        return Canonical(self)


class HloParseError(ValueError):
    """The text is not an HLO module we can read."""


# --------------------------------------------------------------------------- parsing

def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets, braces, parentheses and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "([{":
            depth += 1
        elif not quote and ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0 and not quote:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``text[start]``."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        ch = text[i]
        if ch == '"':
            quote = not quote
        elif quote:
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise HloParseError(f"unbalanced brackets in {text[:80]!r}")


def parse_instruction(line: str) -> Instruction:
    text = line.strip()
    root = text.startswith("ROOT ")
    if root:
        text = text[5:].lstrip()
    name, eq, rest = text.partition("=")
    if not eq:
        raise HloParseError(f"not an instruction: {line.strip()[:80]!r}")
    name = name.strip().lstrip("%")
    rest = rest.lstrip()
    if rest.startswith("("):  # a tuple type
        end = _balanced(rest, 0)
        type_, rest = rest[:end], rest[end:].lstrip()
    else:
        type_, _, rest = rest.partition(" ")
        rest = rest.lstrip()
    m = re.match(r"([\w\-]+)\(", rest)
    if not m:
        raise HloParseError(f"no opcode in {line.strip()[:80]!r}")
    opcode = m.group(1)
    end = _balanced(rest, m.end() - 1)
    inner = rest[m.end():end - 1]
    attrs_text = rest[end:].lstrip().lstrip(",")
    operands: list[str] = []
    payload = ""
    if opcode in ("parameter", "constant", "iota", "rng-bit-generator") and not _looks_like_refs(inner):
        payload = inner
    else:
        for piece in _split_top(inner):
            names = _NAME.findall(piece.split()[-1]) if piece.split() else []
            if names:
                operands.append(names[-1])
        if not operands:
            payload = inner
    attrs = []
    for piece in _split_top(attrs_text):
        key, eq, value = piece.partition("=")
        key = key.strip()
        if key in IGNORED_ATTRS:
            continue
        attrs.append((key, value.strip() if eq else None))
    return Instruction(name, type_, opcode, operands, payload, attrs, root)


def _looks_like_refs(inner: str) -> bool:
    return "%" in inner


def parse_module(text: str, path: Path | None = None) -> Module:
    """One module of HLO text (``HloModule …`` and its computations)."""
    header, comps, entry = "", {}, None
    cur: Computation | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not header:
            m = _HEADER.match(line)
            if m:
                header = line
            continue
        if cur is None:
            m = _COMP.match(line.strip())
            if m and not line.startswith(" "):
                cur = Computation(m.group("name"), bool(m.group("entry")), line.strip())
                if cur.entry:
                    entry = cur.name
            continue
        if line.strip() == "}":
            comps[cur.name] = cur
            cur = None
            continue
        if line.strip():
            cur.instructions.append(parse_instruction(line))
    if not header:
        raise HloParseError("no HloModule line")
    if entry is None:
        raise HloParseError("no ENTRY computation")
    name = _HEADER.match(header).group("name")  # type: ignore[union-attr]  # matched above
    return Module(name, header, comps, entry, path)


def read_module(path: Path) -> Module:
    return parse_module(Path(path).read_text(errors="replace"), Path(path))


# --------------------------------------------------------------------------- canonical form

class Canonical:
    """The name-free form of a module: each computation's instructions as lines whose operands are
    positions (``#2``) and whose called computations are their own canonical digests."""

    def __init__(self, module: Module):
        self.module = module
        self._digest: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}

    def lines(self, comp: str) -> list[str]:
        if comp not in self._lines:
            c = self.module.computations[comp]
            pos = {i.name: n for n, i in enumerate(c.instructions)}
            out = []
            for i in c.instructions:
                out.append(self.instruction_line(i, pos))
            self._lines[comp] = out
        return self._lines[comp]

    def instruction_line(self, i: Instruction, pos: dict[str, int]) -> str:
        ops = ",".join(f"#{pos[o]}" if o in pos else f"?{o}" for o in i.operands)
        attrs = []
        for k, v in i.attrs:
            if k in CALL_ATTRS and v is not None:
                v = _NAME.sub(lambda m: "@" + self.digest(m.group(1))
                              if m.group(1) in self.module.computations else m.group(0), v)
            elif k == "control-predecessors" and v is not None:
                v = _NAME.sub(lambda m: f"#{pos[m.group(1)]}" if m.group(1) in pos else m.group(0), v)
            attrs.append(f"{k}={v}" if v is not None else k)
        return f"{'ROOT ' if i.root else ''}{i.type} {i.opcode}({ops or i.payload}) {' '.join(attrs)}".rstrip()

    def digest(self, comp: str) -> str:
        if comp not in self._digest:
            self._digest[comp] = hashlib.sha256("\n".join(self.lines(comp)).encode()).hexdigest()[:12]
        return self._digest[comp]

    def text(self) -> str:
        """The whole program: the entry computation with everything it calls folded into digests."""
        return self.module.entry_layout + "\n" + "\n".join(self.lines(self.module.entry_name))


# --------------------------------------------------------------------------- diff

@dataclass
class Change:
    """One instruction added, removed or changed; names are those in the dumps."""

    kind: str                       # "added", "removed" or "changed"
    computation: str                # the computation it is in (the bad module's, for added/changed)
    opcode: str
    good: str | None                # the instruction's name in the good module
    bad: str | None                 # … in the bad module
    good_line: str | None = None
    bad_line: str | None = None
    what: list[str] = field(default_factory=list)  # for "changed": type, operands, attributes, fused body
    inner: list[Change] = field(default_factory=list)  # inside a changed fusion

    @property
    def name(self) -> str:
        return self.bad or self.good or "?"

    def weight(self) -> int:
        """How much changed: 1, plus what changed inside a fusion."""
        return 1 + sum(c.weight() for c in self.inner)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "computation": self.computation, "opcode": self.opcode, "good": self.good,
                "bad": self.bad, "good_line": self.good_line, "bad_line": self.bad_line, "what": self.what,
                "inner": [c.as_dict() for c in self.inner]}


@dataclass
class ModuleDiff:
    key: str                        # the module name (and its entry layout when two share a name)
    good_path: str | None
    bad_path: str | None
    identical: bool
    changes: list[Change] = field(default_factory=list)
    note: str = ""                  # e.g. "only in the first-bad state"

    def counts(self) -> Counter:
        c: Counter = Counter()
        for ch in self.changes:
            c[ch.kind] += 1
        return c

    def largest(self) -> Change | None:
        """The change that moved most (a fusion whose body changed most counts its inner changes)."""
        return max(self.changes, key=lambda c: c.weight(), default=None)

    def summary(self) -> str:
        if self.note:
            return self.note
        if self.identical:
            return "identical"
        c = self.counts()
        return ", ".join(f"{c[k]} {k}" for k in ("added", "removed", "changed") if c[k])

    def as_dict(self) -> dict:
        return {"key": self.key, "good": self.good_path, "bad": self.bad_path, "identical": self.identical,
                "note": self.note, "summary": self.summary(), "changes": [c.as_dict() for c in self.changes]}


def _align_key(i: Instruction) -> str:
    kind = i.attr("kind") if i.opcode == "fusion" else ""
    return f"{i.opcode}:{kind or ''}"


def _diff_computation(g: Module, b: Module, cg: Canonical, cb: Canonical, gname: str, bname: str,
                      depth: int = 0) -> list[Change]:
    gc, bc = g.computations[gname], b.computations[bname]
    gl, bl = cg.lines(gname), cb.lines(bname)
    gi, bi = gc.instructions, bc.instructions
    sm = difflib.SequenceMatcher(a=[_align_key(i) for i in gi], b=[_align_key(i) for i in bi], autojunk=False)
    pairs: list[tuple[int, int]] = []
    out: list[Change] = []
    for tag, a0, a1, b0, b1 in sm.get_opcodes():
        if tag == "equal":
            pairs += list(zip(range(a0, a1), range(b0, b1), strict=True))
            continue
        # same opcodes in a replaced block pair up in order; the rest were added or removed
        left = list(range(a0, a1))
        for j in range(b0, b1):
            k = next((x for x in left if _align_key(gi[x]) == _align_key(bi[j])), None)
            if k is None:
                out.append(Change("added", bname, bi[j].opcode, None, bi[j].name, None, bi[j].line()))
            else:
                left.remove(k)
                pairs.append((k, j))
        for k in left:
            out.append(Change("removed", gname, gi[k].opcode, gi[k].name, None, gi[k].line(), None))
    mapping = {gi[a].name: bi[b].name for a, b in pairs}
    for a, bj in sorted(pairs, key=lambda p: p[1]):
        x, y = gi[a], bi[bj]
        if gl[a] == bl[bj]:
            continue
        what = []
        if x.type != y.type:
            what.append(f"type {x.type} → {y.type}")
        if [mapping.get(o, "?") for o in x.operands] != y.operands or (not x.operands and x.payload != y.payload):
            what.append("operands")
        xa = [(k, v) for k, v in x.attrs if k not in CALL_ATTRS]
        ya = [(k, v) for k, v in y.attrs if k not in CALL_ATTRS]
        if xa != ya:
            keys = sorted({k for k, v in set(xa) ^ set(ya)})
            what.append("attributes " + ", ".join(keys))
        inner: list[Change] = []
        xc, yc = x.calls(), y.calls()
        if len(xc) == len(yc) and depth < 4:
            for p, q in zip(xc, yc, strict=True):
                if p in g.computations and q in b.computations and cg.digest(p) != cb.digest(q):
                    inner += _diff_computation(g, b, cg, cb, p, q, depth + 1)
                    what.append(f"body of {q}")
        elif xc != yc:
            what.append("called computations")
        if not what:  # an operand's position moved but the same instruction feeds it
            continue
        out.append(Change("changed", bname, y.opcode, x.name, y.name, x.line(), y.line(), what, inner))
    order = {i.name: n for n, i in enumerate(bi)}
    gorder = {i.name: n for n, i in enumerate(gi)}
    out.sort(key=lambda c: (order.get(c.bad or "", -1) if c.bad else
                            max((order[mapping[n]] for n, _ in gorder.items()
                                 if n in mapping and gorder[n] < gorder[c.good or ""]), default=-1) + 0.5))
    return out


def diff_modules(good: Module, bad: Module, key: str | None = None) -> ModuleDiff:
    cg, cb = good.canonical(), bad.canonical()
    k = key or good.name
    gp, bp = str(good.path) if good.path else None, str(bad.path) if bad.path else None
    if cg.text() == cb.text():
        return ModuleDiff(k, gp, bp, True)
    changes = _diff_computation(good, bad, cg, cb, good.entry_name, bad.entry_name)
    d = ModuleDiff(k, gp, bp, False, changes)
    if not changes and good.entry_layout != bad.entry_layout:
        d.note = f"entry layout {good.entry_layout} → {bad.entry_layout}"
    return d


# --------------------------------------------------------------------------- dump folders

#: XLA's numbering prefix of a dumped file: ``module_0003.``
_PREFIX = re.compile(r"^module_\d+\.")


def optimized_files(dump_dir: Path) -> list[Path]:
    """The optimized modules of a dump (``*after_optimizations.txt``, not the buffer-assignment
    and memory reports that share the stem)."""
    return sorted(p for p in Path(dump_dir).glob("*after_optimizations.txt") if p.is_file())


def module_key(m: Module) -> tuple[str, str]:
    return m.name, m.entry_layout


def match_modules(good: list[Module], bad: list[Module]) -> list[tuple[Module | None, Module | None, str]]:
    """Pairs of (good, bad, key) by module name and entry layout; a name compiled once on each side
    pairs even when its layout changed; compilations of one name and layout pair in order."""
    out: list[tuple[Module | None, Module | None, str]] = []
    gl = list(good)
    bl = list(bad)
    for b in list(bl):
        g = next((x for x in gl if module_key(x) == module_key(b)), None)
        if g is not None:
            gl.remove(g)
            bl.remove(b)
            same_name = sum(1 for x in good if x.name == b.name) > 1
            out.append((g, b, f"{b.name} {b.entry_layout}" if same_name else b.name))
    for b in list(bl):
        gs = [x for x in gl if x.name == b.name]
        if len(gs) == 1 and sum(1 for x in bl if x.name == b.name) == 1:
            gl.remove(gs[0])
            bl.remove(b)
            out.append((gs[0], b, b.name))
    out += [(g, None, g.name) for g in gl] + [(None, b, b.name) for b in bl]
    return out


def diff_dumps(good_dir: Path, bad_dir: Path) -> list[ModuleDiff]:
    """Every optimized module of two dump folders, matched and compared."""
    good = [read_module(p) for p in optimized_files(good_dir)]
    bad = [read_module(p) for p in optimized_files(bad_dir)]
    out = []
    for g, b, key in match_modules(good, bad):
        if g is None:
            out.append(ModuleDiff(key, None, str(b.path) if b and b.path else None, False,
                                  note="compiled only in the first-bad state"))
        elif b is None:
            out.append(ModuleDiff(key, str(g.path) if g.path else None, None, False,
                                  note="compiled only in the last-good state"))
        else:
            out.append(diff_modules(g, b, key))
    return out


# --------------------------------------------------------------------------- per-pass dumps

@dataclass
class PassEffect:
    module: str
    pipeline: str
    pass_name: str
    removed: Counter            # canonical entry lines the pass took away
    added: Counter              # … and put in

    def signature(self) -> tuple:
        return tuple(sorted(self.removed.items())), tuple(sorted(self.added.items()))


_PASS_FILE = re.compile(r"^module_\d+\.(?P<module>.+?)\.(?P<seq>\d{4})\.(?P<pipeline>[^.]+)\.after_(?P<pass>[^.]+?)"
                        r"(?:\.before_(?P<next>[^.]+))?\.txt$")


def pass_dumps(dump_dir: Path) -> dict[str, list[tuple[str, str, Path]]]:
    """``{module name: [(pipeline, pass, path), …]}`` in pass order, from a per-pass dump."""
    out: dict[str, list[tuple[int, str, str, Path]]] = {}
    for p in Path(dump_dir).glob("module_*.txt"):
        m = _PASS_FILE.match(p.name)
        if m:
            # a pass that dumps its own stages (copy-insertion: ``0013.copy-insertion.after_adding_
            # copies_to_resolve_interference``) names itself where a pipeline's name stands and has
            # no ``before_``: the stage is no pass --xla_disable_hlo_passes knows, the pass is
            name = m["pass"] if m["next"] else m["pipeline"]
            out.setdefault(m["module"], []).append((int(m["seq"]), m["pipeline"], name, p))
    return {k: [(pl, ps, p) for _, pl, ps, p in sorted(v)] for k, v in out.items()}


def _program_lines(m: Module) -> list[str]:
    c = m.canonical()
    lines = []
    for name in m.computations:  # every computation, so a pass that changes a fused body counts
        lines += c.lines(name)
    return lines


def pass_effects(dumps: list[tuple[str, str, Path]], module: str) -> list[PassEffect]:
    """What each pass changed in one module: the canonical lines it removed and added. XLA dumps a
    module after a pass only when the pass changed it; ``pipeline-start`` snapshots are not passes."""
    out, prev = [], None
    for pipeline, name, path in dumps:
        try:
            lines = Counter(_program_lines(read_module(path)))
        except HloParseError:
            continue
        if prev is not None and name != "pipeline-start":
            removed, added = prev - lines, lines - prev
            if removed or added:
                out.append(PassEffect(module, pipeline, name, removed, added))
        prev = lines
    return out


def differing_passes(good: dict[str, list[tuple[str, str, Path]]],
                     bad: dict[str, list[tuple[str, str, Path]]]) -> list[str]:
    """The passes whose effect on some module differs between the two states (ran on one side only,
    or changed the module differently), in the order they run in the first-bad state."""
    names: list[str] = []
    for module in sorted(set(good) | set(bad)):
        ge = pass_effects(good.get(module, []), module)
        be = pass_effects(bad.get(module, []), module)
        gsig = Counter((e.pass_name, e.signature()) for e in ge)
        bsig = Counter((e.pass_name, e.signature()) for e in be)
        for e in be + ge:
            if gsig[(e.pass_name, e.signature())] != bsig[(e.pass_name, e.signature())] and e.pass_name not in names:
                names.append(e.pass_name)
    return names


# --------------------------------------------------------------------------- repro

def called_closure(m: Module, comp: str) -> list[str]:
    """``comp`` and every computation it calls, callees first."""
    seen: list[str] = []

    def visit(name: str) -> None:
        if name in seen or name not in m.computations:
            return
        for i in m.computations[name].instructions:
            for c in i.calls():
                visit(c)
        seen.append(name)
    visit(comp)
    return seen


def computation_text(m: Module, comp: str, entry: bool = False) -> str:
    c = m.computations[comp]
    header = c.header
    if entry and not header.startswith("ENTRY"):
        header = "ENTRY " + header
    body = "\n".join("  " + i.line() for i in c.instructions)
    return f"{header}\n{body}\n}}\n"


def extract_computation(m: Module, comp: str) -> str:
    """A standalone module whose entry is ``comp`` (a fused computation, say) with what it calls."""
    parts = [f"HloModule {m.name}_{re.sub(r'[^A-Za-z0-9_]', '_', comp)}\n"]
    for name in called_closure(m, comp):
        parts.append(computation_text(m, name, entry=name == comp))
    return "\n".join(parts)


def strip_prefix(filename: str) -> str:
    """A dump file's name without XLA's numbering (``module_0003.jit_f…`` → ``jit_f…``)."""
    return _PREFIX.sub("", filename)
