r"""Integer matrix decomposition into ``K`` balanced parts by divide and conquer over min-cost flow.

Theorem (LumosCore Thm 2.2, Cross-Wiring Thm 3.1, Zhao et al. 2019): every non-negative integer
``I x J`` matrix ``C`` is a sum ``X[0] + ... + X[K-1]`` of integer matrices such that for every
part ``k`` each entry ``X[k, i, j]``, each row sum and each column sum lies within
``floor``/``ceil`` of the corresponding entry/row sum/column sum of ``C`` divided by ``K``.

Algorithm
---------
Split ``(C, K)`` into ``(Y, K1)`` and ``(C - Y, K - K1)`` with ``K1 = K // 2``, where ``Y`` is
an integer rounding of ``lam * C`` (``lam = K1 / K``) that keeps every entry, every row sum,
every column sum and the grand total within ``floor``/``ceil`` of ``lam`` times the same
quantity of ``C``; recurse until every part has ``K = 1``. One split pre-assigns the floors
``F = floor(lam * C)`` and chooses a 0/1 residual ``Z`` on the entries where ``lam * C_ij`` is
fractional, as a flow on the bipartite network ``s -> row i -> column j -> t -> s`` with
``[lo, hi]`` bounds on the ``s -> row``, ``column -> t`` and ``t -> s`` arcs (minus the
pre-assigned floors), turned into node supplies by the lower-bound transform. ``lam * C`` is a
fractional feasible circulation and all bounds are integers, so an integral one exists
(Hoffman's circulation theorem / integrality of network flows): the split never fails.

Why the bounds compose through the recursion
--------------------------------------------
Let ``x`` be any of the bounded quantities of ``C`` (an entry, a row sum, a column sum or the
grand total) and write ``x = q K + r`` with ``q = floor(x / K)`` and ``0 <= r < K``. The split
gives the matching quantity of ``Y`` a value ``y`` with
``floor(x K1 / K) <= y <= ceil(x K1 / K)``. Since ``x K1 / K = q K1 + r K1 / K`` and
``0 <= r K1 / K < K1``, this means ``q K1 <= y <= (q + 1) K1``, i.e. ``y / K1`` lies in
``[q, q + 1]``; if ``r = 0`` then ``x K1 / K = q K1`` is an integer and ``y = q K1`` exactly.
By induction the ``K1`` parts of ``Y`` have that quantity within ``floor``/``ceil`` of
``y / K1``, hence in ``[q, q + 1]`` (``= q`` when ``r = 0``), which is exactly
``[floor(x / K), ceil(x / K)]``. For ``C - Y`` the quantity is ``x - y``, which lies within
``floor``/``ceil`` of ``x K2 / K`` (``K2 = K - K1``) because ``x - ceil(t) = floor(x - t)``;
the same argument applies with ``K2``. The quantities of a part are sums of its entries, so
the part's entries, row sums and column sums -- and its total -- obey the theorem.

Batching
--------
All sub-problems of one recursion depth are independent. They are stored as one sparse list of
``(sub-problem, row, column, value)`` entries (only non-zero values: every part's support lies
in the support of ``C``), and one depth is **one** OR-Tools solve over disjoint node ranges,
so the whole decomposition is ``ceil(log2 K)`` C++ calls. Sub-problems left without entries
(all their parts are zero) are dropped, so the work does not grow with ``K`` beyond that.
The (sub-problem, row) and (sub-problem, column) pairs alive at a depth are renumbered
densely (an occupancy table, or :func:`numpy.unique` when the key space is much larger than
the entry list), so the work per depth is ``O(E)`` (``O(E log E)`` in the sparse case) with
``E`` the number of non-zero entries alive at that depth
(``E <= min(nnz(C) * 2^depth, sum(C))``), plus the flow. The flow networks have
unit-capacity entry arcs and at most ``2E + 2P`` nodes. The finished parts are collected as
COO entries (:func:`integer_decomposition_sparse`) and scattered once into the dense
``(K, I, J)`` array (:func:`integer_decomposition`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lumoscore.decompose.errors import BadShapeError, DecompositionInputError
from lumoscore.decompose.flow import solve_bounded_flow
from lumoscore.decompose.intmath import floor_ceil_div, group_sums
from lumoscore.decompose.reporting import describe_violations
from lumoscore.decompose.validation import (
    MAX_TOTAL,
    as_integer_matrix,
    as_parts,
    ordered_entries,
)

__all__ = [
    "SparseParts",
    "check_integer_decomposition",
    "integer_decomposition",
    "integer_decomposition_entries",
    "integer_decomposition_sparse",
]


def _compact(keys: np.ndarray, num_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for keys in ``[0, num_keys)``.

    Uses an ``O(num_keys)`` occupancy table when that is not much larger than ``keys`` (no
    sort), and :func:`numpy.unique` otherwise.
    """
    if num_keys > 8 * keys.size + 4096:
        return np.unique(keys, return_inverse=True)
    used = np.zeros(num_keys, dtype=bool)
    used[keys] = True
    ids = np.cumsum(used) - 1
    return np.flatnonzero(used), ids[keys]


