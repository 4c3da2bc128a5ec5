"""What readers install: the built wheel, in a fresh venv, works.

Every other test but copy isolation imports qkv from the source tree (an
editable install), so a module, a ``.sql`` query or an exercise starter left
out of the wheel, or a dependency qkv uses but does not declare, would pass
them all and break for every reader. The session fixture ``installed_wheel``
(tests/conftest.py, tests/support/wheel_venv.py; made once for all
pytest-xdist workers) runs the release dry run (``tests/support/release.py``,
the same as ``make dist``: build, ``twine check --strict``,
``check-wheel-contents``) and installs the wheel with nothing but its declared
dependencies (NumPy at the version in constraints.txt) into a fresh venv.

Every Python block of every page runs alone from that venv in
``tests/test_copy_isolation.py`` (one pass proves both that a block stands
alone and that it works from the wheel); the probe that every zygote there
passes first (``wheel_venv.not_from_the_wheel``: qkv from the venv, nothing
of the repository on sys.path) is checked here on planted zygotes. Here that
venv's Python, with no PYTHONPATH and run from ``/``, runs

* ``qkv-exercise list``, each starter, and the checker on a solution;
* every doctest in the installed package.

Three planted faults (a subpackage left out, the ``.sql`` files left out, an
undeclared import) are built into wheels of their own, installed over the
fresh venv's qkv, and must fail with their messages.
"""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import release  # tests/support: the release dry run
from docs_pipeline import AloneRunner, isolated_programs
from lock import canonical
from page_blocks import read_page
from wheel_venv import Venv, clean_env, not_from_the_wheel, third_party

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent
STARTERS = ROOT / "src" / "qkv" / "exercises" / "starters"
SOLUTIONS = ROOT / "tests" / "exercise_files"
EXERCISES = {"input-layer": "input_layer", "attention-head": "attention_head"}


def test_the_venv_holds_the_wheel_and_its_declared_dependencies_only(installed_wheel):
    venv = installed_wheel.venv
    frozen = venv.pip("list", "--format=freeze")
    names = {canonical(line.split("==")[0]) for line in frozen.stdout.split()}
    assert names == {"qkv", "numpy"}, frozen.stdout + frozen.stderr
    where = venv.run(venv.python, "-c", "import qkv; print(qkv.__file__, qkv.__version__)")
    path, version = where.stdout.split()
    assert path.startswith(str(venv.root)), path  # the wheel's qkv, not the source tree's
    assert version == release.version()


def programs(text: str) -> list:
    """(block, program, expected output) for every block copy-isolation runs
    (tests/support/docs_pipeline.py), minus the blocks the page skips."""
    page = read_page(text)
    return [
        (page.blocks[i], program, expected)
        for i, program, expected in isolated_programs(page)
        if page.skip_of(i) is None
    ]


@pytest.mark.parametrize(
    ("pythonpath", "message"),
    [
        pytest.param(
            "src",
            r"blocks import qkv from \S+/src/qkv/__init__\.py, not from the wheel installed in \S+/venv$",
            id="the-source-trees-qkv",
        ),
        pytest.param(
            "tests/support",
            r"blocks run from the wheel have the repository on sys.path: \S+/tests/support$",
            id="tests-support-on-sys-path",
        ),
    ],
)
def test_blocks_that_would_not_run_the_wheel_are_caught(installed_wheel, pythonpath, message):
    # Planted: the zygote of the venv's Python with a directory of the
    # repository on PYTHONPATH (the source tree's qkv; tests/support).
    venv = installed_wheel.venv
    runner = AloneRunner(venv.python, pythonpath=str(ROOT / pythonpath))
    try:
        assert runner.worker is not None  # the zygote started: it is what is checked
        problem = not_from_the_wheel(runner, venv)
    finally:
        runner.close()
    assert problem is not None and re.match(message, problem), problem


def test_a_block_that_imports_a_package_qkv_does_not_declare_gets_it_alone():
    assert third_party("import duckdb\nimport numpy as np\nimport qkv.sql\nimport sqlite3") == {"duckdb"}
    assert third_party("from transformers.models.llama import modeling_llama") == {"transformers", "torch"}
    assert third_party("import qkv\nimport math") == frozenset()


