"""Input validation shared by the decompositions and their checkers.

Every function either returns a clean ``int64`` array (or int) or raises the most specific
:class:`~lumoscore.decompose.errors.DecompositionInputError` subclass, with a message naming
the argument, the offending entry and the allowed values. Checks are vectorized; only the
first offending entry is located, with :func:`numpy.argmax` on a boolean mask.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from lumoscore.decompose.errors import (
    BadShapeError,
    DecompositionInputError,
    NegativeEntriesError,
    NonIntegerError,
    NotSymmetricError,
    OddDiagonalError,
)

__all__ = [
    "MAX_TOTAL",
    "as_integer_matrix",
    "as_parts",
    "ordered_entries",
    "require_even_diagonal",
    "require_square",
    "require_symmetric",
]

#: Largest accepted sum of all entries (times ``K`` for the integer decomposition). Keeps every
#: intermediate product exact in ``int64`` and in the ``float64`` weights of ``np.bincount``.
MAX_TOTAL = 2**50


def _first(mask: np.ndarray) -> tuple[int, ...]:
    """Index tuple of the first ``True`` entry of a non-empty boolean mask with a ``True``."""
    return tuple(int(v) for v in np.unravel_index(int(np.argmax(mask)), mask.shape))


def as_integer_matrix(
    M: Any, *, name: str = "C", ndim: int = 2, allow_negative: bool = False
) -> np.ndarray:
    """Return ``M`` as a C-contiguous ``int64`` array after checking it.

    Parameters
    ----------
    M : array_like
        The input. Integer, boolean and integer-valued floating-point dtypes are accepted.
    name : str
        Argument name used in error messages.
    ndim : int
        Required number of dimensions.
    allow_negative : bool
        Skip the ``>= 0`` check.

    Returns
    -------
    numpy.ndarray
        ``int64`` copy (or view) of ``M``.

    Raises
    ------
    BadShapeError
        Ragged input or wrong number of dimensions.
    NonIntegerError
        Non-numeric or complex dtype, NaN, infinity or a fractional entry.
    NegativeEntriesError
        A negative entry (unless ``allow_negative``).
    DecompositionInputError
        Entries so large that their total exceeds :data:`MAX_TOTAL`.

    Examples
    --------
    >>> as_integer_matrix([[1.0, 2.0], [3.0, 4.0]]).dtype
    dtype('int64')
    """
    try:
        arr = np.asarray(M)
    except (ValueError, TypeError) as exc:
        raise BadShapeError(f"{name} is not a rectangular array: {exc}") from exc
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (ValueError, TypeError) as exc:
            raise NonIntegerError(
                f"{name} has non-numeric entries (dtype object); allowed: integers "
                "or integer-valued floats"
            ) from exc
    if arr.ndim != ndim:
        raise BadShapeError(
            f"{name} must be a {ndim}-dimensional array, got {arr.ndim} dimension(s) "
            f"with shape {arr.shape}"
        )
    kind = arr.dtype.kind
    if kind not in "biuf":
        raise NonIntegerError(
            f"{name} has dtype {arr.dtype}; allowed: integers, booleans or integer-valued floats"
        )
    if kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = _first(bad)
            raise NonIntegerError(
                f"{name}{list(idx)} = {arr[idx]} is not finite; allowed: integers"
            )
        bad = arr != np.floor(arr)
        if bad.any():
            idx = _first(bad)
            raise NonIntegerError(
                f"{name}{list(idx)} = {arr[idx]!r} is not an integer; allowed: integers"
            )
    if kind in "fu" and arr.size and float(np.abs(arr).max()) > MAX_TOTAL:
        raise DecompositionInputError(
            f"{name} has an entry of magnitude {np.abs(arr).max()}; allowed: at most {MAX_TOTAL}"
        )
    out = np.ascontiguousarray(arr, dtype=np.int64)
    if not allow_negative:
        bad = out < 0
        if bad.any():
            idx = _first(bad)
            raise NegativeEntriesError(
                f"{name}{list(idx)} = {out[idx]} is negative; allowed: entries >= 0"
            )
    if out.size and float(np.abs(out).sum(dtype=np.float64)) > MAX_TOTAL:
        raise DecompositionInputError(
            f"{name} sums to more than {MAX_TOTAL} in absolute value; allowed: at most "
            f"{MAX_TOTAL} (int64 headroom)"
        )
    return out


def require_square(C: np.ndarray, *, name: str = "C") -> None:
    """Raise :class:`BadShapeError` unless ``C`` is a square matrix."""
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise BadShapeError(f"{name} must be a square matrix, got shape {C.shape}")


def require_symmetric(C: np.ndarray, *, name: str = "C") -> None:
    """Raise :class:`NotSymmetricError` naming the first pair ``(i, j)`` with ``C_ij != C_ji``."""
    bad = C != C.T
    if bad.any():
        i, j = _first(bad)
        raise NotSymmetricError(
            f"{name} must be symmetric: {name}[{i}, {j}] = {C[i, j]} but "
            f"{name}[{j}, {i}] = {C[j, i]}"
        )


def require_even_diagonal(C: np.ndarray, *, name: str = "C") -> None:
    """Raise :class:`OddDiagonalError` naming the first odd diagonal entry."""
    diag = np.diagonal(C)
    bad = diag % 2 != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise OddDiagonalError(
            f"{name}[{i}, {i}] = {diag[i]} is odd; diagonal entries of a symmetric matrix "
            "split as A_ii = C_ii / 2, so they must be even"
        )


def as_parts(K: Any, *, name: str = "K") -> int:
    """Return the number of parts ``K`` as an ``int >= 1``.

    Raises
    ------
    NonIntegerError
        ``K`` is not an integer.
    BadShapeError
        ``K < 1``.

    Examples
    --------
    >>> as_parts(4)
    4
    """
    if isinstance(K, bool):
        raise NonIntegerError(f"{name} must be an integer >= 1, got {K!r}")
    try:
        k = operator.index(K)
    except TypeError:
        if isinstance(K, float | np.floating) and np.isfinite(K) and float(K).is_integer():
            k = int(K)
        else:
            raise NonIntegerError(f"{name} must be an integer >= 1, got {K!r}") from None
    if k < 1:
        raise BadShapeError(f"{name} (number of parts) must be >= 1, got {k}")
    return k


def ordered_entries(
    r: np.ndarray, c: np.ndarray, v: np.ndarray, n_cols: int, *, names: str, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """COO entries ``(r, c, v)`` of a matrix with ``n_cols`` columns in row-major order (as
    :func:`numpy.nonzero` lists them), zero values dropped.

    Raises
    ------
    BadShapeError
        A position listed twice (the message names the arrays ``names`` and ``what`` they
        hold).
    """
    key = r * n_cols + c
    order = np.argsort(key, kind="stable")
    if key.size > 1 and (np.diff(key[order]) == 0).any():
        raise BadShapeError(f"{names}: {what} is listed twice")
    order = order[v[order] != 0]
    return r[order], c[order], v[order]
