"""Tests for qkv.multihead: multi-head attention with PyTorch's weight layout.

The PyTorch cross-checks (``torch.nn.MultiheadAttention(batch_first=True)``
with the module's own weights, float64) skip locally without torch and fail
under CI=true.
"""

import contextlib

import numpy as np
import pytest

from needs import require
from qkv import (
    alibi_bias,
    causal_mask,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
)

try:
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

TORCH_HINT = "pip install torch==2.13.0 (multi-head attention cross-check)"


def random_weights(rng, embed, bias=True):
    w_in = rng.normal(size=(3 * embed, embed)) / np.sqrt(embed)
    w_out = rng.normal(size=(embed, embed)) / np.sqrt(embed)
    if not bias:
        return w_in, w_out, None, None
    return w_in, w_out, rng.normal(size=3 * embed), rng.normal(size=embed)


def loop_over_heads(query, key, value, num_heads, w_in, w_out, b_in=None, b_out=None, mask=None):
    """An independent, unbatched formulation: one head at a time, with explicit
    weight slices, softmax written out, and W_o applied per head and summed."""
    embed = query.shape[-1]
    d_head = embed // num_heads
    b_in = np.zeros(3 * embed) if b_in is None else b_in
    b_out = np.zeros(embed) if b_out is None else b_out
    output = np.tile(b_out, (query.shape[0], 1))
    all_weights = []
    for h in range(num_heads):
        rows = slice(h * d_head, (h + 1) * d_head)
        q = query @ w_in[:embed][rows].T + b_in[:embed][rows]  # (L_q, d_head)
        k = key @ w_in[embed : 2 * embed][rows].T + b_in[embed : 2 * embed][rows]
        v = value @ w_in[2 * embed :][rows].T + b_in[2 * embed :][rows]
        scores = q @ k.T / np.sqrt(d_head)
        if mask is not None:
            head_mask = np.broadcast_to(mask, (num_heads, *scores.shape))[h]
            scores = np.where(head_mask, scores, -np.inf)
        weights = softmax(scores)
        all_weights.append(weights)
        output = output + (weights @ v) @ w_out[:, rows].T  # head h's slice of W_o
    return output, np.stack(all_weights)