def _round_bounds(
    total: np.ndarray, floors: np.ndarray, num: np.ndarray, den: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the residual sum: ``floor/ceil(total * num / den)`` minus the floors."""
    lo, hi = floor_ceil_div(total * num, den)
    return lo - floors, hi - floors


def _split_level(
    prob: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    v: np.ndarray,
    size: np.ndarray,
    half: np.ndarray,
    num_rows: int,
    num_cols: int,
) -> np.ndarray:
    """For every sub-problem ``p`` round ``half[p] / size[p]`` times its matrix; one solve.

    Entries are given as parallel arrays ``(prob, r, c, v)``; returns the rounded value of
    each entry.
    """
    P = size.size
    k = size[prob]
    h = half[prob]
    num = v * h
    y = num // k
    frac = np.flatnonzero(num % k)

    row_keys, row_of = _compact(prob * num_rows + r, P * num_rows)
    col_keys, col_of = _compact(prob * num_cols + c, P * num_cols)
    row_prob = row_keys // num_rows
    col_prob = col_keys // num_cols
    n_rows, n_cols = row_keys.size, col_keys.size
    src = n_rows + n_cols  # node of problem p's source: src + p; its sink: src + P + p

    row_lo, row_hi = _round_bounds(
        group_sums(row_of, v, n_rows), group_sums(row_of, y, n_rows), half[row_prob], size[row_prob]
    )
    col_lo, col_hi = _round_bounds(
        group_sums(col_of, v, n_cols), group_sums(col_of, y, n_cols), half[col_prob], size[col_prob]
    )
    tot_lo, tot_hi = _round_bounds(group_sums(prob, v, P), group_sums(prob, y, P), half, size)

    rows = np.arange(n_rows)
    cols = n_rows + np.arange(n_cols)
    probs = np.arange(P)
    tails = np.concatenate([row_of[frac], src + row_prob, cols, src + P + probs])
    heads = np.concatenate([n_rows + col_of[frac], rows, src + P + col_prob, src + probs])
    lower = np.concatenate([np.zeros(frac.size, np.int64), row_lo, col_lo, tot_lo])
    upper = np.concatenate([np.ones(frac.size, np.int64), row_hi, col_hi, tot_hi])
    flow = solve_bounded_flow(
        src + 2 * P,
        tails,
        heads,
        lower,
        upper,
        np.zeros(tails.size, np.int64),
        np.zeros(src + 2 * P, np.int64),
    )
    y[frac] += flow[: frac.size]
    return y


@dataclass(frozen=True)
class SparseParts:
    """The non-zero entries of a ``(K, I, J)`` decomposition in coordinate (COO) form.

    Entry ``n`` says ``X[part[n], row[n], col[n]] == value[n]``; all other entries are zero.
    Entries are sorted by ``(part, row, col)``. For large ``K`` this is far smaller than the
    dense array (1024 pods, ``K = 128``: ~130k entries instead of a 1 GiB array).

    Attributes
    ----------
    shape : tuple of int
        ``(K, I, J)``.
    part, row, col, value : numpy.ndarray
        Parallel ``int64`` arrays; ``value > 0``.
    """

    shape: tuple[int, int, int]
    part: np.ndarray
    row: np.ndarray
    col: np.ndarray
    value: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Return the ``int64`` array of shape :attr:`shape`.

        Examples
        --------
        >>> integer_decomposition_sparse([[3]], 2).to_dense()[:, 0, 0].tolist()
        [1, 2]
        """
        X = np.zeros(self.shape, dtype=np.int64)
        X[self.part, self.row, self.col] = self.value
        return X


def _decompose_entries(
    C: np.ndarray, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Divide and conquer; returns unsorted COO arrays ``(part, row, col, value)``."""
    r, c = np.nonzero(C)
    return _decompose_coo(r, c, C[r, c], *C.shape, K)


def _decompose_coo(
    r: np.ndarray, c: np.ndarray, v: np.ndarray, I: int, J: int, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_decompose_entries` of the ``I x J`` matrix whose non-zero entries are
    ``(r, c, v)``, in row-major order (as :func:`numpy.nonzero` lists them)."""
    prob = np.zeros(v.size, dtype=np.int64)
    start = np.zeros(1, dtype=np.int64)  # first part index of each sub-problem
    size = np.full(1, K, dtype=np.int64)  # number of parts of each sub-problem
    finished: list[tuple[np.ndarray, ...]] = []
    while v.size:
        # Emit the entries of finished sub-problems (one part left); drop those and the
        # sub-problems without entries (all their parts are zero).
        done = size == 1
        hit = done[prob]
        if hit.any():
            finished.append((start[prob[hit]], r[hit], c[hit], v[hit]))
            prob, r, c, v = prob[~hit], r[~hit], c[~hit], v[~hit]
        alive = np.zeros(size.size, dtype=bool)
        alive[prob] = True
        if not alive.all():
            prob = (np.cumsum(alive) - 1)[prob]
            start, size = start[alive], size[alive]
        if not v.size:
            break
        half = size // 2
        y = _split_level(prob, r, c, v, size, half, I, J)
        rest = v - y
        start = np.stack([start, start + half], axis=1).ravel()
        size = np.stack([half, size - half], axis=1).ravel()
        keep_y = y > 0
        keep_rest = rest > 0
        prob = np.concatenate([2 * prob[keep_y], 2 * prob[keep_rest] + 1])
        r = np.concatenate([r[keep_y], r[keep_rest]])
        c = np.concatenate([c[keep_y], c[keep_rest]])
        v = np.concatenate([y[keep_y], rest[keep_rest]])
    if not finished:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    part, row, col, value = (np.concatenate(parts) for parts in zip(*finished, strict=True))
    return part, row, col, value


def _require_total(values: np.ndarray, K: int, name: str) -> None:
    """``values.sum() * K`` within :data:`~lumoscore.decompose.validation.MAX_TOTAL` (the
    flows' int64 headroom); DecompositionInputError naming ``name`` otherwise."""
    total = int(values.sum()) * K
    if total > MAX_TOTAL:
        raise DecompositionInputError(
            f"{name}.sum() * K = {total} is too large; allowed: at most {MAX_TOTAL}"
        )


def _validated(C: Any, K: Any) -> tuple[np.ndarray, int]:
    C = as_integer_matrix(C, name="C")
    K = as_parts(K)
    _require_total(C, K, "C")
    return C, K


def integer_decomposition(C: Any, K: Any) -> np.ndarray:
    """Split a non-negative integer matrix into ``K`` integer parts balanced to within one.

    Parameters
    ----------
    C : array_like
        Non-negative integer ``I x J`` matrix (rectangular allowed; integer-valued floats
        accepted).
    K : int
        Number of parts, ``K >= 1``.

    Returns
    -------
    numpy.ndarray
        ``int64`` array ``X`` of shape ``(K, I, J)`` with ``X.sum(axis=0) == C`` and, for every
        ``k``: each ``X[k, i, j]`` within ``[floor(C_ij / K), ceil(C_ij / K)]``, each row sum
        of ``X[k]`` within ``floor``/``ceil`` of the row sum of ``C`` over ``K``, each column
        sum likewise, and (beyond the theorem) the total of ``X[k]`` within ``floor``/``ceil``
        of ``C.sum() / K``.

    Raises
    ------
    BadShapeError
        ``C`` not 2-dimensional, or ``K < 1``.
    NegativeEntriesError, NonIntegerError
        ``C`` (or ``K``) breaks the corresponding precondition.
    DecompositionInputError
        ``C.sum() * K`` exceeds :data:`~lumoscore.decompose.validation.MAX_TOTAL`.
    lumoscore.errors.SolverError
        OR-Tools did not report an optimal flow (never expected: the theorem guarantees one).

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[3, 1, 0], [2, 2, 2]])
    >>> X = integer_decomposition(C, 2)
    >>> X.shape, bool((X.sum(axis=0) == C).all())
    ((2, 2, 3), True)
    >>> check_integer_decomposition(C, X)
    []
    >>> integer_decomposition([[5]], 3)[:, 0, 0].tolist()
    [1, 2, 2]
    """
    C, K = _validated(C, K)
    part, row, col, value = _decompose_entries(C, K)
    X = np.zeros((K, *C.shape), dtype=np.int64)
    X[part, row, col] = value
    return X


def integer_decomposition_sparse(C: Any, K: Any) -> SparseParts:
    """:func:`integer_decomposition` returning only the non-zero entries (COO form).

    Same algorithm, guarantees and errors; use it when ``K * I * J`` is large (the dense
    result for 1024 pods and ``K = 128`` is 1 GiB, most of the run time being the first touch
    of that memory).

    Parameters
    ----------
    C : array_like
        Non-negative integer ``I x J`` matrix.
    K : int
        Number of parts, ``K >= 1``.

    Returns
    -------
    SparseParts
        The entries of ``X``, sorted by ``(part, row, col)``; ``.to_dense()`` gives the array
        :func:`integer_decomposition` returns.

    Examples
    --------
    >>> parts = integer_decomposition_sparse([[3, 1], [0, 2]], 2)
    >>> parts.shape, parts.value.sum().item()
    ((2, 2, 2), 6)
    >>> check_integer_decomposition([[3, 1], [0, 2]], parts.to_dense())
    []
    """
    C, K = _validated(C, K)
    part, row, col, value = _decompose_entries(C, K)
    I, J = C.shape
    order = np.argsort((part * I + row) * J + col, kind="stable")
    return SparseParts((K, I, J), part[order], row[order], col[order], value[order])


def integer_decomposition_entries(
    rows: Any, cols: Any, values: Any, shape: tuple[int, int], K: Any
) -> SparseParts:
    """:func:`integer_decomposition_sparse` of the ``shape`` matrix whose entries are given as
    COO triples, in time that grows with the entries, not with ``I * J``.

    The result is exactly the one of the dense matrix (the same parts, entry for entry).

    Parameters
    ----------
    rows, cols : array_like of int
        Positions of the entries, distinct, within ``shape`` (any order; zero values are
        dropped).
    values : array_like of int
        Non-negative integer values.
    shape : tuple of int
        ``(I, J)``.
    K : int
        Number of parts, ``K >= 1``.

    Raises
    ------
    BadShapeError
        ``rows``, ``cols`` and ``values`` of different lengths, a position outside ``shape``
        or listed twice, or ``K < 1``.
    NegativeEntriesError, NonIntegerError, DecompositionInputError
        As :func:`integer_decomposition`.

    Examples
    --------
    >>> sp = integer_decomposition_entries([0, 1, 0], [0, 1, 1], [3, 2, 1], (2, 2), 2)
    >>> np.array_equal(sp.to_dense(), integer_decomposition([[3, 1], [0, 2]], 2))
    True
    """
    I, J = (int(x) for x in shape)
    r, c = (np.asarray(x, dtype=np.int64).reshape(-1) for x in (rows, cols))
    v = as_integer_matrix(np.asarray(values).reshape(-1), name="values", ndim=1)
    if not (r.size == c.size == v.size):
        raise BadShapeError(f"rows, cols, values: lengths {r.size}, {c.size}, {v.size} differ")
    if r.size and (min(r.min(), c.min()) < 0 or r.max() >= I or c.max() >= J):
        raise BadShapeError(f"rows, cols: positions must lie within the shape {(I, J)}")
    K = as_parts(K)
    _require_total(v, K, "values")
    r, c, v = ordered_entries(r, c, v, J, names="rows, cols", what="a position")
    part, row, col, value = _decompose_coo(r, c, v, I, J, K)
    out = np.argsort((part * I + row) * J + col, kind="stable")
    return SparseParts((K, I, J), part[out], row[out], col[out], value[out])


def check_integer_decomposition(C: Any, X: Any, K: Any = None) -> list[str]:
    """List the ways ``X`` fails to be a Theorem 2.2 decomposition of ``C`` (empty = valid).

    Checks ``X.sum(axis=0) == C`` and, for every part ``k``, every entry, row sum and column
    sum of ``X[k]`` within ``floor``/``ceil`` of the same quantity of ``C`` divided by ``K``.
    At most :data:`~lumoscore.decompose.reporting.MESSAGE_LIMIT` messages are listed per kind.

    Parameters
    ----------
    C : array_like
        Non-negative integer matrix (validated; bad ``C`` raises).
    X : array_like
        Candidate ``(K, I, J)`` decomposition; problems with it are reported, not raised.
    K : int, optional
        Expected number of parts; defaults to ``len(X)``.

    Returns
    -------
    list of str
        Violation messages naming the part, entry, row or column and the bound broken.

    Examples
    --------
    >>> messages = check_integer_decomposition([[4, 0]], [[[3, 0]], [[1, 0]]])
    >>> len(messages), messages[0]
    (6, 'part 0, entry (0, 0): X[0, 0, 0] = 3 outside [2, 2] = floor/ceil(C[0, 0] = 4 / 2)')
    """
    C = as_integer_matrix(C, name="C")
    try:
        X = as_integer_matrix(X, name="X", ndim=3, allow_negative=True)
    except DecompositionInputError as exc:
        return [str(exc)]
    if K is None:
        K = X.shape[0]
    K = as_parts(K)
    if X.shape != (K, *C.shape):
        return [f"X has shape {X.shape}; expected (K, I, J) = {(K, *C.shape)}"]
    out: list[str] = []
    got = X.sum(axis=0)
    out += describe_violations(
        got != C,
        "entries with X.sum(0) != C",
        lambda ix: f"entry {ix}: sum over parts = {got[ix]} but C{list(ix)} = {C[ix]}",
    )
    lo, hi = floor_ceil_div(C, K)
    out += describe_violations(
        np.less(X, lo) | np.greater(X, hi),
        "entry-bound violations",
        lambda ix: (
            f"part {ix[0]}, entry ({ix[1]}, {ix[2]}): X[{ix[0]}, {ix[1]}, {ix[2]}] = {X[ix]} "
            f"outside [{lo[ix[1:]]}, {hi[ix[1:]]}] = floor/ceil(C[{ix[1]}, {ix[2]}] = "
            f"{C[ix[1:]]} / {K})"
        ),
    )
    for axis, label in ((1, "row"), (0, "column")):
        total = C.sum(axis=axis)
        part = X.sum(axis=axis + 1)
        t_lo, t_hi = floor_ceil_div(total, K)
        out += describe_violations(
            (part < t_lo) | (part > t_hi),
            f"{label}-sum violations",
            lambda ix, part=part, t_lo=t_lo, t_hi=t_hi, total=total, label=label: (
                f"part {ix[0]}, {label} {ix[1]}: sum = {part[ix]} outside "
                f"[{t_lo[ix[1]]}, {t_hi[ix[1]]}] = floor/ceil({total[ix[1]]} / {K})"
            ),
        )
    return out
