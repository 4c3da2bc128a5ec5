"""The practice-exercise checker: right answers pass, classic mistakes are named,
and the learner's code cannot stop, hang or fool the checker.

The learner files live in ``tests/exercise_files/``: one reference solution
per exercise; for each classic mistake, an implementation that makes
exactly that mistake; and ``fault_*.py``, one planted fault per way a
learner's file used to end the check early, hang it or fool it.

The command line is exercised two ways. ``cli`` runs the real
``qkv-exercise`` console script (installed by ``pip install -e .``): every
command, every exit status (0, 1, 2) and each exercise's pass and classic
mistake go through it. ``cli_here`` runs the same ``qkv.exercises.cli.main``
that the script calls (``sys.exit(main())``) in this process: the same
argument parsing, report and exit status, without starting a second Python
(about 0.25 CPU-s a run); the learner's code still runs in its own child.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import linecache
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import qkv
from qkv.exercises import EXERCISES, Limits, check, get_exercise, run, starter
from qkv.exercises.attention_head import _MASK, _backward_data, _data, reference_gradients, weight_variants
from qkv.exercises.cli import main as cli_main
from qkv.exercises.compare import as_array
from qkv.exercises.core import CheckFailed, LearnerAborted, Report
from qkv.exercises.input_layer import pe_variant, pe_variants
from qkv.exercises.mistakes import MISTAKES, describe
from qkv.exercises.portable import NotPortable, portable_source
from qkv.exercises.sandbox import child_environment
from qkv.exercises.sql_softmax import EXERCISE as SQL_SOFTMAX
from qkv.exercises.sql_softmax import SQL_SECONDS
from qkv.exercises.wire import FrameReader, Unreadable, WireError, decode_array, decode_value, encode_value

FILES = Path(__file__).parent / "exercise_files"
SCRIPT = Path(sys.executable).parent / "qkv-exercise"

SOLUTIONS = {
    "input-layer": FILES / "input_layer_solution.py",
    "attention-head": FILES / "attention_head_solution.py",
    "sql-softmax": FILES / "sql_softmax_solution.py",
}


@functools.cache  # the same command gives the same run: tests that ask it twice share one
def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the installed console script."""
    if not SCRIPT.exists():
        pytest.fail(
            f"console script {SCRIPT} not found: run `pip install -c constraints.txt -e '.[docs,test]'`",
            pytrace=False,
        )
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)


# What a fresh Python leaves unshown; it prints every other warning on stderr.
_HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


HANG_SECONDS = 120  # as cli's timeout


class Hung(BaseException):
    """``cli_here``'s command ran for ``HANG_SECONDS`` (``cli`` fails the same way, by its timeout)."""


def _hung(signum, frame):
    raise Hung(f"qkv-exercise did not end within {HANG_SECONDS} s")


