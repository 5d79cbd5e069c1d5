"""vClos / OCS-vClos / OCS-Relax allocators: isolation invariants, shapes, exact references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.placement.vclos import (
    ISOLATING_ALLOCATORS,
    VClosAllocator,
    greedy_biclique,
    ocs_vclos_ilp,
    padded_size,
    vclos_ilp,
    vclos_shapes,
)

# (leaves, spines, gpus per server): small clusters with 1, 2 and 4 servers per leaf
CLUSTERS = [(4, 4, 2), (6, 8, 4), (8, 8, 2), (5, 6, 2)]


def _check_isolation(alloc: VClosAllocator) -> None:
    """Independent check of an allocator's state against its live allocations."""
    alloc.check()
    held = [a.held for a in alloc.jobs.values()]
    allg = np.concatenate(held) if held else np.zeros(0, np.int64)
    assert allg.size == np.unique(allg).size, "a GPU is held by two jobs"
    ports = [a.ports.ravel() for a in alloc.jobs.values() if a.ports.size]
    allp = np.concatenate(ports) if ports else np.zeros(0, np.int64)
    assert allp.size == np.unique(allp).size, "a link (leaf port) is reserved twice"
    sps = [a.spine_ports for a in alloc.jobs.values() if a.spine_ports.size]
    alls = np.concatenate(sps) if sps else np.zeros(0, np.int64)
    assert alls.size == np.unique(alls).size, "a spine port is reserved twice"
    assert alloc.free_gpus == alloc.gpus - allg.size
    for a in alloc.jobs.values():
        assert np.isin(a.gpus, a.held).all()
        if not a.ports.size:
            # stages 0-1: no network, one leaf (one server when the job fits one)
            assert np.unique(a.gpus // alloc.d).size == 1
            continue
        l, s = a.shape
        assert a.ports.shape == (l, s)
        leaf_of_port = a.ports // alloc.S
        if a.down_rule == "own":
            assert (leaf_of_port[0] == a.gpus // alloc.d).all()
            spines = {int(p) // alloc.L for p in a.spine_ports}
            assert len(spines) == 1, "a one-spine allocation uses several spines"
            continue
        # a virtual leaf: s GPUs of one leaf, its s ports on that leaf
        vg = a.gpus  # rank order; padding GPUs are held but unused
        for v in range(l):
            ranks = np.arange(v * s, min((v + 1) * s, a.gpus.size))
            if ranks.size:
                assert np.unique(vg[ranks] // alloc.d).size == 1
                assert (leaf_of_port[v] == vg[ranks[0]] // alloc.d).all()
        if not alloc.ocs:  # column i is one spine for every virtual leaf (vClos)
            spine = a.ports % alloc.S
            assert (spine == spine[0]).all()
            assert np.unique(spine[0]).size == s
            continue
        for i in range(s):
            ends = [int(alloc.partner[q]) for q in a.ports[:, i]]
            if all(e < 0 for e in ends):  # two leaves joined directly (Fig. 3)
                assert l == 2 and ends[0] == -(1 + int(a.ports[1, i]))
            else:  # virtual spine i: l ports of one spine
                assert len({e // alloc.L for e in ends}) == 1


@settings(max_examples=60, deadline=None)
@given(
    cluster=st.sampled_from(CLUSTERS),
    mode=st.sampled_from(ISOLATING_ALLOCATORS),
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(1, 24), st.integers(0, 10**6)),
        min_size=5,
        max_size=60,
    ),
)
def test_random_arrivals_and_departures_keep_jobs_isolated(cluster, mode, ops):
    L, S, T = cluster
    alloc = VClosAllocator(L, S, T, mode=mode)
    live: list[int] = []
    snapshot: dict[int, dict[int, int]] = {}
    for jid, (arrive, n, pick) in enumerate(ops):
        if arrive or not live:
            a = alloc.allocate(jid, min(n, alloc.gpus))
            if a is not None:
                live.append(jid)
                snapshot[jid] = dict(a.circuits.tolist())
                assert a.gpus.size == min(n, alloc.gpus)
            else:
                assert alloc.last_refusal in ("gpus", "servers", "network")
        else:
            jid_out = live.pop(pick % len(live))
            alloc.release(jid_out)
            snapshot.pop(jid_out)
        _check_isolation(alloc)
        # OCS: no running job's circuit was ever rewired
        for j, circ in snapshot.items():
            for q, t in circ.items():
                assert alloc.partner[q] == t, f"job {j}: busy circuit {q} rewired"


def test_shapes_and_padding():
    assert vclos_shapes(64, unit=8, spines=16, gpus_per_leaf=16, leaves=32) == [(4, 16), (8, 8)]
    assert vclos_shapes(96, unit=8, spines=16, gpus_per_leaf=16, leaves=32) == [(6, 16), (12, 8)]
    # 40 GPUs need 5 leaves of 8 on a 4-leaf cluster: none; padded to 48 = 3 x 16
    assert padded_size(40, unit=8, spines=16, gpus_per_leaf=16, leaves=4) == 48
    assert padded_size(64, unit=8, spines=16, gpus_per_leaf=16, leaves=4) == 64
    assert padded_size(65, unit=8, spines=16, gpus_per_leaf=16, leaves=4) is None
    # a padded job holds the extra GPUs unused
    a = VClosAllocator(4, 16, 8)
    got = a.allocate(0, 40)
    assert got is not None and got.gpus.size == 40 and got.held.size == 48 and got.padded == 8


def test_stages_follow_the_paper():
    a = VClosAllocator(4, 4, 2)
    assert a.allocate(0, 1).stage == 0
    assert a.allocate(1, 1).gpus.tolist() == [1]  # the fullest server that holds it
    assert a.allocate(2, 4).stage == 1  # one leaf: two idle servers
    three = a.allocate(3, 6)
    assert three.stage == 2 and three.shape == (3, 2)
    a.release(0)
    assert a.allocate(4, 1).gpus.tolist() == [0]  # server 0 (GPU 1 busy) is the fullest


def test_ocs_uses_direct_circuits_for_two_leaves():
    a = VClosAllocator(4, 4, 2, mode="ocs-vclos")
    job = a.allocate(0, 8)  # two leaves of 4 GPUs: direct leaf-leaf circuits, no spine port
    assert job.stage == 2 and job.shape == (2, 4) and job.spine_ports.size == 0
    assert (job.circuits[:, 1] < 0).all() and job.rewired == 4


def test_ocs_vclos_reduces_network_fragmentation():
    refusals = {}
    for mode in ("vclos", "ocs-vclos"):
        alloc = VClosAllocator(16, 8, 4, mode=mode)
        r = np.random.default_rng(5)
        live: list[int] = []
        for jid in range(3000):
            if live and r.random() < 0.5:
                alloc.release(live.pop(int(r.integers(len(live)))))
            n = int(r.choice([1, 2, 4, 8, 12, 16, 24, 32, 48, 64]))
            if alloc.allocate(jid, n) is not None:
                live.append(jid)
        refusals[mode] = alloc.refusals["network"]
    assert refusals["ocs-vclos"] < refusals["vclos"]


def _random_instance(rng: np.random.Generator):
    R, C = int(rng.integers(4, 12)), int(rng.integers(4, 12))
    free = rng.random((R, C)) < rng.uniform(0.45, 0.9)
    l = int(rng.integers(2, min(R, 5) + 1))
    s = int(rng.integers(2, min(C, 6) + 1))
    return free, l, s, rng.integers(0, 6, R), rng.integers(0, 6, C)


def test_greedy_finds_a_virtual_clos_whenever_the_ilp_does():
    """On 1000 random link states (4-11 candidate leaves and spines, 45-90 % of the links
    free) the ILP finds a virtual Clos in 628 and the greedy misses 1 of them (0.16 %): the
    bound asserted is 1 %. Its Eq. 6 objective is the optimum in at least 80 % of the cases;
    the largest gap seen is 1 against 4 (costs are small integers)."""
    rng = np.random.default_rng(2024)
    feasible = misses = optimal = 0
    worst = 1.0
    for _ in range(1000):
        free, l, s, lc, sc = _random_instance(rng)
        exact = vclos_ilp(free, l, s, lc, sc)
        fast = greedy_biclique(free, l, s, lc, sc)
        if exact is None:
            assert fast is None
            continue
        feasible += 1
        if fast is None:
            misses += 1
            continue
        rows, cols = fast
        assert free[np.ix_(rows, cols)].all() and rows.size == l and cols.size == s
        obj_fast = int(lc[rows].sum() + sc[cols].sum())
        obj_exact = int(lc[exact[0]].sum() + sc[exact[1]].sum())
        assert obj_fast >= obj_exact
        optimal += obj_fast == obj_exact
        worst = max(worst, (obj_fast + 1) / (obj_exact + 1))
    assert feasible >= 500
    assert misses <= feasible // 100
    assert optimal >= 0.8 * feasible
    assert worst <= 2.5


def test_ocs_stage3_greedy_is_exact():
    rng = np.random.default_rng(7)
    from lumoscore.placement.vclos import _take_cheapest

    for _ in range(60):
        n_l, n_s = int(rng.integers(2, 8)), int(rng.integers(2, 8))
        leaf_cap, spine_cap = rng.integers(0, 4, n_l), rng.integers(0, 4, n_s)
        lc, sc = rng.integers(0, 10, n_l), rng.integers(0, 10, n_s)
        l, s = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        exact = ocs_vclos_ilp(leaf_cap, spine_cap, l, s, lc, sc)
        v, w = _take_cheapest(leaf_cap, lc, l), _take_cheapest(spine_cap, sc, s)
        if exact is None:
            assert v is None or w is None
            continue
        assert v is not None and w is not None
        assert int(lc @ v + sc @ w) == int(lc @ exact[0] + sc @ exact[1])


@pytest.mark.parametrize("search", ["ilp", "greedy+ilp"])
@pytest.mark.parametrize("mode", ["vclos", "ocs-vclos"])
def test_ilp_search_keeps_jobs_isolated(search, mode):
    alloc = VClosAllocator(8, 8, 2, mode=mode, search=search)
    rng = np.random.default_rng(3)
    live: list[int] = []
    for jid in range(60):
        if live and rng.random() < 0.4:
            alloc.release(live.pop(int(rng.integers(len(live)))))
        if alloc.allocate(jid, int(rng.choice([2, 6, 10, 12, 16, 24]))) is not None:
            live.append(jid)
        _check_isolation(alloc)
    assert sum(alloc.stage_counts[2:]) > 0


def test_bad_parameters_name_themselves():
    with pytest.raises(ConfigError, match="gpus_per_leaf"):
        VClosAllocator(4, 4, 2, gpus_per_leaf=8)
    with pytest.raises(ConfigError, match="allocator 'x' unknown; allowed: vclos"):
        VClosAllocator(4, 4, 2, mode="x")
    with pytest.raises(ConfigError, match="search"):
        VClosAllocator(4, 4, 2, search="exhaustive")
    a = VClosAllocator(4, 4, 2)
    a.allocate(0, 2)
    with pytest.raises(PreconditionError, match="already"):
        a.allocate(0, 2)
    with pytest.raises(PreconditionError, match="holds no allocation"):
        a.release(9)


def test_research_refusals_count_as_the_research_scheduler():
    # Independent recount: a refused attempt counts once until something is allocated or
    # released, never for want of free GPUs; "gpu" when the idle servers (or, for a job of
    # at most one server, a server with enough free GPUs) are missing, else "network".
    alloc = VClosAllocator(16, 8, 4, mode="vclos")
    r = np.random.default_rng(11)
    live: list[int] = []
    want = {"gpu": 0, "network": 0}
    changes, last = 0, None
    for jid in range(3000):
        if live and r.random() < 0.4:
            alloc.release(live.pop(int(r.integers(len(live)))))
            changes += 1
        n = int(r.choice([1, 2, 4, 8, 12, 16, 24, 32, 48, 64]))
        free = (alloc.gpu_owner < 0).reshape(-1, 4).sum(axis=1)
        for _ in range(2):  # the second attempt changes nothing: counted at most once
            got = alloc.allocate(jid, n)
            if got is not None:
                live.append(jid)
                changes += 1
                break
            if n <= free.sum() and (jid, changes) != last:
                ok = (free >= n).any() if n <= 4 else (free == 4).sum() >= -(-n // 4)
                want["network" if ok else "gpu"] += 1
            last = (jid, changes)
    assert alloc.research_refusals == want
    assert want["gpu"] > 0 and want["network"] > 0
    d = alloc.describe()
    assert d["research_refusals_gpu"] + d["research_refusals_network"] < (
        d["refusals_servers"] + d["refusals_network"]
    )
