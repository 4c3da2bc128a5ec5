"""Attention at scale: time and memory of three implementations as L grows.

Not a test (timings vary from run to run): a benchmark that prints tables and
writes the result file the "Attention at scale" chapter draws its figure
from. Run it with ``make bench-attention`` on a quiet machine.

For L in 512 .. 8192 (d = 64, float32, the same thread count for NumPy's
BLAS and for PyTorch) it times, median of 5 after one warm-up:

* ``qkv.scaled_dot_product_attention``: the materialised (L, L) scores,
  computed in float64 (the library converts the float32 inputs), so this
  contender's time and memory are float64's;
* ``qkv.streaming_attention``: key blocks with a running max and sum, in
  float32 (it keeps the caller's float32);
* ``torch.nn.functional.scaled_dot_product_attention`` on the CPU, in
  float32, called with 4-D tensors of shape (1, 1, L, d) (batch 1, one
  head): with 2-D (L, d) or 3-D inputs PyTorch picks its "math" backend,
  which builds the (L, L) score matrix, and with 4-D inputs its fused
  flash-attention CPU kernel. The backend it picks for each size is
  recorded (``torch._fused_sdp_choice``), and so is every contender's
  output dtype.

Peak extra memory is the growth of the process's peak RSS (VmHWM) during one call,
each (contender, L) in a fresh interpreter, so every contender is measured
the same way (tracemalloc cannot see PyTorch's allocator). Then:

* ``streaming_attention`` at L = 65,536: time, and its tracemalloc peak;
* what this machine's arithmetic alone costs: float32 matmul GFLOP/s (both
  threads) and NumPy's float32 exp rate (one thread, in place on a block of
  1 Mi scores that stays in cache, as the streaming loop's blocks are
  meant to), and from them an estimate of 4 L^2 d flops plus L^2 exps.
  It is an estimate, not a bound: a kernel that spreads its exps over both
  threads (PyTorch's) can beat it, and one that makes extra passes over
  memory (NumPy's) falls behind it; for the naive contender, which computes
  in float64, the float32 rates flatter it;
* KV-cache decoding of 2,048 tokens against recomputing causal attention
  over the whole prefix at every step: time per token and the ratio.

Options: ``--sizes 512,1024`` ``--threads 2`` ``--quick`` (small sizes, for a
smoke run; writes a file only with ``--out``) ``--out PATH``.
"""

from __future__ import annotations

import argparse
import os
import sys

# Thread counts must be fixed before NumPy (OpenBLAS) is imported.
_THREADS = "2"
for _i, _arg in enumerate(sys.argv):
    if _arg == "--threads" and _i + 1 < len(sys.argv):
        _THREADS = sys.argv[_i + 1]
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _THREADS

import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import qkv  # noqa: E402
from machine import cpu_model  # noqa: E402  (benchmarks/machine.py: this script's directory is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "attention.json"
D = 64
SIZES = (512, 1024, 2048, 4096, 8192)
BIG = 65_536
DECODE = 2_048
CONTENDERS = ("qkv naive", "qkv streaming", "torch SDPA")
# PyTorch's SDPA picks its CPU kernel by the inputs' shape: 4-D (batch, heads, L, d)
# gets the fused flash-attention kernel, 2-D and 3-D the "math" path.
TORCH_SHAPE = "(1, 1, L, d)"


def inputs(length: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((length, D), dtype=np.float32) for _ in range(3))


def run(contender: str, q, k, v):
    if contender == "qkv naive":
        return qkv.scaled_dot_product_attention(q, k, v)[0]
    if contender == "qkv streaming":
        return qkv.streaming_attention(q, k, v)
    import torch

    with torch.no_grad():
        out = torch.nn.functional.scaled_dot_product_attention(*torch_inputs(q, k, v))
        return out.reshape(out.shape[-2:]).numpy()  # (1, 1, L, d) -> (L, d)


def torch_inputs(q, k, v) -> list:
    """The tensors PyTorch's SDPA gets: (L, d) -> (1, 1, L, d), batch 1 and one head, no copy."""
    import torch

    return [torch.from_numpy(a)[None, None] for a in (q, k, v)]