@functools.cache
def cli_here(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``qkv-exercise ARGS`` run by ``qkv.exercises.cli.main`` in this process.

    The result is what the console script would give: the exit status, its
    standard output, and as stderr what it printed there plus every warning
    that a fresh Python would print (a warning raised while checking is as
    much a checker bug here as on a learner's terminal). A hang fails, with
    :class:`Hung` (the checker of a file never uses ``SIGALRM`` itself).
    """
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS, 10)  # again after its cleanup (2.5 s), if swallowed
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.resetwarnings()
            warnings.simplefilter("always")
            for category in _HIDDEN_WARNINGS:
                warnings.filterwarnings("ignore", category=category)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = cli_main([str(a) for a in args])
                except SystemExit as exc:  # argparse's usage errors
                    status = exc.code
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught)
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue() + shown)


def namespace_of(path: Path) -> dict:
    """What a notebook's globals() would hold after running the learner's cells."""
    return runpy.run_path(str(path))


def n_checks(name: str, *, optional: bool) -> int:
    ex = get_exercise(name)
    wanted = {f.name for f in ex.functions if f.optional == optional}
    return sum(c.function in wanted for c in ex.checks)


# --- reference solutions pass -------------------------------------------------


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_reference_solution_passes_via_console_script(name):
    result = cli("check", name, SOLUTIONS[name])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout
    assert result.stdout.rstrip().endswith("All done.")
    total = n_checks(name, optional=False) + n_checks(name, optional=True)
    assert result.stdout.count("\nPASS  ") == total


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_reference_solution_passes_in_process(name):
    out = io.StringIO()
    report = check(name, namespace_of(SOLUTIONS[name]), file=out)
    assert report.passed and report.exit_code == 0
    assert report.mistakes == set()
    assert "FAIL" not in out.getvalue()
    assert all(r.status == "PASS" for r in report.results)


def test_in_process_check_accepts_a_path_a_module_and_an_alias():
    assert run(1, str(SOLUTIONS["input-layer"])).passed
    module = types.ModuleType("learner")
    exec(SOLUTIONS["attention-head"].read_text(), vars(module))
    assert run("attention_head", module).passed


def test_the_qkv_reference_implementations_pass():
    ns = {
        "one_hot": qkv.one_hot,
        "embed": qkv.embed,
        "sinusoidal_pe": qkv.sinusoidal_encoding,
        "build_input": lambda ids, E, pe=None: (
            qkv.embed(ids, E)
            + (qkv.sinusoidal_encoding(len(ids), E.shape[1]) if pe is None else qkv.positional_rows(pe, len(ids)))
        ),
    }
    assert run("input-layer", ns).passed


# --- starter templates -------------------------------------------------------


@pytest.mark.parametrize("name", list(EXERCISES))
def test_starter_command_prints_the_template(name):
    result = cli("starter", name)
    assert result.returncode == 0
    assert result.stdout == starter(name)
    compile(result.stdout, f"{name}.py", "exec")  # valid Python
    ns: dict = {}
    exec(result.stdout, ns)
    for spec in get_exercise(name).functions:
        assert callable(ns[spec.name]), spec.name
        assert f"check {name} this_file.py" in result.stdout
        assert f'check("{name}", globals())' in result.stdout


@pytest.mark.parametrize("name", list(EXERCISES))
def test_starter_template_fails_with_not_implemented(name, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(starter(name))  # what `qkv-exercise starter` prints (the test above)
    result = cli_here("check", name, path)
    assert result.returncode == 1
    for spec in get_exercise(name).functions:
        if spec.optional:
            assert f"SKIP  {spec.name}: not attempted yet (optional stretch, skipped)" in result.stdout
        else:
            assert f"FAIL  {spec.name}: not implemented yet" in result.stdout
    assert "raised NotImplementedError" in result.stdout
    assert f"Result: 0 of {n_checks(name, optional=False)} checks passed" in result.stdout


# --- every classic mistake is rejected and named ------------------------------

# (exercise, file, mistake, substrings of the titles of the checks that name it)
MISTAKE_CASES = [
    (
        "input-layer",
        "input_layer_sin_cos_swapped.py",
        "sin-cos-swapped",
        ["sinusoidal_pe(4, 6) matches", "sinusoidal_pe(60, 512)", "build_input(ids, E) equals"],
    ),
    (
        "input-layer",
        "input_layer_exponent_i_over_d.py",
        "exponent-i-over-d",
        ["sinusoidal_pe(4, 6) matches", "sinusoidal_pe(60, 512)", "build_input(ids, E) equals"],
    ),
    (
        "input-layer",
        "input_layer_dimension_index.py",
        "dimension-index-exponent",
        ["sinusoidal_pe(4, 6) matches", "sinusoidal_pe(60, 512)", "build_input(ids, E) equals"],
    ),
    (
        "input-layer",
        "input_layer_positions_from_1.py",
        "positions-from-1",
        ["sinusoidal_pe(4, 6) matches", "sinusoidal_pe(60, 512)", "build_input(ids, E) equals"],
    ),
    (
        "input-layer",
        "input_layer_halves_layout.py",
        "halves-layout",
        ["sinusoidal_pe(4, 6) matches", "sinusoidal_pe(60, 512)", "build_input(ids, E) equals"],
    ),
    (
        "input-layer",
        "input_layer_concatenate.py",
        "concatenated",
        ["build_input(ids, E) has shape", "build_input(ids, E) equals", "build_input(ids, E, pe)"],
    ),
    (
        "attention-head",
        "attention_head_mutates_K.py",
        "mutated-input",
        ["attention(Q, K, V) leaves Q, K and V unchanged"],
    ),
    (
        "input-layer",
        "input_layer_mutates_E.py",
        "mutated-E",
        ["build_input(ids, E) equals", "build_input(ids, E) leaves E unchanged", "build_input(ids, E, pe)"],
    ),
    (
        "attention-head",
        "attention_head_naive_softmax.py",
        "naive-softmax",
        ["softmax([1000, 1001, 1002])", "softmax([-1000, -1001, -1002])", "attention(1000 * Q, K, V)"],
    ),
    (
        "attention-head",
        "attention_head_no_scale.py",
        "no-scale",
        ["weights = softmax(Q @ K.T / sqrt(d_k))", "bank example", "attention(Q, K, V, mask)"],
    ),
    (
        "attention-head",
        "attention_head_wrong_axis.py",
        "wrong-axis",
        [
            "weights = softmax(Q @ K.T / sqrt(d_k))",
            "bank example",
            "attention(Q, K, V, mask)",
            "attention(1000 * Q, K, V)",
        ],
    ),
    (
        "sql-softmax",
        "sql_softmax_order_by.py",
        "sql-window-order-by",
        ["bank example", "a causal mask", "scores of +1000 and -1000", "a wide spread"],
    ),
    (
        "sql-softmax",
        "sql_softmax_no_partition.py",
        "sql-no-partition",
        # The wide spread has two rows since it tests a maximum at either end, so it catches this too.
        ["bank example", "a causal mask", "scores of +1000 and -1000", "a wide spread"],
    ),
    ("sql-softmax", "sql_softmax_no_max.py", "sql-no-max", ["scores of +1000 and -1000"]),
    ("sql-softmax", "sql_softmax_global_max.py", "sql-global-max", ["scores of +1000 and -1000"]),
    # Right on the bank sentence and on +/-1000 (their spread is small): only the wide spread catches
    # a shift below the maximum. LAST_VALUE and (MAX + AVG) / 2 passed when the wide row was only
    # [-2000, -2000, 0] (its maximum last, its midpoint -666.7 within exp's range); MIN and
    # FIRST_VALUE were named "average".
    ("sql-softmax", "sql_softmax_avg_shift.py", "sql-shift-below-max", ["a wide spread"]),
    ("sql-softmax", "sql_softmax_min_shift.py", "sql-shift-below-max", ["a wide spread"]),
    ("sql-softmax", "sql_softmax_first_value_shift.py", "sql-shift-below-max", ["a wide spread"]),
    ("sql-softmax", "sql_softmax_last_value_shift.py", "sql-shift-below-max", ["a wide spread"]),
    ("sql-softmax", "sql_softmax_midpoint_shift.py", "sql-shift-below-max", ["a wide spread"]),
]
CASE_IDS = [case[1].removesuffix(".py") for case in MISTAKE_CASES]


@pytest.mark.parametrize("name, filename, mistake, caught_by", MISTAKE_CASES, ids=CASE_IDS)
def test_classic_mistake_is_rejected_and_named(name, filename, mistake, caught_by):
    report = run(name, namespace_of(FILES / filename))
    assert not report.passed and report.exit_code == 1
    # Exactly this mistake is named, by exactly the expected checks ...
    assert report.mistakes == {mistake}
    naming = [r.title for r in report.results if mistake in r.mistakes]
    assert len(naming) == len(caught_by)
    for part, title in zip(caught_by, naming):
        assert part in title
    # ... and every failed required check names it.
    assert all(mistake in r.mistakes for r in report.failures if not r.optional)
    # The report says it in plain words under each of those checks (the text
    # the console script prints: the test below), and what was expected.
    text = report.format()
    assert text.count(f"\n        {describe(mistake)}") == len(caught_by)
    assert describe(mistake).startswith(f"classic mistake: {MISTAKES[mistake].name}.")
    assert "expected" in text  # what was expected is always said


# One classic mistake per exercise through the real console script: the same
# checks and report as above (every mistake is named there), printed, exit status 1.
CONSOLE_MISTAKE_CASES = [case for case in MISTAKE_CASES if case[1] in {
    "input_layer_positions_from_1.py", "attention_head_naive_softmax.py", "sql_softmax_order_by.py",
}]  # fmt: skip
CONSOLE_CASE_IDS = [case[1].removesuffix(".py") for case in CONSOLE_MISTAKE_CASES]


@pytest.mark.parametrize("name, filename, mistake, caught_by", CONSOLE_MISTAKE_CASES, ids=CONSOLE_CASE_IDS)
def test_classic_mistake_via_console_script(name, filename, mistake, caught_by):
    result = cli("check", name, FILES / filename)
    assert result.returncode == 1
    assert f"classic mistake: {MISTAKES[mistake].name}." in result.stdout
    assert result.stdout.count(f"\n        {describe(mistake)}") == len(caught_by)
    assert "expected" in result.stdout  # what was expected is always said
    assert result.stdout.rstrip().endswith("Fix the first FAIL above and run the check again.")


def test_the_console_mistakes_are_one_per_exercise():
    assert sorted(case[0] for case in CONSOLE_MISTAKE_CASES) == sorted(EXERCISES)


def test_a_mistake_in_sinusoidal_pe_shows_the_expected_row():
    out = cli("check", "input-layer", FILES / "input_layer_positions_from_1.py").stdout
    assert "expected PE[0, 0] = 0.0000, got 0.8415 (24 of 24 entries differ)" in out
    assert "row 0 expected [0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000]" in out


def test_concatenation_reports_the_shape():
    out = cli_here("check", "input-layer", FILES / "input_layer_concatenate.py").stdout
    assert "expected build_input(ids, E) to have shape (5, 4), got shape (5, 8)" in out


def test_every_classic_mistake_of_the_brief_has_a_file():
    brief = {
        "sin-cos-swapped", "exponent-i-over-d", "dimension-index-exponent", "positions-from-1",
        "halves-layout", "concatenated", "mutated-E", "naive-softmax", "no-scale", "wrong-axis",
        "sql-window-order-by", "sql-no-partition", "sql-no-max", "sql-global-max", "sql-shift-below-max",
    }  # fmt: skip
    # and one honest slip a security review found passing (issue 26.4): K /= sqrt(d_k) in place.
    assert brief | {"mutated-input"} == {case[2] for case in MISTAKE_CASES}
    assert brief <= set(MISTAKES)


# --- missing functions, functions that raise, files that do not run ----------


def test_missing_function_is_a_clear_failure():
    result = cli_here("check", "input-layer", FILES / "input_layer_missing_function.py")
    assert result.returncode == 1
    assert "FAIL  build_input: missing; define build_input(token_ids, E, pe=None)" in result.stdout
    assert "its 4 checks were not run" in result.stdout
    assert result.stdout.count("\nPASS  ") == 9  # the other three functions are still checked


def test_function_that_raises_is_reported_with_the_exception():
    result = cli_here("check", "input-layer", FILES / "input_layer_raises.py")
    assert result.returncode == 1
    assert (
        "raised IndexError: index 12 is out of bounds for axis 1 with size 4 "
        "(line 14 of input_layer_raises.py, in embed)"
    ) in result.stdout
    assert "FAIL  embed(ids, E) has shape (L, d) = (5, 4)" in result.stdout


def test_file_that_does_not_run_is_reported():
    result = cli_here("check", "input-layer", FILES / "input_layer_syntax_error.py")
    assert result.returncode == 1
    assert "FAIL  could not run input_layer_syntax_error.py" in result.stdout
    assert "SyntaxError: expected ':' (line 3 of input_layer_syntax_error.py)" in result.stdout


def test_not_a_function_and_returns_none():
    ns = namespace_of(SOLUTIONS["input-layer"]) | {"one_hot": 3, "embed": lambda ids, E: None}
    out = io.StringIO()
    report = check("input-layer", ns, file=out)
    text = out.getvalue()
    assert not report.passed
    assert "FAIL  one_hot: not a function; define one_hot(token_ids, vocab_size)" in text
    assert "one_hot is a value of type int" in text
    assert "embed returned None: did you forget the `return` line?" in text


def test_odd_d_model_must_raise_value_error():
    ns = namespace_of(SOLUTIONS["input-layer"])
    ns["sinusoidal_pe"] = lambda seq_len, d_model: np.zeros((seq_len, d_model))
    report = run("input-layer", ns)
    failed = [r for r in report.failures if "raises ValueError" in r.title]
    assert failed and "expected ValueError for odd d_model=5" in failed[0].details[0]


# --- the stretch goal ---------------------------------------------------------


def test_stretch_is_optional_when_not_written():
    result = cli_here("check", "attention-head", FILES / "attention_head_no_stretch.py")
    assert result.returncode == 0
    assert "SKIP  attention_backward: not defined (optional stretch, skipped)" in result.stdout
    assert "stretch not attempted. All done." in result.stdout


def test_stretch_stub_still_raising_not_implemented_is_skipped():
    stub: dict = {}
    exec(starter("attention-head"), stub)
    ns = namespace_of(SOLUTIONS["attention-head"]) | {"attention_backward": stub["attention_backward"]}
    report = run("attention-head", ns)
    assert report.passed
    assert [r.status for r in report.results if r.optional] == ["SKIP"]


def test_wrong_stretch_fails_the_run_once_written():
    result = cli_here("check", "attention-head", FILES / "attention_head_backward_wrong.py")
    assert result.returncode == 1
    assert "FAIL  dQ matches the chain rule (qkv.attention_backward)" in result.stdout
    assert "PASS  dK matches the chain rule (qkv.attention_backward)" in result.stdout
    required = n_checks("attention-head", optional=False)
    assert f"{required} of {required} checks passed; stretch: 3 of 4 passed." in result.stdout


# --- the command line ---------------------------------------------------------


def test_list_names_every_exercise():
    result = cli("list")
    assert result.returncode == 0
    for ex in EXERCISES.values():
        assert ex.name in result.stdout
        for spec in ex.functions:
            assert spec.signature in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("check", "no-such", "x.py"), "unknown exercise 'no-such'"),
        (("starter", "no-such"), "unknown exercise 'no-such'"),
        (("check", "input-layer", "does/not/exist.py"), "no such file"),
        # Security review L5: an OSError traceback and exit 1, the status of a failed check.
        (("check", "input-layer", "x" * 5000 + ".py"), "(5003 characters) as a file: File name too long"),
    ],
    ids=["exercise", "starter", "no-file", "name-too-long"],
)
def test_usage_errors_exit_2(args, message):
    result = cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_notebook_path_points_to_the_in_notebook_call(tmp_path):
    notebook = tmp_path / "mine.ipynb"
    notebook.write_text("{}")
    result = cli("check", "input-layer", notebook)
    assert result.returncode == 2
    assert 'check("input-layer", globals())' in result.stderr


# --- the wrong variants themselves ------------------------------------------------


def test_pe_variant_without_mistakes_is_the_reference():
    for seq_len, d_model in [(4, 6), (60, 512), (5, 4)]:
        assert np.allclose(pe_variant(seq_len, d_model), qkv.sinusoidal_encoding(seq_len, d_model))


@pytest.mark.parametrize("seq_len, d_model", [(4, 6), (60, 512), (5, 4)])
def test_pe_variants_are_all_distinguishable(seq_len, d_model):
    tables = [qkv.sinusoidal_encoding(seq_len, d_model)] + [t for _, t in pe_variants(seq_len, d_model)]
    assert len(tables) == 24  # 2 (swap) x 3 (exponent) x 2 (start) x 2 (layout)
    for a, b in itertools.combinations(tables, 2):
        assert not np.allclose(a, b, atol=1e-6)


def test_curriculum_halves_example():
    assert pe_variant(2, 4)[1].round(4).tolist() == [0.8415, 0.5403, 0.01, 1.0]
    assert pe_variant(2, 4, halves=True)[1].round(4).tolist() == [0.8415, 0.01, 0.5403, 1.0]


@pytest.mark.parametrize("mask", [None, _MASK], ids=["no-mask", "mask"])
def test_weight_variants_are_all_distinguishable(mask):
    q, k, _ = _data() if mask is None else _data(seed=512, l_q=4, l_k=4)
    right = qkv.scaled_dot_product_attention(q, k, np.eye(k.shape[0]), mask)[1]
    tables = [right] + [w for _, w in weight_variants(q, k, mask)]
    for a, b in itertools.combinations(tables, 2):
        assert not np.allclose(a, b, atol=1e-6)


# --- planted faults: the learner's code cannot end, hang or fool the check -----------

# (file, extra options, exit status, a line of the report). Before the sandbox,
# the first two exited 0 with no output, the loops and the thread hung, the
# allclose file passed, and __array__, 10**400 and np.seterr crashed the checker.
FAULTS = [
    (
        "fault_sys_exit.py",
        (),
        1,
        "FAIL  could not run fault_sys_exit.py: called sys.exit(0) (line 5 of fault_sys_exit.py)",
    ),
    (
        "fault_os_exit.py",
        (),
        1,
        "FAIL  could not run fault_os_exit.py: the process ended while the file was loading "
        "(exit status 0, as os._exit(0) does)",
    ),
    (
        "fault_endless_loop.py",
        ("--timeout", "1"),
        1,
        "FAIL  could not run fault_endless_loop.py: still running after the 1 s time limit "
        "while the file was loading (an endless loop at top level?)",
    ),
    (
        "fault_endless_loop_in_function.py",
        ("--timeout", "1.5"),
        1,
        "FAIL  attention: still running after the 1.5 s time limit (an endless loop?)",
    ),
    (
        "fault_ends_in_function.py",
        (),
        1,
        "FAIL  softmax: ended the process running it (exit status 0, as os._exit(0) does)",
    ),
    (
        "fault_signal.py",
        (),
        1,
        "FAIL  softmax: ended the process running it (killed by SIGTERM)",
    ),
    (
        "fault_memory.py",
        ("--memory-mb", "512"),
        1,
        "        raised MemoryError: Unable to allocate 1.00 GiB for an array with shape (134217728,) "
        "and data type float64 (line 7 of fault_memory.py, in softmax); "
        "the checker gives your code at most 512 MiB of memory",
    ),
    (
        "fault_replaces_allclose.py",
        (),
        1,
        "        expected softmax(x)[0] = 0.0900, got 0.0000 (3 of 3 entries differ)",
    ),
    (
        "fault_array_raises.py",
        (),
        1,
        "which is not an array of numbers (RuntimeError: no numbers in here)",
    ),
    (
        "fault_huge_int.py",
        (),
        1,
        "        softmax returned int 100000000000000000000000000000000000000000000000000000000..., "
        "which is not an array of numbers (OverflowError: int too large to convert to float)",
    ),
    (
        "fault_seterr_raise.py",
        (),
        0,
        "Result: 11 of 11 checks passed; stretch not attempted. All done.",
    ),
    (
        "fault_thread.py",
        (),
        0,
        "Note: your code left 1 thread running after the checks; the checker stopped the process "
        "(a thread left running is not a failure)",
    ),
    (
        "fault_prints_a_lot.py",
        (),
        0,
        "Note: your code printed 984616 more bytes, not shown (the report keeps 16384)",
    ),
    (
        "fault_writes_to_checker.py",
        (),
        1,
        "FAIL  softmax: sent the checker data it cannot read "
        "(a message announces 4294967295 bytes, more than 16777216)",
    ),
]


@pytest.mark.parametrize("filename, options, status, line", FAULTS, ids=[f[0][6:-3] for f in FAULTS])
def test_planted_fault_gets_its_exit_status_and_one_line(filename, options, status, line):
    if filename == "fault_memory.py" and sys.platform != "linux":
        pytest.skip("RLIMIT_AS is enforced on Linux only")
    result = cli_here("check", "attention-head", FILES / filename, *options)  # a hang fails: Hung
    assert result.returncode == status, result.stdout + result.stderr
    assert line in result.stdout.splitlines() or line in result.stdout, result.stdout
    assert result.stderr == ""  # no traceback: the checker itself did not crash
    assert "Traceback" not in result.stdout
    if status == 0:
        assert "FAIL" not in result.stdout and result.stdout.rstrip().endswith("All done.")
    else:
        assert result.stdout.rstrip().endswith("Fix the first FAIL above and run the check again.")


def test_after_a_function_ends_the_process_the_next_one_is_checked_in_a_fresh_one():
    out = cli_here("check", "attention-head", FILES / "fault_ends_in_function.py").stdout
    assert "        its other 4 checks were not run" in out
    assert "PASS  weights = softmax(Q @ K.T / sqrt(d_k)) row by row; output = weights @ V" in out
    assert "        called sys.exit(0) (line 18 of fault_ends_in_function.py, in attention)" in out
    assert "Result: 5 of 11 checks passed" in out


def test_a_timeout_stops_the_remaining_checks():
    # 5 s: room for the checks before the loop on a busy machine (1.5 s was not, at load 13).
    # A loop that sleeps: stopped like the one that spins (FAULTS), without a core busy for 5 s.
    loop = FILES / "fault_endless_wait_in_function.py"
    out = cli_here("check", "attention-head", loop, "--timeout", "5").stdout
    assert "FAIL  attention: still running after the 5 s time limit (an endless loop?)" in out
    assert "PASS  softmax(x) leaves x unchanged" in out  # what ran before the loop is reported
    assert "SKIP  attention_backward: not checked: the run was stopped above" in out
    assert "Result: 5 of 11 checks passed" in out


def test_printed_output_is_shown_up_to_the_cap():
    out = cli_here("check", "attention-head", FILES / "fault_prints_a_lot.py").stdout
    shown = out.split("Your code printed:\n", 1)[1].split("\nNote:", 1)[0]
    assert shown.startswith("    0000 xxx")
    assert len(shown.replace("\n    ", "\n")) <= Limits().output_bytes + 4


TIMEOUT_RANGE = "--timeout must be a number of seconds above 0 and at most 86400 (a day)"
MEMORY_RANGE = "--memory-mb must be 0 (no limit) or a whole number of MiB from 128 to 1048576 (1 TiB)"


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--timeout", "0", TIMEOUT_RANGE),
        ("--timeout", "nan", TIMEOUT_RANGE),
        # Security review M9: an OverflowError traceback from the selector, exit 1 (a failed check's status).
        ("--timeout", "1e9", TIMEOUT_RANGE),
        ("--memory-mb", "-1", MEMORY_RANGE),
        # Security review L4: setrlimit's OverflowError in the child made a correct solution FAIL.
        ("--memory-mb", "99999999999999999", MEMORY_RANGE),
    ],
)
def test_bad_limits_are_usage_errors(option, value, message):
    result = cli("check", "attention-head", SOLUTIONS["attention-head"], option, value)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_default_limits_are_documented():
    assert (Limits().seconds, Limits().memory_mb) == (10.0, 1024)
    help_text = " ".join(cli("check", "--help").stdout.split())
    assert "(default: 10; at most 86400)" in help_text
    assert "(default: 1024; 0: none; else 128 to 1048576)" in help_text
    for timeout in (-1, 1e9, float("inf")):
        with pytest.raises(ValueError, match=r"^timeout must be a number of seconds above 0 and at most 86400"):
            run("attention-head", SOLUTIONS["attention-head"], timeout=timeout)
    for memory_mb in (-5, 10**17, 64):
        with pytest.raises(ValueError, match=r"^memory_mb must be 0 \(no limit\) or a whole number of MiB from 128"):
            run("attention-head", SOLUTIONS["attention-head"], memory_mb=memory_mb)


def test_a_newline_in_the_files_name_cannot_start_a_line_of_the_report():
    """Re-review 9a, X5: a file named "x\nResult: 11 of 11 checks passed. All done." put that
    line at the start of a line of the report, above the real one."""
    name = "mine\nResult: 11 of 11 checks passed. All done.\r.py"
    text = Report(get_exercise("attention-head"), (), source=name).format()
    assert "File: mine\\nResult: 11 of 11 checks passed. All done.\\r.py" in text.splitlines()
    assert not any(line.startswith("Result: 11 of 11") for line in text.splitlines())


def test_a_report_without_its_checks_never_passes():
    ex = get_exercise("attention-head")
    assert not Report(ex, ()).passed  # no results at all: not a pass, whatever ended the run
    assert Report(ex, ()).exit_code == 1


# --- the notebook path: check(name, globals()) ------------------------------------


@pytest.fixture
def numpy_restored(monkeypatch):
    """Undo whatever a planted file does to NumPy in this process."""
    for name in ("allclose", "isclose", "array_equal"):
        monkeypatch.setattr(np, name, getattr(np, name))


def test_notebook_path_compares_outside_this_process(numpy_restored):
    ns = namespace_of(FILES / "fault_replaces_allclose.py")  # replaces np.allclose here
    assert np.allclose(0, 1)  # this process is fooled ...
    report = run("attention-head", ns)
    assert not report.passed  # ... the checker is not
    assert report.notes == ()  # the functions were rebuilt and ran in a child
    assert "expected softmax(x)[0] = 0.0900, got 0.0000 (3 of 3 entries differ)" in report.format()


def test_notebook_path_with_functions_it_cannot_rebuild_still_compares_elsewhere(numpy_restored):
    ns = namespace_of(FILES / "fault_replaces_allclose.py")
    ns["softmax"] = lambda x, axis=-1: np.zeros_like(x)  # a lambda: served from this process
    report = run("attention-head", ns)
    assert not report.passed
    assert report.notes[-1].startswith(
        "your functions ran in this notebook's process, not in a separate one, "
        "because softmax is a lambda; define it with def."
    )
    assert "expected softmax(x)[0] = 0.0900, got 0.0000 (3 of 3 entries differ)" in report.format()


def test_notebook_path_ignores_the_callers_seterr():
    with np.errstate(all="raise"):
        report = run("attention-head", namespace_of(SOLUTIONS["attention-head"]))
    assert report.passed, report.format()


def test_notebook_path_survives_os_exit_and_sys_exit():
    report = run("attention-head", namespace_of(FILES / "fault_ends_in_function.py"))
    text = report.format()
    assert "FAIL  softmax: ended the process running it (exit status 0, as os._exit(0) does)" in text
    assert "called sys.exit(0) (line 18 of fault_ends_in_function.py, in attention)" in text
    assert report.exit_code == 1


def test_notebook_path_stops_an_endless_loop():
    # The rebuilt function runs in a child, stopped as on the file path (FAULTS: a loop that
    # spins); this one sleeps, so that no core is busy until the limit.
    report = run("attention-head", namespace_of(FILES / "fault_endless_wait_in_function.py"), timeout=1)
    assert "FAIL  attention: still running after the 1 s time limit (an endless loop?)" in report.format()


def test_notebook_path_stops_an_endless_loop_it_cannot_rebuild():
    def forever(x):
        while True:
            try:
                pass
            except BaseException:  # swallows the first alarm; the next one comes 0.2 s later
                pass

    ns = {"softmax": lambda x, axis=-1: forever(x)}
    # The loop spins in this process; softmax is called first, so the limit
    # counts only its own time (the checker's start is not charged).
    report = run("attention-head", ns, timeout=0.3)
    text = report.format()
    assert "FAIL  softmax: still running after the 0.3 s time limit (an endless loop?)" in text
    assert "because softmax is a lambda" in report.notes[-1]


@pytest.mark.parametrize(
    "namespace, message",
    [
        ({"f": lambda x: x}, "f is a lambda; define it with def"),
        ({"f": (lambda k: lambda: k)(1)}, "f is a lambda; define it with def"),
        ({"f": len, "g": object()}, None),  # len is importable, g is not asked for
        ({"f": io.StringIO()}, "f is a StringIO, which cannot be copied to another process"),
        ({"f": types.new_class("Mine")}, "f is a class defined in the notebook"),
    ],
)
def test_what_cannot_be_rebuilt_is_named(namespace, message):
    if message is None:
        assert "from builtins import len as f" in portable_source(namespace, ["f"])
        return
    with pytest.raises(NotPortable, match=message):
        portable_source(namespace, ["f"])


def test_a_closure_and_an_edited_function_are_not_rebuilt(tmp_path):
    def outer():
        k = 2

        def inner(x):
            return k * x

        return inner

    with pytest.raises(NotPortable, match="f uses variables of the function it was defined in"):
        portable_source({"f": outer()}, ["f"])
    path = tmp_path / "mine.py"
    path.write_text("def f(x):\n    return x + 1\n")
    ns = runpy.run_path(str(path))
    path.write_text("def f(x):\n    return x - 1\n")  # edited after it ran
    linecache.checkcache(str(path))
    with pytest.raises(NotPortable, match="the source of f has changed since it was defined"):
        portable_source(ns, ["f"])


def test_rebuilt_module_has_the_same_values_and_line_numbers(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "import numpy as np\nSCALE = 0.1\nTABLE = np.arange(6.0).reshape(2, 3)\n"
        "NAMES = ('a', 1, None)\n\n\ndef helper(x):\n    return x * SCALE\n\n\n"
        "def f(x=NAMES):\n    return helper(TABLE) + len(x) / 0\n"
    )
    ns = runpy.run_path(str(path))
    rebuilt: dict = {}
    exec(portable_source(ns, ["f"]), rebuilt)
    assert rebuilt["SCALE"] == 0.1 and rebuilt["NAMES"] == ("a", 1, None)
    assert np.array_equal(rebuilt["TABLE"], ns["TABLE"]) and rebuilt["TABLE"].dtype == ns["TABLE"].dtype
    with pytest.raises(ZeroDivisionError) as error:
        rebuilt["f"]()
    last = error.traceback[-1]
    assert (Path(str(last.path)).name, last.lineno + 1) == ("mine.py", 12)  # the original line


# --- plain data only between the processes ----------------------------------------


@pytest.mark.parametrize(
    "data, message",
    [
        ({"dtype": "object", "shape": [1], "b64": ""}, "dtype 'object'"),
        ({"dtype": "float64", "shape": [2], "b64": "AAAAAAAA8D8="}, "needs 16 bytes, got 8"),
        ({"dtype": "float64", "shape": [-1], "b64": ""}, "shape must be"),
        ({"dtype": "float64", "shape": [1], "b64": "not base64!"}, "not base64"),
        ({"dtype": "float64", "shape": [1]}, "must be"),
    ],
)
def test_arrays_from_the_child_are_validated(data, message):
    with pytest.raises(WireError, match=message):
        decode_array(data)


def test_values_from_the_child_are_validated():
    with pytest.raises(WireError, match="not a value"):
        decode_value({"t": "pickle", "data": "gASV"})
    with pytest.raises(WireError, match="dtype 'int64' is not one of float64"):
        ints = {"dtype": "int64", "shape": [], "b64": "AAAAAAAAAAA="}
        decode_value({"t": "array", "type": "ndarray", "array": ints})
    with pytest.raises(WireError, match="announces"):
        FrameReader().feed(b"\xff\xff\xff\xff")
    with pytest.raises(WireError, match="not JSON"):
        FrameReader().feed(b"\x00\x00\x00\x02{x")
    # Issue 26.6: an integer of 5,000 digits made json raise a plain ValueError, which ended the CLI
    # with the usage-error status instead of a FAIL line.
    body = b'{"n": ' + b"7" * 5000 + b"}"
    with pytest.raises(WireError, match="not JSON: Exceeds the limit"):
        FrameReader().feed(len(body).to_bytes(4, "big") + body)


def test_unreadable_values_become_clear_failures():
    class Liar:
        def __array__(self, dtype=None, copy=None):
            raise SystemExit(0)

        def __repr__(self):
            raise ValueError("no repr either")

    value = decode_value(encode_value(Liar()))
    assert value == Unreadable("Liar", "<repr() raised ValueError>", "SystemExit: 0")
    with pytest.raises(CheckFailed, match=r"f returned Liar <repr\(\) raised ValueError>, which is not"):
        as_array(value, "f")
    with pytest.raises(CheckFailed, match=r"\(SystemExit: 0\)"):
        as_array(Liar(), "f")  # the same object in this process (a check's own value)


# --- the stretch's expected gradients come from the library ----------------------


def test_reference_gradients_match_central_finite_differences():
    q, k, v, d_output = _backward_data()
    expected = reference_gradients(q, k, v, d_output)

    def loss(q_, k_, v_):
        return float(np.sum(qkv.scaled_dot_product_attention(q_, k_, v_)[0] * d_output))

    eps = 1e-6
    for which, arr in enumerate((q, k, v)):
        numeric = np.zeros_like(arr)
        for index in np.ndindex(arr.shape):
            plus, minus = [q.copy(), k.copy(), v.copy()], [q.copy(), k.copy(), v.copy()]
            plus[which][index] += eps
            minus[which][index] -= eps
            numeric[index] = (loss(*plus) - loss(*minus)) / (2 * eps)
        assert np.allclose(expected[which], numeric, atol=1e-8), which


def test_reference_gradients_need_no_more_queries_than_keys():
    q, k, v = np.ones((3, 2)), np.ones((2, 2)), np.ones((2, 1))
    with pytest.raises(ValueError, match="q has 3 rows, more than k's 2"):
        reference_gradients(q, k, v, np.ones((3, 1)))


def test_a_system_without_posix_is_told_so(monkeypatch):
    from qkv.exercises import sandbox

    monkeypatch.setattr(sandbox, "_POSIX", False)
    for source in (SOLUTIONS["attention-head"], {}):
        with pytest.raises(RuntimeError, match="needs a POSIX system"):
            run("attention-head", source)


def test_a_child_left_behind_still_stops_on_its_cpu_limit():
    """The backstop for a checker killed before it could kill its child: RLIMIT_CPU."""
    request_read, request_write = os.pipe()  # no request will ever come
    reply_read, reply_write = os.pipe()
    command = [sys.executable, "-m", "qkv.exercises._child", str(request_read), str(reply_write)]
    command += ["0", "1", tempfile.gettempdir(), str(FILES / "fault_endless_loop.py"), "softmax"]  # 1 CPU second
    child = subprocess.Popen(command, pass_fds=(request_read, reply_write), env=child_environment())
    try:
        status = child.wait(timeout=120)
    finally:
        child.kill()
        for fd in (request_read, request_write, reply_read, reply_write):
            os.close(fd)
    assert status in (-signal.SIGXCPU, -signal.SIGKILL)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:  # it ended meanwhile
                pass
    return found


@pytest.fixture
def stop_raises():
    """SIGINT raises KeyboardInterrupt in the test, as in a notebook cell, whatever pytest inherited.

    A shell that starts a command in the background (``make test &``) starts it
    with SIGINT ignored, and Python keeps it so: a stop would do nothing at all.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc (Linux)")
def test_stopping_a_notebook_cell_leaves_no_process_behind(tmp_path, monkeypatch, stop_raises):
    """The reader presses stop while a rebuilt function loops: the checker and its child end, at once."""
    from qkv.exercises.sandbox import _GRACE_SECONDS

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the rebuilt module lands here
    # A loop that sleeps: the group kill ends it as it ends one that spins, and no core is busy.
    ns = namespace_of(FILES / "fault_endless_wait_in_function.py")
    main_thread = threading.get_ident()
    pressed = []
    run_ended = threading.Event()

    def press_stop_once_the_loop_runs():
        while not run_ended.wait(0.1):
            if _processes_mentioning(str(tmp_path)):  # the child running the rebuilt module
                time.sleep(0.5)
                if not run_ended.is_set():
                    pressed.append(time.monotonic())
                    signal.pthread_kill(main_thread, signal.SIGINT)
                return

    watcher = threading.Thread(target=press_stop_once_the_loop_runs)
    started = time.monotonic()
    watcher.start()
    outcome = "returned a report"  # what run() did; a stop must make it raise KeyboardInterrupt
    try:
        try:
            run("attention-head", ns, timeout=60)
        except KeyboardInterrupt:
            outcome = "raised KeyboardInterrupt"
        stopped = time.monotonic()
    finally:
        run_ended.set()
        watcher.join()
    assert pressed, (
        f"stop was never pressed: no process mentioning {tmp_path} was seen in the {stopped - started:.1f} s run"
    )
    assert outcome == "raised KeyboardInterrupt", f"run() {outcome} {stopped - pressed[0]:.1f} s after stop was pressed"
    assert _processes_mentioning(str(tmp_path)) == []
    # Mid-call, the child cannot read an exit request: it is killed without the grace period
    # for its goodbye (which made every stop take more than 2 s; about 0.4 s now, unloaded).
    took = stopped - pressed[0]
    assert took < _GRACE_SECONDS, f"the cell took {took:.2f} s to stop"


def _assert_group_ends(group: int) -> None:
    """The whole process group is gone (its last processes reaped, by init, within 2 s)."""
    deadline = time.monotonic() + 2
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"process group {group} is still there"
        time.sleep(0.01)


def _seconds_to_stop_once(tmp_path: Path, never: str, stop) -> float:
    """Wait (up to 60 s) until the learner's code has touched ``started`` in its temporary
    folder (made under ``tmp_path``: it is running in the child), then time ``stop()``;
    ``never`` is the failure if it never does."""
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("qkv-exercise-*/started")):
        assert time.monotonic() < deadline, never
        time.sleep(0.01)
    start = time.monotonic()
    stop()
    return time.monotonic() - start


#: The learner's code marks that it runs, where it may write: its temporary folder.
TOUCH_STARTED = "pathlib.Path(tempfile.gettempdir(), 'started').touch()"


def test_a_child_stopped_mid_call_is_killed_at_once(tmp_path, monkeypatch):
    """Stopped while the learner's function runs, the child cannot read an exit request.

    So ``close()`` kills its process group at once instead of waiting the grace period
    for a goodbye that cannot come. The goodbye of an idle child (the threads it left
    running) is FAULTS' fault_thread.py.
    """
    from qkv.exercises.core import TimeBudget
    from qkv.exercises.sandbox import _GRACE_SECONDS, _notes, _Session
    from qkv.exercises.wire import encode_args

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the child's folder is made here
    learner = tmp_path / "mine.py"
    learner.write_text(
        "import pathlib\nimport tempfile\nimport threading\n\n\n"
        "def softmax(x, axis=-1):\n"
        f"    {TOUCH_STARTED}\n"
        "    threading.Event().wait()  # never returns, and keeps no core busy\n",
        encoding="utf-8",
    )
    limits = Limits(seconds=60)
    session = _Session(learner, get_exercise("attention-head"), limits, TimeBudget(limits.seconds))
    session.start()
    assert session.child is not None
    group = session.child.process.pid
    try:
        session.child.send({"call": "softmax", "args": encode_args((np.zeros(3),))})
        took = _seconds_to_stop_once(tmp_path, "the learner's function was never called", session.stop)
    finally:
        session.stop()  # after a failure above; nothing to do otherwise
    assert took < 1.0, f"close() took {took:.2f} s with a call in flight (grace period {_GRACE_SECONDS} s)"
    _assert_group_ends(group)
    assert session.threads == 0  # no goodbye, so no count of threads left running ...
    assert _notes(session, limits) == ()  # ... and the report claims none
    assert list(tmp_path.glob("qkv-exercise-*")) == []  # and the child's folder is gone


def test_a_child_stopped_while_its_file_loads_is_killed_at_once(tmp_path, monkeypatch):
    """While the learner's file loads, the child runs its top level and cannot read an
    exit request either: ``close()`` kills it at once, as mid-call."""
    from qkv.exercises.core import TimeBudget
    from qkv.exercises.sandbox import _GRACE_SECONDS, _Child

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    learner = tmp_path / "mine.py"
    learner.write_text(
        f"import pathlib\nimport tempfile\nimport threading\n\n{TOUCH_STARTED}\n"
        "threading.Event().wait()  # a top level that never ends, and keeps no core busy\n",
        encoding="utf-8",
    )
    limits = Limits(seconds=60)
    child = _Child(learner, ["softmax", "attention"], limits, TimeBudget(limits.seconds))
    group = child.process.pid
    try:
        took = _seconds_to_stop_once(tmp_path, "the learner's file never ran", child.close)
    finally:
        if child.process.poll() is None:  # after a failure above
            child.kill()
    assert took < 1.0, f"close() took {took:.2f} s while the file loaded (grace period {_GRACE_SECONDS} s)"
    _assert_group_ends(group)
    assert child.threads == 0


def _stop_pressed_after(monkeypatch, owner, name: str, started: list) -> None:
    """Make ``owner.name`` press stop (SIGINT to this thread) right after it returns: a stop
    that lands just as a process has been started, before anyone has taken charge of it."""
    original = getattr(owner, name)

    def then_stop(self, *args, **kwargs):
        original(self, *args, **kwargs)
        started.append(self)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # the interrupt is handled here

    monkeypatch.setattr(owner, name, then_stop)


def test_a_stop_as_the_child_starts_leaves_no_process_behind(tmp_path, monkeypatch, stop_raises):
    """Stopped inside ``subprocess.Popen``, just after the child started: the child, in a
    session of its own, is still killed (the stop is held back until it is in charge)."""
    learner = tmp_path / "mine.py"
    learner.write_text("import threading\n\nthreading.Event().wait()  # a top level that never ends\n")
    started: list = []
    _stop_pressed_after(monkeypatch, subprocess.Popen, "_execute_child", started)
    try:
        with pytest.raises(KeyboardInterrupt):
            run("attention-head", learner, timeout=60)
        monkeypatch.undo()
        assert [str(learner) in " ".join(map(str, p.args)) for p in started] == [True]  # the child
        status = started[0].poll()
    finally:
        for process in started:
            if process.poll() is None:  # what the old code left running, for good
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    assert status == -signal.SIGKILL, f"the stopped check left the child running (status {status})"
    with pytest.raises(ProcessLookupError):
        os.killpg(started[0].pid, 0)  # its whole process group is gone


def test_a_stop_as_the_checker_starts_leaves_no_process_behind(monkeypatch, stop_raises):
    """The notebook path: stopped just after the fresh checker process started, before the
    ``with`` block that stops it was entered. The checker must still be stopped (it would
    wait for its request for as long as the interrupt's traceback is kept, in Jupyter until
    the next error)."""
    import qkv.exercises

    started: list = []
    _stop_pressed_after(monkeypatch, qkv.exercises._FreshChecker, "__init__", started)
    ns = namespace_of(SOLUTIONS["attention-head"])
    with pytest.raises(KeyboardInterrupt):
        run("attention-head", ns, timeout=60)
    monkeypatch.undo()
    assert len(started) == 1
    checker = started[0].process
    try:
        checker.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("the checker process was still running 10 s after the stop")
    finally:
        checker.kill()
        checker.wait()


# --- exercise 3: the learner's SQL runs here, so it is held on a short leash ----------


def test_an_endless_query_is_stopped_once_and_not_run_again(monkeypatch):
    """After SQL_SECONDS the query is interrupted; the other checks would wait as
    long again for the same query, so they are reported as not run."""
    assert SQL_SECONDS == 2.0  # what a learner's query gets (CHANGELOG); 0.25 s stops the same query
    monkeypatch.setattr("qkv.exercises.sql_softmax.SQL_SECONDS", 0.25)  # the query runs in this process
    monkeypatch.setenv("QKV_SQL_FAULT", "endless")
    report = run("sql-softmax", FILES / "sql_softmax_faults.py")
    assert not report.passed
    assert len(report.results) == 1, [r.title for r in report.results]  # the query ran once
    stopped = report.results[0]
    assert stopped.status == "FAIL" and stopped.function == "softmax_query"
    assert stopped.title == (
        "softmax_query: the query was still running after 0.25 s (an endless recursive CTE, or a slow function on "
        "a long string?)"
    )
    assert stopped.details[0].startswith("while checking: ")
    checks = len(SQL_SOFTMAX.checks_of("softmax_query"))
    assert stopped.details[1] == f"its other {checks - 1} checks were not run"
    assert not Path("/tmp/qkv-sql-softmax-attack.db").exists()


@pytest.mark.parametrize(
    "fault, message",
    [
        ("writes", "SQLite refused the query: not authorized"),
        ("attach", "SQLite refused the query: not authorized"),
        ("two", "SQLite refused the query: You can only execute one statement at a time."),
        ("huge", "SQLite refused the query: string or blob too big"),
    ],
)
def test_the_learners_sql_is_contained(fault, message, monkeypatch):
    monkeypatch.setenv("QKV_SQL_FAULT", fault)
    report = run("sql-softmax", FILES / "sql_softmax_faults.py")
    assert not report.passed
    first = report.results[0]
    assert first.status == "FAIL" and first.function == "softmax_query"
    assert first.details[0] == message
    assert not Path("/tmp/qkv-sql-softmax-attack.db").exists()


def test_a_query_without_a_window_is_named():
    ns = {
        "softmax_query": lambda: (
            "SELECT s.qpos, s.kpos, exp(s.score - m.top) / m.total AS weight FROM scores s JOIN "
            "(SELECT qpos, MAX(score) AS top, SUM(exp(score - (SELECT MAX(score) FROM scores t WHERE t.qpos = u.qpos))) AS total "
            "FROM scores u GROUP BY qpos) m ON m.qpos = s.qpos"
        )
    }
    report = run("sql-softmax", ns)
    by_title = {r.title.split(":")[0]: r for r in report.results}
    window = by_title["the query is a window query"]
    assert window.status == "FAIL"
    assert window.details[0] == "the query has no window function (no OVER outside comments and strings)"
    # The GROUP BY answer computes the right weights: only the window check fails.
    assert [r.status for r in report.results].count("FAIL") == 1


@pytest.mark.parametrize(
    "returned, message",
    [
        (42, "softmax_query() returned float; return the SQL text as a str"),
        ("", "softmax_query() returned an empty string; return one SELECT statement"),
        ("SELECT qpos, kpos, 1.0 FROM scores", "expected the columns qpos, kpos, weight, got qpos, kpos, 1.0"),
        (
            "SELECT qpos, kpos, 1.0 AS weight FROM scores WHERE kpos > 0",
            "no row for (qpos, kpos) = (0, 0): return one row per row of scores (3 missing)",
        ),
        (
            "SELECT qpos, kpos, 1.0 AS weight FROM scores WHERE qpos + kpos < 4 UNION ALL SELECT 0, 0, 1.0",
            "the pair (qpos, kpos) = (0, 0) comes back twice; return one row per score",
        ),
        # Security review M2: float('n/a') crashed the run (exit 2, no report).
        ("SELECT qpos, kpos, 'n/a' AS weight FROM scores", "the row (0, 0, 'n/a') has a weight that is not a number"),
    ],
)
def test_a_malformed_answer_says_what_is_wrong(returned, message):
    report = run("sql-softmax", {"softmax_query": lambda: returned})
    assert report.results[0].status == "FAIL"
    assert report.results[0].details[0] == message


@pytest.mark.parametrize(
    ("filename", "where"),
    [
        ("/tmp/ipykernel_4242/4039370886.py", "line 3 of one_hot"),
        ("<ipython-input-3-5f1e>", "line 3 of one_hot"),
        ("/home/learner/mine.py", "line 5 of mine.py, in one_hot"),
    ],
)
def test_a_notebook_cell_is_named_by_its_function_never_its_temporary_file(filename, where):
    """Issue 25.5: the checker used to cite 'line 17 of 4039370886.py', IPython's name for a cell."""
    from qkv.exercises.loader import learner_frame

    namespace: dict = {}
    exec(compile("\n\ndef one_hot(x):\n    y = 1\n    return y / 0\n", filename, "exec"), namespace)
    with pytest.raises(ZeroDivisionError) as raised:
        namespace["one_hot"](1)
    assert learner_frame(raised.value.__traceback__) == where


def test_the_learners_output_cannot_rewrite_the_report_on_a_terminal(tmp_path):
    """Issue 26.5: printed escape sequences ("up 6 lines, erase, a fake summary") reached the
    terminal intact and hid the real "0 of 6" line; they are shown as escapes now."""
    forged = tmp_path / "forged.py"
    forged.write_text(
        'print("\\x1b[6A\\r\\x1b[J10 of 10 checks passed\\u202e")\n'
        "def softmax(x):\n    raise ValueError('\\x1b[2Jcleared')\n"
    )
    result = cli_here("check", "attention-head", forged)
    assert result.returncode == 1, result.stdout
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", result.stdout), repr(result.stdout[-400:])
    assert "\\x1b[6A\\r\\x1b[J10 of 10 checks passed\\u202e" in result.stdout
    assert "raised ValueError: \\x1b[2Jcleared" in result.stdout


# --- issue 26.2 and 26.3: a learner's file cannot fake a pass, read secrets, or outlive the checker --
#
# And the security review after issue 26 (its H3-H5, M1-M4, L6, L11): the reproductions, each as
# small as it can be. Where the guard is Linux's (Landlock; a PID namespace inside a user
# namespace), the test asks the kernel first, on its own rather than through the code under test,
# and says what it skips.

QKV_SRC = Path(qkv.__file__).resolve().parents[1]  # the qkv under test; a child run imports this one


def _kernel_landlock_abi() -> int:
    """Landlock's ABI version here, asked of the kernel directly (0: none)."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))), 0)


@functools.cache
def _kernel_has_pid_namespaces() -> bool:
    """Whether an unprivileged process may make a user and a PID namespace here (asked in a fresh process)."""
    probe = "import ctypes, sys; sys.exit(ctypes.CDLL(None).unshare(0x10000000 | 0x20000000) != 0)"
    return sys.platform.startswith("linux") and subprocess.run([sys.executable, "-c", probe]).returncode == 0


LANDLOCK = _kernel_landlock_abi()
needs_landlock = pytest.mark.skipif(not LANDLOCK, reason="no Landlock on this system: not covered (README)")


def python_m(*args: str | Path, cwd: Path, python: str | Path = sys.executable, **env: str):
    """``python -m qkv.exercises.cli ARGS`` run from ``cwd``, with ``env`` added. With this
    Python it imports the qkv under test; another (a throw-away venv's) imports its own."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | env
    if python == sys.executable:  # a PYTHONPATH in env comes first
        environment["PYTHONPATH"] = os.pathsep.join([*filter(None, [env.get("PYTHONPATH")]), str(QKV_SRC)])
    command = [str(python), "-m", "qkv.exercises.cli", *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", list(SOLUTIONS))
def test_reference_solution_passes_via_python_m_from_another_folder(name, tmp_path):
    result = python_m("check", name, SOLUTIONS[name], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("All done.")
    assert list(tmp_path.iterdir()) == []  # the check wrote nothing where it ran


FAKE_PASS = '''
"""Implements nothing; writes a secrets.py where the checker imports from (its working directory
under python -m), which numpy.random imports: the planted module forges the report."""
import os, sys

print("token:", os.environ.get("GRADER_TOKEN"))
planted = """
import qkv.exercises.core as core
core.Report.passed = property(lambda self: True)
core.Report.format = lambda self: "Result: 11 of 11 checks passed. All done."
"""
with open(os.path.join(os.getcwd(), "secrets.py"), "w") as f:
    f.write(planted)
'''


def test_a_file_the_learner_writes_on_the_search_path_cannot_fake_a_pass(tmp_path):
    """Issue 26.2, and the review's H4: the same attack worked one run later, when the next
    checker imported the planted secrets.py at start-up. With Landlock the file is never
    written; without, the next run refuses to check (the test below)."""
    learner = tmp_path / "fake.py"
    learner.write_text(FAKE_PASS)
    runs = [python_m("check", "attention-head", learner, cwd=tmp_path, GRADER_TOKEN="s3cret-token") for _ in (1, 2)]
    first, second = runs
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Result: 0 of 11 checks passed" in first.stdout, first.stdout
    # The checker's environment does not reach the learner's code.
    assert "token: None" in first.stdout and "s3cret-token" not in first.stdout
    assert second.returncode != 0 and "All done" not in second.stdout, second.stdout + second.stderr
    if LANDLOCK:
        assert not (tmp_path / "secrets.py").exists()
        assert "PermissionError: [Errno 13] Permission denied" in first.stdout
        assert "your code may write files only in the checker's temporary folder" in first.stdout
    else:  # the planted file is there, but the checker imports nothing from its working directory
        assert second.returncode == 1 and "Result: 0 of 11 checks passed" in second.stdout, second.stdout


def test_a_check_run_imports_nothing_after_the_learners_code_starts():
    """What the guard above rests on: every module the checks use is imported before the child starts."""
    from qkv.exercises import sandbox

    for name, file in (
        ("attention-head", "attention_head_solution.py"),
        ("input-layer", "input_layer_solution.py"),
        ("sql-softmax", "sql_softmax_solution.py"),
    ):
        started: list[set[str]] = []
        original = sandbox._Child.__init__

        def record(self, *args, original=original, started=started, **kwargs):
            started.append(set(sys.modules))
            original(self, *args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sandbox._Child, "__init__", record)
            assert cli_here("check", name, FILES / file).returncode == 0
        assert started and set(sys.modules) - started[0] == set(), (name, set(sys.modules) - started[0])


#: The review's secrets.py: it survives the circular import (it loads the real secrets module).
OLD_PLANT = """
import importlib.util, os, sys
_spec = importlib.util.spec_from_file_location("_stdlib_secrets", os.path.join(os.path.dirname(os.__file__), "secrets.py"))
_real = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_real)
globals().update({k: v for k, v in vars(_real).items() if not k.startswith("__")})
core = sys.modules.get("qkv.exercises.core")
if core is not None:
    core.Report.passed = property(lambda self: True)
    core.Report.format = lambda self: "Result: 11 of 11 checks passed. All done."
"""


#: The re-review's N9: the same plant, posing as the real module by what it says about itself.
DISGUISED_PLANT = (
    OLD_PLANT
    + """
__file__ = _real.__file__
__spec__ = _real.__spec__
__spec__.name = "secrets"
"""
)
#: Re-review 2's P5: the same, and it rebinds the list of standard modules that the guard read.
REBINDING_PLANT = DISGUISED_PLANT + 'sys.stdlib_module_names = frozenset(sys.stdlib_module_names - {"secrets"})\n'
PLANTS = {"plain": OLD_PLANT, "disguised": DISGUISED_PLANT, "rebinding": REBINDING_PLANT}
PLANT_RAN = 'print("the planted secrets.py ran", file=sys.stderr)\n'
#: Any standard module, loaded from the real file, that says it ran.
STAND_IN = """
import importlib.util, os, sys
_spec = importlib.util.spec_from_file_location("_real", os.path.join(os.path.dirname(os.__file__), "{name}.py"))
_real = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_real)
globals().update({{k: v for k, v in vars(_real).items() if not k.startswith("__")}})
print("the planted {name}.py ran", file=sys.stderr)
"""


@pytest.mark.parametrize("name", ["__future__", "secrets"])
def test_no_standard_module_in_the_working_directory_runs_before_the_checker_drops_it(tmp_path, name):
    """The drop comes first: qkv/__init__.py imports nothing before it, and _checker_start itself
    imports only modules loaded at start-up (a `from __future__ import annotations` there ran a
    planted __future__.py)."""
    (tmp_path / f"{name}.py").write_text(STAND_IN.format(name=name))
    (tmp_path / "empty.py").write_text("# implements nothing\n")
    result = python_m("check", "attention-head", "empty.py", cwd=tmp_path)
    assert f"the planted {name}.py ran" not in result.stderr, result.stderr
    assert result.returncode == 1 and "Result: 0 of 11 checks passed" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_standard_module_planted_in_the_working_directory_never_runs_in_the_checker(tmp_path, plant):
    """Review H4, re-review N9 and re-review 2's P5: a secrets.py that a learner's file wrote (on a
    system without Landlock; here written by hand) sits in the working directory, and python -m
    imported it at start-up, where it could forge the report. The last one also rebound
    sys.stdlib_module_names, which the refusal below read, and faked "11 of 11" with exit 0 for a
    file that implements nothing. Now the checker drops the working directory from its search
    path before it imports anything (qkv._checker_start): the plant never runs, the check is real."""
    (tmp_path / "secrets.py").write_text(PLANTS[plant] + PLANT_RAN)
    (tmp_path / "empty.py").write_text("# implements nothing\n")
    result = python_m("check", "attention-head", "empty.py", cwd=tmp_path)
    assert "the planted secrets.py ran" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Result: 0 of 11 checks passed" in result.stdout and "All done" not in result.stdout


def test_the_learners_child_imports_nothing_from_the_working_directory(tmp_path):
    """Re-review 6a, U1: the child that runs the learner's code started as python -m in the
    checker's working directory, so a secrets.py there ran in it (numpy imports secrets) before it
    confined itself: free to SIGSTOP the checker (a hang) or write a .pth (a later fake pass). The
    child now starts with -P. The plant writes down every process it runs in."""
    ran = tmp_path / "ran.log"
    (tmp_path / "secrets.py").write_text(
        STAND_IN.format(name="secrets") + f"open({str(ran)!r}, 'a').write(repr(sys.argv) + '\\n')\n"
    )
    (tmp_path / "empty.py").write_text("# implements nothing\n")
    result = python_m("check", "attention-head", "empty.py", cwd=tmp_path)
    assert "Result: 0 of 11 checks passed" in result.stdout, result.stdout + result.stderr
    assert not ran.exists(), ran.read_text()


@pytest.mark.parametrize("flags", [[], ["-P"]])
def test_an_empty_pythonpath_entry_does_not_put_the_working_directory_on_the_checkers_path(tmp_path, flags):
    """Re-review 6a, T1: PYTHONPATH=":/x" (what `export PYTHONPATH=$PYTHONPATH:/x` makes when it was
    unset) is the working directory first, even under -P: the rebinding secrets.py plant there
    faked "11 of 11" with exit 0. A checker now starts again without such entries."""
    (tmp_path / "secrets.py").write_text(PLANTS["rebinding"] + PLANT_RAN)
    (tmp_path / "empty.py").write_text("# implements nothing\n")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment["PYTHONPATH"] = os.pathsep.join(["", str(tmp_path / "nonexistent"), str(QKV_SRC)])
    command = [sys.executable, *flags, "-m", "qkv.exercises.cli", "check", "attention-head", "empty.py"]
    result = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert "the planted secrets.py ran" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Result: 0 of 11 checks passed" in result.stdout and "All done" not in result.stdout


@pytest.mark.parametrize("plant", ["plain", "disguised"])
def test_a_standard_module_planted_on_pythonpath_is_refused_by_name(tmp_path, plant):
    """Review H4 and re-review N9: a folder on PYTHONPATH is the user's to set, so it stays on the
    search path, and a plant there runs. The checker then refuses to run, and names the file, by
    where the import system finds the name, which the module cannot set about itself. This is the
    tripwire README describes: a plant written to defeat it (the rebinding one) can."""
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "secrets.py").write_text(PLANTS[plant])
    (tmp_path / "empty.py").write_text("# implements nothing\n")
    result = python_m("check", "attention-head", "empty.py", cwd=tmp_path, PYTHONPATH=str(planted))
    assert "All done" not in result.stdout, result.stdout + result.stderr
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"secrets ({planted / 'secrets.py'})" in result.stderr
    assert "delete or rename that file" in result.stderr


@pytest.mark.parametrize(
    ("argv0", "orig_argv", "safe_path", "expected"),
    [
        ("-m", ["python3", "-m", "qkv.exercises.cli", "check"], False, "restart"),
        ("-m", ["python3", "-W", "error", "-mqkv.exercises._checker"], False, "restart"),
        ("-m", ["python3", "-Bm", "qkv.exercises.cli", "check"], False, "restart"),  # re-review 3, Q3
        ("-m", ["python3", "-OOum", "qkv.exercises.cli"], False, "restart"),
        # re-review 4, R4: a long option's value was read as a script name
        ("-m", ["python3", "--check-hash-based-pycs", "always", "-m", "qkv.exercises.cli"], False, "restart"),
        ("-m", ["python3", "-P", "-m", "qkv.exercises.cli"], True, None),
        ("/venv/bin/qkv-exercise", ["/venv/bin/python3", "/venv/bin/qkv-exercise", "check"], False, "drop"),
        ("-m", ["python3", "-m", "qkv.other"], False, None),
        ("script.py", ["python3", "script.py", "-m", "qkv.exercises.cli"], False, None),
        ("-c", ["python3", "-c", "import qkv"], False, None),
    ],
)
def test_only_a_checker_process_leaves_its_folder(argv0, orig_argv, safe_path, expected):
    from qkv import _checker_start

    assert _checker_start.action(argv0, orig_argv, safe_path) == expected


@pytest.mark.parametrize(
    ("argv0", "orig_argv", "pythonpath", "expected"),
    [
        ("-m", ["python3", "-P", "-m", "qkv.exercises.cli"], ":/opt/lib", "restart"),  # re-review 6a, T1
        ("/venv/bin/qkv-exercise", ["python3", "/venv/bin/qkv-exercise"], "/opt/lib:.", "restart"),
        ("-m", ["python3", "-P", "-m", "qkv.exercises.cli"], "/opt/lib", None),
        ("x.py", ["python3", "x.py"], ":/opt/lib", None),  # not a checker: its path is its own
    ],
)
def test_a_checker_whose_pythonpath_names_the_working_directory_starts_again(argv0, orig_argv, pythonpath, expected):
    from qkv import _checker_start

    assert _checker_start.action(argv0, orig_argv, True, pythonpath) == expected


@pytest.mark.parametrize("name", ["warnings"])
def test_a_module_python_imports_before_qkv_does_not_run_in_the_checker(tmp_path, name):
    """Re-review 3, Q1: under python -m, Python imports warnings and contextlib with the working
    directory on the path before qkv's first line; a planted warnings.py that forged the report gave
    "11 of 11 checks passed", exit 0, for an empty file. The checker now starts again with -P."""
    (tmp_path / f"{name}.py").write_text(STAND_IN.format(name=name) + OLD_PLANT)
    (tmp_path / "empty.py").write_text("# implements nothing\n")
    result = python_m("check", "attention-head", "empty.py", cwd=tmp_path)
    assert result.returncode == 1 and "Result: 0 of 11 checks passed" in result.stdout, result.stdout + result.stderr
    assert "All done" not in result.stdout


@pytest.fixture
def throwaway_venv(tmp_path):
    """A venv of its own, with a copy of the qkv under test: its site-packages and its qkv are the
    learner's to plant in, never the project's. A .pth puts the copy and this environment's
    site-packages (NumPy) on its path, as an editable install does.

    Returns (its python, its site-packages, the copy's src folder).
    """
    import site
    import venv

    src = tmp_path / "src"
    shutil.copytree(QKV_SRC / "qkv", src / "qkv", ignore=shutil.ignore_patterns("__pycache__"))
    venv.create(tmp_path / "venv", with_pip=False, symlinks=True)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(tmp_path / "venv")}))
    (purelib / "00links.pth").write_text(f"{src}\n{site.getsitepackages()[0]}\n")
    return tmp_path / "venv" / "bin" / "python", purelib, src


