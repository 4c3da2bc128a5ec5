"""How the Python on the site is verified: sybil parsers for docs/**/*.md.

Every fence is read by ``page_blocks.read_page`` (one reading of a page):

* a block in a run language (``python``, ``py``, ``python3``, ``py3``,
  ``pycon``; with or without attributes such as ``title="x.py"``; at any
  indentation) is collected. One that starts with ``>>>`` (or is ``pycon``)
  runs as a doctest; any other runs as code with its stdout captured, and
  what it printed must equal the ``output`` fence right under it (trailing
  spaces ignored). A block that prints but has no ``output`` fence fails too.
* every rule of ``page_blocks`` the page breaks (a fence language that is
  neither run nor display-only, an indented code block, code as raw HTML, an
  ``output`` fence not directly under a code block or under a doctest, a skip
  without a reason) is a failing example at its line.

The blocks of a page run in one child process (``block_worker.py``), in
order, sharing a namespace like notebook cells: a block that calls
``os._exit(0)``, ``sys.exit()`` or loops forever ends or stalls that child,
never the pytest run. Each block has ``QKV_BLOCK_TIMEOUT`` seconds (default
60); one that runs longer is stopped and fails naming its file:line.

``<!-- skip: next <reason> -->`` skips the next block (and the blocks that
continue it) with that reason: pytest lists it among the skips (``-ra``), and
its output does not count as verified for the prose check. A block that
imports an optional module that is missing (PyTorch, see ``needs.py``)
skips with the one message that says how to get it, and fails under CI=true.

Failures name the Markdown file and the line: ``docs/x.md:12: ...``.
"""

from __future__ import annotations

import difflib
import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sybil import Document, Example, Region, Sybil

import needs
from page_blocks import Block, Page, read_page

#: Seconds one block may run before it is stopped (environment: QKV_BLOCK_TIMEOUT).
DEFAULT_TIMEOUT = 60.0
WORKER = Path(__file__).with_name("block_worker.py")
_STATE = "__qkv_page__"


def relative(path: str) -> str:
    """``path`` relative to the working directory when it is below it (messages read docs/x.md:12)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def block_timeout() -> float:
    return float(os.environ.get("QKV_BLOCK_TIMEOUT", DEFAULT_TIMEOUT))


def normalise_output(text: str) -> str:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    return "\n".join(lines)


class BlockEnded(Exception):
    """The child running a page's blocks died or was stopped."""


class PageWorker:
    """One child interpreter that runs a page's blocks in order."""

    def __init__(
        self, script: Path = WORKER, cwd: str | None = None, env: dict | None = None, python: str = sys.executable
    ) -> None:
        self.read_fd, write_fd = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        env = {**os.environ, "MPLBACKEND": "Agg"} if env is None else env
        self.process = subprocess.Popen(
            [python, str(script), str(write_fd), str(os.getpid())],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            pass_fds=(write_fd,),
            env=env,
            text=True,
        )
        os.close(write_fd)
        self.buffer = b""

    def ask(self, request: dict, timeout: float) -> dict:
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise BlockEnded(self._ended()) from error
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise BlockEnded(f"ran longer than {timeout:g} s and was stopped (QKV_BLOCK_TIMEOUT)")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    raise BlockEnded(self._ended())
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def _ended(self) -> str:
        try:
            status = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        self.stderr.seek(0)
        tail = self.stderr.read().decode("utf-8", "replace").strip()[-1500:]
        how = f"exit status {status}, as os._exit() does" if status >= 0 else f"killed by signal {-status}"
        return f"ended the Python process running this page's blocks ({how})" + (f":\n{tail}" if tail else "")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        with _quietly():
            self.process.stdin.close()
        with _quietly():
            os.close(self.read_fd)
        self.stderr.close()


class _quietly:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return True


class PageState:
    """What one page's run knows: its worker, and which block stopped it."""

    def __init__(self) -> None:
        self.worker: PageWorker | None = None
        self.stopped_by: int | None = None

    def ask(self, request: dict, line: int) -> dict:
        if self.worker is None:
            self.worker = PageWorker()
        try:
            return self.ask_started(request)
        except BlockEnded:
            self.stopped_by = line
            self.worker = None
            raise

    def ask_started(self, request: dict) -> dict:
        return self.worker.ask(request, block_timeout())

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def page_state(namespace: dict) -> PageState:
    state = namespace.get(_STATE)
    if state is None:
        state = namespace[_STATE] = PageState()
    return state


