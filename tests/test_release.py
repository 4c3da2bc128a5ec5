"""The release dry run's own checks (tests/support/release.py) and the torch
lock (tests/support/lock.py), each on a planted fault; fast, no build."""

from __future__ import annotations

import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import lock
import release

ROOT = Path(__file__).resolve().parent.parent
VERSION = release.version()


def test_the_changelog_has_an_entry_for_the_version():
    versions = release.changelog_versions((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert VERSION in versions
    release.check_tag(f"v{VERSION}")  # the tag the release workflow would get


def test_a_tag_that_is_not_the_version_is_refused():
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_tag("v9.9.9")
    assert str(caught.value) == f"tag v9.9.9 does not match pyproject.toml's version: expected v{VERSION}"


def test_a_version_without_a_changelog_entry_is_refused(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n\n- something new\n", encoding="utf-8")
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_tag(f"v{VERSION}", tmp_path)
    assert str(caught.value) == (
        f"CHANGELOG.md has no entry '## [{VERSION}] - YYYY-MM-DD': move the Unreleased notes under it"
    )


def test_a_file_missing_from_the_wheel_is_named(tmp_path):
    source = tmp_path / "src"
    (source / "qkv" / "sql").mkdir(parents=True)
    for name in ("qkv/__init__.py", "qkv/sql/__init__.py", "qkv/sql/scores.sql"):
        (source / name).write_text("", encoding="utf-8")
    wheel = tmp_path / f"qkv-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:  # planted: the .sql file is not in it
        for name in ("qkv/__init__.py", "qkv/sql/__init__.py", f"qkv-{VERSION}.dist-info/licenses/LICENSE"):
            archive.writestr(name, "")
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_wheel(wheel, source)
    assert str(caught.value) == (
        f"{wheel.name} lacks 1 file(s) of src/qkv: qkv/sql/scores.sql "
        "(pyproject.toml's [tool.setuptools.packages.find] and [tool.setuptools.package-data] must take them in)"
    )


def test_a_wheel_without_the_license_is_refused(tmp_path):
    source = tmp_path / "src"
    (source / "qkv").mkdir(parents=True)
    (source / "qkv" / "__init__.py").write_text("", encoding="utf-8")
    wheel = tmp_path / f"qkv-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("qkv/__init__.py", "")
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_wheel(wheel, source)
    assert str(caught.value) == (
        f"{wheel.name} lacks qkv-{VERSION}.dist-info/licenses/LICENSE (license-files in pyproject.toml)"
    )


def test_the_lock_follows_dependencies_and_drops_local_labels(capsys):
    pins = lock.closure(["pytest"])
    assert pins["pytest"] == metadata.version("pytest")
    assert "pluggy" in pins and "iniconfig" in pins  # pytest's own dependencies
    lock.main(["pytest"])
    lines = capsys.readouterr().out.splitlines()
    assert f"pytest=={metadata.version('pytest')}" in lines
    assert all("+" not in line for line in lines)


def test_the_lock_refuses_a_package_that_is_not_installed():
    with pytest.raises(SystemExit, match="no-such-package is not installed: install it before locking it"):
        lock.closure(["no-such-package"])


def test_constraints_torch_is_current(capsys):
    from needs import require

    try:
        metadata.version("torch")
    except metadata.PackageNotFoundError:
        require(False, "torch is not installed: .ci/run installs it from constraints-torch.txt")
    lock.main(["torch", "transformers", "rotary-embedding-torch", "einops"])
    generated = capsys.readouterr().out
    committed = (ROOT / "constraints-torch.txt").read_text(encoding="utf-8")
    assert committed == generated, "constraints-torch.txt differs from the installed packages: run `make lock`"


def test_pre_commit_hooks_match_the_lock():
    config = (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    constraints = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    assert lock.pre_commit_drift(config, constraints) == []


def test_a_pre_commit_hook_off_the_lock_is_named():
    config = (
        "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.1.0\n    hooks: [{id: ruff}]\n"
        "  - repo: https://github.com/psf/black\n    rev: 24.1.0\n    hooks: [{id: black}]\n"
    )
    assert lock.pre_commit_drift(config, "ruff==0.17.6\ncodespell==2.4.3\n") == [
        "https://github.com/astral-sh/ruff-pre-commit is at v0.1.0, but constraints.txt pins ruff==0.17.6; "
        "set rev: v0.17.6",
        "https://github.com/psf/black: not a hook the lock pins; add it to PRE_COMMIT_PACKAGES in lock.py",
    ]