SQL_WRONG = "SELECT qpos, kpos, 1.0 / COUNT(*) OVER (PARTITION BY qpos) AS weight FROM scores"
SQL_RIGHT = (
    "WITH t AS (SELECT qpos, kpos, exp(score - MAX(score) OVER (PARTITION BY qpos)) AS e FROM scores) "
    "SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight FROM t"
)
#: Swaps the wrong query for the right one, in whatever process runs it (once: a venv's
#: site-packages may be on the path twice, as lib and lib64).
SQL_HOOK = f"""
import sqlite3 as s
if not hasattr(s, "hooked"):
    s.hooked = True
    class C(s.Connection):
        def execute(self, sql, *a):
            return s.Connection.execute(self, {SQL_RIGHT!r} if sql == {SQL_WRONG!r} else sql, *a)
    o = s.connect
    s.connect = lambda *a, **k: o(*a, factory=C, **k)
"""
SQL_PLANTS = {
    # a .pth in site-packages: python -I runs it, python -I -S does not
    "pth": f"""
import os, site
LINE = {"import sys; exec(" + repr(SQL_HOOK) + ", {})" + chr(10)!r}
for d in site.getsitepackages():
    try:
        with open(os.path.join(d, "zz_fake.pth"), "w") as f:
            f.write(LINE)
    except OSError:
        pass
""",
    # the runner's own file, rewritten
    "runner": f"""
import importlib.util
origin = importlib.util.find_spec("qkv.exercises._sql_runner").origin
text = open(origin).read()
try:
    with open(origin, "w") as f:
        f.write(text.replace("import json\\n", "import json\\n" + {SQL_HOOK!r}, 1))
except OSError:
    pass
""",
}


