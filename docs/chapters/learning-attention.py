"""Parts of docs/chapters/learning-attention.md drawn from qkv when the site is built.

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
    "training-loss",
    alt="A line chart of the training loss on a log scale against the gradient-descent step, from 0 to 500. The loss starts near 0.46, falls steeply over the first few dozen steps, and keeps falling smoothly to about 0.0001 at step 500.",
    caption="Mean squared error of bank's output row, step by step (seed 0, learning rate 1). The loss falls to less than a thousandth of its starting value.",
    width=640,
)
def training_loss() -> plt.Figure:
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
    return fig


@figure(
    "learned-pattern",
    alt="Two heatmaps of bank's attention weights in the four task sentences. At the random start every weight is close to one third. After 500 steps bank puts between 0.73 and 0.78 on the noun, about 0.2 on itself and about 0.05 on the verb in every sentence.",
    caption='Bank\'s row of attention weights before and after training. Training turned an almost uniform pattern into "read the noun, ignore the verb".',
    width=760,
)
def learned_pattern() -> plt.Figure:
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
        image = plotting.annotated_heatmap(ax, weights, names if ax is axes[0] else [""] * 4, ["noun", "bank", "verb"])
        ax.set_title(f"bank's attention, {title}")
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.9)
    return fig
