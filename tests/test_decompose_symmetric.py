"""Symmetric decomposition C = A + A.T against Theorem 2.1 / 3.2 and an independent CP-SAT model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from lumoscore.decompose import (
    BadShapeError,
    NotSymmetricError,
    OddDiagonalError,
    check_symmetric_decomposition,
    symmetric_decomposition,
    symmetric_decomposition_batch,
    symmetric_split_entries,
)


@st.composite
def symmetric_matrices(draw: st.DrawFn, max_n: int = 64, min_n: int = 1) -> np.ndarray:
    """Random symmetric non-negative integer matrices with an even diagonal, of order
    ``min_n`` to ``max_n``.

    Hypothesis draws the shape and the distribution (density, magnitude up to 10**6, zero
    rows); NumPy fills the entries from a drawn seed.
    """
    n = draw(st.integers(min_n, max_n))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    high = draw(st.sampled_from([1, 2, 3, 10, 1000, 10**6]))
    zero_rows = draw(st.floats(0.0, 0.5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    U = rng.integers(0, high + 1, size=(n, n)) * (rng.random((n, n)) < density)
    C = np.triu(U, 1)
    C = C + C.T + 2 * np.diag(np.diagonal(U) // 2)
    dead = rng.random(n) < zero_rows
    C[dead, :] = 0
    C[:, dead] = 0
    return C


def theorem_holds(C: np.ndarray, A: np.ndarray, *, entrywise: bool) -> bool:
    ok = bool((A + A.T == C).all() and (A >= 0).all())
    for got, total in ((A.sum(axis=1), C.sum(axis=1)), (A.sum(axis=0), C.sum(axis=0))):
        ok = ok and bool((2 * got >= total - 1).all() and (2 * got <= total + 1).all())
    if entrywise:
        ok = ok and bool((2 * A >= C - 1).all() and (2 * A <= C + 1).all())
    return ok


def assert_theorem(C: np.ndarray, A: np.ndarray, *, entrywise: bool) -> None:
    """Theorem 2.1 written out directly (independent of the package's checker)."""
    assert A.dtype == np.int64
    assert A.shape == C.shape
    assert (A + A.T == C).all()
    assert (A >= 0).all()
    assert (2 * np.diagonal(A) == np.diagonal(C)).all()
    for got, total in ((A.sum(axis=1), C.sum(axis=1)), (A.sum(axis=0), C.sum(axis=0))):
        assert (2 * got >= total - 1).all() and (2 * got <= total + 1).all()
    if entrywise:
        assert (2 * A >= C - 1).all() and (2 * A <= C + 1).all()
    assert check_symmetric_decomposition(C, A, entrywise=entrywise) == []


@settings(max_examples=300, deadline=None)
@given(symmetric_matrices())
def test_default_meets_theorem_and_entrywise_balance(C: np.ndarray) -> None:
    assert_theorem(C, symmetric_decomposition(C), entrywise=True)


@settings(max_examples=200, deadline=None)
@given(symmetric_matrices(), st.integers(0, 2**32 - 1), st.sampled_from([1, 3, 100, 10**6]))
def test_prefer_result_meets_theorem(C: np.ndarray, seed: int, high: int) -> None:
    prefer = np.random.default_rng(seed).integers(0, high + 1, size=C.shape)
    assert_theorem(C, symmetric_decomposition(C, prefer=prefer), entrywise=False)


@settings(max_examples=200, deadline=None)
@given(symmetric_matrices(), st.integers(0, 2**32 - 1))
def test_unchanged_c_gives_back_valid_prefer(C: np.ndarray, seed: int) -> None:
    # A valid, usually entrywise-unbalanced decomposition built independently: rotate units
    # around random directed triangles i -> j -> k -> i of the balanced one (A_ij, A_jk, A_ki
    # lose s units, the reverse entries gain them), which keeps every row and column sum.
    rng = np.random.default_rng(seed)
    previous = symmetric_decomposition(C)
    n = len(C)
    for _ in range(4 * n if n >= 3 else 0):
        i, j, k = rng.choice(n, size=3, replace=False)
        most = min(previous[i, j], previous[j, k], previous[k, i])
        if most > 0:
            s = rng.integers(1, most + 1)
            for a, b in ((i, j), (j, k), (k, i)):
                previous[a, b] -= s
                previous[b, a] += s
    assert_theorem(C, previous, entrywise=False)
    assert (symmetric_decomposition(C, prefer=previous) == previous).all()


def test_prefer_can_leave_entrywise_balance() -> None:
    # Two pods joined by 4 links and each with 4 links to a third: A_01 = 4, A_10 = 0 is valid
    # only because the triangle compensates; prefer asks for it and gets it.
    C = np.array([[0, 4, 4], [4, 0, 4], [4, 4, 0]])
    prefer = np.array([[0, 4, 0], [0, 0, 4], [4, 0, 0]])
    assert (symmetric_decomposition(C, prefer=prefer) == prefer).all()
    assert (symmetric_decomposition(C) == 2 * (C > 0)).all()


def cp_sat_min_difference(C: np.ndarray, P: np.ndarray) -> int:
    """Minimum off-diagonal ||A - P||_1 over all Theorem 2.1 decompositions, by CP-SAT."""
    n = C.shape[0]
    model = cp_model.CpModel()
    A = [[model.new_int_var(0, int(C[i, j]), f"a{i}_{j}") for j in range(n)] for i in range(n)]
    diffs = []
    for i in range(n):
        model.add(A[i][i] == int(C[i, i]) // 2)
        for j in range(n):
            if i < j:
                model.add(A[i][j] + A[j][i] == int(C[i, j]))
            if i != j:
                d = model.new_int_var(0, int(C[i, j]) + int(P[i, j]), f"d{i}_{j}")
                model.add_abs_equality(d, A[i][j] - int(P[i, j]))
                diffs.append(d)
        total = int(C[i].sum())
        for line in (sum(A[i]), sum(A[k][i] for k in range(n))):
            model.add(2 * line >= total - 1)
            model.add(2 * line <= total + 1)
    model.minimize(sum(diffs))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return round(solver.objective_value)


@settings(max_examples=200, deadline=None)
@given(symmetric_matrices(max_n=6), st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 5]))
def test_prefer_minimises_differences_like_cp_sat(C: np.ndarray, seed: int, high: int) -> None:
    C = np.minimum(C, 6)  # keep the CP-SAT model small
    np.fill_diagonal(C, np.diagonal(C) // 2 * 2)
    P = np.random.default_rng(seed).integers(0, high + 1, size=C.shape)
    A = symmetric_decomposition(C, prefer=P)
    off = ~np.eye(len(C), dtype=bool)
    assert int(np.abs(A - P)[off].sum()) == cp_sat_min_difference(C, P)


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_matrices(n: int) -> None:
    C = np.full((n, n), 4)
    assert symmetric_decomposition(C).tolist() == np.full((n, n), 2).tolist()


def test_accepts_integer_valued_floats_and_lists() -> None:
    A = symmetric_decomposition([[2.0, 3.0], [3.0, 0.0]])
    assert A.dtype == np.int64
    assert A.tolist() in ([[1, 2], [1, 0]], [[1, 1], [2, 0]])


@settings(max_examples=150, deadline=None)
@given(symmetric_matrices(max_n=8), st.integers(0, 2**32 - 1), st.booleans())
def test_checker_agrees_with_theorem_on_perturbed_splits(
    C: np.ndarray, seed: int, entrywise: bool
) -> None:
    rng = np.random.default_rng(seed)
    A = symmetric_decomposition(C)
    i, j = rng.integers(0, len(C), size=2)
    shift = rng.integers(-2, 3)
    A[i, j] += shift
    if rng.random() < 0.5:  # keep A + A.T == C, maybe break the row/column bounds
        A[j, i] -= shift
    assert (check_symmetric_decomposition(C, A, entrywise=entrywise) == []) == theorem_holds(
        C, A, entrywise=entrywise
    )


def test_checker_reports_each_broken_bound() -> None:
    C = np.array([[0, 2, 0], [2, 0, 1], [0, 1, 0]])
    msgs = check_symmetric_decomposition(C, np.array([[0, 2, 0], [0, 0, 1], [0, 0, 0]]))
    assert any(m.startswith("row 0:") for m in msgs)
    assert any(m.startswith("column 0:") for m in msgs)
    msgs = check_symmetric_decomposition(C, np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    assert any("A[1, 2] + A[2, 1] = 2 but C[1, 2] = 1" in m for m in msgs)
    msgs = check_symmetric_decomposition(C, np.array([[0, 3, 0], [-1, 0, 1], [0, 0, 0]]))
    assert any("is negative" in m for m in msgs)
    msgs = check_symmetric_decomposition(
        np.array([[0, 4], [4, 0]]), np.array([[0, 3], [1, 0]]), entrywise=True
    )
    assert "entry (0, 1): A[0, 1] = 3 outside [2, 2] = floor/ceil(C[0, 1] = 4 / 2)" in msgs
    assert check_symmetric_decomposition(C, np.zeros((2, 2)))[0].startswith("A has shape")
    assert "not an integer" in check_symmetric_decomposition(C, np.full((3, 3), 0.5))[0]


def test_checker_truncates_long_reports() -> None:
    C = np.full((30, 30), 2)
    msgs = check_symmetric_decomposition(C, np.zeros((30, 30), dtype=np.int64))
    assert any(m.startswith("... and ") for m in msgs)
    assert len(msgs) < 60


# ---- batches ---------------------------------------------------------------------------------
def _block_diagonal(stack: np.ndarray) -> np.ndarray:
    k, n, _ = stack.shape
    big = np.zeros((k * n, k * n), dtype=np.int64)
    for b in range(k):
        big[b * n : (b + 1) * n, b * n : (b + 1) * n] = stack[b]
    return big


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda k: st.integers(1, 12).flatmap(
            lambda n: st.tuples(
                st.lists(
                    symmetric_matrices(min_n=n, max_n=n),
                    min_size=k,
                    max_size=k,
                ),
                st.integers(0, 2**32 - 1),
                st.booleans(),
            )
        )
    )
)
def test_batch_is_the_block_diagonal_decomposition(args) -> None:
    """symmetric_decomposition_batch == symmetric_decomposition of the block-diagonal matrix,
    block by block (same flow), and every block meets Theorem 2.1."""
    mats, seed, with_prefer = args
    stack = np.stack(mats)
    k, n, _ = stack.shape
    prefer = None
    if with_prefer:
        rng = np.random.default_rng(seed)
        prefer = rng.integers(0, 4, size=stack.shape)
    got = symmetric_decomposition_batch(stack, prefer=prefer)
    big = symmetric_decomposition(
        _block_diagonal(stack), prefer=None if prefer is None else _block_diagonal(prefer)
    )
    for b in range(k):
        assert (got[b] == big[b * n : (b + 1) * n, b * n : (b + 1) * n]).all()
        assert_theorem(stack[b], got[b], entrywise=prefer is None)


