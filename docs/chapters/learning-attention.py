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
    "training-loss",
    alt="A line chart of the training loss on a log scale against the gradient-descent step, from 0 to 500. The loss starts near 0.46, falls steeply over the first few dozen steps, and keeps falling smoothly to about 0.0001 at step 500.",
    caption="Mean squared error of bank's output row, step by step (seed 0, learning rate 1). The loss falls to less than a thousandth of its starting value.",
    width=440,
)
def training_loss() -> plt.Figure:
    """Loss of the bank-sense task against the gradient-descent step."""
    task = qkv.bank_sense_task()
    result = qkv.train(task.x, task.rows, task.targets, seed=0)
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    ax.plot(np.arange(len(result.losses)), result.losses)
    ax.set_yscale("log")
    ax.set_xticks([0, 100, 200, 300, 400, 500])
    ax.set_xlabel("gradient-descent step")
    ax.set_ylabel("MSE of bank's row (log)")
    ax.set_title("Learning the three matrices (seed 0)")
    ax.grid(alpha=0.3)
    return _readable(fig)


@figure(
    "learned-pattern",
    alt="Two heatmaps of bank's attention weights in the four task sentences, one above the other. At the random start every weight is close to one third. After 500 steps bank puts between 0.73 and 0.78 on the noun, about 0.2 on itself and about 0.05 on the verb in every sentence.",
    caption='Bank\'s row of attention weights before and after training. Training turned an almost uniform pattern into "read the noun, ignore the verb".',
    width=440,
)
def learned_pattern() -> plt.Figure:
    """Bank's attention weights in the four task sentences, before and after training, stacked for a phone."""
    task = qkv.bank_sense_task()
    result = qkv.train(task.x, task.rows, task.targets, seed=0)
    start = qkv.init_projections(4, 4, seed=0)
    sentence = np.arange(len(task.rows))
    names = [" ".join(words) for words in task.sentences]
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 7.0))
    fig.subplots_adjust(left=0.32, right=0.97, hspace=0.35)
    for ax, matrices, title in (
        (axes[0], start, "random start"),
        (axes[1], (result.w_query, result.w_key, result.w_value), "after 500 steps"),
    ):
        _, cache = qkv.attention_forward(task.x, *matrices)
        weights = cache.weights[sentence, task.rows]  # (4 sentences, 3 words): bank's row
        image = plotting.annotated_heatmap(ax, weights, names, ["noun", "bank", "verb"])
        ax.set_aspect("auto")  # cells wide enough for four decimals
        ax.set_title(f"bank's attention, {title}")
    fig.colorbar(
        image, ax=axes, orientation="horizontal", label="attention weight", shrink=0.8, pad=0.07, ticks=[0, 0.5, 1]
    )
    return _readable(fig)
