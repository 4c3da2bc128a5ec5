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


# --- benchmarks/kv_serving.py (make bench-kv): its pure functions on planted
# inputs, and the committed result file recomputed from them. Nothing timed.


def test_kv_bytes_per_token_against_a_hand_computation():
    import kv_serving

    # 2 (K and V) x 3 layers x 2 KV heads x 4 numbers per head x 2 bytes = 96 bytes
    assert kv_serving.kv_bytes_per_token(3, 2, 4) == 96
    assert kv_serving.kv_bytes_per_token(3, 2, 4, bytes_per_value=4) == 192
    model = {"layers": 3, "query_heads": 6, "kv_heads": 2, "head_size": 4}
    assert kv_serving.memory_per_token(model) == {"MHA": 288, "GQA": 96, "MQA": 48}


_TINY_MODEL = {
    "layers": 1,
    "query_heads": 2,
    "kv_heads": 1,
    "head_size": 2,
    "hidden": 4,
    "intermediate": 6,
    "vocab": 10,
}


def test_weight_count_and_decode_traffic_against_a_hand_computation():
    import kv_serving

    # per layer: q and o 2*4*4 = 32, k and v 2*4*2 = 16, MLP 3*4*6 = 72, norms 2*4 = 8 -> 128;
    # final norm 4; embedding and output 2*10*4 = 80 -> 212
    assert kv_serving.weight_count(_TINY_MODEL) == 212
    decode = kv_serving.decode_traffic(_TINY_MODEL, context=5)
    # weights read: all but the embedding table, plus its one row: (212 - 40 + 4) * 2 bytes = 352;
    # cache: 5 tokens x (2 * 1 layer * 1 head * 2 * 2 bytes = 8) = 40
    assert decode == {
        "context": 5,
        "weight_bytes_read": 352,
        "cache_bytes_read": 40,
        "bytes_per_token": 392,
        "flops_per_token": 424,
        "flops_per_byte": 424 / 392,
    }
    # prefill of 4 tokens: weights 424 bytes read once, 4 x 8 bytes of cache written
    assert kv_serving.prefill_traffic(_TINY_MODEL, 4) == {
        "prompt": 4,
        "bytes_per_token": (424 + 32) / 4,
        "flops_per_byte": 424 * 4 / (424 + 32),
    }
    assert kv_serving.ms_per_token(2e9, 1e10) == 200.0


def test_weight_count_gives_mistral_7bs_published_size():
    # Mistral-7B-v0.1's model.safetensors.index.json: "total_size": 14483464192 bytes of
    # 16-bit weights (the Hugging Face repository is not in the project's code index;
    # third-party code there quotes the number).
    import kv_serving

    assert kv_serving.weight_count(kv_serving.MODELS["Mistral-7B"]) * 2 == 14_483_464_192


def test_the_scale_chapters_cache_sizes_are_the_benchmarks_formula():
    # One home for the formula: the box "Deeper: why the cache is exact, and its size" of
    # docs/chapters/scale.md prints it for two models; its figures must be kv_bytes_per_token's,
    # and its Mistral 7B sizes those the benchmark cites.
    import re
    from pathlib import Path

    import kv_serving

    page = (Path(__file__).resolve().parent.parent / "docs" / "chapters" / "scale.md").read_text()
    sizes = {
        name: tuple(map(int, dims)) for name, *dims in re.findall(r'"([^"]+)": \((\d+), (\d+), (\d+), (\d+)\)', page)
    }
    printed = dict(re.findall(r"^\s*(.+?): ([\d,]+) numbers = \d+ kB per token", page, re.MULTILINE))
    assert set(sizes) == set(printed) == {"Llama 2 7B", "Mistral 7B"}
    for name, (layers, _heads, kv_heads, head_size) in sizes.items():
        numbers = int(printed[name].replace(",", ""))
        assert kv_serving.kv_bytes_per_token(layers, kv_heads, head_size) == 2 * numbers, name
    mistral = kv_serving.MODELS["Mistral-7B"]
    assert sizes["Mistral 7B"] == tuple(mistral[k] for k in ("layers", "query_heads", "kv_heads", "head_size"))


def _planted_requests(systems: list[int]) -> list:
    """Requests of block_size 4: system prompt 0 or 1 (8 tokens, 2 full blocks), then 3 unique tokens."""
    import kv_serving

    prompts = {0: tuple(range(1, 9)), 1: tuple(range(11, 19))}
    return [
        kv_serving.Request(system, 8, prompts[system] + (100 * (i + 1), 100 * (i + 1) + 1, 100 * (i + 1) + 2))
        for i, system in enumerate(systems)
    ]


