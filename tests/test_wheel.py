"""What readers install: the built wheel, in a fresh venv, runs the docs.

Every other test imports qkv from the source tree (an editable install), so a
module, a ``.sql`` query or an exercise starter left out of the wheel, or a
dependency qkv uses but does not declare, would pass them all and break for
every reader. Here the release dry run (``tests/support/release.py``, the same
as ``make dist``: build, ``twine check --strict``, ``check-wheel-contents``)
builds the wheel; a fresh venv gets that wheel and nothing but its declared
dependencies (``pip install``, NumPy at the version in constraints.txt); and
that venv's Python, with no PYTHONPATH and run from ``/``, runs

* every Python block of every page, alone, as ``tests/test_copy_isolation.py``
  does (output compared exactly), each in a child forked from a zygote of
  that Python which has imported only NumPy and the wheel's qkv
  (``docs_pipeline.AloneRunner``; a probe through each zygote checks that
  qkv comes from the venv and nothing of the repository is on sys.path).
  A block that imports a package qkv does not depend on (torch in the
  PyTorch tabs, transformers in a cross-check, duckdb in the SQL chapter)
  gets that package as installed here, through a PYTHONPATH holding links to
  it and its dependencies only (never qkv, never the source tree), in a
  zygote of its own that has imported the packages all such blocks import
  (torch); where it is not installed the block is not run (a skip, a
  failure under CI=true);
* ``qkv-exercise list``, each starter, and the checker on a solution;
* every doctest in the installed package.

Three planted faults (a subpackage left out, the ``.sql`` files left out, an
undeclared import) are built into wheels of their own, installed over the
fresh venv's qkv, and must fail with their messages. About a minute in all
on a busy 2-core machine, half of it the blocks (marked ``wheel``).
"""

from __future__ import annotations

import email
import os
import queue
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

import release  # tests/support: the release dry run
from docs_pipeline import AloneRunner, isolated_programs
from docs_pipeline import normalise_output as normalise
from lock import canonical, closure
from needs import imported_modules
from page_blocks import read_page

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))
STARTERS = ROOT / "src" / "qkv" / "exercises" / "starters"
SOLUTIONS = ROOT / "tests" / "exercise_files"
EXERCISES = {"input-layer": "input_layer", "attention-head": "attention_head"}


@dataclass
class Venv:
    root: Path
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """A command of the venv, with nothing of the repository in reach."""
        return subprocess.run(
            args, capture_output=True, text=True, cwd=kwargs.pop("cwd", "/"), env=clean_env(), timeout=300, **kwargs
        )


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}
    env["PATH"] = "/usr/bin:/bin"
    return env


def make_venv(where: Path, wheel: Path) -> Venv:
    """A fresh venv holding ``wheel`` and what it declares, nothing else."""
    venv = Venv(where)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True)
    installed = venv.run(
        venv.python, "-m", "pip", "install", "--quiet", "--no-input",
        "-c", str(ROOT / "constraints.txt"), str(wheel),
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    venv.seconds["venv and pip install"] = time.perf_counter() - started
    return venv


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Venv]:
    base = tmp_path_factory.mktemp("wheel")
    started = time.perf_counter()
    try:
        wheel = release.dry_run(base / "dist")
    except release.ReleaseCheckFailed as error:
        pytest.fail(str(error), pytrace=False)
    seconds = time.perf_counter() - started
    venv = make_venv(base / "venv", wheel)
    venv.seconds["release dry run"] = seconds
    return wheel, venv


#: Reference implementations whose metadata leaves torch out (an extra).
TORCH_MODELS = {"transformers", "rotary-embedding-torch"}


@cache
def module_owners() -> dict[str, list[str]]:
    """:func:`importlib.metadata.packages_distributions`, read once (each call
    reads every installed distribution's file list: a fifth of a second)."""
    return metadata.packages_distributions()


def third_party_modules(program: str) -> frozenset[str]:
    """Top-level modules a block imports that are not the standard library,
    qkv or NumPy (e.g. torch, transformers, duckdb)."""
    modules = imported_modules(program)
    return frozenset(m for m in modules if m not in sys.stdlib_module_names and m not in {"qkv", "numpy"})


def third_party(program: str) -> frozenset[str]:
    """Distributions a block imports that the wheel does not bring: not the
    standard library, not qkv, not NumPy (e.g. torch, transformers, duckdb)."""
    owners = module_owners()
    names = set()
    for module in third_party_modules(program):
        names.update(canonical(name) for name in owners.get(module, [module]))
    if names & TORCH_MODELS:
        names.add("torch")  # they run on torch but declare it as an extra only
    return frozenset(names)


