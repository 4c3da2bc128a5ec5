"""Every code block runs on its own, as a reader would copy it, from the wheel
a reader installs.

Sybil runs a page's blocks in one shared namespace, like notebook cells; a
reader copies one block into a fresh interpreter. Here each Python block runs
alone with nothing before it, except blocks whose title says ``(continued)``:
those run after the blocks they continue, and the page shows that title.
What the process prints must equal the block's output. Blocks the page skips
(``<!-- skip: next <reason> -->``) are not run; blocks that need a missing
optional module (PyTorch) skip with needs.py's message, and fail under
CI=true. The work is in ``docs_pipeline.copy_isolation``, which ``make
check`` runs too, from the source tree.

In ``make test`` each page's blocks run from the installed wheel (the
session fixture ``installed_wheel``: the release dry run's wheel in a fresh
venv with only NumPy; tests/support/wheel_venv.py): the venv's Python, from
``/``, nothing of the repository on sys.path, so one run proves both that a
block stands alone and that it works for a reader who ran ``pip install
qkv``. A block that imports a package qkv does not depend on (torch,
transformers, duckdb) gets that package alone on PYTHONPATH; where it is not
installed the block is not run (a skip, a failure under CI=true).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import needs
from docs_pipeline import AloneRunner, SourceTree, copy_isolation, isolated_programs, run_alone
from docs_pipeline import normalise_output as normalise
from page_blocks import read_page
from wheel_venv import WheelInterpreter

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def check_page_alone(page: Path, where: str, interpreter: SourceTree | None = None) -> None:
    """Fail with every block of ``page`` that does not run alone (by
    ``interpreter``: the source tree's Python by default); then skip (or,
    under CI=true, fail) if a block needed a missing module."""
    failures, _skipped, missing = copy_isolation(page, where, interpreter)
    assert not failures, "\n\n".join(failures)
    needs.require(not missing, "\n".join(missing))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_block_runs_alone_in_a_fresh_interpreter(page, wheel_interpreter):
    if not isolated_programs(read_page(page.read_text(encoding="utf-8"))):
        pytest.skip("no code blocks on this page")
    check_page_alone(page, str(page.relative_to(ROOT)), wheel_interpreter)


def test_the_pages_hold_the_blocks_run_alone():
    # Guards the test above against passing on an empty scan of docs/.
    blocks = sum(len(isolated_programs(read_page(page.read_text(encoding="utf-8")))) for page in PAGES)
    assert blocks >= 100, f"only {blocks} code blocks found in docs/"


def programs(text: str) -> list[tuple[str, str | None]]:
    return [(program, expected) for _, program, expected in isolated_programs(read_page(text))]


def test_a_block_that_needs_its_predecessor_is_caught():
    page = "```python\nx = 2\n```\n\n```python\nprint(x)\n```\n\n```output\n2\n```\n"
    (first, _), (second, _) = programs(page)
    assert run_alone(first).returncode == 0
    assert run_alone(second).returncode != 0  # NameError: x was defined above


def test_a_continued_block_runs_with_its_predecessors():
    page = '```python\nx = 2\n```\n\n```python title="doubling (continued)"\nprint(x * 2)\n```\n\n```output\n4\n```\n'
    _, (program, expected) = programs(page)
    assert normalise(run_alone(program).stdout) == expected == "4"


def test_a_continued_block_expects_its_predecessors_output_too():
    page = (
        "```python\nprint(1)\n```\n\n```output\n1\n```\n\n"
        '```python title="(continued)"\nprint(2)\n```\n\n```output\n2\n```\n'
    )
    _, (program, expected) = programs(page)
    assert normalise(run_alone(program).stdout) == expected == "1\n2"


def test_failures_and_skips_are_named_with_file_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```python\nx = 2\n```\n\n```python\nprint(x)\n```\n\n```output\n2\n```\n\n"
        "<!-- skip: next needs a GPU -->\n\n```python\nprint(3)\n```\n\n```output\n4\n```\n\n"
        '```python title="(continued)"\nprint(5)\n```\n\n```output\n5\n```\n'
    )
    failures, skipped, missing = copy_isolation(page, "docs/page.md")
    assert [f.split("\n")[0] for f in failures] == [
        "docs/page.md:7: fails when run alone in a fresh interpreter (exit status 1); give it its own "
        "imports and data, or title it '(continued)':"
    ]
    assert "NameError: name 'x' is not defined" in failures[0]
    assert skipped == [
        "docs/page.md:17: skipped by the page (line 15): needs a GPU",
        "docs/page.md:25: skipped by the page (line 15): needs a GPU",  # continues the skipped block
    ]
    assert missing == []


FROM_THE_WHEEL = (
    "# t\n\n```python\nimport qkv\nprint(x)\n```\n\n"  # line 3: needs what it does not define
    "```python\nprint(1)\n```\n\n```output\n2\n```\n\n"  # line 8: prints something else
    "```python\nprint(3)\n```\n\n"  # line 16: prints, with no output block
    "```python\nimport no_such_package_anywhere\n```\n\n"  # line 20: needs a package not installed
    "```python\nimport duckdb\nprint(duckdb.sql('select 6 * 7').fetchall()[0][0])\n```\n\n```output\n42\n```\n"
)


def test_failures_from_the_installed_wheel_say_so(tmp_path, wheel_interpreter, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(FROM_THE_WHEEL)
    failures, skipped, missing = copy_isolation(page, "docs/page.md", wheel_interpreter)
    fix = "give it its own imports and data, or title it '(continued)':"
    assert [f.split("\n")[0] for f in failures] == [
        f"docs/page.md:3: fails when run alone in a fresh interpreter with the installed wheel (exit status 1); {fix}",
        f"docs/page.md:8: prints something else when run alone in a fresh interpreter with the installed wheel; {fix}",
        "docs/page.md:16: prints when run alone with the installed wheel but the page shows no output block",
    ]
    assert "NameError: name 'x' is not defined" in failures[0]
    assert skipped == []
    # The duckdb block ran (from its own PYTHONPATH) and printed 42; this one was not run.
    assert missing == [
        "docs/page.md:20: not run from the installed wheel: needs no-such-package-anywhere, not all installed "
        "here (.ci/run installs them)"
    ]
    # Not run: a skip locally, a failure under CI=true (needs.py).
    page.write_text("# t\n\n```python\nimport no_such_package_anywhere\n```\n")
    monkeypatch.setattr(needs, "IN_CI", False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"^docs/page\.md:3: not run from the installed wheel"):
        check_page_alone(page, "docs/page.md", wheel_interpreter)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"^required in CI: docs/page\.md:3: not run from the installed"):
        check_page_alone(page, "docs/page.md", wheel_interpreter)


class NotTheRightOne(SourceTree):
    """Planted: an interpreter whose zygotes would not test what they should."""

    def not_testing(self, runner: AloneRunner) -> str | None:
        assert runner.worker is not None  # it is asked about a started zygote
        return "blocks import qkv from /elsewhere/qkv/__init__.py, not from the wheel installed in /venv"


def test_a_zygote_that_would_not_test_the_right_qkv_fails_the_page(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nprint(1)\n```\n\n```output\n1\n```\n")
    failures, _, _ = copy_isolation(page, "docs/page.md", NotTheRightOne())
    assert failures == [
        "docs/page.md: blocks import qkv from /elsewhere/qkv/__init__.py, not from the wheel installed in /venv"
    ]


class SourceTreeOnPythonpath(WheelInterpreter):
    """Planted: blocks from the wheel's venv, but with the source tree first on PYTHONPATH."""

    def environment(self, program: str) -> tuple[str | None, frozenset[str]]:
        return str(ROOT / "src"), frozenset()


