"""The release dry run: build the sdist and the wheel, then check them, as the
release workflow does before it publishes (``make dist`` runs this).

    python tests/support/release.py [OUTDIR] [--tag vX.Y.Z]   # default: dist/

With ``--tag`` (the release workflow passes the pushed tag) it first checks
that the tag is ``v`` + pyproject.toml's version and that CHANGELOG.md has
an entry for that version.

Steps, each must pass: ``python -m build`` (an isolated build from the
source tree), ``twine check --strict`` (the metadata PyPI will render) and
``check-wheel-contents`` (no stray, duplicate or empty files in the wheel).
Then it checks what those tools do not: the wheel's version equals
pyproject.toml's, and the wheel holds every module and package-data file of
``src/qkv`` (a ``.sql`` query or an exercise starter left out would break for
every reader and pass every test run from the source tree).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src"
# Files of src/qkv that are not meant to ship (none today).
NOT_SHIPPED: set[str] = set()


class ReleaseCheckFailed(RuntimeError):
    pass


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def changelog_versions(text: str) -> list[str]:
    """The released versions in a Keep a Changelog file (``## [0.1.0] - 2026-12-01``)."""
    return re.findall(r"^## \[(\d[^\]]*)\] - \d{4}-\d{2}-\d{2}\s*$", text, flags=re.MULTILINE)


def check_tag(tag: str, project: Path = ROOT) -> None:
    """The pushed tag names pyproject.toml's version, which has a changelog entry."""
    want = f"v{version()}"
    if tag != want:
        raise ReleaseCheckFailed(f"tag {tag} does not match pyproject.toml's version: expected {want}")
    changelog = project / "CHANGELOG.md"
    if version() not in changelog_versions(changelog.read_text(encoding="utf-8")):
        raise ReleaseCheckFailed(
            f"CHANGELOG.md has no entry '## [{version()}] - YYYY-MM-DD': move the Unreleased notes under it"
        )
    print(f"ok   tag {tag} = pyproject.toml's version, with a CHANGELOG.md entry")


def _run(step: str, *args: str, cwd: Path = ROOT) -> str:
    started = time.perf_counter()
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-3000:]
        raise ReleaseCheckFailed(f"{step} failed (exit {result.returncode}):\n{output}")
    print(f"ok   {step} ({seconds:.1f} s)")
    return result.stdout + result.stderr


def source_files(source: Path = SOURCE) -> set[str]:
    """What the wheel must hold: every file under src/qkv but caches."""
    files = set()
    for path in (source / "qkv").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files.add(path.relative_to(source).as_posix())
    return files - NOT_SHIPPED


def missing_from_wheel(wheel: Path, source: Path = SOURCE) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    return sorted(source_files(source) - shipped)


def check_wheel(wheel: Path, source: Path = SOURCE) -> None:
    """The wheel holds every file of src/qkv, the license and the version."""
    missing = missing_from_wheel(wheel, source)
    if missing:
        raise ReleaseCheckFailed(
            f"{wheel.name} lacks {len(missing)} file(s) of src/qkv: {', '.join(missing)} "
            "(pyproject.toml's [tool.setuptools.packages.find] and [tool.setuptools.package-data] must take them in)"
        )
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    expected = f"qkv-{version()}.dist-info/licenses/LICENSE"
    if expected not in names:
        raise ReleaseCheckFailed(f"{wheel.name} lacks {expected} (license-files in pyproject.toml)")


def dry_run(outdir: Path, project: Path = ROOT) -> Path:
    """Build and check; return the wheel's path."""
    outdir.mkdir(parents=True, exist_ok=True)
    for old in list(outdir.glob("qkv-*.whl")) + list(outdir.glob("qkv-*.tar.gz")):
        old.unlink()
    python = sys.executable
    _run("python -m build", python, "-m", "build", "--outdir", str(outdir), str(project))
    wheels = sorted(outdir.glob("qkv-*.whl"))
    sdists = sorted(outdir.glob("qkv-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise ReleaseCheckFailed(f"expected one wheel and one sdist in {outdir}, found {wheels + sdists}")
    wheel, sdist = wheels[0], sdists[0]
    _run("twine check --strict", python, "-m", "twine", "check", "--strict", str(wheel), str(sdist))
    _run("check-wheel-contents", python, "-m", "check_wheel_contents", str(wheel))
    want = f"qkv-{version()}-py3-none-any.whl"
    if wheel.name != want:
        raise ReleaseCheckFailed(f"built {wheel.name}, expected {want} (the version in pyproject.toml)")
    check_wheel(wheel, project / "src")
    print(f"ok   every file of src/qkv, the license and version {version()} are in the wheel")
    print(f"built {sdist.relative_to(outdir.parent) if outdir.parent in sdist.parents else sdist}")
    print(f"built {wheel.relative_to(outdir.parent) if outdir.parent in wheel.parents else wheel}")
    return wheel


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Build the sdist and wheel and check them (the release dry run).")
    parser.add_argument("outdir", nargs="?", default=str(ROOT / "dist"))
    parser.add_argument("--tag", help="the pushed tag, e.g. v0.1.0 (the release workflow)")
    args = parser.parse_args(argv)
    try:
        if args.tag is not None:
            check_tag(args.tag)
        dry_run(Path(args.outdir).resolve())
    except ReleaseCheckFailed as error:
        print(f"FAIL {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
