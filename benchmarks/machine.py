"""What machine a benchmark ran on: one home for the benchmarks' shared helpers.

``benchmarks/attention.py`` and ``benchmarks/sql_attention.py`` record the
processor in their result files with :func:`cpu_model`. The benchmarks run
as scripts (``python benchmarks/<name>.py``), so this directory is first on
``sys.path`` and ``from machine import cpu_model`` finds this file; the tests
put ``benchmarks`` on ``pythonpath`` (pyproject.toml) for the same import.
"""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["cpu_model"]


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name, e.g. ``"AMD EPYC"``.

    Linux's ``/proc/cpuinfo`` ("model name"), else ``platform.processor()``,
    else ``"unknown"``.
    """
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
