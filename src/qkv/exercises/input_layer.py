"""Exercise 1, the input layer: token ids -> vectors, plus positions.

The learner writes ``one_hot``, ``embed``, ``sinusoidal_pe`` and
``build_input``. Expected values come from the reference implementations
in ``qkv.embeddings`` and ``qkv.positional``; wrong answers are compared
with :func:`pe_variant`, which reproduces the classic positional-encoding
mistakes one flag at a time.

Examples
--------
>>> from qkv.exercises.input_layer import pe_variant
>>> pe_variant(2, 4).round(4).tolist()[1]         # the paper's layout
[0.8415, 0.5403, 0.01, 1.0]
>>> pe_variant(2, 4, halves=True).round(4).tolist()[1]
[0.8415, 0.01, 0.5403, 1.0]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from qkv import toy
from qkv.embeddings import embed as reference_embed
from qkv.embeddings import one_hot as reference_one_hot
from qkv.exercises.compare import Variant, as_array, expect_close, expect_shape, fmt_row
from qkv.exercises.core import (
    CheckFailed,
    CheckList,
    Exercise,
    FunctionSpec,
    LearnerRaised,
    call,
    call_keeping_inputs,
)
from qkv.positional import sinusoidal_encoding

__all__ = ["EXERCISE", "pe_variant", "pe_variants"]

WORDS = ("king", "cat", "king", "car", "apple")  # a repeated token on purpose
_VOCAB_SIZE = len(toy.VOCAB)  # 15
_D = toy.EMBEDDINGS.shape[1]  # 4


def _ids() -> np.ndarray:
    return toy.token_ids(WORDS)  # [12, 0, 12, 8, 4], a fresh array each time


def _table() -> np.ndarray:
    return np.array(toy.EMBEDDINGS)  # a fresh, writeable copy of the toy table


def _learned_table(max_len: int = 16) -> np.ndarray:
    return np.random.default_rng(1706).normal(0.0, 0.5, size=(max_len, _D))


def pe_variant(
    seq_len: int,
    d_model: int,
    *,
    swapped: bool = False,
    exponent: str = "2i",
    first_position: int = 0,
    halves: bool = False,
) -> np.ndarray:
    """A sinusoidal table, right or with chosen classic mistakes.

    Parameters
    ----------
    seq_len, d_model : int
        Table shape; ``d_model`` even.
    swapped : bool
        Put cos where sin belongs and sin where cos belongs.
    exponent : {"2i", "i", "j"}
        ``"2i"``: the paper's ``10000^(2i/d)`` with ``i`` the pair index;
        ``"i"``: ``10000^(i/d)``; ``"j"``: ``10000^(j/d)`` with ``j`` the
        column (dimension) index, for sin and cos columns alike.
    first_position : int
        Row 0's position: 0 is right, 1 is the off-by-one.
    halves : bool
        All sines in the first half of the columns, all cosines in the second.

    Returns
    -------
    numpy.ndarray, shape (seq_len, d_model)
    """
    half = d_model // 2
    i = np.arange(half)  # pair index
    sin_cols, cos_cols = (i, half + i) if halves else (2 * i, 2 * i + 1)

    def exponents(cols: np.ndarray) -> np.ndarray:
        return {"2i": 2 * i / d_model, "i": i / d_model, "j": cols / d_model}[exponent]

    pos = np.arange(first_position, first_position + seq_len)[:, None]
    first, second = (np.cos, np.sin) if swapped else (np.sin, np.cos)
    table = np.empty((seq_len, d_model))
    table[:, sin_cols] = first(pos / 10000.0 ** exponents(sin_cols))
    table[:, cos_cols] = second(pos / 10000.0 ** exponents(cos_cols))
    return table


def pe_variants(seq_len: int, d_model: int) -> list[Variant]:
    """Every wrong combination of the classic mistakes, fewest mistakes first.

    Examples
    --------
    >>> variants = pe_variants(4, 6)
    >>> len(variants), variants[0][0]
    (23, ('halves-layout',))
    """
    flags = itertools.product((False, True), ("2i", "i", "j"), (0, 1), (False, True))
    variants: list[Variant] = []
    for swapped, exponent, first, halves in flags:
        keys = tuple(
            key
            for key, on in (
                ("sin-cos-swapped", swapped),
                ("exponent-i-over-d", exponent == "i"),
                ("dimension-index-exponent", exponent == "j"),
                ("positions-from-1", first == 1),
                ("halves-layout", halves),
            )
            if on
        )
        if keys:
            table = pe_variant(
                seq_len, d_model, swapped=swapped, exponent=exponent, first_position=first, halves=halves
            )
            variants.append((keys, table))
    return sorted(variants, key=lambda v: len(v[0]))


checks = CheckList()
Fn = Callable[..., Any]

# --- one_hot -----------------------------------------------------------------


@checks.add("one_hot", f"one_hot({_ids().tolist()}, 15) has shape (5, 15): one row per token")
def _one_hot_shape(fn: Fn) -> None:
    out = as_array(call(fn, _ids(), _VOCAB_SIZE), "one_hot")
    expect_shape(out, (5, _VOCAB_SIZE), "one_hot(token_ids, 15)")


@checks.add("one_hot", "one_hot rows are all 0 except a 1 in the token's column")
def _one_hot_values(fn: Fn) -> None:
    out = as_array(call(fn, _ids(), _VOCAB_SIZE), "one_hot")
    expect_close(out, reference_one_hot(_ids(), _VOCAB_SIZE), "one_hot")


@checks.add("one_hot", "one_hot(ids, 15) @ E equals E[ids]: the lookup is a matrix product")
def _one_hot_product(fn: Fn) -> None:
    out = as_array(call(fn, _ids(), _VOCAB_SIZE), "one_hot")
    expect_shape(out, (5, _VOCAB_SIZE), "one_hot(token_ids, 15)")
    expect_close(out @ _table(), reference_embed(_ids(), toy.EMBEDDINGS), "one_hot(ids, 15) @ E")


# --- embed -------------------------------------------------------------------


@checks.add("embed", "embed(ids, E) has shape (L, d) = (5, 4) for the toy table E (15 x 4)")
def _embed_shape(fn: Fn) -> None:
    out = as_array(call(fn, _ids(), _table()), "embed")
    expect_shape(out, (5, _D), "embed(token_ids, E)")


@checks.add("embed", "embed(ids, E) row j is E[ids[j]] (king, cat, king, car, apple)")
def _embed_values(fn: Fn) -> None:
    out = as_array(call(fn, _ids(), _table()), "embed")
    expect_close(out, reference_embed(_ids(), toy.EMBEDDINGS), "embed(ids, E)")


# --- sinusoidal_pe -----------------------------------------------------------


@checks.add("sinusoidal_pe", "sinusoidal_pe(4, 6) has shape (seq_len, d_model) = (4, 6)")
def _pe_shape(fn: Fn) -> None:
    out = as_array(call(fn, 4, 6), "sinusoidal_pe")
    expect_shape(out, (4, 6), "sinusoidal_pe(4, 6)")


def _expect_pe(fn: Fn, seq_len: int, d_model: int) -> None:
    out = as_array(call(fn, seq_len, d_model), "sinusoidal_pe")
    expect_close(
        out,
        sinusoidal_encoding(seq_len, d_model),
        "PE",
        pe_variants(seq_len, d_model),
        note="PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same angle), pos = 0, 1, ...",
    )


@checks.add("sinusoidal_pe", "sinusoidal_pe(4, 6) matches the worked example (row 1 starts 0.8415, 0.5403)")
def _pe_small(fn: Fn) -> None:
    _expect_pe(fn, 4, 6)


@checks.add("sinusoidal_pe", "sinusoidal_pe(60, 512) matches the formula in every column")
def _pe_large(fn: Fn) -> None:
    _expect_pe(fn, 60, 512)


@checks.add("sinusoidal_pe", "sinusoidal_pe(3, 5) raises ValueError: d_model must be even")
def _pe_odd(fn: Fn) -> None:
    try:
        out = call(fn, 3, 5)
    except LearnerRaised as raised:
        if not raised.is_a("ValueError"):
            raise CheckFailed(f"expected ValueError for odd d_model=5, but it {raised.describe()}") from None
        if "broadcast" in raised.message:
            raise CheckFailed(
                f"the ValueError came from NumPy ({raised.message}), not from a check of d_model",
                "check first: if d_model % 2 != 0: raise ValueError(...)",
            ) from None
        return
    shape = getattr(out, "shape", None)
    raise CheckFailed(
        f"expected ValueError for odd d_model=5 (dimensions come in sin/cos pairs), "
        f"but it returned {type(out).__name__}" + (f" of shape {shape}" if shape is not None else "")
    )


# --- build_input -------------------------------------------------------------


def _build_variants(ids: np.ndarray, pe: np.ndarray) -> list[Variant]:
    x = reference_embed(ids, toy.EMBEDDINGS)
    seq_len = len(ids)
    return [
        (("concatenated",), np.concatenate([x, pe[:seq_len]], axis=1)),
        (("concatenated",), np.concatenate([pe[:seq_len], x], axis=1)),
        (("forgot-pe",), x),
        (("sqrt-d-scaling",), x * np.sqrt(_D) + pe[:seq_len]),
    ]


@checks.add("build_input", "build_input(ids, E) has shape (L, d_model) = (5, 4): add, don't concatenate")
def _build_shape(fn: Fn) -> None:
    out = as_array(call(fn, _ids(), _table()), "build_input")
    variants = _build_variants(_ids(), sinusoidal_encoding(5, _D))
    try:
        expect_shape(out, (5, _D), "build_input(ids, E)", variants)
    except CheckFailed as failed:
        if not failed.mistakes and out.shape == (5, 2 * _D):
            raise CheckFailed(*failed.details, mistakes=("concatenated",)) from None
        raise


@checks.add("build_input", "build_input(ids, E) equals E[ids] + PE[:L] (sinusoidal, d_model = 4)")
def _build_values(fn: Fn) -> None:
    ids = _ids()
    out = as_array(call(fn, ids, _table()), "build_input")
    x = reference_embed(ids, toy.EMBEDDINGS)
    variants = _build_variants(ids, sinusoidal_encoding(5, _D))
    variants += [(keys, x + wrong) for keys, wrong in pe_variants(5, _D)]
    variants.append((("pe-by-token-id",), x + sinusoidal_encoding(_VOCAB_SIZE, _D)[ids]))
    written = _table()
    written[ids] += sinusoidal_encoding(5, _D)  # what `E[ids] += pe; return E[ids]` gives
    variants.append((("mutated-E",), written[ids]))
    expect_close(out, x + sinusoidal_encoding(5, _D), "build_input(ids, E)", variants)


def _expect_unchanged(name: str, before: np.ndarray, after: np.ndarray, mistakes: tuple[str, ...]) -> None:
    if np.array_equal(before, after):
        return
    row = int(np.argwhere(before != after)[0][0])
    raise CheckFailed(
        f"{name} was modified: row {row} was {fmt_row(before[row])}, is now {fmt_row(after[row])}",
        mistakes=mistakes,
    )


@checks.add("build_input", "build_input(ids, E) leaves E unchanged")
def _build_keeps_table(fn: Fn) -> None:
    _, (_, table) = call_keeping_inputs(fn, _ids(), _table())
    _expect_unchanged("E", toy.EMBEDDINGS, table, ("mutated-E",))


@checks.add("build_input", "build_input(ids, E, pe) uses rows 0 .. L-1 of a learned table pe (16 x 4)")
def _build_learned(fn: Fn) -> None:
    ids = _ids()
    result, (_, table, learned) = call_keeping_inputs(fn, ids, _table(), _learned_table())
    out = as_array(result, "build_input")
    _expect_unchanged("E", toy.EMBEDDINGS, table, ("mutated-E",))
    _expect_unchanged("pe", _learned_table(), learned, ())
    learned = _learned_table()
    x = reference_embed(ids, toy.EMBEDDINGS)
    variants = _build_variants(ids, learned) + [
        (("ignored-pe",), x + sinusoidal_encoding(5, _D)),
        (("pe-by-token-id",), x + learned[ids]),
    ]
    expect_close(out, x + learned[:5], "build_input(ids, E, pe)", variants)


EXERCISE = Exercise(
    name="input-layer",
    number=1,
    title="the input layer (token ids -> vectors + positions)",
    functions=(
        FunctionSpec("one_hot", "one_hot(token_ids, vocab_size)"),
        FunctionSpec("embed", "embed(token_ids, E)"),
        FunctionSpec("sinusoidal_pe", "sinusoidal_pe(seq_len, d_model)"),
        FunctionSpec("build_input", "build_input(token_ids, E, pe=None)"),
    ),
    checks=tuple(checks),
    starter="input_layer.py",
)
