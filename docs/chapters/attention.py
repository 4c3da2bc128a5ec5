"""Parts of docs/chapters/attention.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{ name }}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

import math

import numpy as np
import plotting
from parts import figure, widget
from plotting import plt

import qkv

BANK_SENTENCES = (
    ("money", "bank", "grows"),
    ("river", "bank", "flows"),
    ("grows", "money", "bank"),
    ("flows", "river", "bank"),
)
# Score scale factors for the attention explorer: sharper than unscaled,
# unscaled, the paper's 1/sqrt(d_k), and softer.
ATTENTION_SCALES = (4.0, 2.0, 1.0, 0.5, 0.25, 0.1)


def _bank_weights(words: list[str]) -> np.ndarray:
    x = qkv.toy.bank_sentence(words)  # (3, 4)
    _, weights = qkv.self_attention(x, qkv.toy.W_QUERY, qkv.toy.W_KEY, qkv.toy.W_VALUE)
    return weights  # (3, 3): row = the word that asks, column = the word it reads


@figure(
    "attention-heatmaps",
    alt="Two 3 by 3 heatmaps of attention weights, one for money bank grows and one for river bank flows. In both, the rows of the noun and of bank put 0.6652 on the noun, 0.0900 on bank and 0.2447 on the verb; the verb's row puts 0.4223 on the noun and on itself.",
    caption="The toy head's attention weights. Rows are the words that ask (queries), columns the words they read (keys). Both sentences have identical weights; only the values that get blended differ.",
    width=700,
)
def attention_heatmaps() -> plt.Figure:
    """Attention weights of the toy head in both bank sentences."""
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.4))
    fig.subplots_adjust(wspace=0.35)
    for ax, words in zip(axes, (["money", "bank", "grows"], ["river", "bank", "flows"])):
        image = plotting.annotated_heatmap(ax, _bank_weights(words), words, words)
        ax.set_title(" ".join(words))
        ax.set_xlabel("attends to (key)")
    axes[0].set_ylabel("word that asks (query)")
    fig.colorbar(image, ax=axes, label="attention weight (each row sums to 1)", shrink=0.9)
    return fig


@figure(
    "softmax-saturation",
    alt="Two line charts against d_k from 4 to 512. Left: the share of softmax rows with a weight above 0.99 stays at zero when scores are scaled, and climbs above 0.7 at d_k 512 when they are not. Right, log scale: the median size of the softmax Jacobian stays near 0.37 when scaled and falls by more than three orders of magnitude when unscaled.",
    caption="Unscaled scores saturate softmax as d_k grows, and the softmax's gradient shrinks towards zero. Scaled by 1/sqrt(d_k), nothing changes with the width. (Random unit-variance queries and keys, 8 keys per query, seed 0.)",
    width=760,
)
def softmax_saturation(num_rows: int = 2000, num_keys: int = 8) -> plt.Figure:
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
    return fig


@widget(
    "attention",
    label="Interactive figure: attention weights and contextual vectors of the bank sentences, with an adjustable score scale",
    height="22rem",
)
def attention() -> dict:
    d_k = qkv.toy.W_KEY.shape[1]
    sentences = []
    for words in BANK_SENTENCES:
        x = qkv.toy.bank_sentence(words)  # (L, d_model)
        q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE  # (L, d_k)
        by_scale = {}
        for scale in ATTENTION_SCALES:
            output, weights = qkv.scaled_dot_product_attention(q, k, v, scale=scale)
            by_scale[repr(scale)] = {
                "weights": plotting.rounded(weights),
                "outputs": plotting.rounded(output),
            }
        sentences.append({"words": list(words), "by_scale": by_scale})
    return {
        "axes": list(qkv.toy.BANK_AXES),
        "d_k": d_k,
        "paper_scale": 1 / math.sqrt(d_k),
        "scales": [repr(s) for s in ATTENTION_SCALES],
        "sentences": sentences,
    }
