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


def _bank_weights(words: list[str]) -> np.ndarray:
    x = qkv.toy.bank_sentence(words)  # (3, 4)
    _, weights = qkv.self_attention(x, qkv.toy.W_QUERY, qkv.toy.W_KEY, qkv.toy.W_VALUE)
    return weights  # (3, 3): row = the word that asks, column = the word it reads


def _annotated_heatmap(ax: plt.Axes, weights: np.ndarray, rows: list[str], cols: list[str]) -> plt.cm.ScalarMappable:
    image = ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
    for (i, j), w in np.ndenumerate(weights):
        ax.text(j, i, f"{w:.4f}", ha="center", va="center", color="white" if w > 0.5 else "black")
    ax.set_xticks(np.arange(len(cols)), cols)
    ax.set_yticks(np.arange(len(rows)), rows)
    return image


def attention_heatmaps() -> str:
    """Attention weights of the toy head in both bank sentences."""
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.4))
    fig.subplots_adjust(wspace=0.35)
    for ax, words in zip(axes, (["money", "bank", "grows"], ["river", "bank", "flows"])):
        image = _annotated_heatmap(ax, _bank_weights(words), words, words)
        ax.set_title(" ".join(words))
        ax.set_xlabel("attends to (key)")
    axes[0].set_ylabel("word that asks (query)")
    fig.colorbar(image, ax=axes, label="attention weight (each row sums to 1)", shrink=0.9)
    return _to_svg(fig)


def softmax_saturation(num_rows: int = 2000, num_keys: int = 8) -> str:
    """Share of near-one-hot softmax rows and size of the softmax Jacobian, against d_k."""
    dims = np.array([4, 8, 16, 32, 64, 128, 256, 512])
    shares = {"scaled by 1/sqrt(d_k)": [], "unscaled": []}
    sizes = {"scaled by 1/sqrt(d_k)": [], "unscaled": []}
    rng = np.random.default_rng(0)
    eye = np.eye(num_keys)
    for d_k in dims:
        q = rng.normal(size=(num_rows, 1, d_k))
        k = rng.normal(size=(num_rows, num_keys, d_k))
        scores = (q @ np.swapaxes(k, -1, -2))[:, 0]  # (rows, 1, d_k) @ (rows, d_k, keys) -> (rows, keys)
        for name, scale in (("scaled by 1/sqrt(d_k)", 1 / np.sqrt(d_k)), ("unscaled", 1.0)):
            a = qkv.softmax(scores * scale)  # (rows, keys)
            jacobian = a[:, :, None] * eye - a[:, :, None] * a[:, None, :]  # (rows, keys, keys)
            shares[name].append(float(np.mean(a.max(axis=1) > 0.99)))
            sizes[name].append(float(np.median(np.linalg.norm(jacobian, axis=(1, 2)))))
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4))
    fig.subplots_adjust(wspace=0.4)
    for name, marker in (("scaled by 1/sqrt(d_k)", "o"), ("unscaled", "s")):
        left.plot(dims, shares[name], marker=marker, label=name)
        right.plot(dims, sizes[name], marker=marker, label=name)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(d) for d in dims])
        ax.set_xlabel("d_k (query/key width)")
        ax.grid(alpha=0.3)
    left.set_ylabel("share of rows with a weight > 0.99")
    left.set_title("Softmax saturates without scaling")
    right.set_yscale("log")
    right.set_ylabel("median softmax Jacobian size (log)")
    right.set_title("... and its gradient vanishes")
    left.legend(loc="upper left")
    return _to_svg(fig)


def training_loss() -> str:
    """Loss of the bank-sense task against the gradient-descent step."""
    task = qkv.bank_sense_task()
    result = qkv.train(task.x, task.rows, task.targets, seed=0)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot(np.arange(len(result.losses)), result.losses)
    ax.set_yscale("log")
    ax.set_xlabel("gradient-descent step")
    ax.set_ylabel("mean squared error of bank's row (log)")
    ax.set_title("Learning W_query, W_key, W_value from a random start (seed 0)")
    ax.grid(alpha=0.3)
    return _to_svg(fig)


def learned_pattern() -> str:
    """Bank's attention weights in the four task sentences, before and after training."""
    task = qkv.bank_sense_task()
    result = qkv.train(task.x, task.rows, task.targets, seed=0)
    start = qkv.init_projections(4, 4, seed=0)
    sentence = np.arange(len(task.rows))
    names = [" ".join(words) for words in task.sentences]
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for ax, matrices, title in (
        (axes[0], start, "random start"),
        (axes[1], (result.w_query, result.w_key, result.w_value), "after 500 steps"),
    ):
        _, cache = qkv.attention_forward(task.x, *matrices)
        weights = cache.weights[sentence, task.rows]  # (4 sentences, 3 words): bank's row
        image = _annotated_heatmap(ax, weights, names if ax is axes[0] else [""] * 4, ["noun", "bank", "verb"])
        ax.set_title(f"bank's attention, {title}")
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.9)
    return _to_svg(fig)


FIGURES: dict[str, Callable[[], str]] = {
    "figures/pe-heatmap.svg": pe_heatmap,
    "figures/pe-wavelengths.svg": pe_wavelengths,
    "figures/pe-similarity-by-offset.svg": pe_similarity_by_offset,
    "figures/vocab-similarity.svg": vocab_similarity,
    "figures/attention-heatmaps.svg": attention_heatmaps,
    "figures/softmax-saturation.svg": softmax_saturation,
    "figures/training-loss.svg": training_loss,
    "figures/learned-pattern.svg": learned_pattern,
}
