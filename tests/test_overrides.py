"""The site's coupling to the theme's internals, kept in view.

* Forked theme partials: every file under ``docs/overrides/`` copies one of
  Material for MkDocs' templates and changes it. The copy does not follow
  Material's upgrades, so each fork records the sha256 of the original it was
  made from; when the installed Material's original differs, the test fails
  naming the partial, and says how to carry the upgrade over.
* ``docs/javascripts/qkv.js``: the Material and Jupyter selectors it relies on
  live in its ``THEME`` object, and it never reads Material's private
  configuration (``#__config``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = ROOT / "docs" / "overrides"
SCRIPT = ROOT / "docs" / "javascripts" / "qkv.js"
RECORD = "tests/test_overrides.py FORKS"

#: Each fork under docs/overrides/ (its path there is the path of the original
#: under material/templates/): the mkdocs-material version it was forked from
#: and the sha256 of that version's original.
FORKS: dict[str, tuple[str, str]] = {
    "partials/copyright.html": ("9.8.2", "bc86bca3bf75070fe5d72e2a3463bdddf87c10f4d6459c945fe81c5d384e35ea"),
    "partials/javascripts/palette.html": (
        "9.8.2",
        "8790389765ea6036effddba548b15093bb05bdc75624eaeaf8b13f3c24be4ab5",
    ),
    "partials/palette.html": ("9.8.2", "fb935107ae7d3d7475965019eec36c1ad72bf1d154254dab2474921fcd2710e3"),
    "partials/search.html": ("9.8.2", "bfd556535abcddb99396ab2a7e3acc2ebcd3f36756007d3969396caa4126be30"),
    "partials/source.html": ("9.8.2", "6847616d67be4920d39c278c2799bf20222bbc02ee2a8393aca85e3eaa518752"),
}


def material_templates() -> Path:
    material = pytest.importorskip("material", reason="mkdocs-material is not installed: `make install`")
    return Path(material.__file__).resolve().parent / "templates"


def fork_problems(overrides: Path, templates: Path, forks: dict[str, tuple[str, str]], version: str) -> list[str]:
    """What is wrong between the forks in ``overrides`` and the theme's ``templates``.

    One message per partial, naming it, with what to do.
    """
    problems = []
    present = sorted(p.relative_to(overrides).as_posix() for p in overrides.rglob("*") if p.is_file())
    for name in present:
        fork = f"docs/overrides/{name}"
        original = templates / name
        if name not in forks:
            problems.append(
                f"{fork}: not recorded; if it forks Material's {name}, add "
                f'"{name}": ("{version}", "<sha256 of the original>") to {RECORD}'
            )
            continue
        forked_from, recorded = forks[name]
        if not original.is_file():
            problems.append(
                f"{fork}: mkdocs-material {version} has no {name} any more (forked from {forked_from}); "
                "find where the theme moved it and fork that"
            )
            continue
        installed = hashlib.sha256(original.read_bytes()).hexdigest()
        if installed != recorded:
            problems.append(
                f"{fork}: Material's original changed (forked from mkdocs-material {forked_from}, "
                f"sha256 {recorded[:12]}...; installed mkdocs-material {version} has sha256 "
                f"{installed[:12]}...). Diff {original} against the fork, carry the change over, "
                f'then record "{name}": ("{version}", "{installed}") in {RECORD}'
            )
    for name in sorted(set(forks) - set(present)):
        problems.append(f"docs/overrides/{name}: recorded in {RECORD} but the fork is gone; remove the record")
    return problems


def test_each_forked_partial_matches_the_installed_materials_original():
    templates = material_templates()
    version = importlib.metadata.version("mkdocs-material")
    problems = fork_problems(OVERRIDES, templates, FORKS, version)
    assert not problems, "\n".join(problems)


@pytest.fixture
def theme_copy(tmp_path):
    """A copy of the overrides and of the originals they fork, to plant faults in."""
    templates = material_templates()
    overrides, originals = tmp_path / "overrides", tmp_path / "templates"
    for name in FORKS:
        for source, target in ((OVERRIDES / name, overrides / name), (templates / name, originals / name)):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    return overrides, originals


def test_a_changed_original_fails_naming_the_partial(theme_copy):
    overrides, originals = theme_copy
    search = originals / "partials" / "search.html"
    search.write_text(search.read_text() + "<!-- upstream change -->\n")
    problems = fork_problems(overrides, originals, FORKS, "99.0.0")
    assert len(problems) == 1, problems
    message = problems[0]
    assert message.startswith("docs/overrides/partials/search.html: Material's original changed")
    assert "forked from mkdocs-material 9.8.2" in message
    assert "installed mkdocs-material 99.0.0" in message
    new = hashlib.sha256(search.read_bytes()).hexdigest()
    assert f'record "partials/search.html": ("99.0.0", "{new}") in {RECORD}' in message


def test_an_unrecorded_fork_and_a_vanished_original_fail(theme_copy):
    overrides, originals = theme_copy
    (overrides / "partials" / "header.html").write_text("<header></header>\n")
    (originals / "partials" / "copyright.html").unlink()
    problems = fork_problems(overrides, originals, FORKS, "99.0.0")
    assert problems == [
        "docs/overrides/partials/copyright.html: mkdocs-material 99.0.0 has no partials/copyright.html "
        "any more (forked from 9.8.2); find where the theme moved it and fork that",
        "docs/overrides/partials/header.html: not recorded; if it forks Material's partials/header.html, "
        f'add "partials/header.html": ("99.0.0", "<sha256 of the original>") to {RECORD}',
    ]


# --- docs/javascripts/qkv.js -------------------------------------------------

#: Class names that belong to Material (md-*) or to the notebook pages (jp-*,
#: jupyter-*), as they appear in a selector.
THEME_CLASS = re.compile(r"\.(?:md|jp)-[\w-]+|\.jupyter-[\w-]+|#__\w+")


def without_comments(script: str) -> str:
    """``script`` with its comments blanked out, line numbers kept (strings
    in qkv.js hold no ``//`` or ``/*``)."""
    script = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), script, flags=re.DOTALL)
    return re.sub(r"(?<!:)//[^\n]*", "", script)


