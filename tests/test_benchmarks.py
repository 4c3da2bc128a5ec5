"""The benchmarks' shared code and the choices that decide what they measure.

Not their timings: benchmarks/attention.py and benchmarks/sql_attention.py
are run by hand (``make bench-attention``, ``make bench-sql``); these tests
check what the result files say about how they were measured.
"""

from __future__ import annotations

import os
import platform

import numpy as np
import pytest

import machine
from needs import OPTIONAL, available, require


@pytest.fixture(scope="module")
def bench():
    """benchmarks/attention.py, imported without leaving its thread settings in os.environ."""
    saved = dict(os.environ)
    try:
        import attention as bench_attention
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return bench_attention


def test_cpu_model_reads_the_model_name(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Planted CPU 9000\nflags\t: sse\n")
    assert machine.cpu_model(cpuinfo) == "Planted CPU 9000"


def test_cpu_model_without_proc_cpuinfo(tmp_path):
    assert machine.cpu_model(tmp_path / "missing") == (platform.processor() or "unknown")


def test_both_benchmarks_use_the_shared_cpu_model(bench):
    import sql_attention

    assert bench.cpu_model is machine.cpu_model
    assert sql_attention.cpu_model is machine.cpu_model


def test_the_naive_contender_computes_in_float64(bench):
    _torch()
    assert bench.output_dtypes() == {"qkv naive": "float64", "qkv streaming": "float32", "torch SDPA": "float32"}


def _torch():
    require(available("torch"), OPTIONAL["torch"])


def test_torch_gets_4d_inputs_and_its_flash_kernel(bench):
    _torch()
    q, k, v = bench.inputs(64)
    assert [tuple(t.shape) for t in bench.torch_inputs(q, k, v)] == [(1, 1, 64, bench.D)] * 3
    assert bench.torch_backend(q, k, v) == "FLASH_ATTENTION"
    expected, _ = bench.qkv.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(bench.run("torch SDPA", q, k, v), expected, rtol=0, atol=1e-5)


def test_2d_inputs_would_be_recorded_as_the_math_path(bench, monkeypatch):
    # Planted: the benchmark's old 2-D call. The recorded backend follows the tensors run() passes.
    _torch()
    import torch

    monkeypatch.setattr(bench, "torch_inputs", lambda *arrays: [torch.from_numpy(a) for a in arrays])
    assert bench.torch_backend(*bench.inputs(64)) == "MATH"


def _scale_value(name: str, result: dict, tmp_path):
    """A value of docs/chapters/scale.md, computed from ``result`` instead of the committed file."""
    import json
    from pathlib import Path

    import parts

    root = Path(__file__).resolve().parent.parent
    compute = dict(parts.load_page(root / "docs" / "chapters" / "scale.md", root / "docs").values)[name]
    path = tmp_path / "attention.json"
    path.write_text(json.dumps(result))
    compute.__globals__["RESULT"] = path  # the companion module reads RESULT at call time
    try:
        return compute()
    finally:
        compute.__globals__["RESULT"] = root / "benchmarks" / "results" / "attention.json"


def test_the_page_names_the_torch_path_of_either_result_file(bench, tmp_path):
    import json

    committed = json.loads((bench.RESULT).read_text())
    old = {key: val for key, val in committed.items() if key not in ("torch_sdpa", "computed_in")}
    assert "called with 2-D `(L, d)` tensors in this run" in _scale_value("bench_torch_path", old, tmp_path)
    assert _scale_value("bench_naive_dtype", old, tmp_path) == "float64"
    new = {
        **old,
        "torch_sdpa": {"input_shape": bench.TORCH_SHAPE, "backends": ["FLASH_ATTENTION"], "chosen_by": "test"},
        "computed_in": {"qkv naive": "float64", "qkv streaming": "float32", "torch SDPA": "float32"},
    }
    text = _scale_value("bench_torch_path", new, tmp_path)
    assert "called with 4-D `(1, 1, L, d)` tensors" in text and "`FLASH_ATTENTION` backend" in text


# The child runs benchmarks/sql_attention.py as the script (``--help`` stops it after
# its imports), then asks NumPy's OpenBLAS how many threads it uses. The caller's
# environment asks for 2; the script must win because it sets the variables before
# NumPy is imported. Planted: NumPy imported first, as by a setting placed too late.
_SQL_BENCH_THREADS_CHILD = """
import os, runpy, sys
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "2"
if sys.argv[2] == "numpy-first":
    import numpy
script = sys.argv[1]
sys.argv = [script, "--help"]
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit:
    pass
import sql_attention
print(os.environ["OPENBLAS_NUM_THREADS"], sql_attention.blas_threads())
"""


@pytest.mark.parametrize("order, expected", [("script-first", "1 1"), ("numpy-first", "1 2")])
def test_the_sql_benchmark_runs_numpy_on_one_blas_thread(order, expected):
    import subprocess
    import sys
    from pathlib import Path

    import sql_attention

    if sql_attention.blas_threads() is None:
        pytest.skip("this NumPy has no bundled OpenBLAS to ask for its thread count")
    if os.cpu_count() < 2:
        pytest.skip("OpenBLAS uses at most one thread per core: the planted 2 needs 2 cores")
    script = Path(sql_attention.__file__)
    child = subprocess.run(
        [sys.executable, "-c", _SQL_BENCH_THREADS_CHILD, str(script), order],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=script.parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(script.parent), os.environ.get("PYTHONPATH", "")])},
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split("\n")[-2] == expected, child.stdout


def test_the_sql_benchmark_records_its_blas_threads():
    import inspect

    import sql_attention

    source = inspect.getsource(sql_attention.main)
    assert '"blas_threads": blas_threads()' in source
    assert sql_attention.BLAS_THREADS == "1"


def test_budgets_audits_every_page_or_those_named_and_refuses_an_unknown_one(tmp_path, monkeypatch):
    import budgets

    for rel in ("", "chapters/order", "chapters/scale", "exercises/input-layer"):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
        (tmp_path / rel / "index.html").write_text("<html></html>")
    monkeypatch.delenv("QKV_BENCH_PAGES", raising=False)
    assert budgets.audited_pages(tmp_path) == ["", "chapters/order/", "chapters/scale/", "exercises/input-layer/"]
    monkeypatch.setenv("QKV_BENCH_PAGES", "scale, home,exercises/input-layer")
    assert budgets.audited_pages(tmp_path) == ["", "chapters/scale/", "exercises/input-layer/"]
    monkeypatch.setenv("QKV_BENCH_PAGES", "scale,sclae")
    with pytest.raises(
        SystemExit, match=r"QKV_BENCH_PAGES names no page \['sclae'\]; the pages are \['chapters/order', "
    ):
        budgets.audited_pages(tmp_path)
