"""Input validation of lumoscore.decompose: one test per exception type and message content."""

from __future__ import annotations

import numpy as np
import pytest

from lumoscore.decompose import (
    BadShapeError,
    DecompositionInputError,
    NegativeEntriesError,
    NonIntegerError,
    NotSymmetricError,
    OddDiagonalError,
    check_integer_decomposition,
    check_symmetric_decomposition,
    integer_decomposition,
    symmetric_decomposition,
)
from lumoscore.decompose.flow import solve_bounded_flow
from lumoscore.errors import PreconditionError, SolverError

SYM = np.array([[0, 1], [1, 2]])


def test_hierarchy() -> None:
    for exc in (
        BadShapeError,
        NegativeEntriesError,
        NonIntegerError,
        NotSymmetricError,
        OddDiagonalError,
    ):
        assert issubclass(exc, DecompositionInputError)
    assert issubclass(DecompositionInputError, PreconditionError)


@pytest.mark.parametrize(
    "C", [np.zeros(3), np.zeros((2, 2, 2)), np.zeros((2, 3)), [[1, 2], [3]]], ids=str
)
def test_symmetric_bad_shape(C: object) -> None:
    with pytest.raises(BadShapeError):
        symmetric_decomposition(C)


def test_symmetric_prefer_bad_shape() -> None:
    with pytest.raises(BadShapeError, match="prefer has shape"):
        symmetric_decomposition(SYM, prefer=np.zeros((3, 3)))


@pytest.mark.parametrize("C", [np.zeros(3), np.zeros((2, 2, 2))], ids=str)
def test_integer_bad_shape(C: object) -> None:
    with pytest.raises(BadShapeError, match="2-dimensional"):
        integer_decomposition(C, 2)


@pytest.mark.parametrize("K", [0, -3])
def test_integer_bad_parts(K: int) -> None:
    with pytest.raises(BadShapeError, match="K"):
        integer_decomposition(SYM, K)


@pytest.mark.parametrize("K", [1.5, "2", None, True])
def test_integer_non_integer_parts(K: object) -> None:
    with pytest.raises(NonIntegerError, match="K"):
        integer_decomposition(SYM, K)


def test_not_symmetric_names_first_pair() -> None:
    C = np.array([[0, 1, 2], [1, 0, 3], [2, 4, 0]])
    with pytest.raises(NotSymmetricError, match=r"C\[1, 2\] = 3 but C\[2, 1\] = 4"):
        symmetric_decomposition(C)
    with pytest.raises(NotSymmetricError):
        check_symmetric_decomposition(C, np.zeros((3, 3)))


def test_negative_names_entry() -> None:
    with pytest.raises(NegativeEntriesError, match=r"C\[0, 1\] = -1"):
        symmetric_decomposition(np.array([[0, -1], [-1, 0]]))
    with pytest.raises(NegativeEntriesError, match=r"C\[1, 0\] = -2"):
        integer_decomposition(np.array([[0, 1], [-2, 0]]), 3)
    with pytest.raises(NegativeEntriesError, match="prefer"):
        symmetric_decomposition(SYM, prefer=-np.ones((2, 2)))


@pytest.mark.parametrize(
    "bad",
    [0.5, np.nan, np.inf, -np.inf],
    ids=["fraction", "nan", "inf", "-inf"],
)
def test_non_integer_values(bad: float) -> None:
    C = np.array([[0.0, 1.0], [1.0, 0.0]])
    C[0, 1] = C[1, 0] = bad
    with pytest.raises(NonIntegerError, match=r"C\[0, 1\]"):
        symmetric_decomposition(C)
    with pytest.raises(NonIntegerError, match=r"C\[0, 1\]"):
        integer_decomposition(C, 2)


@pytest.mark.parametrize(
    "C",
    [np.array([["a", "b"], ["b", "a"]]), np.array([[1j, 0], [0, 1j]]), [[object(), 1], [1, 1]]],
    ids=["str", "complex", "object"],
)
def test_non_numeric_dtype(C: object) -> None:
    with pytest.raises(NonIntegerError):
        symmetric_decomposition(C)
    with pytest.raises(NonIntegerError):
        integer_decomposition(C, 2)


def test_odd_diagonal_names_entry() -> None:
    with pytest.raises(OddDiagonalError, match=r"C\[1, 1\] = 3"):
        symmetric_decomposition(np.array([[2, 1], [1, 3]]))


def test_too_large_values() -> None:
    with pytest.raises(DecompositionInputError, match="too large"):
        integer_decomposition(np.array([[2**45]]), 2**10)
    with pytest.raises(DecompositionInputError, match="at most"):
        symmetric_decomposition(np.array([[0, 2.0**60], [2.0**60, 0]]))


def test_checker_bad_c_raises_but_bad_x_is_reported() -> None:
    with pytest.raises(NegativeEntriesError):
        check_integer_decomposition(np.array([[-1]]), np.zeros((1, 1, 1)))
    assert "not finite" in check_integer_decomposition([[1]], [[[np.nan]]])[0]
    with pytest.raises(BadShapeError):
        check_integer_decomposition([[1]], [[[1]]], K=0)


def test_flow_helper_reports_infeasible_network_as_solver_error() -> None:
    # Node 0 must send 2 units through an arc of capacity 1: OR-Tools says INFEASIBLE.
    one = np.array([1])
    with pytest.raises(SolverError, match="expected OPTIMAL"):
        solve_bounded_flow(2, np.array([0]), one, np.array([0]), one, one, np.array([2, -2]))
    with pytest.raises(ValueError, match="lower bound 2 > upper bound 1"):
        solve_bounded_flow(2, np.array([0]), one, np.array([2]), one, one, np.zeros(2))