@pytest.mark.parametrize("plant", list(SQL_PLANTS))
def test_a_file_planted_for_the_sql_runner_cannot_fake_a_pass(throwaway_venv, tmp_path, plant):
    """Review H3: the learner's file implements nothing (its query is 1 / count) but planted code
    that the SQL runner ran, and the first run passed, 6 of 6. The runner now runs, as
    ``python -I -S``, the program the checker read at start-up; with Landlock the learner's code
    cannot write either file."""
    python, purelib, src = throwaway_venv
    learner = tmp_path / "fake.py"
    learner.write_text(SQL_PLANTS[plant] + f"\n\ndef softmax_query():\n    return {SQL_WRONG!r}\n")
    runner = src / "qkv" / "exercises" / "_sql_runner.py"
    before = runner.read_text()
    result = python_m("check", "sql-softmax", learner, cwd=tmp_path, python=python)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Result: 2 of 6 checks passed" in result.stdout, result.stdout
    if LANDLOCK:
        assert not (purelib / "zz_fake.pth").exists() and runner.read_text() == before


PTH_FORGES_REPORT = """
import os, site
HOOK = '''
import sys, importlib.abc, importlib.util
class _F(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "qkv.exercises.core":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            module.Report.passed = property(lambda self: True)
            module.Report.format = lambda self: "Result: 11 of 11 checks passed. All done."
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _F())
'''
for d in site.getsitepackages():
    try:
        with open(os.path.join(d, "zz_forge.pth"), "w") as f:
            f.write(f"import sys; exec({HOOK!r}, {{}})\\n")
    except OSError:
        pass
"""