def test_blocks_that_would_import_the_source_trees_qkv_fail_the_page(tmp_path, wheel_interpreter):
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nimport qkv\nprint(1)\n```\n\n```output\n1\n```\n")
    planted = SourceTreeOnPythonpath(wheel_interpreter.venv, tmp_path / "overlays")
    try:
        failures, _, _ = copy_isolation(page, "docs/page.md", planted)
    finally:
        planted.close()
    assert len(failures) == 1 and re.fullmatch(
        r"docs/page\.md: blocks import qkv from \S+/src/qkv/__init__\.py, not from the wheel installed in \S+/venv",
        failures[0],
    ), failures


#: How many threads NumPy's bundled OpenBLAS uses, asked of the library.
BLAS_THREADS = """
import ctypes, pathlib
import numpy as np

for lib in sorted((pathlib.Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*")):
    library = ctypes.CDLL(str(lib))
    for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
        if hasattr(library, symbol):
            print(getattr(library, symbol)())
"""

#: Uses a submodule it does not import: NumPy, preloaded in a zygote, imported it.
REACHES_A_SUBMODULE = "import importlib\nprint(importlib.util.find_spec('json').name)"

PROGRAMS = [
    "import numpy as np\nprint(np.arange(3).tolist())",
    "print(x)",  # nothing from the zygote leaks into the namespace
    "import sys\nprint(1)\nsys.exit(3)",
    "import sys\nsys.exit('stopped')",
    "import os\nprint('lost', end='')\nos._exit(0)",
    "import sys\nprint(__name__, sys.argv, [k for k in dir() if not k.startswith('__')])",
    "import atexit\natexit.register(print, 'at exit')",
    "import sys\nprint(sys.path)",  # "" first, as python -c has it: not tests/support, where fork_runner.py is
    "import os\nprint(sorted(os.environ.items()))",  # the zygote's environment, as python -c gets it
    BLAS_THREADS,  # NumPy's OpenBLAS was loaded in the zygote, before the fork
    REACHES_A_SUBMODULE,  # loaded in the zygote (by NumPy), not imported: AttributeError
    "import importlib.util\nprint(importlib.util.find_spec('json').name)",  # imported: runs
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_fast_runner_behaves_as_python_c(program):
    runner = AloneRunner()
    try:
        assert runner.worker is not None  # the zygote started; otherwise this compares run_alone with itself
        fast = runner.run(program)
    finally:
        runner.close()
    slow = run_alone(program)
    assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout)
    assert fast.stderr.splitlines()[-1:] == slow.stderr.splitlines()[-1:]


def test_a_block_that_uses_a_submodule_it_does_not_import_is_caught(tmp_path):
    # Planted: importlib.util is an attribute of importlib in the zygote
    # (NumPy imported it), not in python -c; the block must fail as there.
    page = tmp_path / "page.md"
    page.write_text(f"# t\n\n```python\n{REACHES_A_SUBMODULE}\n```\n\n```output\njson\n```\n")
    failures, _, _ = copy_isolation(page, "docs/page.md")
    assert [f.split("\n")[0] for f in failures] == [
        "docs/page.md:3: fails when run alone in a fresh interpreter (exit status 1); give it its own "
        "imports and data, or title it '(continued)':"
    ]
    assert "AttributeError: module 'importlib' has no attribute 'util'" in failures[0]


def test_only_a_block_that_reaches_an_unimported_submodule_runs_afresh():
    runner = AloneRunner()
    try:
        assert runner.worker is not None
        runner.run(REACHES_A_SUBMODULE)
        for program in (
            "import importlib.util\nprint(importlib.util.find_spec('json').name)",  # imported
            "from importlib import util\nprint(util.find_spec('json').name)",
            "import os\nprint(os.path.sep)",  # bound by os itself
            "import numpy as np\nprint(np.random.default_rng(0).integers(9))",  # numpy.__getattr__ imports it
            "import qkv\nprint(qkv.toy.VOCAB[0])",
        ):
            assert runner.run(program).returncode == 0
    finally:
        runner.close()
    assert runner.afresh == ["importlib.util"]  # the others ran in the zygote


def test_blocks_run_with_one_blas_thread():
    # ALONE_ENV: with a thread per core, matrix products spin against each
    # other and whatever else runs; one thread costs a seventh of the CPU.
    runner = AloneRunner()
    try:
        assert runner.worker is not None
        assert runner.run(BLAS_THREADS).stdout == run_alone(BLAS_THREADS).stdout == "1\n"
    finally:
        runner.close()


#: What importing wheel_venv.WARM's torch._dynamo (and sympy) ahead could
#: change for a PyTorch block that loads neither itself. Not compared: the
#: filter sympy adds for its own SymPyDeprecationWarning (no block that has
#: not loaded sympy can raise one), and torch.initial_seed(), random in each
#: interpreter (the zygote's children share one, as with torch alone).
WARM_STATE = """
import logging, sys, warnings
import numpy as np
import torch

filters = [(f[0], f[2].__module__, f[2].__name__) for f in warnings.filters if f[2].__module__.split(".")[0] != "sympy"]
print(sys.getrecursionlimit(), filters, logging.root.handlers, logging.root.level, np.get_printoptions())
print(torch.get_num_threads(), torch.get_default_dtype(), torch.is_grad_enabled(), torch.are_deterministic_algorithms_enabled())
print(torch.ones(3).softmax(0).tolist(), sorted(k for k in dir() if not k.startswith("__")))
"""


def test_the_warm_torch_zygote_behaves_as_python_c(wheel_interpreter):
    missing = needs.missing_for(WARM_STATE) or wheel_interpreter.unavailable(WARM_STATE)
    needs.require(missing is None, f"the warm torch zygote: {missing}")
    pythonpath, preload = wheel_interpreter.environment(WARM_STATE)
    assert "torch._dynamo" in preload
    runner = wheel_interpreter.take(pythonpath, preload)  # the pages' zygote, if this worker has one
    assert not isinstance(runner, str), runner
    try:
        assert runner.worker is not None
        fast = runner.run(WARM_STATE)
        # torch._dynamo imported ctypes.util in the zygote; python -c has no ctypes.util.
        slip = runner.run("import ctypes\nprint(ctypes.util.find_library('c'))")
    finally:
        wheel_interpreter.give_back(runner, preload)
    slow = run_alone(WARM_STATE, python=wheel_interpreter.python, pythonpath=pythonpath)
    assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout), fast.stderr + slow.stderr
    assert fast.returncode == 0, fast.stderr
    assert runner.afresh[-1:] == ["ctypes.util"]
    assert "AttributeError: module 'ctypes' has no attribute 'util'" in slip.stderr


def test_a_block_that_loops_is_stopped_when_run_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_BLOCK_TIMEOUT", "2")
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nwhile True:\n    pass\n```\n")
    failures, _, _ = copy_isolation(page, "docs/page.md")
    assert failures == ["docs/page.md:3: ran longer than 2 s when run alone (QKV_BLOCK_TIMEOUT)"]


