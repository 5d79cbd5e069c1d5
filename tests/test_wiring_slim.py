"""Slim Dual-link Uniform Wiring (Cross-Wiring App. C): the port map and its coupling, sizes,
the circulator requirement, the polynomial realization at granularity 2 (exact on even
topologies, the closed-form LTCR on odd ones) against CP-SAT, and the coupling check of the
verifier."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_wiring import symmetric_topologies
from lumoscore.errors import ConfigError
from lumoscore.hardware.sizing import lumoscore_max_gpus
from lumoscore.toe import verify_configuration
from lumoscore.topology import (
    ClusterSpec,
    Wiring,
    build_wiring,
    logical_topology,
    ltcr,
    realize,
    realize_exact,
    verify_circuits,
)
from lumoscore.topology.realize import coarse_ltcr, coarse_part
from lumoscore.topology.wiring import (
    FULLY_COMPATIBLE,
    GRANULARITY,
    WIRING_KINDS,
    max_gpus,
    max_pods,
    ocs_per_group,
    psi,
    wiring_kind,
)

SLIM = "slim-dual-link"


def make_spec(pods: int, k_spine: int, ocs_ports: int | None = None, groups: int = 1):
    return ClusterSpec(
        pods=pods,
        k_leaf=groups,
        k_spine=k_spine,
        tau=1,
        gpus_per_server=1,
        ocs_ports=ocs_ports if ocs_ports is not None else 2 * pods,
    )


def slim(pods: int, k_spine: int, groups: int = 1) -> Wiring:
    return build_wiring(make_spec(pods, k_spine, groups=groups), SLIM, circulators=True)


def topologies(max_pods: int = 10, max_k: int = 16, even: bool = False) -> st.SearchStrategy:
    """``(C, K)``: symmetric, zero diagonal, row sums <= K with K a multiple of 4.

    ``even``: all counts even (in ``full`` mode every row sum of C is exactly K). Otherwise
    random pod pairs get one link while both have ports
    (:func:`helpers_wiring.symmetric_topologies`).
    """
    return symmetric_topologies(max_pods, max_k, multiple=4, unit=2 if even else 1, full=even)


# ---- the map ------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(
    P=st.integers(1, 9),
    quarter=st.integers(1, 4),
    H=st.integers(1, 3),
    spare=st.integers(0, 3),
)
def test_map_is_a_valid_coupled_port_map(P: int, quarter: int, H: int, spare: int) -> None:
    K = 4 * quarter
    w = build_wiring(make_spec(P, K, 2 * P + spare, groups=H), SLIM, circulators=True)
    assert w.tx_ocs.shape == (H, P, K) and w.ocs_per_group == K // 4
    # one fibre per port (circulators): Tx and Rx on the same half-port
    assert (w.tx_ocs == w.rx_ocs).all() and (w.tx_ocs_port == w.rx_ocs_port).all()
    # the documented map: port k of pod p -> OCS k // 4, half-port 4p + k % 4
    p = np.arange(P)[:, None]
    k = np.arange(K)[None, :]
    assert (w.tx_ocs == k // 4).all() and (w.tx_ocs_port == 4 * p + k % 4).all()
    # every half-port of the OCS ports 0 .. 2P-1 of every OCS is used exactly once
    g = np.broadcast_to(np.arange(H)[:, None, None], (H, P, K))
    ends = np.stack([g, w.tx_ocs, w.tx_ocs_port], -1).reshape(-1, 3)
    assert np.unique(ends, axis=0).shape[0] == H * P * K
    assert w.tx_ocs_port.max() < w.port_slots
    for o in range(w.ocs_per_group):
        assert sorted(w.tx_ocs_port[0][w.tx_ocs[0] == o].tolist()) == list(range(4 * P))
    # coupling: the lanes 2t, 2t+1 of a transceiver are the N and S half of one OCS port
    n_lane, s_lane = w.tx_ocs_port[..., 0::2], w.tx_ocs_port[..., 1::2]
    assert (w.tx_ocs[..., 0::2] == w.tx_ocs[..., 1::2]).all()
    assert (n_lane // 2 == s_lane // 2).all()
    assert (w.tx_side()[..., 0::2] == 0).all() and (w.tx_side()[..., 1::2] == 1).all()
    # two transceivers (two OCS ports) per pod on every OCS: psi = 2
    per_pod_ocs = np.bincount((np.arange(P)[:, None] * w.ocs_per_group + w.tx_ocs[0]).ravel())
    assert (per_pod_ocs == 4).all()
    assert w.psi == 2 and w.ocs_ports_used == 2 * P
    assert w.coupled and w.granularity == 2 and w.fully_compatible


def test_kind_tables_and_aliases() -> None:
    assert SLIM in WIRING_KINDS and GRANULARITY[SLIM] == 2 and FULLY_COMPATIBLE[SLIM]
    assert all(GRANULARITY[k] == 1 for k in WIRING_KINDS if k != SLIM)
    for alias in ("slim", "SLIM", "slim_dual_link", "slim-dual", " Slim-Dual-Link "):
        assert wiring_kind(alias) == SLIM
    with pytest.raises(ConfigError, match="slim = slim-dual-link"):
        wiring_kind("thin")


@pytest.mark.parametrize("ocs_ports", [2, 3, 16, 136, 320, 512, 576, 1100])
def test_max_pods_closed_form(ocs_ports: int) -> None:
    assert psi(SLIM, circulators=True) == Fraction(2)
    assert max_pods(SLIM, ocs_ports, True) == ocs_ports // 2 == max_pods("dual-link", ocs_ports)
    assert max_pods(SLIM, ocs_ports, True) * 2 <= max_pods("cross", ocs_ports, True)
    for radix, tau in ((32, 2), (64, 1)):
        per_pod = (radix // 2) ** 2 // tau
        assert max_gpus(SLIM, ocs_ports, True, gpus_per_pod=per_pod) == lumoscore_max_gpus(
            radix, tau, ocs_ports, psi=2
        )
    assert ocs_per_group(SLIM, 16, True) == 4
    if ocs_ports >= 2:  # the limit itself fits, one more pod does not
        limit = ocs_ports // 2
        assert build_wiring(make_spec(limit, 4, ocs_ports), SLIM, True).max_pods == limit
        with pytest.raises(ConfigError, match=rf"at most {limit} pods"):
            build_wiring(make_spec(limit + 1, 4, ocs_ports), SLIM, True)


def test_without_circulators_is_a_one_line_config_error() -> None:
    calls = [
        lambda: build_wiring(make_spec(2, 4), "slim"),
        lambda: max_pods(SLIM, 16),
        lambda: psi(SLIM),
        lambda: ocs_per_group(SLIM, 8),
        lambda: max_gpus(SLIM, 16, gpus_per_pod=8),
    ]
    for call in calls:
        with pytest.raises(ConfigError) as exc:
            call()
        msg = str(exc.value)
        assert "\n" not in msg
        assert msg.startswith("circulators: slim-dual-link wiring must be deployed with circ")
        assert "allowed: circulators = true (--circulators)" in msg
        assert "uniform, dual-link, cross" in msg


def test_k_spine_must_be_a_multiple_of_four() -> None:
    for k in (2, 6, 10):
        with pytest.raises(ConfigError, match=rf"multiple of 4, got {k}"):
            build_wiring(make_spec(2, k), SLIM, circulators=True)


# ---- realization ------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(topologies(even=True), st.integers(1, 2))
def test_even_topologies_are_realized_exactly(topo: tuple, H: int) -> None:
    """Full compatibility at granularity 2: LTCR 1, constraints (1)-(4) and coupling hold."""
    C, K = topo
    w = slim(C.shape[0], K, groups=H)
    x = realize(C, w)
    assert verify_circuits(w, x, C) == []
    assert verify_configuration(w, x, np.broadcast_to(C, (H, *C.shape))) == []
    assert ltcr(w, x, C) == 1.0 == coarse_ltcr(C, w)
    assert len(x) == H * C.sum()


@settings(max_examples=40, deadline=None)
@given(topologies())
def test_odd_entries_lose_exactly_one_link_each(topo: tuple) -> None:
    """Rounding rule: the realization is coarse_part(C) = 2 (C // 2), LTCR = 1 - #odd / sum C."""
    C, K = topo
    w = slim(C.shape[0], K)
    x = realize(C, w)
    part = coarse_part(C, w)
    assert (part[0] == 2 * (C // 2)).all()
    assert verify_circuits(w, x, part) == []
    X = logical_topology(w, x)[0]
    assert (X == 2 * (C // 2)).all() and (X % 2 == 0).all()
    closed = 1 - np.count_nonzero(C % 2) / C.sum() if C.sum() else 1.0
    assert ltcr(w, x, C) == pytest.approx(closed) == coarse_ltcr(C, w)
    assert (ltcr(w, x, C) < 1) == bool((C % 2).any())


@settings(max_examples=20, deadline=None)
@given(topologies(max_pods=5, max_k=8))
def test_cp_sat_realizes_no_more_links_than_the_construction(topo: tuple) -> None:
    """Every coupled configuration has even pod-pair counts <= C, so sum 2 (C // 2) bounds
    it; the polynomial construction reaches the bound and CP-SAT proves nothing better."""
    C, K = topo
    w = slim(C.shape[0], K)
    poly = realize(C, w)
    r = realize_exact(C, w, time_limit_s=30)
    assert r.status == "optimal"
    assert r.realized_links == r.upper_bound_links == len(poly) // 2
    assert r.ltcr == pytest.approx(coarse_ltcr(C, w))
    assert verify_circuits(w, r.circuits, coarse_part(C, w)) == []
    assert r.target_links == C.sum() // 2


def test_cp_sat_ignores_fan_out_and_counts_in_pairs() -> None:
    """realize_exact does not need fan-out: excess demand just lowers the LTCR."""
    w = slim(3, 4)
    C = np.array([[0, 5, 3], [5, 0, 0], [3, 0, 0]])  # pod 0 asks for 8 > 4 links
    r = realize_exact(C, w, time_limit_s=30)
    X = r.logical[0]
    assert r.status == "optimal" and (X % 2 == 0).all() and (X <= C).all()
    assert X[0].sum() == 4 and verify_circuits(w, r.circuits) == []


def test_the_psi_1_map_is_not_compatible_even_in_pairs() -> None:
    """Why psi = 2 (docs/wiring.md, Limits): one transceiver per pod per OCS (the dual-link
    circulator map, coupled) realizes at most one coupled pair per OCS among 3 pods, so
    C = 2 (J - I) with 2 transceivers per pod loses a pair -- CP-SAT proves it."""
    spec = make_spec(3, 4, 3)
    d = build_wiring(spec, "dual-link", circulators=True)  # port 2k -> N(p), 2k+1 -> S(p)
    coupled_psi1 = Wiring(SLIM, True, spec, d.tx_ocs, d.tx_ocs_port, d.rx_ocs, d.rx_ocs_port)
    C = 2 * (np.ones((3, 3), dtype=np.int64) - np.eye(3, dtype=np.int64))
    r = realize_exact(C, coupled_psi1, time_limit_s=30)
    assert r.status == "optimal" and r.realized_links == 4 < r.target_links == 6
    # the psi = 2 map realizes it (on 6-port OCSes)
    assert verify_circuits(slim(3, 4), realize(C, slim(3, 4)), C) == []


def test_verifiers_reject_uncoupled_circuits() -> None:
    w = slim(2, 4)
    C = np.array([[0, 2], [2, 0]])
    x = realize(C, w)
    assert verify_circuits(w, x, C) == []
    # one lane's circuit alone (valid for every other constraint) is not coupled
    alone = x[(x[:, 3] == 0) | (x[:, 5] == 0)]
    assert len(alone) == 2
    msgs = verify_circuits(w, alone)
    assert len(msgs) == 2 and all("coupling, slim-dual-link wiring" in m for m in msgs)
    assert "has no twin circuit Tx pod 0 port 1 -> Rx pod 1 port 2" in msgs[0]
    toe_msgs = verify_configuration(w, alone)
    assert len(toe_msgs) == 2 and all("coupling" in m for m in toe_msgs)
    # put the twin back: valid again
    twin = x[(x[:, 3] == 1) | (x[:, 5] == 1)]
    assert verify_circuits(w, np.concatenate([alone, twin])) == []


def test_realize_rejects_what_it_should() -> None:
    w = slim(3, 4)
    with pytest.raises(Exception, match="pod 0 needs 6 links"):
        realize([[0, 4, 2], [4, 0, 0], [2, 0, 0]], w)
    with pytest.raises(ConfigError, match="cross, dual-link, slim-dual-link"):
        realize(np.zeros((3, 3)), build_wiring(make_spec(3, 4), "uniform"))


def test_summary_reports_granularity() -> None:
    s = slim(4, 8).summary()
    assert s["wiring"] == SLIM and s["link_granularity"] == 2 and s["psi"] == 2.0
    assert s["ocs_per_group"] == 2 and s["max_pods"] == 4
    assert build_wiring(make_spec(4, 8), "cross").summary()["link_granularity"] == 1
