"""Parts of docs/chapters/relative-positions.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{ name }}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

import numpy as np

import qkv
from parts import figure
from plotting import plt

NUM_HEADS = 8
MAX_DISTANCE = 32


@figure(
    "alibi-heads",
    alt="Two line charts, one line per ALiBi head of eight, against the distance from the query to the key, 0 to 32. Left: the penalty falls in a straight line, steeply for head 0 (slope 1/2) and almost flat for head 7 (slope 1/256). Right, log scale: with equal content scores, head 0's weight drops fast with distance while head 7's stays almost level.",
    caption="ALiBi's fixed penalty per head (left) and the weight it leaves on each key when every content score is equal (right), for the last of 33 tokens. Steep heads read the last few tokens, gentle heads read far back.",
    width=760,
)
def alibi_heads() -> plt.Figure:
    """Per-head ALiBi penalty and the resulting weights, against the distance."""
    length = MAX_DISTANCE + 1
    bias = qkv.alibi_bias(NUM_HEADS, length)  # (h, L, L)
    last = bias[:, -1, ::-1]  # (h, L): the last query's penalty by distance 0 .. L-1
    weights = qkv.softmax(last)  # equal content scores: softmax of the penalty alone
    distance = np.arange(length)
    slopes = qkv.alibi_slopes(NUM_HEADS)
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4))
    fig.subplots_adjust(wspace=0.35)
    for h in range(NUM_HEADS):
        label = f"head {h}: 1/{round(1 / slopes[h])}"
        left.plot(distance, last[h], label=label)
        right.plot(distance, weights[h], label=label)
    left.set_ylabel("penalty added to the score")
    left.set_title("Penalty: -slope x distance")
    right.set_yscale("log")
    right.set_ylabel("attention weight (log)")
    right.set_title("Weight left on each key")
    for ax in (left, right):
        ax.set_xlabel("distance from the query (positions back)")
        ax.grid(alpha=0.3)
    right.legend(fontsize=7, loc="lower left", ncol=2)
    return fig