def test_the_workloads_hit_rate_against_a_hand_computation():
    import kv_serving

    # Three requests with the same system prompt, all live, a pool with room: 11 tokens
    # each = 2 full blocks + 1 partial. The first stores its 2 prompt blocks; the second
    # and third each find both: 4 hits of 6 full blocks, 5 blocks in use, not 9.
    requests = _planted_requests([0, 0, 0])
    result = kv_serving.run_workload(requests, num_blocks=16, block_size=4, d=3, live=3)
    assert result["prefix_hits"] == 4 == kv_serving.shareable_blocks(requests, 4) == result["best_case_hits"]
    assert (result["full_blocks"], result["blocks_needed"]) == (6, 9)
    assert result["hit_rate"] == 4 / 6 and result["reused_over_needed"] == 4 / 9
    assert result["blocks_in_use_after_each"] == [3, 4, 5]
    assert result["unshared_blocks_after_each"] == [3, 6, 9]
    assert result["evictions"] == 0


def test_eviction_costs_the_workload_a_hit_by_hand():
    import kv_serving

    # Pool of 4 blocks, one request live at a time (each freed once appended), prompts 0, 1, 0.
    # A (prompt 0) leaves its 2 prompt blocks cached, released last to first, so its second
    # block is the least recently used. B (prompt 1) needs 3 blocks, 2 free: it evicts A's
    # second block. C (prompt 0) finds A's first block (1 hit) but not the second, and its
    # partial block evicts B's second block: 1 hit where an unbounded pool gives 2; 2 evictions.
    requests = _planted_requests([0, 1, 0])
    result = kv_serving.run_workload(requests, num_blocks=4, block_size=4, d=3, live=1)
    assert kv_serving.shareable_blocks(requests, 4) == 2
    assert (result["prefix_hits"], result["evictions"]) == (1, 2)


def test_token_rows_depend_only_on_token_and_position():
    import kv_serving

    keys, values = kv_serving.token_rows((5, 7, 5), 4)
    again, _ = kv_serving.token_rows((5, 7), 4)
    assert keys.shape == values.shape == (3, 4)
    assert np.array_equal(keys[:2], again)  # the same prefix, bit for bit
    assert not np.allclose(keys[0], keys[2])  # the same token at another position


def test_the_workload_is_seeded():
    import kv_serving

    first, second = (kv_serving.make_workload(**kv_serving.WORKLOAD) for _ in range(2))
    assert first == second and len(first) == kv_serving.WORKLOAD["requests"]
    assert {r.system for r in first} == {0, 1}
    for request in first:
        prompt = first[[r.system for r in first].index(request.system)].tokens[: request.system_length]
        assert request.tokens[: request.system_length] == prompt


