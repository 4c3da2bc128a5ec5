"""Numbers for prose, computed from the library when the site is built.

A page writes ``{{ name }}`` in its prose and the build puts the value here
in its place (see ``hooks.py``); an unknown name fails the build. Use this
for a number that prose needs but no code block on the page prints.
"""

from __future__ import annotations

import math

import qkv

D_MODEL_PAPER = 512
VOCAB_PAPER = 37_000  # shared BPE vocabulary, WMT14 English-German (section 5.1)


def _thousands(x: float) -> str:
    return f"{x:,.0f}"


VALUES: dict[str, str] = {
    "sqrt_d_model_paper": f"{math.sqrt(D_MODEL_PAPER):.2f}",
    "embedding_table_numbers_paper": _thousands(VOCAB_PAPER * D_MODEL_PAPER),
    "wavelength_first_pair": f"{qkv.pair_wavelengths(D_MODEL_PAPER)[0]:.2f}",
    "wavelength_last_pair_d16": _thousands(qkv.pair_wavelengths(16)[-1]),
    "wavelength_last_pair_d512": _thousands(qkv.pair_wavelengths(D_MODEL_PAPER)[-1]),
}
