"""NumPy's sorts for compiled kernels, each behind a cached function of its own.

Numba compiles its implementation of a NumPy sort (``np.sort``, ``np.argsort``,
``np.unique``) in every process that meets it, about a second for each kind and dtype, and
keeps it on disk only inside the kernels that call it. Called through these
functions instead, a sort is compiled once for each dtype, kept in the kernel cache
(:func:`~lumoscore.jit.cached_jit`) and loaded by every later process, the other workers of
the same first run included. The results are NumPy's (Numba's implementations of them).

Examples
--------
>>> import numpy as np
>>> argsort_stable(np.array([2, 1, 2, 1])).tolist(), unique(np.array([3, 1, 3])).tolist()
([1, 3, 0, 2], [1, 3])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lumoscore.jit import cached_jit

__all__ = ["argsort", "argsort_stable", "sort", "unique"]


@cached_jit(internal=True)
def sort(a: Any) -> Any:  # pragma: no cover - compiled
    """``np.sort(a)`` (1-d)."""
    return np.sort(a)


@cached_jit(internal=True)
def argsort(a: Any) -> Any:  # pragma: no cover - compiled
    """``np.argsort(a)`` (quicksort: ties in no particular order)."""
    return np.argsort(a)


@cached_jit(internal=True)
def argsort_stable(a: Any) -> Any:  # pragma: no cover - compiled
    """``np.argsort(a, kind="mergesort")`` (ties by index)."""
    return np.argsort(a, kind="mergesort")


@cached_jit(internal=True)
def unique(a: Any) -> Any:  # pragma: no cover - compiled
    """``np.unique(a)``: the distinct values, ascending."""
    return np.unique(a)