def overlay(where: Path, distributions: frozenset[str]) -> str | None:
    """A directory of links to ``distributions`` and what they depend on, NumPy
    and qkv excluded: a block's extra requirements (the PyTorch tab's torch,
    the DuckDB example's duckdb), nothing more. None if one is not installed."""
    try:
        names = closure(sorted(distributions))
    except SystemExit:  # one of them is not installed here
        return None
    where.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name in {"numpy", "qkv"}:
            continue
        dist = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__", "bin"}:
            source = Path(dist.locate_file(top))
            if source.exists() and not (where / top).exists():
                (where / top).symlink_to(source)
    return str(where)


def test_the_venv_holds_the_wheel_and_its_declared_dependencies_only(built):
    wheel, venv = built
    frozen = venv.run(venv.python, "-m", "pip", "list", "--format=freeze")
    names = {canonical(line.split("==")[0]) for line in frozen.stdout.split()}
    assert names - {"pip", "setuptools"} == {"qkv", "numpy"}, frozen.stdout
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


#: What a block run from the wheel sees: where qkv comes from, and sys.path.
WHERE_FROM = "import os, sys, qkv\nprint(qkv.__file__)\nprint(*map(os.path.abspath, sys.path), sep='\\n')"


def not_from_the_wheel(runner: AloneRunner, venv: Venv) -> str | None:
    """Why blocks run through ``runner`` would not test the wheel installed in
    ``venv`` (qkv imported from elsewhere, the repository on sys.path), or None."""
    probe = runner.run(WHERE_FROM, timeout=180)
    if probe.returncode != 0:
        return f"blocks cannot import qkv from the installed wheel:\n{probe.stderr[-1500:]}"
    qkv_file, *path = probe.stdout.splitlines()
    if not qkv_file.startswith(f"{venv.root}{os.sep}"):
        return f"blocks import qkv from {qkv_file}, not from the wheel installed in {venv.root}"
    inside = [entry for entry in path if Path(entry).resolve().is_relative_to(ROOT)]
    if inside:
        return f"blocks run from the wheel have the repository on sys.path: {', '.join(inside)}"
    return None


def run_blocks(cases: list, venv: Venv) -> tuple[list[subprocess.CompletedProcess], list[str]]:
    """(each case's result, what :func:`not_from_the_wheel` found), two cases
    at a time, each in a child forked from a zygote of the venv's Python
    (``docs_pipeline.AloneRunner``): one per worker for the blocks without
    extra packages; one per worker and PYTHONPATH for the others, which has
    also imported the third-party modules all its blocks import (torch: a
    second and more per block). One worker starts with the blocks with
    extras, the other with the rest: two torch blocks at once, each with as
    many threads as there are cores, only slow each other down."""
    preload: dict[str | None, frozenset[str]] = {}
    for _, program, _, pythonpath in cases:
        modules = third_party_modules(program)
        preload[pythonpath] = preload.get(pythonpath, modules) & modules
    plain: queue.SimpleQueue[int] = queue.SimpleQueue()
    extras: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in sorted(range(len(cases)), key=lambda i: cases[i][3] or ""):  # extras grouped by PYTHONPATH
        (plain if cases[index][3] is None else extras).put(index)
    results: list = [None] * len(cases)

    def work(queues: tuple[queue.SimpleQueue, ...]) -> str | None:
        runners: dict[str | None, AloneRunner] = {}
        try:
            for todo in queues:
                while True:
                    try:
                        index = todo.get_nowait()
                    except queue.Empty:
                        break
                    _, program, _, pythonpath = cases[index]
                    if pythonpath not in runners:
                        runners[pythonpath] = AloneRunner(venv.python, pythonpath, preload[pythonpath])
                        if (problem := not_from_the_wheel(runners[pythonpath], venv)) is not None:
                            return problem
                    results[index] = runners[pythonpath].run(program, timeout=180)
            return None
        finally:
            for runner in runners.values():
                runner.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = [p for p in pool.map(work, [(extras, plain), (plain, extras)]) if p is not None]
    return results, problems


