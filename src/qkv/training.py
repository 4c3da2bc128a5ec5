"""Learning W_query, W_key, W_value of one attention head by gradient descent.

The hand-picked matrices of ``qkv.toy`` show *what* attention can do; this
module shows *how* a model finds such matrices: start from random ones,
measure how wrong the output is, and nudge every matrix entry downhill.

The pieces, in the order a training step uses them:

1. ``attention_forward``: ``Q = X Wq``, ``K = X Wk``, ``V = X Wv``,
   ``S = Q K^T / sqrt(d_k)``, ``A = softmax(S)``, ``out = A V``; it keeps the
   intermediates that the backward pass needs (the arithmetic is
   ``qkv.attention``'s private core, the same one ``self_attention`` uses);
2. ``mse_loss``: one number for "how wrong", and its gradient;
3. ``attention_backward``: the chain rule, by hand, from the output back to
   the three projection matrices;
4. ``train``: repeat, ``W <- W - learning_rate * dW``.

The toy task (``bank_sense_task``): in "money bank grows" and "river bank
flows" the word "bank" has one static vector. The head must learn to make
bank's *output* row finance-heavy next to "money" and nature-heavy next to
"river", whatever the verb ("money bank flows" is still about money).

Row-vector convention, as in ``qkv.attention``: one token per row.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from qkv import toy
from qkv._checks import (
    as_finite_float_array,
    check_array_bytes,
    check_min_ndim,
    check_ndim,
    check_positive_int,
    check_real_number,
    check_seed,
)
from qkv.attention import _attend, _project

__all__ = [
    "ForwardCache",
    "attention_forward",
    "attention_backward",
    "mse_loss",
    "init_projections",
    "BankSenseTask",
    "bank_sense_task",
    "TrainResult",
    "train",
    "noun_and_verb_task",
    "MultiHeadTrainResult",
    "multi_head_forward",
    "packed_weights",
    "train_heads",
]


class ForwardCache(NamedTuple):
    """What ``attention_backward`` needs from the forward pass.

    Shapes: ``x`` (..., L, d_model); ``query``, ``key`` (..., L, d_k);
    ``value`` (..., L, d_v); ``weights`` (..., L, L); ``output`` (..., L, d_v).
    """

    x: np.ndarray
    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    scale: float


def _projection(w: Any, name: str, d_model: int, shape_text: str) -> np.ndarray:
    arr = as_finite_float_array(w, name)
    check_ndim(arr, name, 2, shape_text)
    if arr.shape[0] != d_model or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must have shape {shape_text} with d_model={d_model} rows and at least "
            f"one column, got shape {arr.shape}"
        )
    return arr


def attention_forward(
    x: Any, w_query: Any, w_key: Any, w_value: Any, *, scale: float | None = None
) -> tuple[np.ndarray, ForwardCache]:
    """One attention head, forward, keeping what the backward pass needs.

    Parameters
    ----------
    x : array_like, shape (..., L, d_model)
        Input rows; leading dimensions are a batch of sentences.
    w_query, w_key : array_like, shape (d_model, d_k)
        Query and key projections.
    w_value : array_like, shape (d_model, d_v)
        Value projection.
    scale : float, optional
        Multiplies the scores; defaults to ``1 / sqrt(d_k)``, the paper's.
        ``scale=1.0`` gives the unscaled head (``attention_backward`` uses
        the scale kept in the cache).

    Returns
    -------
    output : numpy.ndarray, shape (..., L, d_v)
        ``softmax(Q K^T * scale) V``, the same as ``qkv.self_attention``.
    cache : ForwardCache
        The input, Q, K, V, the attention weights, the output and the scale.

    Raises
    ------
    TypeError
        If an input is not numeric, or ``scale`` is not a real number.
    ValueError
        If an input or ``scale`` holds NaN/inf, an input has the wrong shape (the message names
        the argument and the expected shape), the (..., L, L) scores would
        exceed ``qkv._checks.MAX_ARRAY_BYTES``, or a projection, a score or
        the output overflows float64 (the message names ``x`` and the
        projection).

    Notes
    -----
    ``L = 0`` (an empty sentence) is allowed: the output has shape
    (..., 0, d_v), the weights (..., 0, 0), and ``attention_backward`` then
    returns gradients of zeros (a sum over no rows).

    Examples
    --------
    >>> from qkv import toy
    >>> from qkv.training import attention_forward
    >>> x = toy.bank_sentence(["money", "bank", "grows"])
    >>> out, cache = attention_forward(x, toy.W_QUERY, toy.W_KEY, toy.W_VALUE)
    >>> cache.weights[1].round(4).tolist()
    [0.6652, 0.09, 0.2447]
    >>> out[1].round(4).tolist()
    [1.5752, 0.0, 0.1801, 0.2447]
    >>> _, unscaled = attention_forward(x, toy.W_QUERY, toy.W_KEY, toy.W_VALUE, scale=1.0)
    >>> unscaled.weights[1].round(4).tolist()
    [0.8668, 0.0159, 0.1173]
    """
    x = as_finite_float_array(x, "x")
    check_min_ndim(x, "x", 2, "(..., L, d_model)")
    d_model = x.shape[-1]
    w_query = _projection(w_query, "w_query", d_model, "(d_model, d_k)")
    w_key = _projection(w_key, "w_key", d_model, "(d_model, d_k)")
    w_value = _projection(w_value, "w_value", d_model, "(d_model, d_v)")
    if w_query.shape[1] != w_key.shape[1]:
        raise ValueError(
            f"w_query and w_key must have the same number of columns d_k, got {w_query.shape} and {w_key.shape}"
        )
    if scale is None:
        scale = 1.0 / np.sqrt(w_query.shape[1])
    else:
        scale = check_real_number(scale, "scale")
    query = _project(x, w_query, "w_query")  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
    key = _project(x, w_key, "w_key")  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
    value = _project(x, w_value, "w_value")  # (..., L, d_model) @ (d_model, d_v) -> (..., L, d_v)
    # qkv.attention's core: weights (..., L, L) with rows summing to 1, output (..., L, d_v)
    output, weights = _attend(query, key, value, None, scale, names=("x @ w_query", "x @ w_key", "x @ w_value"))
    return output, ForwardCache(x, query, key, value, weights, output, scale)


def attention_backward(cache: ForwardCache, d_output: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of a loss with respect to ``w_query``, ``w_key``, ``w_value``.

    The chain rule, one step of the forward pass at a time, backwards:

    * ``output = A @ V``: ``dA = dout @ V^T`` and ``dV = A^T @ dout``;
    * ``A = softmax(S)`` row by row: ``dS = A * (dA - sum(dA * A, row))``;
    * ``S = scale * Q @ K^T``: ``dQ = scale * dS @ K``, ``dK = scale * dS^T @ Q``;
    * ``Q = X @ Wq`` (and K, V alike): ``dWq = X^T @ dQ``, summed over the batch.

    Parameters
    ----------
    cache : ForwardCache
        From ``attention_forward``.
    d_output : array_like, shape (..., L, d_v)
        Gradient of the loss with respect to the output (same shape as it).

    Returns
    -------
    d_w_query, d_w_key : numpy.ndarray, shape (d_model, d_k)
    d_w_value : numpy.ndarray, shape (d_model, d_v)

    Raises
    ------
    TypeError
        If ``cache`` is not a ``ForwardCache`` or ``d_output`` is not numeric.
    ValueError
        If ``d_output`` holds NaN/inf or its shape differs from the output's.

    Examples
    --------
    >>> import numpy as np
    >>> from qkv import toy
    >>> from qkv.training import attention_backward, attention_forward
    >>> x = toy.bank_sentence(["money", "bank", "grows"])
    >>> out, cache = attention_forward(x, toy.W_QUERY, toy.W_KEY, toy.W_VALUE)
    >>> d_out = np.zeros_like(out)
    >>> d_out[1, 0] = 1.0          # how does bank's finance feature change?
    >>> d_wq, d_wk, d_wv = attention_backward(cache, d_out)
    >>> d_wq.shape, d_wk.shape, d_wv.shape
    ((4, 4), (4, 4), (4, 4))
    >>> d_wq[2].round(4).tolist()  # bank's query row: more finance, more weight on money
    [0.4244, 0.0, -0.1408, -0.2836]
    """
    if not isinstance(cache, ForwardCache):
        raise TypeError(f"cache must be the ForwardCache returned by attention_forward, got {type(cache).__name__}")
    d_output = as_finite_float_array(d_output, "d_output")
    if d_output.shape != cache.output.shape:
        raise ValueError(
            f"d_output must have the output's shape (..., L, d_v) = {cache.output.shape}, got shape {d_output.shape}"
        )
    x, query, key, value, weights, _, scale = cache
    # output = weights @ value
    d_weights = d_output @ np.swapaxes(value, -1, -2)  # (..., L, d_v) @ (..., d_v, L) -> (..., L, L)
    d_value = np.swapaxes(weights, -1, -2) @ d_output  # (..., L, L) @ (..., L, d_v) -> (..., L, d_v)
    # weights = softmax(scores), row-wise Jacobian diag(a) - a a^T applied to each row
    d_scores = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
    # scores = scale * query @ key^T
    d_query = scale * d_scores @ key  # (..., L, L) @ (..., L, d_k) -> (..., L, d_k)
    d_key = scale * np.swapaxes(d_scores, -1, -2) @ query  # (..., L, L) @ (..., L, d_k) -> (..., L, d_k)
    # query = x @ w_query etc.: stack the batch's rows, then (d_model, rows) @ (rows, d_k)
    rows = x.reshape(-1, x.shape[-1])  # (N * L, d_model)

    def through_projection(d_projected: np.ndarray) -> np.ndarray:
        return rows.T @ d_projected.reshape(-1, d_projected.shape[-1])

    return through_projection(d_query), through_projection(d_key), through_projection(d_value)