READ_REFUSED = """
import os

def softmax(x, axis=-1):
    open(f"/proc/{os.environ['QKV_CHECKER_PID']}/environ", "rb").read()

open(f"/proc/{os.environ['QKV_CHECKER_PID']}/environ", "rb").read() if os.environ.get("AT_TOP") else None
"""


@needs_landlock
@pytest.mark.parametrize("where", ["top level", "a call"])
def test_a_refused_read_is_called_a_read_not_a_write(where, tmp_path):
    """Re-review L4: reading the checker's /proc/<pid>/environ, refused, got the hint "your code
    may write files only in the checker's temporary folder". The hint says what was refused."""
    learner = tmp_path / "reader.py"
    learner.write_text(READ_REFUSED.replace('os.environ.get("AT_TOP")', str(where == "top level")))
    result = python_m("check", "attention-head", learner, cwd=tmp_path)
    if "PermissionError" not in result.stdout:
        pytest.skip(f"this system lets the child read the checker's environ: {result.stdout[-300:]}")
    assert "reading it was refused (not a write)" in result.stdout, result.stdout
    assert "may write files only" not in result.stdout, result.stdout


@needs_landlock
def test_a_pth_planted_in_site_packages_cannot_fake_the_next_pass(throwaway_venv, tmp_path):
    """Review H4, under the console script: the .pth forged every later report in that environment,
    from any folder. Only Landlock stops it, by refusing the write: without Landlock this is not
    covered (README)."""
    python, purelib, _ = throwaway_venv
    learner = tmp_path / "forge.py"
    learner.write_text(PTH_FORGES_REPORT)
    runs = [python_m("check", "attention-head", learner, cwd=tmp_path, python=python) for _ in (1, 2)]
    assert [r.returncode for r in runs] == [1, 1], [r.stdout[-300:] for r in runs]
    assert not (purelib / "zz_forge.pth").exists()