def test_every_documentation_block_runs_from_the_wheel(built, tmp_path):
    _, venv = built
    cases, paths, not_run = [], {}, []
    for page in PAGES:
        for block, program, expected in programs(page.read_text(encoding="utf-8")):
            where = f"{page.relative_to(ROOT)}:{block.start}"
            extra = third_party(program)
            if extra and extra not in paths:
                paths[extra] = overlay(tmp_path / f"extra-{len(paths)}", extra)
            if extra and paths[extra] is None:
                not_run.append(f"{where} ({', '.join(sorted(extra))})")
                continue
            cases.append((where, program, expected, paths.get(extra)))

    started = time.perf_counter()
    results, problems = run_blocks(cases, venv)
    venv.seconds[f"{len(cases)} blocks"] = time.perf_counter() - started
    assert not problems, "\n".join(problems)
    failures = []
    for (where, _, expected, _), result in zip(cases, results):
        if result.returncode != 0:
            failures.append(f"{where}: fails from the installed wheel:\n{result.stderr[-1500:]}")
        elif expected is not None and normalise(result.stdout) != normalise(expected):
            failures.append(f"{where}: prints something else from the installed wheel:\n{result.stdout[-1500:]}")
    assert not failures, "\n\n".join(failures)
    assert len(cases) >= 100, f"only {len(cases)} blocks found in docs/"
    with_extras = sum(1 for case in cases if case[3])
    print(f"\n{len(cases)} blocks ran from the wheel ({with_extras} with packages beyond qkv); times: {venv.seconds}")
    if not_run:
        from needs import require

        require(
            False,
            f"{len(not_run)} blocks not run, their packages are not installed here (.ci/run installs them): "
            + "; ".join(not_run),
        )


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
def test_blocks_that_would_not_run_the_wheel_are_caught(built, pythonpath, message):
    # Planted: the zygote of the venv's Python with a directory of the
    # repository on PYTHONPATH (the source tree's qkv; tests/support).
    _, venv = built
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


def test_qkv_exercise_list_and_starters_from_the_wheel(built, tmp_path):
    _, venv = built
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
    for name in names:
        result = doctest.testmod(importlib.import_module(name), optionflags=flags)
        attempted += result.attempted
        failed += result.failed
        modules += 1
    print(f"{modules} modules, {attempted} examples, {failed} failed")
    sys.exit(1 if failed or not attempted else 0)
    """
)


def test_public_api_doctests_pass_from_the_wheel(built):
    _, venv = built
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
    result = subprocess.run(
        [venv.python, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(where), str(wheel)],
        capture_output=True, text=True, env=clean_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return {**clean_env(), "PYTHONPATH": str(where)}


def test_a_subpackage_left_out_fails(built, tmp_path):
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
    _, venv = built
    env = installed_over(venv, wheel, tmp_path / "site")
    cli = str(tmp_path / "site" / "bin" / "qkv-exercise")
    listed = subprocess.run([cli, "list"], capture_output=True, text=True, env=env, cwd="/")
    assert listed.returncode != 0
    assert "ModuleNotFoundError: No module named 'qkv.exercises'" in listed.stderr, listed.stderr


def test_the_sql_files_left_out_fail(built, tmp_path):
    wheel = planted_wheel(tmp_path, '"qkv.sql" = ["*.sql"]\n', "")
    with pytest.raises(release.ReleaseCheckFailed) as caught:
        release.check_wheel(wheel)
    message = str(caught.value)
    assert message.startswith(f"{wheel.name} lacks 10 file(s) of src/qkv: qkv/sql/mask_causal.sql, "), message
    _, venv = built
    env = installed_over(venv, wheel, tmp_path / "site")
    result = subprocess.run([venv.python, "-c", DOCTESTS], capture_output=True, text=True, env=env, cwd="/")
    assert result.returncode != 0
    assert re.search(
        r"FileNotFoundError: \[Errno 2\] No such file or directory: '\S+/site/qkv/sql/\w+\.sql'", result.stdout
    ), result.stdout[-3000:]
    assert re.search(r"\d+ modules, \d+ examples, [1-9]\d* failed$", result.stdout.strip()), result.stdout[-300:]


def test_an_undeclared_dependency_fails(built, tmp_path):
    # Planted: qkv.toy starts using PyYAML (installed in the development venv,
    # so every source-tree test passes) without declaring it.
    project = project_copy(tmp_path / "project")
    toy = project / "src" / "qkv" / "toy.py"
    source = toy.read_text(encoding="utf-8")
    toy.write_text(source.replace("import numpy as np\n", "import numpy as np\nimport yaml  # noqa: F401\n", 1))
    assert "import yaml" in toy.read_text(encoding="utf-8")
    wheel = build_wheel(project, tmp_path / "dist")
    release.check_wheel(wheel, project / "src")  # every file is there: only running it shows the fault
    _, venv = built
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


def test_wheel_metadata(built):
    wheel, _ = built
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
