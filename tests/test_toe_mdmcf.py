"""MDMCF: optimal for two channels (Cross Wiring Thm 5.1), feasible beyond (App. D.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from lumoscore.errors import InfeasibleError
from lumoscore.toe.mdmcf import merge_decompose, refine_pairs


def _random_within_caps(rng: np.random.Generator, capf: np.ndarray, capb: np.ndarray, fill: float):
    """Random channel counts x[c, i, j] with row sums <= capf[c, i], column sums <= capb[c, j]."""
    n_chan, P = capf.shape
    x = np.zeros((n_chan, P, P), dtype=np.int64)
    for c in range(n_chan):
        rows, cols = capf[c].copy(), capb[c].copy()
        for _ in range(int(fill * rows.sum()) + 1):
            i, j = rng.integers(P), rng.integers(P)
            if i != j and rows[i] > 0 and cols[j] > 0:
                x[c, i, j] += 1
                rows[i] -= 1
                cols[j] -= 1
    return x


def _instance(seed: int, P: int, n_chan: int, max_cap: int, uniform: bool = False):
    rng = np.random.default_rng(seed)
    cap = rng.integers(1, max_cap + 1, size=(1, 1 if uniform else n_chan, 2, P))
    cap = np.repeat(cap, n_chan, axis=1) if uniform else cap
    x0 = _random_within_caps(rng, cap[0, :, 0], cap[0, :, 1], 0.9)
    u = _random_within_caps(rng, cap[0, :, 0], cap[0, :, 1], rng.uniform(0.3, 1.0))
    return x0.sum(axis=0)[None], u[None], cap


def _cp_sat_min_rewiring(A: np.ndarray, u: np.ndarray, cap: np.ndarray) -> int:
    """The ILP (21)-(26) of Cross Wiring App. D.1: min sum |x - u| (one group)."""
    n_chan, _, P = cap[0].shape
    m = cp_model.CpModel()
    x = {}
    obj = []
    for c in range(n_chan):
        for i in range(P):
            for j in range(P):
                if A[0, i, j] == 0:
                    if u[0, c, i, j]:
                        obj.append(int(u[0, c, i, j]))
                    continue
                v = m.new_int_var(0, int(A[0, i, j]), f"x{c}_{i}_{j}")
                d = m.new_int_var(0, int(A[0, i, j] + u[0, c, i, j]), f"d{c}_{i}_{j}")
                m.add(d >= v - int(u[0, c, i, j]))
                m.add(d >= int(u[0, c, i, j]) - v)
                x[c, i, j] = v
                obj.append(d)
    for i in range(P):
        for j in range(P):
            if A[0, i, j]:
                m.add(sum(x[c, i, j] for c in range(n_chan)) == int(A[0, i, j]))
    for c in range(n_chan):
        for i in range(P):
            row = [x[c, i, j] for j in range(P) if (c, i, j) in x]
            col = [x[c, j, i] for j in range(P) if (c, j, i) in x]
            if row:
                m.add(sum(row) <= int(cap[0, c, 0, i]))
            if col:
                m.add(sum(col) <= int(cap[0, c, 1, i]))
    m.minimize(sum(obj))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 20
    assert solver.solve(m) == cp_model.OPTIMAL
    return round(solver.objective_value)


def _check_feasible(A, x, cap):
    assert (x >= 0).all()
    assert (x.sum(axis=1) == A).all()
    assert (x.sum(axis=3) <= cap[:, :, 0]).all()
    assert (x.sum(axis=2) <= cap[:, :, 1]).all()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), P=st.integers(2, 6), max_cap=st.integers(1, 3))
def test_two_channels_match_cp_sat_optimum(seed: int, P: int, max_cap: int) -> None:
    """Theorem 5.1: with two OCS channels the merge-decomposition MCF is optimal."""
    A, u, cap = _instance(seed, P, 2, max_cap)
    x = merge_decompose(A, u, cap)
    _check_feasible(A, x, cap)
    assert int(np.abs(x - u).sum()) == _cp_sat_min_rewiring(A, u, cap)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    P=st.integers(2, 8),
    n_chan=st.integers(1, 9),
    max_cap=st.integers(1, 2),
    H=st.integers(1, 3),
    split=st.sampled_from(["halves", "peel"]),
)
def test_many_channels_always_feasible(seed, P, n_chan, max_cap, H, split) -> None:
    """Appendix D.3: with the same ports per pod in every channel (as Cross Wiring wires them)
    every split of the recursion is feasible -- for every group at once."""
    parts = [_instance(seed + h, P, n_chan, max_cap, uniform=True) for h in range(H)]
    A = np.concatenate([p[0] for p in parts])
    u = np.concatenate([p[1] for p in parts])
    cap = np.concatenate([p[2] for p in parts])
    x = merge_decompose(A, u, cap, split=split)
    _check_feasible(A, x, cap)
    y = refine_pairs(x, u, cap, rounds=4, rng=seed)
    _check_feasible(A, y, cap)
    assert np.abs(y - u).sum() <= np.abs(x - u).sum()


def test_unchanged_forward_topology_keeps_every_circuit() -> None:
    _A, u, cap = _instance(7, 6, 5, 2)
    x = merge_decompose(u.sum(axis=1), u, cap)
    assert (x == u).all()


def test_too_many_links_for_the_ports_names_group_and_pod() -> None:
    cap = np.ones((1, 2, 2, 3), dtype=np.int64)
    A = np.array([[[0, 2, 1], [0, 0, 0], [0, 0, 0]]])
    with pytest.raises(InfeasibleError, match="group 0: pod 0 sends 3 links"):
        merge_decompose(A, np.zeros((1, 2, 3, 3), dtype=np.int64), cap)
