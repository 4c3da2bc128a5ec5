"""Serving from a KV cache: bytes per token, decode's memory traffic, and prefix sharing.

Not a test (the bandwidth varies from run to run): a benchmark that prints
tables and writes ``benchmarks/results/kv-serving.json``, the result file
the serving chapter (issue 28) is to draw from. Run it with ``make bench-kv``
on a quiet machine. Four parts:

1. **Memory per token** of the KV cache, in bytes of 16-bit values, for
   multi-head (MHA: one key/value head per query head), grouped-query (GQA:
   the model's own key/value heads) and multi-query attention (MQA: one
   key/value head) at the sizes of Llama-2-70B and Mistral-7B:
   ``2 (K and V) x layers x key/value heads x head size x 2 bytes``
   (:func:`kv_bytes_per_token`). The same formula is the one the box
   "Deeper: why the cache is exact, and its size" of
   ``docs/chapters/scale.md`` prints for Llama 2 7B and Mistral 7B;
   ``tests/test_benchmarks.py`` checks that the page's printed figures are
   this function's, so the two cannot drift apart.
2. **Decode as bytes read per generated token**: at batch 1 every weight
   matrix is read once per token, plus one row of the embedding table, plus
   the whole cache of the context (:func:`decode_traffic`); a prefill of P
   prompt tokens reads the weights once for all P. Both at 2 flops per
   weight per token, so decode does about 1 flop per byte it reads. This
   machine's memory bandwidth is a NumPy streaming copy and sum over float64
   arrays 8 times the size of its last-level cache (median of 7 runs, one
   thread), and its float32 matmul rate on one thread the other side of the
   ratio; the time a bandwidth-bound decode needs per token is bytes / read
   bandwidth.
3. **Prefix sharing** on a small seeded workload through ``qkv.PagedKVCache``
   (:func:`make_workload`, :func:`run_workload`): 50 requests, each one of 2
   system prompts of a few hundred tokens, then a unique user part and
   generated tokens; blocks of 16 tokens; 4 requests live at a time (the
   oldest is freed when a fifth starts); a pool of 96 blocks, which forces
   evictions. It reports ``prefix_hits``, the hits over the full blocks
   appended and over the blocks the requests need without sharing, the
   best case (every full system-prompt block after a prompt's first request
   a hit), and the blocks in use against those a cache without sharing
   would hold.

Where each model's numbers come from (read with the project's code search;
the Hugging Face repositories ``meta-llama/Llama-2-70b-hf`` and
``mistralai/Mistral-7B-v0.1``, whose ``config.json`` are the primary
sources, are not in the stored index, so these are copies that quote them):

* **Llama-2-70B**: ``litgpt/config.py`` of Lightning-AI/litgpt at commit
  293089e26877cfe9f49bc0d7d79b71d35f67fa65, the entry commented
  ``https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json``:
  ``n_layer=80, n_head=64, n_embd=8192`` (head size 8192 / 64 = 128),
  ``n_query_groups=8`` (key/value heads), ``intermediate_size=28672``,
  ``vocab_size=32000``. That the 70B model uses GQA: Touvron et al. 2023,
  "Llama 2", arXiv:2307.09288, section 2.2 (Table 1's GQA column) and
  appendix A.2.1 ("for the 34B and 70B Llama 2 models we chose to use GQA
  instead of MQA", after the ablation of Table 18).
* **Mistral-7B** (v0.1): the same litgpt file and commit, the entry
  commented ``https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json``:
  ``n_layer=32, n_query_groups=8, intermediate_size=14336,
  padded_vocab_size=32000`` with the class defaults ``n_head=32,
  n_embd=4096`` (head size 128); and huggingface/transformers
  ``src/transformers/models/mistral/configuration_mistral.py`` at commit
  001f85b38fb432858ace93f18622f07cec46d874, whose defaults "yield a similar
  configuration to that of the Mistral-7B-v0.1": ``hidden_size=4096,
  intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
  num_key_value_heads=8, vocab_size=32000, sliding_window=4096``. Paper:
  Jiang et al. 2023, "Mistral 7B", arXiv:2310.06825, Table 1.

Both are Llama-style decoders: per layer the projections q, k, v, o, a
SwiGLU MLP of three matrices and two RMSNorm vectors; a final RMSNorm; an
embedding table and an output matrix, not tied. :func:`weight_count` counts
them from the config (68,976,648,192 for Llama-2-70B and 7,241,732,096 for
Mistral-7B).

Options: ``--quick`` (small arrays and workload, for a smoke run; writes a
file only with ``--out``) ``--out PATH``.
"""