class TestArithmetic:
    @pytest.mark.parametrize("num_heads, embed", [(1, 4), (2, 4), (4, 8), (3, 12), (8, 8)])
    @pytest.mark.parametrize("bias", [True, False])
    def test_equals_loop_over_heads(self, num_heads, embed, bias):
        rng = np.random.default_rng(num_heads * 100 + embed)
        x = rng.normal(size=(5, embed))
        weights_in = random_weights(rng, embed, bias)
        out, weights = multi_head_attention(x, x, x, num_heads, *weights_in)
        ref_out, ref_weights = loop_over_heads(x, x, x, num_heads, *weights_in)
        np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-12)

    def test_cross_attention_lengths(self):
        rng = np.random.default_rng(1)
        embed = 6
        decoder = rng.normal(size=(3, embed))  # queries
        encoder = rng.normal(size=(7, embed))  # keys and values
        weights_in = random_weights(rng, embed)
        out, weights = multi_head_attention(decoder, encoder, encoder, 2, *weights_in)
        assert out.shape == (3, embed) and weights.shape == (2, 3, 7)
        ref_out, ref_weights = loop_over_heads(decoder, encoder, encoder, 2, *weights_in)
        np.testing.assert_allclose(out, ref_out, atol=1e-12)
        np.testing.assert_allclose(weights, ref_weights, atol=1e-12)

    def test_one_head_is_single_head_attention(self):
        rng = np.random.default_rng(2)
        embed = 4
        x = rng.normal(size=(5, embed))
        w_in, w_out, _, _ = random_weights(rng, embed)
        out, weights = multi_head_attention(x, x, x, 1, w_in, w_out)
        w_q, w_k, w_v = w_in[:embed], w_in[embed : 2 * embed], w_in[2 * embed :]
        head, head_weights = scaled_dot_product_attention(x @ w_q.T, x @ w_k.T, x @ w_v.T)
        np.testing.assert_allclose(out, head @ w_out.T, atol=1e-12)
        np.testing.assert_allclose(weights[0], head_weights, atol=1e-12)

    def test_batch_dimensions_and_broadcasting(self):
        rng = np.random.default_rng(3)
        embed, num_heads = 8, 2
        query = rng.normal(size=(2, 3, 4, embed))  # (B1, B2, L_q, E)
        memory = rng.normal(size=(3, 5, embed))  # (B2, L_k, E): shared across B1
        weights_in = random_weights(rng, embed)
        out, weights = multi_head_attention(query, memory, memory, num_heads, *weights_in)
        assert out.shape == (2, 3, 4, embed)
        assert weights.shape == (2, 3, num_heads, 4, 5)
        for a in range(2):
            for b in range(3):
                ref_out, ref_weights = loop_over_heads(query[a, b], memory[b], memory[b], num_heads, *weights_in)
                np.testing.assert_allclose(out[a, b], ref_out, atol=1e-12)
                np.testing.assert_allclose(weights[a, b], ref_weights, atol=1e-12)

    def test_weights_rows_sum_to_one(self):
        rng = np.random.default_rng(4)
        x = rng.normal(size=(2, 5, 6))
        _, weights = multi_head_attention(x, x, x, 3, *random_weights(rng, 6))
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)

    def test_torch_layout_rows_are_q_then_k_then_v(self):
        """Swapping the W_q and W_k blocks of the packed matrix transposes the scores."""
        rng = np.random.default_rng(5)
        embed = 4
        x = rng.normal(size=(5, embed))
        w_in, w_out, _, _ = random_weights(rng, embed)
        swapped = np.concatenate([w_in[embed : 2 * embed], w_in[:embed], w_in[2 * embed :]])
        _, weights = multi_head_attention(x, x, x, 1, w_in, w_out)
        _, weights_swapped = multi_head_attention(x, x, x, 1, swapped, w_out)

        def double_centred(m):  # removes the per-row constant a log-softmax adds
            return m - m.mean(axis=0, keepdims=True) - m.mean(axis=1, keepdims=True) + m.mean()

        scores = double_centred(np.log(weights[0]))  # Q K^T, up to row constants
        scores_swapped = double_centred(np.log(weights_swapped[0]))  # K Q^T, likewise
        np.testing.assert_allclose(scores_swapped.T, scores, atol=1e-10)
        assert not np.allclose(scores_swapped, scores, atol=1e-3)

    def test_inputs_not_modified(self):
        rng = np.random.default_rng(6)
        x = rng.normal(size=(3, 4))
        weights_in = random_weights(rng, 4)
        copies = [a.copy() for a in (x, *weights_in)]
        multi_head_attention(x, x, x, 2, *weights_in)
        for before, after in zip(copies, (x, *weights_in)):
            assert np.array_equal(before, after)


