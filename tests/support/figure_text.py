"""How large a figure's text is on the reader's screen.

A figure is SVG with its text kept as text (matplotlib's ``svg.fonttype:
none``, or written by hand). On a page it is scaled to the width the
browser gives it, so a font size of ``s`` user units in a figure ``w`` units
wide, shown ``r`` CSS px wide, is ``s * r / w`` CSS px on screen. The
browser sweep records each figure's shown width at phone and desktop width
(tests/support/site_sweep.py); :func:`small_text` names the figure whose
smallest text is under MIN_TEXT_PX there.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

MIN_TEXT_PX = 10.0
_SIZE_IN_STYLE = re.compile(r"font-size:\s*([\d.]+)(px|pt)?")
_PT = 4 / 3  # CSS px per pt


def _size(element, inherited: float | None) -> float | None:
    style = _SIZE_IN_STYLE.search(element.get("style", ""))
    if style:
        return float(style[1]) * (_PT if style[2] == "pt" else 1)
    attribute = element.get("font-size")
    if attribute:
        number = re.match(r"[\d.]+", attribute)
        return float(number[0]) * (_PT if attribute.endswith("pt") else 1) if number else inherited
    return inherited


def text_sizes(svg: str) -> tuple[float, list[tuple[str, float]]]:
    """(the width of the figure in its own units, [(text, font size in those units)])."""
    root = ElementTree.fromstring(svg.encode("utf-8"))
    box = root.get("viewBox")
    width = float(box.split()[2]) if box else float(re.match(r"[\d.]+", root.get("width", "0"))[0])
    found: list[tuple[str, float]] = []

    def walk(element, inherited: float | None) -> None:
        size = _size(element, inherited)
        if element.tag.rsplit("}", 1)[-1] == "text":
            words = "".join(element.itertext()).strip()
            if words and size:
                found.append((words, size))
        for child in element:
            walk(child, size)

    walk(root, 16.0)  # a browser's default font size, where none is set
    return width, found


def small_text(name: str, svg: str, shown_width: float, viewport: int, minimum: float = MIN_TEXT_PX) -> list[str]:
    """What is too small to read in figure ``name`` shown ``shown_width`` CSS px
    wide on a ``viewport``-px-wide screen: one message naming its smallest text."""
    width, texts = text_sizes(svg)
    if not texts or not width:
        return []
    scale = shown_width / width
    too_small = [(size * scale, words, size) for words, size in texts if size * scale < minimum]
    if not too_small:
        return []
    px, words, size = min(too_small)
    return [
        f"figure {name}: {len(too_small)} of its {len(texts)} texts render under {minimum:.0f} px at {viewport} px "
        f"wide, the smallest '{words[:40]}' at {px:.1f} px (font {size:g} in a figure {width:.0f} units wide, "
        f"shown {shown_width:.0f} px wide); draw it narrower or with larger fonts, or serve a narrow variant"
    ]
