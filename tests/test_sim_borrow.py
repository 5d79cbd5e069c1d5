"""Borrowed arrays: the same memory as the original, with no reference count (a null
memory-info pointer), for single arrays and tuples of arrays of mixed dtypes."""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

from lumoscore.sim.borrow import borrowed


@intrinsic
def _counted(typingctx, arr):  # type: ignore[no-untyped-def]
    """Whether array ``arr`` carries a memory-info pointer (a reference count)."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        return builder.icmp_unsigned("!=", ary.meminfo, ary.meminfo.type(None))

    return types.boolean(arr), codegen


@numba.njit(inline="always")
def _bump(a, i):  # type: ignore[no-untyped-def]
    if a[i] < 2.0:
        a[i] += 1.0
    else:
        a[i] += 0.5


@numba.njit
def _bump_borrowed(a, n):  # type: ignore[no-untyped-def]
    b = borrowed(a)
    for i in range(n):
        _bump(b, i % b.size)
    return _counted(a), _counted(b), _counted(b[1:])


@numba.njit
def _write_borrowed(x, y, flags):  # type: ignore[no-untyped-def]
    bx, by, bf = borrowed((x, y, flags))
    bx[0] = 5.5
    by[1] = 7
    bf[2] = True
    return _counted(bx) or _counted(by) or _counted(bf), bx.sum(), by.sum()


def test_a_borrowed_array_shares_memory_and_counts_no_references() -> None:
    a = np.zeros(3)
    own, view, sliced = _bump_borrowed(a, 10)
    assert own and not view and not sliced
    # four bumps of entry 0 (1, 2, 2.5, 3), three of entries 1 and 2 (1, 2, 2.5)
    assert a.tolist() == [3.0, 2.5, 2.5]


def test_a_borrowed_tuple_keeps_each_array_and_its_dtype() -> None:
    x, y, flags = np.arange(3.0), np.arange(3), np.zeros(3, dtype=np.bool_)
    counted, sx, sy = _write_borrowed(x, y, flags)
    assert not counted
    assert x.tolist() == [5.5, 1.0, 2.0] and y.tolist() == [0, 7, 2]
    assert flags.tolist() == [False, False, True]
    assert (sx, sy) == (8.5, 9)
