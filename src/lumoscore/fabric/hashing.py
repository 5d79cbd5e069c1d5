"""Compiled MurmurHash3 (x86_32) for ECMP flow hashing.

Switches pick an equal-cost next hop by hashing the packet's 5-tuple; the simulator's stand-in
for the 5-tuple is ``(src GPU, dst GPU, flow_key)``. :func:`murmur3_32` hashes many keys of
whole 32-bit words at once in compiled code (Numba, no per-flow Python) and is bit-exact with
the reference implementation (the ``mmh3`` package, ``mmh3.hash(key_bytes, seed,
signed=False)``) when each key is the little-endian byte string of its words.

Examples
--------
>>> import numpy as np
>>> int(murmur3_32(np.array([[0x64636261]], dtype=np.uint32), seed=3)[0])  # b"abcd"
336714652
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.jit import cached_jit

__all__ = ["flow_hash", "flow_hash_jit", "flow_key_words", "murmur3_32"]

U32 = np.uint32
_M = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_N = np.uint64(0xE6546B64)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)


@cached_jit(inline="always")
def _mix(h: np.uint64, word: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    # one 32-bit block of the body; 32-bit arithmetic in uint64 masked to 32 bits (every
    # constant a uint64: Numba turns mixed uint64/int64 arithmetic into floats)
    k = (word * _C1) & _M
    k = ((k << np.uint64(15)) | (k >> np.uint64(17))) & _M
    k = (k * _C2) & _M
    h ^= k
    h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & _M
    return (h * np.uint64(5) + _N) & _M


@cached_jit(inline="always")
def _finish(h: np.uint64, n_bytes: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    h ^= n_bytes & _M
    h ^= h >> np.uint64(16)
    h = (h * _F1) & _M
    h ^= h >> np.uint64(13)
    h = (h * _F2) & _M
    h ^= h >> np.uint64(16)
    return h


@cached_jit(internal=True)
def flow_hash_jit(src: int, dst: int, key: int, seed: np.uint64) -> np.uint64:
    """MurmurHash3 x86_32 of one flow's ``(src, dst, key)`` words (as :func:`flow_hash`),
    compiled: other Numba kernels call it per flow. ``seed`` must be a ``numpy.uint64``.

    Examples
    --------
    >>> import numpy as np
    >>> int(flow_hash_jit(3, 9, 42, np.uint64(7))) == int(flow_hash([3], [9], [42], seed=7)[0])
    True
    """
    h = seed & _M
    h = _mix(h, np.uint64(src & 0xFFFFFFFF))
    h = _mix(h, np.uint64(dst & 0xFFFFFFFF))
    h = _mix(h, np.uint64(key & 0xFFFFFFFF))
    h = _mix(h, np.uint64((key >> 32) & 0xFFFFFFFF))
    return _finish(h, np.uint64(16))


@cached_jit
def _murmur3_rows(
    w: NDArray[np.uint32], seed: np.uint64
) -> NDArray[np.uint32]:  # pragma: no cover - compiled
    n, m = w.shape
    out = np.empty(n, dtype=np.uint32)
    tail = np.uint64(4 * m)
    for i in range(n):
        h = seed & _M
        for j in range(m):
            h = _mix(h, np.uint64(w[i, j]))
        out[i] = np.uint32(_finish(h, tail))
    return out


@cached_jit
def _flow_hash_rows(
    src: NDArray[np.int64], dst: NDArray[np.int64], key: NDArray[np.int64], seed: np.uint64
) -> NDArray[np.uint32]:  # pragma: no cover - compiled
    out = np.empty(src.size, dtype=np.uint32)
    for i in range(src.size):
        out[i] = np.uint32(flow_hash_jit(src[i], dst[i], key[i], seed))
    return out


def murmur3_32(words: ArrayLike, seed: int = 0) -> NDArray[np.uint32]:
    """MurmurHash3 x86_32 of each row of ``words`` (one key per row, whole 32-bit words).

    Parameters
    ----------
    words : array_like of uint32, shape (n, w)
        Key ``i`` is the little-endian byte string of ``words[i]`` (``4 w`` bytes).
    seed : int
        Hash seed in ``[0, 2**32)``.

    Returns
    -------
    numpy.ndarray of uint32, shape (n,)
        Equal to ``mmh3.hash(words[i].astype('<u4').tobytes(), seed, signed=False)``.

    Examples
    --------
    >>> import numpy as np
    >>> murmur3_32(np.zeros((2, 0), dtype=np.uint32), seed=0).tolist()  # empty keys
    [0, 0]
    """
    w = np.asarray(words)
    if w.ndim != 2:
        raise ValueError(f"words must be a 2-D array (keys x words), got shape {w.shape}")
    return _murmur3_rows(np.ascontiguousarray(w, dtype=U32), np.uint64(int(seed) & 0xFFFFFFFF))


def flow_key_words(src: ArrayLike, dst: ArrayLike, flow_key: ArrayLike) -> NDArray[np.uint32]:
    """The 5-tuple stand-in of each flow as 4 words: src, dst, flow_key (low, high word).

    Examples
    --------
    >>> flow_key_words([1], [2], [-1]).tolist()
    [[1, 2, 4294967295, 4294967295]]
    """
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    key = np.ascontiguousarray(np.asarray(flow_key, dtype=np.int64).astype("<i8"))
    out = np.empty((s.size, 4), dtype=U32)
    out[:, 0] = s.astype(U32)
    out[:, 1] = d.astype(U32)
    out[:, 2:] = key.view("<u4").reshape(-1, 2)
    return out


def flow_hash(
    src: ArrayLike, dst: ArrayLike, flow_key: ArrayLike, seed: int = 0
) -> NDArray[np.uint32]:
    """MurmurHash3 of each flow's ``(src, dst, flow_key)`` (16 bytes) with ``seed``.

    Bit-exact with ``mmh3.hash(struct.pack('<IIq', src, dst, flow_key), seed, signed=False)``.

    Examples
    --------
    >>> import struct, mmh3
    >>> int(flow_hash([3], [9], [42], seed=7)[0]) == mmh3.hash(
    ...     struct.pack("<IIq", 3, 9, 42), 7, signed=False)
    True
    """
    s = np.ascontiguousarray(src, dtype=np.int64).reshape(-1)
    d = np.ascontiguousarray(dst, dtype=np.int64).reshape(-1)
    k = np.ascontiguousarray(flow_key, dtype=np.int64).reshape(-1)
    s, d, k = np.broadcast_arrays(s, d, k)
    return _flow_hash_rows(
        np.ascontiguousarray(s),
        np.ascontiguousarray(d),
        np.ascontiguousarray(k),
        np.uint64(int(seed) & 0xFFFFFFFF),
    )
