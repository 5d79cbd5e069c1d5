"""Routing policies on Clos fabrics: ECMP uniformity and polarization, source routing on
leaf-wise permutations (vClos Lemma 5.1), balanced and probing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import Routes
from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.routing import balanced_ports, rank_within_groups
from lumoscore.hardware.sizing import clos_max_gpus

#: Chi-square uniformity tests reject at p < P_MIN (fixed seeds: deterministic outcomes).
P_MIN = 1e-3


def link_load(fab: ClosFabric, r: Routes) -> np.ndarray:
    return np.bincount(r.indices, minlength=fab.n_links)


def up_ports(fab: ClosFabric, r: Routes, boundary: int) -> np.ndarray:
    """Up-port chosen at ``boundary`` (1-based) by each flow crossing it."""
    lo, hi = fab.link_offsets()["up"][boundary - 1], fab.link_offsets()["down"][boundary - 1]
    x = r.indices[(r.indices >= lo) & (r.indices < hi)] - lo
    return x % (fab.uplinks if boundary == 1 else fab.k)


def cross_pod_flows(fab: ClosFabric, n: int, seed: int) -> tuple[np.ndarray, ...]:
    """Random flows whose ends sit in different pods (they climb to tier 3)."""
    rng = np.random.default_rng(seed)
    pod_gpus = fab.k * fab.gpus_per_leaf
    src = rng.integers(0, fab.gpus, 2 * n)
    dst = rng.integers(0, fab.gpus, 2 * n)
    keep = src // pod_gpus != dst // pod_gpus
    src, dst = src[keep][:n], dst[keep][:n]
    return src, dst, rng.integers(0, 2**40, src.size)


# --------------------------------------------------------------------------- ECMP
@pytest.mark.parametrize("seed", [0, 1])
def test_ecmp_spreads_uniformly(seed: int) -> None:
    fab = ClosFabric(1024, 400, 16, 3, seed=seed)  # k = 8, 128 leaves of 8 GPUs
    src, dst, key = cross_pod_flows(fab, 20000, seed)
    r = fab.routes(src, dst, key)
    for boundary in (1, 2):
        counts = np.bincount(up_ports(fab, r, boundary), minlength=fab.k)
        assert chisquare(counts).pvalue > P_MIN
    # Jointly: the k^2 up-port pairs (top switch columns) are uniform too.
    _, _, head_t, head_i = fab.link_endpoints()
    top = head_i[r.indices[head_t[r.indices] == 3]]
    assert chisquare(np.bincount(top, minlength=fab.k**2)).pvalue > P_MIN


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_polarized_hash_uses_one_port_per_tier2_switch(seed: int) -> None:
    """Same hash at both tiers: a flow that left its leaf on port p leaves its tier-2 switch
    on port p as well, so only k of the k^2 top switches ever carry a given pod's traffic."""
    fab = ClosFabric(1024, 400, 16, 3, seed=seed, polarized=True)
    src, dst, key = cross_pod_flows(fab, 3000, seed)
    r = fab.routes(src, dst, key)
    p1, p2 = up_ports(fab, r, 1), up_ports(fab, r, 2)
    assert np.array_equal(p1, p2)  # flows cross boundary 1 then 2 in route order


def test_polarization_visible_and_absent_by_default() -> None:
    kw = {"gpus": 1024, "port_gbps": 400, "radix": 16, "tiers": 3, "seed": 7}
    src, dst, key = cross_pod_flows(ClosFabric(**kw), 4000, 11)  # type: ignore[arg-type]
    out = {}
    for pol in (False, True):
        fab = ClosFabric(**kw, polarized=pol)  # type: ignore[arg-type]
        r = fab.routes(src, dst, key)
        load = link_load(fab, r)
        lo, hi = fab.link_offsets()["up"][1], fab.link_offsets()["down"][1]
        used_up2 = load[lo:hi]
        _, _, head_t, head_i = fab.link_endpoints()
        top = np.unique(head_i[r.indices[head_t[r.indices] == 3]])
        out[pol] = (top.size, int(load[2 * fab.gpus :].max()), int((used_up2 > 0).sum()))
    k = 8
    # Distinct top switches: all k^2 = 64 by default, only k = 8 polarized.
    assert out[False][0] == k * k and out[True][0] == k
    # Tier-2 up links in use: 7/8 of the 2 k^2 * k = 1024 are idle when polarized.
    assert out[True][2] <= 1024 // k < 1024 // 2 < out[False][2]
    # Hot links: the max link load (above the NICs) is several times higher.
    assert out[True][1] >= 3 * out[False][1]


