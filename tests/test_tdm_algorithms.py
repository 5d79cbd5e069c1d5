"""Alg. 2 (OXC topology), Alg. 3 (rings), round evaluation and Alg. 1 (hill climbing)."""

from __future__ import annotations

from itertools import pairwise, permutations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import InfeasibleError, PreconditionError
from lumoscore.tdm.grouping import hill_climb, round_times_of_neighbours
from lumoscore.tdm.models import LLAMA3, Job, Network
from lumoscore.tdm.ring import form_ring, is_single_ring
from lumoscore.tdm.schedule import (
    StageCache,
    build_instance,
    evaluate_grouping,
    non_tdm_baseline,
)
from lumoscore.tdm.topology import completion_times_s, oxc_topology, ports_used
from lumoscore.tdm.workload import random_jobs

# ----------------------------------------------------------------------------- Alg. 2


@st.composite
def stage_demands(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    p = draw(st.integers(2, 6))
    n_link = draw(st.integers(1, 10))
    density = draw(st.floats(0.0, 1.0))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = rng.uniform(0.1, 10.0, (p, p)) * (rng.random((p, p)) < density)
    np.fill_diagonal(d, 0.0)
    tor = rng.uniform(0.0, 10.0, p) * draw(st.sampled_from([0.0, 1.0]))
    return d, tor, n_link


@settings(max_examples=150, deadline=None)
@given(stage_demands())
def test_alg2_respects_eq6_and_reports_its_completion_time(case) -> None:
    d, tor, n_link = case
    links, comm = oxc_topology(
        d, tor, port_bytes_per_s=1.0, tor_bytes_per_s=2.0, ports_per_pod=n_link
    )
    required = (d > 0).astype(int)
    if (ports_used(required) > n_link).any():  # required links alone break Eq. 6
        assert np.isinf(comm)
        return
    assert (ports_used(links) <= n_link).all()  # Eq. 6
    assert ((links > 0) == (d > 0)).all()  # links exactly where there is traffic
    t = completion_times_s(d, links, 1.0)
    expected = max(float(t.max()), float(tor.max()) / 2.0)
    assert comm == pytest.approx(expected)
    # Alg. 2 line 13: it stops at the ToR bound or when a bottleneck pod has no free port.
    bottleneck = np.argwhere(np.isclose(t, t.max()) & (t > 0))
    free = n_link - ports_used(links)
    if t.max() > tor.max() / 2.0 + 1e-12:
        i, j = bottleneck[0]
        assert free[i] == 0 or free[j] == 0
    # Never worse than the bare required topology.
    base = max(float(completion_times_s(d, required, 1.0).max()), float(tor.max()) / 2.0)
    assert comm <= base + 1e-12


def test_alg2_single_pair_closed_form() -> None:
    d = np.zeros((2, 2))
    d[0, 1] = 12.0
    for n_link, tor_s, expect in ((5, 0.0, 12.0 / 5), (16, 0.0, 12.0 / 16), (16, 3.0, 3.0)):
        links, comm = oxc_topology(
            d,
            np.array([tor_s, 0.0]),
            port_bytes_per_s=1.0,
            tor_bytes_per_s=1.0,
            ports_per_pod=n_link,
        )
        assert float(comm) == pytest.approx(expect)
        assert links[0, 1] == min(n_link, int(np.ceil(12.0 / max(tor_s, 12.0 / n_link))))


def test_alg2_batches_groups_like_single_calls() -> None:
    rng = np.random.default_rng(3)
    d = rng.uniform(0, 5, (7, 4, 4)) * (rng.random((7, 4, 4)) < 0.5)
    tor = rng.uniform(0, 5, (7, 4))
    kw = {"port_bytes_per_s": 1.0, "tor_bytes_per_s": 3.0, "ports_per_pod": 6}
    links, comm = oxc_topology(d, tor, **kw)
    for g in range(7):
        lg, cg = oxc_topology(d[g], tor[g], **kw)
        np.testing.assert_array_equal(links[g], lg)
        assert float(comm[g]) == float(cg)


def test_alg2_rejects_bad_demand() -> None:
    with pytest.raises(PreconditionError, match="demand_bytes"):
        oxc_topology(
            -np.ones((2, 2)), np.zeros(2), port_bytes_per_s=1, tor_bytes_per_s=1, ports_per_pod=2
        )


# ----------------------------------------------------------------------------- Alg. 3


def _new_edges(edges: np.ndarray, links: np.ndarray) -> int:
    return int((~links[edges[:, 0], edges[:, 1]]).sum())


@settings(max_examples=200, deadline=None)
@given(
    p=st.integers(2, 7),
    data=st.data(),
)
def test_alg3_always_returns_a_single_ring_eq7(p: int, data: st.DataObject) -> None:
    pods = np.array(sorted(data.draw(st.sets(st.integers(0, p - 1), min_size=2))))
    links = np.array(data.draw(st.lists(st.booleans(), min_size=p * p, max_size=p * p)))
    links = links.reshape(p, p)
    edges = form_ring(pods, links)
    assert is_single_ring(edges, pods)
    g = nx.DiGraph(edges.tolist())  # independent check of Eq. 7
    assert set(g.nodes) == set(pods.tolist())
    assert all(d == 1 for _, d in g.in_degree()) and all(d == 1 for _, d in g.out_degree())
    assert nx.is_strongly_connected(g)
    # Brute force: the fewest new connections any ring needs.
    m = pods.size
    best = min(
        _new_edges(np.stack([pods[list(o)], pods[list(o[1:] + o[:1])]], axis=1), links)
        for o in ((0, *perm) for perm in permutations(range(1, m)))
    )
    new = _new_edges(edges, links)
    assert best <= new <= m
    sub = links[np.ix_(pods, pods)] & ~np.eye(m, dtype=bool)
    if not sub.any():
        assert new == m  # nothing to reuse


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(list(range(6))), closed=st.booleans(), k=st.integers(2, 6))
def test_alg3_reuses_an_existing_hamiltonian_path_or_cycle(
    order: list[int], closed: bool, k: int
) -> None:
    pods = np.array(sorted(order[:k]))
    seq = order[:k]
    links = np.zeros((6, 6), dtype=bool)
    for a, b in pairwise(seq):
        links[a, b] = True
    if closed:
        links[seq[-1], seq[0]] = True
    edges = form_ring(pods, links)
    assert _new_edges(edges, links) == (0 if closed else 1)


