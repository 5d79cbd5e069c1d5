"""MurmurHash3 x86_32 (vectorized) against the reference ``mmh3`` package, bit for bit."""

from __future__ import annotations

import struct

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.fabric.hashing import flow_hash, flow_key_words, murmur3_32


@settings(max_examples=60, deadline=None)
@given(
    words=st.integers(0, 6),
    n=st.integers(1, 20),
    seed=st.integers(0, 2**32 - 1),
    data_seed=st.integers(0, 2**31),
)
def test_murmur3_matches_mmh3(words: int, n: int, seed: int, data_seed: int) -> None:
    rng = np.random.default_rng(data_seed)
    keys = rng.integers(0, 2**32, size=(n, words), dtype=np.uint64).astype(np.uint32)
    got = murmur3_32(keys, seed)
    want = [mmh3.hash(row.astype("<u4").tobytes(), seed, signed=False) for row in keys]
    assert got.dtype == np.uint32
    assert got.tolist() == want


def test_murmur3_edge_words() -> None:
    keys = np.array([[0, 0], [0xFFFFFFFF, 0xFFFFFFFF], [1, 0x80000000]], dtype=np.uint32)
    for seed in (0, 1, 0xFFFFFFFF):
        want = [mmh3.hash(r.astype("<u4").tobytes(), seed, signed=False) for r in keys]
        assert murmur3_32(keys, seed).tolist() == want


@settings(max_examples=40, deadline=None)
@given(
    src=st.integers(0, 2**31 - 1),
    dst=st.integers(0, 2**31 - 1),
    key=st.integers(-(2**63), 2**63 - 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_flow_hash_is_mmh3_of_the_5tuple_stand_in(src: int, dst: int, key: int, seed: int) -> None:
    want = mmh3.hash(struct.pack("<IIq", src, dst, key), seed, signed=False)
    assert int(flow_hash([src], [dst], [key], seed)[0]) == want


def test_flow_key_words_layout() -> None:
    w = flow_key_words(np.array([7]), np.array([9]), np.array([(5 << 32) + 3]))
    assert w.tolist() == [[7, 9, 3, 5]]


def test_murmur3_rejects_1d() -> None:
    with pytest.raises(ValueError, match="2-D"):
        murmur3_32(np.zeros(3, dtype=np.uint32))


def test_flow_hash_per_flow_kernel_equals_row_hash() -> None:
    # flow_hash runs the per-flow kernel the Clos router inlines; murmur3_32 hashes the rows
    rng = np.random.default_rng(3)
    src = rng.integers(0, 2**31, 500)
    dst = rng.integers(0, 2**31, 500)
    key = rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64)
    for seed in (0, 1, 2**32 - 1):
        got = flow_hash(src, dst, key, seed)
        assert got.dtype == np.uint32
        assert np.array_equal(got, murmur3_32(flow_key_words(src, dst, key), seed))