def test_a_runner_preloads_modules_and_runs_programs_afresh_if_one_cannot_be_imported():
    program = "import sys\nprint('wave' in sys.modules)"  # wave: a module nothing here imports
    preloaded = AloneRunner(preload=["wave"])
    failed = AloneRunner(preload=["wave", "no_such_module"])
    try:
        assert preloaded.worker is not None
        assert preloaded.run(program).stdout == "True\n"
        assert failed.worker is None  # no zygote: each program in a fresh python -c
        assert failed.run(program).stdout == "False\n"
    finally:
        preloaded.close()
        failed.close()


def test_a_block_that_writes_to_stderr_when_run_alone_is_named(tmp_path):
    """Issue 26 (minor): copy isolation ignored stderr, so a block whose reader sees a warning passed."""
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```python\nimport warnings\n\nwarnings.warn('a reader sees this')\nprint(1)\n```\n\n"
        "```output\n1\n```\n\n```python\nprint(2)\n```\n\n```output\n2\n```\n"
    )
    failures, _, _ = copy_isolation(page, "docs/page.md")
    assert [f.split("\n")[0] for f in failures] == [
        "docs/page.md:3: writes to stderr when run alone in a fresh interpreter (a reader would see it; the page "
        "shows none): fix its cause, or silence it in the block and say why:"
    ]
    assert "UserWarning: a reader sees this" in failures[0]