def test_the_sql_runner_runs_the_program_read_at_start_up(tmp_path):
    """Review H3, the other half: a runner file rewritten after the checker started is not what runs."""
    shutil.copytree(QKV_SRC / "qkv", tmp_path / "qkv", ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import pathlib, numpy as np\n"
        "from qkv.exercises import sql_softmax\n"
        "pathlib.Path(sql_softmax.__file__).with_name('_sql_runner.py').write_text('raise SystemExit(3)')\n"
        "print(sql_softmax.run_learner_sql('SELECT qpos, kpos, score AS weight FROM scores', np.ones((1, 2))))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "(['qpos', 'kpos', 'weight'], [(0, 0, 1.0), (0, 1, 1.0)])", result.stderr[-800:]


@needs_landlock
def test_the_learners_code_may_write_only_in_its_temporary_folder(tmp_path):
    """Where Landlock holds, a write anywhere but the child's own temporary folder is refused, and
    the report says where writing is allowed."""
    learner = tmp_path / "writer.py"
    learner.write_text(
        "import os, tempfile\n"
        "with open(os.path.join(tempfile.gettempdir(), 'scratch.txt'), 'w') as f:\n"
        "    f.write('allowed')\n"
        "print('scratch written in', 'its folder' if 'qkv-exercise-' in tempfile.gettempdir() else '?')\n"
        f"open({str(tmp_path / 'elsewhere.txt')!r}, 'w')\n"
    )
    result = cli_here("check", "attention-head", learner)
    assert f"Sandbox: Landlock ABI {LANDLOCK} (writes only in a temporary folder" in result.stdout
    assert "    scratch written in its folder" in result.stdout
    assert not (tmp_path / "elsewhere.txt").exists()
    assert "PermissionError: [Errno 13] Permission denied" in result.stdout, result.stdout


@pytest.mark.skipif(
    LANDLOCK < 6 and not _kernel_has_pid_namespaces(),
    reason="needs Landlock ABI 6 (it scopes signals) or a PID namespace: not covered (README)",
)
def test_the_learners_code_cannot_stop_the_checker(tmp_path):
    """Issue 26's documented hole: os.kill(checker, SIGSTOP) froze it. Closed where Landlock scopes
    signals (EPERM), or where the checker is outside the child's PID namespace (ESRCH)."""
    learner = tmp_path / "stopper.py"
    learner.write_text(
        "import os, signal\n"
        "try:\n"
        "    os.kill(int(os.environ['QKV_CHECKER_PID']), signal.SIGSTOP)\n"
        "except OSError as exc:\n"
        "    print('refused:', exc)\n"
    )
    result = python_m("check", "attention-head", learner, cwd=tmp_path)  # frozen: fails by its timeout
    refused = ("refused: [Errno 1] Operation not permitted", "refused: [Errno 3] No such process")
    assert any(line in result.stdout for line in refused), result.stdout
    assert result.returncode == 1 and "Result: 0 of 11 checks passed" in result.stdout


STALL = """
import fcntl, json, os, struct, sys, time
REQUEST_FD, REPLY_FD = int(sys.argv[1]), int(sys.argv[2])
fcntl.fcntl(REQUEST_FD, 1031, 4096)  # F_SETPIPE_SZ: the request pipe holds one page
def _frame(m):
    body = json.dumps(m).encode(); return struct.pack(">I", len(body)) + body
def softmax(x, axis=-1):
    os.write(REPLY_FD, _frame({"event": "raised", "types": ["ValueError"], "message": "no", "where": None}) * 200)
    time.sleep(10**6)  # never reads a request again
def attention(Q, K, V, mask=None):
    return None
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_a_child_that_stops_reading_its_requests_cannot_hang_the_checker(tmp_path):
    """Review H5: the checker blocked in os.write forever, whatever --timeout said."""
    learner = tmp_path / "stall.py"
    learner.write_text(STALL)
    started = time.monotonic()
    result = cli_here("check", "attention-head", learner, "--timeout", "3")  # a hang fails: Hung
    took = time.monotonic() - started
    assert result.returncode == 1
    timeout = "still running after the 3 s time limit (an endless loop?): it stopped reading the checker's requests"
    assert timeout in result.stdout, result.stdout
    assert took < 3 + 10, f"the check took {took:.1f} s"


ENV_SCAN = """
import os
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            found += [e.decode() for e in f.read().split(b"\\0") if e.startswith(b"GRADER_TOKEN")]
    except OSError:
        pass
print("found:", found)
"""


@pytest.mark.skipif(
    not (_kernel_has_pid_namespaces() or (LANDLOCK and os.geteuid() != 0)),
    reason="needs a user namespace, or Landlock for a user who is not root: not covered (README)",
)
def test_the_checkers_environment_cannot_be_read_through_proc(tmp_path):
    """Review M1: the child's environment is scrubbed, but /proc/<checker>/environ showed the grader's token."""
    learner = tmp_path / "env.py"
    learner.write_text(ENV_SCAN)
    result = python_m("check", "attention-head", learner, cwd=tmp_path, GRADER_TOKEN="s3cret-token")
    assert "    found: []" in result.stdout, result.stdout
    assert "s3cret-token" not in result.stdout


def test_learner_sql_time_counts_against_the_time_limit(monkeypatch):
    """Review M3: with --timeout 1 a run took 18.7 s, and passed: each query run had 5 s of its own."""
    monkeypatch.setenv("QKV_SQL_FAULT", "endless")
    started = time.monotonic()
    result = cli_here("check", "sql-softmax", FILES / "sql_softmax_faults.py", "--timeout", "1")
    took = time.monotonic() - started
    assert "FAIL  softmax_query: still running after the 1 s time limit (in the query" in result.stdout, result.stdout
    assert took < 1 + 8, f"the check took {took:.1f} s"


def test_one_query_run_gets_sql_seconds_as_documented():
    """Review M3: SQL_SECONDS says 2 s per run; a run was killed after 5 s (SQL_SECONDS plus 3 s to start)."""
    from qkv.exercises import sql_softmax

    endless = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT qpos, kpos, n AS weight FROM c, scores"
    )
    started = time.monotonic()
    with pytest.raises(LearnerAborted, match=f"the query was still running after {SQL_SECONDS:g} s"):
        sql_softmax.run_learner_sql(endless, np.ones((1, 2)))
    took = time.monotonic() - started
    assert SQL_SECONDS <= took < SQL_SECONDS + 2, f"one run took {took:.2f} s"


SPAWNER = """
import pathlib, subprocess, sys, tempfile
for session in (False, True):  # one in the learner's process group, one in a session of its own
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", __file__], start_new_session=session)
pathlib.Path(tempfile.gettempdir(), "started").touch()
subprocess.run([sys.executable, "-c", "import time; time.sleep(600)", __file__])
"""


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_learners_processes_do_not_outlive_a_killed_checker(tmp_path, how):
    """Issue 26.3: a checker ended by SIGTERM while the learner's top level slept left that child
    running. Review M4: after a SIGKILL, what the learner's code started ran on (in its process
    group; in a session of its own, even after a SIGTERM). Where the child gets a PID namespace,
    none of them survives."""
    learner = tmp_path / "spawner.py"
    learner.write_text(SPAWNER)
    checker = subprocess.Popen(
        [sys.executable, "-m", "qkv.exercises.cli", "check", "attention-head", str(learner), "--timeout", "60"],
        env={**os.environ, "PYTHONPATH": str(QKV_SRC), "TMPDIR": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    running: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("**/started")):
            assert time.monotonic() < deadline, "the learner's file never started"
            time.sleep(0.05)
        running = _processes_mentioning(str(learner))
        assert len(running) >= 3, running  # the child and its two helpers (and the namespace's own)
        checker.send_signal(getattr(signal, how))
        checker.wait(timeout=30)
        deadline = time.monotonic() + 5
        while left := [pid for pid in running if _alive(pid)]:
            if time.monotonic() > deadline:
                if not _kernel_has_pid_namespaces():
                    pytest.skip(f"no PID namespace here: {left} outlived the checker ({how}), not covered (README)")
                pytest.fail(f"the learner's processes {left} outlived the checker ({how})")
            time.sleep(0.05)
    finally:
        checker.kill()
        checker.wait()
        for pid in running:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().split(") ", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):  # it ended meanwhile
                pass
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_sql_runner_does_not_outlive_a_killed_checker(tmp_path):
    """Review M4: an endless query's runner spun on forever after a SIGKILL of the checker."""
    checker = subprocess.Popen(
        [sys.executable, "-m", "qkv.exercises.cli", "check", "sql-softmax", FILES / "sql_softmax_faults.py"],
        # TMPDIR: the child's temporary folder, which a SIGKILLed checker cannot remove, lands in tmp_path
        env={**os.environ, "PYTHONPATH": str(QKV_SRC), "QKV_SQL_FAULT": "endless", "TMPDIR": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    runners: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not runners:
            assert time.monotonic() < deadline, "the query never ran"
            runners = [p for p in _children_of(checker.pid) if b"\0-I\0" in _cmdline(p)]
            time.sleep(0.02)
        checker.send_signal(signal.SIGKILL)
        checker.wait(timeout=30)
        deadline = time.monotonic() + 5
        while _alive(runners[0]):
            assert time.monotonic() < deadline, "the SQL runner outlived the checker"
            time.sleep(0.05)
    finally:
        checker.kill()
        checker.wait()
        for pid in runners:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it ended meanwhile
        return b""


def test_an_unencodable_print_does_not_end_the_run(tmp_path):
    """Review L6: with PYTHONIOENCODING=ascii, a learner who printed "résumé" ended the run (exit 2, no report)."""
    learner = tmp_path / "uni.py"
    learner.write_text('print("r\\u00e9sum\\u00e9 \\u2713")\n', encoding="utf-8")
    result = python_m("check", "attention-head", learner, cwd=tmp_path, PYTHONIOENCODING="ascii")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "    r\\xe9sum\\xe9 \\u2713" in result.stdout
    assert result.stdout.rstrip().endswith("Fix the first FAIL above and run the check again.")


def test_a_message_with_newlines_cannot_print_a_line_of_the_report(tmp_path):
    """Review L11: the lines after the first of an exception message were printed at the left margin,
    so a message could print a fake PASS line."""
    learner = tmp_path / "newline.py"
    learner.write_text(
        "def softmax(x, axis=-1):\n"
        '    raise ValueError("see below\\nPASS  softmax([1000, 1001, 1002]) = [0.0900, 0.2447, 0.6652]: no overflow")\n'
    )
    out = cli_here("check", "attention-head", learner).stdout
    assert not [line for line in out.splitlines() if line.startswith("PASS")], out
    assert "        PASS  softmax([1000, 1001, 1002])" in out


def test_a_query_stuck_in_one_sqlite_call_is_stopped_at_the_time_limit(monkeypatch):
    """Issue 26.3: a correct softmax plus one LIKE on a 1 MB string took 288 s and passed: SQLite's
    progress handler does not run inside one function call, and the query ran in the checker's own
    process. It runs in a process of its own now, killed at the limit. A runner stuck in one call
    (a sleep stands for the LIKE) is stopped after SQL_SECONDS, not minutes."""
    from qkv.exercises import sql_softmax

    stuck = "import sys, time\nsys.stdin.read()\nprint('ready', flush=True)\ntime.sleep(600)\n"
    monkeypatch.setattr(sql_softmax, "_RUNNER_PROGRAM", stuck)
    monkeypatch.setattr(sql_softmax, "SQL_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(LearnerAborted, match="still running after 0.5 s"):
        sql_softmax.run_learner_sql("SELECT qpos, kpos, 1.0 AS weight FROM scores", np.array([[2.0, 0.0, 1.0]]))
    assert time.monotonic() - started < 0.5 + 3


def test_the_learners_query_comes_back_from_its_process_exactly():
    """Rows cross from the query's process as JSON: integers and float64 values come back unchanged."""
    from qkv.exercises import sql_softmax

    columns, rows = sql_softmax.run_learner_sql(
        "SELECT qpos, kpos, score AS weight FROM scores ORDER BY kpos", np.array([[0.1, 1e-300, 1 / 3]])
    )
    assert columns == ["qpos", "kpos", "weight"] and rows == [(0, 0, 0.1), (0, 1, 1e-300), (0, 2, 1 / 3)]
