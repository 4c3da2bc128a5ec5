"""Tests for qkv.rotary (RoPE), against independent formulations.

* interleaved pairs against complex multiplication
  ``(x_2i + i x_2i+1) * exp(i pos theta_i)`` (as Meta's Llama code computes it);
* halves against ``x * cos + rotate_half(x) * sin``, written as Hugging Face
  transformers writes it (models/llama/modeling_llama.py);
* both against the real implementations when installed (required in CI, see
  ``.ci/run``): transformers' ``apply_rotary_pos_emb`` and
  ``LlamaRotaryEmbedding`` (halves), and ``rotary-embedding-torch`` (interleaved).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from needs import require
from qkv import rotary_encoding, shift_matrix

TRANSFORMERS_HINT = (
    "torch or transformers is not installed; to run the Llama RoPE cross-check: "
    "pip install torch==2.13.0 transformers==5.24.0"
)
LUCIDRAINS_HINT = (
    "torch or rotary-embedding-torch is not installed; to run its RoPE cross-check: "
    "pip install torch==2.13.0 rotary-embedding-torch==0.9.1 einops==0.8.2"
)

FAST = settings(derandomize=True, max_examples=60, deadline=None, database=None)
small = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False, allow_infinity=False)


def inverse_frequencies(d, base=10000.0):
    """``1 / base**(2i/d)``, the frequency formula every implementation writes."""
    return 1.0 / base ** (np.arange(0, d, 2) / d)


def complex_rope(x, positions, base=10000.0):
    """Interleaved RoPE as a complex product: pair i is the number x_2i + i x_2i+1."""
    z = x[..., 0::2] + 1j * x[..., 1::2]  # (..., L, d/2) complex
    z = z * np.exp(1j * np.asarray(positions)[..., None] * inverse_frequencies(x.shape[-1], base))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def rotate_half(x):
    """transformers' ``rotate_half``, in NumPy."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return np.concatenate((-x2, x1), axis=-1)


def rotate_half_rope(x, positions, base=10000.0):
    """transformers' ``LlamaRotaryEmbedding.forward`` + ``apply_rotary_pos_emb``, in NumPy float64."""
    freqs = np.asarray(positions)[..., None] * inverse_frequencies(x.shape[-1], base)
    emb = np.concatenate((freqs, freqs), axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def halves_order(d):
    """Dimension ``k`` of the halves layout is dimension ``halves_order(d)[k]`` of the
    interleaved one: pair i sits at (2i, 2i + 1) there and at (i, i + d/2) here."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def hf_permute(w, n_heads):
    """``permute`` of transformers' convert_llama_weights_to_hf.py, in NumPy: reorders
    each head's rows of W_q / W_k (Meta's interleaved layout) for ``rotate_half``."""
    dim1, dim2 = w.shape
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


class TestAgainstIndependentFormulations:
    @pytest.mark.parametrize("shape", [(5, 8), (3, 7, 2), (2, 4, 6, 16)])
    def test_interleaved_is_complex_multiplication(self, shape):
        x = np.random.default_rng(0).normal(size=shape)
        positions = np.arange(shape[-2])
        np.testing.assert_allclose(rotary_encoding(x), complex_rope(x, positions), rtol=0, atol=1e-12)

    @pytest.mark.parametrize("shape", [(5, 8), (3, 7, 2), (2, 4, 6, 16)])
    def test_halves_is_rotate_half(self, shape):
        x = np.random.default_rng(1).normal(size=shape)
        positions = np.arange(shape[-2])
        np.testing.assert_allclose(
            rotary_encoding(x, pairs="halves"), rotate_half_rope(x, positions), rtol=0, atol=1e-12
        )

    @pytest.mark.parametrize("pairs, reference", [("interleaved", complex_rope), ("halves", rotate_half_rope)])
    def test_other_base_and_large_positions(self, pairs, reference):
        x = np.random.default_rng(2).normal(size=(2, 6, 32))
        positions = np.array([[0, 1, 2, 500, 4095, 100_000], [-7, 3, 3, 9, 2**20, 11]])
        np.testing.assert_allclose(
            rotary_encoding(x, positions, base=500000.0, pairs=pairs),
            reference(x, positions, base=500000.0),
            rtol=0,
            atol=1e-9,
        )

    def test_rows_are_the_shift_matrix(self):
        """Row p is x[p] @ shift_matrix(p, d): the site's shift fact, as a rotation."""
        x = np.random.default_rng(3).normal(size=(9, 10))
        rotated = rotary_encoding(x)
        for p in range(9):
            np.testing.assert_allclose(rotated[p], x[p] @ shift_matrix(p, 10), atol=1e-12)

    def test_hand_numbers(self):
        x = np.array([[1.0, 0.0, 1.0, 0.0]])
        out = rotary_encoding(x, positions=[1])
        np.testing.assert_allclose(out[0], [np.cos(1), np.sin(1), np.cos(0.01), np.sin(0.01)], atol=1e-15)


