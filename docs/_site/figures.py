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


FIGURES: dict[str, Callable[[], str]] = {
    "figures/pe-heatmap.svg": pe_heatmap,
}
