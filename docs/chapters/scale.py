"""Parts of docs/chapters/scale.md drawn when the site is built.

The timings come from the committed result file of ``make bench-attention``
(benchmarks/results/attention.json), never from a run at build time: builds
stay byte-stable, and the page says which machine produced the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

from parts import figure, value
from plotting import plt

RESULT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "attention.json"
CONTENDERS = ("qkv naive", "qkv streaming", "torch SDPA")
#: Legend labels: short enough for one line each on a phone.
LABELS = {
    "qkv naive": "qkv naive (whole score matrix)",
    "qkv streaming": "qkv streaming (key blocks)",
    "torch SDPA": "torch SDPA (CPU)",
}


def _result() -> dict:
    return json.loads(RESULT.read_text())


def _row(length: int) -> dict:
    return next(row for row in _result()["rows"] if row["L"] == length)


def in_box(text: str) -> str:
    """``text`` for a ``{{ value }}`` inside a Deeper box: every line after the
    first indented 4 spaces (the shortcode's own indent places the first)."""
    return text.replace("\n", "\n    ")


def _table(unit: str, cell: str) -> str:
    """One column per contender, one row per L, in ``unit`` (the page shows it in a Deeper box)."""
    lines = ["| L | naive | streaming | torch SDPA |", "|---:|---:|---:|---:|"]
    for row in _result()["rows"]:
        lines.append(f"| {row['L']:,} | " + " | ".join(cell.format(row[f"{c} {unit}"]) for c in CONTENDERS) + " |")
    return in_box("\n".join(lines))


@value("bench_time_table")
def bench_time_table() -> str:
    """The benchmark's times, ms per call: four columns, narrow enough for a phone."""
    return _table("ms", "{:,.1f}")


@value("bench_memory_table")
def bench_memory_table() -> str:
    """The benchmark's extra memory during a call, MiB: a table of its own beside the times."""
    return _table("MiB", "{:,.0f}")


@value("bench_machine")
def bench_machine() -> str:
    r = _result()
    m = r["machine"]
    v = r["versions"]
    # A quiet machine has a load near 0 before the run (the run itself keeps
    # the cores busy, so the load after it says little): above 0.5, other work
    # shared the machine, and the page says so.
    busy = f" (other work shared the {m['cores']} cores)" if m["load_average_before"] > 0.5 else ""
    return (
        f"{m['cpu']}, {m['threads']} threads for every contender, load average "
        f"{m['load_average_before']:.1f} before the run and {m['load_average_after']:.1f} after it"
        f"{busy}; "
        f"NumPy {v['numpy']}, PyTorch {v['torch']}, "
        f"{r['date']}"
    )


@value("bench_torch_version")
def bench_torch_version() -> str:
    return _result()["versions"]["torch"]


@value("bench_naive_dtype")
def bench_naive_dtype() -> str:
    """What the naive contender computed in. Result files before the field was
    recorded come from the same library, which computes in float64."""
    return _result().get("computed_in", {}).get("qkv naive", "float64")


@value("bench_torch_path")
def bench_torch_path() -> str:
    """Which inputs PyTorch's SDPA got and which CPU path it took, as the result file says.

    Files written before ``torch_sdpa`` was recorded came from 2-D calls,
    which take PyTorch's "math" path (the page's tests of the benchmark
    show the choice: 2-D gives MATH, (1, 1, L, d) gives FLASH_ATTENTION).
    """
    r = _result()
    version = r["versions"]["torch"]
    sdpa = r.get("torch_sdpa")
    if sdpa is None:
        return (
            f"PyTorch {version} was called with 2-D `(L, d)` tensors in this run, and for "
            'those it takes its plain ("math") path on the CPU, which builds the score '
            "matrix too; `make bench-attention` now passes 4-D `(1, 1, L, d)` tensors "
            "(batch 1, one head), for which PyTorch picks its fused flash-attention CPU "
            "kernel, and records that choice in the result file."
        )
    backends = " and ".join(f"`{name}`" for name in sdpa["backends"])
    return (
        f"PyTorch {version} was called with 4-D `{sdpa['input_shape']}` tensors (batch 1, "
        f"one head), for which it chose its {backends} backend on the CPU at every size "
        "(recorded in the result file); with 2-D `(L, d)` tensors it would take its plain "
        '("math") path, which builds the score matrix.'
    )


def _memory_growth(contender: str) -> str:
    return f"{_row(8192)[contender + ' MiB'] / _row(4096)[contender + ' MiB']:.1f}"


@value("bench_mem_growth_naive")
def bench_mem_growth_naive() -> str:
    return _memory_growth("qkv naive")


@value("bench_mem_growth_streaming")
def bench_mem_growth_streaming() -> str:
    return _memory_growth("qkv streaming")


@value("bench_mem_growth_torch")
def bench_mem_growth_torch() -> str:
    return _memory_growth("torch SDPA")


#: How the page's prose names each contender.
NAMES = {"qkv naive": "the naive version", "qkv streaming": "the streaming version", "torch SDPA": "PyTorch"}


@value("bench_noise")
def bench_noise() -> str:
    """A sentence for each time that fell while L doubled (the work grew 4 times): noise the
    reader would otherwise meet in the figure unexplained; empty when no time fell."""
    rows = _result()["rows"]
    sentences = [
        f" {NAMES[c][0].upper() + NAMES[c][1:]}'s time even fell from L = {a['L']:,} to {b['L']:,} "
        f"({a[c + ' ms']:.1f} to {b[c + ' ms']:.1f} ms), where the work grew 4 times."
        for c in CONTENDERS
        for a, b in zip(rows, rows[1:])
        if b[c + " ms"] < a[c + " ms"]
    ]
    return "".join(sentences)


@value("bench_ratio_4096")
def bench_ratio_4096() -> str:
    return f"{_row(4096)['streaming / torch']:.2f}"


@value("bench_big_seconds")
def bench_big_seconds() -> str:
    return f"{_result()['big']['seconds']:.0f}"


@value("bench_big_mb")
def bench_big_mb() -> str:
    """The big run's tracemalloc peak in MB (10^6 bytes), the unit of the page's first table."""
    return f"{_result()['big']['tracemalloc_peak_mib'] * 2**20 / 1e6:.0f}"


def _growth(contender: str) -> str:
    return f"{_row(8192)[contender + ' ms'] / _row(4096)[contender + ' ms']:.1f}"


@value("bench_growth_naive")
def bench_growth_naive() -> str:
    return _growth("qkv naive")


@value("bench_growth_streaming")
def bench_growth_streaming() -> str:
    return _growth("qkv streaming")


@value("bench_growth_torch")
def bench_growth_torch() -> str:
    return _growth("torch SDPA")


@value("bench_big_length")
def bench_big_length() -> str:
    return f"{_result()['big']['L']:,}"


@value("bench_big_naive_gb")
def bench_big_naive_gb() -> str:
    """The float32 score matrix of the big run in GB (10^9 bytes), the unit of the page's first table."""
    return f"{_result()['big']['naive_scores_gib'] * 2**30 / 1e9:.0f}"


@value("bench_kv_dtype")
def bench_kv_dtype() -> str:
    """The dtype of the decoding run, and how it differs from the table's.

    ``decode_times`` in benchmarks/attention.py draws float64 inputs
    (``rng.standard_normal``), and both the cache and the recomputation run
    in float64; the time-and-memory table has float32 inputs. A result file
    that records ``kv_cache.dtype`` says so itself.
    """
    r = _result()
    decode = r["kv_cache"].get("dtype", "float64")
    return f"{decode} (the benchmark's table has {r['dtype']} inputs)"


@value("bench_kv_tokens")
def bench_kv_tokens() -> str:
    return f"{_result()['kv_cache']['tokens']:,}"


@value("bench_kv_cache_ms")
def bench_kv_cache_ms() -> str:
    return f"{_result()['kv_cache']['cache_ms_per_token']:.2f}"


@value("bench_kv_recompute_ms")
def bench_kv_recompute_ms() -> str:
    return f"{_result()['kv_cache']['recompute_ms_per_token']:.1f}"


@value("bench_kv_ratio")
def bench_kv_ratio() -> str:
    return f"{_result()['kv_cache']['ratio']:.0f}"


def _mib(x: float) -> str:
    return f"{x / 1024:.1f} GiB" if x >= 1024 else f"{x:.1f} MiB"


def _scale_cost_alt() -> str:
    """The figure's alt text, its numbers read from the result file (one decimal each)."""
    rows = _result()["rows"]
    first, last = rows[0], rows[-1]

    def span(contender: str, unit: str) -> str:
        if unit == "ms":
            return f"{first[contender + ' ms']:.1f} to {last[contender + ' ms']:.1f} ms"
        return f"{_mib(first[contender + ' MiB'])} to {_mib(last[contender + ' MiB'])}"

    naive = [b["qkv naive MiB"] / a["qkv naive MiB"] for a, b in zip(rows, rows[1:])]
    return (
        f"Two log-log line charts, one above the other, against the sequence length L from {first['L']} to "
        f"{last['L']}. Top: time per call, {span('qkv naive', 'ms')} for qkv's naive attention, "
        f"{span('qkv streaming', 'ms')} for qkv's streaming attention and "
        f"{span('torch SDPA', 'ms')} for PyTorch's CPU attention. "
        f"Bottom: extra memory during the call, {span('qkv naive', 'MiB')} for the naive version "
        f"({min(naive):.1f} to {max(naive):.1f} times per doubling of L), "
        f"{span('torch SDPA', 'MiB')} for PyTorch and {span('qkv streaming', 'MiB')} for the streaming version."
    )


def _scale_cost_caption() -> str:
    """The caption: the inputs' dtype and what each contender computed in, from the result file."""
    r = _result()
    computed = r.get("computed_in", {"qkv naive": "float64"})
    naive = computed.get("qkv naive", "float64")
    others = sorted({computed.get(c, r["dtype"]) for c in CONTENDERS if c != "qkv naive"})
    return (
        f"Time and extra memory of one attention head ({r['d']} numbers per query and key, {r['dtype']} inputs; the naive "
        f"version computes in {naive}, the other two in {' and '.join(others)}) as L grows, from the "
        "committed result of make bench-attention (the tables above have the numbers and the machine)."
    )


#: Every text of the figure, in points. The figure is drawn about 320 pt wide
#: (one column, panels stacked) and shown 332 px wide in its Deeper box on a
#: 390 px phone: 11 pt renders at about 11 px (tests/support/figure_text.py).
FONT_PT = 11


@figure("scale-cost", alt=_scale_cost_alt(), caption=_scale_cost_caption(), width=440)
def scale_cost() -> plt.Figure:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    rows = _result()["rows"]
    lengths = [row["L"] for row in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(4.4, 6.4), sharex=True)
    fig.subplots_adjust(hspace=0.12)
    for contender, marker in zip(CONTENDERS, ("o", "s", "^")):
        top.plot(lengths, [row[contender + " ms"] for row in rows], marker=marker, label=LABELS[contender])
        bottom.plot(lengths, [max(row[contender + " MiB"], 0.1) for row in rows], marker=marker)
    plain = FuncFormatter(lambda y, _: f"{y:,g}")  # 1, 10, 1,000: no superscripts, which render 30% smaller
    for ax, label in ((top, "time per call (ms)"), (bottom, "extra memory (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel(label, fontsize=FONT_PT)
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(labelsize=FONT_PT)
        ax.grid(True, which="major", alpha=0.3)
    bottom.set_xticks(lengths, [f"{n:,}" for n in lengths])
    bottom.xaxis.set_minor_formatter(NullFormatter())
    bottom.set_xlabel("sequence length L", fontsize=FONT_PT)
    top.legend(loc="lower left", bbox_to_anchor=(0, 1.02), borderaxespad=0, frameon=False, fontsize=FONT_PT)
    return fig
