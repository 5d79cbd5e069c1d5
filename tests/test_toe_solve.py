"""Whole-cluster OCS configuration: validity, LTCR, rewiring, errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_wiring import toe_spec
from lumoscore.errors import ConfigError
from lumoscore.toe import (
    configure,
    evaluate,
    mrar,
    random_demand,
    rewired_circuits,
    verify_configuration,
)
from lumoscore.toe.errors import CurrentConfigError, DemandError, WiringMismatchError
from lumoscore.toe.mdmcf import merge_decompose
from lumoscore.toe.model import PortModel, channel_counts, sort_rows
from lumoscore.toe.solve import SMALL_UNITS, _mdmcf_counts, _other_bipartitions, forward_split
from lumoscore.topology import build_wiring, verify_circuits


def _demands(rng: np.random.Generator, H: int, P: int, K: int, fill: float) -> np.ndarray:
    return np.stack([random_demand(P, K, rng, fill=fill) for _ in range(H)])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    P=st.sampled_from([2, 3, 5, 8]),
    half_k=st.integers(1, 5),
    H=st.integers(1, 3),
    solver=st.sampled_from(["mdmcf", "mcf"]),
    circulators=st.booleans(),
)
def test_cross_wiring_realizes_every_topology(seed, P, half_k, H, solver, circulators) -> None:
    """Cross Wiring Thm 4.1: LTCR = 1 and constraints (1)-(4) hold, for every group."""
    rng = np.random.default_rng(seed)
    K = 2 * half_k
    w = build_wiring(toe_spec(P, K, H), "cross", circulators=circulators)
    C = _demands(rng, H, P, K, rng.uniform(0.3, 1.0))
    res = configure(C, w, solver=solver)
    assert verify_circuits(w, res.circuits, C) == []
    assert verify_configuration(w, res.circuits, C) == []
    assert evaluate(res.circuits, C).ltcr == 1.0
    # a second topology, reconfigured from the first configuration
    C2 = _demands(rng, H, P, K, rng.uniform(0.3, 1.0))
    res2 = configure(C2, w, solver=solver, current=res.circuits)
    assert verify_circuits(w, res2.circuits, C2) == []


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), P=st.sampled_from([3, 4, 6]), half_k=st.integers(1, 4))
def test_dual_link_wiring_realizes_every_topology(seed, P, half_k) -> None:
    rng = np.random.default_rng(seed)
    K = 2 * half_k
    w = build_wiring(toe_spec(P, K), "dual-link")
    C = _demands(rng, 1, P, K, 1.0)
    res = configure(C, w)
    assert verify_circuits(w, res.circuits, C) == []


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), P=st.sampled_from([4, 6, 10]), half_k=st.integers(1, 6))
def test_unchanged_demand_keeps_every_circuit(seed, P, half_k) -> None:
    """``prefer`` = the current forward sub-topology: the same C rewires nothing."""
    rng = np.random.default_rng(seed)
    K = 2 * half_k
    w = build_wiring(toe_spec(P, K, 2), "cross")
    C = _demands(rng, 2, P, K, 1.0)
    first = configure(C, w, solver="mcf")  # any valid configuration
    again = configure(C, w, current=first.circuits)
    m = evaluate(again.circuits, C, current=first.circuits)
    assert m.rewired_circuits == 0 and m.mrar == 1.0 and m.removed_circuits == 0


def test_mdmcf_rewires_less_than_mcf_on_successive_topologies() -> None:
    rng = np.random.default_rng(3)
    P, K = 8, 16
    w = build_wiring(toe_spec(P, K), "cross")
    C = random_demand(P, K, rng)
    cur = configure(C, w).circuits
    mr = {"mdmcf": [], "mcf": []}
    for _ in range(5):
        C = random_demand(P, K, rng, previous=C, change=0.2)
        for solver in mr:
            res = configure(C, w, current=cur, solver=solver)
            mr[solver].append(evaluate(res.circuits, C, current=cur).mrar)
        cur = configure(C, w, current=cur).circuits
    assert np.mean(mr["mdmcf"]) > np.mean(mr["mcf"])


def test_single_group_demand_configures_that_group_only() -> None:
    w = build_wiring(toe_spec(3, 2, 4), "cross")
    C = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)
    res = configure(C, w, groups=[2])
    assert set(res.circuits[:, 0].tolist()) == {2}
    assert verify_configuration(w, res.circuits, C, groups=[2]) == []


# ---- malformed inputs ------------------------------------------------------------------------
@pytest.fixture
def cross3() -> object:
    return build_wiring(toe_spec(3, 2), "cross")


def test_asymmetric_demand_names_the_pods(cross3) -> None:
    with pytest.raises(DemandError, match=r"C\[0\]\[1\] = 1 but C\[1\]\[0\] = 0 \(pods 0 and 1\)"):
        configure([[0, 1, 0], [0, 0, 0], [0, 0, 0]], cross3)


def test_row_sum_above_ports_names_the_pod(cross3) -> None:
    with pytest.raises(DemandError, match="pod 0 needs 3 links but spine 0 of pod 0 has 2"):
        configure([[0, 2, 1], [2, 0, 0], [1, 0, 0]], cross3)


def test_diagonal_and_negative_entries_are_rejected(cross3) -> None:
    with pytest.raises(DemandError, match=r"C\[1\]\[1\] = 2"):
        configure([[0, 0, 0], [0, 2, 0], [0, 0, 0]], cross3)
    with pytest.raises(DemandError, match="negative"):
        configure([[0, -1, 0], [-1, 0, 0], [0, 0, 0]], cross3)
    with pytest.raises(DemandError, match="shape"):
        configure(np.zeros((2, 2)), cross3)


def test_current_config_off_the_wiring_names_pod_port_and_ocs(cross3) -> None:
    C = [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    with pytest.raises(CurrentConfigError, match="Tx of group 0 pod 0 port 0 is wired to OCS 0"):
        configure(C, cross3, current=[[0, 1, 0, 0, 1, 0]])
    with pytest.raises(CurrentConfigError, match="port 7 out of range"):
        configure(C, cross3, current=[[0, 0, 0, 7, 1, 1]])
    dup = [[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 2, 1]]
    with pytest.raises(CurrentConfigError, match="Tx of group 0 pod 0 port 0 is used by 2"):
        configure(C, cross3, current=dup)
    # a group the wiring does not have is refused, even when only other groups are solved
    for g in (5, -1):
        with pytest.raises(CurrentConfigError, match=rf"circuit 0: group {g} out of range"):
            configure(C, cross3, current=[[g, 0, 0, 0, 1, 1]], groups=[0])


def test_solver_and_wiring_mismatch() -> None:
    w = build_wiring(toe_spec(3, 2), "uniform")
    with pytest.raises(WiringMismatchError, match="allowed solvers for this wiring: ilp, bvn"):
        configure(np.zeros((3, 3), dtype=int), w, solver="mdmcf")
    circ = build_wiring(toe_spec(3, 2), "uniform", circulators=True)
    with pytest.raises(WiringMismatchError, match="pod 0 has 1 forward and 0 backward ports"):
        configure(np.zeros((3, 3), dtype=int), circ, solver="mcf")
    with pytest.raises(ConfigError, match="allowed: mdmcf, mcf, ilp, bvn, helios"):
        configure(np.zeros((3, 3), dtype=int), w, solver="gurobi")


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), how=st.sampled_from(["drop", "ocs", "port", "pod"]))
def test_verifier_agrees_with_topology_verifier_on_corruptions(seed: int, how: str) -> None:
    rng = np.random.default_rng(seed)
    P, K = 5, 4
    w = build_wiring(toe_spec(P, K, 2), "cross")
    C = _demands(rng, 2, P, K, 1.0)
    x = configure(C, w).circuits.copy()
    r = int(rng.integers(len(x)))
    if how == "drop":
        x = np.delete(x, r, axis=0)
    elif how == "ocs":
        x[r, 1] = (x[r, 1] + 1) % K
    elif how == "port":
        x[r, 3] = (x[r, 3] + 2) % K  # same OCS parity, another port: Tx reused or rewired
    else:
        x[r, 4] = (x[r, 4] + 1) % P
    mine = verify_configuration(w, x, C)
    theirs = verify_circuits(w, x, C)
    assert mine and theirs


# ---- mdmcf: the bipartitions it skips cannot change its answer --------------------------------
def _dense_other_bipartitions(A, u, x, best, model, n_ch, *, at_bound: bool) -> np.ndarray:
    """Reference for ``_other_bipartitions`` on dense ``(H, n_chan, P, P)`` arrays: the peel
    split in each channel order through :func:`merge_decompose`, kept per group where it
    rewires less (``REFINE_ROUNDS`` is 0)."""
    H, n_chan = model.groups, model.channels
    orders = [] if at_bound else [np.broadcast_to(np.arange(n_chan), (H, n_chan))]
    if orders and (n_ch == n_chan).all() and A.sum() <= SMALL_UNITS:
        overlap = np.minimum(u, A[:, None]).sum(axis=(2, 3))
        orders.append(np.argsort(-overlap, axis=1, kind="stable"))
        rng = np.random.default_rng(0)
        orders += [np.argsort(rng.random((H, n_chan)), axis=1) for _ in range(2)]
    for order in orders:
        uo = np.take_along_axis(u, order[:, :, None, None], axis=1)
        co = np.take_along_axis(model.cap, order[:, :, None, None], axis=1)
        yo = merge_decompose(A, uo, co, n_channels=n_ch, split="peel")
        y = np.empty_like(yo)
        np.put_along_axis(y, order[:, :, None, None], yo, axis=1)
        cost = np.abs(y - u).sum(axis=(1, 2, 3))
        x = np.where((cost < best)[:, None, None, None], y, x)
        best = np.minimum(cost, best)
    return x


def _all_bipartitions(C: np.ndarray, model, cur: np.ndarray, *, dense: bool = True) -> np.ndarray:
    """``mdmcf`` counts running every bipartition (halves, then the peel orders), keeping per
    group the least rewiring: the procedure without the lower-bound shortcut (``dense``: by
    the dense reference, else by ``_other_bipartitions`` on the entries)."""
    u = channel_counts(model, cur)[:, :, 0]
    A = forward_split(C, u.sum(axis=1))
    n_ch = (model.chan_ocs[:, :, 0] >= 0).sum(axis=1)
    x = merge_decompose(A, u, model.cap, n_channels=n_ch, split="halves")
    best = np.abs(x - u).sum(axis=(1, 2, 3))
    if dense:
        return _dense_other_bipartitions(A, u, x, best, model, n_ch, at_bound=False)
    ek, uk, xk = (np.flatnonzero(m) for m in (A, u, x))
    keys, vals = _other_bipartitions(
        ek, A.reshape(-1)[ek], uk, u.reshape(-1)[uk], xk, x.reshape(-1)[xk], best, model, n_ch,
        at_bound=False,
    )  # fmt: skip
    out = np.zeros(x.size, np.int64)
    out[keys] = vals
    return out.reshape(x.shape)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    P=st.sampled_from([3, 4, 6, 8]),
    half_k=st.integers(2, 4),
    H=st.integers(1, 3),
    change=st.sampled_from([0.05, 0.2, 0.6]),
)
def test_mdmcf_counts_equal_the_full_bipartition_search(seed, P, half_k, H, change) -> None:
    """The halves split meeting sum |A - sum_c u_c| for every group is final: the counts equal
    those of running every bipartition, and never beat that lower bound."""
    rng = np.random.default_rng(seed)
    K = 2 * half_k
    w = build_wiring(toe_spec(P, K, H), "cross")
    C = _demands(rng, H, P, K, 0.9)
    cur = configure(C, w).circuits
    C2 = np.stack([random_demand(P, K, rng, previous=c, change=change) for c in C])
    model = PortModel.from_wiring(w)
    got = _mdmcf_counts(C2, model, cur, np.arange(H))
    full = _all_bipartitions(C2, model, cur)
    assert (got == full).all()
    assert (_all_bipartitions(C2, model, cur, dense=False) == full).all()  # on the entries
    u = channel_counts(model, cur)[:, :, 0]
    A = got.sum(axis=1)
    assert (np.abs(got - u).sum(axis=(1, 2, 3)) >= np.abs(A - u.sum(axis=1)).sum(axis=(1, 2))).all()


# ---- metrics on row keys ---------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 40),
    m=st.integers(0, 40),
    span=st.sampled_from([2, 5, 2**20]),
)
def test_rewiring_metrics_count_rows_as_multisets(seed, n, m, span) -> None:
    """rewired_circuits / mrar = sum over distinct rows of (count new - count current)^+
    (plain Python counting), sort_rows = np.lexsort order; values up to 2**20 per column
    force the overflow fallback of the row keys."""
    rng = np.random.default_rng(seed)
    new = rng.integers(-1, span, size=(n, 6))
    cur = rng.integers(-1, span, size=(m, 6))

    def excess(cols):
        have = Counter(map(tuple, cur[:, cols].tolist()))
        need = Counter(map(tuple, new[:, cols].tolist()))
        return sum(max(k - have[r], 0) for r, k in need.items())

    assert rewired_circuits(new, cur) == excess([0, 1, 2, 3, 4, 5])
    if n:
        assert mrar(new, cur) == 1.0 - excess([0, 1, 2, 4]) / n
        assert (sort_rows(new) == new[np.lexsort(new.T[::-1])]).all()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), H=st.integers(1, 4), per=st.integers(1, 3))
def test_forward_split_in_blocks_is_the_per_block_decomposition(seed, H, per) -> None:
    """Batches of ``per`` groups: forward_split = symmetric_decomposition of each batch's
    block-diagonal matrix; the sparse entries of the mdmcf path are those of forward_split."""
    import lumoscore.toe.solve as solve_mod
    from lumoscore.decompose import symmetric_decomposition

    rng = np.random.default_rng(seed)
    P, K = 5, 6
    C = _demands(rng, H, P, K, 0.8)
    prefer = rng.integers(0, 3, size=C.shape)
    old = solve_mod._BLOCK_ROWS
    solve_mod._BLOCK_ROWS = per * P
    try:
        A = forward_split(C, prefer)
        keys, vals = solve_mod._forward_entries(C, prefer)
    finally:
        solve_mod._BLOCK_ROWS = old
    for s in range(0, H, per):
        blk, pb = C[s : s + per], prefer[s : s + per]
        n = len(blk)
        big, pbig = np.zeros((n * P, n * P), np.int64), np.zeros((n * P, n * P), np.int64)
        for b in range(n):
            big[b * P : (b + 1) * P, b * P : (b + 1) * P] = blk[b]
            pbig[b * P : (b + 1) * P, b * P : (b + 1) * P] = pb[b]
        ref = symmetric_decomposition(big, prefer=pbig)
        for b in range(n):
            assert (A[s + b] == ref[b * P : (b + 1) * P, b * P : (b + 1) * P]).all()
    assert keys.tolist() == np.flatnonzero(A).tolist()
    assert vals.tolist() == A.reshape(-1)[keys].tolist()


def test_assemble_names_the_pod_without_free_ports() -> None:
    """Counts needing more ports than a pod has in a channel: the error names group, pod and
    channel (the first end, in request order, that finds no free port)."""
    from lumoscore.errors import InfeasibleError
    from lumoscore.toe.model import PortModel, assemble_sparse

    t = np.broadcast_to(np.arange(2), (1, 3, 2))  # uniform wiring: one port per channel
    pm = PortModel.from_arrays(t, t, t, t)
    with pytest.raises(InfeasibleError, match="group 0: pod 0 has too few free ports in channel 0"):
        assemble_sparse(pm, [1, 2], [2, 1])  # x[0, 0, 0, 1] = 2, x[0, 0, 0, 2] = 1


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_configure_keeps_circuits_it_can(seed: int) -> None:
    """Configuring again from a random configuration (random demand each time) gives valid
    circuits; re-running with the result as current changes nothing."""
    from lumoscore.topology import ClusterSpec, build_wiring, verify_circuits

    rng = np.random.default_rng(seed)
    spec = ClusterSpec(pods=4, k_leaf=2, k_spine=4, tau=1, gpus_per_server=2, ocs_ports=4)
    w = build_wiring(spec, "cross")
    cur = None
    for _ in range(3):
        C = np.zeros((2, 4, 4), np.int64)
        for h in range(2):
            for _k in range(int(rng.integers(0, 5))):
                i, j = rng.choice(4, 2, replace=False)
                if C[h, i].sum() < 4 and C[h, j].sum() < 4:
                    C[h, i, j] += 1
                    C[h, j, i] += 1
        res = configure(C, w, current=cur)
        assert verify_circuits(w, res.circuits, C) == []
        again = configure(C, w, current=res.circuits)
        assert np.array_equal(again.circuits, res.circuits)
        cur = res.circuits