def torch_backend(q, k, v) -> str:
    """The SDPA backend PyTorch chooses for ``run("torch SDPA", q, k, v)``, e.g. FLASH_ATTENTION."""
    import torch

    try:
        from torch.nn.attention import SDPBackend

        return SDPBackend(torch._fused_sdp_choice(*torch_inputs(q, k, v))).name
    except (ImportError, AttributeError, RuntimeError, TypeError, ValueError) as exc:  # a private API
        return f"unknown ({type(exc).__name__})"


def output_dtypes() -> dict:
    """The dtype each contender returns for float32 inputs (the naive one computes in float64)."""
    q, k, v = inputs(8)
    return {contender: str(run(contender, q, k, v).dtype) for contender in CONTENDERS}


def median_ms(fn, repeats: int = 5) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


# The child reads VmHWM (peak RSS of its own address space) from /proc: unlike
# getrusage's ru_maxrss, it does not start at the parent's peak after fork + exec.
_RSS_CHILD = """
import os, sys
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = sys.argv[3]
sys.path.insert(0, sys.argv[4])
import attention as bench
import torch
torch.set_num_threads(int(sys.argv[3]))

def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

q, k, v = bench.inputs(int(sys.argv[2]))
bench.run(sys.argv[1], q[:8], k[:8], v[:8])  # load code paths before the baseline
before = peak_kib()
bench.run(sys.argv[1], q, k, v)
print((peak_kib() - before) / 1024)
"""


def peak_rss_mib(contender: str, length: int, threads: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD, contender, str(length), str(threads), str(Path(__file__).parent)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip())


def machine_bounds() -> dict:
    """float32 matmul rate (GFLOP/s) and exp rate (G exp/s) of this machine."""
    a, b = inputs(4096)[:2]
    matmul_ms = median_ms(lambda: a @ b.T)  # (4096, 64) @ (64, 4096)
    # exp in place on 1 Mi scores (4 MiB), 16 times per timing: the rate of
    # the arithmetic, not of allocating and faulting in a fresh 64 MiB array.
    x = np.random.default_rng(1).uniform(-30.0, 0.0, size=(1024, 1024)).astype(np.float32)
    scratch = np.empty_like(x)

    def sixteen_exps():
        for _ in range(16):
            np.exp(x, out=scratch)

    exp_ms = median_ms(sixteen_exps)
    return {
        "matmul_gflops": 2 * 4096 * 4096 * D / (matmul_ms * 1e-3) / 1e9,
        "exp_per_second_g": 16 * 1024 * 1024 / (exp_ms * 1e-3) / 1e9,
    }


def arithmetic_ms(length: int, bounds: dict) -> float:
    """The time of the matmuls and exps alone at the measured rates (an estimate)."""
    flops = 4 * length * length * D  # scores and weights @ V
    exps = length * length
    return (flops / (bounds["matmul_gflops"] * 1e9) + exps / (bounds["exp_per_second_g"] * 1e9)) * 1e3


def decode_times(length: int) -> dict:
    """ms per token: KV cache vs recomputing causal attention over the prefix."""
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((3, length, D))
    start = time.perf_counter()
    cache = qkv.KVCache()
    cached = np.empty((length, D))
    for i in range(length):
        cache.append(k[i], v[i])
        cached[i] = cache.attend(q[i])
    cache_s = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(length):
        out, _ = qkv.scaled_dot_product_attention(q[: i + 1], k[: i + 1], v[: i + 1], qkv.causal_mask(i + 1))
    recompute_s = time.perf_counter() - start
    assert np.abs(out - cached).max() < 1e-12, "the cache must give causal attention's rows"
    return {
        "tokens": length,
        "cache_ms_per_token": cache_s / length * 1e3,
        "recompute_ms_per_token": recompute_s / length * 1e3,
        "ratio": recompute_s / cache_s,
    }


def big_run(length: int) -> dict:
    q, k, v = inputs(length)
    tracemalloc.start()
    start = time.perf_counter()
    qkv.streaming_attention(q, k, v)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "L": length,
        "seconds": seconds,
        "tracemalloc_peak_mib": peak / 2**20,
        "naive_scores_gib": length * length * 4 / 2**30,
    }


