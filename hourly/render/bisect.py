"""A bisection on the terminal: its events as progress lines (:class:`LineHandler`) and each
answer as lines of text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from hourly.answers import Answer, Commit, Measured
from hourly.bisect.answer import iso
from hourly.bisect.events import BisectHandler, ProcessDone
from hourly.errors import UserError
from hourly.measure.pinned import pinned_line
from hourly.model import cut_side
from hourly.text.plurals import plural

if TYPE_CHECKING:
    from rich.console import Console

    from hourly.adapters.store import Store
    from hourly.bisect.records import Probe, Window
    from hourly.measure.settings import Settings


class LineHandler(BisectHandler):
    """Each event as one line of text, handed to ``say`` (e.g. printed to stderr)."""

    def __init__(self, say: Callable[[str], None]):
        self.say = say

    def note(self, text: str) -> None:
        self.say(text)

    def started(self, w: Window, states: int, resumed: int) -> None:
        self.say(f"bisecting {iso(w.good_time)} .. {iso(w.bad_time)}: {plural(states, 'state')}"
                 + (f" (resuming after {plural(resumed, 'stored verdict')})" if resumed else ""))

    def verdict(self, p: Probe) -> None:
        word = self.terms.get(p.verdict.value, p.verdict.value)
        self.say(f"  {p.role:8} {p.pair.short()}  {word:6} {p.reason}"
                 + (f"  [{plural(p.builds, 'build')}]" if p.builds else ""))

    def process(self, e: ProcessDone) -> None:
        self.say(f"  {e.what} {e.pair.short()}: {process_words(e)}")

    def cannot_bisect(self, w: Window, e: UserError) -> None:
        self.say(f"  cannot bisect: {e.one_line()}")

    def nothing_to_bisect(self) -> None:
        self.say("nothing to bisect: the stored scan holds no window of that kind"
                 " (regressions, crashes and metrics that stop printing; with --find-fix, improvements,"
                 " fixes and metrics printed again)")



def process_words(e: ProcessDone) -> str:
    """``round 4, −3.1 % ± 0.9 %, 112 chip-s so far, ~2 min to settle``"""
    words = [f"{e.unit} {e.round}"]
    if e.change is not None and e.error is not None:
        words.append(f"{e.change * 100:+.1f} % ± {e.error * 100:.1f} %".replace("-", "−"))
    words.append(f"{e.chip_s:.0f} chip-s so far")
    if e.settle_s is not None:
        settle = "settling" if e.settle_s <= 0 else f"~{_duration(e.settle_s)} to settle"
        if e.midway is not None:  # the guess of a probe between an end's level and a step of its own
            settle += (f" (it reads nearer a step of its own, {e.midway * 100:.1f} % from the {e.near} end, "
                       f"than that end's level)")
        words.append(settle)
    if e.by:
        words.append(f"each process by its {e.by}")
    return ", ".join(words)


#: how the samples asked of each process were set, in words
_HOW = {"fixed": "--samples", "default": "the default: no cost or noise measured yet",
        "chosen": "chosen from the measured cost and noise"}


def sampling_words(s: dict) -> str:
    """``14 processes, 168 samples, 112 chip-s; 12 samples a process (the default ...), per-process
    median (why); a process: 18.2 s to its first sample, 0.33 s a sample``"""
    words = (f"{plural(s.get('processes') or 0, 'process', 'processes')}, {plural(s.get('samples') or 0, 'sample')}, "
             f"{s.get('chip_s') or 0:.0f} chip-s")
    if s.get("this_call_chip_s") is not None:  # resumed: the calls before it are in the figures above
        words += f" in all its calls ({s['this_call_chip_s']:.0f} in this one)"
    if s.get("one_value"):  # --metric-samples last: the count asked is the benchmark's business
        words += (f"; one value read from each process (its last match), HOURLY_SAMPLES="
                  f"{s.get('samples_per_process')} set")
    elif s.get("samples_per_process"):
        words += (f"; {plural(s['samples_per_process'], 'sample')} a process ({_HOW.get(s.get('how') or '', s.get('how'))}"
                  + (f"; {min(s['asked'])} to {max(s['asked'])} asked on the way" if len(s.get("asked") or []) > 1
                     else "")
                  + ")")
    if s.get("statistic"):
        words += f", per-process {s['statistic']} ({s.get('statistic_why') or ''})"
    if s.get("first_sample_s") is not None and s.get("per_sample_s") is not None:
        words += f"; a process: {s['first_sample_s']:.3g} s to its first sample, {s['per_sample_s']:.3g} s a sample"
        if s.get("after_last_sample_s"):
            words += f", {s['after_last_sample_s']:.3g} s from its last sample to its exit"
    if s.get("not_followed"):
        words += f"; {s['not_followed']}"
    return words


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def describe(answer: Answer | dict) -> list:
    """The answer for one regression, as lines of text (subjects and authors verbatim)."""
    from hourly.render.console import styled
    a = Answer.of(answer)
    w = a.window
    lines: list = [styled((a.kind or "regression", "bold"), f" {w.good_time} .. {w.bad_time}"
                          + (f"  {w.note}" if w.note else ""))]
    if a.error:
        return lines + [f"  cannot bisect: {a.error}"]
    c = a.culprit
    fixing = a.kind in ("improvement", "fix", "metric_back")
    if c:
        label = CULPRIT_LABELS.get(a.kind or "", "culprit")
        lines += [styled(f"  {label}: ", (c.repo, "bold"), f" {c.sha}"), *_commit_lines(c)]
        for m in c.merged:
            lines.append(f"           merges {m.sha[:12]} {m.subject} (by {m.author})")
    elif a.candidate:
        c = a.candidate
        lines += [styled("  candidate ", ("(NOT confirmed on re-measurement)", "yellow"), ": ", (c.repo, "bold"),
                         f" {c.sha}"), *_commit_lines(c)]
        for side, ms in (a.measurements or {}).items():
            lines.append(f"  {side.replace('_', ' ')} measured: " + "; ".join(
                f"{m.role} {m.verdict} ({_numbers(m)})" for m in ms))
        lines.append(f"  next: {a.next}")
    else:
        lines.append(f"  no single commit: {a.reason}")
        for rc in a.range_commits:
            lines.append(f"    {rc.repo} {rc.sha[:12]} {rc.subject}  {rc.link}")
        if a.next:  # states the search did not build (a jumped run of untestable states)
            lines.append(f"  next: {a.next}")
    if a.chain_text:  # a culprit that moved a pin, bisected on inside the dependency (hourly.bisect.descent)
        lines.append(f"  chain: {a.chain_text}")
        for sub in a.descent or []:
            d, sc = sub.descent_of or {}, sub.named
            if sc:
                lines += [f"    {sc.repo} {sc.sha} {sc.subject}",
                          f"      inside the {str(d.get('dep', '')).upper()} pin bump {str(d.get('old_pin'))[:12]} → "
                          f"{str(d.get('new_pin'))[:12]}: {plural(sub.builds, 'build')}, "
                          f"{plural(sub.states, 'candidate state')}{'' if sub.confirmed else ' (NOT confirmed)'}",
                          f"      {sc.link}"]
    if a.behind_pin_reason:  # time pairing: skipped states older than their JAX commit's pin
        lines.append(f"  {a.behind_pin_reason}")
    if a.descent_stopped:
        lines.append(f"  descent stopped: {a.descent_stopped}")
    if a.pairing == "pin":
        lines.append("  pairing: pin (each JAX commit with the XLA commit its pin names)")
    if a.blame:
        lines.append(f"  blame (mixed pairs tested): {BLAME_WORDS.get(a.blame, a.blame)}")
    pinned = pinned_line(a.pinned)
    if pinned:
        lines.append(f"  {pinned}")
    if a.end_samples:
        names = {"good": "earlier end", "bad": "later end"} if fixing \
            else {"good": "good end", "bad": "bad end"}
        lines.append("  ends compared with: " + "; ".join(
            f"{names.get(side, side)} {plural(e.n, 'sample')} (" + ", ".join(f"{k} from {'the scan' if o == 'scan' else o}"
                                                   for o, k in e.from_.items()) + ")"
            for side, e in a.end_samples.items()))
    if a.measured:
        lines.append("  verdicts: " + ("paired, measured in alternating rounds (drift common to a round cancels)"
                                       if a.measured == "interleaved" else a.measured))
    if a.sampling:
        lines.append(f"  cost: {sampling_words(a.sampling)}")
    for note in (a.drift or [])[:3]:
        lines.append(f"  {note}")
    if len(a.drift or []) > 3:
        lines.append(f"  ... and {plural(len(a.drift or []) - 3, 'more drift note')} (--json)")
    for cw in a.crash_windows or []:
        if cw.get("holds_change"):
            continue  # said in the reason above
        lines.append(f"  crash window {_side(cw['first'])} .. {_side(cw['last'])}: {plural(cw['states'], 'state')} "
                     "left out of the metric search" + (f" ({cw['last_line']})" if cw.get("last_line") else ""))
    manual = a.manual
    if manual:
        n = sum(1 for p in a.probes if p.manual)
        lines.append(f"  manual: {plural(n, 'verdict')} given by you (typed or `hourly mark`)"
                     + (", after the benchmark's" if manual.benchmark else "")
                     + f"; the ends {manual.ends}")
        for p in a.probes:
            if p.manual:
                lines.append(f"    {p.role:6} xla {p.xla[:12]} jax {p.jax[:12]}  {p.verdict:6} {p.reason or ''}")
    lg, fb = a.last_good, a.first_bad
    assert lg is not None and fb is not None  # a bisected window (errors returned above)
    before, after = ("last before", "first after") if fixing else ("last good", "first bad")
    lines.append(f"  {before}: xla {cut_side(lg.xla, 12)} jax {cut_side(lg.jax, 12)}")
    lines.append(f"  {after}: xla {cut_side(fb.xla, 12)} jax {cut_side(fb.jax, 12)}")
    split = (f" ({a.jaxlib_builds} of jaxlib, {a.jax_builds} of the jax package alone)"
             if a.jax_builds else "")
    lines.append(styled(f"  {plural(a.builds, 'build')}{split}, {plural(a.runs, 'benchmark run')}, "
                        f"{plural(a.states, 'candidate state')}",
                        *(() if a.confirmed else ("  ", ("NOT confirmed on re-measurement", "yellow")))))
    rest = a.rest
    if rest:  # the search saw more after this step; bisecting the rest named nothing
        lines.append(styled("  ", ("rest of the window", "yellow"),
                            f" {rest.from_} .. {rest.to}: no further step named: {rest.why}"
                            + (f" ({rest.fix})" if rest.fix else "")))
    return lines


def _side(side: dict) -> str:
    """A crash window's first or last state: the commit that brought it, else its pair."""
    c = side.get("commit")
    if c:
        return f"{c['repo']}@{c['sha'][:12]}"
    return f"xla@{cut_side(side['xla'], 12)} jax@{side['jax'][:12]}"


