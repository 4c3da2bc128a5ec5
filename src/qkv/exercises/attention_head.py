"""Exercise 2, one attention head: ``softmax`` and ``attention``.

The learner writes a numerically stable ``softmax(x, axis=-1)`` and
``attention(Q, K, V, mask=None)`` returning ``(output, weights)``; the
stretch goal ``attention_backward(Q, K, V, d_output)`` is checked against
the library's backward pass (:func:`reference_gradients`). Expected values
come from ``qkv``; wrong answers are compared with :func:`weight_variants`.

Examples
--------
>>> import numpy as np
>>> from qkv.exercises.attention_head import weight_variants
>>> q = k = np.eye(2)
>>> [keys for keys, _ in weight_variants(q, k)][:2]
[('no-scale',), ('divided-by-d_k',)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from qkv import attention_backward, attention_forward, scaled_dot_product_attention, softmax, toy
from qkv.exercises.compare import Variant, as_array, expect_close, expect_shape, fmt_row
from qkv.exercises.core import CheckFailed, CheckList, Exercise, FunctionSpec, call, call_keeping_inputs

__all__ = ["EXERCISE", "weight_variants", "reference_gradients"]

Fn = Callable[..., Any]
checks = CheckList()


def _data(
    seed: int = 2017, l_q: int = 3, l_k: int = 5, d_k: int = 4, d_v: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random Q, K, V; by default L_q, L_k, d_k and d_v all differ, to catch transposes."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(l_q, d_k)), rng.normal(size=(l_k, d_k)), rng.normal(size=(l_k, d_v))


# Every row has a key it may attend to and a key it may not.
_MASK = np.array(
    [
        [True, False, True, False],
        [False, True, True, False],
        [True, True, False, True],
        [False, False, True, True],
    ]
)


def _naive_softmax(x: np.ndarray, axis: int | None = -1) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)


def _stable_softmax(x: np.ndarray, axis: int | None = -1) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _softmax_no_keepdims(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=-1))  # (n,) broadcasts along the columns
    return e / np.sum(e, axis=-1)


def weight_variants(q: np.ndarray, k: np.ndarray, mask: np.ndarray | None = None) -> list[Variant]:
    """Attention weights as the classic mistakes compute them.

    Parameters
    ----------
    q : numpy.ndarray, shape (L_q, d_k)
    k : numpy.ndarray, shape (L_k, d_k)
    mask : numpy.ndarray of bool, shape (L_q, L_k), optional
        True = may attend.

    Returns
    -------
    list of Variant
        ``(mistake keys, wrong weights)`` pairs.
    """
    scores = q @ k.T
    root = np.sqrt(q.shape[-1])
    keep = np.ones(scores.shape, dtype=bool) if mask is None else mask

    def weights(s: np.ndarray, axis: int = -1, keep: np.ndarray = keep) -> np.ndarray:
        return softmax(np.where(keep, s, -np.inf), axis=axis)

    variants: list[Variant] = [
        (("no-scale",), weights(scores)),
        (("divided-by-d_k",), weights(scores / root**2)),
        (("multiplied-by-sqrt-d_k",), weights(scores * root)),
        (("wrong-axis",), weights(scores / root, axis=0)),
        (("wrong-axis", "no-scale"), weights(scores, axis=0)),
    ]
    if mask is not None:
        plain = softmax(scores / root)
        variants += [
            (("mask-inverted",), weights(scores / root, keep=~mask)),
            (("mask-ignored",), plain),
            (("mask-after-softmax",), plain * mask),
        ]
    else:
        variants.append((("softmax-whole-array",), _stable_softmax(scores / root, axis=None)))
    return variants


# --- softmax -----------------------------------------------------------------


def _expect_softmax(fn: Fn, x: np.ndarray, axis: int | None, variants: list[Variant]) -> None:
    args = (x.copy(),) if axis is None else (x.copy(), axis)
    out = as_array(call(fn, *args), "softmax")
    expected = softmax(x, axis=-1 if axis is None else axis)
    variants = [(("naive-softmax",), _naive_softmax(x, -1 if axis is None else axis)), *variants]
    try:
        expect_close(out, expected, "softmax(x)", variants)
    except CheckFailed as failed:
        if not failed.mistakes and out.shape == expected.shape and not np.all(np.isfinite(out)):
            raise CheckFailed(*failed.details, mistakes=("naive-softmax",)) from None
        raise


@checks.add("softmax", "softmax([1000, 1001, 1002]) = [0.0900, 0.2447, 0.6652]: no overflow")
def _softmax_large(fn: Fn) -> None:
    _expect_softmax(fn, np.array([1000.0, 1001.0, 1002.0]), None, [])


@checks.add("softmax", "softmax([-1000, -1001, -1002]) = [0.6652, 0.2447, 0.0900]: no 0 / 0")
def _softmax_small(fn: Fn) -> None:
    _expect_softmax(fn, np.array([-1000.0, -1001.0, -1002.0]), None, [])


_X3 = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [3.0, 0.0, -2.0]])
_X23 = np.array([[1.0, 2.0, 3.0], [2.0, 0.0, 0.5]])


@checks.add("softmax", "softmax(x) of a 3 x 3 array: each row sums to 1 (default axis=-1)")
def _softmax_rows(fn: Fn) -> None:
    variants = [
        (("wrong-axis",), softmax(_X3, axis=0)),
        (("softmax-whole-array",), _stable_softmax(_X3, axis=None)),
        (("missing-keepdims",), _softmax_no_keepdims(_X3)),
    ]
    _expect_softmax(fn, _X3, None, variants)


@checks.add("softmax", "softmax(x, axis=0) of a 2 x 3 array: each column sums to 1")
def _softmax_axis0(fn: Fn) -> None:
    variants = [
        (("ignored-axis",), softmax(_X23, axis=-1)),
        (("softmax-whole-array",), _stable_softmax(_X23, axis=None)),
    ]
    _expect_softmax(fn, _X23, 0, variants)


@checks.add("softmax", "softmax(x) leaves x unchanged")
def _softmax_keeps_input(fn: Fn) -> None:
    _, (x,) = call_keeping_inputs(fn, _X3)
    if not np.array_equal(x, _X3):
        raise CheckFailed(
            f"x was modified: row 0 was {fmt_row(_X3[0])}, is now {fmt_row(x[0])}",
            "subtract the maximum into a new array (z = x - x.max(...)), not with x -= ...",
        )


# --- attention ---------------------------------------------------------------


def _unpack(result: Any, l_q: int, l_k: int, d_v: int) -> tuple[np.ndarray, np.ndarray]:
    """The learner's (output, weights), checked for form and shape."""
    if isinstance(result, np.ndarray) or not isinstance(result, (tuple, list)) or len(result) != 2:
        shape = getattr(result, "shape", None)
        got = f"one array of shape {shape}" if shape is not None else type(result).__name__
        raise CheckFailed(f"attention returned {got}; return both: `return output, weights`")
    output = as_array(result[0], "attention (output)")
    weights = as_array(result[1], "attention (weights)")
    if output.shape == (l_q, l_k) and weights.shape == (l_q, d_v) and l_k != d_v:
        raise CheckFailed("attention returned (weights, output): return output first, then weights")
    expect_shape(output, (l_q, d_v), "output")
    expect_shape(weights, (l_q, l_k), "weights")
    return output, weights


