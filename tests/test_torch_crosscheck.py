"""Cross-check scaled_dot_product_attention against PyTorch (float64).

PyTorch is a test-only dependency. Locally, a missing torch skips these tests
with a visible reason; in CI (CI=true) a missing torch is a failure, so the
cross-check can never silently stop running.
"""

import os

import numpy as np
import pytest

from qkv import causal_mask, scaled_dot_product_attention

INSTALL_HINT = "pip install torch==2.13.0"

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


def _torch_sdpa():
    """Return a NumPy wrapper around torch's SDPA, or fail/skip without torch.

    Called at the start of each test (not as a fixture) so that a missing
    torch in CI reports the tests as FAILED, not as fixture errors.
    """
    if torch is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"torch is required in CI for the PyTorch cross-check: {INSTALL_HINT}",
                pytrace=False,
            )
        pytest.skip(f"torch is not installed; to run the PyTorch cross-check: {INSTALL_HINT}")

    def run(q, k, v, mask=None, *, is_causal=False, scale=None):
        """Torch's output and, by attending over an identity value matrix, its weights."""
        t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
        m = None if mask is None else torch.from_numpy(np.asarray(mask))
        out = F.scaled_dot_product_attention(*t, attn_mask=m, is_causal=is_causal, scale=scale)
        # softmax(...) @ I == softmax(...): the weights, as torch computes them.
        eye = torch.eye(k.shape[-2], dtype=torch.float64).expand(*t[1].shape[:-2], -1, -1)
        weights = F.scaled_dot_product_attention(t[0], t[1], eye, attn_mask=m, is_causal=is_causal, scale=scale)
        return out.numpy(), weights.numpy()

    return run


def _qkv(rng, q_shape, k_shape, v_shape):
    return rng.normal(size=q_shape), rng.normal(size=k_shape), rng.normal(size=v_shape)


def _compare(ours, theirs):
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=1e-12)


def test_torch_version():
    _torch_sdpa()  # skip or fail without torch
    assert torch.__version__.startswith("2.13.")


def test_single():
    sdpa = _torch_sdpa()
    q, k, v = _qkv(np.random.default_rng(0), (4, 8), (6, 8), (6, 3))
    _compare(scaled_dot_product_attention(q, k, v), sdpa(q, k, v))


def test_custom_scale():
    sdpa = _torch_sdpa()
    q, k, v = _qkv(np.random.default_rng(1), (3, 5), (4, 5), (4, 2))
    _compare(scaled_dot_product_attention(q, k, v, scale=0.7), sdpa(q, k, v, scale=0.7))


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape",
    [
        ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)),  # batch x heads
        ((2, 1, 4, 8), (3, 5, 8), (1, 5, 6)),  # broadcasting batch dims
        ((2, 3, 4, 8), (1, 3, 5, 8), (2, 1, 5, 6)),
    ],
)
def test_batched_with_broadcasting(q_shape, k_shape, v_shape):
    sdpa = _torch_sdpa()
    q, k, v = _qkv(np.random.default_rng(2), q_shape, k_shape, v_shape)
    ours = scaled_dot_product_attention(q, k, v)
    theirs = sdpa(q, k, v)
    assert ours[0].shape == theirs[0].shape
    _compare(ours, theirs)


def test_boolean_mask():
    sdpa = _torch_sdpa()
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, (2, 4, 8), (2, 6, 8), (2, 6, 3))
    mask = rng.random((2, 4, 6)) < 0.7
    mask[..., 0] = True  # keep every row attendable here
    _compare(scaled_dot_product_attention(q, k, v, mask), sdpa(q, k, v, mask))


def test_boolean_mask_broadcast():
    sdpa = _torch_sdpa()
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng, (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 3))
    key_padding = np.array([[True, True, True, True, False, False]])  # (1, L_k)
    _compare(scaled_dot_product_attention(q, k, v, key_padding), sdpa(q, k, v, key_padding))
    # NumPy broadcasting also accepts a plain (L_k,) mask; torch wants >= 2-D.
    _compare(scaled_dot_product_attention(q, k, v, key_padding[0]), sdpa(q, k, v, key_padding))


def test_float_mask():
    sdpa = _torch_sdpa()
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, (4, 8), (6, 8), (6, 3))
    bias = rng.normal(size=(4, 6))
    bias[0, 2] = bias[3, 5] = -np.inf
    _compare(scaled_dot_product_attention(q, k, v, bias), sdpa(q, k, v, bias))


def test_causal():
    sdpa = _torch_sdpa()
    q, k, v = _qkv(np.random.default_rng(6), (2, 5, 8), (2, 5, 8), (2, 5, 4))
    ours = scaled_dot_product_attention(q, k, v, causal_mask(5))
    _compare(ours, sdpa(q, k, v, is_causal=True))
    _compare(ours, sdpa(q, k, v, causal_mask(5)))


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_row(kind):
    """torch 2.13 returns a zero output row (not NaN) when every key is masked."""
    sdpa = _torch_sdpa()
    q, k, v = _qkv(np.random.default_rng(7), (3, 4), (5, 4), (5, 2))
    if kind == "bool":
        mask = np.ones((3, 5), dtype=bool)
        mask[1] = False
    else:
        mask = np.zeros((3, 5))
        mask[1] = -np.inf
    ours = scaled_dot_product_attention(q, k, v, mask)
    theirs = sdpa(q, k, v, mask)
    assert theirs[0][1].tolist() == [0.0, 0.0]
    assert theirs[1][1].tolist() == [0.0] * 5
    assert not np.isnan(theirs[0]).any()
    _compare(ours, theirs)


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape",
    [((3, 4), (0, 4), (0, 2)), ((0, 4), (5, 4), (5, 2)), ((2, 3, 4), (2, 0, 4), (2, 0, 2))],
)
def test_empty_sequences(q_shape, k_shape, v_shape):
    """No keys: torch 2.13 returns zero output rows, as qkv does; no queries: no rows."""
    sdpa = _torch_sdpa()
    q, k, v = _qkv(np.random.default_rng(8), q_shape, k_shape, v_shape)
    ours = scaled_dot_product_attention(q, k, v)
    theirs = sdpa(q, k, v)
    assert ours[0].shape == theirs[0].shape and ours[1].shape == theirs[1].shape
    assert not ours[0].any()  # empty, or all zeros
    _compare(ours, theirs)
