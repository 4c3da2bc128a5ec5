"""A paged KV cache: a buffer pool of fixed-size blocks, shared by prefix.

``qkv.KVCache`` keeps one growing array per sequence. A server decoding many
sequences at once cannot: their lengths are unknown in advance, and
reserving the longest possible length for each wastes most of the memory.
PagedAttention (Kwon et al. 2023, arXiv:2309.06180, vLLM) cuts the cache
into blocks of ``block_size`` tokens, as an operating system pages memory
and as a database's buffer pool holds pages:

* the **pool**: ``num_blocks`` blocks, each with room for ``block_size`` key
  rows and value rows, allocated once;
* the **block table** of a sequence: the physical block that holds each of
  its logical blocks (tokens ``0 .. block_size - 1`` in the first, ...),
  like a page table;
* the **free list**: blocks holding nothing;
* **reference counts** (a buffer pool's pin counts): how many sequences
  point at a block. A block with a count above 0 cannot be evicted.

**Prefix sharing** (vLLM's automatic prefix caching). A full block is named
by a hash chained from its parent block's hash and its own token ids, so
the name covers the whole prefix up to its end: the same tokens after the
same prefix, the same name. When a sequence completes a block whose name is
already in the cache, it points to the cached block (whose count goes up)
and its own copy goes back to the free list: prompts that share a system
prompt store it once. A freed sequence's full blocks keep their rows with a
count of 0 (*cached*), so a later request with the same prefix finds them.
When no block is free, the least recently used cached block is evicted.

The cache trusts token ids, as vLLM does: the same tokens after the same
prefix must give the same rows. It checks it too: rows that differ from the
shared block's by more than 1e-12 raise ValueError instead of being dropped
silently.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qkv._checks import (
    as_finite_float_array,
    check_array_bytes,
    check_int,
    check_positive_int,
    check_real_number,
)
from qkv.attention import _attend

__all__ = ["PagedKVCache"]

#: Rows appended for a shared block may differ from the cached rows by at most this much.
SHARED_ROWS_ATOL = 1e-12


@dataclass
class _Sequence:
    """One sequence's entry: its block table and where its next token goes."""

    table: list[int] = field(default_factory=list)  # physical block of logical block 0, 1, ...
    length: int = 0  # tokens appended
    parent: bytes = b""  # chained hash of its last full block (b"" before the first)
    pending: list[int] = field(default_factory=list)  # token ids of its partial last block


def _block_hash(parent: bytes, tokens: tuple[int, ...]) -> bytes:
    """The chained name of a full block: SHA-256 of the parent's name and the block's token ids."""
    digest = hashlib.sha256(parent)
    digest.update(repr(tokens).encode("ascii"))
    return digest.digest()