def _close_page(namespace: dict) -> None:
    state = namespace.pop(_STATE, None)
    if state is not None:
        state.close()


class ProblemEvaluator:
    """A rule the page breaks, reported where it is."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = messages

    def __call__(self, example: Example) -> str:
        return "\n".join(f"{relative(example.path)}:{example.line}: {message}" for message in self.messages)


class ClearEvaluator:
    def __call__(self, example: Example) -> None:
        state = page_state(example.namespace)
        if state.worker is not None:
            state.ask({"kind": "clear"}, example.line)


class BlockEvaluator:
    """Run one block in the page's child; compare what it prints with the page."""

    def __init__(self, page: Page, index: int) -> None:
        self.page = page
        self.index = index
        self.block: Block = page.blocks[index]
        output = page.output_after(index)
        self.expected = None if output is None else output.text
        self.output_line = None if output is None else output.start

    def __call__(self, example: Example) -> str | None:
        __tracebackhide__ = True
        path = relative(example.path)
        where = f"{path}:{self.block.start}"
        skip = self.page.skip_of(self.index)
        if skip is not None:
            line, reason = skip
            raise _skip(f"{where}: skipped by the page (line {line}): {reason}")
        chain = "\n".join(self.page.blocks[i].text for i in self.page.chain(self.index))
        missing = needs.missing_for(self.block.text if self.block.is_doctest else chain)
        if missing is not None:
            needs.require(False, f"{where}: {missing}")
        state = page_state(example.namespace)
        if state.stopped_by is not None:
            return (
                f"{where}: not run: the block at line {state.stopped_by} ended or stalled the "
                "interpreter running this page's blocks; fix that block first"
            )
        request = {
            "kind": "doctest" if self.block.is_doctest else "code",
            "source": self.block.text,
            "path": path,
            "line": self.block.start,
        }
        try:
            answer = state.ask(request, self.block.start)
        except BlockEnded as ended:
            return (
                f"{where}: this block {ended}; a block must not exit, hang or crash its "
                "interpreter (readers run it in theirs)"
            )
        if answer["status"] == "doctest":
            return self.doctest_result(path, answer["failures"])
        if answer["status"] == "error":
            line = answer["line"] or self.block.start
            what = "exited (SystemExit); a block must not exit" if answer["exit"] else "raised"
            hint = needs.import_hint(answer["error"])
            return (
                f"{path}:{line}: the block at line {self.block.start} {what}: {answer['error']}{hint}\n"
                f"{answer['traceback']}"
            )
        return self.compare(path, normalise_output(answer["stdout"]))

    def doctest_result(self, path: str, failures: list[dict]) -> str | None:
        if not failures:
            return None
        return "\n".join(
            f"{path}:{f['line']}: doctest `{f['source']}` expected:\n{f['want']}got:\n{f['got']}" for f in failures
        )

    def compare(self, path: str, actual: str) -> str | None:
        if self.expected is None:
            if actual:
                return (
                    f"{path}:{self.block.start}: this block printed output but the page shows no "
                    f"```output block after it; add one with exactly what it printed:\n{actual}"
                )
            return None
        expected = normalise_output(self.expected)
        if actual != expected:
            wanted, got = expected.splitlines(), actual.splitlines()
            first = next((i for i, (a, b) in enumerate(zip(wanted, got)) if a != b), min(len(wanted), len(got)))
            # The page line of the first output line that is wrong (or where one is missing).
            line = self.output_line + 1 + min(first, max(len(wanted) - 1, 0))
            diff = "\n".join(
                difflib.unified_diff(
                    wanted,
                    got,
                    fromfile=f"page (output block at line {self.output_line})",
                    tofile=f"what the block at line {self.block.start} printed",
                    lineterm="",
                )
            )
            return (
                f"{path}:{line}: the output block differs from what the block at line {self.block.start} "
                f"printed; put what it printed (the + lines) in the output block, or fix the code:\n{diff}"
            )
        return None


def _skip(reason: str) -> BaseException:
    import pytest

    return pytest.skip.Exception(reason, _use_item_location=True)


