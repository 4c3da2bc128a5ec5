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


#: Every text of the figure, in pt: at the phone's 332 px inside a box, a
#: figure about 330 pt wide shows 11 pt as 11 px or more.
FONT = 11


@figure(
    "alibi-heads",
    alt="Two line charts, one above the other, one line per ALiBi head of eight, against the distance from the query to the key, 0 to 32. Top, log scale, from distance 1 (distance 0 has no penalty): the penalty grows in proportion to the distance, and each head's line lies a factor of 2 below the one before, from head 0 (slope 1/2) reaching 16 at distance 32 down to head 7 (slope 1/256) staying under 1. Bottom, log scale: with equal content scores, head 0's weight drops fast from the query's own position with distance while head 7's stays almost level.",
    caption="ALiBi's fixed penalty per head (top) and the weight it leaves on each key when every content score is equal (bottom), for the last of 33 tokens. Both vertical axes are log scales: each labelled step down is 10 times smaller at the top, 100 times at the bottom. Steep heads read the last few tokens, gentle heads read far back.",
    width=440,
)
def alibi_heads() -> plt.Figure:
    """Per-head ALiBi penalty and the resulting weights, against the distance, one chart above the other.

    The penalty is drawn on a log scale: on a linear one the gentle heads' lines (at most 1 at
    distance 32, against head 0's 16) lie on top of each other.
    """
    length = MAX_DISTANCE + 1
    bias = qkv.alibi_bias(NUM_HEADS, length)  # (h, L, L)
    last = bias[:, -1, ::-1]  # (h, L): the last query's penalty by distance 0 .. L-1
    weights = qkv.softmax(last)  # equal content scores: softmax of the penalty alone
    distance = np.arange(length)
    slopes = qkv.alibi_slopes(NUM_HEADS)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(4.4, 7.4), sharex=True, layout="constrained")
    for h in range(NUM_HEADS):
        label = f"head {h}: 1/{round(1 / slopes[h])}"
        top.plot(distance[1:], -last[h, 1:], label=label)  # distance 0 has no penalty: off a log scale
        bottom.plot(distance, weights[h], label=label)  # weights are positive: distance 0 fits
    top.set_yscale("log")
    top.set_yticks([0.01, 0.1, 1, 10], ["0.01", "0.1", "1", "10"])
    top.set_ylabel("penalty subtracted (log)", fontsize=FONT)
    top.set_title("Penalty: slope \u00d7 distance", fontsize=FONT + 1)
    bottom.set_yscale("log")
    bottom.set_yticks([1e-1, 1e-3, 1e-5, 1e-7])
    bottom.set_ylabel("attention weight (log)", fontsize=FONT)
    bottom.set_title("Weight left on each key", fontsize=FONT + 1)
    bottom.set_xlabel("distance from the query (positions back)", fontsize=FONT)
    bottom.set_xticks([0, 8, 16, 24, 32])
    for ax in (top, bottom):
        ax.tick_params(labelsize=FONT)
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    fig.legend(*top.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=FONT, frameon=False)
    return fig
