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

Switching it off: with ``LUMOS_NO_BORROW=1`` in the environment when this module is imported,
:data:`BORROWING` is False and :func:`borrowed` returns its argument unchanged (counted, as
any array), to tell a fault of the borrowing from one of the kernels. Numba's on-disk cache
does not know about the environment, so functions that borrow (or compile a function that
does into their own code, by a call or inlining) are compiled with :func:`kernel` instead of
:func:`~lumoscore.jit.cached_jit`: its cache entries are kept apart per setting of the switch.

Borrowing relies on a Numba internal, the ``meminfo`` field of the array structure; the
``numba`` requirement of the project is bounded above to the versions it was tested with.

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

import os
from collections.abc import Callable
from typing import Any, TypeVar

from numba.core import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from lumoscore.jit import cached_jit

__all__ = ["BORROWING", "NO_BORROW_ENV", "borrowed", "kernel"]

#: The environment variable that switches borrowing off (any value but empty or ``0``).
NO_BORROW_ENV = "LUMOS_NO_BORROW"
#: Whether :func:`borrowed` drops reference counts (read from :data:`NO_BORROW_ENV` once, at
#: import: compiled code keeps the choice it was compiled with).
BORROWING: bool = os.environ.get(NO_BORROW_ENV, "").strip() in ("", "0")
#: Suffix of the qualified name under which :func:`kernel` caches functions compiled with
#: borrowing off.
_COUNTED_SUFFIX = "__counted"

_F = TypeVar("_F", bound=Callable[..., Any])


def kernel(fn: _F | None = None, /, **options: Any) -> Any:
    """:func:`~lumoscore.jit.cached_jit` (``numba.njit(cache=True, **options)``) for a
    function that borrows, or whose compiled code includes one that does (a call or an
    inlined helper).

    Numba keys its cache entries on the function's module, qualified name, first line and
    bytecode, not on :data:`BORROWING`; with borrowing off the function is cached under its
    qualified name with a suffix, so neither setting ever loads the other's code. Used bare
    (``@kernel``) or with options (``@kernel(inline="always")``).
    """

    def wrap(f: _F) -> Any:
        if not BORROWING:
            f.__qualname__ += _COUNTED_SUFFIX
        return cached_jit(**options)(f)

    return wrap if fn is None else wrap(fn)


def _unowned(context: Any, builder: Any, typ: types.Array, value: Any) -> Any:
    """The array struct ``value`` with a null memory-info pointer."""
    ary = context.make_array(typ)(context, builder, value=value)
    ary.meminfo = context.get_constant_null(types.MemInfoPointer(typ.dtype))
    return ary._getvalue()


def _counted(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """The argument itself, as a new reference (borrowing off)."""
    return impl_ret_borrowed(context, builder, sig.return_type, args[0])


@intrinsic
def borrowed(typingctx: Any, x: Any) -> Any:  # pragma: no cover - compiled
    """``x`` (an array, or a tuple of arrays) without reference counting; see the module."""
    if isinstance(x, types.Array):

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return _unowned(context, builder, sig.args[0], args[0])

        return x(x), codegen if BORROWING else _counted
    if isinstance(x, types.BaseTuple) and all(isinstance(t, types.Array) for t in x.types):

        def codegen_tuple(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            tup = args[0]
            for i, typ in enumerate(sig.args[0].types):
                item = builder.extract_value(tup, i)
                tup = builder.insert_value(tup, _unowned(context, builder, typ, item), i)
            return tup

        return x(x), codegen_tuple if BORROWING else _counted
    return None