def _commit_lines(c: Commit) -> list[str]:
    return [f"           {c.subject}", f"           by {c.author}, committed {c.committer_time}", f"           {c.link}"]


def _numbers(m: Measured) -> str:
    """A measurement's numbers: its samples (metric) or exit codes."""
    if m.samples:
        return ", ".join(f"{x:.4g}" for x in m.samples)
    return f"exit codes {m.returncodes}" if m.returncodes else (m.reason or "")



#: What the commit an answer names is, by the answer's kind (a regression's or crash's: the culprit).
CULPRIT_LABELS = {"improvement": "improved by", "fix": "fixed by", "metric_back": "metric back with"}

#: What a blame value means, for the terminal (the JSON keeps the value).
BLAME_WORDS = {
    "xla": "xla: its change alone, with the old jax, is bad",
    "jax": "jax: its change alone, with the old xla, is bad",
    "xla_on_new_jax": ("xla: its change is bad on the new jax (old xla + new jax, a state the search walked, "
                       "is good); new xla + old jax was not built, so whether it needs the new jax is not known"),
    "both": "neither change alone is bad; only the two together are",
    "unknown": "unknown: a mixed pair could not be tested",
}



def print_answers(console: Console, answers: list[Answer] | list[dict]) -> None:
    for a in answers:
        for line in describe(a):
            console.print(line, highlight=False, soft_wrap=True)


