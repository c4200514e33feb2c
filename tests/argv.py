"""Command lines of hourly built by tests: a helper's arguments with a test's own flags over them.

hourly refuses a single-valued flag given twice (``--python a --python b``: a usage error, exit 2),
so a test that overrides a helper's flag says so: ``with_flags(scan_args(), "--workdir", w)`` puts
``w`` where the helper's ``--workdir`` stood, instead of appending a second one."""

from __future__ import annotations

from hourly.options import OPTIONS, Option

#: every flag (and every flag that says no: --no-sync, --lower-is-better) and its option
_BY_FLAG: dict[str, Option] = {**{o.flag: o for o in OPTIONS}, **{o.off: o for o in OPTIONS if o.off}}


def _uses(argv: list[str]) -> list[tuple[Option | None, int, int]]:
    """Each option's use in ``argv`` before ``--``: (option or None for any other word, first word,
    number of words)."""
    end = argv.index("--") if "--" in argv else len(argv)
    out: list[tuple[Option | None, int, int]] = []
    i = 0
    while i < end:
        word = argv[i]
        flag, eq, _ = word.partition("=") if word.startswith("--") else (word, "", "")
        opt = _BY_FLAG.get(flag)
        n = 1 if opt is None or opt.is_flag or eq else 2
        out.append((opt, i, n))
        i += n
    return out


def with_flags(argv: list[str], *extra: str) -> list[str]:
    """``argv`` with the flags of ``extra``: one that takes a single value (or a boolean, either of
    its spellings) replaces its use in ``argv`` where it stood; a repeatable one (``--env``), one
    ``argv`` lacks, or a second use in ``extra`` itself is added before any ``--`` (so a test that
    gives a flag twice, or both spellings of a boolean, still meets hourly's own refusal)."""
    out = list(argv)
    added: list[str] = []
    replaced: set[str] = set()
    for opt, start, n in _uses(list(extra)):
        words = list(extra[start:start + n])
        if opt is not None and not opt.repeatable and opt.name not in replaced:
            old = [(s, k) for o, s, k in _uses(out) if o is not None and o.name == opt.name]
            if old:
                for s, k in reversed(old[1:]):
                    del out[s:s + k]
                s, k = old[0]
                out[s:s + k] = words
                replaced.add(opt.name)
                continue
        added += words
    at = out.index("--") if "--" in out else len(out)
    out[at:at] = added
    return out
