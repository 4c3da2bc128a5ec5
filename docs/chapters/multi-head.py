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


@figure(
    "two-heads",
    alt="Two heatmaps side by side of bank's attention weights in the four sentences of the noun-and-verb task after training two heads. Head 0 puts 0.94 on the verb in every sentence; head 1 puts 0.63 on the noun in every sentence.",
    caption="Bank's weights in each of the two learned heads (seed 5). Trained together on one loss, the heads took different jobs: head 0 reads the verb, head 1 the noun.",
    width=760,
)
def two_heads() -> plt.Figure:
    """Bank's attention weights per head after train_heads on the noun-and-verb task."""
    task = qkv.noun_and_verb_task()
    result = qkv.train_heads(task.x, task.rows, task.targets, num_heads=2, d_k=2, seed=5)
    _, caches, _ = qkv.multi_head_forward(task.x, result.heads, result.w_out)
    sentence = np.arange(len(task.rows))
    names = [" ".join(words) for words in task.sentences]
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for h, (ax, cache) in enumerate(zip(axes, caches)):
        weights = cache.weights[sentence, task.rows]  # (4 sentences, 3 words): bank's row
        image = plotting.annotated_heatmap(ax, weights, names if h == 0 else [""] * 4, ["noun", "bank", "verb"])
        ax.set_title(f"head {h}: bank's attention")
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.9)
    return fig
