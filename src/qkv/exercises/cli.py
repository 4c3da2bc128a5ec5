"""The ``qkv-exercise`` command.

Examples
--------
>>> from qkv.exercises.cli import main
>>> main(["list"])
input-layer     Exercise 1: the input layer (token ids -> vectors + positions)
                write: one_hot(token_ids, vocab_size), embed(token_ids, E), sinusoidal_pe(seq_len, d_model), build_input(token_ids, E, pe=None)
attention-head  Exercise 2: one attention head (softmax, scaled dot-product attention)
                write: softmax(x, axis=-1), attention(Q, K, V, mask=None); stretch: attention_backward(Q, K, V, d_output)
sql-softmax     Exercise 3: the softmax as a window query (SQL)
                write: softmax_query()
<BLANKLINE>
Get a template:   qkv-exercise starter input-layer > my_input_layer.py
Check your file:  qkv-exercise check input-layer my_input_layer.py
0
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from qkv.exercises import EXERCISES, check, get_exercise, starter
from qkv.exercises.core import MAX_SECONDS, Exercise, check_seconds
from qkv.exercises.sandbox import MEMORY_MB_RANGE, check_memory_mb

__all__ = ["main"]

USAGE_ERROR = 2


def _signatures(ex: Exercise) -> str:
    required = ", ".join(f.signature for f in ex.functions if not f.optional)
    stretch = ", ".join(f.signature for f in ex.functions if f.optional)
    return required + (f"; stretch: {stretch}" if stretch else "")


def _list() -> int:
    width = max(len(name) for name in EXERCISES)
    for ex in EXERCISES.values():
        print(f"{ex.name:<{width}}  Exercise {ex.number}: {ex.title}")
        print(f"{'':<{width}}  write: {_signatures(ex)}")
    print()
    print("Get a template:   qkv-exercise starter input-layer > my_input_layer.py")
    print("Check your file:  qkv-exercise check input-layer my_input_layer.py")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qkv-exercise",
        description="Practice exercises for qkv: get a starter template, then check your functions.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="list the exercises and the functions each asks for")
    show = commands.add_parser("starter", help="print an exercise's starter template")
    show.add_argument("exercise", help="exercise name, e.g. input-layer")
    run = commands.add_parser(
        "check",
        help="check the functions in FILE; exit 0 when all pass",
        description=(
            "Run FILE in a separate process and check its functions. Exit status 0 only when "
            "every check passed; 1 when a check failed or FILE's code stopped the run "
            "(an exception or sys.exit at top level, os._exit, a signal, the time limit)."
        ),
    )
    run.add_argument("exercise", help="exercise name, e.g. input-layer")
    run.add_argument("file", help="your Python file")
    run.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help=f"time your code may run in this exercise, loading and SQL included (default: 10; at most {MAX_SECONDS:g})",
    )
    run.add_argument(
        "--memory-mb",
        type=_memory_mb,
        default=1024,
        metavar="MIB",
        help=(
            "memory limit of the process running your code, RLIMIT_AS, Linux only "
            f"(default: 1024; 0: none; else {MEMORY_MB_RANGE[0]} to {MEMORY_MB_RANGE[1]})"
        ),
    )
    return parser


def _positive_seconds(text: str) -> float:
    try:
        value: float | str = float(text)
    except ValueError:
        value = text
    try:
        return check_seconds(value, "--timeout")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _memory_mb(text: str) -> int:
    try:
        return check_memory_mb(int(text) if text.isdigit() else text, "--memory-mb")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Terminated(SystemExit):
    """SIGTERM reached the checker: it ends through its cleanup, which kills the learner's process group."""


@contextlib.contextmanager
def _terminated_cleanly() -> Iterator[None]:
    """A SIGTERM ends the check like an error (``finally`` blocks kill the learner's
    processes) instead of ending this process on the spot, which left the
    learner's child running. Only in the main thread, where Python runs handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum, frame):
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    0: every check passed (or ``list``/``starter`` worked); 1: a check
    failed, or the learner's code stopped the run; 2: usage error (unknown
    exercise, missing file, bad option) or a system the checker cannot run on.
    """
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "starter":
            sys.stdout.write(starter(args.exercise))
            return 0
        get_exercise(args.exercise)  # a bad name is a usage error, before loading the file
        with _terminated_cleanly():
            return check(args.exercise, args.file, timeout=args.timeout, memory_mb=args.memory_mb).exit_code
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"qkv-exercise: {exc}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