#: What each kind of window is called in a --log heading (hourly.bisect.records.Window.kind).
WINDOW_WORDS = {"regression": "regression", "improvement": "improvement", "crash": "crash window",
                "fix": "fix window", "metric_lost": "metric window (stops printing)",
                "metric_back": "metric window (prints again)"}


def log_heading(answer: Answer | dict, i: int, n: int) -> str:
    """The comment line over the ``i``-th of ``n`` answers in ``hourly bisect --log``: the window's
    own kind ("crash window 3 of 3"), never "regression" for every window."""
    a = Answer.of(answer)
    what = WINDOW_WORDS.get(a.kind or "", "window")
    return (f"# {what} {i} of {n}: {a.window.good_time} .. {a.window.bad_time}"
            " — replay one block at a time")



# -- a workdir no scan made: the report's and show's commands, the bisections not finished --------

#: an answer's kinds whose good end is the later one (``hourly bisect --find-fix``)
FIXING = ("improvement", "fix", "metric_back")


def bisect_again_command(a: Answer, s: Settings) -> str:
    """The ``hourly bisect`` command that bisects the window of answer ``a`` again, in its mode and
    direction, with the workdir's settings (one line, secrets redacted)."""
    from hourly.scan.table import REPRODUCE, settings_command
    w = a.window
    fixing = a.kind in FIXING
    lead: dict[str, object] = {"good": w.bad_time if fixing else w.good_time,
                               "bad": w.good_time if fixing else w.bad_time}
    mode = a.manual.window_mode if a.manual else a.mode
    lead["mode"] = mode if mode in ("exit", "printed") or s.mode == "exit" else None
    lead.update(find_fix=fixing or None, flaky=a.flaky or None, manual=bool(a.manual) or None)
    return settings_command("bisect", s, lead, explicit=REPRODUCE)


