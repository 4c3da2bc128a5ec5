"""``mkdocs build`` for the planted-fault tests, through a zygote that has
imported MkDocs once (tests/support/mkdocs_zygote.py says what is shared);
a plain ``python -m mkdocs`` process if the zygote cannot start or dies.

One zygote per pytest process, started at the first build."""

from __future__ import annotations

import atexit
import subprocess
import sys
from pathlib import Path

from docs_pipeline import BlockEnded, PageWorker

ZYGOTE = Path(__file__).with_name("mkdocs_zygote.py")
_zygote: PageWorker | None = None
_failed = False


def _worker() -> PageWorker | None:
    global _zygote, _failed
    if _zygote is None and not _failed:
        try:
            _zygote = PageWorker(script=ZYGOTE)
            _zygote.ask({"args": []}, 120)  # started and imported
            atexit.register(_zygote.close)
        except BlockEnded:
            _failed, _zygote = True, None
    return _zygote


def mkdocs(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m mkdocs <args>`` in ``cwd``: its status and output."""
    global _zygote, _failed
    command = [sys.executable, "-m", "mkdocs", *args]
    worker = _worker()
    if worker is not None:
        try:
            answer = worker.ask({"cwd": str(cwd), "args": list(args), "timeout": timeout}, timeout + 30)
        except BlockEnded:
            _failed, _zygote = True, None
        else:
            if answer["timeout"]:
                raise subprocess.TimeoutExpired(command, timeout)
            return subprocess.CompletedProcess(command, answer["returncode"], answer["stdout"], answer["stderr"])
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