class TestMasks:
    def test_key_padding_equals_dropping_the_padded_keys(self):
        rng = np.random.default_rng(10)
        embed, num_heads = 6, 3
        query = rng.normal(size=(4, embed))
        memory = rng.normal(size=(6, embed))
        keep = np.array([True, True, True, True, False, False])
        weights_in = random_weights(rng, embed)
        out, weights = multi_head_attention(query, memory, memory, num_heads, *weights_in, mask=keep[None, None, :])
        short_out, short_weights = multi_head_attention(query, memory[:4], memory[:4], num_heads, *weights_in)
        np.testing.assert_allclose(out, short_out, atol=1e-12)
        np.testing.assert_allclose(weights[..., :4], short_weights, atol=1e-12)
        assert np.all(weights[..., 4:] == 0.0)

    def test_batched_key_padding_mask(self):
        rng = np.random.default_rng(11)
        x = rng.normal(size=(2, 5, 4))
        keep = np.array([[True] * 5, [True, True, True, False, False]])  # (B, L_k)
        weights_in = random_weights(rng, 4)
        out, weights = multi_head_attention(x, x, x, 2, *weights_in, mask=keep[:, None, None, :])
        assert np.all(weights[1, ..., 3:] == 0) and np.all(weights[0] > 0)
        ref_out, _ = loop_over_heads(x[1], x[1], x[1], 2, *weights_in, mask=keep[1][None, :])
        np.testing.assert_allclose(out[1], ref_out, atol=1e-12)

    def test_causal_mask_makes_the_future_irrelevant(self):
        rng = np.random.default_rng(12)
        x = rng.normal(size=(6, 8))
        weights_in = random_weights(rng, 8)
        out, _ = multi_head_attention(x, x, x, 2, *weights_in, mask=causal_mask(6))
        changed = x.copy()
        changed[4:] = rng.normal(size=(2, 8))  # rewrite the last two tokens
        out_changed, _ = multi_head_attention(changed, changed, changed, 2, *weights_in, mask=causal_mask(6))
        np.testing.assert_allclose(out_changed[:4], out[:4], atol=1e-12)
        assert not np.allclose(out_changed[4:], out[4:])

    def test_per_head_mask(self):
        rng = np.random.default_rng(13)
        x = rng.normal(size=(4, 4))
        mask = np.ones((2, 4, 4), dtype=bool)
        mask[1] = causal_mask(4)  # head 0 sees everything, head 1 the past
        weights_in = random_weights(rng, 4)
        out, weights = multi_head_attention(x, x, x, 2, *weights_in, mask=mask)
        assert np.all(weights[0] > 0)
        assert np.all(weights[1][~causal_mask(4)] == 0)
        ref_out, ref_weights = loop_over_heads(x, x, x, 2, *weights_in, mask=mask)
        np.testing.assert_allclose(out, ref_out, atol=1e-12)
        np.testing.assert_allclose(weights, ref_weights, atol=1e-12)

    def test_alibi_float_mask(self):
        rng = np.random.default_rng(14)
        embed, num_heads, length = 8, 4, 6
        x = rng.normal(size=(length, embed))
        w_in, w_out, _, _ = random_weights(rng, embed)
        bias = alibi_bias(num_heads, length)  # (h, L, L), -inf above the diagonal
        _, weights = multi_head_attention(x, x, x, num_heads, w_in, w_out, mask=bias)
        q = (x @ w_in[:embed].T).reshape(length, num_heads, 2).swapaxes(0, 1)
        k = (x @ w_in[embed : 2 * embed].T).reshape(length, num_heads, 2).swapaxes(0, 1)
        expected = softmax(q @ k.swapaxes(-1, -2) / np.sqrt(2) + bias)
        np.testing.assert_allclose(weights, expected, atol=1e-12)

    def test_fully_masked_row_gives_the_output_bias(self):
        rng = np.random.default_rng(15)
        x = rng.normal(size=(2, 3, 4))
        weights_in = random_weights(rng, 4)
        keep = np.array([[True, True, True], [False, False, False]])  # batch 1 all padding
        out, weights = multi_head_attention(x, x, x, 2, *weights_in, mask=keep[:, None, None, :])
        assert not np.isnan(out).any() and not np.isnan(weights).any()
        assert np.all(weights[1] == 0.0)
        np.testing.assert_array_equal(out[1], np.broadcast_to(weights_in[3], (3, 4)))
        out_no_bias, _ = multi_head_attention(x, x, x, 2, weights_in[0], weights_in[1], mask=keep[:, None, None, :])
        assert np.all(out_no_bias[1] == 0.0)