def scan_window_command(s: Settings, windows: list[tuple[str, str]]) -> str:
    """The ``hourly scan`` command over every window in ``windows`` (UTC labels), with the
    workdir's settings: the series of the metric around what was bisected."""
    from dataclasses import replace

    from hourly.scan.table import REPRODUCE, settings_command
    return settings_command("scan", replace(s, from_=min(g for g, _ in windows), to=max(b for _, b in windows)),
                            explicit=REPRODUCE)


def unfinished_lines(store: Store) -> list[str]:
    """One line per bisection started and not finished, with what goes on with it."""
    return unfinished_text(store.unfinished_bisections())


def unfinished_text(rows: list[dict], outside: Callable[[str], str] = str) -> list[str]:
    """:func:`unfinished_lines` of the store's rows of unfinished bisections; ``outside`` renders
    why one stopped (text from outside: log paths, a benchmark's words; markdown escapes it)."""
    return [f"{iso(r['good_time'])} → {iso(r['bad_time'])} ({r['mode']}): "
            + (f"stopped without an answer: {outside(r['stopped'])}" if r.get("stopped") else
               "started, no answer yet; the same `hourly bisect` command again goes on from its stored verdicts")
            for r in rows]


# -- hourly show in a workdir no scan made ------------------------------------------------------

@dataclass
class Unscanned:
    """What ``hourly show`` says of a workdir that ``hourly bisect --good --bad`` made without a
    scan: that no scan was made (so no table of the metric over time), the bisections' answers of
    the current build, another build's apart with its label, the bisections not finished, and the
    scan command that would measure the series around them."""

    note: str
    current: list[Answer]
    others: list[tuple[str, Answer]]
    unfinished: list[str]
    scan: str | None

    def as_json(self) -> dict:
        return {"scanned": False, "note": self.note, "points": [],
                "regressions": [a.to_json() for a in self.current],
                "other_builds": [{"measured_under": label, **a.to_json()} for label, a in self.others],
                "unfinished": self.unfinished, "scan": self.scan}

    def lines(self) -> list:
        from hourly.render.console import styled
        out: list = [styled(("no scan", "bold"), f": {self.note}")]
        for a in self.current:
            out += describe(a)
        for label, a in self.others:
            out += [styled(("measured under another build", "yellow"), f" ({label}); not this workdir's answer:"),
                    *describe(a)]
        out += [f"not finished: {line}" for line in self.unfinished]
        if self.scan:
            out.append(f"the metric over the window: {self.scan}")
        return out


def unscanned(store: Store, s: Settings) -> Unscanned:
    """:class:`Unscanned` of ``store`` (``s``: the workdir's settings, its bisection's own)."""
    from hourly.scan.identity import answers_by_build, build_difference
    split = answers_by_build(store, s)
    idents = store.measure_keys()
    current = idents.get(split.key) if split.key else None
    others = [(build_difference(idents.get(k), current, k), a) for k, a in split.others]
    windows = [(a.window.good_time, a.window.bad_time) for a in split.current + [a for _, a in others]]
    note = (f"{store.workdir} holds `hourly bisect --good … --bad …` alone: no table of the metric over time, "
            "only the bisections' answers" + ("" if split.current else "; no bisection of this build has finished"))
    return Unscanned(note, split.current, others, unfinished_lines(store),
                     scan_window_command(s, windows) if windows else None)