# --------------------------------------------------------------------------- source routing
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_source_routing_leaf_wise_permutation_is_contention_free(data: st.DataObject) -> None:
    """vClos Lemma 5.1 on a 2-tier leaf-spine: leaf a sends only to leaf pi(a), any GPU
    bijection; every link carries at most one flow."""
    radix = data.draw(st.sampled_from([8, 12, 16]))
    k = radix // 2
    leaves = data.draw(st.integers(2, 2 * k))
    fab = ClosFabric(leaves * k, 400, radix, 2, gpus_per_server=1, routing="source")
    pi = np.array(data.draw(st.permutations(range(leaves))))
    src, dst = [], []
    for a in range(leaves):
        sigma = data.draw(st.permutations(range(k)))
        src += [a * k + i for i in range(k)]
        dst += [int(pi[a]) * k + s for s in sigma]
    src_a, dst_a = np.array(src), np.array(dst)
    keep = src_a != dst_a
    r = fab.routes(src_a[keep], dst_a[keep], np.arange(int(keep.sum())))
    assert link_load(fab, r).max() <= 1


@settings(max_examples=30, deadline=None)
@given(
    tiers=st.sampled_from([2, 3, 4]),
    shift=st.integers(1, 10**6),
    blocks=st.integers(1, 4),
    gps=st.sampled_from([1, 2, 4]),
)
def test_source_routing_shift_permutations_contention_free(
    tiers: int, shift: int, blocks: int, gps: int
) -> None:
    """Ring/pairwise steps g -> g + s (mod G) on 2-4 tiers: at most one flow per link when the
    cluster is whole top-level blocks."""
    radix = 8
    k = radix // 2
    blocks = min(blocks, 2 * k)
    gpus = blocks * k ** (tiers - 2) * k
    fab = ClosFabric(gpus, 400, radix, tiers, gpus_per_server=gps, routing="source")
    g = np.arange(gpus)
    dst = (g + shift) % gpus
    keep = g // gps != dst // gps
    r = fab.routes(g[keep], dst[keep], np.arange(int(keep.sum())))
    assert link_load(fab, r).max() <= 1


@pytest.mark.parametrize(("tiers", "gpus"), [(2, 128), (3, 1024), (4, 512)])
def test_ring_over_leaves_source_free_ecmp_collides(tiers: int, gpus: int) -> None:
    """A ring over leaf-contiguous ranks with one channel per leaf port (rank g sends to the
    same port of the next leaf): source routing loads every link once, ECMP collides."""
    radix, gps = (16, 8) if tiers < 4 else (8, 2)
    kw = {"port_gbps": 400, "radix": radix, "tiers": tiers, "gpus_per_server": gps}
    loads = {}
    for routing in ("source", "ecmp"):
        fab = ClosFabric(gpus, routing=routing, **kw)  # type: ignore[arg-type]
        g = np.arange(gpus)
        dst = (g + fab.gpus_per_leaf) % gpus
        r = fab.routes(g, dst, np.zeros(gpus, np.int64))
        loads[routing] = link_load(fab, r).max()
    assert loads["source"] == 1
    assert loads["ecmp"] >= 3


