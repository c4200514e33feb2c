"""A manual bisection's prompt as lines of text (hourly.bisect.manual.Asked): both commits with
their subjects verbatim, the trees, the environment to use, the probe's place in the window."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.model import cut_side
from hourly.options import argv, join
from hourly.text.plurals import plural

if TYPE_CHECKING:
    from hourly.bisect.manual import Asked


def asked_lines(a: Asked) -> list[str]:
    what = "mixed pair (which repository's change alone is bad?)" if a.role == "blame" else "probe"
    head = f"{what}: xla {cut_side(a.pair.xla, 12)} jax {a.pair.jax[:12]}"
    if a.index is not None:
        head += (f" — state {a.index} of {a.states - 1} (0 the good end); last good so far {a.last_good}, "
                 f"first bad so far {a.first_bad}")
    lines = ["", head + ("  [resumed at the probe it was waiting at]" if a.resumed else "")]
    for name in ("xla", "jax"):
        c = a.commits.get(name)
        if c:
            lines.append(f"  {name} {c['sha']}  {c.get('subject', '')}")
    for name, path in a.trees.items():
        lines.append(f"  {name} tree {path} is checked out at this state")
    lines.append(f"  build: {a.build}; use it with: {a.environment}")
    if a.index is not None:
        lines.append(f"  about {plural(a.probes_left, 'probe')} left, this one included; "
                     f"{plural(a.builds_left, 'other state')} in the window still to build")
    lines += [f"  {m}" for m in a.measured]
    word = "good, bad, skip or unsure"
    if a.proposal is not None:
        lines.append(f"  the benchmark says: {a.proposal.value} — press Enter to agree, or type {word}")
    # the verdict is the word the person picks; the rest is the encoder's (quoted, redacted)
    lines.append("  or, from another shell: hourly mark good|bad|skip|unsure "
                 + join(argv("mark", {"workdir": a.workdir})[2:]))
    return lines


PROMPT = "verdict [good/bad/skip/unsure]: "