class TestProperties:
    @FAST
    @given(
        st.integers(1, 8).map(lambda h: 2 * h),
        st.data(),
        st.integers(-1000, 1000),
        st.integers(-1000, 1000),
        st.integers(-1000, 1000),
        st.sampled_from(["interleaved", "halves"]),
    )
    def test_score_depends_only_on_offset(self, d, data, m, n, shift, pairs):
        q = data.draw(arrays(np.float64, (1, d), elements=small))
        k = data.draw(arrays(np.float64, (1, d), elements=small))

        def score(pos_q, pos_k):
            return (rotary_encoding(q, [pos_q], pairs=pairs) @ rotary_encoding(k, [pos_k], pairs=pairs).T)[0, 0]

        assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-9)
        if pairs == "interleaved":  # q R_m (k R_n)^T = q R_(m-n) k^T
            assert score(m, n) == pytest.approx((q @ shift_matrix(m - n, d) @ k.T)[0, 0], abs=1e-9)

    @FAST
    @given(
        st.integers(1, 8).map(lambda h: 2 * h),
        st.integers(1, 6),
        st.data(),
        st.sampled_from(["interleaved", "halves"]),
    )
    def test_norms_kept_and_undone_by_negative_positions(self, d, length, data, pairs):
        x = data.draw(arrays(np.float64, (length, d), elements=small))
        positions = np.array(data.draw(st.lists(st.integers(-(10**6), 10**6), min_size=length, max_size=length)))
        rotated = rotary_encoding(x, positions, pairs=pairs)
        np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), atol=1e-12)
        np.testing.assert_allclose(rotary_encoding(rotated, -positions, pairs=pairs), x, atol=1e-9)

    def test_same_offset_different_positions_same_score(self):
        """The chapter's claim: the same offset at positions 10 and 50 gives the same score."""
        rng = np.random.default_rng(4)
        q, k = rng.normal(size=(2, 1, 64))
        for pairs in ("interleaved", "halves"):
            at_10 = rotary_encoding(q, [10], pairs=pairs) @ rotary_encoding(k, [7], pairs=pairs).T
            at_50 = rotary_encoding(q, [50], pairs=pairs) @ rotary_encoding(k, [47], pairs=pairs).T
            assert abs(at_10[0, 0] - at_50[0, 0]) < 1e-12

    def test_position_zero_is_identity(self):
        x = np.random.default_rng(5).normal(size=(3, 1, 8))
        for pairs in ("interleaved", "halves"):
            assert np.array_equal(rotary_encoding(x, positions=[0], pairs=pairs), x)

    @pytest.mark.parametrize("pairs", ["interleaved", "halves"])
    @pytest.mark.parametrize("offset", [1, 5, 37])
    def test_offset_positions_equal_slicing_a_longer_run(self, pairs, offset):
        x_long = np.random.default_rng(6).normal(size=(2, 3, 50, 12))
        full = rotary_encoding(x_long, pairs=pairs)
        part = x_long[..., offset : offset + 8, :]
        shifted = rotary_encoding(part, positions=np.arange(8) + offset, pairs=pairs)
        np.testing.assert_array_equal(shifted, full[..., offset : offset + 8, :])

    def test_one_new_token_at_a_scalar_position(self):
        x = np.random.default_rng(7).normal(size=(20, 6))
        last = rotary_encoding(x[-1:], positions=19)  # a 0-d position broadcasts to (L,) = (1,)
        np.testing.assert_array_equal(last, rotary_encoding(x)[-1:])

    def test_positions_per_batch_row(self):
        """Packed sequences: each batch row has its own positions."""
        x = np.random.default_rng(8).normal(size=(2, 4, 6))
        positions = np.array([[0, 1, 0, 1], [3, 4, 5, 6]])  # (B, L)
        out = rotary_encoding(x, positions)
        assert out.shape == x.shape
        np.testing.assert_array_equal(out[0, 2:], rotary_encoding(x[0, 2:]))
        np.testing.assert_array_equal(out[1], rotary_encoding(x[1], np.arange(3, 7)))

    def test_positions_broadcast_over_heads(self):
        x = np.random.default_rng(9).normal(size=(2, 3, 4, 6))  # (B, H, L, d)
        positions = np.array([[5, 6, 7, 8], [0, 1, 2, 3]])[:, None, :]  # (B, 1, L)
        out = rotary_encoding(x, positions)
        for b in range(2):
            for h in range(3):
                np.testing.assert_array_equal(out[b, h], rotary_encoding(x[b, h], positions[b, 0]))

    @pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
    def test_any_integer_dtype(self, dtype):
        x = np.random.default_rng(10).normal(size=(4, 8))
        np.testing.assert_array_equal(rotary_encoding(x, np.arange(4, dtype=dtype)), rotary_encoding(x))

    def test_input_not_modified(self):
        x = np.random.default_rng(11).normal(size=(4, 8))
        before = x.copy()
        rotary_encoding(x)
        assert np.array_equal(x, before)


