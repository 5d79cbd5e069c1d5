"""Symmetric integer matrix decomposition ``C = A + A.T`` by min-cost flow.

Theorem (LumosCore Thm 2.1, Cross-Wiring Thm 3.2): every symmetric non-negative integer matrix
``C`` with an even diagonal is ``A + A.T`` for a non-negative integer ``A`` whose every row sum
and column sum lies within ``floor``/``ceil`` of half the corresponding row/column sum of ``C``.

Reduction used here
-------------------
For each unordered pair ``i < j`` with ``C_ij > 0`` the only freedom is ``a = A_ij`` (then
``A_ji = C_ij - a``); the diagonal is fixed, ``A_ii = C_ii / 2``. Start from a *base* value
``a0`` and let flow on a pod-to-pod arc re-assign units of the pair: one unit on arc ``i -> j``
lowers ``a`` by one (row ``i`` of ``A`` loses a unit, row ``j`` gains one), one unit on
``j -> i`` raises it. With ``r0_i`` the row sums of the base matrix and the target interval
``[lo_i, hi_i] = [floor(R_i / 2), ceil(R_i / 2)]`` (``R_i`` the row sum of ``C``), pod ``i`` gets
supply ``r0_i - hi_i`` and an arc from one extra node ``S`` of capacity ``hi_i - lo_i`` (the
lower-bound transform of a ``[lo_i, hi_i]`` arc), ``S`` balancing the supplies. Any feasible
flow yields row sums in ``[lo_i, hi_i]``; because ``C`` is symmetric the column sum of pod ``i``
is ``R_i - row_i``, which then lies in ``[lo_i, hi_i]`` too. ``A = C / 2`` is a fractional
feasible point, so by integrality of network flows an integral one exists (the papers' proof).

This is the papers' network (source -> pair node -> its two pods -> sink) with every pair node
contracted into one pod-to-pod arc per direction: a pair node with supply ``C_ij`` and two
out-arcs is equivalent to a base split plus a "move a unit across" arc. The network has
``n + 1`` nodes instead of ``n + n_pairs + 2`` and half the arcs.

* ``prefer=None`` (entrywise balanced): ``a`` is restricted to ``{floor(C_ij/2),
  ceil(C_ij/2)}``, so only odd pairs keep one unit-capacity arc (base ``a0 = ceil``) -- the
  balanced orientation of the "odd-entry" graph, a tiny zero-cost flow. It always exists (the
  fractional point ``C / 2`` lies in the box).
* ``prefer=P``: ``a`` ranges over ``[0, C_ij]`` with the convex piecewise-linear cost
  ``f(a) = (a - P_ij)^+ + (C_ij - a - P_ji)^+`` (units of ``A`` not present in ``P``), base
  ``a0 = min(P_ij, C_ij)`` (a minimiser of ``f``), and two arcs per direction: cost 0 while
  ``f`` stays flat, cost 1 beyond. Since ``sum(A) - sum(P)`` is fixed,
  ``||A - P||_1 = 2 * sum((A - P)^+) - (sum(A) - sum(P))``: minimising the cost minimises the
  number of differing units ``||A - P||_1``. When ``P`` itself is a valid decomposition of
  ``C`` the optimum is 0 and ``P`` is the only zero-cost point, so ``P`` is returned unchanged.

Complexity: building the arrays is ``O(n^2)`` vectorized work; the flow has ``n + 1`` nodes and
at most ``4 * nnz_upper(C) + n`` arcs, solved by OR-Tools' cost-scaling push-relabel in
polynomial time (``O(n^2 m log(n C))``; much faster in practice).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lumoscore.decompose.errors import BadShapeError, DecompositionInputError
from lumoscore.decompose.flow import solve_live_flow
from lumoscore.decompose.intmath import floor_ceil_div
from lumoscore.decompose.kernels import pair_network
from lumoscore.decompose.reporting import describe_violations
from lumoscore.decompose.validation import (
    as_integer_matrix,
    ordered_entries,
    require_even_diagonal,
    require_square,
    require_symmetric,
)

__all__ = [
    "check_symmetric_decomposition",
    "symmetric_decomposition",
    "symmetric_decomposition_batch",
    "symmetric_pairs_batch",
    "symmetric_split_entries",
]


def _validated_symmetric(C: Any) -> np.ndarray:
    C = as_integer_matrix(C, name="C")
    require_square(C)
    require_symmetric(C)
    return C


def _split_pairs(
    n: int,
    i: np.ndarray,
    j: np.ndarray,
    c: np.ndarray,
    p_ij: np.ndarray | None,
    p_ji: np.ndarray | None,
    R: np.ndarray,
    half_diag: np.ndarray,
) -> np.ndarray:
    """``a = A_ij`` of every pair ``i < j`` (values ``c``) of an ``n``-node matrix with row sums
    ``R`` and ``A_ii = half_diag``: the min-cost flow of the module docstring."""
    prefer = p_ij is not None and p_ji is not None
    z = np.zeros(0, np.int64)
    as64 = [np.ascontiguousarray(x, dtype=np.int64) for x in (i, j, c, R, half_diag)]
    pij = z if not prefer else np.ascontiguousarray(p_ij, dtype=np.int64)
    pji = z if not prefer else np.ascontiguousarray(p_ji, dtype=np.int64)
    # Pair arcs, one block of m arcs per tier ("down" tiers i -> j lower a, "up" tiers raise
    # it, tier t costs t per unit), then S -> pod arcs of capacity ceil - floor of the row
    # sums' halves; S balances the supplies r0 - ceil (r0: row sums of the base matrix).
    tails, heads, caps, costs, live, nodes, supply, a0, bad, bad_cap = pair_network(
        n, as64[0], as64[1], as64[2], pij, pji, as64[3], as64[4], prefer
    )
    if bad >= 0:
        raise ValueError(f"arc {bad} has lower bound 0 > upper bound {bad_cap}")
    if not nodes.size:  # zero flow is optimal: nothing to send, no negative cost
        return a0
    m = len(as64[0])
    n_tiers, n_down = (4, 2) if prefer else (1, 1)
    flow = np.zeros(n_tiers * m + n, np.int64)
    flow[live] = solve_live_flow(n + 1, tails, heads, caps, costs, nodes, supply)
    moves = flow[: m * n_tiers].reshape(n_tiers, m)
    return a0 - moves[:n_down].sum(axis=0) + moves[n_down:].sum(axis=0)


def symmetric_decomposition(C: Any, *, prefer: Any = None) -> np.ndarray:
    """Split a symmetric integer matrix as ``C = A + A.T`` with balanced row and column sums.

    Parameters
    ----------
    C : array_like
        Square, symmetric, non-negative integer matrix (integer-valued floats accepted) with
        an even diagonal.
    prefer : array_like, optional
        Non-negative integer matrix of the same shape, e.g. the decomposition deployed now.
        If given, the entrywise balance is dropped and among all ``A`` meeting the theorem
        (``0 <= A_ij <= C_ij`` and the row/column bounds) one minimising ``||A - prefer||_1``
        over the off-diagonal entries is returned (the diagonal is fixed at ``C_ii / 2``).
        A ``prefer`` that is itself a valid decomposition of ``C`` is returned unchanged.

    Returns
    -------
    numpy.ndarray
        ``int64`` matrix ``A`` of the shape of ``C`` with ``C == A + A.T``, ``A >= 0``,
        ``A_ii = C_ii / 2``, every row sum of ``A`` within ``[floor(R_i/2), ceil(R_i/2)]``
        and every column sum within ``[floor(S_j/2), ceil(S_j/2)]`` (``R``, ``S`` the row and
        column sums of ``C``). Without ``prefer`` additionally
        ``A_ij in {floor(C_ij/2), ceil(C_ij/2)}``.

    Raises
    ------
    BadShapeError
        ``C`` not a square matrix, or ``prefer`` of another shape.
    NotSymmetricError, NegativeEntriesError, NonIntegerError, OddDiagonalError
        ``C`` (or ``prefer``) breaks the corresponding precondition.
    lumoscore.errors.SolverError
        OR-Tools did not report an optimal flow (never expected: the theorem guarantees one).

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[0, 3, 1], [3, 2, 0], [1, 0, 0]])
    >>> A = symmetric_decomposition(C)
    >>> bool((A + A.T == C).all()), check_symmetric_decomposition(C, A)
    (True, [])
    >>> A.tolist()
    [[0, 2, 0], [1, 1, 0], [1, 0, 0]]
    >>> A.sum(axis=1).tolist(), C.sum(axis=1).tolist()  # rows within floor/ceil of half
    ([2, 2, 1], [4, 5, 1])
    >>> P = np.array([[0, 1, 1], [2, 1, 0], [0, 0, 0]])  # another valid split: kept as is
    >>> symmetric_decomposition(C, prefer=P).tolist()
    [[0, 1, 1], [2, 1, 0], [0, 0, 0]]
    """
    C = _validated_symmetric(C)
    require_even_diagonal(C)
    n = C.shape[0]
    P = None
    if prefer is not None:
        P = as_integer_matrix(prefer, name="prefer")
        if P.shape != C.shape:
            raise BadShapeError(f"prefer has shape {P.shape}; allowed: the shape of C, {C.shape}")

    A = np.zeros_like(C)
    half_diag = np.diagonal(C) // 2
    np.fill_diagonal(A, half_diag)
    i, j = np.nonzero(np.triu(C, 1))
    c = C[i, j]
    p_ij = None if P is None else P[i, j]
    p_ji = None if P is None else P[j, i]
    a = _split_pairs(n, i, j, c, p_ij, p_ji, C.sum(axis=1), half_diag)
    A[i, j] = a
    A[j, i] = c - a
    return A


def symmetric_split_entries(
    n: int, i: Any, j: Any, c: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`symmetric_decomposition` of the ``n x n`` symmetric matrix with a zero diagonal
    whose upper entries are ``C[i, j] = c`` (``i < j``), in time that grows with the entries,
    not with ``n^2``.

    Returns ``(i, j, c, a)``: the entries in row-major order (zeros dropped) and
    ``a = A[i, j]`` (so ``A[j, i] = c - a``), exactly the entries of the dense result.

    Raises
    ------
    BadShapeError
        ``i``, ``j``, ``c`` of different lengths, a pair not in the upper triangle of an
        ``n x n`` matrix, or a pair listed twice.
    NegativeEntriesError, NonIntegerError
        ``c`` is not a non-negative integer.

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[0, 3, 1], [3, 0, 0], [1, 0, 0]])
    >>> i, j, c, a = symmetric_split_entries(3, [0, 0], [1, 2], [3, 1])
    >>> A = np.zeros((3, 3), np.int64); A[i, j] = a; A[j, i] = c - a
    >>> np.array_equal(A, symmetric_decomposition(C))
    True
    """
    n = int(n)
    i, j = (np.asarray(x, dtype=np.int64).reshape(-1) for x in (i, j))
    c = as_integer_matrix(np.asarray(c).reshape(-1), name="c", ndim=1)
    if not (i.size == j.size == c.size):
        raise BadShapeError(f"i, j, c: lengths {i.size}, {j.size}, {c.size} differ")
    if i.size and (i.min() < 0 or j.max() >= n or not (i < j).all()):
        raise BadShapeError(f"i, j: pairs must satisfy 0 <= i < j < n = {n}")
    i, j, c = ordered_entries(i, j, c, n, names="i, j", what="a pair")
    rows = np.bincount(i, weights=c, minlength=n) + np.bincount(j, weights=c, minlength=n)
    a = _split_pairs(n, i, j, c, None, None, rows.astype(np.int64), np.zeros(n, np.int64))
    return i, j, c, a


