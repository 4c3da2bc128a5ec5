"""The strict build itself, and what it must not contain."""

from __future__ import annotations

import re
from pathlib import Path

import parts  # docs/hooks, on pytest's pythonpath

ROOT = Path(__file__).resolve().parent.parent
# Anything the browser would fetch on load: scripts, styles, images, fonts, frames.
REMOTE_LOAD = re.compile(
    r"""<(?:script|img|iframe|source|audio|video)\b[^>]*\ssrc=["'](?:https?:)?//"""
    r"""|<link\b[^>]*\brel=["'](?:stylesheet|preload|preconnect|icon|modulepreload)["'][^>]*href=["'](?:https?:)?//"""
    r"""|<script\b[^>]*\ssrc=["']["']"""
    r"""|import\(\s*["'](?:https?:)?//"""
    r"""|@import\s+url\(["']?(?:https?:)?//|url\(["']?https?://""",
    re.IGNORECASE,
)


def test_strict_build_succeeds(built_site):
    assert (built_site / "index.html").is_file()
    assert (built_site / "figures" / "pe-heatmap.svg").is_file()


def test_no_page_loads_anything_from_another_host(built_site):
    offenders = []
    for path in list(built_site.rglob("*.html")) + list(built_site.rglob("*.css")):
        if "search" in path.parts:
            continue
        for match in REMOTE_LOAD.finditer(path.read_text(encoding="utf-8", errors="replace")):
            offenders.append(f"{path.relative_to(built_site)}: {match.group(0)[:120]}")
    assert not offenders, "\n".join(offenders)


def test_no_tex_left_unconverted(built_site):
    for path in built_site.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert 'class="arithmatex"' not in text, f"{path}: math left for a JavaScript renderer"


def test_figures_are_byte_stable():
    for page in parts.load().values():
        for fig in page.figures.values():
            first, second = fig.svg(), fig.svg()
            assert first == second, f"{fig.path} changes from one build to the next"
            assert "<svg" in first
