"""Borrowed arrays: views that hold no reference, for compiled kernels' hot loops.

Numba counts references to every array with atomic operations: each time a compiled function
binds an array to a new name (a helper inlined into a loop binds its arguments, once per
iteration) it calls ``NRT_incref``, and ``NRT_decref`` when the name goes. Its pass that prunes
such pairs gives up on most loop bodies with branches, so a loop calling small helpers on a
few arrays spends more time counting references than working (a quarter of a simulation of
the ``clos-25.6T-3tier`` preset, measured by making the counts non-atomic).

:func:`borrowed` returns the same array (or tuple of arrays) without its reference count: an
array whose memory-info pointer is null, as Numba's own arrays of constant data are. Counting
references to it costs a call and a null test, and nothing where the compiler sees the null
pointer: a kernel compiled on its own should borrow its arguments itself even when its caller
passes borrowed ones. The caller must keep the original alive while the view is in use (a
kernel's arguments are: its caller holds them) and must not return the view (or a view of
it) to Python.

Examples
--------
>>> import numba
>>> import numpy as np
>>> @numba.njit
... def total(a):
...     b = borrowed(a)
...     return b.sum()
>>> float(total(np.arange(4.0)))
6.0
"""

from __future__ import annotations

from typing import Any

from numba.core import types
from numba.extending import intrinsic

__all__ = ["borrowed"]


def _unowned(context: Any, builder: Any, typ: types.Array, value: Any) -> Any:
    """The array struct ``value`` with a null memory-info pointer."""
    ary = context.make_array(typ)(context, builder, value=value)
    ary.meminfo = context.get_constant_null(types.MemInfoPointer(typ.dtype))
    return ary._getvalue()


@intrinsic
def borrowed(typingctx: Any, x: Any) -> Any:  # pragma: no cover - compiled
    """``x`` (an array, or a tuple of arrays) without reference counting; see the module."""
    if isinstance(x, types.Array):

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return _unowned(context, builder, sig.args[0], args[0])

        return x(x), codegen
    if isinstance(x, types.BaseTuple) and all(isinstance(t, types.Array) for t in x.types):

        def codegen_tuple(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            tup = args[0]
            for i, typ in enumerate(sig.args[0].types):
                item = builder.extract_value(tup, i)
                tup = builder.insert_value(tup, _unowned(context, builder, typ, item), i)
            return tup

        return x(x), codegen_tuple
    return None