class TestErrors:
    def setup_method(self):
        rng = np.random.default_rng(20)
        self.x = rng.normal(size=(2, 3, 4))  # (B, L, d_model = 4)
        self.w_in, self.w_out, self.b_in, self.b_out = random_weights(rng, 4)

    def call(self, **overrides):
        args = dict(
            query=self.x,
            key=self.x,
            value=self.x,
            num_heads=2,
            in_proj_weight=self.w_in,
            out_proj_weight=self.w_out,
            in_proj_bias=self.b_in,
            out_proj_bias=self.b_out,
        )
        args.update(overrides)
        return multi_head_attention(**args)

    @pytest.mark.parametrize(
        "overrides, error, match",
        [
            ({"num_heads": 3}, ValueError, r"num_heads=3 must divide the model width d_model=4"),
            ({"num_heads": 8}, ValueError, r"num_heads=8 must divide the model width d_model=4"),
            ({"num_heads": 0}, ValueError, "num_heads must be a positive integer"),
            ({"num_heads": -2}, ValueError, "num_heads must be a positive integer"),
            ({"num_heads": 2.0}, TypeError, "num_heads must be an integer"),
            ({"num_heads": True}, TypeError, "num_heads must be an integer"),
            ({"query": np.ones(4)}, ValueError, r"query must have shape \(\.\.\., L_q, d_model\)"),
            ({"key": np.ones(4)}, ValueError, r"key must have shape \(\.\.\., L_k, d_model\)"),
            ({"value": np.ones(4)}, ValueError, r"value must have shape \(\.\.\., L_k, d_model\)"),
            ({"query": np.ones((3, 0))}, ValueError, "d_model .* must be at least 1"),
            ({"key": np.ones((2, 3, 6))}, ValueError, "key must have the same last dimension d_model as query"),
            ({"value": np.ones((2, 3, 6))}, ValueError, "value must have the same last dimension d_model"),
            ({"value": np.ones((2, 5, 4))}, ValueError, "key and value must have the same length L_k"),
            ({"key": np.ones((3, 3, 4)), "value": np.ones((3, 3, 4))}, ValueError, "batch dimensions do not broadcast"),
            ({"query": np.array([[np.nan] * 4])}, ValueError, "query must be finite"),
            ({"key": [["a"] * 4]}, TypeError, "key must contain real numbers"),
            (
                {"in_proj_weight": np.ones((4, 4))},
                ValueError,
                r"in_proj_weight must have shape \(3 \* d_model, d_model\) = \(12, 4\) .* got shape \(4, 4\)",
            ),
            (
                {"in_proj_weight": np.ones((12, 4)).T},
                ValueError,
                r"in_proj_weight must have shape \(3 \* d_model, d_model\) = \(12, 4\)",
            ),
            ({"in_proj_weight": np.ones(48)}, ValueError, r"in_proj_weight must have shape \(3 \* d_model, d_model\)"),
            (
                {"out_proj_weight": np.ones((4, 12))},
                ValueError,
                r"out_proj_weight must have shape \(d_model, d_model\) = \(4, 4\)",
            ),
            ({"out_proj_weight": np.full((4, 4), np.inf)}, ValueError, "out_proj_weight must be finite"),
            ({"in_proj_bias": np.ones(4)}, ValueError, r"in_proj_bias must have shape \(3 \* d_model,\) = \(12,\)"),
            ({"in_proj_bias": np.ones((1, 12))}, ValueError, r"in_proj_bias must have shape \(3 \* d_model,\)"),
            ({"out_proj_bias": np.ones(12)}, ValueError, r"out_proj_bias must have shape \(d_model,\) = \(4,\)"),
            (
                {"mask": np.ones((2, 3), dtype=bool)},
                ValueError,
                r"mask of shape \(2, 3\) does not broadcast .*\(2, 2, 3, 3\)",
            ),
            (
                {"mask": np.ones((3, 2, 3, 3), dtype=bool)},
                ValueError,
                r"mask of shape \(3, 2, 3, 3\) does not broadcast",
            ),
            ({"mask": np.ones((1, 1, 2, 1, 3, 3), dtype=bool)}, ValueError, "mask of shape .* does not broadcast"),
            ({"mask": np.ones((3, 3), dtype=int)}, TypeError, r"mask must be boolean .*dtype int64"),
            ({"mask": np.full((3, 3), np.nan)}, ValueError, r"mask must not contain NaN"),
            ({"mask": [[True, False], [True]]}, ValueError, "mask could not be converted"),
        ],
    )
    def test_rejected(self, overrides, error, match):
        with pytest.raises(error, match=match):
            self.call(**overrides)

    def test_key_padding_mask_in_the_right_place_is_accepted(self):
        keep = np.ones((2, 3), dtype=bool)
        out, _ = self.call(mask=keep[:, None, None, :])
        assert out.shape == (2, 3, 4)


