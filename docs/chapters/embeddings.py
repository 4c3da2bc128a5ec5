"""Parts of docs/chapters/embeddings.md drawn from qkv when the site is built.

Declared here, used on the page by name (``<!-- qkv:figure name -->``,
``<!-- qkv:widget name -->``, ``{{ name }}``); see docs/hooks/parts.py.
"""

from __future__ import annotations

import math

import numpy as np

import plotting
import qkv
from parts import figure, value, widget
from plotting import plt

D_MODEL_PAPER = 512
VOCAB_PAPER = 37_000  # shared BPE vocabulary, WMT14 English-German (section 5.1)
FONT = 12  # every text of the figure, in pt: 10 px or more on a phone


@figure(
    "vocab-similarity",
    alt="A 15 by 15 heatmap of the cosine similarity between every pair of toy embeddings, with the 15 tokens labelled on both axes. Four bright square blocks on the diagonal stand out: the animals, the foods, the vehicles and the royals; pairs from different groups are dark.",
    caption="Cosine similarity of every pair of rows of the toy table. Similar tokens form bright blocks, found by comparing whole rows. (In the toy each group also has a column of its own, by design; a trained table need not.)",
    width=440,
)
def vocab_similarity() -> plt.Figure:
    """Cosine similarity of every pair of the 15 toy embeddings, drawn for a
    phone: 12-pt text in a figure about 5 inches wide (10 px or more on screen
    at 358 px), the colour bar under the map."""
    sims = qkv.cosine_similarity_matrix(qkv.toy.EMBEDDINGS)  # (15, 15)
    fig, ax = plt.subplots(figsize=(4.6, 5.6))
    image = ax.imshow(sims, cmap="viridis", vmin=0, vmax=1)
    ticks = np.arange(len(qkv.toy.VOCAB))
    ax.set_xticks(ticks, qkv.toy.VOCAB, rotation=90, fontsize=FONT)
    ax.set_yticks(ticks, qkv.toy.VOCAB, fontsize=FONT)
    ax.set_title("Toy embeddings: cosine similarity", fontsize=FONT)
    bar = fig.colorbar(image, ax=ax, orientation="horizontal", fraction=0.05, pad=0.2, ticks=[0, 0.5, 1])
    bar.set_label("cosine similarity", fontsize=FONT)
    bar.ax.tick_params(labelsize=FONT)
    return fig


@widget(
    "token-vectors",
    label="Interactive figure: a token's one-hot vector, embedding row and nearest neighbours",
    height="32rem",
    phone_height="40rem",
)
def token_vectors() -> dict:
    table = qkv.toy.EMBEDDINGS  # (15, 4)
    return {
        "vocab": list(qkv.toy.VOCAB),
        "vocab_size": len(qkv.toy.VOCAB),  # the one-hot vector's length
        "d_model": table.shape[1],  # the embedding row's length
        "axes": list(qkv.toy.AXES),
        "embeddings": plotting.rounded(table),
        "neighbours": [
            [[qkv.toy.VOCAB[j], round(sim, plotting.DECIMALS)] for j, sim in qkv.nearest_neighbours(i, table, k=4)]
            for i in range(len(qkv.toy.VOCAB))
        ],
    }


@value("sqrt_d_model_paper")
def sqrt_d_model_paper() -> str:
    return f"{math.sqrt(D_MODEL_PAPER):.2f}"


@value("embedding_table_numbers_paper")
def embedding_table_numbers_paper() -> str:
    return f"{VOCAB_PAPER * D_MODEL_PAPER:,}"
