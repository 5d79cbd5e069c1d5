"""Realization of logical topologies: LumosCore Thm 3.1 / Cross-Wiring Thm 4.1 as properties,
checked port by port with the independent verifier, and the Uniform Wiring counterexample
(LumosCore Fig. 4 / Cross-Wiring Fig. 1) proved with CP-SAT."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_wiring import symmetric_topologies
from lumoscore.errors import ConfigError, InfeasibleError, PreconditionError
from lumoscore.topology import (
    ClusterSpec,
    UnrealizableError,
    build_wiring,
    logical_topology,
    ltcr,
    realize,
    realize_exact,
    verify_circuits,
)


def make_spec(pods: int, k_spine: int, ocs_ports: int, groups: int = 1) -> ClusterSpec:
    return ClusterSpec(
        pods=pods, k_leaf=groups, k_spine=k_spine, tau=1, gpus_per_server=1, ocs_ports=ocs_ports
    )


def logical_topologies(max_pods: int = 24, max_k: int = 16) -> st.SearchStrategy:
    """``(C, K)``: symmetric, zero diagonal, row sums <= K with K even; in the ``full`` mode
    every row sum is exactly K (:func:`helpers_wiring.symmetric_topologies`)."""
    return symmetric_topologies(max_pods, max_k)


def check_realization(C: np.ndarray, K: int, kind: str, circ: bool, ocs_ports: int) -> None:
    P = C.shape[0]
    w = build_wiring(make_spec(P, K, ocs_ports), kind, circ)
    x = realize(C, w)
    assert verify_circuits(w, x, C) == []
    assert ltcr(w, x, C) == 1.0
    assert x.shape[0] == C.sum()  # one directed circuit per link end
    assert (logical_topology(w, x)[0] == C).all()


@settings(max_examples=150, deadline=None)
@given(logical_topologies(), st.booleans())
def test_every_logical_topology_is_realizable_on_cross_wiring(topo: tuple, circ: bool) -> None:
    C, K = topo
    check_realization(C, K, "cross", circ, ocs_ports=C.shape[0])


@settings(max_examples=100, deadline=None)
@given(logical_topologies(), st.booleans())
def test_every_logical_topology_is_realizable_on_dual_link(topo: tuple, circ: bool) -> None:
    C, K = topo
    P = C.shape[0]
    # dual-link holds half the pods: psi = 2 without circulators, 1 with them
    check_realization(C, K, "dual-link", circ, ocs_ports=2 * P if not circ else P)


@settings(max_examples=20, deadline=None)
@given(logical_topologies(max_pods=10, max_k=8), logical_topologies(max_pods=10, max_k=8))
def test_per_group_topologies(a: tuple, b: tuple) -> None:
    """(H, P, P) input: every OCS group realizes its own topology."""
    (C1, K1), (C2, K2) = a, b
    P = min(C1.shape[0], C2.shape[0])
    K = max(K1, K2)
    C = np.stack([C1[:P, :P], C2[:P, :P], C1[:P, :P]])
    w = build_wiring(make_spec(P, K, P, groups=3), "cross")
    x = realize(C, w)
    assert verify_circuits(w, x, C) == []
    assert (logical_topology(w, x) == C).all()


def fig4() -> np.ndarray:
    """3 pods, one link between every pair (LumosCore Fig. 4a, Cross-Wiring Fig. 1a)."""
    return np.ones((3, 3), dtype=np.int64) - np.eye(3, dtype=np.int64)


def test_fig4_counterexample_uniform_is_not_fully_compatible() -> None:
    spec = make_spec(3, 2, 3)  # spines with 2 OCS-facing ports
    uniform = build_wiring(spec, "uniform")
    r = realize_exact(fig4(), uniform, time_limit_s=30)
    assert r.status == "optimal"
    assert r.realized_links == r.upper_bound_links == 2 < r.target_links == 3
    assert r.ltcr == pytest.approx(2 / 3) and r.ltcr < 1
    assert verify_circuits(uniform, r.circuits) == []
    # the same topology is realized by Cross Wiring (and by dual-link on 6-port OCSes)
    cross = build_wiring(spec, "cross")
    x = realize(fig4(), cross)
    assert verify_circuits(cross, x, fig4()) == [] and ltcr(cross, x, fig4()) == 1.0
    dual = build_wiring(make_spec(3, 2, 6), "dual-link")
    assert verify_circuits(dual, realize(fig4(), dual), fig4()) == []
    # and CP-SAT agrees that cross realizes it entirely
    assert realize_exact(fig4(), cross, time_limit_s=30).ltcr == 1.0


def test_uniform_with_relaxed_symmetry_would_realize_fig4() -> None:
    """LumosCore Fig. 4c: without constraint (4) the directed circuits exist; with it they do
    not. A directed 3-cycle on OCS 0 plus the reverse cycle on OCS 1 is valid except for
    symmetry."""
    w = build_wiring(make_spec(3, 2, 3), "uniform")
    x = np.array(
        [[0, 0, i, 0, (i + 1) % 3, 0] for i in range(3)]
        + [[0, 1, (i + 1) % 3, 1, i, 1] for i in range(3)]
    )
    msgs = verify_circuits(w, x, fig4())
    assert msgs and all("constraint (4)" in m for m in msgs)


@settings(max_examples=15, deadline=None)
@given(logical_topologies(max_pods=6, max_k=4))
def test_cp_sat_agrees_cross_is_fully_compatible(topo: tuple) -> None:
    """Independent solver: CP-SAT also realizes every sampled topology on cross wiring."""
    C, K = topo
    w = build_wiring(make_spec(C.shape[0], K, C.shape[0]), "cross")
    r = realize_exact(C, w, time_limit_s=30)
    assert r.status == "optimal" and r.ltcr == 1.0
    assert verify_circuits(w, r.circuits, C) == []


@settings(max_examples=15, deadline=None)
@given(logical_topologies(max_pods=6, max_k=4), st.booleans())
def test_cp_sat_on_uniform_is_valid_and_bounded(topo: tuple, circ: bool) -> None:
    C, K = topo
    w = build_wiring(make_spec(C.shape[0], K, C.shape[0]), "uniform", circ)
    r = realize_exact(C, w, time_limit_s=30)
    assert r.status == "optimal"
    assert verify_circuits(w, r.circuits) == []
    X = logical_topology(w, r.circuits)
    assert (X <= C).all() and (X.transpose(0, 2, 1) == X).all()
    assert r.realized_links == r.upper_bound_links == X.sum() // 2 <= r.target_links
    assert r.ltcr == pytest.approx(X.sum() / C.sum() if C.sum() else 1.0)


def test_realize_exact_time_limit_returns_a_valid_partial_answer() -> None:
    rng = np.random.default_rng(7)
    P, K = 16, 8
    C = np.zeros((P, P), dtype=np.int64)
    for _ in range(K // 2):
        order = rng.permutation(P)
        nxt = np.roll(order, -1)
        np.add.at(C, (order, nxt), 1)
        np.add.at(C, (nxt, order), 1)
    w = build_wiring(make_spec(P, K, P), "uniform")
    r = realize_exact(C, w, time_limit_s=0.05)
    assert r.status in ("optimal", "feasible", "timeout")
    assert verify_circuits(w, r.circuits) == []
    assert r.realized_links <= r.upper_bound_links <= r.target_links
    with pytest.raises(ConfigError, match="time_limit_s must be > 0"):
        realize_exact(C, w, time_limit_s=0)


def test_unrealizable_inputs_name_the_pod() -> None:
    w = build_wiring(make_spec(3, 2, 3), "cross")
    assert issubclass(UnrealizableError, InfeasibleError)
    with pytest.raises(UnrealizableError, match=r"group 0: C\[0, 1\] = 1 != C\[1, 0\] = 0"):
        realize([[0, 1, 0], [0, 0, 0], [0, 0, 0]], w)
    with pytest.raises(UnrealizableError, match=r"pod 1 needs 3 links .* k_spine = 2"):
        realize([[0, 2, 0], [2, 0, 1], [0, 1, 0]], w)
    with pytest.raises(UnrealizableError, match="pod 2 has 2 links to itself"):
        realize([[0, 0, 0], [0, 0, 0], [0, 0, 2]], w)
    with pytest.raises(UnrealizableError, match="group 1: C"):
        w2 = build_wiring(make_spec(3, 2, 3, groups=2), "cross")
        realize(np.stack([fig4(), np.triu(fig4())]), w2)


def test_realize_rejects_uniform_and_bad_shapes() -> None:
    w = build_wiring(make_spec(3, 2, 3), "uniform")
    with pytest.raises(ConfigError, match="NP-complete: use realize_exact"):
        realize(fig4(), w)
    with pytest.raises(PreconditionError, match="must have shape"):
        realize(np.zeros((2, 2)), build_wiring(make_spec(3, 2, 3), "cross"))


@pytest.mark.parametrize("kind", ["uniform", "dual-link", "cross"])
@pytest.mark.parametrize("circ", [False, True])
def test_cp_sat_candidates_match_brute_force(kind: str, circ: bool) -> None:
    """The class-product candidate pairs of realize_exact equal the O((P K)^2) definition."""
    from lumoscore.topology.realize import _candidate_pairs

    P, K = 7, 6
    w = build_wiring(make_spec(P, K, 2 * P), kind, circ)
    rng = np.random.default_rng(5)
    Cg = rng.integers(0, 2, size=(P, P))
    Cg = Cg + Cg.T
    np.fill_diagonal(Cg, 0)
    tx_o, rx_o = w.tx_ocs[0].ravel(), w.rx_ocs[0].ravel()
    tx_s, rx_s = w.tx_side()[0].ravel(), w.rx_side()[0].ravel()
    pod = np.repeat(np.arange(P), K)
    m, n = _candidate_pairs(tx_o, rx_o, tx_s, rx_s, pod, Cg, w.ocs_per_group)
    got = {(min(a, b), max(a, b)) for a, b in zip(m.tolist(), n.tolist(), strict=True)}
    assert len(got) == m.size  # no pair twice
    want = {
        (a, b)
        for a in range(P * K)
        for b in range(a + 1, P * K)
        if pod[a] != pod[b]
        and tx_o[a] == rx_o[b]
        and tx_o[b] == rx_o[a]
        and tx_s[a] != rx_s[b]
        and tx_s[b] != rx_s[a]
        and Cg[pod[a], pod[b]] > 0
    }
    assert got == want and want
