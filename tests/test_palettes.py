"""The light and dark palettes differ in colours alone, so the browser sweep
checks geometry in one palette (tests/support/site_sweep.py ``CONFIGS``: no
dark-phone load). The site's own stylesheets keep it so."""

from __future__ import annotations

from pathlib import Path

import pytest

from site_sweep import palette_rules_beyond_colour

ROOT = Path(__file__).resolve().parent.parent
STYLESHEETS = sorted((ROOT / "docs").rglob("*.css"))


def test_the_sites_palette_rules_set_colours_only():
    assert STYLESHEETS, "no stylesheet under docs/"
    rules = 0
    problems = []
    for sheet in STYLESHEETS:
        text = sheet.read_text(encoding="utf-8")
        rules += text.count('[data-md-color-scheme="slate"]')
        problems += palette_rules_beyond_colour(text, str(sheet.relative_to(ROOT)))
    assert rules >= 3, f"only {rules} dark-palette rules found: is the check reading the right files?"
    assert not problems, "\n".join(problems)


PLANTED = {
    "a size in the dark palette": (
        '.quiz { width: 100%; }\n[data-md-color-scheme="slate"] .quiz {\n  color: #fff;\n  width: 120%;\n}\n',
        'planted.css:4: `[data-md-color-scheme="slate"] .quiz` sets width in one palette only',
    ),
    "hidden under a system preference": (
        "@media (prefers-color-scheme: dark) {\n  .figure { display: none; }\n}\n",
        "planted.css:2: `.figure` sets display in one palette only",
    ),
    "a custom property that is not a colour": (
        '[data-md-color-scheme="slate"] { --qkv-gap: 2rem; --qkv-link-color: #9fb4ff; }\n',
        'planted.css:1: `[data-md-color-scheme="slate"]` sets --qkv-gap in one palette only',
    ),
}


@pytest.mark.parametrize("css, message", PLANTED.values(), ids=PLANTED)
def test_a_palette_rule_that_moves_things_is_named_with_file_and_line(css, message):
    problems = palette_rules_beyond_colour(css, "planted.css")
    assert len(problems) == 1, problems
    assert problems[0].startswith(message), problems
    assert problems[0].endswith('add "dark-phone" to CONFIGS'), problems


def test_colours_shadows_and_backgrounds_in_one_palette_pass():
    css = (
        '[data-md-color-scheme="slate"] { --md-typeset-a-color: #9fb4ff; color-scheme: dark; }\n'
        '[data-md-color-scheme="slate"] .x { color: red; background-color: #000; border-color: #111;'
        " box-shadow: 0 0 1px #000; fill: #fff; }\n"
        ".elsewhere { width: 10px; }\n"
    )
    assert palette_rules_beyond_colour(css, "ok.css") == []