def test_last_level_cache_reads_sysfs(tmp_path):
    import kv_serving

    for index, size in (("index0", "32K"), ("index2", "512K"), ("index3", "32768K")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(size + "\n")
    assert kv_serving.last_level_cache_bytes(tmp_path) == 32 * 2**20
    assert kv_serving.last_level_cache_bytes(tmp_path / "missing") is None


def test_the_committed_kv_serving_result_agrees_with_the_functions():
    import json
    import statistics

    import kv_serving

    result = json.loads(kv_serving.RESULT.read_text())
    for key in ("produced_by", "date", "machine", "versions", "bytes_per_value", "models", "weights"):
        assert key in result, key
    for key in ("memory_per_token", "bandwidth", "decode", "prefill", "workload"):
        assert key in result, key
    machine = result["machine"]
    for key in ("cpu", "cores", "platform", "last_level_cache_bytes", "load_average_before", "load_average_after"):
        assert key in machine, key
    # The configs and their sources are the module's; every figure is recomputed from them.
    assert result["models"] == json.loads(json.dumps(kv_serving.MODELS))
    assert result["bytes_per_value"] == kv_serving.BYTES_PER_VALUE
    for name, model in result["models"].items():
        assert model["sources"] and model["not_in_index"]
        assert result["memory_per_token"][name] == kv_serving.memory_per_token(model)
        assert result["weights"][name] == kv_serving.weight_count(model)
        decode = result["decode"][name]
        expected = kv_serving.decode_traffic(model, decode["context"])
        assert {key: decode[key] for key in expected} == pytest.approx(expected, rel=1e-12)
        assert result["prefill"][name] == pytest.approx(
            kv_serving.prefill_traffic(model, result["prefill"][name]["prompt"])
        )
        read = result["bandwidth"]["sum_gb_per_s"] * 1e9
        assert decode["ms_per_token_at_sum_bandwidth"] == pytest.approx(
            kv_serving.ms_per_token(decode["bytes_per_token"], read), rel=1e-12
        )
    # The bandwidth: medians of the recorded samples, over arrays far larger than the caches.
    bandwidth = result["bandwidth"]
    assert bandwidth["copy_gb_per_s"] == statistics.median(bandwidth["copy_samples"])
    assert bandwidth["sum_gb_per_s"] == statistics.median(bandwidth["sum_samples"])
    assert len(bandwidth["sum_samples"]) == bandwidth["repeats"] >= 5
    assert bandwidth["array_bytes"] >= 4 * (machine["last_level_cache_bytes"] or 32 * 2**20)
    # The workload, run again from its recorded parameters (it is seeded): the same numbers.
    workload = result["workload"]
    assert workload["parameters"] == json.loads(json.dumps(kv_serving.WORKLOAD))
    assert workload["cache"] == kv_serving.CACHE
    again = kv_serving.run_workload(kv_serving.make_workload(**workload["parameters"]), **workload["cache"])
    assert {key: workload[key] for key in again} == json.loads(json.dumps(again))
    assert workload["evictions"] > 0, "the pool must force evictions"
    assert 0 < workload["prefix_hits"] <= workload["best_case_hits"]
    assert workload["peak_blocks_in_use"] < workload["peak_unshared_blocks"]


# --- benchmarks/sql_layout.py (make bench-layout): every layout against NumPy on all three
# databases at a small size, the join sizes the databases report against hand counts, and the
# committed result file's shape. Nothing timed.

LAYOUT_DATABASES = ["SQLite", "PostgreSQL", "DuckDB"]
# L = 5, E = 8, 2 heads of d_head = 4: the join of each step, counted by hand.
LAYOUT_POINT = (5, 8, 2)


def layout_join_rows(step: str, layout: str, length: int, width: int, heads: int) -> int:
    """The rows of each step's join: long form pairs values, arrays pair vectors."""
    return {
        ("projection", "long form"): length * width * width,  # (pos, in_dim) x (out_dim < E, in_dim) on in_dim
        ("scores", "long form"): heads * length * length * (width // heads),  # on (head, hdim)
        ("projection", "arrays"): length * width,  # every x row with every row of W_q
        ("scores", "arrays"): heads * length * length,  # on head
    }[(step, layout)]


@pytest.fixture(scope="module", params=LAYOUT_DATABASES)
def layout_connection(request):
    """One connection per database for the module: a step that left an object behind would clash."""
    import importlib.util
    import sqlite3

    if request.param == "SQLite":
        conn = sqlite3.connect(":memory:")
    elif request.param == "DuckDB":
        require(available("duckdb"), "duckdb is not installed: `pip install -e '.[test]'` installs it")
        import duckdb

        conn = duckdb.connect()
    else:
        require(
            importlib.util.find_spec("psycopg") is not None,
            "psycopg is not installed: `pip install -e '.[test]'` installs psycopg[binary]",
        )
        import psycopg

        conn = psycopg.connect(**request.getfixturevalue("postgres").settings, autocommit=True)
    yield request.param, conn
    conn.close()


@pytest.mark.parametrize("layout", ["long form", "arrays"])
@pytest.mark.parametrize("step", ["projection", "scores"])
def test_each_layout_agrees_with_numpy_and_its_join_has_the_hand_counted_rows(layout_connection, step, layout):
    import sql_layout

    database, conn = layout_connection
    point = sql_layout.make_point(*LAYOUT_POINT)
    cell = sql_layout.run_case(conn, database, step, layout, point, repeats=0)
    assert cell["seconds"] is None
    assert cell["max_abs_error"] <= 1e-12
    assert cell["join_rows"] == layout_join_rows(step, layout, *LAYOUT_POINT)
    if database == "SQLite":
        assert cell["vm_steps"] > 0 and cell["scanned"] is None
    else:
        assert cell["tuples"] >= cell["join_rows"] > 0 and cell["scanned"] > 0
    assert cell["plan"]


def test_postgresqls_arrays_unnest_one_row_per_element():
    # The reason PostgreSQL's arrays save little: the dot product's unnest is a Function Scan
    # that yields a row per element pair, so the scores read pairs x d_head rows, as long form joins.
    import sql_layout

    plan = {
        "Plan": {
            "Node Type": "Hash Join",
            "Actual Rows": 50,
            "Actual Loops": 1,
            "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "q_vec", "Actual Rows": 10, "Actual Loops": 1},
                {
                    "Node Type": "Aggregate",
                    "Parent Relationship": "SubPlan",
                    "Actual Rows": 1,
                    "Actual Loops": 50,
                    "Plans": [
                        {"Node Type": "Function Scan", "Function Name": "unnest", "Actual Rows": 4, "Actual Loops": 50}
                    ],
                },
                {
                    "Node Type": "Seq Scan",
                    "Relation Name": "k_vec",
                    "Actual Rows": 6,
                    "Actual Loops": 1,
                    "Rows Removed by Filter": 4,
                },
            ],
        }
    }
    rows = sql_layout.postgres_rows(plan)
    assert rows["scanned"] == 10 + 200 + 10  # q_vec, the unnest's 4 rows in each of 50 loops, k_vec before its filter
    assert rows["join_rows"] == 50
    assert rows["tuples"] == 50 + 10 + 50 + 200 + 6
    assert "  SubPlan: Aggregate: 50 rows (50 loops)" in rows["plan"]


def test_a_result_off_by_more_than_the_tolerance_stops_before_it_is_timed(monkeypatch):
    import sqlite3

    import sql_layout

    point = sql_layout.make_point(*LAYOUT_POINT)
    right = sql_layout.expected
    monkeypatch.setattr(sql_layout, "expected", lambda p, step: right(p, step) + 2e-12)
    monkeypatch.setattr(sql_layout, "time_query", lambda *args: pytest.fail("timed a wrong result"))
    with pytest.raises(SystemExit, match=r"SQLite, arrays, scores at L=5, E=8 differs from NumPy by 2\.0"):
        sql_layout.run_case(sqlite3.connect(":memory:"), "SQLite", "scores", "arrays", point, repeats=3)


def test_the_layout_benchmark_shares_the_sql_benchmarks_machine_state():
    import sql_attention
    import sql_layout

    assert (sql_layout.BLAS_THREADS, sql_layout.BLAS_VARIABLES) == (
        sql_attention.BLAS_THREADS,
        sql_attention.BLAS_VARIABLES,
    )
    assert sql_layout.blas_threads is sql_attention.blas_threads
    assert sql_layout.cpu_model is machine.cpu_model


def test_the_long_form_runs_the_packages_own_files():
    import qkv.sql
    import sql_layout

    projection = sql_layout.case("projection", "long form", "SQLite")
    scores = sql_layout.case("scores", "long form", "SQLite")
    for this, files in ((projection, ("mha_tables", "mha_project")), (scores, ("mha_scores",))):
        for name in files:
            for statement in qkv.sql._dialect.statements(qkv.sql.query_text(name)):
                assert statement in this.statements, (name, statement)


def test_the_committed_layout_result_has_its_shape():
    import json

    import sql_layout

    result = json.loads(sql_layout.RESULT.read_text())
    assert result["command"] == "make bench-layout"
    machine_state = result["machine"]
    for key in ("cpu", "cores", "platform"):
        assert machine_state[key], key
    assert len(machine_state["load_before"]) == len(machine_state["load_after"]) == 3
    settings = result["settings"]
    assert settings["blas_threads"] == 1
    assert set(settings["blas_environment"].values()) == {"1"}
    assert settings["tolerance"] == 1e-12 and settings["warmup_runs"] == 1 and settings["repeats"] >= 5
    # The SQL recorded is the SQL the script runs.
    assert settings["array_sql"] == {database: sql_layout.array_sql(database) for database in LAYOUT_DATABASES}
    assert settings["queries"] == {f"{s}, {lay}": q for (s, lay), q in sql_layout.QUERIES.items()}
    sizes = {(row["L"], row["E"]): row for row in result["rows"]}
    # Both series: L grows at E = 16, E grows at L = 16, at least to 64.
    assert {(n, 16) for n in (8, 16, 32, 64)} <= set(sizes) >= {(16, n) for n in (8, 16, 32, 64)}
    for (length, width), row in sizes.items():
        heads = row["num_heads"]
        assert row["d_head"] * heads == width
        assert set(row["steps"]) == {"projection", "scores"}
        for step, entry in row["steps"].items():
            assert entry["numpy_seconds"] > 0
            assert set(entry["layouts"]) == {"long form", "arrays"}
            for layout, cells in entry["layouts"].items():
                assert set(cells) == set(LAYOUT_DATABASES)
                for database, cell in cells.items():
                    where = (length, width, step, layout, database)
                    assert cell["seconds"] > 0, where
                    assert cell["max_abs_error"] <= 1e-12, where
                    assert cell["join_rows"] == layout_join_rows(step, layout, length, width, heads), where
                    if database == "SQLite":
                        assert cell["vm_steps"] > 0, where
                    else:
                        assert cell["tuples"] >= cell["join_rows"] and cell["scanned"] > 0, where
