"""Leaf-spine baselines (ECMP, Balanced, SR) and the vClos fabrics (isolation, Lemma 5.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.fabric.hashing import flow_hash
from lumoscore.fabric.leafspine import LeafSpineFabric, VClosFabric, leaf_spine_shape
from lumoscore.fabric.presets import make_fabric
from lumoscore.sim import Simulator
from lumoscore.workload import Job


def _job(jid: int, n: int, t: float = 0.0, model: str = "llama_7b") -> Job:
    tp = min(n, 2)
    return Job(job_id=jid, arrival_s=t, gpus=n, model=model, tp=tp, pp=1, dp=n // tp,
               ep=tp, iterations=2, duration_s=100.0 + 10 * jid)  # fmt: skip


def test_shapes_of_the_papers_clusters():
    assert leaf_spine_shape(512, 8) == (32, 16)
    assert leaf_spine_shape(2048, 8) == (64, 32)
    fab = make_fabric("vclos", 2048)
    assert (fab.L, fab.S, fab.d) == (64, 32, 32)
    nb = make_fabric("vclos-leaf-spine", 512, gpus_per_leaf=16, spines=31)
    assert nb.describe()["nonblocking"] == "strict"


def test_ecmp_and_source_spines():
    fab = LeafSpineFabric(4, 4, 2, routing="ecmp", seed=3)
    src, dst, key = np.array([0, 1, 5]), np.array([4, 8, 13]), np.array([7, 8, 9])
    r = fab.routes(src, dst, key)
    spine = (r.indices.reshape(-1, 4)[:, 1] - 2 * fab.gpus) % fab.S
    assert spine.tolist() == (flow_hash(src, dst, key, int(fab._seed)) % 4).tolist()
    src_r = LeafSpineFabric(4, 4, 2, routing="source").routes(src, dst, key)
    assert ((src_r.indices.reshape(-1, 4)[:, 1] - 32) % 4).tolist() == (src % 4).tolist()


def test_balanced_senses_the_flows_in_flight_on_its_uplinks():
    fab = LeafSpineFabric(4, 4, 2, routing="balanced")
    assert fab.load_aware and not LeafSpineFabric(4, 4, 2).load_aware
    src, dst = np.zeros(4, np.int64), np.full(4, 4)
    # alone: four flows from leaf 0 to leaf 1 take four different spines
    r = fab.routes(src, dst, np.arange(4))
    assert sorted((r.indices.reshape(-1, 4)[:, 1] - 32).tolist()) == [0, 1, 2, 3]
    # spines 0-2 busy: one flow takes spine 3, and the load comes back unchanged
    load = np.zeros(fab.n_links)
    load[32:35] = 5.0
    before = load.copy()
    one = fab.routes(src[:1], dst[:1], np.arange(1), link_load=load)
    assert one.links_of(0)[1] == 35
    assert np.array_equal(load, before)
    # the source leaf senses its own uplinks only: busy spine -> leaf 1 links change nothing
    down = np.zeros(fab.n_links)
    down[32 + 16 + 4 : 32 + 16 + 8] = [5.0, 5.0, 5.0, 0.0]  # spine m -> leaf 1 is 48 + 4 + m
    blind = fab.routes(src[:1], dst[:1], np.arange(1), link_load=down).links_of(0)
    assert blind.tolist() == fab.routes(src[:1], dst[:1], np.arange(1)).links_of(0).tolist()
    assert blind[2] != 55  # the one idle downlink was not sought


def test_vclos_names_and_routings():
    assert make_fabric("vclos-leaf-spine", 512).routing == "ecmp"
    for r in ("balanced", "source", "ideal"):
        assert make_fabric("vclos-leaf-spine", 512, routing=r).routing == r
    for name in ("vclos", "ocs-vclos", "ocs-relax"):
        fab = make_fabric(name, 512)
        assert fab.isolating and fab.default_placer == "fabric"
        assert fab.describe()["allocator"] == name
    with pytest.raises(ConfigError, match="routing 'ecmp' does not apply"):
        make_fabric("vclos", 512, routing="ecmp")
    with pytest.raises(ConfigError, match="gpus_per_leaf"):
        make_fabric("vclos", 512, gpus_per_leaf=32, spines=16)


def _lemma_routes(fab: VClosFabric, jid: int) -> None:
    """Every cross-leaf flow of the job: [NIC, own port out, own port in, NIC], the port out
    the source's ``ports[v, i]`` and the port in ``ports[w, i]`` (Lemma 5.1)."""
    a = fab.allocation(jid)
    g = a.gpus
    src, dst = np.meshgrid(g, g, indexing="ij")
    src, dst = src.ravel(), dst.ravel()
    keep = src // fab.spec.gpus_per_server != dst // fab.spec.gpus_per_server
    src, dst = src[keep], dst[keep]
    if not src.size:
        return
    r = fab.routes(src, dst, np.zeros(src.size, np.int64), job_id=jid)
    own = set(a.ports.ravel().tolist())
    base = 2 * fab.gpus
    for f in range(r.n_flows):
        links = r.links_of(f)
        if src[f] // fab.d == dst[f] // fab.d:
            assert links.tolist() == [src[f], fab.gpus + dst[f]]
            continue
        up, down = int(links[1] - base), int(links[2] - base - fab.L * fab.S)
        assert up in own and down in own, "a flow leaves the job's virtual Clos"
        rs, rd = np.flatnonzero(g == src[f])[0], np.flatnonzero(g == dst[f])[0]
        s = a.shape[1]
        assert up == a.ports[rs // s, rs % s]
        i = rs % s if a.down_rule == "lemma" else rd % s
        assert down == a.ports[rd // s, i]
        if fab.allocator.mode == "vclos":  # one spine carries the flow up and down
            assert up % fab.S == down % fab.S


@settings(max_examples=25, deadline=None)
@given(
    mode=st.sampled_from(["vclos", "ocs-vclos", "ocs-relax"]),
    sizes=st.lists(st.sampled_from([1, 2, 4, 6, 8, 12, 16, 24]), min_size=3, max_size=12),
    leave=st.lists(st.integers(0, 11), max_size=6),
)
def test_every_job_is_routed_inside_its_own_virtual_clos(mode, sizes, leave):
    fab = make_fabric(mode, 64, gpus_per_server=2, spines=8)
    live = []
    for jid, n in enumerate(sizes):
        if fab.place(_job(jid, n)) is not None:
            live.append(jid)
        for j in leave:
            if j in live and j < jid:
                live.remove(j)
                fab.release(j)
        for j in live:
            _lemma_routes(fab, j)


@settings(max_examples=8, deadline=None)
@given(
    mode=st.sampled_from(["vclos", "ocs-vclos", "ocs-relax"]),
    sizes=st.lists(st.sampled_from([2, 4, 8, 16, 24, 32]), min_size=4, max_size=14),
    gaps=st.lists(st.floats(0.0, 200.0), min_size=14, max_size=14),
    model=st.sampled_from(["llama_7b", "Pangu", "GPT2_13b"]),
)
def test_simulated_jobs_see_no_contention(mode, sizes, gaps, model):
    """Random arrivals and departures: every job's contention level is exactly 1."""
    t = np.cumsum(gaps)[: len(sizes)]
    jobs = [_job(i, n, float(t[i]), model) for i, n in enumerate(sizes)]
    fab = make_fabric(mode, 64, gpus_per_server=2, spines=8)
    res = Simulator(fab, jobs, exposure="literal").run()
    cl = res.jobs["contention_level"].to_numpy()
    assert np.all(np.abs(cl - 1.0) < 1e-9)
    fab.allocator.check()
    assert not fab.allocator.jobs  # everything released


def test_ecmp_baseline_contends_where_vclos_does_not():
    jobs = [_job(i, 16, 0.0) for i in range(4)]
    lv = {}
    for name, kw in (("vclos-leaf-spine", {"routing": "ecmp"}), ("vclos", {})):
        fab = make_fabric(name, 64, gpus_per_server=2, spines=8, **kw)
        lv[name] = Simulator(fab, jobs).run().jobs["contention_level"].max()
    assert lv["vclos"] == pytest.approx(1.0) and lv["vclos-leaf-spine"] > 1.0


def test_routes_refuse_flows_outside_the_job():
    fab = make_fabric("vclos", 64, gpus_per_server=2, spines=8)
    g = fab.place(_job(0, 16))
    with pytest.raises(PreconditionError, match="leaves the job's GPUs"):
        fab.routes(g[:1], np.array([63]), np.zeros(1, np.int64), job_id=0)
    with pytest.raises(PreconditionError, match="not running"):
        fab.routes(g[:1], g[4:5], np.zeros(1, np.int64), job_id=5)


@pytest.mark.parametrize("arch", ["vclos", "ocs-vclos"])
def test_double_binary_tree_shares_a_link_among_at_most_three_flows(arch):
    """vClos §5.3: double binary trees are no leaf-wise permutation, yet inside a virtual
    Clos no link carries more than 3 flows of one step (measured: 2, a parent's two
    children)."""
    from lumoscore.traffic.collectives import double_binary_tree

    fab = make_fabric(arch, 512)
    for jid, n in enumerate([16, 32, 64, 128]):
        g = fab.place(_job(jid, n))
        for rnd in double_binary_tree(g, 1.0):
            f = rnd.flows
            keep = f.src // 8 != f.dst // 8
            if keep.any():
                r = fab.routes(f.src[keep], f.dst[keep], np.zeros(int(keep.sum()), np.int64),
                               job_id=jid)  # fmt: skip
                assert np.bincount(r.indices).max() <= 3
