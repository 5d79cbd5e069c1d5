"""Folded Clos fabrics: structure against fat-tree formulas, routes against the graph."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.hashing import flow_hash, flow_key_words, murmur3_32
from lumoscore.fabric.routing import balanced_ports, ecmp_ports
from lumoscore.hardware.sizing import clos_max_gpus

# (radix, tiers, gpus_per_server): small fabrics whose full build is cheap to inspect.
SMALL = [(8, 2, 2), (8, 3, 2), (8, 4, 2), (12, 3, 2), (16, 2, 8)]


def full(radix: int, tiers: int, gps: int, **kw: object) -> ClosFabric:
    """The full non-blocking build."""
    return ClosFabric(clos_max_gpus(radix, tiers), 400, radix, tiers, gpus_per_server=gps, **kw)  # type: ignore[arg-type]


def random_inter_server(fab: ClosFabric, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, fab.gpus, 3 * n)
    dst = rng.integers(0, fab.gpus, 3 * n)
    gps = fab.spec.gpus_per_server
    keep = src // gps != dst // gps
    return src[keep][:n], dst[keep][:n]


@pytest.mark.parametrize(("radix", "tiers", "gps"), SMALL)
def test_full_build_matches_fat_tree_formulas(radix: int, tiers: int, gps: int) -> None:
    fab = full(radix, tiers, gps)
    k = radix // 2
    assert fab.gpus == clos_max_gpus(radix, tiers) == 2 * k**tiers
    d = fab.describe()
    # Fat tree: 2 k^(n-1) switches on every tier below the top, k^(n-1) at the top.
    assert d["switches_per_tier"] == [2 * k ** (tiers - 1)] * (tiers - 1) + [k ** (tiers - 1)]
    # 2 k^n cables between every pair of adjacent tiers, two directed links each.
    assert d["links_per_boundary"] == [4 * k**tiers] * (tiers - 1)
    assert fab.n_links == 2 * fab.gpus + (tiers - 1) * 4 * k**tiers
    assert np.all(fab.capacity_bps == 400e9)
    g = fab.to_networkx()
    # Every switch of the full build uses all its ports, in both directions.
    for node in g:
        if node[0] == "sw":
            assert g.out_degree(node) == radix and g.in_degree(node) == radix
        else:
            assert g.out_degree(node) == 1 and g.in_degree(node) == 1
    assert sorted(e[2] for e in g.edges(data="link")) == list(range(fab.n_links))
    assert nx.is_strongly_connected(g)


@pytest.mark.parametrize("over", [3.0, 7.0])
def test_oversubscribed_leaves(over: float) -> None:
    radix, tiers = 16, 3
    u = math.ceil(radix / (over + 1))
    fab = ClosFabric(
        clos_max_gpus(radix, tiers, over),
        400,
        radix,
        tiers,
        gpus_per_server=2,
        oversubscription=over,
    )
    k = radix // 2
    assert fab.uplinks == u and fab.downlinks == radix - u
    assert fab.gpus == clos_max_gpus(radix, tiers, over) == 2 * k ** (tiers - 1) * (radix - u)
    g = fab.to_networkx()
    leaves = [n for n in g if n[0] == "sw" and n[1] == 1]
    assert len(leaves) == 2 * k ** (tiers - 1)
    for leaf in leaves:
        ups = [v for v in g.successors(leaf) if v[0] == "sw"]
        assert len(ups) == u
        assert g.out_degree(leaf) == radix
    d = fab.describe()
    assert d["switches_per_tier"] == [2 * k**2, 2 * u * k, u * k]
    assert d["links_per_boundary"] == [2 * 2 * k**2 * u] * 2


def test_partial_build_uses_first_blocks() -> None:
    fab = ClosFabric(48, 400, 8, 3, gpus_per_server=2)  # 12 of 32 leaves, 3 of 8 pods
    d = fab.describe()
    assert d["leaves"] == 12
    assert d["switches_per_tier"] == [12, 3 * 4, 16]
    g = fab.to_networkx()
    assert nx.is_strongly_connected(g)
    assert max(dict(g.out_degree()).values()) <= 8


def check_routes(fab: ClosFabric, src: np.ndarray, dst: np.ndarray, **kw: object) -> np.ndarray:
    """Every route is a walk in the graph from src's NIC to dst's NIC, as short as possible;
    returns the route lengths."""
    g = fab.to_networkx()
    tail = np.empty(fab.n_links, dtype=object)
    head = np.empty(fab.n_links, dtype=object)
    for u, v, link in g.edges(data="link"):
        tail[link], head[link] = u, v
    r = fab.routes(src, dst, np.arange(src.size), **kw)  # type: ignore[arg-type]
    lengths = np.diff(r.indptr)
    dist: dict[int, dict[object, int]] = {}
    for f in range(r.n_flows):
        links = r.links_of(f).tolist()
        assert links[0] == src[f] and links[-1] == fab.gpus + dst[f]
        assert tail[links[0]] == ("gpu", src[f]) and head[links[-1]] == ("gpu", dst[f])
        nodes = [tail[links[0]]] + [head[x] for x in links]
        for a, b in itertools.pairwise(links):
            assert head[a] == tail[b]
        assert len(set(nodes)) == len(nodes)  # a simple path
        s = int(src[f])
        if s not in dist:
            dist[s] = nx.single_source_shortest_path_length(g, ("gpu", s))
        assert len(links) == dist[s][("gpu", int(dst[f]))]  # climbs only as high as needed
    return lengths


@pytest.mark.parametrize(("radix", "tiers", "gps"), SMALL[:4])
@pytest.mark.parametrize("routing", ClosFabric.routings)
def test_routes_are_shortest_valid_paths(radix: int, tiers: int, gps: int, routing: str) -> None:
    fab = full(radix, tiers, gps, routing=routing, seed=3)
    src, dst = random_inter_server(fab, 300, seed=radix + tiers)
    if routing == "ideal":
        r = fab.routes(src, dst, np.arange(src.size))
        assert np.all(np.diff(r.indptr) == 2)
        assert r.indices.reshape(-1, 2).tolist() == np.c_[src, fab.gpus + dst].tolist()
        assert fab.isolating
        return
    lengths = check_routes(fab, src, dst)
    assert set(lengths.tolist()) <= {2, 4, 6, 8}
    assert lengths.max() == 2 * tiers  # random traffic reaches the top
    assert np.array_equal(lengths, 2 * fab.heights(src, dst))


def test_route_lengths_by_height() -> None:
    fab = ClosFabric(128, 400, 8, 4, gpus_per_server=2)  # k=4, 32 leaves of 4 GPUs
    src = np.array([0, 0, 0, 0])
    dst = np.array([2, 4, 16, 64])  # same leaf, same pod, same tier-3 block, across the top
    assert np.diff(fab.routes(src, dst, np.zeros(4, np.int64)).indptr).tolist() == [2, 4, 6, 8]


def test_probing_routes_valid_with_load() -> None:
    fab = full(8, 3, 2, routing="probing")
    src, dst = random_inter_server(fab, 200, seed=1)
    load = np.random.default_rng(0).integers(0, 5, fab.n_links).astype(float)
    check_routes(fab, src, dst, link_load=load)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tiers=st.sampled_from([2, 3, 4]))
def test_rerouted_matches_routes_against_the_same_load(seed: int, tiers: int) -> None:
    """The simulator's per-round call (one compiled router call on the plan's arrays) gives
    exactly the routes of ``routes`` against the same load (as the base class's
    ``live_routes`` path does), and None when they are the current ones; the load comes back
    unchanged."""
    from lumoscore.fabric.base import Fabric

    rng = np.random.default_rng(seed)
    fab = full(8, tiers, 2, routing="probing")
    src, dst = random_inter_server(fab, int(rng.integers(1, 40)), seed=seed % 1000)
    keys = rng.integers(0, 1000, src.size).astype(np.int64)
    weight = rng.integers(1, 4, src.size).astype(float)
    load = rng.integers(0, 5, fab.n_links).astype(float)
    before = load.copy()
    cur = fab.routes(src, dst, keys, link_load=np.zeros(fab.n_links), flow_weight=weight)
    want = fab.routes(src, dst, keys, link_load=load.copy(), flow_weight=weight)
    kw = {"job_id": 0, "link_load": load, "flow_weight": weight}
    got = fab.rerouted(src, dst, keys, cur.indptr, cur.indices, **kw)
    same = np.array_equal(want.indptr, cur.indptr) and np.array_equal(want.indices, cur.indices)
    assert (got is None) == same
    if got is not None:
        assert got.indptr.tolist() == want.indptr.tolist()
        assert got.indices.tolist() == want.indices.tolist()
    # the compiled path and the base class's (live_routes) give the same routes
    for ptr, idx in (
        fab._load_aware_routes(src, dst, keys, 0, load, weight),
        Fabric._load_aware_routes(fab, src, dst, keys, 0, load, weight),
    ):
        assert ptr.tolist() == want.indptr.tolist() and idx.tolist() == want.indices.tolist()
    assert np.array_equal(load, before)
    assert fab.rerouted(src, dst, keys, want.indptr, want.indices, **kw) is None


@pytest.mark.parametrize("tiers", [2, 3])
@pytest.mark.parametrize("routing", ["ecmp", "source"])
def test_rail_optimized(tiers: int, routing: str) -> None:
    radix, gps = 16, 4  # k = 8 leaves per pod = 2 rail groups of 4 rails
    fab = ClosFabric(
        clos_max_gpus(radix, tiers),
        400,
        radix,
        tiers,
        gpus_per_server=gps,
        rail_optimized=True,
        routing=routing,
    )
    assert fab.gpus == clos_max_gpus(radix, tiers)
    g = np.arange(fab.gpus)
    leaf, port = fab.attachment(g)
    # Every leaf holds GPU i (one rail) of `d` distinct servers, one per port.
    d = fab.downlinks
    assert np.all(np.bincount(leaf) == d)
    for lf in range(fab.leaves):
        on = g[leaf == lf]
        assert len(set((on % gps).tolist())) == 1
        assert len(set((on // gps).tolist())) == d
        assert sorted(port[leaf == lf].tolist()) == list(range(d))
    # Rail groups: leaves of one group share the same servers; spec "leaf" = rail group.
    assert fab.spec.k_leaf == d * gps
    src, dst = random_inter_server(fab, 250, seed=5)
    lengths = check_routes(fab, src, dst)
    same_rail_group = (src % gps == dst % gps) & (src // (d * gps) == dst // (d * gps))
    assert np.all((lengths == 2) == same_rail_group)


def test_source_route_example_and_switch_columns() -> None:
    fab = ClosFabric(128, 400, 8, 3, gpus_per_server=2, routing="source")
    # GPU 5 = leaf 1, port 1 -> GPU 127 (leaf 31, another pod): tier-1 port 1, tier-2 port
    # (leaf 1 mod 4) = 1, so top column 1 * 4 + 1 = 5.
    links = fab.routes(np.array([5]), np.array([127]), np.array([0])).links_of(0)
    _, _, ht, hi = fab.link_endpoints()
    top = [int(hi[x]) for x in links if ht[x] == 3]
    assert top == [5]


@settings(max_examples=25, deadline=None)
@given(
    tiers=st.sampled_from([2, 3, 4]),
    leaves=st.integers(1, 32),
    routing=st.sampled_from(["ecmp", "balanced", "source", "probing"]),
    seed=st.integers(0, 1000),
)
def test_any_partial_build_routes_within_links(
    tiers: int, leaves: int, routing: str, seed: int
) -> None:
    radix, gps = 8, 2
    leaves = min(leaves, 2 * 4 ** (tiers - 1))
    fab = ClosFabric(leaves * 4, 400, radix, tiers, gpus_per_server=gps, routing=routing, seed=seed)
    if fab.gpus <= gps:
        return
    src, dst = random_inter_server(fab, 100, seed)
    r = fab.routes(src, dst, np.arange(src.size))
    assert r.indices.min() >= 0 and r.indices.max() < fab.n_links
    # Up and down halves of each route mirror each other: the same cables, both directions.
    offs = fab.link_offsets()
    for f in range(min(r.n_flows, 30)):
        links = r.links_of(f)[1:-1]
        half = links.size // 2
        up, down = links[:half], links[half:][::-1]
        for s in range(half):
            n_up = offs["down"][s] - offs["up"][s]
            assert 0 <= up[s] - offs["up"][s] < n_up
            assert 0 <= down[s] - offs["down"][s] < n_up
            ports = fab.uplinks if s == 0 else fab.k
            assert (up[s] - offs["up"][s]) % ports == (down[s] - offs["down"][s]) % ports


def test_errors() -> None:
    with pytest.raises(ConfigError, match="tiers"):
        ClosFabric(64, 400, 8, 5)
    with pytest.raises(ConfigError, match="radix"):
        ClosFabric(64, 400, 7, 3)
    with pytest.raises(ConfigError, match="routing"):
        ClosFabric(64, 400, 8, 3, gpus_per_server=2, routing="spray")
    with pytest.raises(ConfigError, match="exceeds"):
        ClosFabric(256, 400, 8, 3, gpus_per_server=2)
    with pytest.raises(ConfigError, match="multiple"):
        ClosFabric(66, 400, 8, 3, gpus_per_server=2)
    with pytest.raises(ConfigError, match="rail"):
        ClosFabric(64, 400, 8, 3, gpus_per_server=8, rail_optimized=True)
    with pytest.raises(ConfigError, match="port_gbps"):
        ClosFabric(64, 0, 8, 3, gpus_per_server=2)
    fab = ClosFabric(64, 400, 8, 3, gpus_per_server=2, routing="probing")
    with pytest.raises(PreconditionError, match="intra-server"):
        fab.routes(np.array([0]), np.array([1]), np.array([0]))
    with pytest.raises(PreconditionError, match=r"GPU ids must be in \[0, 64\), got 0\.\.64"):
        fab.routes(np.array([0, 9]), np.array([64, 3]), np.array([0, 1]))
    with pytest.raises(PreconditionError, match="link_load"):
        fab.routes(np.array([0]), np.array([9]), np.array([0]), link_load=np.zeros(3))
    with pytest.raises(PreconditionError, match="flow_key"):
        fab.routes(np.array([0]), np.array([9]), np.array([0, 1]))


def test_empty_call() -> None:
    fab = ClosFabric(64, 400, 8, 3, gpus_per_server=2)
    r = fab.routes(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert r.n_flows == 0 and r.indices.size == 0


def tier_by_tier_routes(
    fab: ClosFabric,
    src: np.ndarray,
    dst: np.ndarray,
    key: np.ndarray,
    load: np.ndarray | None,
    *,
    seed_shift: int = 0,
    sum_candidate: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Reference router: whole-call NumPy passes, one tier at a time, with the policies of
    :mod:`lumoscore.fabric.routing` and the row hash of :mod:`lumoscore.fabric.hashing`
    (``probing``: see :func:`probing_reference`; ``seed_shift`` moves every tier seed;
    ``sum_candidate`` ``c`` takes port ``(c + src + dst) mod P`` at every tier instead)."""
    if fab.routing == "probing" and fab.probe_hash == "least-loaded":
        return least_loaded_reference(fab, src, dst, key, load)
    if fab.routing == "probing":
        return probing_reference(fab, src, dst, key, load)
    n, F, G = fab.tiers, src.size, fab.gpus
    a, port = fab.attachment(src)
    b, _ = fab.attachment(dst)
    h = fab.heights(src, dst)
    words = flow_key_words(src, dst, key)
    hashes = [murmur3_32(words, (s + seed_shift) & 0xFFFFFFFF) for s in fab.tier_seeds]
    offs = fab.link_offsets()
    mat = np.empty((F, 2 * n), dtype=np.int64)
    mat[:, 0] = src
    rows = np.arange(F)
    col = np.zeros(F, dtype=np.int64)
    for s in range(1, n):
        active = h > s
        P = fab.uplinks if s == 1 else fab.k
        w = 1 if s == 1 else fab.uplinks * fab.k ** (s - 2)
        span = fab.k ** (s - 1)
        sw_src, sw_dst = (a // span) * w + col, (b // span) * w + col
        up_base = offs["up"][s - 1] + sw_src * P
        down_base = offs["down"][s - 1] + sw_dst * P
        if sum_candidate is not None:
            p = (sum_candidate + src + dst) % P
        elif fab.routing in ("ecmp", "probing"):
            p = ecmp_ports(hashes[s - 1], P)
        elif fab.routing == "balanced":
            p = balanced_ports(sw_src, active, P)
        else:
            p = port % P if s == 1 else (a // fab.k ** (s - 2)) % P
        idx = rows[active]
        mat[idx, s] = up_base[idx] + p[idx]
        mat[idx, 2 * h[idx] - 1 - s] = down_base[idx] + p[idx]
        col = col * fab.k + p
    mat[rows, 2 * h - 1] = G + dst
    keep = np.arange(2 * n) < 2 * h[:, None]
    return np.concatenate([[0], np.cumsum(2 * h)]), mat[keep]


def probing_reference(
    fab: ClosFabric, src: np.ndarray, dst: np.ndarray, key: np.ndarray, load: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``probing`` as LumosCore's published runs define it, flow by flow in call order:
    ``floor(N)`` ECMP paths with the tier seeds moved by ``c * 0x9E3779B9`` (one more when a
    hash of the flow falls below ``N mod 1``), the first with the largest
    ``min capacity / max(flows, 1)`` wins and counts one flow on its links."""
    load = np.zeros(fab.n_links) if load is None else load.copy()
    n_cand = _candidate_counts(fab, src, dst, key)
    cands = []
    for c in range(int(n_cand.max())):
        indptr, indices = tier_by_tier_routes(
            _as_ecmp(fab), src, dst, key, None, seed_shift=c * 0x9E3779B9,
            sum_candidate=c if fab.probe_hash == "sum" else None,
        )  # fmt: skip
        cands.append(indices)
    out = np.empty_like(cands[0])
    cap = fab.capacity_bps
    for i in range(src.size):
        lo, hi = indptr[i], indptr[i + 1]
        best, best_score = None, -1.0
        for c in range(max(int(n_cand[i]), 1)):
            path = cands[c][lo:hi]
            score = float((cap[path] / np.maximum(load[path], 1.0)).min())
            if score > best_score:
                best, best_score = path, score
        out[lo:hi] = best
        load[best] += 1.0
    return indptr, out


def _candidate_counts(fab: ClosFabric, src: np.ndarray, dst: np.ndarray, key: np.ndarray):
    """``floor(N)`` candidates per flow, one more when its hash falls below ``N mod 1``."""
    n_cand = np.full(src.size, math.floor(fab.probe_candidates))
    frac = fab.probe_candidates - math.floor(fab.probe_candidates)
    return np.maximum(n_cand + (flow_hash(src, dst, key, seed=0x5BD1E995) / 2.0**32 < frac), 1)


def least_loaded_reference(
    fab: ClosFabric, src: np.ndarray, dst: np.ndarray, key: np.ndarray, load: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``probing`` with ``probe_hash="least-loaded"``, as the research simulator builds its
    candidates, flow by flow in call order: candidate ``c`` of a flow with ``N`` candidates
    climbs tier by tier, taking the up link with the fewest flows among the ECMP ports
    hashed with the tier seed moved by ``(c + t) * 0x9E3779B9``, ``t = 0 .. N-1`` (the
    first on ties); the first candidate with the largest ``min capacity / max(flows, 1)``
    wins and counts one flow on its links."""
    load = np.zeros(fab.n_links) if load is None else load.copy()
    n_cand = _candidate_counts(fab, src, dst, key)
    G, cap, offs = fab.gpus, fab.capacity_bps, fab.link_offsets()
    a, _ = fab.attachment(src)
    b, _ = fab.attachment(dst)
    h = fab.heights(src, dst)
    words = flow_key_words(src, dst, key)
    shifts = 2 * int(n_cand.max()) - 1
    hashed = [
        [murmur3_32(words, (seed + u * 0x9E3779B9) & 0xFFFFFFFF) for u in range(shifts)]
        for seed in fab.tier_seeds
    ]
    indptr = np.concatenate([[0], np.cumsum(2 * h)])
    out = np.empty(indptr[-1], np.int64)
    for i in range(src.size):
        n = int(n_cand[i])
        best, best_score = None, -1.0
        for c in range(n):
            ups, downs, col = [int(src[i])], [], 0
            for s in range(1, int(h[i])):
                P = fab.uplinks if s == 1 else fab.k
                w = 1 if s == 1 else fab.uplinks * fab.k ** (s - 2)
                span = fab.k ** (s - 1)
                up = offs["up"][s - 1] + ((a[i] // span) * w + col) * P
                down = offs["down"][s - 1] + ((b[i] // span) * w + col) * P
                ports = [int(ecmp_ports(hashed[s - 1][c + t][i : i + 1], P)[0]) for t in range(n)]
                p = min(ports, key=lambda q, up=up: load[up + q])
                ups.append(up + p)
                downs.append(down + p)
                col = col * fab.k + p
            path = np.array(ups + downs[::-1] + [G + int(dst[i])])
            score = float((cap[path] / np.maximum(load[path], 1.0)).min())
            if score > best_score:
                best, best_score = path, score
        out[indptr[i] : indptr[i + 1]] = best
        load[best] += 1.0
    return indptr, out


def test_least_loaded_probing_takes_the_emptier_hashed_port() -> None:
    # One flow, two candidates: its ECMP up-port at the leaf carries 5 flows, so it climbs
    # through the other hashed port (when the two hashes differ) and avoids the loaded link.
    fab = ClosFabric(64, 400, 8, 3, gpus_per_server=2, routing="probing",
                     probe_candidates=2.0, probe_hash="least-loaded")  # fmt: skip
    ecmp = ClosFabric(64, 400, 8, 3, gpus_per_server=2, routing="probing", probe_candidates=1.0)
    src, dst = np.array([0]), np.array([40])
    for k in range(50):
        key = np.array([k])
        first = ecmp.routes(src, dst, key).links_of(0)
        load = np.zeros(fab.n_links)
        load[first[1]] = 5.0
        got = fab.routes(src, dst, key, link_load=load).links_of(0)
        assert load[first[1]] == 5.0  # given back unchanged
        if got[1] != first[1]:
            break
    else:
        raise AssertionError("no flow found whose second hash differs from its first")
    assert load[got[1]] == 0.0
    # alone, with one candidate, it is the ECMP path
    one = ClosFabric(64, 400, 8, 3, gpus_per_server=2, routing="probing",
                     probe_candidates=1.0, probe_hash="least-loaded")  # fmt: skip
    assert one.routes(src, dst, key, link_load=load).links_of(0).tolist() == first.tolist()


@pytest.mark.parametrize("tiers", [2, 3, 4])
@pytest.mark.parametrize("candidates", [1.0, 2.0 + 2.0 / 7.0, 4.0])
def test_least_loaded_probing_matches_reference(tiers: int, candidates: float) -> None:
    fab = ClosFabric(
        clos_max_gpus(8, tiers), 400, 8, tiers, gpus_per_server=2, seed=tiers,
        routing="probing", probe_candidates=candidates, probe_hash="least-loaded",
    )  # fmt: skip
    src, dst = random_inter_server(fab, 400, tiers)
    key = np.random.default_rng(tiers).integers(0, 2**40, src.size)
    load = np.random.default_rng(7).integers(0, 3, fab.n_links).astype(float)
    got = fab.routes(src, dst, key, link_load=load)
    indptr, indices = least_loaded_reference(fab, src, dst, key, load)
    assert np.array_equal(got.indptr, indptr) and np.array_equal(got.indices, indices)


def _as_ecmp(fab: ClosFabric) -> ClosFabric:
    """The same fabric routing by ECMP (same seeds)."""
    return ClosFabric(
        fab.gpus,
        fab.port_gbps,
        fab.radix,
        fab.tiers,
        oversubscription=fab.oversubscription,
        gpus_per_server=fab.spec.gpus_per_server,
        rail_optimized=fab.rail_optimized,
        polarized=fab.polarized,
        seed=fab.seed,
    )


@settings(max_examples=40, deadline=None)
@given(
    tiers=st.sampled_from([2, 3, 4]),
    routing=st.sampled_from(["ecmp", "balanced", "source", "probing"]),
    rail=st.booleans(),
    polarized=st.booleans(),
    over=st.sampled_from([1.0, 3.0]),
    seed=st.integers(0, 1000),
    candidates=st.sampled_from([1.0, 1.0 + 2.0 / 7.0, 2.5, 4.0]),
    probe_hash=st.sampled_from(["murmur", "sum", "least-loaded"]),
)
def test_compiled_router_matches_tier_by_tier_reference(
    tiers: int,
    routing: str,
    rail: bool,
    polarized: bool,
    over: float,
    seed: int,
    candidates: float,
    probe_hash: str,
) -> None:
    # The router visits flows one by one; policies defined over the whole call per tier
    # (balanced round-robin, probing loads) must come out the same.
    radix = 8
    gps = 2 if not rail or over == 1.0 else 1
    full_build = clos_max_gpus(radix, tiers, over)
    if rail:
        full_build -= full_build % (gps * (radix - math.ceil(radix / (over + 1))))
    fab = ClosFabric(
        full_build,
        400,
        radix,
        tiers,
        oversubscription=over,
        gpus_per_server=gps,
        routing=routing,
        rail_optimized=rail,
        polarized=polarized,
        seed=seed,
        probe_candidates=candidates,
        probe_hash=probe_hash,
    )
    src, dst = random_inter_server(fab, 300, seed)
    rng = np.random.default_rng(seed)
    key = rng.integers(-(2**40), 2**40, src.size)
    load = rng.integers(0, 4, fab.n_links).astype(float) if routing == "probing" else None
    got = fab.routes(src, dst, key, link_load=load)
    indptr, indices = tier_by_tier_routes(fab, src, dst, key, load)
    assert np.array_equal(got.indptr, indptr)
    assert np.array_equal(got.indices, indices)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    tiers=st.sampled_from([2, 3, 4]),
    candidates=st.sampled_from([1.0, 1.0 + 2.0 / 7.0, 3.0, 4.0]),
    probe_hash=st.sampled_from(["murmur", "sum"]),
)
def test_probing_reads_no_load_off_its_probed_links(
    seed: int, tiers: int, candidates: float, probe_hash: str
) -> None:
    """``probed_links`` is what whole-path probing reads: any load off those links leaves
    every route as it was, and a flow whose route could change (more than one candidate)
    takes links among them."""
    rng = np.random.default_rng(seed)
    G = min(128, clos_max_gpus(8, tiers))
    fab = ClosFabric(G, 400, 8, tiers, gpus_per_server=2, routing="probing",
                     probe_candidates=candidates, probe_hash=probe_hash)  # fmt: skip
    F = int(rng.integers(1, 25))
    src = rng.integers(0, G, F)
    dst = (src + 2 * rng.integers(1, G // 2, F)) % G  # (never the same server)
    key = rng.integers(0, 2**40, F)
    read = fab.probed_links(src, dst, key)
    assert read is not None and np.array_equal(read, np.unique(read))
    load = rng.integers(0, 4, fab.n_links).astype(float)
    base = fab.routes(src, dst, key, link_load=load.copy())
    off = np.ones(fab.n_links, dtype=bool)
    off[read] = False
    load[off] += rng.integers(0, 50, int(off.sum()))
    moved = fab.routes(src, dst, key, link_load=load)
    assert np.array_equal(base.indptr, moved.indptr)
    assert np.array_equal(base.indices, moved.indices)
    n_cand = _candidate_counts(fab, src, dst, key)
    for i in np.flatnonzero(n_cand > 1):
        assert np.isin(base.links_of(i), read).all()


def test_probed_links_is_none_where_any_link_may_be_read() -> None:
    kw = {"gpus_per_server": 2, "probe_candidates": 2.0}
    s, d, k = np.array([0]), np.array([9]), np.array([0])
    assert ClosFabric(64, 400, 8, 3, routing="ecmp", **kw).probed_links(s, d, k) is None
    hop = ClosFabric(64, 400, 8, 3, routing="probing", probe_hash="least-loaded", **kw)
    assert hop.probed_links(s, d, k) is None