class PagedKVCache:
    """Key and value rows of many sequences, in shared fixed-size blocks.

    Parameters
    ----------
    num_blocks : int
        Blocks in the pool, allocated at construction.
    block_size : int
        Tokens per block.
    d_key : int
        Length of a key row (and of a query).
    d_value : int, optional
        Length of a value row; defaults to ``d_key``.

    Notes
    -----
    Every block is in exactly one of three states, and ``stats()`` counts
    them: *in use* (reference count above 0: a live sequence points at it),
    *cached* (count 0, full, still holding its rows and its name: evictable,
    and reusable by a sequence that completes the same block) and *free*
    (holding nothing).

    A sequence's last block, while partly filled, is its own. When it fills:

    * if a block with the same chained hash is in the cache (in use or
      cached), the sequence points at that block instead; its count goes up,
      ``prefix_hits`` goes up by one, and the sequence's copy returns to the
      free list. The rows the sequence appended for the block must match the
      cached ones to 1e-12 (``SHARED_ROWS_ATOL``);
    * otherwise the block keeps its rows and takes the hash as its name.

    A new block comes from the free list; when it is empty, the cached
    block used least recently is evicted (its name forgotten) and reused.
    ``free(seq)`` releases a sequence's blocks from its last to its first,
    so of one sequence's blocks the tail is evicted first and the prefix,
    the part other requests are likeliest to share, last.

    Rows arrive one token at a time, so a block is taken when a sequence's
    next block starts, before its tokens are known. In a pool with no free
    block, that can evict the very cached block the sequence would have
    matched when the block fills. vLLM's scheduler, which holds the whole
    prompt, looks its blocks up before it allocates.

    Examples
    --------
    Two sequences share a 32-token prompt; the second goes on for 5 tokens.
    With blocks of 16 tokens the prompt is 2 blocks, stored once, and the
    second sequence's 5 tokens take a third block: 3 blocks in use, not 5.

    >>> import numpy as np
    >>> import qkv
    >>> rng = np.random.default_rng(0)
    >>> tokens = rng.integers(0, 1000, size=37).tolist()  # 32 shared, then 5 more
    >>> keys, values = rng.normal(size=(2, 37, 8))        # a model's rows for them, d = 8
    >>> cache = qkv.PagedKVCache(num_blocks=8, block_size=16, d_key=8)
    >>> for seq, length in (("a", 32), ("b", 37)):
    ...     for i in range(length):
    ...         cache.append(seq, tokens[i], keys[i], values[i])
    >>> cache.stats()
    {'blocks_in_use': 3, 'blocks_free': 5, 'blocks_cached': 0, 'prefix_hits': 2,
     'evictions': 0, 'sequences': 2}
    >>> cache.block_table("a"), cache.block_table("b")   # the page tables
    ((0, 1), (0, 1, 2))

    Attending reads the sequence's blocks through its table; it equals
    attention over the dense rows (``qkv.KVCache`` gives the same):

    >>> query = rng.normal(size=8)
    >>> dense, _ = qkv.scaled_dot_product_attention(query[None], keys, values)
    >>> bool(np.abs(cache.attend("b", query) - dense[0]).max() < 1e-12)
    True

    Freed, the two full prompt blocks stay cached for the next request; the
    partial block goes back to the free list:

    >>> cache.free("a")
    >>> cache.free("b")
    >>> cache.stats()
    {'blocks_in_use': 0, 'blocks_free': 6, 'blocks_cached': 2, 'prefix_hits': 2,
     'evictions': 0, 'sequences': 0}
    """

    def __init__(self, num_blocks: int, block_size: int, d_key: int, d_value: int | None = None) -> None:
        num_blocks = check_positive_int(num_blocks, "num_blocks")
        block_size = check_positive_int(block_size, "block_size")
        d_key = check_positive_int(d_key, "d_key")
        d_value = d_key if d_value is None else check_positive_int(d_value, "d_value")
        for width, name in ((d_key, "d_key"), (d_value, "d_value")):
            check_array_bytes(
                (num_blocks, block_size, width),
                np.float64,
                f"num_blocks={num_blocks}, block_size={block_size}, {name}={width}",
            )
        self._num_blocks = num_blocks
        self._block_size = block_size
        self._keys = np.zeros((num_blocks, block_size, d_key))  # (block, slot in block, d_key)
        self._values = np.zeros((num_blocks, block_size, d_value))  # (block, slot in block, d_value)
        self._refs = [0] * num_blocks  # reference (pin) counts
        self._names: list[bytes | None] = [None] * num_blocks  # chained hash of a full block
        self._by_name: dict[bytes, int] = {}  # chained hash -> block holding it
        self._free = list(range(num_blocks - 1, -1, -1))  # a stack: block 0 is handed out first
        self._cached: OrderedDict[int, None] = OrderedDict()  # count 0, full: least recently used first
        self._seqs: dict[Hashable, _Sequence] = {}
        self._prefix_hits = 0
        self._evictions = 0

    @property
    def num_blocks(self) -> int:
        """Blocks in the pool."""
        return self._num_blocks

    @property
    def block_size(self) -> int:
        """Tokens per block."""
        return self._block_size

    @property
    def d_key(self) -> int:
        """Length of a key row."""
        return self._keys.shape[2]

    @property
    def d_value(self) -> int:
        """Length of a value row."""
        return self._values.shape[2]

    def __repr__(self) -> str:
        stats = self.stats()
        return (
            f"PagedKVCache(num_blocks={self._num_blocks}, block_size={self._block_size}, "
            f"d_key={self.d_key}, d_value={self.d_value}; {stats['sequences']} sequences, "
            f"{stats['blocks_in_use']} blocks in use, {stats['blocks_cached']} cached, "
            f"{stats['blocks_free']} free)"
        )

    def __contains__(self, seq: object) -> bool:
        try:
            return seq in self._seqs
        except TypeError:  # unhashable: never a sequence id
            return False

    def __len__(self) -> int:
        """The number of live sequences."""
        return len(self._seqs)

    def append(self, seq: Hashable, token: int, key: Any, value: Any) -> None:
        """Add one token's key and value rows to sequence ``seq``.

        Parameters
        ----------
        seq : hashable
            The sequence's id (an int, a str, ...); a new id starts a sequence.
        token : int
            The token's id. Blocks are shared by their token ids (and those
            of every block before them), not by their rows.
        key : array_like, shape (d_key,)
        value : array_like, shape (d_value,)

        Raises
        ------
        TypeError
            If ``seq`` is not hashable, ``token`` is not an integer, or
            ``key`` or ``value`` is not numeric.
        ValueError
            If ``key`` or ``value`` has the wrong shape or holds NaN/inf; or
            this token completes a block that matches a cached block while
            the rows appended for it differ from the cached rows by more than
            1e-12 (the message names ``seq`` and the token position). Nothing
            is stored then; the sequence's earlier rows stay as they were.
        RuntimeError
            If the token needs a new block and none is free or evictable:
            every block is pinned by a live sequence. Nothing is stored.
        """
        _check_seq(seq)
        token = check_int(token, "token")
        k = self._row(key, "key", self.d_key)
        v = self._row(value, "value", self.d_value)
        state = self._seqs.get(seq) or _Sequence()
        offset = state.length % self._block_size  # this token's slot in its block
        if offset == self._block_size - 1:  # the token completes a block: name it
            tokens = (*state.pending, token)
            name = _block_hash(state.parent, tokens)
            shared = self._by_name.get(name)
            if shared is not None:
                self._check_shared_rows(seq, state, shared, k, v, tokens)  # raises before any change
                if offset:  # the sequence's own copy of the block goes back to the free list
                    self._release(state.table.pop())
                self._pin(shared)
                state.table.append(shared)
                self._prefix_hits += 1
            else:
                if offset == 0:
                    state.table.append(self._allocate())
                block = state.table[-1]
                self._keys[block, offset] = k
                self._values[block, offset] = v
                self._names[block] = name
                self._by_name[name] = block
            state.parent = name
            state.pending = []
        else:
            if offset == 0:
                state.table.append(self._allocate())  # raises RuntimeError before any change
            block = state.table[-1]
            self._keys[block, offset] = k
            self._values[block, offset] = v
            state.pending.append(token)
        state.length += 1
        self._seqs[seq] = state

    def attend(self, seq: Hashable, query: Any, *, scale: float | None = None) -> np.ndarray:
        """Attention of ``query`` over every row appended to ``seq``, in order.

        Parameters
        ----------
        seq : hashable
            A live sequence's id.
        query : array_like, shape (d_key,)
        scale : float, optional
            Multiplies the scores; defaults to ``1 / sqrt(d_key)``.

        Returns
        -------
        numpy.ndarray, shape (d_value,)
            ``qkv.scaled_dot_product_attention(query[None], K, V)[0][0]``,
            where ``K`` and ``V`` are the rows appended to ``seq``.

        Raises
        ------
        TypeError
            If ``seq`` is not hashable, ``query`` is not numeric or ``scale``
            is not a real number.
        ValueError
            If ``seq`` is not a live sequence, ``query`` does not have shape
            ``(d_key,)`` or holds NaN/inf, or a score overflows float64.
        """
        state = self._state(seq)
        q = self._row(query, "query", self.d_key)
        scale = 1.0 / np.sqrt(self.d_key) if scale is None else check_real_number(scale, "scale")
        # The block table maps logical blocks to physical ones:
        # (n_blocks, block_size, d) -> (n_blocks * block_size, d) -> the first `length` rows (L, d)
        keys = self._keys[state.table].reshape(-1, self.d_key)[: state.length]
        values = self._values[state.table].reshape(-1, self.d_value)[: state.length]
        # (1, d_key) against (L, d_key) keys and (L, d_value) values -> (1, d_value)
        output, _ = _attend(q[None], keys, values, None, scale)
        return output[0]

    def free(self, seq: Hashable) -> None:
        """End sequence ``seq``: release its blocks, last to first.

        A block no other sequence points at keeps its rows with a reference
        count of 0 if it is full (cached: evictable, and reusable by a
        sequence with the same prefix); a partly filled one is emptied onto
        the free list.

        Raises
        ------
        TypeError
            If ``seq`` is not hashable.
        ValueError
            If ``seq`` is not a live sequence.
        """
        state = self._state(seq)
        del self._seqs[seq]
        for block in reversed(state.table):  # the tail becomes least recently used
            self._release(block)

    def block_table(self, seq: Hashable) -> tuple[int, ...]:
        """The physical block of each of ``seq``'s logical blocks, first to last."""
        return tuple(self._state(seq).table)

    def stats(self) -> dict[str, int]:
        """Block accounting, as a dict of ints.

        Returns
        -------
        dict
            ``blocks_in_use`` (reference count above 0), ``blocks_free``
            (holding nothing), ``blocks_cached`` (reference count 0, still
            holding rows): the three add up to ``num_blocks``.
            ``prefix_hits``: completed blocks found in the cache and shared
            instead of stored again. ``evictions``: cached blocks reused for
            other rows. ``sequences``: live sequences.
        """
        return {
            "blocks_in_use": sum(1 for count in self._refs if count > 0),
            "blocks_free": len(self._free),
            "blocks_cached": len(self._cached),
            "prefix_hits": self._prefix_hits,
            "evictions": self._evictions,
            "sequences": len(self._seqs),
        }

    # --- the pool's bookkeeping -------------------------------------------------

    def _allocate(self) -> int:
        """A block for new rows, pinned once: a free one, else the least recently used cached one."""
        if self._free:
            block = self._free.pop()
        elif self._cached:
            block, _ = self._cached.popitem(last=False)
            del self._by_name[self._names[block]]
            self._names[block] = None
            self._evictions += 1
        else:
            pinned = sum(1 for count in self._refs if count > 0)
            raise RuntimeError(
                f"PagedKVCache has no block to give: {pinned} of {self._num_blocks} blocks are "
                f"pinned (reference count above 0) by {len(self._seqs)} live sequences, with "
                f"block_size={self._block_size} tokens each, so none is free and none can be "
                "evicted; free(seq) a finished sequence, or make num_blocks larger"
            )
        self._refs[block] = 1
        return block

    def _pin(self, block: int) -> None:
        """One more sequence points at ``block``; a cached block is no longer evictable."""
        if self._refs[block] == 0:
            del self._cached[block]
        self._refs[block] += 1

    def _release(self, block: int) -> None:
        """One sequence fewer points at ``block``; at 0 it is cached (if full) or freed."""
        self._refs[block] -= 1
        if self._refs[block] > 0:
            return
        if self._names[block] is None:
            self._free.append(block)  # reused next, before the untouched ones
        else:
            self._cached[block] = None  # the most recently used end

    # --- checks -----------------------------------------------------------------

    def _state(self, seq: Hashable) -> _Sequence:
        _check_seq(seq)
        state = self._seqs.get(seq)
        if state is None:
            raise ValueError(
                f"seq {seq!r} is not a sequence in this cache: append(seq, token, key, value) "
                "starts one, and free(seq) ends it"
            )
        return state

    def _row(self, row: Any, name: str, width: int) -> np.ndarray:
        arr = as_finite_float_array(row, name)
        if arr.shape != (width,):
            dim = "d_value" if name == "value" else "d_key"
            raise ValueError(f"{name} must have shape ({dim},) = ({width},), one row, got shape {arr.shape}")
        return arr

    def _check_shared_rows(
        self,
        seq: Hashable,
        state: _Sequence,
        shared: int,
        k: np.ndarray,
        v: np.ndarray,
        tokens: tuple[int, ...],
    ) -> None:
        """Raise ValueError if the rows ``seq`` appended for a block differ from block ``shared``'s."""
        offset = state.length % self._block_size
        own = state.table[-1] if offset else None
        for name, store, row in (("key", self._keys, k), ("value", self._values, v)):
            mine = row[None] if own is None else np.concatenate([store[own, :offset], row[None]])
            gap = np.abs(mine - store[shared]).max(axis=1)  # (block_size, d) -> (block_size,)
            bad = np.flatnonzero(gap > SHARED_ROWS_ATOL)
            if bad.size:
                slot = int(bad[0])
                position = state.length - offset + slot
                raise ValueError(
                    f"seq {seq!r}: the {name} row at token position {position} (token id "
                    f"{tokens[slot]}) differs by {gap[slot]:.3g}, more than {SHARED_ROWS_ATOL:g}, "
                    f"from the cached block {shared} with the same token ids after the same "
                    "prefix; blocks are shared by token ids, as in vLLM, so the same tokens after "
                    "the same prefix must give the same rows. Nothing was stored; free(seq) "
                    "to start the sequence again"
                )


def _check_seq(seq: object) -> None:
    try:
        hash(seq)
    except TypeError:
        raise TypeError(f"seq must be hashable (an id such as an int or a str), got {type(seq).__name__}") from None
    if seq != seq:  # noqa: PLR0124 - NaN: a new key at every lookup, so its blocks could never be freed
        raise ValueError(f"seq must equal itself to name one sequence (a NaN never does), got {seq!r}")
