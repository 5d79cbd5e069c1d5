"""Exact integer helpers shared by the decompositions and the checkers."""

from __future__ import annotations

import numpy as np

__all__ = ["floor_ceil_div", "group_sums"]


def floor_ceil_div(values: np.ndarray, parts: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(floor(values / parts), ceil(values / parts))`` in exact integer arithmetic.

    Examples
    --------
    >>> lo, hi = floor_ceil_div(np.array([4, 5, 0]), 2)
    >>> lo.tolist(), hi.tolist()
    ([2, 2, 0], [2, 3, 0])
    """
    lo = values // parts
    hi = -((-values) // parts)
    return lo, hi


def group_sums(keys: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """``int64`` sums of ``weights`` grouped by ``keys`` in ``[0, n)`` (a ``bincount``).

    Exact while every partial sum stays below 2**53 (guaranteed by
    :data:`~lumoscore.decompose.validation.MAX_TOTAL`).

    Examples
    --------
    >>> group_sums(np.array([0, 2, 0]), np.array([5, 1, 2]), 4).tolist()
    [7, 0, 1, 0]
    """
    sums = np.bincount(keys, weights=weights, minlength=n)
    return np.rint(sums).astype(np.int64)
