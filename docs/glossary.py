"""The glossary's parts: the sinusoidal base the notation table names, read
from qkv when the site is built."""

from __future__ import annotations

import inspect

import qkv
from parts import value


@value("glossary_pe_base")
def glossary_pe_base() -> str:
    """The base of the sinusoidal table's frequencies: ``sinusoidal_encoding``'s default."""
    return f"{inspect.signature(qkv.sinusoidal_encoding).parameters['base'].default:,.0f}"
