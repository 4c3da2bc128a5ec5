"""Figures drawn from the qkv library when the site is built.

Each figure is a function returning SVG text; ``FIGURES`` maps the site path
of each figure to its function. The SVG bytes are stable from build to build
(fixed hash salt, no date), so the built site only changes when the numbers do.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import qkv  # noqa: E402

plt.rcParams.update(
    {
        "svg.hashsalt": "qkv",  # stable ids inside the SVG
        "svg.fonttype": "none",  # text stays text: smaller, selectable
        "font.size": 10,
    }
)


def _to_svg(fig: plt.Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def pe_heatmap(num_positions: int = 64, d_model: int = 32) -> str:
    """Sinusoidal table: positions down, dimensions across, pair i = 0 at left."""
    table = qkv.sinusoidal_encoding(num_positions, d_model)  # (positions, d_model)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    image = ax.imshow(table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("dimension (0 = sine of pair i = 0, the fastest wave; right = slowest pairs)")
    ax.set_ylabel("position (pos, from 0)")
    ax.set_title(f"Sinusoidal positional encoding, d_model = {d_model}")
    ticks = np.arange(0, d_model, 4)
    ax.set_xticks(ticks, [f"{t}\ni={t // 2}" for t in ticks])
    fig.colorbar(image, ax=ax, label="value (always in [-1, 1])")
    return _to_svg(fig)


def pe_wavelengths() -> str:
    """Wavelength of each dimension pair, d_model = 16 and 512, log scale."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for d_model, marker in ((16, "o"), (512, ".")):
        waves = qkv.pair_wavelengths(d_model)  # (d_model // 2,)
        pairs = np.arange(d_model // 2)
        ax.plot(pairs / (d_model // 2 - 1), waves, marker=marker, linestyle="-", label=f"d_model = {d_model}")
        ax.annotate(f"{waves[-1]:,.0f}", (1, waves[-1]), textcoords="offset points", xytext=(-52, -4))
    ax.set_yscale("log")
    ax.axhline(2 * np.pi, color="grey", linewidth=0.8, linestyle=":")
    ax.annotate("2\u03c0 = 6.28 (pair i = 0)", (0, 2 * np.pi), textcoords="offset points", xytext=(8, 6))
    ax.set_xlabel("pair index i, as a fraction of the last pair (0 = first pair, 1 = last)")
    ax.set_ylabel("wavelength in positions (log scale)")
    ax.set_title("Each pair's wave is slower than the one before it")
    ax.legend(loc="lower right")
    return _to_svg(fig)


def pe_similarity_by_offset(max_offset: int = 60) -> str:
    """Cosine similarity of PE(pos) and PE(pos + k) against k, d = 6 and 512."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    offsets = np.arange(max_offset + 1)
    for d_model in (6, 512):
        pe = qkv.sinusoidal_encoding(max_offset + 1, d_model)  # (positions, d_model)
        # Depends on k only, so measure from position 0.
        sims = [qkv.cosine_similarity(pe[0], pe[k]) for k in offsets]
        ax.plot(offsets, sims, marker=".", label=f"d_model = {d_model}")
    ax.set_xlabel("offset k between the two positions")
    ax.set_ylabel("cosine similarity of PE(pos), PE(pos + k)")
    ax.set_title("Similarity falls with distance only roughly, and not at all for small d")
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)
    return _to_svg(fig)


def vocab_similarity() -> str:
    """Cosine similarity of every pair of the 15 toy embeddings."""
    sims = qkv.cosine_similarity_matrix(qkv.toy.EMBEDDINGS)  # (15, 15)
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    image = ax.imshow(sims, cmap="viridis", vmin=0, vmax=1)
    ticks = np.arange(len(qkv.toy.VOCAB))
    ax.set_xticks(ticks, qkv.toy.VOCAB, rotation=60, ha="right")
    ax.set_yticks(ticks, qkv.toy.VOCAB)
    ax.set_title("Toy embeddings: cosine similarity")
    fig.colorbar(image, ax=ax, label="cosine similarity")
    return _to_svg(fig)


FIGURES: dict[str, Callable[[], str]] = {
    "figures/pe-heatmap.svg": pe_heatmap,
    "figures/pe-wavelengths.svg": pe_wavelengths,
    "figures/pe-similarity-by-offset.svg": pe_similarity_by_offset,
    "figures/vocab-similarity.svg": vocab_similarity,
}
