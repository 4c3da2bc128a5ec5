"""Shared look of the site's figures: byte-stable SVG, text kept as text.

Companion modules (``docs/chapters/<name>.py``) draw with ``plt`` from here
and return the figure; ``parts.py`` turns it into SVG.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

plt.rcParams.update(
    {
        "svg.hashsalt": "qkv",  # stable ids inside the SVG
        "svg.fonttype": "none",  # text stays text: smaller, selectable
        "font.size": 10,
    }
)

__all__ = ["plt", "annotated_heatmap", "rounded"]

#: Decimals of every number a widget shows (the pages print 4 too).
DECIMALS = 4


def annotated_heatmap(ax: plt.Axes, weights: np.ndarray, rows: list[str], cols: list[str]) -> plt.cm.ScalarMappable:
    """Attention weights as a heatmap with each weight written in its cell."""
    image = ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
    for (i, j), w in np.ndenumerate(weights):
        ax.text(j, i, f"{w:.4f}", ha="center", va="center", color="white" if w > 0.5 else "black")
    ax.set_xticks(np.arange(len(cols)), cols)
    ax.set_yticks(np.arange(len(rows)), rows)
    return image


def rounded(array) -> list:
    """An array as nested lists of floats rounded to ``DECIMALS``, for widget JSON."""
    return np.round(np.asarray(array, dtype=float), DECIMALS).tolist()
