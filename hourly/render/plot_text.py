"""Text from outside (a culprit's subject in CJK, an emoji) drawn in the plot without matplotlib's
"Glyph … missing from font(s)" warnings: characters the default font lacks are drawn with an
installed font that has them (matplotlib's font fallback), and those no installed font has are
replaced by a visible placeholder, so the label stays readable."""

from __future__ import annotations

import functools
import unicodedata

#: drawn for a character no installed font has
PLACEHOLDER = "\u25a1"  # □


@functools.lru_cache(maxsize=1)
def _fonts() -> tuple[tuple[str, frozenset[int]], ...]:
    """(family, code points) of the default font first, then of every other installed font
    matplotlib can draw with (one file per family, its regular face when there is one)."""
    import matplotlib
    from matplotlib import font_manager as fm
    from matplotlib.ft2font import FT2Font

    default = fm.findfont(fm.FontProperties(family=matplotlib.rcParams["font.family"]))
    files: dict[str, str] = {}
    for f in sorted(fm.fontManager.ttflist, key=lambda f: (f.style != "normal", f.weight != 400, f.fname)):
        if f.fname.lower().endswith((".ttf", ".otf")) and "last resort" not in f.name.lower():
            files.setdefault(f.name, f.fname)
    out = []
    for name, path in [(FT2Font(default).family_name, default),
                       *((n, p) for n, p in files.items() if p != default)]:
        try:
            out.append((name, frozenset(FT2Font(path).get_charmap())))
        except Exception:  # noqa: BLE001 -- a font file FreeType cannot read is simply not used
            continue
    return tuple(out)


def drawable(text: str) -> tuple[str, list[str]]:
    """``text`` as the plot can draw it, and the font families to draw it with (the default first,
    then those that have the characters it lacks)."""
    fonts = _fonts()
    if not fonts:
        return text, []
    (default, have), others = fonts[0], fonts[1:]
    families = [default]
    out = []
    for ch in text:
        cp = ord(ch)
        if cp in have or ch.isspace():
            out.append(ch)
            continue
        family = next((name for name, cps in others if cp in cps), None)
        if family is not None:
            if family not in families:
                families.append(family)
            out.append(ch)
        elif unicodedata.category(ch) in ("Mn", "Me", "Cf"):  # joiners, variation selectors: draw nothing
            continue
        else:
            out.append(PLACEHOLDER if ord(PLACEHOLDER) in have else "?")
    return "".join(out), families