def symmetric_decomposition_batch(C: Any, *, prefer: Any = None) -> np.ndarray:
    """:func:`symmetric_decomposition` of every matrix of a stack, in one min-cost flow.

    The result is exactly ``symmetric_decomposition`` of the block-diagonal matrix with the
    blocks ``C[0], C[1], ...`` (and ``prefer`` likewise), read back block by block -- without
    building that matrix: the flow network is made from the stack directly.

    Parameters
    ----------
    C : array_like
        ``(k, n, n)`` stack of square, symmetric, non-negative integer matrices with even
        diagonals.
    prefer : array_like, optional
        ``(k, n, n)`` preferred decompositions (see :func:`symmetric_decomposition`).

    Returns
    -------
    numpy.ndarray
        ``int64`` stack ``A`` with ``C[b] == A[b] + A[b].T`` meeting Theorem 2.1 for every
        ``b``.

    Raises
    ------
    BadShapeError, NotSymmetricError, NegativeEntriesError, NonIntegerError, OddDiagonalError
        As :func:`symmetric_decomposition` (the message names the matrix ``C[b]``).

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[[0, 3], [3, 0]], [[0, 1], [1, 0]]])
    >>> A = symmetric_decomposition_batch(C)
    >>> bool((A + A.transpose(0, 2, 1) == C).all()), A[:, 0, 1].tolist()
    (True, [2, 1])
    """
    C = as_integer_matrix(C, name="C", ndim=3)
    _, n, n2 = C.shape
    if n != n2:
        raise BadShapeError(f"C must be a stack of square matrices (k, n, n), got {C.shape}")
    for b in np.flatnonzero((C.transpose(0, 2, 1) != C).any(axis=(1, 2)))[:1]:
        require_symmetric(C[b], name=f"C[{b}]")
    diag = np.diagonal(C, axis1=1, axis2=2)
    for b in np.flatnonzero((diag % 2 != 0).any(axis=1))[:1]:
        require_even_diagonal(C[b], name=f"C[{b}]")
    P = None
    if prefer is not None:
        P = as_integer_matrix(prefer, name="prefer", ndim=3)
        if P.shape != C.shape:
            raise BadShapeError(f"prefer has shape {P.shape}; allowed: the shape of C, {C.shape}")
    A = np.zeros_like(C)
    A[:, np.arange(n), np.arange(n)] = diag // 2
    g, il, jl, c, a = symmetric_pairs_batch(C, P)
    A[g, il, jl] = a
    A[g, jl, il] = c - a
    return A