class PageParser:
    """Every run block of a Markdown document, and every rule it breaks.

    ``code_runs_elsewhere(path)``: True for a document whose code blocks (not
    its doctests) this run leaves out because other tests run them and compare
    what they print with the page (:func:`chapter_code_runs_elsewhere`)."""

    def __init__(self, code_runs_elsewhere: Callable[[str], bool] | None = None) -> None:
        self.code_runs_elsewhere = code_runs_elsewhere

    def __call__(self, document: Document) -> Iterable[Region]:
        page = read_page(document.text)
        leave_code = self.code_runs_elsewhere is not None and self.code_runs_elsewhere(document.path)
        line_starts = [0]
        for line in document.text.splitlines(keepends=True):
            line_starts.append(line_starts[-1] + len(line))

        def span(first: int, last: int) -> tuple[int, int]:
            return line_starts[first - 1], line_starts[min(last, len(line_starts) - 1)] - 1

        by_line: dict[int, list[str]] = {}
        for line, message in page.problems:
            by_line.setdefault(line, []).append(message)
        runs = [i for i, b in enumerate(page.blocks) if b.is_python and not (leave_code and not b.is_doctest)]
        run_lines = {page.blocks[i].start for i in runs}
        for line, messages in by_line.items():
            if line in run_lines:  # a problem on a run block's fence: report it with the block
                continue
            yield Region(*span(line, line), parsed=messages, evaluator=ProblemEvaluator(messages))
        for line in page.clears:
            yield Region(*span(line, line), parsed=None, evaluator=ClearEvaluator())
        for index in runs:
            block = page.blocks[index]
            yield Region(*span(block.start, block.end), parsed=block.text, evaluator=BlockEvaluator(page, index))


CHAPTERS = Path(__file__).resolve().parent.parent.parent / "docs" / "chapters"


def chapter_code_runs_elsewhere(path: str) -> bool:
    """True for a chapter (docs/chapters/*.md). In ``make test`` a chapter's code
    runs twice elsewhere, each time with what it prints compared with the page's
    output blocks: every block alone, as a reader copies it, from the wheel
    (tests/test_copy_isolation.py), and the page top to bottom in one namespace,
    as this run would, as the chapter's notebook in a Jupyter kernel
    (tests/test_notebooks.py, :func:`notebook_output_problems`). A third run
    here would repeat the second, so the docs run keeps only a chapter's
    doctests and rules. ``make check`` still runs every block here: its
    messages come first and in seconds."""
    return Path(path).resolve().parent == CHAPTERS


def notebook_output_problems(path: str, page: Page, cells: list[tuple[str, str]]) -> list[str]:
    """What a chapter's notebook printed that its page does not show, each as
    ``path:line: ...``, as the docs run words it.

    ``cells``: each code cell's (source, stdout), in order, after the kernel ran
    the notebook top to bottom. A cell is matched to the next code block of
    ``page`` with the same text (other cells, such as the install cell, are
    not the page's); a block the page skips is not compared, nor is a doctest.
    A cell that is no block of the page is skipped, and a block left without a
    cell is reported (tests/test_notebooks.py checks the cells are the blocks)."""
    blocks = [i for i, b in enumerate(page.blocks) if b.is_python and not b.is_doctest]
    problems, position = [], 0
    for source, stdout in cells:
        match = next(
            (k for k in range(position, len(blocks)) if page.blocks[blocks[k]].text.rstrip("\n") == source), None
        )
        if match is None:
            continue
        position = match + 1
        index = blocks[match]
        if page.skip_of(index) is not None:
            continue
        problem = BlockEvaluator(page, index).compare(path, normalise_output(stdout))
        if problem is not None:
            problems.append(
                problem.replace(
                    ": ",
                    ": in the chapter's notebook (its blocks run top to bottom in one kernel, each after what "
                    "the blocks above it changed), ",
                    1,
                )
            )
    return problems


def docs_sybil(path: str = "docs", code_runs_elsewhere: Callable[[str], bool] | None = None) -> Sybil:
    """The Sybil that runs docs/**/*.md (one child interpreter per page);
    ``code_runs_elsewhere``: see :class:`PageParser`."""
    return Sybil(
        parsers=[PageParser(code_runs_elsewhere)],
        path=path,
        patterns=["*.md", "**/*.md"],
        teardown=_close_page,
        name="docs",
    )


