"""JupyterLab's stylesheet as one cached file instead of inline in every notebook page.

mkdocs-jupyter's template inlines its copy of JupyterLab's CSS (``index.css``,
over 500 KB) and a theme (``theme-light.css`` or ``theme-dark.css``) as
``<style>`` blocks in the head of each notebook page, so a reader downloads
the same CSS again on each. The build writes the pair once, as
``assets/stylesheets/jupyter-<theme>.<hash>.css`` (the hash of its content,
so that a browser never keeps a stale copy after mkdocs-jupyter changes it),
and ``shared_stylesheet`` puts one ``<link rel="stylesheet">`` where the two
blocks were: same rules, same order, and the Content-Security-Policy's
``style-src 'self'`` allows it.

A page whose blocks are not found (mkdocs-jupyter changed its template or
its CSS) fails the build naming the page, rather than carrying that CSS
inline again unnoticed.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import mkdocs_jupyter

ASSETS = Path(mkdocs_jupyter.__file__).parent / "templates" / "mkdocs_html" / "assets"
THEMES = ("theme-light.css", "theme-dark.css")


def _block(css: str) -> str:
    # nbconvert's resources.include_css (nbconvert/exporters/html.py) writes this.
    return f'<style type="text/css">\n{css}</style>'


@functools.cache
def _read(assets: Path) -> dict[str, str]:
    return {name: (assets / name).read_text(encoding="utf-8") for name in ("index.css", *THEMES)}


def stylesheet(theme: str, assets: Path = ASSETS) -> tuple[str, str]:
    """(site path, content) of the shared file for ``theme`` (one of ``THEMES``):
    index.css, then the theme, as the page had them."""
    css = _read(assets)
    content = css["index.css"] + "\n" + css[theme]
    digest = hashlib.sha256(content.encode()).hexdigest()[:10]
    return f"assets/stylesheets/jupyter-{theme[len('theme-') : -len('.css')]}.{digest}.css", content


def shared_stylesheet(html: str, href_of, where: str, assets: Path = ASSETS) -> tuple[str, str]:
    """``html`` (a notebook page's content) with its inline JupyterLab CSS
    replaced by a link; returns (html, the theme it used).

    ``href_of(site_path)``: the link's URL from this page. Raises ValueError,
    naming ``where``, unless the page holds mkdocs-jupyter's index.css block
    once and one theme block once."""
    css = _read(assets)
    index = _block(css["index.css"])
    themes = [theme for theme in THEMES if html.count(_block(css[theme])) == 1]
    if html.count(index) != 1 or len(themes) != 1:
        raise ValueError(
            f"{where}: mkdocs-jupyter's inline stylesheet (its assets/index.css and one of "
            f"{', '.join(THEMES)}, each a <style> block) is not in the page once: its template or "
            "CSS changed; update docs/hooks/notebook_css.py to match the installed mkdocs-jupyter"
        )
    (theme,) = themes
    path, _ = stylesheet(theme, assets)
    link = f'<link rel="stylesheet" href="{href_of(path)}">'
    # The theme's rules follow index.css's in the page and in the file.
    return html.replace(_block(css[theme]), "").replace(index, link), theme
