"""The classic mistakes the checker recognises, in plain words.

A check recognises a mistake by comparing the learner's output with the
output a known-wrong implementation gives on the same input (see
``qkv.exercises.input_layer.pe_variant`` for the positional-encoding
variants). This module only holds the words: what the mistake is called
and how to fix it.

Examples
--------
>>> from qkv.exercises.mistakes import MISTAKES
>>> MISTAKES["sin-cos-swapped"].name
'sin and cos swapped'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mistake", "MISTAKES", "describe"]


@dataclass(frozen=True)
class Mistake:
    """One recognisable mistake.

    Parameters
    ----------
    key : str
        Stable identifier, e.g. ``"positions-from-1"`` (used by tests).
    name : str
        What the mistake is, in plain words.
    fix : str
        What the correct code does instead.
    """

    key: str
    name: str
    fix: str


_ALL = (
    # --- exercise 1: the input layer (the curriculum's classic mistakes) ---
    Mistake(
        "sin-cos-swapped",
        "sin and cos swapped",
        "even dimensions 2i take sin and odd dimensions 2i+1 take cos: "
        "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))",
    ),
    Mistake(
        "exponent-i-over-d",
        "exponent i/d instead of 2i/d",
        "i is the pair index 0 .. d/2-1 and the exponent is 2i/d_model, so the "
        "frequencies run from 1 down to about 1/10000; with i/d they stop near 1/100",
    ),
    Mistake(
        "dimension-index-exponent",
        "the dimension index in the exponent",
        "both dimensions of a pair share one angle: columns 2i and 2i+1 both use "
        "pos / 10000^(2i/d); writing the column number j (0 .. d-1) in the exponent "
        "gives every cos column its own, slower frequency",
    ),
    Mistake(
        "positions-from-1",
        "positions counted from 1",
        "the first token is position 0, so row 0 is [sin 0, cos 0, ...] = [0, 1, 0, 1, ...]; use np.arange(seq_len)",
    ),
    Mistake(
        "halves-layout",
        "all sines then all cosines (the halves layout)",
        "the paper interleaves: column 2i is sin and column 2i+1 is cos of the same angle. "
        "Sines in the first half and cosines in the second is a permutation of the "
        "columns that some libraries use, not the paper's layout",
    ),
    Mistake(
        "concatenated",
        "concatenated instead of added",
        "the position vector is added to the token vector, Z = E[ids] + PE[:L], which "
        "keeps the width d_model; concatenating doubles it to 2 * d_model",
    ),
    Mistake(
        "mutated-E",
        "modified E in place",
        "E is the model's embedding table, shared by every sentence: build a new array "
        "(x = E[ids] + pe) instead of writing into E (E[ids] += ..., E += ...)",
    ),
    Mistake(
        "mutated-input",
        "modified an input array in place",
        "the caller's Q, K and V are its own: compute into new arrays (K = K / np.sqrt(d_k), "
        "x = x - x.max(...)) instead of writing into the inputs (K /= ..., x -= ...)",
    ),
    # --- exercise 1: further slips worth naming ---
    Mistake(
        "transposed",
        "the result is transposed",
        "one row per token (or per position), one column per feature: shape (L, ...)",
    ),
    Mistake(
        "forgot-pe",
        "no positional encoding added",
        "build_input returns E[ids] + PE[:L]; without PE the model cannot tell word order",
    ),
    Mistake(
        "sqrt-d-scaling",
        "embeddings multiplied by sqrt(d_model)",
        "the paper does scale the embeddings by sqrt(d_model), but this exercise asks "
        "for the plain sum E[ids] + PE[:L]",
    ),
    Mistake(
        "pe-by-token-id",
        "positional table indexed by token id",
        "position vectors are chosen by position (rows 0 .. L-1), not by which token sits there",
    ),
    Mistake(
        "ignored-pe",
        "the learned table pe was ignored",
        "when pe is given, use its first L rows instead of the sinusoidal table",
    ),
    # --- exercise 2: one attention head ---
    Mistake(
        "naive-softmax",
        "naive softmax overflows",
        "exp(1000) is inf in float64 and inf / inf is nan (and exp(-1000) is 0, so 0 / 0); "
        "subtract each row's maximum before exp: the result is mathematically the same",
    ),
    Mistake(
        "no-scale",
        "forgot the sqrt(d_k) scale",
        "divide the scores Q @ K.T by sqrt(d_k) before the softmax; unscaled scores grow "
        "with d_k and saturate the softmax",
    ),
    Mistake(
        "divided-by-d_k",
        "divided by d_k instead of sqrt(d_k)",
        "the scale is 1 / sqrt(d_k): with unit-variance inputs it brings the scores back to variance 1",
    ),
    Mistake(
        "multiplied-by-sqrt-d_k",
        "multiplied by sqrt(d_k) instead of dividing",
        "scores = Q @ K.T / sqrt(d_k)",
    ),
    Mistake(
        "wrong-axis",
        "softmax over the wrong axis",
        "each query's weights (one row) must sum to 1: take the softmax over the last "
        "axis, axis=-1 (the keys), not over axis 0",
    ),
    Mistake(
        "softmax-whole-array",
        "softmax over the whole array",
        "normalise each slice along `axis` separately: np.max(x, axis=axis, keepdims=True) "
        "and np.sum(..., axis=axis, keepdims=True)",
    ),
    Mistake(
        "ignored-axis",
        "the axis argument is ignored",
        "pass `axis` on to np.max and np.sum",
    ),
    Mistake(
        "missing-keepdims",
        "max or sum taken without keepdims=True",
        "without keepdims the row maxima and row sums broadcast along the columns; "
        "use np.max(x, axis=axis, keepdims=True) and np.sum(..., axis=axis, keepdims=True)",
    ),
    Mistake(
        "mask-inverted",
        "mask inverted",
        "True means 'may attend': block the scores where mask is False, e.g. np.where(mask, scores, -np.inf)",
    ),
    Mistake(
        "mask-ignored",
        "mask ignored",
        "where mask is False the score must become -inf (weight exactly 0) before the softmax",
    ),
    Mistake(
        "mask-after-softmax",
        "mask applied after the softmax",
        "zeroing weights after the softmax leaves rows that no longer sum to 1; mask the scores before the softmax",
    ),
    # --- exercise 3: the softmax as a window query ---
    Mistake(
        "sql-window-order-by",
        "ORDER BY inside the window: a running sum",
        "with ORDER BY the default frame ends at the current row (RANGE BETWEEN UNBOUNDED "
        "PRECEDING AND CURRENT ROW); the row's total is SUM(...) OVER (PARTITION BY qpos) with no ORDER BY",
    ),
    Mistake(
        "sql-no-partition",
        "the window has no PARTITION BY qpos",
        "OVER () spans every query's scores; each query's softmax is its own partition: OVER (PARTITION BY qpos)",
    ),
    Mistake(
        "sql-no-max",
        "exp(score) without subtracting the maximum",
        "exp overflows to inf for large scores and inf / inf is NULL; use "
        "exp(score - MAX(score) OVER (PARTITION BY qpos))",
    ),
    Mistake(
        "sql-global-max",
        "the maximum of all scores subtracted instead of each query's",
        "a query whose scores are far below the global maximum gets exp(...) = 0 for every key "
        "and 0 / 0 is NULL; subtract MAX(score) OVER (PARTITION BY qpos)",
    ),
    Mistake(
        "sql-shift-below-max",
        "each query's scores shifted by something below their maximum (the average, the minimum, "
        "the first or last score)",
        "any shift gives the same weights on paper, but only the maximum keeps every exponent "
        "<= 0; a shift more than about 709 below it leaves exp(...) = inf and inf / inf is NULL: "
        "subtract MAX(score) OVER (PARTITION BY qpos)",
    ),
)

MISTAKES: dict[str, Mistake] = {m.key: m for m in _ALL}


def describe(key: str) -> str:
    """One line naming the mistake ``key`` and its fix.

    Parameters
    ----------
    key : str
        A key of ``MISTAKES``.

    Returns
    -------
    str
        ``"classic mistake: <name>. Fix: <fix>"``.

    Examples
    --------
    >>> describe("positions-from-1")[:44]
    'classic mistake: positions counted from 1. F'
    """
    mistake = MISTAKES[key]
    return f"classic mistake: {mistake.name}. Fix: {mistake.fix}"