# ----------------------------------------------------------------------------
# PyTorch cross-check
# ----------------------------------------------------------------------------


def _torch_module(rng, embed, num_heads, bias):
    """A float64 nn.MultiheadAttention with random (not default) parameters."""
    torch.manual_seed(int(rng.integers(1 << 31)))
    module = torch.nn.MultiheadAttention(embed, num_heads, bias=bias, batch_first=True, dtype=torch.float64)
    if bias:  # torch initialises biases to 0; make them matter
        with torch.no_grad():
            module.in_proj_bias.normal_()
            module.out_proj.bias.normal_()
    return module


def _module_weights(module):
    """The module's own parameters, as NumPy, in multi_head_attention's argument order."""

    def arr(t):
        return None if t is None else t.detach().numpy()

    return (
        arr(module.in_proj_weight),
        arr(module.out_proj.weight),
        arr(module.in_proj_bias),
        arr(module.out_proj.bias),
    )


def _run_torch(module, query, key, value, **kwargs):
    with torch.no_grad():
        out, weights = module(
            torch.from_numpy(query),
            torch.from_numpy(key),
            torch.from_numpy(value),
            need_weights=True,
            average_attn_weights=False,
            **kwargs,
        )
    return out.numpy(), weights.numpy()


def _max_diff(ours, theirs):
    return max(float(np.max(np.abs(a - b))) for a, b in zip(ours, theirs))