from __future__ import annotations

import os

#: NumPy's BLAS threads, fixed before NumPy is imported: the matmul rate is
#: measured on one thread, as the streaming copy and sum run on one.
BLAS_THREADS = "1"
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
if __name__ == "__main__":  # not on import: the tests import the functions and keep their own settings
    for _var in BLAS_VARIABLES:
        os.environ[_var] = BLAS_THREADS

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import qkv  # noqa: E402
from machine import cpu_model  # noqa: E402  (benchmarks/machine.py: this script's directory is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "kv-serving.json"

#: 16-bit values (float16 or bfloat16), as the models are served.
BYTES_PER_VALUE = 2

_LITGPT = {
    "repo": "Lightning-AI/litgpt",
    "path": "litgpt/config.py",
    "commit": "293089e26877cfe9f49bc0d7d79b71d35f67fa65",
}

#: Each model's sizes, from the sources in the module docstring.
MODELS = {
    "Llama-2-70B": {
        "layers": 80,
        "query_heads": 64,
        "kv_heads": 8,
        "head_size": 128,
        "hidden": 8192,
        "intermediate": 28672,
        "vocab": 32000,
        "sources": [
            {
                **_LITGPT,
                "entry": "Llama-2-70b{}-hf",
                "quotes": "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json",
                "fields": "n_layer=80, n_head=64, n_embd=8192, n_query_groups=8, "
                "intermediate_size=28672, vocab_size=32000",
            },
            {
                "document": "Touvron et al. 2023, Llama 2, arXiv:2307.09288",
                "where": "section 2.2, Table 1 (GQA for 34B and 70B); appendix A.2.1 and Table 18",
            },
        ],
        "not_in_index": "meta-llama/Llama-2-70b-hf (its config.json)",
    },
    "Mistral-7B": {
        "layers": 32,
        "query_heads": 32,
        "kv_heads": 8,
        "head_size": 128,
        "hidden": 4096,
        "intermediate": 14336,
        "vocab": 32000,
        "sources": [
            {
                **_LITGPT,
                "entry": "Mistral-7B-{}v0.1",
                "quotes": "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
                "fields": "n_layer=32, n_query_groups=8, intermediate_size=14336, padded_vocab_size=32000; "
                "class defaults n_head=32, n_embd=4096",
            },
            {
                "repo": "huggingface/transformers",
                "path": "src/transformers/models/mistral/configuration_mistral.py",
                "commit": "001f85b38fb432858ace93f18622f07cec46d874",
                "fields": "defaults hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, "
                "num_attention_heads=32, num_key_value_heads=8, vocab_size=32000, sliding_window=4096",
            },
            {"document": "Jiang et al. 2023, Mistral 7B, arXiv:2310.06825", "where": "Table 1"},
        ],
        "not_in_index": "mistralai/Mistral-7B-v0.1 (its config.json)",
    },
}

#: The context of the decode figures: both models' 4,096 tokens (Llama 2's
#: context length; Mistral's sliding window, at which its cache stops growing).
DECODE_CONTEXT = 4096
#: The prompt of the prefill figures.
PREFILL_TOKENS = 1024


# --- 1. memory per token ------------------------------------------------------


def kv_bytes_per_token(layers: int, kv_heads: int, head_size: int, bytes_per_value: int = BYTES_PER_VALUE) -> int:
    """Bytes one token adds to the cache: a key and a value row per key/value head and layer."""
    return 2 * layers * kv_heads * head_size * bytes_per_value


def attention_variants(model: dict) -> dict[str, int]:
    """Key/value heads of the model's MHA, GQA (its own) and MQA variants."""
    return {"MHA": model["query_heads"], "GQA": model["kv_heads"], "MQA": 1}


def memory_per_token(model: dict, bytes_per_value: int = BYTES_PER_VALUE) -> dict[str, int]:
    """Cache bytes per token for the MHA, GQA and MQA variants of ``model``."""
    return {
        name: kv_bytes_per_token(model["layers"], heads, model["head_size"], bytes_per_value)
        for name, heads in attention_variants(model).items()
    }


# --- 2. decode and prefill traffic ----------------------------------------------


def weight_count(model: dict) -> int:
    """Parameters of a Llama-style decoder with untied embedding and output matrices."""
    h, q, kv = model["hidden"], model["query_heads"] * model["head_size"], model["kv_heads"] * model["head_size"]
    per_layer = 2 * h * q + 2 * h * kv + 3 * h * model["intermediate"] + 2 * h  # q,o; k,v; MLP; 2 norms
    return model["layers"] * per_layer + h + 2 * model["vocab"] * h  # final norm; embedding and output


