"""Port-level wiring maps: port/OCS-port bijections, the papers' pairing rules, sizes, exports."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from lumoscore.errors import ConfigError
from lumoscore.hardware.sizing import lumoscore_max_gpus
from lumoscore.topology import ClusterSpec, build_wiring, max_gpus, max_pods, read_wiring_map
from lumoscore.topology.wiring import (
    CIRCULATORS_ONLY,
    RECORD_COLUMNS,
    WIRING_KINDS,
    ocs_per_group,
    wiring_kind,
)

VARIANTS = [(k, c) for k in WIRING_KINDS for c in (False, True) if c or k not in CIRCULATORS_ONLY]


def spec_for(pods: int = 6, k_spine: int = 8, ocs_ports: int = 16, k_leaf: int = 4) -> ClusterSpec:
    return ClusterSpec(
        pods=pods, k_leaf=k_leaf, k_spine=k_spine, tau=2, gpus_per_server=2, ocs_ports=ocs_ports
    )


@pytest.mark.parametrize(("kind", "circ"), VARIANTS)
@pytest.mark.parametrize("pods", [1, 2, 5, 8])
def test_every_port_lands_on_one_ocs_port_and_no_ocs_port_is_shared(
    kind: str, circ: bool, pods: int
) -> None:
    w = build_wiring(spec_for(pods=pods), kind, circ)
    H, P, K = w.groups, w.pods, w.ports
    assert w.tx_ocs.shape == w.rx_ocs.shape == (H, P, K)
    for arr in (w.tx_ocs, w.rx_ocs):
        assert arr.min() >= 0 and arr.max() < w.ocs_per_group
    for arr in (w.tx_ocs_port, w.rx_ocs_port):
        assert arr.min() >= 0 and arr.max() < w.port_slots
    g = np.broadcast_to(np.arange(H)[:, None, None], (H, P, K))
    tx = np.stack([g, w.tx_ocs, w.tx_half_port()], -1).reshape(-1, 3)
    rx = np.stack([g, w.rx_ocs, w.rx_half_port()], -1).reshape(-1, 3)
    if circ:
        # one fibre per port: Tx and Rx share the half-port, and no two ports share one
        assert (tx == rx).all()
        assert np.unique(tx, axis=0).shape[0] == H * P * K
    else:
        # Tx on N, Rx on S half-ports: all 2 H P K fibre ends distinct
        assert (w.tx_side() == 0).all() and (w.rx_side() == 1).all()
        assert np.unique(np.concatenate([tx, rx]), axis=0).shape[0] == 2 * H * P * K
    # every OCS of the group carries the same number of fibres: psi * P OCS ports
    fibres = 1 if circ else 2
    ends = tx[:, 1] if circ else np.concatenate([tx[:, 1], rx[:, 1]])
    per_ocs = np.bincount(ends, minlength=w.ocs_per_group)
    assert (per_ocs == fibres * H * P * K // w.ocs_per_group).all()
    assert w.ocs_per_group * w.ocs_ports_used >= P * K * fibres // 2


def test_cross_swaps_rx_of_ports_2k_and_2k_plus_1() -> None:
    w = build_wiring(spec_for(pods=7, k_spine=12, ocs_ports=7), "cross")
    u = build_wiring(spec_for(pods=7, k_spine=12, ocs_ports=7), "uniform")
    k = np.arange(w.ports // 2)
    # Cross-Wiring §3.2.2 / LumosCore §3.1, literally:
    # "the ingress of the 2k-th port and the egress of the (2k+1)-th port -> (2k+1)-th OCS"
    assert (w.rx_ocs[..., 2 * k] == 2 * k + 1).all()
    assert (w.tx_ocs[..., 2 * k + 1] == 2 * k + 1).all()
    # "the ingress of the (2k+1)-th port and the egress of the 2k-th port -> 2k-th OCS"
    assert (w.rx_ocs[..., 2 * k + 1] == 2 * k).all()
    assert (w.tx_ocs[..., 2 * k] == 2 * k).all()
    # uniform: both fibres of port k on OCS k; cross = uniform with the Rx of 2k, 2k+1 swapped
    assert (u.tx_ocs == u.rx_ocs).all() and (u.tx_ocs[0, 0] == np.arange(12)).all()
    assert (w.tx_ocs == u.tx_ocs).all()
    assert (w.rx_ocs[..., 0::2] == u.rx_ocs[..., 1::2]).all()
    assert (w.rx_ocs[..., 1::2] == u.rx_ocs[..., 0::2]).all()


def test_cross_ocs_pairs_are_mirrors() -> None:
    """OCS 2k connects the Tx of exactly those ports whose Rx OCS 2k+1 connects, and vice versa."""
    w = build_wiring(spec_for(pods=5, k_spine=8), "cross")
    for o in range(0, w.ocs_per_group, 2):
        tx_even = {(p, k) for p, k in np.argwhere(w.tx_ocs[0] == o).tolist()}
        rx_odd = {(p, k) for p, k in np.argwhere(w.rx_ocs[0] == o + 1).tolist()}
        rx_even = {(p, k) for p, k in np.argwhere(w.rx_ocs[0] == o).tolist()}
        tx_odd = {(p, k) for p, k in np.argwhere(w.tx_ocs[0] == o + 1).tolist()}
        assert tx_even == rx_odd and rx_even == tx_odd and len(tx_even) == w.pods


def test_dual_link_pairs_two_ports_on_one_ocs() -> None:
    w = build_wiring(spec_for(pods=4, k_spine=8, ocs_ports=8), "dual-link")
    k = np.arange(4)
    p = np.arange(4)[:, None]
    for port in (2 * k, 2 * k + 1):
        assert (w.tx_ocs[..., port] == k).all() and (w.rx_ocs[..., port] == k).all()
    assert (w.tx_ocs_port[0][:, 0::2] == 2 * p).all()
    assert (w.tx_ocs_port[0][:, 1::2] == 2 * p + 1).all()
    assert (w.tx_ocs_port == w.rx_ocs_port).all()
    assert w.ocs_per_group == 4 and w.ocs_ports_used == 8


def test_circulator_maps_join_even_ports_to_odd_ports() -> None:
    for kind in ("cross", "dual-link"):
        w = build_wiring(spec_for(pods=5, k_spine=8, ocs_ports=5), kind, circulators=True)
        assert (w.tx_side()[..., 0::2] == 0).all() and (w.tx_side()[..., 1::2] == 1).all()
        assert w.ocs_per_group == 4
    u = build_wiring(spec_for(pods=5, k_spine=8, ocs_ports=5), "uniform", circulators=True)
    assert (u.tx_side()[0, :, 0] == np.arange(5) % 2).all()  # pods alternate N / S
    assert u.ocs_per_group == 8 and u.ocs_ports_used == 3


@pytest.mark.parametrize("ocs_ports", [2, 16, 136, 320, 512, 576, 1100])
def test_sizes_match_cross_wiring_table3(ocs_ports: int) -> None:
    cross, uniform, dual = (max_pods(k, ocs_ports) for k in ("cross", "uniform", "dual-link"))
    assert cross == uniform == ocs_ports == 2 * dual
    # circulators halve the OCS ports a transceiver needs
    assert max_pods("uniform", ocs_ports, True) == 2 * ocs_ports
    assert max_pods("dual-link", ocs_ports, True) == ocs_ports == 2 * dual
    # a fully compatible wiring keeps K_ocs pods with circulators (see docs/wiring.md)
    assert max_pods("cross", ocs_ports, True) == ocs_ports
    # GPU count: the closed form of hardware.sizing with psi = 1 (cross) and 2 (dual-link)
    for radix, tau in ((32, 2), (64, 1), (128, 2)):
        per_pod = (radix // 2) ** 2 // tau
        assert max_gpus("cross", ocs_ports, gpus_per_pod=per_pod) == lumoscore_max_gpus(
            radix, tau, ocs_ports, psi=1
        )
        assert max_gpus("dual-link", ocs_ports, gpus_per_pod=per_pod) == lumoscore_max_gpus(
            radix, tau, ocs_ports, psi=2
        )


def test_wiring_object_reports_its_limits() -> None:
    spec = spec_for(pods=6, k_spine=8, ocs_ports=16)
    for kind, circ in VARIANTS:
        w = build_wiring(spec, kind, circ)
        assert w.max_pods == max_pods(kind, 16, circ)
        assert w.max_gpus == w.max_pods * spec.gpus_per_pod
        assert w.fully_compatible == (kind != "uniform")
        assert w.ocs_per_group == ocs_per_group(kind, 8, circ)
        assert w.summary()["ocs_count"] == w.groups * w.ocs_per_group


def test_validation_errors_are_clear() -> None:
    with pytest.raises(ConfigError, match=r"pods: 10 pods do not fit dual-link .* at most 8"):
        build_wiring(spec_for(pods=10, ocs_ports=16), "dual-link")
    build_wiring(spec_for(pods=10, ocs_ports=16), "dual-link", circulators=True)
    with pytest.raises(ConfigError, match="unknown kind 'mesh'; allowed: uniform, dual-link"):
        build_wiring(spec_for(), "mesh")
    odd = ClusterSpec.model_construct(
        pods=2, k_leaf=2, k_spine=3, tau=1, gpus_per_server=1, ocs_ports=4, port_gbps=400.0
    )
    with pytest.raises(ConfigError, match="k_spine must be even, got 3"):
        build_wiring(odd, "cross")
    assert build_wiring(odd, "uniform").ports == 3
    assert wiring_kind("Interleaved") == "cross"


@pytest.mark.parametrize(("kind", "circ"), VARIANTS)
def test_json_and_csv_round_trip(kind: str, circ: bool, tmp_path: Path) -> None:
    w = build_wiring(spec_for(pods=3, k_spine=4), kind, circ)
    records = w.to_records()
    assert len(records) == w.groups * w.pods * w.ports
    assert all(tuple(r) == RECORD_COLUMNS for r in records)
    r = records[w.pods * w.ports + w.ports + 1]  # group 1, pod 1, port 1
    assert (r["group"], r["pod"], r["port"]) == (1, 1, 1)
    assert r["tx_ocs"] == w.tx_ocs[1, 1, 1] and r["rx_ocs_port"] == w.rx_ocs_port[1, 1, 1]
    w.to_json(tmp_path / "map.json")
    w.to_csv(tmp_path / "map.csv")
    assert json.loads((tmp_path / "map.json").read_text()) == records
    assert (read_wiring_map(tmp_path / "map.json") == w.to_array()).all()
    assert (read_wiring_map(tmp_path / "map.csv") == w.to_array()).all()
    header = (tmp_path / "map.csv").read_text().splitlines()[0]
    assert header == ",".join(RECORD_COLUMNS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.csv", "map.json"]  # no temp files


def test_read_wiring_map_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match="CSV header"):
        read_wiring_map(bad)
    with pytest.raises(ConfigError, match="no such file"):
        read_wiring_map(tmp_path / "missing.json")


@pytest.mark.parametrize(("kind", "circ"), VARIANTS)
def test_networkx_graph(kind: str, circ: bool) -> None:
    w = build_wiring(spec_for(pods=3, k_spine=4), kind, circ)
    g = w.to_networkx()
    spine = [n for n, d in g.nodes(data=True) if d["type"] == "spine_port"]
    half = [n for n, d in g.nodes(data=True) if d["type"] == "ocs_half_port"]
    assert len(spine) == w.groups * w.pods * w.ports
    assert len(half) == len(spine) * (1 if circ else 2)
    assert all(g.out_degree(n) == 1 and g.in_degree(n) == 1 for n in spine)
    assert nx.get_edge_attributes(g, "fiber")[(spine[0], next(iter(g.successors(spine[0]))))] == (
        "tx"
    )
    for n in half:
        assert g.in_degree(n) + g.out_degree(n) == (2 if circ else 1)
        if not circ:
            side = g.nodes[n]["side"]
            assert (g.in_degree(n) == 1) == (side == "N")  # Tx enters N, Rx leaves S
