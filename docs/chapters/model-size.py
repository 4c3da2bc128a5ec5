"""Aside "How many numbers is the paper's model?": its figure and value,
from the same count the page's first block shows."""

from __future__ import annotations

from parts import figure, value
from plotting import plt


def base_model() -> dict[str, int]:
    """The base model's parameters by part (sections 3.1 to 3.4)."""
    d_model, d_ff, layers, vocab = 512, 2048, 6, 37_000
    attention = 4 * d_model * d_model
    feed_forward = 2 * d_model * d_ff + d_ff + d_model
    return {
        "embedding (shared)": vocab * d_model,
        "encoder attention": layers * attention,
        "decoder attention": layers * 2 * attention,
        "feed-forward": 2 * layers * feed_forward,
        "layer norms": layers * 5 * 2 * d_model,
    }


@figure(
    "model-size",
    alt=(
        "Horizontal bars, one per part of the paper's base model, longest first: the feed-forward networks, "
        "the shared embedding table, the decoder's attentions, the encoder's attentions; the layer "
        "normalisations are too small to see."
    ),
    caption="Where the base model's parameters live, in millions (the count of the block above).",
    width=420,
)
def model_size():
    parts = sorted(base_model().items(), key=lambda item: item[1])
    fig, ax = plt.subplots(figsize=(4.2, 2.6))
    ax.barh([name for name, _ in parts], [n / 1e6 for _, n in parts], color="#3949ab")
    ax.set_xlabel("millions of parameters", fontsize=12)
    ax.tick_params(labelsize=12)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    return fig


@value("base_megabytes")
def base_megabytes() -> str:
    """The base model's parameters in float32 (4 bytes each), in MB."""
    return f"{sum(base_model().values()) * 4 / 1e6:.0f}"