def test_is_single_ring_rejects_two_subrings_and_wrong_pods() -> None:
    assert not is_single_ring(np.array([[0, 1], [1, 0], [2, 3], [3, 2]]), np.arange(4))
    assert not is_single_ring(np.array([[0, 1], [1, 2], [2, 0]]), np.array([0, 1, 3]))
    with pytest.raises(PreconditionError):
        form_ring(np.array([1]), np.zeros((2, 2), dtype=bool))


# ----------------------------------------------------------------------------- rounds


def _small_instance(seed: int, n_jobs: int, tokens: int = 256, n_link: int = 6):
    net = Network(
        n_pods=8, pods_per_group=4, gpus_per_pod=64, ports_per_pod=n_link, reconfig_s=0.05
    )
    jobs = random_jobs(
        n_jobs,
        np.random.default_rng(seed),
        models=("1B", "3B", "8B"),
        degree_min=2,
        degree_max=8,
        tokens=tokens,
    )
    return build_instance(net, jobs)


def _circuits(links: np.ndarray) -> np.ndarray:
    return links + np.swapaxes(links, -1, -2)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_jobs=st.integers(1, 8), data=st.data())
def test_schedule_topologies_valid_and_reconfig_only_where_topologies_differ(
    seed: int, n_jobs: int, data: st.DataObject
) -> None:
    inst = _small_instance(seed, n_jobs)
    grouping = np.array(
        data.draw(st.lists(st.sampled_from([0, 1]), min_size=n_jobs, max_size=n_jobs))
    )
    sch = evaluate_grouping(inst, grouping)
    net = inst.network
    assert (ports_used(sch.links) <= net.ports_per_pod).all()  # Eq. 6, every stage and OXC
    for job, s, edges in sch.rings:  # Eq. 7 and the ring sits in its job's stage
        assert is_single_ring(edges, inst.ring_pods[job])
        assert s % 2 == grouping[job]
        g = inst.group_of_job[job]
        assert (sch.links[s, g][edges[:, 0], edges[:, 1]] >= 1).all()
    # Reconfiguration after stage s iff some OXC's circuits differ from stage s+1.
    c = _circuits(sch.links)
    differ = (c != np.roll(c, -1, axis=0)).any(axis=(1, 2, 3))
    np.testing.assert_array_equal(sch.reconfig, differ)
    assert sch.reconfig_s == pytest.approx(differ.sum() * net.reconfig_s)
    assert sch.round_s == pytest.approx(sch.stage_s.sum() + differ.sum() * net.reconfig_s)
    # Eq. 3: every stage lasts max(communication, compute of the other group).
    for s in range(4):
        others = inst.train_s[grouping != s % 2]
        assert sch.train_s[s] == pytest.approx(others.max() if others.size else 0.0)
    np.testing.assert_allclose(sch.stage_s, np.maximum(sch.comm_s, sch.train_s))