def symmetric_pairs_batch(
    C: np.ndarray, prefer: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The off-diagonal part of :func:`symmetric_decomposition_batch` as pairs, unchecked.

    For already validated ``int64`` stacks (``C`` symmetric, non-negative, even diagonal;
    ``prefer`` non-negative, same shape): ``(g, i, j, c, a)`` for every ``C[g, i, j] = c > 0``
    with ``i < j``, in row-major order, and ``a = A[g, i, j]`` (so ``A[g, j, i] = c - a``).

    Examples
    --------
    >>> import numpy as np
    >>> [v.tolist() for v in symmetric_pairs_batch(np.array([[[0, 3], [3, 0]]]))]
    [[0], [0], [1], [3], [2]]
    """
    k, n, _ = C.shape
    flat = np.flatnonzero(C)  # row-major, like np.nonzero; keep the upper triangle
    g, il, jl = flat // (n * n), flat // n % n, flat % n
    upper = il < jl
    g, il, jl = g[upper], il[upper], jl[upper]
    c = C[g, il, jl]
    p_ij = None if prefer is None else prefer[g, il, jl]
    p_ji = None if prefer is None else prefer[g, jl, il]
    half_diag = np.diagonal(C, axis1=1, axis2=2).ravel() // 2
    a = _split_pairs(k * n, g * n + il, g * n + jl, c, p_ij, p_ji, C.sum(axis=2).ravel(), half_diag)
    return g, il, jl, c, a


def check_symmetric_decomposition(C: Any, A: Any, *, entrywise: bool = False) -> list[str]:
    """List the ways ``A`` fails to be a Theorem 2.1 decomposition of ``C`` (empty = valid).

    Checks ``C == A + A.T``, ``A >= 0``, and every row and column sum of ``A`` within
    ``floor``/``ceil`` of half the corresponding sum of ``C``; with ``entrywise=True`` also
    ``A_ij in {floor(C_ij/2), ceil(C_ij/2)}`` (the default output's extra balance). At most
    :data:`~lumoscore.decompose.reporting.MESSAGE_LIMIT` messages are listed per kind.

    Parameters
    ----------
    C : array_like
        Square symmetric non-negative integer matrix (validated; bad ``C`` raises).
    A : array_like
        Candidate decomposition; problems with it are reported, not raised.
    entrywise : bool
        Also require the entrywise balance.

    Returns
    -------
    list of str
        Violation messages naming the entry, row or column and the bound broken.

    Examples
    --------
    >>> messages = check_symmetric_decomposition([[0, 2], [2, 0]], [[0, 2], [0, 0]])
    >>> len(messages), messages[0]
    (4, 'row 0: sum of A = 2 outside [1, 1] = floor/ceil(2 / 2)')
    """
    C = _validated_symmetric(C)
    try:
        A = as_integer_matrix(A, name="A", allow_negative=True)
    except DecompositionInputError as exc:
        return [str(exc)]
    if A.shape != C.shape:
        return [f"A has shape {A.shape}; expected the shape of C, {C.shape}"]
    out: list[str] = []
    S = A + A.T
    out += describe_violations(
        np.triu(S != C),
        "entries with A + A.T != C",
        lambda ix: (
            f"entry ({ix[0]}, {ix[1]}): A[{ix[0]}, {ix[1]}] + A[{ix[1]}, {ix[0]}] = "
            f"{S[ix]} but C[{ix[0]}, {ix[1]}] = {C[ix]}"
        ),
    )
    out += describe_violations(
        A < 0, "negative entries", lambda ix: f"entry {ix}: A{list(ix)} = {A[ix]} is negative"
    )
    for axis, label in ((1, "row"), (0, "column")):
        total = C.sum(axis=axis)
        got = A.sum(axis=axis)
        lo, hi = floor_ceil_div(total, 2)
        out += describe_violations(
            (got < lo) | (got > hi),
            f"{label}-sum violations",
            lambda ix, got=got, lo=lo, hi=hi, total=total, label=label: (
                f"{label} {ix[0]}: sum of A = {got[ix]} outside [{lo[ix]}, {hi[ix]}] = "
                f"floor/ceil({total[ix]} / 2)"
            ),
        )
    if entrywise:
        lo, hi = floor_ceil_div(C, 2)
        out += describe_violations(
            np.less(A, lo) | np.greater(A, hi),
            "entrywise-balance violations",
            lambda ix: (
                f"entry {ix}: A{list(ix)} = {A[ix]} outside [{lo[ix]}, {hi[ix]}] = "
                f"floor/ceil(C{list(ix)} = {C[ix]} / 2)"
            ),
        )
    return out
