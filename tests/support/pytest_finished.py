"""Run pytest and fail unless it finished: ``python tests/support/pytest_finished.py [pytest args]``.

A test (or anything it imports) that calls ``os._exit(0)`` ends pytest with
exit status 0 before it reports anything: every failure collected after it
is lost, and the run looks green. This wrapper passes pytest's output through
and exits non-zero unless pytest printed its final summary line
("N passed ... in 12.3s"). ``make test`` and so ``.ci/run`` go through it;
tests/test_docs_pipeline.py plants the fault.
"""

from __future__ import annotations

import re
import subprocess
import sys

SUMMARY = re.compile(
    r"^(?:=+ )?(?:(?:\d+ (?:passed|failed|skipped|deselected|xfailed|xpassed|warnings?|errors?|"
    r"subtests? (?:passed|failed|skipped))(?:, )?)+|no tests ran) in [\d.]+s(?: \([\d:]+\))?(?: =+)?$",
    re.MULTILINE,
)


def main(argv: list[str]) -> int:
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    tail: list[str] = []
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        tail = (tail + [line.rstrip("\n")])[-40:]
    status = process.wait()
    if not SUMMARY.search("\n".join(tail)):
        print(
            f"pytest-finished: pytest exited with status {status} without printing its summary line: "
            "a test or something it ran ended the process (os._exit?) or it was killed, so failures "
            "after that point were never reported. This run is not green.",
            file=sys.stderr,
        )
        return status or 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