def test_reconfig_charged_only_when_topologies_differ_closed_form() -> None:
    net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6, reconfig_s=0.5)
    # One RAR job: the same ring in both of its stages, idle stages keep it -> no reconfiguration.
    rar = build_instance(net, [Job("rar", LLAMA3["1B"], 4)])
    sch = non_tdm_baseline(rar)
    assert not sch.reconfig.any() and sch.reconfig_s == 0.0
    assert sch.round_s == pytest.approx(2 * sch.comm_s[0] + 2 * rar.train_s[0])
    # PS + all-to-all in different groups: the circuits change at every stage boundary.
    mixed = build_instance(
        net, [Job("ps", LLAMA3["3B"], 4, tokens=64), Job("alltoall", LLAMA3["1B"], 4)]
    )
    a = evaluate_grouping(mixed, np.array([0, 1]))
    assert a.reconfig.all() and a.reconfig_s == pytest.approx(4 * 0.5)
    free = build_instance(
        Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6, reconfig_s=0.0),
        mixed.jobs,
        mixed.placements,
    )
    b = evaluate_grouping(free, np.array([0, 1]))
    assert a.round_s - b.round_s == pytest.approx(4 * 0.5)


def test_baseline_closed_form_all_compute_then_all_communicate() -> None:
    inst = _small_instance(11, 6)
    base = non_tdm_baseline(inst)
    assert base.grouping.sum() == 0
    assert base.comm_s[1] == 0 and base.comm_s[3] == 0
    assert base.round_s == pytest.approx(
        base.comm_s[0] + base.comm_s[2] + 2 * inst.train_s.max() + base.reconfig_s
    )


# ----------------------------------------------------------------------------- Alg. 1


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_jobs=st.integers(1, 9),
    tokens=st.sampled_from([16, 256, 4096]),
    data=st.data(),
)
def test_hill_climbing_never_worse_than_start_and_locally_optimal(
    seed: int, n_jobs: int, tokens: int, data: st.DataObject
) -> None:
    inst = _small_instance(seed, n_jobs, tokens)
    start = np.array(
        data.draw(st.lists(st.sampled_from([0, 1]), min_size=n_jobs, max_size=n_jobs)),
        dtype=np.int8,
    )
    res = hill_climb(inst, start)
    start_s = evaluate_grouping(inst, start).round_s
    assert res.start.round_s == pytest.approx(start_s)
    assert res.schedule.round_s <= start_s + 1e-9
    assert all(b < a for a, b in zip(res.history_s, res.history_s[1:], strict=False))
    # Local optimality, checked against full re-evaluations (not the incremental path).
    for j in range(n_jobs):
        nb = res.schedule.grouping.copy()
        nb[j] ^= 1
        assert evaluate_grouping(inst, nb).round_s >= res.schedule.round_s * (1 - 1e-9)
    # From the default start it is never worse than the non-TDM baseline.
    assert hill_climb(inst).schedule.round_s <= non_tdm_baseline(inst).round_s + 1e-9


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_jobs=st.integers(1, 9), data=st.data())
def test_incremental_neighbour_times_match_full_evaluation(
    seed: int, n_jobs: int, data: st.DataObject
) -> None:
    inst = _small_instance(seed, n_jobs, 64)
    grouping = np.array(
        data.draw(st.lists(st.sampled_from([0, 1]), min_size=n_jobs, max_size=n_jobs)),
        dtype=np.int8,
    )
    nb = round_times_of_neighbours(inst, grouping, StageCache(inst))
    for j in range(n_jobs):
        g = grouping.copy()
        g[j] ^= 1
        assert nb[j] == pytest.approx(evaluate_grouping(inst, g).round_s)


def test_tdm_beats_baseline_when_communication_matches_compute() -> None:
    net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
    jobs = [Job("ps", LLAMA3["8B"], 4, tokens=64), Job("rar", LLAMA3["8B"], 4, tokens=64)]
    inst = build_instance(net, jobs)
    res = hill_climb(inst)
    assert sorted(res.schedule.grouping.tolist()) == [0, 1]
    assert res.schedule.round_s < 0.8 * non_tdm_baseline(inst).round_s


def test_hill_climbing_infeasible_start() -> None:
    # 4 pods, one port each: an all-to-all over 4 pods needs 6 ports per pod.
    net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=1)
    inst = build_instance(net, [Job("alltoall", LLAMA3["1B"], 4)])
    with pytest.raises(InfeasibleError, match="ports_per_pod"):
        hill_climb(inst)