class TestAgainstTorchMultiheadAttention:
    @pytest.mark.parametrize("bias", [True, False])
    @pytest.mark.parametrize("num_heads, embed", [(1, 6), (2, 8), (4, 16), (3, 12)])
    def test_self_attention(self, bias, num_heads, embed):
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(100 + num_heads)
        module = _torch_module(rng, embed, num_heads, bias)
        x = rng.normal(size=(3, 5, embed))
        ours = multi_head_attention(x, x, x, num_heads, *_module_weights(module))
        theirs = _run_torch(module, x, x, x)
        assert ours[0].shape == theirs[0].shape and ours[1].shape == theirs[1].shape
        assert _max_diff(ours, theirs) < 1e-12

    @pytest.mark.parametrize("bias", [True, False])
    def test_cross_attention(self, bias):
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(110)
        module = _torch_module(rng, 8, 2, bias)
        query, memory = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 7, 8))
        ours = multi_head_attention(query, memory, memory, 2, *_module_weights(module))
        assert _max_diff(ours, _run_torch(module, query, memory, memory)) < 1e-12

    @pytest.mark.parametrize("bias", [True, False])
    def test_key_padding_mask(self, bias):
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(120)
        module = _torch_module(rng, 8, 4, bias)
        x = rng.normal(size=(3, 6, 8))
        pad = np.zeros((3, 6), dtype=bool)  # torch: True = ignore this key
        pad[1, 4:] = True
        pad[2, 1] = pad[2, 5] = True
        ours = multi_head_attention(x, x, x, 4, *_module_weights(module), mask=~pad[:, None, None, :])
        theirs = _run_torch(module, x, x, x, key_padding_mask=torch.from_numpy(pad))
        assert _max_diff(ours, theirs) < 1e-12

    @pytest.mark.parametrize("bias", [True, False])
    def test_causal_mask(self, bias):
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(130)
        module = _torch_module(rng, 8, 2, bias)
        x = rng.normal(size=(2, 5, 8))
        future = torch.from_numpy(~causal_mask(5))  # torch attn_mask: True = not allowed
        ours = multi_head_attention(x, x, x, 2, *_module_weights(module), mask=causal_mask(5))
        assert _max_diff(ours, _run_torch(module, x, x, x, attn_mask=future)) < 1e-12
        is_causal = _run_torch(module, x, x, x, attn_mask=future, is_causal=True)
        assert _max_diff(ours, is_causal) < 1e-12

    def test_causal_and_key_padding_together(self):
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(140)
        module = _torch_module(rng, 12, 3, True)
        x = rng.normal(size=(2, 6, 12))
        pad = np.zeros((2, 6), dtype=bool)
        pad[0, 5] = True
        mask = causal_mask(6) & ~pad[:, None, None, :]
        ours = multi_head_attention(x, x, x, 3, *_module_weights(module), mask=mask)
        theirs = _run_torch(
            module, x, x, x, attn_mask=torch.from_numpy(~causal_mask(6)), key_padding_mask=torch.from_numpy(pad)
        )
        assert _max_diff(ours, theirs) < 1e-12

    def test_per_head_3d_attn_mask(self):
        """torch's 3-D attn_mask (N * num_heads, L, S) is ours reshaped to (N, num_heads, L, S)."""
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(145)
        module = _torch_module(rng, 8, 2, True)
        x = rng.normal(size=(3, 5, 8))
        blocked = rng.random((3 * 2, 5, 5)) < 0.4  # torch: True = not allowed
        blocked[:, :, 0] = False  # every query keeps a key
        ours = multi_head_attention(x, x, x, 2, *_module_weights(module), mask=~blocked.reshape(3, 2, 5, 5))
        theirs = _run_torch(module, x, x, x, attn_mask=torch.from_numpy(blocked))
        assert _max_diff(ours, theirs) < 1e-12

    def test_head_averaged_weights(self):
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(150)
        module = _torch_module(rng, 8, 4, True)
        x = rng.normal(size=(2, 5, 8))
        _, weights = multi_head_attention(x, x, x, 4, *_module_weights(module))
        with torch.no_grad():
            _, averaged = module(*(torch.from_numpy(x),) * 3)  # torch's default: averaged
        np.testing.assert_allclose(weights.mean(axis=-3), averaged.numpy(), rtol=0, atol=1e-12)

    @pytest.mark.parametrize("mask_kind", ["key_padding_mask", "attn_mask"])
    def test_fully_masked_row_as_documented(self, mask_kind):
        """What the docstring says torch 2.13 returns for a row with no key to attend to."""
        require(torch is not None, TORCH_HINT)
        rng = np.random.default_rng(160)
        module = _torch_module(rng, 4, 2, True)
        x = rng.normal(size=(2, 3, 4))
        if mask_kind == "key_padding_mask":
            pad = np.array([[False] * 3, [True] * 3])  # batch 1: every key is padding
            torch_mask = {"key_padding_mask": torch.from_numpy(pad)}
            ours_mask = ~pad[:, None, None, :]
            row = (1, 0)
        else:
            blocked = np.zeros((3, 3), dtype=bool)
            blocked[1] = True  # query 1 may attend to nothing
            torch_mask = {"attn_mask": torch.from_numpy(blocked)}
            ours_mask = ~blocked
            row = (0, 1)
        ours, our_weights = multi_head_attention(x, x, x, 2, *_module_weights(module), mask=ours_mask)
        bias_out = module.out_proj.bias.detach().numpy()
        np.testing.assert_array_equal(ours[row], bias_out)
        assert np.all(our_weights[row[0], :, row[1]] == 0.0)

        def torch_row(train, grad, need_weights):
            module.train(train)
            context = contextlib.nullcontext() if grad else torch.no_grad()
            with context:
                out, weights = module(*(torch.from_numpy(x),) * 3, need_weights=need_weights, **torch_mask)
            return out.detach().numpy()[row], weights

        for train in (True, False):
            for grad in (True, False):
                out, weights = torch_row(train, grad, need_weights=True)
                assert np.isnan(out).all() and torch.isnan(weights).any()
                out, _ = torch_row(train, grad, need_weights=False)
                if not train and not grad:  # eval + no_grad: the fast path
                    assert np.isnan(out).all()
                else:
                    np.testing.assert_array_equal(out, bias_out)  # same as ours