def test_qkv_exercise_list_and_starters_from_the_wheel(installed_wheel, tmp_path):
    venv = installed_wheel.venv
    cli = str(venv.root / "bin" / "qkv-exercise")
    listed = venv.run(cli, "list")
    assert listed.returncode == 0, listed.stderr
    for name in EXERCISES:
        assert name in listed.stdout, listed.stdout
    for name, module in EXERCISES.items():
        starter = venv.run(cli, "starter", name)
        assert starter.returncode == 0, starter.stderr
        assert starter.stdout.rstrip("\n") == (STARTERS / f"{module}.py").read_text(encoding="utf-8").rstrip("\n")
        mine = tmp_path / f"{module}.py"
        mine.write_text(starter.stdout, encoding="utf-8")
        unfinished = venv.run(cli, "check", name, str(mine))
        assert unfinished.returncode != 0 and "NotImplementedError" in unfinished.stdout, unfinished.stdout
        solved = venv.run(cli, "check", name, str(SOLUTIONS / f"{module}_solution.py"))
        assert solved.returncode == 0, solved.stdout + solved.stderr


DOCTESTS = textwrap.dedent(
    """
    import doctest, importlib, pkgutil, sys
    import qkv

    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    attempted = failed = modules = 0
    names = ["qkv"] + [info.name for info in pkgutil.walk_packages(qkv.__path__, "qkv.")]
    # An argument keeps the modules under it: python -c DOCTESTS qkv.sql
    names = [n for n in names if n == sys.argv[-1] or n.startswith(sys.argv[-1] + ".")] if sys.argv[1:] else names
    for name in names:
        result = doctest.testmod(importlib.import_module(name), optionflags=flags)
        attempted += result.attempted
        failed += result.failed
        modules += 1
    print(f"{modules} modules, {attempted} examples, {failed} failed")
    sys.exit(1 if failed or not attempted else 0)
    """
)


def test_public_api_doctests_pass_from_the_wheel(installed_wheel):
    venv = installed_wheel.venv
    result = venv.run(venv.python, "-c", DOCTESTS)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.strip().endswith(", 0 failed"), result.stdout


# --- Planted packaging faults: each wheel must fail, with its message. ---


def project_copy(where: Path) -> Path:
    """What a build reads: pyproject.toml, its readme and license, src/."""
    where.mkdir()
    for name in ("pyproject.toml", "README.pypi.md", "LICENSE"):
        shutil.copy2(ROOT / name, where / name)
    shutil.copytree(ROOT / "src", where / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return where


def build_wheel(project: Path, outdir: Path) -> Path:
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir), str(project)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (wheel,) = outdir.glob("qkv-*.whl")
    return wheel


def planted_wheel(tmp_path: Path, old: str, new: str) -> Path:
    project = project_copy(tmp_path / "project")
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    assert old in text, f"the fault's anchor {old!r} is gone from pyproject.toml"
    pyproject.write_text(text.replace(old, new, 1), encoding="utf-8")
    return build_wheel(project, tmp_path / "dist")


def installed_over(venv: Venv, wheel: Path, where: Path) -> dict[str, str]:
    """``wheel`` alone (no dependencies) in ``where``, ahead of the venv's qkv
    on PYTHONPATH: the reader's fresh venv, with the faulty wheel in it."""
    result = venv.pip("install", "--quiet", "--no-deps", "--target", str(where), str(wheel))
    assert result.returncode == 0, result.stdout + result.stderr
    return {**clean_env(), "PYTHONPATH": str(where)}


def test_a_subpackage_left_out_fails(installed_wheel, tmp_path):
    wheel = planted_wheel(
        tmp_path,
        '[tool.setuptools.packages.find]\nwhere = ["src"]',
        '[tool.setuptools.packages.find]\nwhere = ["src"]\nexclude = ["qkv.exercises*"]',
    )
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_wheel(wheel)
    message = str(caught.value)
    assert re.match(rf"{re.escape(wheel.name)} lacks \d+ file\(s\) of src/qkv: qkv/exercises/__init__.py, ", message), (
        message
    )
    assert message.count("qkv/exercises/") == sum(
        1 for f in (ROOT / "src/qkv/exercises").rglob("*") if f.is_file() and "__pycache__" not in f.parts
    ), message
    assert "qkv/exercises/starters/input_layer.py" in message
    # And what a reader meets: the command is installed, its module is not.
    venv = installed_wheel.venv
    env = installed_over(venv, wheel, tmp_path / "site")
    cli = str(tmp_path / "site" / "bin" / "qkv-exercise")
    listed = subprocess.run([cli, "list"], capture_output=True, text=True, env=env, cwd="/")
    assert listed.returncode != 0
    assert "ModuleNotFoundError: No module named 'qkv.exercises'" in listed.stderr, listed.stderr


