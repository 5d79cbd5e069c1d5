"""Integer decomposition C = X[0] + ... + X[K-1] against Theorem 2.2 / 3.1."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.decompose import (
    BadShapeError,
    check_integer_decomposition,
    integer_decomposition,
    integer_decomposition_entries,
    integer_decomposition_sparse,
)

PRIMES = [2, 3, 5, 7, 13, 31, 61, 127, 131, 251, 293]
POWERS_OF_TWO = [1, 2, 4, 8, 16, 32, 64, 128, 256]


@st.composite
def integer_matrices(draw: st.DrawFn, max_n: int = 64) -> np.ndarray:
    """Random non-negative integer matrices, rectangular, sparse or dense, entries up to 10**6,
    with some all-zero rows and columns."""
    rows = draw(st.integers(1, max_n))
    cols = draw(st.integers(1, max_n))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    high = draw(st.sampled_from([1, 2, 7, 300, 10**6]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    C = rng.integers(0, high + 1, size=(rows, cols)) * (rng.random((rows, cols)) < density)
    C[rng.random(rows) < draw(st.floats(0.0, 0.5)), :] = 0
    C[:, rng.random(cols) < draw(st.floats(0.0, 0.5))] = 0
    return C


parts = st.one_of(st.integers(1, 300), st.sampled_from(PRIMES), st.sampled_from(POWERS_OF_TWO))


def floor_ceil_ok(got: np.ndarray, total: np.ndarray, K: int) -> bool:
    """``floor(total / K) <= got <= ceil(total / K)``, written as ``K*got`` vs ``total``."""
    return bool(((K * got > total - K) & (K * got < total + K)).all())


def theorem_holds(C: np.ndarray, X: np.ndarray, K: int) -> bool:
    return (
        bool((X.sum(axis=0) == C).all())
        and floor_ceil_ok(X, C[None], K)
        and floor_ceil_ok(X.sum(axis=2), C.sum(axis=1)[None], K)
        and floor_ceil_ok(X.sum(axis=1), C.sum(axis=0)[None], K)
    )


def assert_theorem(C: np.ndarray, X: np.ndarray, K: int) -> None:
    """Theorem 2.2 written out directly (independent of the package's checker)."""
    assert X.dtype == np.int64
    assert X.shape == (K, *C.shape)
    assert (X.sum(axis=0) == C).all()
    assert floor_ceil_ok(X, C[None], K)
    assert floor_ceil_ok(X.sum(axis=2), C.sum(axis=1)[None], K)
    assert floor_ceil_ok(X.sum(axis=1), C.sum(axis=0)[None], K)
    assert check_integer_decomposition(C, X, K) == []


@settings(max_examples=250, deadline=None)
@given(integer_matrices(), parts)
def test_meets_theorem(C: np.ndarray, K: int) -> None:
    X = integer_decomposition(C, K)
    assert_theorem(C, X, K)
    # Beyond the theorem: every part's grand total is balanced too.
    assert floor_ceil_ok(X.sum(axis=(1, 2)), np.array(C.sum()), K)


@settings(max_examples=100, deadline=None)
@given(integer_matrices(max_n=24), parts)
def test_sparse_form_matches_dense(C: np.ndarray, K: int) -> None:
    sparse = integer_decomposition_sparse(C, K)
    assert sparse.shape == (K, *C.shape)
    assert (sparse.value > 0).all()
    keys = np.stack([sparse.part, sparse.row, sparse.col])
    assert (np.diff(np.ravel_multi_index(keys, sparse.shape)) > 0).all()  # sorted, unique
    assert (sparse.to_dense() == integer_decomposition(C, K)).all()
    assert_theorem(C, sparse.to_dense(), K)


@settings(max_examples=100, deadline=None)
@given(integer_matrices(max_n=12), st.integers(2, 300))
def test_more_parts_than_units(C: np.ndarray, K: int) -> None:
    C = np.minimum(C, 3)
    X = integer_decomposition(C, K)
    assert_theorem(C, X, K)
    if C.sum() <= K:  # each part then holds at most one unit in total
        assert X.sum(axis=(1, 2)).max() <= 1


def test_single_part_is_identity() -> None:
    C = np.array([[1, 0, 5], [2, 2, 9]])
    assert (integer_decomposition(C, 1) == C[None]).all()


def test_exact_multiples_split_exactly() -> None:
    C = np.array([[6, 0], [3, 9]])
    assert (integer_decomposition(C, 3) == (C // 3)[None]).all()


def test_permutation_parts_for_regular_bipartite_matrix() -> None:
    # A d-regular bipartite multigraph splits into d perfect matchings (Konig): here d = 4.
    rng = np.random.default_rng(7)
    C = sum(np.eye(16, dtype=np.int64)[rng.permutation(16)] for _ in range(4))
    X = integer_decomposition(C, 4)
    assert (X.sum(axis=1) == 1).all() and (X.sum(axis=2) == 1).all()


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (3, 0)])
def test_empty_matrices(shape: tuple[int, int]) -> None:
    assert integer_decomposition(np.zeros(shape, dtype=np.int64), 4).shape == (4, *shape)


@settings(max_examples=150, deadline=None)
@given(integer_matrices(max_n=8), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_checker_agrees_with_theorem_on_perturbed_parts(C: np.ndarray, K: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = integer_decomposition(C, K)
    k, i, j = (rng.integers(0, n) for n in X.shape)
    if rng.random() < 0.5:  # move units between two parts: the sum stays C
        X[k, i, j] -= 1
        X[rng.integers(0, K), i, j] += 1
    else:
        X[k, i, j] += rng.integers(-2, 3)
    assert (check_integer_decomposition(C, X) == []) == theorem_holds(C, X, K)


def test_checker_reports_each_broken_bound() -> None:
    C = np.array([[4, 0], [0, 4]])
    bad = np.array([[[3, 0], [0, 2]], [[1, 0], [0, 2]]])
    msgs = check_integer_decomposition(C, bad)
    assert any(m.startswith("part 0, entry (0, 0): X[0, 0, 0] = 3 outside [2, 2]") for m in msgs)
    assert any(m.startswith("part 1, row 0:") for m in msgs)
    assert any(m.startswith("part 0, column 0:") for m in msgs)
    msgs = check_integer_decomposition(C, np.array([[[2, 0], [0, 2]], [[2, 0], [0, 1]]]))
    assert msgs[0] == "entry (1, 1): sum over parts = 3 but C[1, 1] = 4"
    assert check_integer_decomposition(C, bad, K=3)[0].startswith("X has shape")
    assert "3-dimensional" in check_integer_decomposition(C, C)[0]
    assert check_integer_decomposition(C, np.stack([C // 2, C // 2])) == []


def test_huge_k_stays_sparse_and_balanced() -> None:
    C = np.array([[3, 0, 7], [1, 2, 0]])
    K = 10**6
    sparse = integer_decomposition_sparse(C, K)
    assert sparse.shape == (K, 2, 3)
    assert (sparse.value == 1).all()  # every entry of C is below K: parts hold 0 or 1
    got = np.zeros_like(C)
    np.add.at(got, (sparse.row, sparse.col), sparse.value)
    assert (got == C).all()
    # each part's total is at most ceil(13 / K) = 1: no part holds two units
    assert np.unique(sparse.part).size == sparse.part.size == C.sum()


@settings(max_examples=60, deadline=None)
@given(C=integer_matrices(max_n=24), K=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_entries_give_the_dense_parts(C: np.ndarray, K: int, seed: int) -> None:
    """The decomposition of COO entries (any order, zeros among them) is the dense one."""
    rng = np.random.default_rng(seed)
    r, c = np.nonzero(C | (rng.random(C.shape) < 0.1))  # (with some zero entries)
    order = rng.permutation(r.size)
    r, c = r[order], c[order]
    got = integer_decomposition_entries(r, c, C[r, c], C.shape, K)
    want = integer_decomposition_sparse(C, K)
    for name in ("part", "row", "col", "value"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.shape == want.shape


def test_entries_reject_a_position_twice_or_outside() -> None:
    with pytest.raises(BadShapeError, match="listed twice"):
        integer_decomposition_entries([0, 0], [1, 1], [1, 2], (2, 2), 2)
    with pytest.raises(BadShapeError, match="within the shape"):
        integer_decomposition_entries([2], [0], [1], (2, 2), 2)
