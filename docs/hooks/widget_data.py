"""Data for the interactive widgets, computed from qkv when the site is built.

The widgets' JavaScript does no maths of its own: it only shows these
numbers, so what a reader sees is what the library computes. Each function
returns a JSON-ready dict; ``WIDGET_DATA`` maps the site path to it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np

import qkv

DECIMALS = 4
PE_WIDTHS = (4, 6, 8, 16, 32, 64)
PE_MAX_POSITIONS = 64
BANK_SENTENCES = (
    ("money", "bank", "grows"),
    ("river", "bank", "flows"),
    ("grows", "money", "bank"),
    ("flows", "river", "bank"),
)
# Score scale factors for the attention explorer: sharper than unscaled,
# unscaled, the paper's 1/sqrt(d_k), and softer.
ATTENTION_SCALES = (4.0, 2.0, 1.0, 0.5, 0.25, 0.1)


def _rounded(array: np.ndarray) -> list:
    return np.round(np.asarray(array, dtype=float), DECIMALS).tolist()


def token_vectors() -> dict:
    table = qkv.toy.EMBEDDINGS  # (15, 4)
    return {
        "vocab": list(qkv.toy.VOCAB),
        "axes": list(qkv.toy.AXES),
        "embeddings": _rounded(table),
        "neighbours": [
            [[qkv.toy.VOCAB[j], round(sim, DECIMALS)] for j, sim in qkv.nearest_neighbours(i, table, k=3)]
            for i in range(len(qkv.toy.VOCAB))
        ],
    }


def positions() -> dict:
    words = BANK_SENTENCES[0]
    tokens = qkv.toy.bank_sentence(words)  # (3, 4)
    pe = qkv.sinusoidal_encoding(len(words), tokens.shape[1])  # (3, 4)
    return {
        "max_positions": PE_MAX_POSITIONS,
        "tables": {
            str(d): _rounded(qkv.sinusoidal_encoding(PE_MAX_POSITIONS, d)) for d in PE_WIDTHS
        },
        "sentence": {
            "words": list(words),
            "axes": list(qkv.toy.BANK_AXES),
            "tokens": _rounded(tokens),
            "positions": _rounded(pe),
            "sums": _rounded(tokens + pe),
        },
    }


def attention() -> dict:
    d_k = qkv.toy.W_KEY.shape[1]
    sentences = []
    for words in BANK_SENTENCES:
        x = qkv.toy.bank_sentence(words)  # (L, d_model)
        q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE  # (L, d_k)
        by_scale = {}
        for scale in ATTENTION_SCALES:
            output, weights = qkv.scaled_dot_product_attention(q, k, v, scale=scale)
            by_scale[repr(scale)] = {"weights": _rounded(weights), "outputs": _rounded(output)}
        sentences.append({"words": list(words), "by_scale": by_scale})
    return {
        "axes": list(qkv.toy.BANK_AXES),
        "d_k": d_k,
        "paper_scale": 1 / math.sqrt(d_k),
        "scales": [repr(s) for s in ATTENTION_SCALES],
        "sentences": sentences,
    }


WIDGET_DATA: dict[str, Callable[[], dict]] = {
    "data/token-vectors.json": token_vectors,
    "data/positions.json": positions,
    "data/attention.json": attention,
}


def render(path: str) -> str:
    """The JSON text for one widget file (compact, stable key order)."""
    return json.dumps(WIDGET_DATA[path](), separators=(",", ":"), sort_keys=True)