def decode_traffic(model: dict, context: int, bytes_per_value: int = BYTES_PER_VALUE) -> dict:
    """Bytes read to generate one token at batch 1 after ``context`` cached tokens.

    Every weight is read once, except the embedding table, of which one row
    is; and the whole cache of the ``context`` tokens. The new token's own
    key and value rows (written, then read) are left out: one token's worth.
    """
    weights = (weight_count(model) - model["vocab"] * model["hidden"] + model["hidden"]) * bytes_per_value
    per_token = kv_bytes_per_token(model["layers"], model["kv_heads"], model["head_size"], bytes_per_value)
    cache = context * per_token
    flops = 2 * weight_count(model)  # a multiply and an add per weight (attention's own flops left out)
    return {
        "context": context,
        "weight_bytes_read": weights,
        "cache_bytes_read": cache,
        "bytes_per_token": weights + cache,
        "flops_per_token": flops,
        "flops_per_byte": flops / (weights + cache),
    }


def prefill_traffic(model: dict, prompt: int, bytes_per_value: int = BYTES_PER_VALUE) -> dict:
    """Bytes per prompt token of a prefill that runs the ``prompt`` tokens in one pass.

    The weights are read once for all of them; each token's key and value
    rows are written once.
    """
    weights = weight_count(model) * bytes_per_value
    per_token = kv_bytes_per_token(model["layers"], model["kv_heads"], model["head_size"], bytes_per_value)
    total = weights + prompt * per_token
    flops = 2 * weight_count(model) * prompt
    return {"prompt": prompt, "bytes_per_token": total / prompt, "flops_per_byte": flops / total}


def ms_per_token(bytes_per_token: float, bytes_per_second: float) -> float:
    """The time a step that must read ``bytes_per_token`` needs at ``bytes_per_second``."""
    return bytes_per_token / bytes_per_second * 1e3


def last_level_cache_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int | None:
    """The largest CPU cache's size in bytes (Linux sysfs), or None when unknown."""
    sizes = []
    for index in sysfs.glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            sizes.append(int(digits) * unit)
    return max(sizes) if sizes else None


def stream_bandwidth(array_bytes: int, repeats: int = 7) -> dict:
    """This machine's memory bandwidth from NumPy on one thread: copy and sum, median of ``repeats``.

    A copy reads ``array_bytes`` and writes as many (counted as 2x); a sum
    reads them. One untimed run of each first faults the pages in.
    """
    n = array_bytes // 8
    src = np.full(n, 1.0)
    dst = np.zeros(n)
    np.copyto(dst, src)
    src.sum()
    copies, sums = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        copies.append(2 * n * 8 / (time.perf_counter() - start) / 1e9)
        start = time.perf_counter()
        total = src.sum()
        sums.append(n * 8 / (time.perf_counter() - start) / 1e9)
    assert total == n, "the sum must read every element"
    return {
        "array_bytes": n * 8,
        "repeats": repeats,
        "copy_gb_per_s": statistics.median(copies),
        "sum_gb_per_s": statistics.median(sums),
        "copy_samples": copies,
        "sum_samples": sums,
    }