class TestLayouts:
    @pytest.mark.parametrize("d", [2, 4, 8, 64])
    def test_halves_is_interleaved_with_dimensions_reordered(self, d):
        x = np.random.default_rng(12).normal(size=(2, 7, d))
        order = halves_order(d)
        np.testing.assert_allclose(
            rotary_encoding(x[..., order], pairs="halves"),
            rotary_encoding(x, pairs="interleaved")[..., order],
            rtol=0,
            atol=1e-15,
        )

    def test_layouts_differ(self):
        x = np.random.default_rng(13).normal(size=(5, 8))
        assert not np.allclose(rotary_encoding(x, pairs="halves"), rotary_encoding(x))

    def test_transformers_weight_permutation_gives_the_same_scores(self):
        """Meta's interleaved W_q, W_k vs transformers' permuted ones with rotate_half."""
        rng = np.random.default_rng(14)
        n_heads, d_head, length = 4, 8, 6
        embed = n_heads * d_head
        x = rng.normal(size=(length, embed))
        w_q, w_k = rng.normal(size=(2, embed, embed))

        def per_head_scores(w_q, w_k, pairs):
            q = (x @ w_q.T).reshape(length, n_heads, d_head).swapaxes(0, 1)  # (H, L, d_head)
            k = (x @ w_k.T).reshape(length, n_heads, d_head).swapaxes(0, 1)
            q, k = rotary_encoding(q, pairs=pairs), rotary_encoding(k, pairs=pairs)
            return q @ k.swapaxes(-1, -2)  # (H, L, L)

        meta = per_head_scores(w_q, w_k, "interleaved")
        hf = per_head_scores(hf_permute(w_q, n_heads), hf_permute(w_k, n_heads), "halves")
        np.testing.assert_allclose(hf, meta, rtol=0, atol=1e-10)
        # The same weights in the wrong layout give other scores: the permutation matters.
        assert not np.allclose(per_head_scores(w_q, w_k, "halves"), meta, atol=1e-3)


class TestErrors:
    @pytest.mark.parametrize(
        "x, match",
        [
            (np.ones(4), r"x must have shape \(\.\.\., L, d\) \(at least 2-D\)"),
            (np.ones((3, 5)), r"x's last dimension d must be even .* \(d=5\)"),
            (np.ones((3, 0)), r"x's last dimension d must be even .* \(d=0\)"),
            (np.array([[1.0, np.nan]]), "x must be finite"),
            (np.array([["a", "b"]]), "x must contain real numbers"),
        ],
    )
    def test_bad_x(self, x, match):
        with pytest.raises((TypeError, ValueError), match=match):
            rotary_encoding(x)

    @pytest.mark.parametrize(
        "positions, match",
        [
            (np.arange(4.0), r"positions must be integers .*dtype float64.*astype\(int\)"),
            ([0.0, 1.0, 2.0, 3.0], "positions must be integers .*dtype float64"),
            ([True, False, True, True], r"positions must be integers .*dtype bool \(True/False"),
            (["0", "1", "2", "3"], "positions must be integers"),
            (np.arange(3), r"positions of shape \(3,\) does not broadcast .*\(2, 4\)"),
            (np.zeros((3, 4), dtype=int), r"positions of shape \(3, 4\) does not broadcast"),
            (np.zeros((1, 2, 4), dtype=int), r"positions of shape \(1, 2, 4\) does not broadcast"),
            ([[0, 1], [2]], "positions could not be converted"),
            ([0, 1, 2, 2**60], r"positions must lie within \+/- 2\*\*53"),
        ],
    )
    def test_bad_positions(self, positions, match):
        x = np.ones((2, 4, 6))
        with pytest.raises((TypeError, ValueError), match=match):
            rotary_encoding(x, positions)

    def test_largest_exact_position_is_accepted(self):
        out = rotary_encoding(np.ones((1, 2)), [2**53])
        assert np.all(np.isfinite(out))

    @pytest.mark.parametrize(
        "base, error, match",
        [
            (1.0, ValueError, "base must be greater than 1"),
            (0.5, ValueError, "base must be greater than 1"),
            (float("inf"), ValueError, "base must be finite"),
            ("10000", TypeError, "base must be a real number"),
            (True, TypeError, "base must be a real number"),
        ],
    )
    def test_bad_base(self, base, error, match):
        with pytest.raises(error, match=match):
            rotary_encoding(np.ones((2, 4)), base=base)

    @pytest.mark.parametrize(
        "pairs, error",
        [("interleave", ValueError), ("Halves", ValueError), ("", ValueError), (None, TypeError), (2, TypeError)],
    )
    def test_bad_pairs(self, pairs, error):
        with pytest.raises(error, match=r"pairs must be one of \('interleaved', 'halves'\)"):
            rotary_encoding(np.ones((2, 4)), pairs=pairs)