def versions() -> dict:
    import torch

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "qkv": qkv.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes only (smoke run); writes nothing unless --out is given"
    )
    parser.add_argument("--out", type=Path, default=None, help=f"result file (default {RESULT.relative_to(ROOT)})")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    big, decode = BIG, DECODE
    if args.quick:
        sizes, big, decode = [128, 256], 2048, 64
    load_before = os.getloadavg()
    dtypes = output_dtypes()
    print(f"threads: {args.threads} (NumPy's BLAS and torch); d = {D}; float32 inputs; {cpu_model()}")
    print("computed in: " + ", ".join(f"{c} {dtype}" for c, dtype in dtypes.items()))
    print(f"torch SDPA inputs: {TORCH_SHAPE}")
    print(f"load average before: {load_before[0]:.2f}")
    bounds = machine_bounds()
    print(
        f"this machine: float32 matmul {bounds['matmul_gflops']:.1f} GFLOP/s, exp {bounds['exp_per_second_g']:.2f} G/s\n"
    )
    rows = []
    header = (
        f"{'L':>6} "
        + " ".join(f"{c + ' ms':>18}" for c in CONTENDERS)
        + f" {'stream/torch':>13} {'arith ms':>9} {'torch backend':>16}"
    )
    print(header)
    for length in sizes:
        q, k, v = inputs(length)
        row = {"L": length}
        for contender in CONTENDERS:
            row[f"{contender} ms"] = median_ms(lambda c=contender, q=q, k=k, v=v: run(c, q, k, v))
        row["streaming / torch"] = row["qkv streaming ms"] / row["torch SDPA ms"]
        row["arithmetic estimate ms"] = arithmetic_ms(length, bounds)
        row["torch SDPA backend"] = torch_backend(q, k, v)
        rows.append(row)
        print(
            f"{length:>6} "
            + " ".join(f"{row[c + ' ms']:>18.2f}" for c in CONTENDERS)
            + f" {row['streaming / torch']:>13.2f} {row['arithmetic estimate ms']:>9.2f}"
            + f" {row['torch SDPA backend']:>16}"
        )
    print("\npeak extra memory (MiB, growth of peak RSS during one call, fresh process each):")
    print(f"{'L':>6} " + " ".join(f"{c:>18}" for c in CONTENDERS))
    for row in rows:
        for contender in CONTENDERS:
            row[f"{contender} MiB"] = peak_rss_mib(contender, row["L"], args.threads)
        print(f"{row['L']:>6} " + " ".join(f"{row[c + ' MiB']:>18.1f}" for c in CONTENDERS))
    big_result = big_run(big)
    print(
        f"\nstreaming_attention at L = {big:,}: {big_result['seconds']:.1f} s, tracemalloc peak "
        f"{big_result['tracemalloc_peak_mib']:.1f} MiB (the naive float32 scores alone: "
        f"{big_result['naive_scores_gib']:.0f} GiB)"
    )
    kv = decode_times(decode)
    print(
        f"decoding {decode:,} tokens: KV cache {kv['cache_ms_per_token']:.3f} ms/token, recomputing "
        f"{kv['recompute_ms_per_token']:.2f} ms/token ({kv['ratio']:.0f}x)"
    )
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f}")
    if args.quick and args.out is None:
        return  # a smoke run never overwrites the committed result
    out = args.out or RESULT
    result = {
        "produced_by": "make bench-attention (benchmarks/attention.py)",
        "date": datetime.date.today().isoformat(),
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "threads": args.threads,
            "load_average_before": round(load_before[0], 2),
            "load_average_after": round(load_after[0], 2),
        },
        "versions": versions(),
        "d": D,
        "dtype": "float32",
        "computed_in": dtypes,
        "torch_sdpa": {
            "input_shape": TORCH_SHAPE,
            "backends": sorted({row["torch SDPA backend"] for row in rows}),
            "chosen_by": "torch._fused_sdp_choice on the benchmark's inputs",
        },
        "bounds": bounds,
        "rows": rows,
        "big": big_result,
        "kv_cache": kv,
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    main()