def mse_loss(prediction: Any, target: Any) -> tuple[float, np.ndarray]:
    """Mean squared error and its gradient with respect to ``prediction``.

    Parameters
    ----------
    prediction, target : array_like, same shape (at least one entry)

    Returns
    -------
    loss : float
        ``mean((prediction - target) ** 2)``.
    d_prediction : numpy.ndarray, shape of ``prediction``
        ``2 * (prediction - target) / prediction.size``.

    Raises
    ------
    TypeError
        If an input is not numeric.
    ValueError
        If an input holds NaN/inf, is empty, or the shapes differ.

    Examples
    --------
    >>> from qkv.training import mse_loss
    >>> loss, grad = mse_loss([1.0, 3.0], [0.0, 0.0])
    >>> loss, grad.tolist()
    (5.0, [1.0, 3.0])
    """
    prediction = as_finite_float_array(prediction, "prediction")
    target = as_finite_float_array(target, "target")
    if prediction.shape != target.shape:
        raise ValueError(f"prediction and target must have the same shape, got {prediction.shape} and {target.shape}")
    if prediction.size == 0:
        raise ValueError("prediction and target must not be empty")
    error = prediction - target
    return float(np.mean(error**2)), 2.0 * error / error.size


def init_projections(
    d_model: int, d_k: int, d_v: int | None = None, *, seed: int = 0, scale: float = 0.3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random starting matrices ``w_query``, ``w_key``, ``w_value``.

    Entries are drawn from a normal distribution with standard deviation
    ``scale`` by ``np.random.default_rng(seed)``, in the order query, key,
    value: the same seed gives the same matrices.

    Parameters
    ----------
    d_model, d_k : int
        Input width and query/key width.
    d_v : int, optional
        Value width; defaults to ``d_model`` (the output reads in the input's features).
    seed : int, default 0
        A non-negative integer.
    scale : float, default 0.3

    Returns
    -------
    w_query, w_key : numpy.ndarray, shape (d_model, d_k)
    w_value : numpy.ndarray, shape (d_model, d_v)

    Raises
    ------
    TypeError
        If a width or ``seed`` is not an integer (bools and floats are
        refused) or ``scale`` not a real number.
    ValueError
        If a width is not positive, ``seed`` is negative, ``scale`` is not
        positive, or a matrix would exceed ``qkv._checks.MAX_ARRAY_BYTES``
        (2 GiB).

    Examples
    --------
    >>> from qkv.training import init_projections
    >>> w_query, w_key, w_value = init_projections(4, 2, seed=0)
    >>> w_query.round(4).tolist()
    [[0.0377, -0.0396], [0.1921, 0.0315], [-0.1607, 0.1085], [0.3912, 0.2841]]
    >>> w_value.shape
    (4, 4)
    """
    d_model = check_positive_int(d_model, "d_model")
    d_k = check_positive_int(d_k, "d_k")
    d_v = d_model if d_v is None else check_positive_int(d_v, "d_v")
    seed = check_seed(seed, allow_none=False)
    scale = check_real_number(scale, "scale")
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    check_array_bytes((d_model, d_k), np.float64, f"d_model={d_model} and d_k={d_k}")
    check_array_bytes((d_model, d_v), np.float64, f"d_model={d_model} and d_v={d_v}")
    rng = np.random.default_rng(seed)
    w_query = rng.normal(scale=scale, size=(d_model, d_k))
    w_key = rng.normal(scale=scale, size=(d_model, d_k))
    w_value = rng.normal(scale=scale, size=(d_model, d_v))
    return w_query, w_key, w_value


class BankSenseTask(NamedTuple):
    """Training data: sentences, their input rows, which row is scored, and its target."""

    sentences: tuple[tuple[str, ...], ...]
    x: np.ndarray  # (N, L, d_model)
    rows: np.ndarray  # (N,): the position of "bank" in each sentence
    targets: np.ndarray  # (N, d_v): what bank's output row should be


# Target for bank's output row, in toy.BANK_AXES (finance, nature, ambiguous-noun, verb):
# half its own noun feature, half the sense that the sentence's noun gives it.
_SENSE = {"money": (1.0, 0.0, 1.0, 0.0), "river": (0.0, 1.0, 1.0, 0.0)}


def bank_sense_task() -> BankSenseTask:
    """The toy task: make "bank" take the sense of the noun next to it.

    Four sentences, every noun with every verb: "money bank grows", "money
    bank flows", "river bank grows", "river bank flows". The target for
    bank's output row is ``[1, 0, 1, 0]`` (finance-heavy) after "money" and
    ``[0, 1, 1, 0]`` (nature-heavy) after "river"; the verb is a distractor.
    No other row is scored. (No positions are added, so reordering a
    sentence would not change bank's row; four sentences are enough.)

    Returns
    -------
    BankSenseTask
        ``sentences`` (4 tuples of words), ``x`` of shape (4, 3, 4),
        ``rows`` of shape (4,) (all 1: bank is the middle word) and
        ``targets`` of shape (4, 4).

    Examples
    --------
    >>> from qkv.training import bank_sense_task
    >>> task = bank_sense_task()
    >>> [" ".join(s) for s in task.sentences]
    ['money bank grows', 'money bank flows', 'river bank grows', 'river bank flows']
    >>> task.x.shape, task.rows.tolist(), task.targets[2].tolist()
    ((4, 3, 4), [1, 1, 1, 1], [0.0, 1.0, 1.0, 0.0])
    """
    sentences = tuple((noun, "bank", verb) for noun in ("money", "river") for verb in ("grows", "flows"))
    x = np.stack([toy.bank_sentence(words) for words in sentences])  # (4, 3, 4)
    rows = np.array([words.index("bank") for words in sentences])
    targets = np.array([_SENSE[words[0]] for words in sentences])
    return BankSenseTask(sentences, x, rows, targets)


class TrainResult(NamedTuple):
    """The learned matrices and the loss before each step (and after the last)."""

    w_query: np.ndarray
    w_key: np.ndarray
    w_value: np.ndarray
    losses: np.ndarray  # (steps + 1,): losses[0] at the random start, losses[-1] at the end


def _check_training_inputs(
    x: Any, rows: Any, targets: Any, steps: Any, learning_rate: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, float]:
    """Validate a training run's data and schedule (shared by ``train`` and ``train_heads``)."""
    x = as_finite_float_array(x, "x")
    check_ndim(x, "x", 3, "(N, L, d_model)")
    n_sentences, length, d_model = x.shape
    if n_sentences == 0 or length == 0 or d_model == 0:
        raise ValueError(f"x must have shape (N, L, d_model) with no zero dimension, got {x.shape}")
    rows_arr = np.asarray(rows)
    if rows_arr.dtype.kind not in "iu":
        raise TypeError(f"rows must be integers (positions), got an array of dtype {rows_arr.dtype}")
    if rows_arr.shape != (n_sentences,):
        raise ValueError(f"rows must have shape (N,) = ({n_sentences},), got shape {rows_arr.shape}")
    if np.any((rows_arr < 0) | (rows_arr >= length)):
        raise ValueError(f"rows must be positions in 0 .. {length - 1} (L={length}), got {rows_arr.tolist()}")
    targets = as_finite_float_array(targets, "targets")
    check_ndim(targets, "targets", 2, "(N, d_v)")
    if targets.shape[0] != n_sentences or targets.shape[1] == 0:
        raise ValueError(f"targets must have shape (N, d_v) with N={n_sentences}, got shape {targets.shape}")
    steps = check_positive_int(steps, "steps")
    check_array_bytes((steps + 1,), np.float64, f"steps={steps} (one loss per step)")
    learning_rate = check_real_number(learning_rate, "learning_rate")
    if learning_rate <= 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate}")
    return x, rows_arr, targets, steps, learning_rate


def train(
    x: Any,
    rows: Any,
    targets: Any,
    *,
    d_k: int = 4,
    steps: int = 500,
    learning_rate: float = 1.0,
    seed: int = 0,
) -> TrainResult:
    """Learn one head's projections by plain gradient descent.

    Each step runs the head on every sentence, scores the output row
    ``rows[n]`` of sentence ``n`` against ``targets[n]`` with ``mse_loss``,
    and moves each matrix against its gradient. Deterministic: the start is
    ``init_projections(d_model, d_k, d_v, seed=seed)`` and there is no
    sampling.

    Parameters
    ----------
    x : array_like, shape (N, L, d_model)
        N sentences of equal length L.
    rows : array_like of int, shape (N,)
        Which output row of each sentence is scored, in ``0 .. L - 1``.
    targets : array_like, shape (N, d_v)
        What that output row should be.
    d_k : int, default 4
    steps : int, default 500
    learning_rate : float, default 1.0
    seed : int, default 0

    Returns
    -------
    TrainResult
        ``w_query``, ``w_key`` (d_model, d_k), ``w_value`` (d_model, d_v)
        and ``losses`` of shape (steps + 1,).

    Raises
    ------
    TypeError, ValueError
        For inputs of the wrong type or shape; the message names the argument.
        ``steps`` is refused at once when its losses would exceed
        ``qkv._checks.MAX_ARRAY_BYTES``.

    Examples
    --------
    >>> from qkv.training import bank_sense_task, train
    >>> task = bank_sense_task()
    >>> result = train(task.x, task.rows, task.targets, seed=0)
    >>> round(float(result.losses[0]), 4), round(float(result.losses[-1]), 6)
    (0.4584, 0.000113)
    """
    x, rows_arr, targets, steps, learning_rate = _check_training_inputs(x, rows, targets, steps, learning_rate)
    d_model = x.shape[-1]
    n_sentences = x.shape[0]
    w_query, w_key, w_value = init_projections(d_model, d_k, targets.shape[1], seed=seed)
    sentence = np.arange(n_sentences)
    losses = []
    for _ in range(steps + 1):
        output, cache = attention_forward(x, w_query, w_key, w_value)  # (N, L, d_v)
        loss, d_scored = mse_loss(output[sentence, rows_arr], targets)  # scored rows: (N, d_v)
        losses.append(loss)
        if len(losses) > steps:
            break  # the last pass only measures the final loss
        d_output = np.zeros_like(output)
        d_output[sentence, rows_arr] = d_scored  # rows that are not scored get no gradient
        d_w_query, d_w_key, d_w_value = attention_backward(cache, d_output)
        w_query = w_query - learning_rate * d_w_query
        w_key = w_key - learning_rate * d_w_key
        w_value = w_value - learning_rate * d_w_value
    return TrainResult(w_query, w_key, w_value, np.array(losses))


# --- Several heads: split, attend, concatenate, mix with W_O, learned together ---

# Target for bank's output row in noun_and_verb_task: which noun (money, river),
# then which verb (grows, flows). One row needs two different words.
_NOUN = {"money": (1.0, 0.0), "river": (0.0, 1.0)}
_VERB = {"grows": (1.0, 0.0), "flows": (0.0, 1.0)}


def noun_and_verb_task() -> BankSenseTask:
    """A toy task that needs two heads: bank's row must name its noun *and* its verb.

    The four sentences of :func:`bank_sense_task`; the target for bank's
    output row is ``[money, river, grows, flows]`` as 0/1 flags, e.g.
    ``[1, 0, 0, 1]`` for "money bank flows". One head has one row of weights
    for bank, so it cannot look fully at the noun and fully at the verb at
    once; two heads can each take one.

    Returns
    -------
    BankSenseTask
        ``sentences`` (4 tuples), ``x`` of shape (4, 3, 4), ``rows`` (all 1)
        and ``targets`` of shape (4, 4).

    Examples
    --------
    >>> from qkv.training import noun_and_verb_task
    >>> task = noun_and_verb_task()
    >>> task.sentences[1], task.targets[1].tolist()
    (('money', 'bank', 'flows'), [1.0, 0.0, 0.0, 1.0])
    """
    sense = bank_sense_task()
    targets = np.array([_NOUN[words[0]] + _VERB[words[2]] for words in sense.sentences])
    return BankSenseTask(sense.sentences, sense.x, sense.rows, targets)


class MultiHeadTrainResult(NamedTuple):
    """Learned heads, the output matrix and the loss before each step (and after the last).

    ``heads[h]`` is ``(w_query, w_key, w_value)`` of head ``h``, each of
    shape (d_model, d_head); ``w_out`` is (num_heads * d_head, d_v).
    """

    heads: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    w_out: np.ndarray
    losses: np.ndarray


def multi_head_forward(x: Any, heads: Any, w_out: Any) -> tuple[np.ndarray, tuple[ForwardCache, ...], np.ndarray]:
    """Several heads side by side: attend in each, concatenate, multiply by ``w_out``.

    Row-vector convention, like :func:`attention_forward`:
    ``output = concat(head_0, ..., head_{h-1}) @ w_out``. This is
    :func:`qkv.multi_head_attention` without biases, with its weights
    unpacked per head (see :func:`packed_weights`).

    Parameters
    ----------
    x : array_like, shape (..., L, d_model)
    heads : sequence of (w_query, w_key, w_value)
        One triple per head, each matrix of shape (d_model, d_head).
    w_out : array_like, shape (num_heads * d_head, d_out)

    Returns
    -------
    output : numpy.ndarray, shape (..., L, d_out)
    caches : tuple of ForwardCache
        One per head, for :func:`attention_backward`.
    concat : numpy.ndarray, shape (..., L, num_heads * d_head)
        The heads' outputs side by side, before ``w_out``.

    Raises
    ------
    TypeError, ValueError
        For a head that is not a triple, or matrices of the wrong shape.

    Examples
    --------
    >>> import numpy as np
    >>> from qkv import toy
    >>> from qkv.training import multi_head_forward
    >>> x = toy.bank_sentence(["money", "bank", "grows"])   # (3, 4)
    >>> eye = np.eye(4)
    >>> heads = [(eye[:, :2], eye[:, :2], eye[:, :2]), (eye[:, 2:], eye[:, 2:], eye[:, 2:])]
    >>> out, caches, concat = multi_head_forward(x, heads, eye)
    >>> out.shape, concat.shape, len(caches)
    ((3, 4), (3, 4), 2)
    """
    heads = _check_heads(heads)
    caches = []
    for w_query, w_key, w_value in heads:
        _, cache = attention_forward(x, w_query, w_key, w_value)  # (..., L, d_head)
        caches.append(cache)
    concat = np.concatenate([c.output for c in caches], axis=-1)  # (..., L, h * d_head)
    w_out = as_finite_float_array(w_out, "w_out")
    check_ndim(w_out, "w_out", 2, "(num_heads * d_head, d_out)")
    if w_out.shape[0] != concat.shape[-1]:
        raise ValueError(
            f"w_out must have num_heads * d_head = {concat.shape[-1]} rows (the heads' outputs "
            f"side by side), got shape {w_out.shape}"
        )
    return concat @ w_out, tuple(caches), concat  # (..., L, h * d_head) @ (h * d_head, d_out)


def _check_heads(heads: Any) -> list[tuple[Any, Any, Any]]:
    try:
        heads = list(heads)
    except TypeError:
        raise TypeError(f"heads must be a sequence of (w_query, w_key, w_value), got {type(heads).__name__}") from None
    if not heads:
        raise ValueError("heads must hold at least one (w_query, w_key, w_value)")
    for h, head in enumerate(heads):
        if not isinstance(head, (tuple, list)) or len(head) != 3:
            raise TypeError(f"heads[{h}] must be a triple (w_query, w_key, w_value)")
    return heads


def packed_weights(result: MultiHeadTrainResult) -> tuple[np.ndarray, np.ndarray]:
    """The learned heads as ``(in_proj_weight, out_proj_weight)`` of :func:`qkv.multi_head_attention`.

    Head ``h``'s ``w_query`` (d_model, d_head) fills rows ``h * d_head ..``
    of the packed ``W_q`` after a transpose (PyTorch's ``x @ W.T``
    orientation), likewise for ``W_k``, ``W_v``; ``out_proj_weight`` is
    ``w_out.T``. Needs ``num_heads * d_head == d_model == d_out``.

    Raises
    ------
    TypeError
        If ``result`` is not a ``MultiHeadTrainResult``.
    ValueError
        If the widths do not fit ``multi_head_attention``'s square layout.

    Examples
    --------
    >>> import numpy as np
    >>> from qkv import multi_head_attention
    >>> from qkv.training import multi_head_forward, noun_and_verb_task, packed_weights, train_heads
    >>> task = noun_and_verb_task()
    >>> result = train_heads(task.x, task.rows, task.targets, steps=5)
    >>> in_proj, out_proj = packed_weights(result)
    >>> in_proj.shape, out_proj.shape
    ((12, 4), (4, 4))
    >>> ours, _, _ = multi_head_forward(task.x, result.heads, result.w_out)
    >>> theirs, _ = multi_head_attention(task.x, task.x, task.x, 2, in_proj, out_proj)
    >>> bool(np.allclose(ours, theirs, atol=1e-12))
    True
    """
    if not isinstance(result, MultiHeadTrainResult):
        raise TypeError(f"result must be the MultiHeadTrainResult of train_heads, got {type(result).__name__}")
    d_model = result.heads[0][0].shape[0]
    width = sum(w_query.shape[1] for w_query, _, _ in result.heads)
    if not width == d_model == result.w_out.shape[1]:
        raise ValueError(
            f"multi_head_attention needs num_heads * d_head == d_model == d_out, got "
            f"{width}, {d_model} and {result.w_out.shape[1]}"
        )
    # (d_model, h * d_head).T -> (d_model, d_model): row block h holds head h, as torch packs it
    stacked = [np.concatenate([head[m] for head in result.heads], axis=1).T for m in range(3)]
    return np.concatenate(stacked, axis=0), result.w_out.T.copy()  # (3 * d_model, d_model), (d_model, d_model)


def train_heads(
    x: Any,
    rows: Any,
    targets: Any,
    *,
    num_heads: int = 2,
    d_k: int | None = None,
    steps: int = 1000,
    learning_rate: float = 1.0,
    seed: int = 0,
    d_head: int | None = None,
) -> MultiHeadTrainResult:
    """Learn several heads and their output matrix ``W_O`` together, by gradient descent.

    Like :func:`train`, with ``num_heads`` heads of width ``d_k`` whose
    outputs are concatenated and multiplied by ``w_out``. The backward pass
    goes through ``w_out`` (``d_concat = d_out @ w_out.T``,
    ``d_w_out = concat.T @ d_out``) and then through each head with
    :func:`attention_backward` on that head's slice of ``d_concat``.
    Head ``h`` starts from ``init_projections(d_model, d_k, d_k,
    seed=seed + h)``; ``w_out`` from a normal distribution (standard
    deviation 0.3) seeded with ``seed + num_heads``.

    Parameters
    ----------
    x : array_like, shape (N, L, d_model)
    rows : array_like of int, shape (N,)
        Which output row of each sentence is scored.
    targets : array_like, shape (N, d_out)
    num_heads : int, default 2
    d_k : int, default 2
        Each head's width (the paper's d_k = d_v).
    steps : int, default 1000
    learning_rate : float, default 1.0
    seed : int, default 0
    d_head : int, optional
        The former name of ``d_k``; still accepted, with a DeprecationWarning.

    Returns
    -------
    MultiHeadTrainResult

    Raises
    ------
    TypeError, ValueError
        For inputs of the wrong type or shape; the message names the argument.

    Examples
    --------
    >>> from qkv.training import noun_and_verb_task, train_heads
    >>> task = noun_and_verb_task()
    >>> result = train_heads(task.x, task.rows, task.targets, seed=0)
    >>> len(result.heads), result.w_out.shape
    (2, (4, 4))
    >>> bool(result.losses[-1] < 0.001 * result.losses[0])
    True
    """
    x, rows_arr, targets, steps, learning_rate = _check_training_inputs(x, rows, targets, steps, learning_rate)
    num_heads = check_positive_int(num_heads, "num_heads")
    if d_head is not None:
        if d_k is not None:
            raise TypeError("give d_k (the head width) only; d_head is its former name")
        warnings.warn("train_heads(d_head=...) is now train_heads(d_k=...)", DeprecationWarning, stacklevel=2)
        d_k = d_head
    d_head = check_positive_int(2 if d_k is None else d_k, "d_k")
    seed = check_seed(seed, allow_none=False)
    d_model, d_out = x.shape[-1], targets.shape[1]
    heads = [list(init_projections(d_model, d_head, d_head, seed=seed + h)) for h in range(num_heads)]
    w_out = np.random.default_rng(seed + num_heads).normal(scale=0.3, size=(num_heads * d_head, d_out))
    sentence = np.arange(x.shape[0])
    losses = []
    for _ in range(steps + 1):
        output, caches, concat = multi_head_forward(x, heads, w_out)  # (N, L, d_out)
        loss, d_scored = mse_loss(output[sentence, rows_arr], targets)  # (N, d_out)
        losses.append(loss)
        if len(losses) > steps:
            break  # the last pass only measures the final loss
        d_output = np.zeros_like(output)
        d_output[sentence, rows_arr] = d_scored
        # output = concat @ w_out, summed over sentences and rows
        d_w_out = concat.reshape(-1, concat.shape[-1]).T @ d_output.reshape(-1, d_out)
        d_concat = d_output @ w_out.T  # (N, L, d_out) @ (d_out, h * d_head) -> (N, L, h * d_head)
        for h, cache in enumerate(caches):
            grads = attention_backward(cache, d_concat[..., h * d_head : (h + 1) * d_head])
            heads[h] = [w - learning_rate * g for w, g in zip(heads[h], grads)]
        w_out = w_out - learning_rate * d_w_out
    return MultiHeadTrainResult(tuple(tuple(head) for head in heads), w_out, np.array(losses))