def _expect_attention(fn: Fn, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any = None) -> None:
    args = (q.copy(), k.copy(), v.copy()) + (() if mask is None else (mask.copy(),))
    output, weights = _unpack(call(fn, *args), q.shape[0], k.shape[0], v.shape[1])
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, mask)
    variants = weight_variants(q, k, mask)
    expect_close(weights, ref_w, "weights", variants)
    expect_close(output, ref_out, "output", [(keys, w @ v) for keys, w in variants])


@checks.add("attention", "attention(Q, K, V) returns (output, weights) of shapes (3, 2) and (3, 5)")
def _attention_shapes(fn: Fn) -> None:
    q, k, v = _data()
    _unpack(call(fn, q, k, v), 3, 5, 2)


@checks.add("attention", "weights = softmax(Q @ K.T / sqrt(d_k)) row by row; output = weights @ V")
def _attention_values(fn: Fn) -> None:
    _expect_attention(fn, *_data())


@checks.add(
    "attention",
    "bank example: 'bank' attends [0.6652, 0.0900, 0.2447] and becomes [1.5752, 0, 0.1801, 0.2447]",
)
def _attention_bank(fn: Fn) -> None:
    x = toy.bank_sentence(["money", "bank", "grows"])
    _expect_attention(fn, x @ toy.W_QUERY, x @ toy.W_KEY, x @ toy.W_VALUE)


@checks.add("attention", "attention(Q, K, V, mask): mask False gives weight 0, rows still sum to 1")
def _attention_mask(fn: Fn) -> None:
    _expect_attention(fn, *_data(seed=512, l_q=4, l_k=4), _MASK)


@checks.add("attention", "attention(Q, K, V) leaves Q, K and V unchanged")
def _attention_keeps_inputs(fn: Fn) -> None:
    inputs = _data()
    _, after = call_keeping_inputs(fn, *inputs)
    for name, before, now in zip("QKV", inputs, after):
        if not np.array_equal(before, now):
            row = int(np.argwhere(before != now)[0][0])
            raise CheckFailed(
                f"{name} was modified: row {row} was {fmt_row(before[row])}, is now {fmt_row(now[row])}; "
                "expected the inputs unchanged",
                mistakes=("mutated-input",),
            )


