"""Tests for the multi-head part of qkv.training: train_heads, multi_head_forward, packed_weights.

The hand-written backward pass through W_O and each head is checked against
central finite differences (one training step from the documented start),
the forward pass against qkv.multi_head_attention with the packed weights.
"""

import numpy as np
import pytest

from qkv import multi_head_attention
from qkv.training import (
    MultiHeadTrainResult,
    init_projections,
    mse_loss,
    multi_head_forward,
    noun_and_verb_task,
    packed_weights,
    train_heads,
)


def _random_heads(rng, num_heads=2, d_model=4, d_head=2, d_out=4):
    heads = tuple(tuple(rng.normal(size=(d_model, d_head)) for _ in range(3)) for _ in range(num_heads))
    return heads, rng.normal(size=(num_heads * d_head, d_out))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forward_equals_multi_head_attention_with_packed_weights(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 5, 4))
    heads, w_out = _random_heads(rng)
    ours, caches, concat = multi_head_forward(x, heads, w_out)
    in_proj, out_proj = packed_weights(MultiHeadTrainResult(heads, w_out, np.zeros(1)))
    theirs, weights = multi_head_attention(x, x, x, 2, in_proj, out_proj)
    assert np.max(np.abs(ours - theirs)) < 1e-12
    for h, cache in enumerate(caches):
        assert np.max(np.abs(cache.weights - weights[:, h])) < 1e-12
    assert concat.shape == (3, 5, 4)


def _start(task, num_heads, d_head, seed):
    """The documented starting point of train_heads."""
    d_model, d_out = task.x.shape[-1], task.targets.shape[1]
    heads = [list(init_projections(d_model, d_head, d_head, seed=seed + h)) for h in range(num_heads)]
    w_out = np.random.default_rng(seed + num_heads).normal(scale=0.3, size=(num_heads * d_head, d_out))
    return heads, w_out


def _loss(task, heads, w_out):
    out, _, _ = multi_head_forward(task.x, heads, w_out)
    return mse_loss(out[np.arange(4), task.rows], task.targets)[0]


@pytest.mark.parametrize("num_heads, d_head", [(2, 2), (1, 3), (3, 1)])
def test_one_step_is_minus_learning_rate_times_finite_difference_gradient(num_heads, d_head):
    task = noun_and_verb_task()
    heads, w_out = _start(task, num_heads, d_head, seed=3)
    lr = 0.5
    result = train_heads(
        task.x, task.rows, task.targets, num_heads=num_heads, d_k=d_head, steps=1, learning_rate=lr, seed=3
    )
    eps = 1e-6
    params = [w for head in heads for w in head] + [w_out]
    learned = [w for head in result.heads for w in head] + [result.w_out]
    for p, after in zip(params, learned):
        numeric = np.zeros_like(p)
        for index in np.ndindex(p.shape):
            saved = p[index]
            p[index] = saved + eps
            up = _loss(task, heads, w_out)
            p[index] = saved - eps
            down = _loss(task, heads, w_out)
            p[index] = saved
            numeric[index] = (up - down) / (2 * eps)
        assert np.allclose((p - after) / lr, numeric, atol=1e-7), "gradient differs from finite differences"
    assert result.losses[0] == pytest.approx(_loss(task, heads, w_out), abs=1e-15)


def test_two_heads_split_the_task_noun_and_verb():
    task = noun_and_verb_task()
    result = train_heads(task.x, task.rows, task.targets, seed=5)
    assert result.losses[-1] < 1e-6 * result.losses[0]
    _, caches, _ = multi_head_forward(task.x, result.heads, result.w_out)
    bank = [c.weights[np.arange(4), task.rows] for c in caches]  # (4 sentences, 3 words) per head
    assert np.all(bank[0].argmax(axis=1) == 2)  # head 0 reads the verb
    assert np.all(bank[1].argmax(axis=1) == 0)  # head 1 reads the noun


def test_one_head_of_the_same_width_fits_worse():
    task = noun_and_verb_task()
    two = train_heads(task.x, task.rows, task.targets, num_heads=2, d_k=2, seed=5)
    one = train_heads(task.x, task.rows, task.targets, num_heads=1, d_k=4, seed=5)
    assert one.losses[-1] > 100 * two.losses[-1]


def test_deterministic():
    task = noun_and_verb_task()
    a = train_heads(task.x, task.rows, task.targets, steps=20, seed=1)
    b = train_heads(task.x, task.rows, task.targets, steps=20, seed=1)
    assert np.array_equal(a.losses, b.losses)
    assert np.array_equal(a.w_out, b.w_out)


def test_noun_and_verb_task():
    task = noun_and_verb_task()
    assert task.x.shape == (4, 3, 4)
    flags = {(s[0], s[2]): t.tolist() for s, t in zip(task.sentences, task.targets)}
    assert flags[("river", "grows")] == [0.0, 1.0, 1.0, 0.0]
    assert flags[("money", "flows")] == [1.0, 0.0, 0.0, 1.0]


def _task_args():
    task = noun_and_verb_task()
    return task.x, task.rows, task.targets


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        ({"num_heads": 0}, ValueError, "num_heads"),
        ({"d_k": True}, TypeError, "d_k"),
        ({"steps": 0}, ValueError, "steps"),
        ({"learning_rate": -1.0}, ValueError, "learning_rate"),
        ({"seed": -1}, ValueError, "seed"),
    ],
)
def test_train_heads_rejects_bad_settings(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        train_heads(*_task_args(), **kwargs)


def test_train_heads_rejects_bad_rows():
    x, rows, targets = _task_args()
    with pytest.raises(ValueError, match="rows must be positions"):
        train_heads(x, rows + 5, targets)


def test_forward_rejects_bad_heads_and_w_out():
    x = noun_and_verb_task().x
    rng = np.random.default_rng(0)
    heads, w_out = _random_heads(rng)
    with pytest.raises(ValueError, match="at least one"):
        multi_head_forward(x, [], w_out)
    with pytest.raises(TypeError, match=r"heads\[1\] must be a triple"):
        multi_head_forward(x, [heads[0], heads[1][:2]], w_out)
    with pytest.raises(TypeError, match="heads must be a sequence"):
        multi_head_forward(x, 3, w_out)
    with pytest.raises(ValueError, match="w_out must have num_heads \\* d_head = 4 rows"):
        multi_head_forward(x, heads, w_out[:3])


def test_packed_weights_rejects_other_inputs():
    rng = np.random.default_rng(0)
    heads, w_out = _random_heads(rng, d_out=3)
    with pytest.raises(ValueError, match="num_heads \\* d_head == d_model == d_out"):
        packed_weights(MultiHeadTrainResult(heads, w_out, np.zeros(1)))
    with pytest.raises(TypeError, match="MultiHeadTrainResult"):
        packed_weights((heads, w_out))


def test_the_head_width_is_d_k_and_d_head_still_works_with_a_warning():
    task = noun_and_verb_task()
    new = train_heads(task.x, task.rows, task.targets, num_heads=2, d_k=2, steps=3, seed=5)
    with pytest.warns(DeprecationWarning, match=r"train_heads\(d_head=...\) is now train_heads\(d_k=...\)"):
        old = train_heads(task.x, task.rows, task.targets, num_heads=2, d_head=2, steps=3, seed=5)
    np.testing.assert_array_equal(new.losses, old.losses)
    with pytest.raises(TypeError, match="give d_k"):
        train_heads(task.x, task.rows, task.targets, d_k=2, d_head=2)
    with pytest.raises(ValueError, match="d_k"):
        train_heads(task.x, task.rows, task.targets, d_k=0)
