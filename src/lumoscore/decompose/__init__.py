"""Symmetric and integer matrix decomposition by min-cost flow, with checkers.

The two theorems every OCS-configuration and logical-topology algorithm relies on
(LumosCore §2.4.3, Thms 2.1 and 2.2; Cross-Wiring §3.1, Thms 3.1 and 3.2), computed exactly
with OR-Tools' min-cost flow:

* :func:`symmetric_decomposition` -- ``C = A + A.T`` with balanced row/column sums
  (entrywise balanced by default, or closest to a preferred ``A``);
  :func:`symmetric_decomposition_batch` splits a stack of matrices in one flow;
  :func:`symmetric_split_entries` a sparse matrix given by its entries.
* :func:`integer_decomposition` -- ``C = X[0] + ... + X[K-1]`` with every part's entries,
  row sums and column sums within ``floor``/``ceil`` of ``1/K`` of ``C``'s;
  :func:`integer_decomposition_sparse` returns the same parts as COO arrays;
  :func:`integer_decomposition_entries` also takes the matrix as COO entries.
* :func:`check_symmetric_decomposition`, :func:`check_integer_decomposition` -- vectorized
  checkers returning human-readable violations (empty list = valid).

Examples
--------
>>> import numpy as np
>>> from lumoscore.decompose import integer_decomposition, symmetric_decomposition
>>> C = np.array([[0, 4, 2], [4, 0, 2], [2, 2, 0]])
>>> A = symmetric_decomposition(C)
>>> X = integer_decomposition(A, 2)
>>> bool((X.sum(axis=0) + X.sum(axis=0).T == C).all())
True
"""

from __future__ import annotations

from lumoscore.decompose.errors import (
    BadShapeError,
    DecompositionInputError,
    NegativeEntriesError,
    NonIntegerError,
    NotSymmetricError,
    OddDiagonalError,
)
from lumoscore.decompose.integer import (
    SparseParts,
    check_integer_decomposition,
    integer_decomposition,
    integer_decomposition_entries,
    integer_decomposition_sparse,
)
from lumoscore.decompose.symmetric import (
    check_symmetric_decomposition,
    symmetric_decomposition,
    symmetric_decomposition_batch,
    symmetric_split_entries,
)

__all__ = [
    "BadShapeError",
    "DecompositionInputError",
    "NegativeEntriesError",
    "NonIntegerError",
    "NotSymmetricError",
    "OddDiagonalError",
    "SparseParts",
    "check_integer_decomposition",
    "check_symmetric_decomposition",
    "integer_decomposition",
    "integer_decomposition_entries",
    "integer_decomposition_sparse",
    "symmetric_decomposition",
    "symmetric_decomposition_batch",
    "symmetric_split_entries",
]
