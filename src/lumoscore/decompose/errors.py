"""Exception types raised by :mod:`lumoscore.decompose` for bad input.

Every class derives from :class:`DecompositionInputError`, itself a
:class:`lumoscore.errors.PreconditionError`, so callers can catch "the matrix handed to a
decomposition is malformed" in one place. A failing external solver raises
:class:`lumoscore.errors.SolverError` instead (the theorems guarantee feasibility, so that
indicates a bug or a broken installation, never a property of the input).
"""

from __future__ import annotations

from lumoscore.errors import PreconditionError

__all__ = [
    "BadShapeError",
    "DecompositionInputError",
    "NegativeEntriesError",
    "NonIntegerError",
    "NotSymmetricError",
    "OddDiagonalError",
]


class DecompositionInputError(PreconditionError):
    """A matrix or parameter given to a decomposition breaks a documented precondition."""


class BadShapeError(DecompositionInputError):
    """Wrong number of dimensions, a non-square matrix where a square one is required,
    mismatched shapes, or a number of parts ``K`` below 1."""


class NotSymmetricError(DecompositionInputError):
    """The matrix must equal its transpose."""


class NegativeEntriesError(DecompositionInputError):
    """The matrix has a negative entry; all entries must be ``>= 0``."""


class NonIntegerError(DecompositionInputError):
    """An entry is not an integer (fractional, NaN, infinite, or of a non-numeric dtype)."""


class OddDiagonalError(DecompositionInputError):
    """A diagonal entry of a symmetric matrix is odd, so ``C = A + A.T`` has no integer ``A``."""