# --- copy isolation: each block in a fresh interpreter, as a reader copies it ---


def isolated_programs(page: Page) -> list[tuple[int, str, str | None]]:
    """(block index, program to run, expected output) for every code block.

    A block runs with nothing before it, except a ``(continued)`` block,
    which runs after the blocks it continues (and expects their output too).
    """
    result = []
    for index, block in enumerate(page.blocks):
        if not block.is_python or block.is_doctest:
            continue
        chain = page.chain(index)
        printed = [normalise_output(out.text) for i in chain if (out := page.output_after(i)) is not None]
        program = "\n\n".join(page.blocks[i].text for i in chain)
        result.append((index, program, "\n".join(printed) if printed else None))
    return result


#: A reader's fresh interpreter: outside the repository, qkv as installed.
#: One BLAS (and OpenMP, for torch) thread per block, as the exercise sandbox
#: and the benchmarks have it: with one per core, a block's matrix products
#: wait on threads that spin against each other and against whatever else
#: runs (attention.md's gradient table: 7 CPU-s instead of 0.9 on a shared
#: 2-core machine). The docs run (one interpreter per page) has the
#: environment's threads: the machine's default with ``make test JOBS=0`` or
#: ``make check``, where an output that depended on the thread count fails
#: one of the two; one per worker in ``make test`` (the Makefile says why).
ALONE_ENV = {
    "PATH": "/usr/bin:/bin",
    "MPLBACKEND": "Agg",
    "PYTHONHASHSEED": "0",
    **dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1"),
}
FORK_RUNNER = Path(__file__).with_name("fork_runner.py")


def alone_env(pythonpath: str | None = None) -> dict[str, str]:
    """:data:`ALONE_ENV`, with ``pythonpath`` as PYTHONPATH when given."""
    return ALONE_ENV if pythonpath is None else {**ALONE_ENV, "PYTHONPATH": pythonpath}


