"""Parts of docs/chapters/multi-head.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{ name }}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

import numpy as np

import plotting
import qkv
from parts import figure
from plotting import plt

#: Every text of the figures, in pt: at the phone's 358 px on the main line,
#: a figure about 320 pt wide shows 11 pt as 12 px.
FONT = 11


@figure(
    "two-heads",
    alt="Two heatmaps, one above the other, of bank's attention weights in the four sentences of the noun-and-verb task after training two heads. Head 0 puts 0.94 on the verb in every sentence; head 1 puts 0.63 on the noun in every sentence.",
    caption="Bank's weights in the two learned heads (seed 5): head 0 reads the verb, head 1 the noun.",
    width=440,
)
def two_heads() -> plt.Figure:
    """Bank's attention weights per head after train_heads on the noun-and-verb task, one head above the other."""
    task = qkv.noun_and_verb_task()
    result = qkv.train_heads(task.x, task.rows, task.targets, num_heads=2, d_k=2, seed=5)
    _, caches, _ = qkv.multi_head_forward(task.x, result.heads, result.w_out)
    sentence = np.arange(len(task.rows))
    names = [" ".join(words) for words in task.sentences]
    fig, axes = plt.subplots(2, 1, figsize=(4.4, 3.6), layout="constrained")
    for h, (ax, cache) in enumerate(zip(axes, caches)):
        weights = cache.weights[sentence, task.rows]  # (4 sentences, 3 words): bank's row
        plotting.annotated_heatmap(ax, weights, names, ["noun", "bank", "verb"])
        ax.set_aspect("auto")  # wide cells: the phone's width, not the height, is scarce
        for text in ax.texts:
            text.set_fontsize(FONT)
        ax.tick_params(labelsize=FONT)
        ax.set_title(f"head {h}: bank's attention", fontsize=FONT + 1, pad=8)
    return fig
