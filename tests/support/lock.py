"""Print pinned versions (``name==version``) of some installed packages and
everything they depend on, as ``pip freeze`` would: the constraints that pin
PyTorch and the reference implementations in ``.ci/run``.

    python tests/support/lock.py torch transformers > constraints-torch.txt

(``make lock`` runs it.) Only installed distributions are followed; an
optional dependency (an extra) is followed only when it is installed.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

from packaging.requirements import Requirement


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: list[str]) -> dict[str, str]:
    """{canonical name: version} of ``roots`` and their installed dependencies."""
    seen: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = canonical(todo.pop())
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name in map(canonical, roots):
                raise SystemExit(f"{name} is not installed: install it before locking it") from None
            continue  # an optional dependency that is not installed
        seen[name] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # needed only with an extra or on another platform
            todo.append(req.name)
    return seen


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    pins = closure(argv)
    for name in sorted(pins):
        # The local label (2.13.0+cpu) is dropped: ==2.13.0 matches the CPU
        # build here and PyPI's build on a CI runner alike.
        print(f"{name}=={pins[name].split('+')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


#: The pre-commit hook repositories of .pre-commit-config.yaml and the
#: package of constraints.txt each runs.
PRE_COMMIT_PACKAGES = {
    "https://github.com/astral-sh/ruff-pre-commit": "ruff",
    "https://github.com/codespell-project/codespell": "codespell",
}


def pre_commit_drift(config: str, constraints: str) -> list[str]:
    """Each hook of ``config`` (.pre-commit-config.yaml) whose version is not
    the one ``constraints`` (constraints.txt) pins, or that the lock lacks."""
    import yaml

    pinned = dict(line.split("==", 1) for line in constraints.splitlines() if "==" in line and not line.startswith("#"))
    pinned = {name.lower(): version.strip() for name, version in pinned.items()}
    problems = []
    for repo in yaml.safe_load(config).get("repos", []):
        package = PRE_COMMIT_PACKAGES.get(repo["repo"])
        if package is None:
            problems.append(f"{repo['repo']}: not a hook the lock pins; add it to PRE_COMMIT_PACKAGES in lock.py")
        elif repo["rev"].removeprefix("v") != pinned.get(package):
            problems.append(
                f"{repo['repo']} is at {repo['rev']}, but constraints.txt pins {package}=={pinned.get(package)}; "
                f"set rev: v{pinned.get(package)}"
            )
    return problems
