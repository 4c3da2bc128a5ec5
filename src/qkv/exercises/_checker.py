"""A fresh checker process for the notebook path (started by ``qkv.exercises.run``).

A notebook's kernel has run the learner's code, so it is no place to
compute expected answers or compare them (the learner's cells may have
replaced ``np.allclose``). ``run(name, globals())`` starts this process,
which computes and compares, in one of two ways:

* ``"file"``: the kernel wrote the learner's functions into a module
  (``qkv.exercises.portable``); this process checks it exactly as
  ``qkv-exercise check`` checks a file (a child process of its own runs
  the learner's code) and prints the report as JSON on standard output;
* ``"served"``: the functions could not be rebuilt, so the kernel itself
  calls them when this process asks (``qkv.exercises.serve``), over two
  pipes; the report goes back over the first pipe as the last message.

Usage (by ``qkv.exercises`` only)::

    python -m qkv.exercises._checker < request.json

with ``{"mode": "file", "exercise", "path", "label", "seconds", "memory_mb"}``
(prints ``{"report": Report.to_plain(), "load_raised": bool}``) or
``{"mode": "served", "exercise", "functions", "request_fd", "reply_fd", "seconds", "memory_mb"}``.
"""

from __future__ import annotations

import json
import sys

__all__ = ["main"]


def main() -> None:
    """Read the request from stdin, check, print the JSON report.

    An interrupt (SIGINT from the notebook when the reader stops the cell)
    ends it through ``finally`` blocks that kill the learner's process group.
    """
    from qkv.exercises import get_exercise
    from qkv.exercises.sandbox import Limits, run_file_detailed, run_served
    from qkv.exercises.wire import write_message

    request = json.loads(sys.stdin.read())
    limits = Limits(seconds=float(request["seconds"]), memory_mb=int(request["memory_mb"]))
    exercise = get_exercise(request["exercise"])
    if request["mode"] == "served":
        request_fd, reply_fd = int(request["request_fd"]), int(request["reply_fd"])
        report = run_served(exercise, request["functions"], request_fd, reply_fd, limits)
        write_message(request_fd, {"report": report.to_plain()})
        return
    report, load_raised = run_file_detailed(exercise, request["path"], limits, label=request["label"])
    json.dump({"report": report.to_plain(), "load_raised": load_raised}, sys.stdout)


if __name__ == "__main__":
    main()