def test_the_sql_files_left_out_fail(installed_wheel, tmp_path):
    wheel = planted_wheel(tmp_path, '"qkv.sql" = ["*.sql"]\n', "")
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_wheel(wheel)
    message = str(caught.value)
    assert message.startswith(f"{wheel.name} lacks 20 file(s) of src/qkv: qkv/sql/mask_causal.sql, "), message
    venv = installed_wheel.venv
    env = installed_over(venv, wheel, tmp_path / "site")
    # qkv.sql's doctests only: the whole package's run is test_public_api_doctests_pass_from_the_wheel.
    result = subprocess.run([venv.python, "-c", DOCTESTS, "qkv.sql"], capture_output=True, text=True, env=env, cwd="/")
    assert result.returncode != 0
    assert re.search(
        r"FileNotFoundError: \[Errno 2\] No such file or directory: '\S+/site/qkv/sql/\w+\.sql'", result.stdout
    ), result.stdout[-3000:]
    assert re.search(r"\d+ modules, \d+ examples, [1-9]\d* failed$", result.stdout.strip()), result.stdout[-300:]


def test_an_undeclared_dependency_fails(installed_wheel, tmp_path):
    # Planted: qkv.toy starts using PyYAML (installed in the development venv,
    # so every source-tree test passes) without declaring it.
    project = project_copy(tmp_path / "project")
    toy = project / "src" / "qkv" / "toy.py"
    source = toy.read_text(encoding="utf-8")
    toy.write_text(source.replace("import numpy as np\n", "import numpy as np\nimport yaml  # noqa: F401\n", 1))
    assert "import yaml" in toy.read_text(encoding="utf-8")
    wheel = build_wheel(project, tmp_path / "dist")
    release.check_wheel(wheel, project / "src")  # every file is there: only running it shows the fault
    venv = installed_wheel.venv
    env = installed_over(venv, wheel, tmp_path / "site")
    first_block = programs((ROOT / "docs" / "chapters" / "embeddings.md").read_text(encoding="utf-8"))[0][1]
    result = subprocess.run([venv.python, "-c", first_block], capture_output=True, text=True, env=env, cwd="/")
    assert result.returncode != 0
    assert result.stderr.strip().endswith("ModuleNotFoundError: No module named 'yaml'"), result.stderr[-1500:]


# --- Metadata a reader expects (PyPI's page, pip, type checkers). ---

LINK = re.compile(r"\]\(([^)\s]+)\)|<((?:https?://)?[^>\s]+)>")


def first_paragraph(markdown: str) -> str:
    """The first paragraph after the title."""
    return markdown.split("\n\n")[1].strip()


def local_links(markdown: str) -> list[str]:
    """Link targets a reader on PyPI could not follow (not http(s))."""
    targets = [a or b for a, b in LINK.findall(markdown)]
    return [t for t in targets if not t.startswith(("https://", "http://"))]


def test_the_pypi_description_is_the_readmes_first_paragraph_without_local_paths():
    pypi = (ROOT / "README.pypi.md").read_text(encoding="utf-8")
    assert first_paragraph(pypi) == first_paragraph((ROOT / "README.md").read_text(encoding="utf-8"))
    assert local_links(pypi) == []
    assert "docs/" not in pypi and "src/" not in pypi and "make " not in pypi


def test_local_links_are_caught():
    planted = "See [the contributing rules](CONTRIBUTING.md) and <https://example.org>, [ok](https://a.b/c)."
    assert local_links(planted) == ["CONTRIBUTING.md"]


def test_wheel_metadata(installed_wheel):
    wheel = installed_wheel.wheel
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta = email.message_from_string(archive.read(f"qkv-{release.version()}.dist-info/METADATA").decode("utf-8"))
    assert "qkv/py.typed" in names
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    # What a plain `pip install qkv` brings: NumPy and nothing else.
    assert [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r] == ["numpy<3,>=1.26"]
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL"))
    assert set(urls) >= {"Documentation", "Source", "Issues"}, urls
    assert all(url.startswith("https://") for url in urls.values()), urls
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().strip() == (ROOT / "README.pypi.md").read_text(encoding="utf-8").strip()
