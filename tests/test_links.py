"""Link check of the built site, internal anchors included: every ``<a href>``
to a page of the site resolves to a file, and every ``#fragment`` to an
element id on that page (tests/support/site_links.py)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from site_links import broken_links

ROOT = Path(__file__).resolve().parent.parent


def site_path() -> str:
    """The path of mkdocs.yml's site_url: 404.html links from the host's root."""
    found = re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.MULTILINE)
    return urlsplit(found[1]).path if found else "/"


@pytest.mark.build
def test_every_internal_link_and_anchor_of_the_built_site_resolves(built_site):
    problems = broken_links(built_site, site_path())
    assert not problems, "broken links in the built site:\n" + "\n".join(problems)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_planted_broken_anchor_and_page_are_named(tmp_path):
    write(
        tmp_path / "index.html",
        '<a href="chapters/order/#why">ok</a>\n'
        '<a href="#top">top</a> <h1 id="top">Home</h1>\n'
        '<a href="https://arxiv.org/abs/1706.03762#x">external, not checked</a>\n',
    )
    write(
        tmp_path / "chapters" / "order" / "index.html",
        '<h2 id="why">Why</h2>\n'
        '<p>See <a href="../attention/#the-numbers-by-hand">the numbers</a>,\n'
        '<a href="../sinusoidal/">chapter 3</a> and <a href="#why-not">below</a>.</p>\n'
        '<a href="../../../outside/">up</a> <a href="../figures/pe.svg">figure</a>\n',
    )
    write(tmp_path / "chapters" / "attention" / "index.html", '<h2 id="the-numbers">The numbers</h2>\n')
    assert broken_links(tmp_path) == [
        'chapters/order/index.html:2: href="../attention/#the-numbers-by-hand": '
        'no id="the-numbers-by-hand" in chapters/attention/index.html',
        'chapters/order/index.html:3: href="../sinusoidal/": no such page in the built site '
        "(chapters/sinusoidal/index.html)",
        'chapters/order/index.html:3: href="#why-not": no id="why-not" in chapters/order/index.html',
        'chapters/order/index.html:4: href="../../../outside/": points outside the site (base /)',
        'chapters/order/index.html:4: href="../figures/pe.svg": no such page in the built site '
        "(chapters/figures/pe.svg)",
    ]


def test_links_from_the_hosts_root_must_be_under_the_sites_path(tmp_path):
    write(tmp_path / "chapters" / "order" / "index.html", '<h2 id="why">Why</h2>\n')
    write(
        tmp_path / "404.html",
        '<a href="/qkv/chapters/order/#why">ok</a>\n'
        '<a href="/qkv/">home</a>\n'
        '<a href="/chapters/order/">outside the base</a>\n'
        '<a href="/qkv/chapters/order/#how">missing anchor</a>\n',
    )
    write(tmp_path / "index.html", "<h1>Home</h1>\n")
    assert broken_links(tmp_path, "/qkv/") == [
        '404.html:3: href="/chapters/order/": points outside the site (base /qkv/)',
        '404.html:4: href="/qkv/chapters/order/#how": no id="how" in chapters/order/index.html',
    ]
