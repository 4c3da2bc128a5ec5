"""Parts of docs/chapters/attention.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{ name }}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

import math

import numpy as np

import plotting
import qkv
from parts import figure, widget
from plotting import plt

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


#: Font size, in the figure's units (pt), of every text in this page's figures.
FONT = 12
#: Shown in a Deeper box on a 390 px phone, a figure is 332 px wide; its text
#: is FONT * 332 / (its width in pt) px on screen (tests/support/figure_text.py),
#: so at most PHONE_PT wide keeps every text at 10 px or more.
PHONE_PT = FONT * 332 / 10


def _readable(fig: plt.Figure, size: float = FONT) -> plt.Figure:
    """Every text of ``fig`` at ``size`` (labels, titles, legends, cell numbers,
    ticks), and a check that the figure, cropped as parts.py saves it, fits a phone."""
    for ax in fig.axes:
        ax.tick_params(labelsize=size)  # also the ticks matplotlib makes when it draws
    for text in fig.findobj(lambda artist: isinstance(artist, plt.Text)):
        text.set_fontsize(size)
    box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    width = 72 * (box.width + 2 * plt.rcParams["savefig.pad_inches"])  # pt, the SVG's units
    if width > PHONE_PT:
        raise ValueError(f"figure {width:.0f} pt wide, over {PHONE_PT:.0f}: its text would be under 10 px on a phone")
    return fig


@figure(
    "attention-heatmaps",
    alt="Two 3 by 3 heatmaps of attention weights, one above the other: money bank grows on top, river bank flows below. In both, the rows of the noun and of bank put 0.6652 on the noun, 0.0900 on bank and 0.2447 on the verb; the verb's row puts 0.4223 on the noun and on itself.",
    caption="The toy head's attention weights. Rows are the words that ask (queries), columns the words they read (keys). Both sentences have identical weights; only the values that get blended differ.",
    width=400,
)
def attention_heatmaps() -> plt.Figure:
    """Attention weights of the toy head in both bank sentences, stacked for a phone."""
    fig, axes = plt.subplots(2, 1, figsize=(4.4, 6.6))
    fig.subplots_adjust(hspace=0.45)
    for ax, words in zip(axes, (["money", "bank", "grows"], ["river", "bank", "flows"])):
        image = plotting.annotated_heatmap(ax, _bank_weights(words), words, words)
        ax.set_title(" ".join(words))
        ax.set_ylabel("asks (query)")
    axes[1].set_xlabel("attends to (key)")
    bar = fig.colorbar(image, ax=axes, shrink=0.7, ticks=[0, 0.5, 1])
    bar.set_label("attention weight (each row sums to 1)")
    return _readable(fig)


@figure(
    "softmax-saturation",
    alt="Two line charts, one above the other, against d_k from 4 to 1024, 32 tokens, random unit-variance inputs. Top: the share of unscaled softmax rows that put over 99 percent of their weight on one key climbs from near zero to about three quarters at d_k 1024; scaled, it stays at zero. Bottom: the share of unscaled query rows whose gradient is under 1 percent of a typical scaled row climbs to about one half at d_k 1024, while the share above 10 times a typical row rises to about a quarter at d_k 64 and then falls back.",
    caption="Unscaled scores saturate the softmax as d_k grows, and the gradient reaching the queries becomes uneven: many rows near zero, some ten times larger than usual. Scaled by 1/sqrt(d_k), neither happens. (qkv.attention_backward, 32 tokens, 50 random draws per width, seed 0.)",
    width=440,
)
def softmax_saturation(length: int = 32, draws: int = 50) -> plt.Figure:
    """Saturated rows and uneven query gradients, scaled and unscaled, against d_k."""
    dims = np.array([4, 16, 64, 256, 1024])
    saturated = {"scaled": [], "unscaled": []}
    dead, large = [], []
    rng = np.random.default_rng(0)
    eye = np.eye(length)
    for d_k in dims:
        sizes = {"scaled": [], "unscaled": []}
        peaks = {"scaled": [], "unscaled": []}
        for _ in range(draws):
            q, k, v, d_out = rng.normal(size=(4, length, d_k))
            for name, scale in (("scaled", 1 / np.sqrt(d_k)), ("unscaled", 1.0)):
                _, cache = qkv.attention_forward(eye, q, k, v, scale=scale)  # x = I: Q = W_Q
                d_q, _, _ = qkv.attention_backward(cache, d_out)  # (L, d_k)
                sizes[name].extend(np.linalg.norm(d_q, axis=1))
                peaks[name].extend(cache.weights.max(axis=1))
        typical = np.median(sizes["scaled"])
        ratio = np.array(sizes["unscaled"]) / typical
        dead.append(float(np.mean(ratio < 0.01)))
        large.append(float(np.mean(ratio > 10)))
        for name in saturated:
            saturated[name].append(float(np.mean(np.array(peaks[name]) > 0.99)))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(4.6, 7.0))
    fig.subplots_adjust(hspace=0.5)
    top.plot(dims, saturated["scaled"], marker="o", label="scaled by 1/sqrt(d_k)")
    top.plot(dims, saturated["unscaled"], marker="s", label="unscaled")
    bottom.plot(dims, dead, marker="v", label="under 1% of typical")
    bottom.plot(dims, large, marker="^", label="over 10x typical")
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(d) for d in dims])
        ax.minorticks_off()
        ax.set_xlabel("d_k (query/key width)")
        ax.set_ylim(-0.03, 1.0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
    top.set_ylabel("rows with a weight > 0.99")
    top.set_title("Softmax saturates unscaled")
    bottom.set_ylabel("unscaled query rows")
    bottom.set_title("... and query gradients split")
    return _readable(fig)


@widget(
    "attention",
    label="Interactive figure: attention weights and contextual vectors of the bank sentences, with an adjustable score scale",
    height="22rem",
    phone_height="25rem",
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
        "scale_steps": scale_steps(d_k),
        "start_step": paper_step(d_k),
        "sentences": sentences,
    }


def paper_step(d_k: int) -> int:
    """The index in ATTENTION_SCALES of the paper's factor 1/sqrt(d_k) (section 3.2.1)."""
    paper = 1 / math.sqrt(d_k)
    for index, scale in enumerate(ATTENTION_SCALES):
        if math.isclose(scale, paper):
            return index
    raise ValueError(
        f"ATTENTION_SCALES must contain the paper's scale 1/sqrt(d_k) = {paper!r} for d_k = {d_k}, "
        f"got {ATTENTION_SCALES}"
    )


def scale_steps(d_k: int) -> list[dict]:
    """The slider's steps, in order: the key into ``by_scale``, the factor, and
    what the factor is (``unscaled``, ``paper``, ``sharper`` or ``softer``)."""
    paper = paper_step(d_k)
    steps = []
    for index, scale in enumerate(ATTENTION_SCALES):
        if index == paper:
            kind = "paper"
        elif scale == 1.0:
            kind = "unscaled"
        else:
            kind = "sharper" if scale > 1.0 else "softer"
        steps.append({"key": repr(scale), "factor": scale, "kind": kind})
    return steps