def test_source_routing_oversubscribed_shares_uplinks_evenly() -> None:
    fab = ClosFabric(
        clos_max_gpus(16, 2, 3.0),
        400,
        16,
        2,
        gpus_per_server=4,
        oversubscription=3.0,
        routing="source",
    )  # u = 4, d = 12
    g = np.arange(fab.gpus)
    dst = (g + fab.gpus_per_leaf) % fab.gpus
    r = fab.routes(g, dst, g)
    lo, hi = fab.link_offsets()["up"][0], fab.link_offsets()["down"][0]
    assert np.all(link_load(fab, r)[lo:hi] == fab.downlinks // fab.uplinks)


# --------------------------------------------------------------------------- balanced
def test_rank_within_groups_matches_loop() -> None:
    rng = np.random.default_rng(3)
    g = rng.integers(0, 9, 500)
    seen: dict[int, int] = {}
    want = []
    for x in g.tolist():
        want.append(seen.get(x, 0))
        seen[x] = seen.get(x, 0) + 1
    assert rank_within_groups(g).tolist() == want
    assert balanced_ports(g, np.ones(g.size, bool), 4).tolist() == [w % 4 for w in want]


@settings(max_examples=20, deadline=None)
@given(tiers=st.sampled_from([2, 3, 4]), seed=st.integers(0, 10**6), n=st.integers(1, 400))
def test_balanced_up_links_differ_by_at_most_one(tiers: int, seed: int, n: int) -> None:
    fab = ClosFabric(clos_max_gpus(8, tiers), 400, 8, tiers, gpus_per_server=2, routing="balanced")
    rng = np.random.default_rng(seed)
    src = rng.integers(0, fab.gpus, 2 * n)
    dst = rng.integers(0, fab.gpus, 2 * n)
    keep = src // 2 != dst // 2
    r = fab.routes(src[keep], dst[keep], np.arange(int(keep.sum())))
    load = link_load(fab, r)
    offs = fab.link_offsets()
    for s in range(tiers - 1):
        ports = fab.uplinks if s == 0 else fab.k
        up = load[offs["up"][s] : offs["down"][s]].reshape(-1, ports)
        assert np.all(up.max(axis=1) - up.min(axis=1) <= 1)


def test_balanced_beats_ecmp_on_max_uplink_load() -> None:
    fab_b = ClosFabric(1024, 400, 16, 3, routing="balanced")
    fab_e = ClosFabric(1024, 400, 16, 3, routing="ecmp")
    src, dst, key = cross_pod_flows(fab_b, 8000, 2)
    lo, hi = fab_b.link_offsets()["up"][0], fab_b.link_offsets()["down"][0]
    lb = link_load(fab_b, fab_b.routes(src, dst, key))[lo:hi].max()
    le = link_load(fab_e, fab_e.routes(src, dst, key))[lo:hi].max()
    assert lb < le


# --------------------------------------------------------------------------- probing
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), busy=st.integers(0, 5))
def test_probing_with_one_candidate_is_ecmp(seed: int, busy: int) -> None:
    """One candidate per flow: the ECMP path, whatever the load."""
    fab_p = ClosFabric(1024, 400, 16, 3, routing="probing", probe_candidates=1, seed=seed)
    fab_e = ClosFabric(1024, 400, 16, 3, routing="ecmp", seed=seed)
    src, dst, key = cross_pod_flows(fab_p, 300, seed % 7 + 1)
    load = np.random.default_rng(seed).integers(0, busy + 1, fab_p.n_links).astype(float)
    assert np.array_equal(
        fab_p.routes(src, dst, key, link_load=load).indices, fab_e.routes(src, dst, key).indices
    )


def test_probing_never_scores_below_the_ecmp_path_and_does_not_mutate_input() -> None:
    fab = ClosFabric(32, 400, 8, 2, gpus_per_server=1, routing="probing", probe_candidates=8)
    ecmp = ClosFabric(32, 400, 8, 2, gpus_per_server=1, routing="ecmp")
    lo = fab.link_offsets()["up"][0]
    for port in range(4):
        load = np.zeros(fab.n_links)
        load[lo + port] = 5.0  # one of leaf 0's up-ports is busy
        before = load.copy()
        src, dst, key = np.array([0]), np.array([20]), np.array([9])
        path = fab.routes(src, dst, key, link_load=load).links_of(0)
        e_path = ecmp.routes(src, dst, key).links_of(0)
        score = (fab.capacity_bps[path] / np.maximum(load[path], 1)).min()
        e_score = (fab.capacity_bps[e_path] / np.maximum(load[e_path], 1)).min()
        assert score >= e_score
        assert np.array_equal(load, before)
    assert fab.describe()["probe_candidates"] == 8


def test_probing_candidates_are_validated() -> None:
    for bad in (0.5, float("nan"), "2"):
        with pytest.raises(ConfigError, match="probe_candidates"):
            ClosFabric(32, 400, 8, 2, gpus_per_server=1, routing="probing", probe_candidates=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="probe_hash 'x' unknown; allowed: murmur, sum"):
        ClosFabric(32, 400, 8, 2, gpus_per_server=1, routing="probing", probe_hash="x")


def test_sum_hash_spreads_a_rail_ring_over_distinct_uplinks() -> None:
    """The research simulator's port routing, ``(src + dst) mod P``: the ring steps of the
    eight rails between two servers on different leaves (16 up-ports each) take eight
    distinct up-ports, ``2 r mod 16``."""
    fab = ClosFabric(64, 400, 32, 2, gpus_per_server=8, routing="probing", probe_candidates=1,
                     probe_hash="sum")  # fmt: skip
    src = np.arange(8)  # server 0 (leaf 0) -> server 2 (leaf 1), rail by rail
    dst = 16 + np.arange(8)
    r = fab.routes(src, dst, np.zeros(8, np.int64))
    up = [r.links_of(i)[1] for i in range(8)]
    assert len(set(up)) == 8


def test_probing_beats_ecmp_on_max_link_load() -> None:
    fab_p = ClosFabric(1024, 400, 16, 3, routing="probing", probe_candidates=4)
    fab_e = ClosFabric(1024, 400, 16, 3, routing="ecmp")
    src, dst, key = cross_pod_flows(fab_p, 6000, 4)
    core = slice(2 * fab_p.gpus, None)
    lp = link_load(fab_p, fab_p.routes(src, dst, key))[core].max()
    le = link_load(fab_e, fab_e.routes(src, dst, key))[core].max()
    assert lp < le