def run_alone(
    program: str, timeout: float | None = None, python: str = sys.executable, pythonpath: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``program`` in a fresh ``python`` outside the repository (qkv as
    that interpreter has it installed), with ``pythonpath`` if given."""
    return subprocess.run(
        [python, "-c", program],
        capture_output=True,
        text=True,
        cwd="/",  # not the repository: qkv must come from the installed package
        env=alone_env(pythonpath),
        timeout=block_timeout() if timeout is None else timeout,
    )


class AloneRunner:
    """Like :func:`run_alone`, faster: each program runs in a child forked from a
    zygote that started as a reader's interpreter does and imported only numpy
    and qkv (tests/support/fork_runner.py). Falls back to :func:`run_alone` if
    the zygote cannot start or dies, and for a program that reaches a submodule
    the zygote has loaded but ``python -c`` may not have (``importlib.util``
    after ``import importlib``; named in :attr:`afresh`).

    Parameters
    ----------
    python
        The interpreter of the zygote (and of the fallback): this environment's
        by default, a fresh venv's to run programs from what it installed.
    pythonpath
        PYTHONPATH of the zygote (and of the fallback); none by default.
    preload
        Modules the zygote imports too, after numpy and qkv: modules that
        the programs run through it import themselves (torch for the PyTorch
        tabs), or that the packages they import load at first use
        (``wheel_venv.WARM``: torch._dynamo), so that each child finds what
        its own imports would load. If one cannot be imported, programs run
        afresh.
    """

    def __init__(
        self, python: str = sys.executable, pythonpath: str | None = None, preload: Iterable[str] = ()
    ) -> None:
        self.python = python
        self.pythonpath = pythonpath
        self.worker: PageWorker | None = None
        #: The submodules for which programs ran in a fresh ``python -c`` instead.
        self.afresh: list[str] = []
        try:
            self.worker = PageWorker(script=FORK_RUNNER, cwd="/", env=alone_env(pythonpath), python=python)
            self.worker.ask({"program": "", "timeout": 60}, 120)  # started and imported
            if preload and self.worker.ask({"preload": sorted(preload)}, 300)["error"]:
                self.close()
        except BlockEnded:
            self.close()

    def run(self, program: str, timeout: float | None = None) -> subprocess.CompletedProcess:
        """``program``'s status and output; TimeoutExpired after ``timeout``
        seconds (default: QKV_BLOCK_TIMEOUT)."""
        timeout = block_timeout() if timeout is None else timeout
        if self.worker is not None:
            try:
                answer = self.worker.ask({"program": program, "timeout": timeout}, timeout + 30)
            except BlockEnded:
                self.close()
            else:
                if "unvouched" in answer:
                    self.afresh.append(answer["unvouched"])
                    return run_alone(program, timeout, self.python, self.pythonpath)
                if answer["timeout"]:
                    raise subprocess.TimeoutExpired(program, timeout)
                return subprocess.CompletedProcess(
                    [self.python, "-c", program], answer["returncode"], answer["stdout"], answer["stderr"]
                )
        return run_alone(program, timeout, self.python, self.pythonpath)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


class SourceTree:
    """Where :func:`copy_isolation` runs blocks by default (``make check``):
    this environment's Python, qkv as it has it installed (the source tree),
    no PYTHONPATH. tests/support/wheel_venv.py's ``WheelInterpreter`` runs
    them from the installed wheel instead.

    It keeps the zygotes (:class:`AloneRunner`) it started until
    :meth:`close`, one per thread that needs one at once, for each PYTHONPATH
    and set of preloaded modules: kept for a session, the pages of a pytest
    worker share them (torch and what it loads lazily are imported once, not
    once a page or a block).
    """

    python: str = sys.executable
    #: What failure messages add after "a fresh interpreter".
    label: str = ""

    def __init__(self) -> None:
        self.idle: dict[tuple[str | None, frozenset[str]], list[AloneRunner]] = {}
        self.lock = threading.Lock()

    def unavailable(self, program: str) -> str | None:
        """Why ``program`` cannot be run here (a package it needs is missing), or None."""
        return None

    def environment(self, program: str) -> tuple[str | None, frozenset[str]]:
        """(PYTHONPATH, modules the program imports) of the zygote ``program``
        runs from; a zygote preloads the modules all of its programs import."""
        return None, frozenset()

    def not_testing(self, runner: AloneRunner) -> str | None:
        """Why programs run through ``runner`` would not test what they should, or None."""
        return None

    def take(self, pythonpath: str | None, preload: frozenset[str]) -> AloneRunner | str:
        """An idle zygote with that PYTHONPATH and preload, or a new one that
        :meth:`not_testing` has passed; or what it found."""
        with self.lock:
            idle = self.idle.get((pythonpath, preload))
            if idle:
                return idle.pop()
        runner = AloneRunner(self.python, pythonpath, preload)
        if (problem := self.not_testing(runner)) is not None:
            runner.close()
            return problem
        return runner

    def give_back(self, runner: AloneRunner, preload: frozenset[str]) -> None:
        """Keep ``runner`` for the next :meth:`take` (if its zygote still runs)."""
        if runner.worker is None:
            return
        with self.lock:
            self.idle.setdefault((runner.pythonpath, preload), []).append(runner)

    def close(self) -> None:
        with self.lock:
            for runners in self.idle.values():
                for runner in runners:
                    runner.close()
            self.idle.clear()


@dataclass
class AloneCase:
    """One program copy isolation runs, where its block is, and how."""

    at: str
    program: str
    expected: str | None
    pythonpath: str | None = None
    modules: frozenset[str] = frozenset()
    result: subprocess.CompletedProcess | subprocess.TimeoutExpired | None = None  # None: not run


def run_cases(cases: list[AloneCase], interpreter: SourceTree, at_once: int = 2) -> list[str]:
    """Run every case (its ``result``), ``at_once`` at a time; what
    ``interpreter.not_testing`` found about a zygote, if anything.

    Each thread has a zygote per PYTHONPATH, taken from the interpreter when
    it first needs it (and given back at the end), which preloads the modules
    every case with that PYTHONPATH imports (torch for the PyTorch tabs).
    One thread starts with the cases that have a
    PYTHONPATH, the next with the rest: two torch blocks at once, each with
    as many threads as there are cores, only slow each other down.
    """
    preload: dict[str | None, frozenset[str]] = {}
    for case in cases:
        preload[case.pythonpath] = preload.get(case.pythonpath, case.modules) & case.modules
    plain: queue.SimpleQueue[AloneCase] = queue.SimpleQueue()
    extras: queue.SimpleQueue[AloneCase] = queue.SimpleQueue()
    for case in sorted(cases, key=lambda c: c.pythonpath or ""):  # extras grouped by PYTHONPATH
        (plain if case.pythonpath is None else extras).put(case)

    def work(queues: tuple[queue.SimpleQueue, ...]) -> str | None:
        runners: dict[str | None, AloneRunner] = {}
        try:
            for todo in queues:
                while True:
                    try:
                        case = todo.get_nowait()
                    except queue.Empty:
                        break
                    if case.pythonpath not in runners:
                        runner = interpreter.take(case.pythonpath, preload[case.pythonpath])
                        if isinstance(runner, str):
                            return runner
                        runners[case.pythonpath] = runner
                    try:
                        case.result = runners[case.pythonpath].run(case.program)
                    except subprocess.TimeoutExpired as timeout:
                        case.result = timeout
            return None
        finally:
            for pythonpath, runner in runners.items():
                interpreter.give_back(runner, preload[pythonpath])

    orders = [(extras, plain) if turn % 2 == 0 else (plain, extras) for turn in range(max(1, at_once))]
    with ThreadPoolExecutor(max_workers=len(orders)) as pool:
        return list(dict.fromkeys(p for p in pool.map(work, orders) if p is not None))


def copy_isolation(
    path: Path, where: str, interpreter: SourceTree | None = None, at_once: int = 2
) -> tuple[list[str], list[str], list[str]]:
    """(failures, skipped by the page, needing a missing module) for one page.

    Each entry names ``where:line`` (a problem with the interpreter itself,
    ``where``). Blocks run ``at_once`` at a time, by ``interpreter``: the
    source tree's Python by default (:class:`SourceTree`).
    """
    if interpreter is None:
        interpreter = SourceTree()
        try:
            return copy_isolation(path, where, interpreter, at_once)
        finally:
            interpreter.close()
    page = read_page(path.read_text(encoding="utf-8"))
    cases, skipped, missing = [], [], []
    for index, program, expected in isolated_programs(page):
        at = f"{where}:{page.blocks[index].start}"
        if (skip := page.skip_of(index)) is not None:
            skipped.append(f"{at}: skipped by the page (line {skip[0]}): {skip[1]}")
        elif (reason := needs.missing_for(program) or interpreter.unavailable(program)) is not None:
            missing.append(f"{at}: {reason}")
        else:
            cases.append(AloneCase(at, program, expected, *interpreter.environment(program)))
    problems = run_cases(cases, interpreter, at_once)
    failures = [f"{where}: {problem}" for problem in problems]
    fresh = f"a fresh interpreter{interpreter.label}"
    for case in cases:
        result = case.result
        if result is None:
            continue  # not run: a problem above
        if isinstance(result, subprocess.TimeoutExpired):
            failures.append(
                f"{case.at}: ran longer than {block_timeout():g} s when run alone{interpreter.label} (QKV_BLOCK_TIMEOUT)"
            )
        elif result.returncode != 0:
            failures.append(
                f"{case.at}: fails when run alone in {fresh} (exit status {result.returncode}); give it "
                f"its own imports and data, or title it '(continued)':\n{result.stderr[-1500:]}"
            )
        elif case.expected is not None and normalise_output(result.stdout) != normalise_output(case.expected):
            failures.append(
                f"{case.at}: prints something else when run alone in {fresh}; give it its own "
                f"imports and data, or title it '(continued)':\n{result.stdout[-1500:]}"
            )
        elif case.expected is None and normalise_output(result.stdout):
            failures.append(f"{case.at}: prints when run alone{interpreter.label} but the page shows no output block")
        elif result.stderr.strip():
            # A warning a reader would see when running the block (a DeprecationWarning of
            # qkv's, a RuntimeWarning from NumPy) is a fault the page does not show.
            failures.append(
                f"{case.at}: writes to stderr when run alone in {fresh} (a reader would see it; the page "
                f"shows none): fix its cause, or silence it in the block and say why:\n{result.stderr[-1500:]}"
            )
    return failures, skipped, missing
