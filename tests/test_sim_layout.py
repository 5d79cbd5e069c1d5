"""The fluid kernels' declared layouts: the state's arrays (:data:`STATE_FIELDS`, the
``meta`` entries) and the refill's scratch segments (:data:`REFILL_SCRATCH`) are what the
index constants, :func:`new_state` and the refill's partition of its allocation use."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from lumoscore.sim import kernels
from lumoscore.sim.kernels import (
    LINK_FIELDS,
    META,
    META_ENTRIES,
    REFILL_SCRATCH,
    ROW_FIELDS,
    STATE_FIELDS,
    _new_state,
    _scratch_offsets,
    new_state,
)


def test_every_state_field_is_declared_once_at_its_position() -> None:
    names = [f.name for f in STATE_FIELDS]
    assert len(set(names)) == len(names)
    for i, f in enumerate(STATE_FIELDS):
        assert getattr(kernels, f.name) == i, f.name  # the constant is its position
        assert f.dtype in (np.float64, np.int64) and f.doc
    kinds = [f.kind for f in STATE_FIELDS]
    assert kinds == ["row"] * ROW_FIELDS + ["link"] * LINK_FIELDS + ["meta"]
    assert STATE_FIELDS[META].kind == "meta" and len(STATE_FIELDS) == META + 1


def test_every_meta_entry_is_declared_once_at_its_index() -> None:
    assert len(set(META_ENTRIES)) == len(META_ENTRIES)
    assert not set(META_ENTRIES) & {f.name for f in STATE_FIELDS}
    for i, name in enumerate(META_ENTRIES):
        assert name.startswith("M_") and getattr(kernels, name) == i, name


@pytest.mark.parametrize("make", [new_state, _new_state], ids=["python", "compiled"])
@pytest.mark.parametrize(("n_rows", "n_links"), [(0, 0), (0, 4), (5, 3)])
def test_new_state_makes_the_declared_arrays(make, n_rows: int, n_links: int) -> None:
    st = make(n_rows, n_links)
    assert isinstance(st, tuple) and len(st) == len(STATE_FIELDS)
    size = {"row": n_rows, "link": n_links, "meta": len(META_ENTRIES)}
    for f, a in zip(STATE_FIELDS, st, strict=True):
        assert a.dtype == f.dtype and a.shape == (size[f.kind],), f.name
        assert (a == f.fill).all() and a.flags.c_contiguous and a.flags.writeable, f.name
    for i, a in enumerate(st):  # separate arrays
        assert not any(np.shares_memory(a, b) for b in st[i + 1 :]), STATE_FIELDS[i].name


def _declared_length(i: int, m_max: int, nnz: int, k: int) -> int:
    a, b, c, d = REFILL_SCRATCH[i].length
    return a * m_max + b * nnz + c * k + d


def _offsets(m_max: int, nnz: int, k: int) -> list[int]:
    at = np.full(len(REFILL_SCRATCH) + 1, -1, dtype=np.int64)
    _scratch_offsets(m_max, nnz, k, at)
    return at.tolist()


@pytest.mark.parametrize(
    ("m_max", "nnz", "k"), [(0, 0, 0), (1, 1, 1), (3, 7, 2), (5, 12, 4), (300, 2000, 700)]
)
def test_the_refill_scratch_segments_tile_one_allocation(m_max: int, nnz: int, k: int) -> None:
    """Segment ``i`` spans ``at[i] : at[i + 1]`` (the offsets the refill computes with
    :func:`_scratch_offsets`), of its declared length; the segments follow each other from 0
    to the size of the allocation."""
    n = len(REFILL_SCRATCH)
    names = [s.name for s in REFILL_SCRATCH]
    assert len(set(names)) == n
    at = _offsets(m_max, nnz, k)
    assert at[0] == 0
    for i, s in enumerate(REFILL_SCRATCH):
        assert getattr(kernels, s.name) == i, s.name
        assert at[i + 1] - at[i] == _declared_length(i, m_max, nnz, k) >= 0, s.name


def test_the_refill_slices_every_segment_once_with_its_dtype() -> None:
    """The refill takes each segment of its scratch once, at its offsets, and views exactly
    the float64 segments as float64 (read from its source: the slicing is inline code)."""
    src = inspect.getsource(kernels._refill.py_func)
    taken = re.findall(r"scr\[at\[(S_\w+)\] : at\[(S_\w+) \+ 1\]\](\.view\(np\.float64\))?", src)
    assert [a for a, _, _ in taken] == [b for _, b, _ in taken]
    assert sorted(a for a, _, _ in taken) == sorted(s.name for s in REFILL_SCRATCH)
    floats = {s.name for s in REFILL_SCRATCH if s.dtype is np.float64}
    assert {a for a, _, view in taken if view} == floats
