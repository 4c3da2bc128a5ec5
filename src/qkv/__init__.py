"""qkv: token embeddings, positional encodings and Q/K/V self-attention.

Small, readable NumPy implementations of the input side of a Transformer
(Vaswani et al. 2017, "Attention Is All You Need"), one concept per module:

* ``qkv.embeddings``: token ids -> vectors (a table lookup);
* ``qkv.positional``: sinusoidal and learned position vectors;
* ``qkv.attention``: softmax, scaled dot-product attention, masks;
* ``qkv.streaming``: the same attention over key blocks (online softmax), never the full score matrix;
* ``qkv.kv_cache``: ``KVCache``, keys and values of earlier tokens for decoding;
* ``qkv.split_keys``: attention over disjoint key sets, merged by their
  log-sum-exp (split-K, Flash-Decoding: a partial and a finalize aggregate);
* ``qkv.paged_cache``: ``PagedKVCache``, a KV cache in fixed-size blocks with a
  free list, shared prefix blocks and LRU eviction (a buffer pool);
* ``qkv.multihead``: multi-head attention, with PyTorch's weight layout;
* ``qkv.grouped``: grouped-query attention (GQA, MQA): query head ``h`` reads
  key/value head ``h // group``;
* ``qkv.rotary``: rotary position embedding (RoPE), rotating queries and keys;
* ``qkv.alibi``: ALiBi, per-head linear distance penalties on the scores;
* ``qkv.training``: learning one head's W_query, W_key, W_value (or several heads
  and W_O) by gradient descent;
* ``qkv.toy``: the curriculum's small, labelled example data;
* ``qkv.sql``: one attention head, or a whole multi-head layer, as SQL on
  SQLite, PostgreSQL or DuckDB.

Examples
--------
>>> import qkv
>>> x = qkv.embed(qkv.toy.token_ids(["cat", "dog"]), qkv.toy.EMBEDDINGS)
>>> z = x + qkv.sinusoidal_encoding(2, 4)   # add, don't concatenate
>>> z.shape
(2, 4)
"""

# First, before NumPy: a checker process imports nothing from its working directory (see _checker_start).
from qkv import _checker_start  # noqa: F401  # isort: skip

from qkv import sql, toy
from qkv.alibi import alibi_bias, alibi_slopes
from qkv.attention import causal_mask, scaled_dot_product_attention, self_attention, softmax
from qkv.embeddings import (
    cosine_similarity,
    cosine_similarity_matrix,
    embed,
    nearest_neighbours,
    one_hot,
)
from qkv.grouped import grouped_query_attention
from qkv.kv_cache import KVCache
from qkv.multihead import multi_head_attention
from qkv.paged_cache import PagedKVCache
from qkv.positional import (
    learned_positional_table,
    pair_frequencies,
    pair_wavelengths,
    positional_rows,
    shift_matrix,
    sinusoidal_encoding,
)
from qkv.rotary import rotary_encoding
from qkv.split_keys import merge_attention, partial_attention
from qkv.streaming import streaming_attention
from qkv.training import (
    attention_backward,
    attention_forward,
    bank_sense_task,
    init_projections,
    mse_loss,
    multi_head_forward,
    noun_and_verb_task,
    packed_weights,
    train,
    train_heads,
)


def _version() -> str:
    # One place for the version: pyproject.toml, read back from the installed
    # package's metadata (a source tree that was never installed has none).
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("qkv")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "0+unknown"


__version__ = _version()

__all__ = [
    "__version__",
    "toy",
    "sql",
    # embeddings
    "one_hot",
    "embed",
    "cosine_similarity",
    "cosine_similarity_matrix",
    "nearest_neighbours",
    # positional
    "sinusoidal_encoding",
    "pair_frequencies",
    "pair_wavelengths",
    "shift_matrix",
    "learned_positional_table",
    "positional_rows",
    # attention
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "self_attention",
    # at scale
    "streaming_attention",
    "KVCache",
    "partial_attention",
    "merge_attention",
    "PagedKVCache",
    # multi-head
    "multi_head_attention",
    "grouped_query_attention",
    # relative positions
    "rotary_encoding",
    "alibi_slopes",
    "alibi_bias",
    # training
    "attention_forward",
    "attention_backward",
    "mse_loss",
    "init_projections",
    "bank_sense_task",
    "train",
    "noun_and_verb_task",
    "multi_head_forward",
    "packed_weights",
    "train_heads",
]