def theme_selector_problems(script: str) -> list[str]:
    """Theme selectors outside the ``THEME`` object, and reads of ``#__config``."""
    code = without_comments(script)
    match = re.search(r"^  var THEME = \{\n.*?^  \};\n", code, re.MULTILINE | re.DOTALL)
    if match is None:
        return ["docs/javascripts/qkv.js: no `var THEME = { ... };` object holding the theme's selectors"]
    first = code.count("\n", 0, match.start()) + 1
    last = code.count("\n", 0, match.end())
    problems = []
    for number, line in enumerate(code.splitlines(), start=1):
        if "__config" in line:
            problems.append(
                f"docs/javascripts/qkv.js:{number}: reads Material's private #__config; take the site's "
                "root from the script's own address (SITE_ROOT)"
            )
            continue
        if first <= number <= last:
            continue
        for found in THEME_CLASS.findall(line):
            problems.append(
                f"docs/javascripts/qkv.js:{number}: theme selector {found!r} outside THEME; "
                "add it to the THEME object at the top and use THEME.<name>"
            )
    return problems


def test_qkv_js_keeps_theme_selectors_in_one_place():
    assert theme_selector_problems(SCRIPT.read_text()) == []


def test_a_theme_selector_outside_theme_or_a_config_read_fails():
    script = SCRIPT.read_text()
    planted = script.replace(
        "  function mountWidgets() {",
        '  var header = document.querySelector(".md-header__title");\n'
        '  var config = JSON.parse(document.getElementById("__config").textContent);\n'
        "  function mountWidgets() {",
    )
    line = planted.splitlines().index('  var header = document.querySelector(".md-header__title");') + 1
    assert theme_selector_problems(planted) == [
        f"docs/javascripts/qkv.js:{line}: theme selector '.md-header__title' outside THEME; "
        "add it to the THEME object at the top and use THEME.<name>",
        f"docs/javascripts/qkv.js:{line + 1}: reads Material's private #__config; take the site's "
        "root from the script's own address (SITE_ROOT)",
    ]
