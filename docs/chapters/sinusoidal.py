"""Parts of docs/chapters/sinusoidal.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{ name }}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import LinearSegmentedColormap

import plotting
import qkv
from parts import figure, value, widget
from plotting import plt

D_MODEL_PAPER = 512
PE_WIDTHS = (4, 6, 8, 16, 32, 64)  # widths the positions widget offers
PE_MAX_POSITIONS = 64
PE_ROW_COUNTS = (8, 16, 32, 64)  # how many positions the widget can show
# What the widget shows first: d_model, number of rows, outlined position,
# and the word of the sentence whose rows are summed. It opens at the toy
# rows' width, 4, so that the token row plus the position row is on screen.
PE_START = {"width": 4, "rows": 32, "position": 1, "word": 1}


# Figures are drawn for a phone, where a figure is shown 358 px wide: text
# of size s in a figure W units wide (72 units per inch) renders at
# s * 358 / W px. FIGURE_INCHES wide with FONT-pt text keeps every text of
# every figure above 10 px (the tight bounding box adds a little); a desktop
# shows them SHOWN_WIDTH px wide.
FIGURE_INCHES = 4.6
FONT = 12
SHOWN_WIDTH = 480
# The widget's colours (docs/javascripts/qkv.js, colour()): -1 pure blue,
# 0 white, +1 pure red, linear in RGB in between; the heatmap uses the same.
WIDGET_COLOURS = LinearSegmentedColormap.from_list("qkv_blue_white_red", ["#0000ff", "#ffffff", "#ff0000"])


def _phone_fonts():
    """Every text of the figure drawn inside this context in FONT pt."""
    return plt.rc_context(
        {
            "font.size": FONT,
            "axes.titlesize": FONT,
            "axes.labelsize": FONT,
            "xtick.labelsize": FONT,
            "ytick.labelsize": FONT,
            "legend.fontsize": FONT,
            "figure.titlesize": FONT,
        }
    )


@figure(
    "pe-heatmap",
    alt="Heatmap of the sinusoidal encoding for 64 positions (rows, top to bottom) and 16 dimensions (columns), red for +1, white for 0 and blue for -1. The leftmost columns, pair i = 0, flicker between red and blue from one row to the next; further right the colour changes more and more slowly, and the rightmost columns are nearly constant stripes: white (sine near 0) alternating with red (cosine near 1).",
    caption="Each row is a position, 0 at the top. Read a column downward: the left ones (pair 0) flicker, the right ones barely change.",
    width=SHOWN_WIDTH,
)
def pe_heatmap(num_positions: int = 64, d_model: int = 16) -> plt.Figure:
    """Sinusoidal table: positions down, dimensions across, pair i = 0 at left."""
    table = qkv.sinusoidal_encoding(num_positions, d_model)  # (positions, d_model)
    with _phone_fonts():
        fig, ax = plt.subplots(figsize=(FIGURE_INCHES, 2.9), layout="constrained")
        image = ax.imshow(table, cmap=WIDGET_COLOURS, vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_xlabel("dimension (pair i below); left = fastest")
        ax.set_ylabel("position (from 0)")
        ticks = np.arange(0, d_model, 4)
        ax.set_xticks(ticks, [f"{t}\ni={t // 2}" for t in ticks])
        ax.set_yticks(np.arange(0, num_positions, 16))
        fig.colorbar(image, ax=ax, ticks=[-1, 0, 1], label=f"value, d_model = {d_model}")
    return fig


@figure(
    "pe-wavelengths",
    alt="Line chart of wavelength in positions, on a log scale, against the pair index for d = 16 and d = 512. Both lines start at 2 pi, about 6.28 positions, for pair 0 and climb in a straight line on the log scale to 19,869 for the last pair of d = 16 and 60,611 for the last pair of d = 512.",
    caption="Wavelength of each pair. Pair 0 is the fastest wave at every width; the last pair is the slowest.",
    width=SHOWN_WIDTH,
)
def pe_wavelengths() -> plt.Figure:
    """Wavelength of each dimension pair, d_model = 16 and 512, log scale."""
    with _phone_fonts():
        fig, ax = plt.subplots(figsize=(FIGURE_INCHES, 4.2))
        for d_model, marker in ((16, "o"), (512, ".")):
            waves = qkv.pair_wavelengths(d_model)  # (d_model // 2,)
            pairs = np.arange(d_model // 2)
            label = f"d_model = {d_model}: to {waves[-1]:,.0f}"  # the last pair's wavelength
            ax.plot(pairs / (d_model // 2 - 1), waves, marker=marker, linestyle="-", label=label)
        ax.set_yscale("log")
        ax.set_ylim(2, 2e5)
        ax.axhline(2 * np.pi, color="grey", linewidth=0.8, linestyle=":")
        ax.annotate("2\u03c0 = 6.28 (pair 0)", (0, 2 * np.pi), textcoords="offset points", xytext=(4, -4), va="top")
        ax.set_xlabel("pair i / last pair (0 = first, 1 = last)")
        ax.set_ylabel("wavelength (positions, log)")
        ax.set_title("Each pair is slower than the one before")
        ax.legend(loc="upper left")
    return fig


@figure(
    "pe-similarity-by-offset",
    alt="Line chart of the cosine similarity between PE(pos) and PE(pos + k) for offsets k from 0 to 60. The d = 512 curve starts at 1 and falls, with small ripples, to about one half; the d = 6 curve oscillates strongly, rising back close to 1 at k = 6 and swinging between high and low values across the whole range.",
    caption='Cosine similarity against the offset k. "Nearby positions have similar vectors" holds roughly for d = 512; for d = 6 it swings far from it.',
    width=SHOWN_WIDTH,
)
def pe_similarity_by_offset(max_offset: int = 60) -> plt.Figure:
    """Cosine similarity of PE(pos) and PE(pos + k) against k, d = 6 and 512."""
    offsets = np.arange(max_offset + 1)
    with _phone_fonts():
        fig, ax = plt.subplots(figsize=(FIGURE_INCHES, 4.2))
        for d_model in (6, 512):
            pe = qkv.sinusoidal_encoding(max_offset + 1, d_model)  # (positions, d_model)
            # Depends on k only, so measure from position 0.
            sims = [qkv.cosine_similarity(pe[0], pe[k]) for k in offsets]
            ax.plot(offsets, sims, marker=".", label=f"d_model = {d_model}")
        ax.set_xlabel("offset k between the positions")
        ax.set_ylabel("cos-sim of PE(pos), PE(pos + k)")
        ax.set_title("Similarity falls with distance only\nroughly, with large swings for small d")
        ax.legend(loc="lower left")
        ax.grid(alpha=0.3)
    return fig


@widget(
    "positions",
    label="Interactive figure: the sinusoidal table as a heatmap, one row in numbers, and token plus position for a short sentence",
    height="44.5rem",
    phone_height="44rem",
)
def positions() -> dict:
    words = ("money", "bank", "grows")
    tokens = qkv.toy.bank_sentence(words)  # (3, 4)
    pe = qkv.sinusoidal_encoding(len(words), tokens.shape[1])  # (3, 4)
    if (
        PE_START["width"] not in PE_WIDTHS
        or PE_START["rows"] not in PE_ROW_COUNTS
        or not 0 <= PE_START["position"] < PE_START["rows"]
        or not 0 <= PE_START["word"] < len(words)
    ):
        raise ValueError(
            f"PE_START must pick a width from {PE_WIDTHS}, rows from {PE_ROW_COUNTS}, a position below "
            f"its rows and a word of {words}, got {PE_START}"
        )
    if max(PE_ROW_COUNTS) > PE_MAX_POSITIONS:
        raise ValueError(f"PE_ROW_COUNTS must not exceed PE_MAX_POSITIONS = {PE_MAX_POSITIONS}, got {PE_ROW_COUNTS}")
    return {
        "max_positions": PE_MAX_POSITIONS,
        "row_counts": list(PE_ROW_COUNTS),
        "start": dict(PE_START),
        "tables": {str(d): plotting.rounded(qkv.sinusoidal_encoding(PE_MAX_POSITIONS, d)) for d in PE_WIDTHS},
        "sentence": {
            "words": list(words),
            "axes": list(qkv.toy.BANK_AXES),
            "tokens": plotting.rounded(tokens),
            "positions": plotting.rounded(pe),
            "sums": plotting.rounded(tokens + pe),
        },
    }


@value("wavelength_first_pair")
def wavelength_first_pair() -> str:
    return f"{qkv.pair_wavelengths(D_MODEL_PAPER)[0]:.2f}"


@value("wavelength_last_pair_d16")
def wavelength_last_pair_d16() -> str:
    return f"{qkv.pair_wavelengths(16)[-1]:,.0f}"


@value("wavelength_last_pair_d512")
def wavelength_last_pair_d512() -> str:
    return f"{qkv.pair_wavelengths(D_MODEL_PAPER)[-1]:,.0f}"