def _transformers_llama():
    """torch and transformers' Llama RoPE, imported on use (transformers takes
    seconds to import); skip without them, fail under CI=true."""
    try:
        import torch
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import (
            LlamaRotaryEmbedding,
            apply_rotary_pos_emb,
        )
    except ImportError:
        require(False, TRANSFORMERS_HINT)
    return torch, LlamaConfig, LlamaRotaryEmbedding, apply_rotary_pos_emb


def _rotary_embedding_torch():
    try:
        import torch
        from rotary_embedding_torch import RotaryEmbedding
    except ImportError:
        require(False, LUCIDRAINS_HINT)
    return torch, RotaryEmbedding


class TestAgainstTransformersLlama:
    """Hugging Face transformers' Llama RoPE: the halves layout."""

    def test_apply_rotary_pos_emb_float64(self):
        torch, _, _, apply_rotary_pos_emb = _transformers_llama()
        rng = np.random.default_rng(20)
        batch, heads, length, d = 2, 3, 9, 16
        q, k = rng.normal(size=(2, batch, heads, length, d))
        position_ids = np.stack([np.arange(length), np.arange(length) + 40])  # (B, L)
        # cos and sin exactly as LlamaRotaryEmbedding.forward builds them, but in float64.
        freqs = position_ids[..., None] * inverse_frequencies(d)
        emb = torch.from_numpy(np.concatenate((freqs, freqs), axis=-1))  # (B, L, d)
        q_t, k_t = apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), emb.cos(), emb.sin())
        positions = position_ids[:, None, :]  # (B, 1, L) broadcasts over heads
        np.testing.assert_allclose(rotary_encoding(q, positions, pairs="halves"), q_t.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(rotary_encoding(k, positions, pairs="halves"), k_t.numpy(), rtol=0, atol=1e-12)

    def test_llama_rotary_embedding_module(self):
        """The module end to end; it computes its angles in float32 on purpose."""
        torch, LlamaConfig, LlamaRotaryEmbedding, apply_rotary_pos_emb = _transformers_llama()
        d, length = 16, 12
        config = LlamaConfig(hidden_size=4 * d, num_attention_heads=4, rope_theta=10000.0)
        rotary = LlamaRotaryEmbedding(config)
        position_ids = torch.arange(length)[None] + 100  # (1, L), decoding at an offset
        x = torch.from_numpy(np.random.default_rng(21).normal(size=(1, 1, length, d)))
        cos, sin = rotary(x, position_ids)
        theirs, _ = apply_rotary_pos_emb(x, x, cos, sin)
        ours = rotary_encoding(x.numpy(), np.arange(length) + 100, pairs="halves")
        # float32 angles: position 111 times a frequency rounded to 2**-24.
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-4)
        # ... and the interleaved layout is not what transformers computes.
        assert not np.allclose(rotary_encoding(x.numpy(), np.arange(length) + 100), theirs.numpy(), atol=1e-2)


class TestAgainstRotaryEmbeddingTorch:
    """lucidrains' rotary-embedding-torch: the interleaved layout."""

    @pytest.mark.parametrize("offset", [0, 17])
    def test_float64_frequencies(self, offset):
        torch, RotaryEmbedding = _rotary_embedding_torch()
        d, length = 16, 10
        rope = RotaryEmbedding(d, custom_freqs=torch.from_numpy(inverse_frequencies(d)), cache_if_possible=False)
        x = np.random.default_rng(22).normal(size=(2, 3, length, d))
        theirs = rope.rotate_queries_or_keys(torch.from_numpy(x), offset=offset).numpy()
        ours = rotary_encoding(x, np.arange(length) + offset)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)

    def test_default_module(self):
        """Its default frequencies are float32: the same formula, to float32 precision."""
        torch, RotaryEmbedding = _rotary_embedding_torch()
        d, length = 32, 40
        rope = RotaryEmbedding(d)
        x = np.random.default_rng(23).normal(size=(1, length, d))
        theirs = rope.rotate_queries_or_keys(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(rotary_encoding(x), theirs, rtol=0, atol=1e-5)
        assert not np.allclose(rotary_encoding(x, pairs="halves"), theirs, atol=1e-2)