def matmul_gflops(size: int = 1024, repeats: int = 5) -> float:
    """float32 matmul rate (GFLOP/s) on NumPy's BLAS, median of ``repeats`` after a warm-up."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
    a @ b
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        samples.append(2 * size**3 / (time.perf_counter() - start) / 1e9)
    return statistics.median(samples)


# --- 3. prefix sharing through qkv.PagedKVCache ----------------------------------


@dataclass(frozen=True)
class Request:
    """One request: its system prompt (index and length) and all its token ids in order."""

    system: int
    system_length: int
    tokens: tuple[int, ...]


#: The workload the committed result runs (``make_workload(**WORKLOAD)``) and its cache.
WORKLOAD = {
    "requests": 50,
    "system_lengths": (300, 260),
    "user_tokens": (20, 120),
    "generated_tokens": (16, 64),
    "vocab": 32000,
    "seed": 28,
}
CACHE = {"num_blocks": 96, "block_size": 16, "d": 8, "live": 4}


def make_workload(
    requests: int,
    system_lengths: tuple[int, ...],
    user_tokens: tuple[int, int],
    generated_tokens: tuple[int, int],
    vocab: int,
    seed: int,
) -> list[Request]:
    """Seeded requests: a system prompt drawn at random, then a unique user part and generated tokens.

    The user part and the generated tokens have ``user_tokens`` and
    ``generated_tokens`` (low, high inclusive) random token ids; the two
    are appended the same way, so they are one unique tail.
    """
    rng = np.random.default_rng(seed)
    systems = [tuple(int(t) for t in rng.integers(0, vocab, size=length)) for length in system_lengths]
    out = []
    for _ in range(requests):
        system = int(rng.integers(0, len(systems)))
        tail = int(rng.integers(user_tokens[0], user_tokens[1] + 1))
        tail += int(rng.integers(generated_tokens[0], generated_tokens[1] + 1))
        unique = tuple(int(t) for t in rng.integers(0, vocab, size=tail))
        out.append(Request(system, len(systems[system]), systems[system] + unique))
    return out


def token_rows(tokens: tuple[int, ...], d: int) -> tuple[np.ndarray, np.ndarray]:
    """Key and value rows, (L, d) each, that depend only on each token's id and position.

    The same tokens after the same prefix give the same rows, bit for bit,
    as a model's would: what ``PagedKVCache`` requires to share a block.
    """
    ids = np.asarray(tokens, dtype=np.float64)[:, None]
    pos = np.arange(len(tokens), dtype=np.float64)[:, None]
    j = np.arange(1, d + 1, dtype=np.float64)[None, :]
    return np.sin(1e-3 * ids * j + 0.1 * pos * j), np.cos(1e-3 * ids * j - 0.1 * pos * j)


def shareable_blocks(workload: list[Request], block_size: int) -> int:
    """The prefix hits of an unbounded pool: each full block of a system
    prompt, once per request after the first that used that prompt.

    (The block where the system prompt ends holds user tokens too, which
    are unique, so it is never shared.)
    """
    seen: set[int] = set()
    hits = 0
    for request in workload:
        if request.system in seen:
            hits += request.system_length // block_size
        seen.add(request.system)
    return hits


def run_workload(workload: list[Request], num_blocks: int, block_size: int, d: int, live: int) -> dict:
    """Append every request's tokens to one ``PagedKVCache``, ``live`` requests at a time.

    Request ``i`` is appended whole; then, once more than ``live`` requests
    are live, the oldest is freed. After each request the blocks in use are
    compared with those a cache without sharing would hold for the same
    live requests (``ceil(length / block_size)`` each).
    """
    cache = qkv.PagedKVCache(num_blocks, block_size, d)
    live_ids: list[int] = []
    in_use, unshared = [], []
    for i, request in enumerate(workload):
        keys, values = token_rows(request.tokens, d)
        for position, token in enumerate(request.tokens):
            cache.append(i, token, keys[position], values[position])
        live_ids.append(i)
        in_use.append(cache.stats()["blocks_in_use"])
        unshared.append(sum(math.ceil(len(workload[s].tokens) / block_size) for s in live_ids))
        if len(live_ids) >= live:
            cache.free(live_ids.pop(0))
    stats = cache.stats()
    full_blocks = sum(len(r.tokens) // block_size for r in workload)
    blocks_needed = sum(math.ceil(len(r.tokens) / block_size) for r in workload)
    return {
        "tokens": sum(len(r.tokens) for r in workload),
        "prefix_hits": stats["prefix_hits"],
        "evictions": stats["evictions"],
        "full_blocks": full_blocks,
        "blocks_needed": blocks_needed,
        "hit_rate": stats["prefix_hits"] / full_blocks,
        "reused_over_needed": stats["prefix_hits"] / blocks_needed,
        "best_case_hits": shareable_blocks(workload, block_size),
        "blocks_in_use_after_each": in_use,
        "unshared_blocks_after_each": unshared,
        "peak_blocks_in_use": max(in_use),
        "peak_unshared_blocks": max(unshared),
        "mean_blocks_in_use": statistics.fmean(in_use),
        "mean_unshared_blocks": statistics.fmean(unshared),
        "final_stats": stats,
    }


# --- the run ----------------------------------------------------------------------


def versions() -> dict:
    return {"python": platform.python_version(), "numpy": np.__version__, "qkv": qkv.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small arrays and workload (smoke run); writes nothing unless --out"
    )
    parser.add_argument("--out", type=Path, default=None, help=f"result file (default {RESULT.relative_to(ROOT)})")
    args = parser.parse_args()
    load_before = os.getloadavg()
    llc = last_level_cache_bytes()
    print(
        f"{cpu_model()}, {os.cpu_count()} cores, last-level cache {llc} bytes; load average before {load_before[0]:.2f}"
    )

    print(f"\nKV cache per token, {BYTES_PER_VALUE}-byte values (2 x layers x KV heads x head size x bytes):")
    print(
        f"{'model':<12} {'layers':>6} {'Q heads':>7} {'head':>5} " + " ".join(f"{v:>20}" for v in ("MHA", "GQA", "MQA"))
    )
    memory = {}
    for name, model in MODELS.items():
        memory[name] = memory_per_token(model)
        heads = attention_variants(model)
        print(
            f"{name:<12} {model['layers']:>6} {model['query_heads']:>7} {model['head_size']:>5} "
            + " ".join(f"{memory[name][v]:>10,} B ({heads[v]:>2} KV)" for v in ("MHA", "GQA", "MQA"))
        )

    array_bytes = 2**24 if args.quick else 8 * (llc or 32 * 2**20)
    bandwidth = stream_bandwidth(array_bytes)
    bandwidth["matmul_gflops_float32_one_thread"] = matmul_gflops(256 if args.quick else 1024)
    bandwidth["threads"] = 1
    read = bandwidth["sum_gb_per_s"] * 1e9
    print(
        f"\nthis machine, one thread, {array_bytes / 2**20:.0f} MiB arrays: copy {bandwidth['copy_gb_per_s']:.1f} GB/s "
        f"(read + write), sum {bandwidth['sum_gb_per_s']:.1f} GB/s (read); float32 matmul "
        f"{bandwidth['matmul_gflops_float32_one_thread']:.1f} GFLOP/s"
    )
    decode, prefill = {}, {}
    print(f"\ndecode at batch 1, {DECODE_CONTEXT:,} tokens of context; prefill of {PREFILL_TOKENS:,} tokens:")
    for name, model in MODELS.items():
        decode[name] = decode_traffic(model, DECODE_CONTEXT)
        decode[name]["ms_per_token_at_sum_bandwidth"] = ms_per_token(decode[name]["bytes_per_token"], read)
        prefill[name] = prefill_traffic(model, PREFILL_TOKENS)
        print(
            f"{name:<12} weights {weight_count(model):,}; decode reads {decode[name]['bytes_per_token'] / 1e9:.2f} GB "
            f"per token ({decode[name]['cache_bytes_read'] / 1e9:.2f} GB of it cache), "
            f"{decode[name]['flops_per_byte']:.2f} flop/byte, "
            f"{decode[name]['ms_per_token_at_sum_bandwidth']:,.0f} ms per token here; prefill "
            f"{prefill[name]['bytes_per_token'] / 1e6:.1f} MB per token, {prefill[name]['flops_per_byte']:.0f} flop/byte"
        )

    workload_args = dict(WORKLOAD)
    cache_args = dict(CACHE)
    if args.quick:
        workload_args.update(requests=10, system_lengths=(64, 48))
        cache_args.update(num_blocks=64)
    workload = make_workload(**workload_args)
    sharing = run_workload(workload, **cache_args)
    print(
        f"\nworkload: {workload_args['requests']} requests, {len(workload_args['system_lengths'])} system prompts "
        f"({', '.join(map(str, workload_args['system_lengths']))} tokens), block_size {cache_args['block_size']}, "
        f"{cache_args['num_blocks']} blocks, {cache_args['live']} live"
    )
    print(
        f"prefix_hits {sharing['prefix_hits']} of {sharing['full_blocks']} full blocks "
        f"({sharing['hit_rate']:.1%}; best case {sharing['best_case_hits']}), "
        f"{sharing['reused_over_needed']:.1%} of the {sharing['blocks_needed']} blocks needed; "
        f"evictions {sharing['evictions']}"
    )
    print(
        f"blocks in use: peak {sharing['peak_blocks_in_use']} (without sharing {sharing['peak_unshared_blocks']}), "
        f"mean {sharing['mean_blocks_in_use']:.1f} (without sharing {sharing['mean_unshared_blocks']:.1f})"
    )
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f}")
    if args.quick and args.out is None:
        return  # a smoke run never overwrites the committed result
    out = args.out or RESULT
    result = {
        "produced_by": "make bench-kv (benchmarks/kv_serving.py)",
        "date": datetime.date.today().isoformat(),
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "last_level_cache_bytes": llc,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
        },
        "versions": versions(),
        "bytes_per_value": BYTES_PER_VALUE,
        "models": MODELS,
        "weights": {name: weight_count(model) for name, model in MODELS.items()},
        "memory_per_token": memory,
        "bandwidth": bandwidth,
        "decode": decode,
        "prefill": prefill,
        "workload": {"parameters": workload_args, "cache": cache_args, **sharing},
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    main()
