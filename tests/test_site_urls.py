"""The published site's address and the repository's live in mkdocs.yml
(site_url, repo_url); pyproject.toml's [project.urls] must say the same."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

import notebooks  # docs/hooks

ROOT = Path(__file__).resolve().parent.parent


def mkdocs_config(text: str | None = None) -> dict:
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml carries !!python/name tags; they do not matter here.
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    return yaml.load(text or (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


def disagreements(config: dict, project_urls: dict) -> list[str]:
    """Where pyproject.toml's [project.urls] and mkdocs.yml's site_url/repo_url differ."""
    site, repo = config["site_url"], config["repo_url"].rstrip("/")
    wanted = {
        "Documentation": site,
        "Source": repo,
        "Issues": f"{repo}/issues",
        "Changelog": f"{repo}/blob/main/CHANGELOG.md",
    }
    return [
        f"pyproject.toml [project.urls] {key} = {project_urls.get(key)!r}, mkdocs.yml says {value!r}"
        for key, value in wanted.items()
        if project_urls.get(key) != value
    ]


def project_urls() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]


def test_pyproject_urls_agree_with_mkdocs_yml():
    assert disagreements(mkdocs_config(), project_urls()) == []


def test_the_site_is_published_under_the_repository_name():
    config = mkdocs_config()
    assert config["site_url"] == "https://qkv-course.github.io/qkv/"
    assert config["repo_url"] == "https://github.com/qkv-course/qkv"
    assert notebooks.repository_url() == config["repo_url"]


def test_a_changed_site_url_is_reported():
    config = mkdocs_config()
    config["site_url"] = "https://example.org/qkv/"
    assert disagreements(config, project_urls()) == [
        "pyproject.toml [project.urls] Documentation = 'https://qkv-course.github.io/qkv/', "
        "mkdocs.yml says 'https://example.org/qkv/'"
    ]
