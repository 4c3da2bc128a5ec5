"""Tests for qkv.training: hand-written gradients, the loss, the training run.

The backward pass is checked twice, independently: against central finite
differences (no calculus involved) and against PyTorch autograd in float64.
PyTorch is a test-only dependency: locally a missing torch skips those tests
with the install hint; in CI (CI=true) a missing torch fails them.
"""

import os

import numpy as np
import pytest

from qkv import self_attention, toy
from qkv.training import (
    ForwardCache,
    attention_backward,
    attention_forward,
    bank_sense_task,
    init_projections,
    mse_loss,
    train,
)

INSTALL_HINT = "pip install torch==2.13.0"

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


def _require_torch():
    """Return torch, or fail (CI) / skip (locally) with the install hint."""
    if torch is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"torch is required in CI for the autograd cross-check: {INSTALL_HINT}", pytrace=False)
        pytest.skip(f"torch is not installed; to run the autograd cross-check: {INSTALL_HINT}")
    return torch


def _problem(seed=0, batch=(2,), length=3, d_model=4, d_k=3, d_v=2):
    """A random input, random projections, and a random upstream gradient."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(*batch, length, d_model))
    w = [rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_v))]
    d_output = rng.normal(size=(*batch, length, d_v))
    return x, w, d_output


def _numeric_gradients(loss_of, matrices, eps=1e-6):
    """Central differences of ``loss_of(matrices)`` for every matrix entry."""
    grads = []
    for m in matrices:
        grad = np.zeros_like(m)
        for index in np.ndindex(m.shape):
            saved = m[index]
            m[index] = saved + eps
            up = loss_of(matrices)
            m[index] = saved - eps
            down = loss_of(matrices)
            m[index] = saved
            grad[index] = (up - down) / (2 * eps)
        grads.append(grad)
    return grads


def _max_relative_error(ours, reference):
    """max |a - b| / max(|a|, |b|) over entries, with a floor for exact zeros."""
    worst = 0.0
    for a, b in zip(ours, reference):
        denominator = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-7)
        worst = max(worst, float(np.max(np.abs(a - b) / denominator)))
    return worst


# --- the forward pass ---------------------------------------------------------


def test_forward_matches_self_attention_per_sentence():
    x, w, _ = _problem(batch=(3,))
    output, cache = attention_forward(x, *w)
    for n in range(3):
        expected, weights = self_attention(x[n], *w)
        np.testing.assert_allclose(output[n], expected, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(cache.weights[n], weights, rtol=1e-13, atol=1e-13)
    assert isinstance(cache, ForwardCache)
    assert cache.scale == pytest.approx(1 / np.sqrt(3))


def test_forward_on_the_canonical_toy():
    for noun in ("money", "river"):
        x = toy.bank_sentence([noun, "bank", "flows" if noun == "river" else "grows"])
        output, cache = attention_forward(x, toy.W_QUERY, toy.W_KEY, toy.W_VALUE)
        assert cache.weights[1].round(4).tolist() == [0.6652, 0.0900, 0.2447]
        expected = [1.5752, 0.0, 0.1801, 0.2447] if noun == "money" else [0.0, 1.5752, 0.1801, 0.2447]
        assert output[1].round(4).tolist() == expected


# --- gradients: finite differences ---------------------------------------------


@pytest.mark.parametrize("seed, batch", [(0, ()), (1, (2,)), (2, (2, 2))])
def test_backward_matches_finite_differences(seed, batch):
    x, w, d_output = _problem(seed, batch=batch)

    def loss_of(matrices):  # a loss whose gradient with respect to the output is d_output
        return float(np.sum(attention_forward(x, *matrices)[0] * d_output))

    _, cache = attention_forward(x, *w)
    ours = attention_backward(cache, d_output)
    numeric = _numeric_gradients(loss_of, [m.copy() for m in w])
    error = _max_relative_error(ours, numeric)
    assert error < 1e-6, f"max relative error vs central differences: {error:.3e}"


def test_training_loss_gradient_matches_finite_differences():
    """The whole chain train() uses: scored rows -> mse_loss -> backward."""
    task = bank_sense_task()
    w = list(init_projections(4, 4, seed=3, scale=0.5))
    sentence = np.arange(len(task.rows))

    def loss_of(matrices):
        output, _ = attention_forward(task.x, *matrices)
        return mse_loss(output[sentence, task.rows], task.targets)[0]

    output, cache = attention_forward(task.x, *w)
    _, d_scored = mse_loss(output[sentence, task.rows], task.targets)
    d_output = np.zeros_like(output)
    d_output[sentence, task.rows] = d_scored
    ours = attention_backward(cache, d_output)
    numeric = _numeric_gradients(loss_of, [m.copy() for m in w])
    # The toy inputs have exact zeros, so some gradient entries are exactly 0:
    # compare those in absolute terms, the rest relatively.
    error = _max_relative_error(ours, numeric)
    assert error < 1e-6, f"max relative error vs central differences: {error:.3e}"


def test_mse_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    prediction, target = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    _, ours = mse_loss(prediction, target)
    (numeric,) = _numeric_gradients(lambda m: mse_loss(m[0], target)[0], [prediction.copy()])
    error = _max_relative_error([ours], [numeric])
    assert error < 1e-6, f"max relative error vs central differences: {error:.3e}"


# --- gradients: PyTorch autograd -----------------------------------------------


@pytest.mark.parametrize("seed, batch", [(0, ()), (1, (2,)), (2, (2, 3))])
def test_backward_matches_torch_autograd(seed, batch):
    torch = _require_torch()
    x, w, d_output = _problem(seed, batch=batch, length=5, d_model=6, d_k=4, d_v=3)
    _, cache = attention_forward(x, *w)
    ours = attention_backward(cache, d_output)

    tx = torch.from_numpy(x)
    tw = [torch.from_numpy(m.copy()).requires_grad_(True) for m in w]
    q, k, v = tx @ tw[0], tx @ tw[1], tx @ tw[2]
    weights = torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1]), dim=-1)
    (weights @ v).backward(torch.from_numpy(d_output))
    difference = max(float(np.max(np.abs(a - t.grad.numpy()))) for a, t in zip(ours, tw))
    assert difference < 1e-10, f"max absolute difference vs torch autograd: {difference:.3e}"


def test_training_step_matches_torch_autograd():
    """mse on the scored rows, through SDPA itself, float64."""
    torch = _require_torch()
    task = bank_sense_task()
    w = init_projections(4, 4, seed=0)
    sentence = np.arange(len(task.rows))
    output, cache = attention_forward(task.x, *w)
    loss, d_scored = mse_loss(output[sentence, task.rows], task.targets)
    d_output = np.zeros_like(output)
    d_output[sentence, task.rows] = d_scored
    ours = attention_backward(cache, d_output)

    tx = torch.from_numpy(task.x)
    tw = [torch.from_numpy(m.copy()).requires_grad_(True) for m in w]
    t_out = torch.nn.functional.scaled_dot_product_attention(tx @ tw[0], tx @ tw[1], tx @ tw[2])
    scored = t_out[torch.from_numpy(sentence), torch.from_numpy(task.rows)]
    t_loss = torch.nn.functional.mse_loss(scored, torch.from_numpy(task.targets))
    t_loss.backward()
    assert abs(loss - t_loss.item()) < 1e-12
    difference = max(float(np.max(np.abs(a - t.grad.numpy()))) for a, t in zip(ours, tw))
    assert difference < 1e-10, f"max absolute difference vs torch autograd: {difference:.3e}"


# --- training ------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained():
    task = bank_sense_task()
    return task, train(task.x, task.rows, task.targets, seed=0)


def test_bank_sense_task():
    task = bank_sense_task()
    assert [" ".join(s) for s in task.sentences] == [
        "money bank grows",
        "money bank flows",
        "river bank grows",
        "river bank flows",
    ]
    assert task.x.shape == (4, 3, 4)
    assert task.rows.tolist() == [1, 1, 1, 1]
    assert task.targets.tolist() == [[1, 0, 1, 0], [1, 0, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0]]


def test_loss_falls(trained):
    _, result = trained
    losses = result.losses
    assert losses.shape == (501,)
    assert losses[-1] < 0.01 * losses[0], f"final {losses[-1]:.3g} vs initial {losses[0]:.3g}"
    assert losses[100] < 0.01 * losses[0]
    assert np.all(np.diff(losses) <= 0), "plain gradient descent with this step size never goes uphill here"


def test_learned_pattern_bank_reads_the_noun(trained):
    task, result = trained
    output, cache = attention_forward(task.x, result.w_query, result.w_key, result.w_value)
    bank_weights = cache.weights[np.arange(4), task.rows]  # (4 sentences, 3 words)
    noun, bank, verb = bank_weights.T
    assert np.all(noun > 0.7), bank_weights.round(4).tolist()
    assert np.all(noun > bank) and np.all(noun > verb), "bank attends most to the noun, not to itself"
    bank_out = output[np.arange(4), task.rows]
    finance, nature = bank_out[:, 0], bank_out[:, 1]
    assert np.all(finance[:2] > nature[:2] + 0.9), "money sentences: finance-heavy"
    assert np.all(nature[2:] > finance[2:] + 0.9), "river sentences: nature-heavy"
    np.testing.assert_allclose(bank_out, task.targets, atol=0.05)


def test_learned_head_ignores_word_order(trained):
    """No positions: a reordered sentence gives bank the same output row."""
    _, result = trained
    w = (result.w_query, result.w_key, result.w_value)
    original, _ = attention_forward(toy.bank_sentence(["money", "bank", "flows"]), *w)
    reordered, _ = attention_forward(toy.bank_sentence(["flows", "money", "bank"]), *w)
    np.testing.assert_allclose(reordered[2], original[1], atol=1e-12)


def test_deterministic(trained):
    task, result = trained
    again = train(task.x, task.rows, task.targets, seed=0)
    for a, b in zip(result, again):
        assert np.array_equal(a, b)
    other = train(task.x, task.rows, task.targets, seed=1, steps=5)
    assert not np.array_equal(other.w_query, result.w_query)


def test_init_projections_is_seeded():
    a, b = init_projections(4, 2, seed=7), init_projections(4, 2, seed=7)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert [m.shape for m in init_projections(5, 3, 2)] == [(5, 3), (5, 3), (5, 2)]


def test_mse_loss_value():
    loss, grad = mse_loss([[1.0, 2.0]], [[1.0, 0.0]])
    assert loss == 2.0
    assert grad.tolist() == [[0.0, 2.0]]


@pytest.mark.parametrize("scale", [1.0, 0.25, 3.0])
def test_backward_with_a_scale_matches_torch_autograd(scale):
    """attention_forward(..., scale=s): the backward pass uses the cached scale."""
    torch = _require_torch()
    x, w, d_output = _problem(5, batch=(2,), length=4, d_model=5, d_k=3, d_v=2)
    output, cache = attention_forward(x, *w, scale=scale)
    assert cache.scale == scale
    ours = attention_backward(cache, d_output)

    tx = torch.from_numpy(x)
    tw = [torch.from_numpy(m.copy()).requires_grad_(True) for m in w]
    q, k, v = tx @ tw[0], tx @ tw[1], tx @ tw[2]
    weights = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)
    reference = weights @ v
    np.testing.assert_allclose(output, reference.detach().numpy(), rtol=1e-12, atol=1e-12)
    reference.backward(torch.from_numpy(d_output))
    difference = max(float(np.max(np.abs(a - t.grad.numpy()))) for a, t in zip(ours, tw))
    assert difference < 1e-10, f"max absolute difference vs torch autograd: {difference:.3e}"


def test_identity_input_gives_the_gradient_of_the_queries():
    """With x = I, Q = W_Q, so d W_Q is dQ (the chapter 5 measurement relies on it)."""
    rng = np.random.default_rng(7)
    q, k, v, d_output = rng.normal(size=(4, 5, 3))
    _, cache = attention_forward(np.eye(5), q, k, v, scale=1.0)
    d_q, _, _ = attention_backward(cache, d_output)

    def loss_of(matrices):
        return float(np.sum(attention_forward(np.eye(5), *matrices, scale=1.0)[0] * d_output))

    numeric = _numeric_gradients(loss_of, [q.copy(), k.copy(), v.copy()])[0]
    np.testing.assert_allclose(d_q, numeric, rtol=1e-6, atol=1e-8)


# --- bad inputs ----------------------------------------------------------------

W4 = np.eye(4)


@pytest.mark.parametrize(
    "args, error, pattern",
    [
        ((np.ones(4), W4, W4, W4), ValueError, r"x must have shape \(\.\.\., L, d_model\)"),
        (
            (np.ones((3, 4)), np.ones((3, 4)), W4, W4),
            ValueError,
            r"w_query must have shape \(d_model, d_k\) with d_model=4",
        ),
        ((np.ones((3, 4)), W4, np.ones(4), W4), ValueError, r"w_key must have shape \(d_model, d_k\)"),
        ((np.ones((3, 4)), W4, W4, np.ones((5, 4))), ValueError, r"w_value must have shape \(d_model, d_v\)"),
        (
            (np.ones((3, 4)), W4, np.ones((4, 3)), W4),
            ValueError,
            r"w_query and w_key must have the same number of columns d_k",
        ),
        ((np.full((3, 4), np.nan), W4, W4, W4), ValueError, r"x must be finite"),
        ((np.array([["a"] * 4]), W4, W4, W4), TypeError, r"x must contain real numbers"),
    ],
)
def test_forward_rejects_bad_inputs(args, error, pattern):
    with pytest.raises(error, match=pattern):
        attention_forward(*args)


@pytest.mark.parametrize(
    "scale, error, pattern",
    [
        ("1", TypeError, r"scale must be a real number, got '1' of type str"),
        (True, TypeError, r"scale must be a real number, got True of type bool"),
        (float("inf"), ValueError, r"scale must be finite, got inf"),
    ],
)
def test_forward_rejects_a_bad_scale(scale, error, pattern):
    with pytest.raises(error, match=pattern):
        attention_forward(np.ones((3, 4)), W4, W4, W4, scale=scale)


def test_backward_rejects_bad_inputs():
    output, cache = attention_forward(np.ones((3, 4)), W4, W4, W4)
    with pytest.raises(ValueError, match=r"d_output must have the output's shape \(\.\.\., L, d_v\) = \(3, 4\)"):
        attention_backward(cache, np.ones((4, 3)))
    with pytest.raises(TypeError, match="cache must be the ForwardCache"):
        attention_backward((1, 2, 3), output)
    with pytest.raises(ValueError, match="d_output must be finite"):
        attention_backward(cache, np.full((3, 4), np.inf))


def test_mse_loss_rejects_bad_inputs():
    with pytest.raises(ValueError, match="prediction and target must have the same shape"):
        mse_loss(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="must not be empty"):
        mse_loss([], [])
    with pytest.raises(ValueError, match="target must be finite"):
        mse_loss([1.0], [np.nan])


@pytest.mark.parametrize(
    "change, error, pattern",
    [
        ({"x": np.ones((3, 4))}, ValueError, r"x must have shape \(N, L, d_model\)"),
        ({"rows": np.array([1.0, 1.0, 1.0, 1.0])}, TypeError, "rows must be integers"),
        ({"rows": np.array([1, 1])}, ValueError, r"rows must have shape \(N,\) = \(4,\)"),
        ({"rows": np.array([1, 1, 1, 3])}, ValueError, r"rows must be positions in 0 \.\. 2"),
        ({"targets": np.ones((4,))}, ValueError, r"targets must have shape \(N, d_v\)"),
        ({"targets": np.ones((3, 4))}, ValueError, r"targets must have shape \(N, d_v\) with N=4"),
        ({"steps": 0}, ValueError, "steps must be a positive integer"),
        ({"steps": 2.5}, TypeError, "steps must be an integer"),
        ({"learning_rate": -1.0}, ValueError, "learning_rate must be positive"),
        ({"d_k": 0}, ValueError, "d_k must be a positive integer"),
        ({"seed": "zero"}, TypeError, "seed must be a non-negative integer"),
        ({"seed": -1}, ValueError, "seed must be a non-negative integer, got -1"),
        ({"seed": 1.5}, TypeError, "seed must be a non-negative integer, got 1.5 of type float"),
        ({"seed": True}, TypeError, "seed must be a non-negative integer, got True of type bool"),
        ({"steps": 2**28}, ValueError, r"steps=268435456 \(one loss per step\) would need"),
    ],
)
def test_train_rejects_bad_inputs(change, error, pattern):
    task = bank_sense_task()
    kwargs = {"x": task.x, "rows": task.rows, "targets": task.targets, **change}
    x, rows, targets = kwargs.pop("x"), kwargs.pop("rows"), kwargs.pop("targets")
    with pytest.raises(error, match=pattern):
        train(x, rows, targets, **kwargs)


def test_init_projections_rejects_bad_inputs():
    with pytest.raises(ValueError, match="d_model must be a positive integer"):
        init_projections(0, 2)
    with pytest.raises(ValueError, match="scale must be positive"):
        init_projections(4, 2, scale=0.0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        init_projections(4, 2, seed=-1)
    with pytest.raises(TypeError, match="seed must be a non-negative integer, got None"):
        init_projections(4, 2, seed=None)
    with pytest.raises(
        ValueError,
        match=r"d_model=100000 and d_k=100000 would need a float64 array of shape \(100000, 100000\)",
    ):
        init_projections(10**5, 10**5)
    with pytest.raises(ValueError, match=r"d_model=2 and d_v=10000000000 would need"):
        init_projections(2, 2, 10**10)


# --- one copy of the arithmetic, empty sentences, overflow ------------------------


def test_forward_is_bit_for_bit_self_attention():
    """One core computes both: not merely close, the same floats."""
    x, w, _ = _problem(seed=3, batch=(4,), length=5)
    output, cache = attention_forward(x, *w)
    for n in range(4):
        expected, weights = self_attention(x[n], *w)
        assert np.array_equal(output[n], expected)
        assert np.array_equal(cache.weights[n], weights)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_forward_and_backward_on_an_empty_sentence(batch):
    x, w, _ = _problem(batch=batch, length=0)
    output, cache = attention_forward(x, *w)
    assert output.shape == (*batch, 0, 2)
    assert cache.weights.shape == (*batch, 0, 0)
    grads = attention_backward(cache, np.zeros_like(output))
    assert [g.shape for g in grads] == [(4, 3), (4, 3), (4, 2)]
    assert all(not g.any() for g in grads)  # a sum over no rows


def test_forward_overflow_names_x_and_the_projection():
    ok = [[1.0]]
    with pytest.raises(ValueError, match=r"x @ w_key overflows float64 at index \(0, 0\).*make x or w_key smaller"):
        attention_forward([[1e200]], ok, [[1e200]], ok)
    with pytest.raises(
        ValueError,
        match=r"the attention scores \(x @ w_query\) @ \(x @ w_key\)\.T \* scale overflow float64",
    ):
        attention_forward([[1e200]], [[1e100]], [[-1e100]], ok)


def test_forward_refuses_scores_above_the_limit(monkeypatch):
    from qkv import _checks

    monkeypatch.setattr(_checks, "MAX_ARRAY_BYTES", 8 * 2 * 3 * 3)
    x, w, _ = _problem(batch=(2,), length=3)
    assert attention_forward(x, *w)[1].weights.shape == (2, 3, 3)  # 144 bytes: at the limit
    x, w, _ = _problem(batch=(2,), length=4)
    with pytest.raises(ValueError, match=r"the attention scores \(x @ w_query\) .* shape \(2, 4, 4\): 256 bytes"):
        attention_forward(x, *w)