@checks.add("attention", "attention(1000 * Q, K, V) stays finite: large scores don't overflow")
def _attention_large(fn: Fn) -> None:
    q, k, v = _data()
    output, weights = _unpack(call(fn, 1000 * q, k, v), 3, 5, 2)
    if not (np.all(np.isfinite(output)) and np.all(np.isfinite(weights))):
        raise CheckFailed(
            "the output or the weights contain nan or inf for scores in the thousands",
            mistakes=("naive-softmax",),
        )
    ref_out, ref_w = scaled_dot_product_attention(1000 * q, k, v)
    variants = weight_variants(1000 * q, k)
    expect_close(weights, ref_w, "weights", variants)
    expect_close(output, ref_out, "output", [(keys, w @ v) for keys, w in variants])


# --- attention_backward (stretch) --------------------------------------------


def reference_gradients(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, d_output: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dQ, dK, dV of ``sum(attention(q, k, v)[0] * d_output)``, from ``qkv.attention_backward``.

    The library's head takes projections of one input, ``Q = X @ W_query``
    (and K, V alike), and returns the gradients of the projections. With
    ``X`` the identity, the projections are Q, K and V themselves and
    ``dW_query = X.T @ dQ = dQ``. Self-attention has as many queries as
    keys, so the L_k - L_q missing queries are rows of zeros whose
    ``d_output`` is zero: they change nothing in dK and dV.

    Parameters
    ----------
    q : numpy.ndarray, shape (L_q, d_k)
    k : numpy.ndarray, shape (L_k, d_k), with L_k >= L_q
    v : numpy.ndarray, shape (L_k, d_v)
    d_output : numpy.ndarray, shape (L_q, d_v)

    Returns
    -------
    dq, dk, dv : numpy.ndarray
        Shaped like ``q``, ``k``, ``v``.

    Examples
    --------
    >>> import numpy as np
    >>> q = k = np.eye(2); v = np.array([[1.0], [3.0]])
    >>> dq, dk, dv = reference_gradients(q, k, v, np.ones((2, 1)))
    >>> dv.round(4).tolist()      # each value row's total weight
    [[1.0], [1.0]]
    """
    l_q, l_k = q.shape[0], k.shape[0]
    if l_q > l_k:
        raise ValueError(f"q has {l_q} rows, more than k's {l_k}: pass at most as many queries as keys")
    padded_q = np.vstack([q, np.zeros((l_k - l_q, q.shape[1]))])  # (L_k, d_k)
    padded_d_output = np.vstack([d_output, np.zeros((l_k - l_q, d_output.shape[1]))])  # (L_k, d_v)
    _, cache = attention_forward(np.eye(l_k), padded_q, k, v)  # X = I: (L_k, L_k) @ (L_k, d) -> (L_k, d)
    dq, dk, dv = attention_backward(cache, padded_d_output)
    return dq[:l_q], dk, dv


def _backward_data() -> tuple[np.ndarray, ...]:
    q, k, v = _data(seed=1706)
    d_output = np.random.default_rng(3).normal(size=(3, 2))
    return q, k, v, d_output


def _backward(fn: Fn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v, d_output = _backward_data()
    result = call(fn, q.copy(), k.copy(), v.copy(), d_output.copy())
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise CheckFailed(f"attention_backward returned {type(result).__name__}; return dQ, dK, dV")
    grads = tuple(as_array(g, f"attention_backward ({n})") for g, n in zip(result, ("dQ", "dK", "dV")))
    for grad, ref, name in zip(grads, (q, k, v), ("dQ", "dK", "dV")):
        expect_shape(grad, ref.shape, name)
    return grads  # type: ignore[return-value]


@checks.add(
    "attention_backward",
    "attention_backward(Q, K, V, d_output) returns dQ, dK, dV shaped like Q, K, V",
)
def _backward_shapes(fn: Fn) -> None:
    _backward(fn)


def _expect_gradient(fn: Fn, which: int, name: str) -> None:
    grads = _backward(fn)
    expected = reference_gradients(*_backward_data())[which]
    expect_close(grads[which], expected, name, note="expected values: the chain rule, qkv.attention_backward")


@checks.add("attention_backward", "dQ matches the chain rule (qkv.attention_backward)")
def _backward_dq(fn: Fn) -> None:
    _expect_gradient(fn, 0, "dQ")


@checks.add("attention_backward", "dK matches the chain rule (qkv.attention_backward)")
def _backward_dk(fn: Fn) -> None:
    _expect_gradient(fn, 1, "dK")


@checks.add("attention_backward", "dV matches the chain rule (qkv.attention_backward)")
def _backward_dv(fn: Fn) -> None:
    _expect_gradient(fn, 2, "dV")


EXERCISE = Exercise(
    name="attention-head",
    number=2,
    title="one attention head (softmax, scaled dot-product attention)",
    functions=(
        FunctionSpec("softmax", "softmax(x, axis=-1)"),
        FunctionSpec("attention", "attention(Q, K, V, mask=None)"),
        FunctionSpec("attention_backward", "attention_backward(Q, K, V, d_output)", optional=True),
    ),
    checks=tuple(checks),
    starter="attention_head.py",
)