def test_batch_errors_name_the_matrix() -> None:
    good = np.array([[0, 1], [1, 0]])
    with pytest.raises(NotSymmetricError, match=r"C\[1\]"):
        symmetric_decomposition_batch(np.stack([good, np.array([[0, 1], [2, 0]])]))
    with pytest.raises(OddDiagonalError, match=r"C\[0\]"):
        symmetric_decomposition_batch(np.array([[[1, 0], [0, 0]]]))
    with pytest.raises(BadShapeError):
        symmetric_decomposition_batch(good)
    with pytest.raises(BadShapeError, match="prefer"):
        symmetric_decomposition_batch(good[None], prefer=np.zeros((1, 3, 3)))


@settings(max_examples=60, deadline=None)
@given(C=symmetric_matrices(max_n=24), seed=st.integers(0, 2**32 - 1))
def test_split_entries_give_the_dense_split(C: np.ndarray, seed: int) -> None:
    """The split of the upper entries (any order, zeros among them) is the dense one's."""
    np.fill_diagonal(C, 0)
    rng = np.random.default_rng(seed)
    i, j = np.nonzero(np.triu(C + (rng.random(C.shape) < 0.1), 1))
    order = rng.permutation(i.size)
    i, j, c, a = symmetric_split_entries(C.shape[0], i[order], j[order], C[i[order], j[order]])
    A = np.zeros_like(C)
    A[i, j], A[j, i] = a, c - a
    assert np.array_equal(A, symmetric_decomposition(C))


def test_split_entries_reject_pairs_off_the_upper_triangle() -> None:
    with pytest.raises(BadShapeError, match="0 <= i < j"):
        symmetric_split_entries(3, [1], [1], [2])
    with pytest.raises(BadShapeError, match="listed twice"):
        symmetric_split_entries(3, [0, 0], [1, 1], [2, 2])
