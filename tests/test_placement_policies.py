"""Placement: locality tiers, confinement invariants under random event sequences, pod selection
against brute force and CP-SAT, refusal reasons."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import InfeasibleError
from lumoscore.placement import (
    ClusterState,
    Placement,
    PlacementError,
    get_policy,
    podselect,
    select_pods_exact,
    select_pods_greedy,
)
from lumoscore.placement.kernels import greedy_pods
from lumoscore.topology import ClusterSpec
from lumoscore.workload import Job

SPEC = ClusterSpec(pods=4, k_leaf=16, k_spine=8, tau=2, gpus_per_server=8)  # 64 GPUs a pod


def make_job(job_id: int, gpus: int, pp: int = 1, ep: int = 8, tp: int = 8) -> Job:
    pp = min(pp, gpus // tp)
    return Job(
        job_id=job_id, arrival_s=0.0, gpus=gpus, model="Pangu", tp=tp, pp=pp,
        dp=gpus // tp // pp, ep=ep, iterations=1, duration_s=1.0,
    )  # fmt: skip


def check_confinement(state: ClusterState, job: Job, p: Placement, ep_strict: bool) -> None:
    spec = state.spec
    g = p.gpus
    assert g.size == job.gpus
    tp_groups = g.reshape(-1, job.tp)
    assert (spec.server_of_gpu(tp_groups) == spec.server_of_gpu(tp_groups[:, :1])).all()
    if ep_strict and job.ep > job.tp and job.gpus % job.ep == 0:
        ep_groups = spec.pod_of_gpu(g.reshape(-1, job.ep))
        assert (ep_groups == ep_groups[:, :1]).all(), "an EP group crosses a pod"
    assert set(p.pods) == set(spec.pod_of_gpu(g).tolist())


# ---- locality tiers ------------------------------------------------------------------------
def test_tiers_and_fewest_idle() -> None:
    st_ = ClusterState.empty(SPEC)
    pol = get_policy("locality")
    # occupy one server of leaf 1 (leaf = 16 GPUs = 2 servers) and 3 leaves of pod 2
    st_.allocate(Placement(job_id=100, gpus=np.arange(16, 24), pods=(0,), leaves=(1,)))
    st_.allocate(Placement(job_id=101, gpus=np.arange(128, 176), pods=(2,), leaves=(8, 9, 10)))
    p = pol.place(st_, make_job(1, 8))
    assert p.tier == "server" and set(p.gpus.tolist()) == set(range(24, 32))  # fullest server
    p = pol.place(st_, make_job(2, 16))
    assert p.tier == "leaf" and p.leaves == (11,)  # the leaf of the fullest pod, 16 idle
    p = pol.place(st_, make_job(3, 64, pp=2))
    assert p.tier == "pod" and p.pods == (1,)
    p = pol.place(st_, make_job(4, 96, ep=16))  # pods 0 (48 idle) and 3 (64 idle)
    assert p.tier == "pods" and p.pods == (0, 3)
    assert st_.check() == []


def test_refusal_reasons() -> None:
    st_ = ClusterState.empty(SPEC)
    pol = get_policy("locality")
    assert pol.place(st_, make_job(1, 512)) is None
    assert st_.refusals[-1].kind == "gpus" and st_.refusals[-1].reason == "gpus"
    # leave 48 idle GPUs in every pod: a 128-GPU job with EP = 64 GPUs cannot be confined
    for p in range(4):
        st_.allocate(Placement(job_id=10 + p, gpus=np.arange(p * 64, p * 64 + 16), pods=(p,),
                               leaves=(p * 4,)))  # fmt: skip
    assert pol.place(st_, make_job(2, 128, ep=64)) is None
    assert st_.refusals[-1].kind == "locality" and st_.refusals[-1].reason == "ep-confinement"
    # the EP-split fallback: 3 pods hold the 16 slots at all; in pieces of 2 slots (6 + 6 + 4)
    split = pol.propose(st_, make_job(2, 128, ep=64), split_ep=True)
    assert isinstance(split, Placement) and split.tier == "pods-ep-split"
    assert len(split.pods) == 3
    per_pod = np.bincount(SPEC.pod_of_gpu(split.gpus), minlength=4)
    assert sorted(per_pod.tolist()) == [0, 32, 48, 48]
    relaxed = get_policy("relaxed").place(st_, make_job(2, 128, ep=64))
    assert relaxed is not None and len(relaxed.pods) >= 3
    with pytest.raises(PlacementError):
        st_.allocate(relaxed)


# ---- random sequences --------------------------------------------------------------------
EVENT = st.tuples(
    st.sampled_from(["arrive", "arrive", "finish", "fail"]),
    st.sampled_from([8, 16, 32, 64, 128]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from([8, 16, 32]),
    st.integers(0, 10**6),
    st.sampled_from([4, 8]),
)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["locality", "relaxed", "first-fit"]), st.lists(EVENT, max_size=40))
def test_random_sequences_keep_invariants(policy: str, events: list) -> None:
    pol = get_policy(policy, pod_selection="greedy")
    state = ClusterState.empty(SPEC)
    jobs: dict[int, Job] = {}
    for k, (kind, gpus, pp, ep, r, tp) in enumerate(events):
        if kind == "arrive":
            job = make_job(k, gpus, pp=pp, ep=ep, tp=tp)  # tp = 4: two TP groups a server
            failed_before = state.failed.copy()
            p = pol.place(state, job)
            if p is None:
                assert state.refusals[-1].job_id == k
                continue
            assert not failed_before[p.gpus].any()
            check_confinement(state, job, p, ep_strict=policy == "locality")
            jobs[k] = job
        elif kind == "finish" and state.placements:
            victim = state.running[r % len(state.running)]
            pol.release(state, victim)
        elif kind == "fail":
            gpu = r % SPEC.gpus
            hit = state.fail_gpus([gpu])
            assert hit == (() if state.owner[gpu] < 0 else (int(state.owner[gpu]),))
            for j in hit:  # the simulator kills the jobs of failed GPUs
                state.release(j)
        assert state.check() == []
        owned = state.owner[state.owner >= 0]
        assert owned.size == sum(state.placements[j].gpus.size for j in state.placements)


# ---- pod selection ------------------------------------------------------------------------
def brute_force(cap: np.ndarray, need: int) -> tuple[int, int]:
    for k in range(1, cap.size + 1):
        best = [sum(cap[list(s)]) for s in itertools.combinations(range(cap.size), k)
                if cap[list(s)].sum() >= need and (cap[list(s)] > 0).all()]  # fmt: skip
        if best:
            return k, int(min(best))
    raise AssertionError


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=8), st.integers(1, 40))
def test_pod_selection_exact_and_greedy(cap_list: list[int], need: int) -> None:
    cap = np.array(cap_list)
    if cap.sum() < need:
        with pytest.raises(InfeasibleError):
            select_pods_greedy(cap, need)
        return
    k, opt = brute_force(cap, need)
    ex = select_pods_exact(cap, need)
    gr = select_pods_greedy(cap, need)
    assert (len(ex.pods), ex.cost) == (k, opt)
    assert len(gr.pods) == k  # fewest pods: exact
    assert opt <= gr.cost < opt + cap.max() or gr.cost == opt  # the documented bound
    for sel in (ex, gr):
        assert sum(sel.units) == need
        assert all(1 <= u <= cap[p] for p, u in zip(sel.pods, sel.units, strict=True))


def _select_pods_exact_full(cap: np.ndarray, need: int, r: np.ndarray | None) -> tuple:
    """Model (37)-(41) over every pod, those without capacity included: the formulation the
    library's smaller model (pods with room only) must choose exactly as, ties included."""
    from ortools.sat.python import cp_model

    c = np.asarray(cap, np.int64)
    cost = c.copy() if r is None else np.asarray(r, np.int64)
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(c.size)]
    y = [m.new_int_var(0, int(c[i]), f"y{i}") for i in range(c.size)]
    for i in range(c.size):
        m.add(y[i] <= int(c[i]) * x[i])
        m.add(y[i] >= x[i])
    m.add(sum(y) == need)
    big = int(cost.sum()) + 1
    m.minimize(sum((big + int(cost[i])) * x[i] for i in range(c.size)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    assert solver.solve(m) == cp_model.OPTIMAL
    return tuple(i for i in range(c.size) if solver.value(x[i]))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.integers(0, 3)), min_size=1,
             max_size=40),
    st.data(),
)  # fmt: skip
def test_exact_pod_selection_leaves_out_pods_without_room_and_chooses_the_same(
    pods: list[tuple[int, bool, int]], data: st.DataObject
) -> None:
    """Many pods without room and small integer capacities and costs (ties everywhere): the
    model over the pods with room picks the same pods as the model over all of them."""
    cap = np.array([c * live for c, live, _ in pods], np.int64)
    if cap.sum() < 1:
        return
    need = data.draw(st.integers(1, int(cap.sum())))
    r = np.array([w for _, _, w in pods], np.int64) if data.draw(st.booleans()) else None
    assert select_pods_exact(cap, need, r).pods == _select_pods_exact_full(cap, need, r)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=9),
    st.lists(st.integers(-3, 6), min_size=9, max_size=9),
    st.data(),
)
def test_pod_selection_enumeration_is_cp_sats_choice(
    cap_list: list[int], costs: list[int], data: st.DataObject
) -> None:
    """The enumeration answers only when one set is optimal, and then with CP-SAT's set (costs
    of any sign: it minimises CP-SAT's objective term for term); ties go to CP-SAT."""
    cap = np.array(cap_list, np.int64)
    if cap.sum() < 1:
        return
    need = data.draw(st.integers(1, int(cap.sum())))
    r = np.array(costs[: cap.size], np.int64) if data.draw(st.booleans()) else None
    c, cost = podselect._inputs(cap, need, r)
    live = np.flatnonzero(c > 0)
    got = podselect._sole_optimum(c, cost, live, need)
    if got is not None:
        assert got.tolist() == podselect._cp_sat_pods(c, cost, live, need, 5.0).tolist()


def test_pod_selection_enumeration_leaves_ties_to_cp_sat() -> None:
    c, cost = podselect._inputs([2, 0, 2], 2, None)
    assert podselect._sole_optimum(c, cost, np.array([0, 2]), 2) is None  # {0} or {2}
    assert podselect._sole_optimum(c, cost, np.array([0, 2]), 4).tolist() == [0, 2]


def _greedy_pods_reference(c: np.ndarray, cost: np.ndarray, need: int) -> np.ndarray:
    """The NumPy formulation of the greedy pod selection, an independent reference."""
    idx = np.arange(c.size)
    by_cap = np.lexsort((idx, cost, -c))  # largest capacity first, then cheaper, then index
    k = int(np.searchsorted(np.cumsum(c[by_cap]), need) + 1)  # fewest pods
    chosen = list(by_cap[: k - 1].tolist())
    rest = need - int(c[chosen].sum()) if chosen else need
    mask = np.ones(c.size, bool)
    mask[chosen] = False
    fit = np.flatnonzero(mask & (c >= rest))
    chosen.append(int(fit[np.lexsort((fit, c[fit], cost[fit]))[0]]))
    sel = np.zeros(c.size, bool)
    sel[chosen] = True
    improved = True
    while improved:
        improved = False
        total = int(c[sel].sum())
        for i in np.flatnonzero(sel)[np.argsort(-cost[sel], kind="stable")].tolist():
            ok = np.flatnonzero(~sel & (c >= need - (total - c[i])) & (cost < cost[i]))
            if ok.size:
                j = int(ok[np.lexsort((ok, c[ok], cost[ok]))[0]])
                sel[i], sel[j] = False, True
                improved = True
                break
    return sel


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_greedy_pods_equals_the_numpy_reference(data) -> None:
    n = data.draw(st.integers(1, 12))
    c = np.array(data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), np.int64)
    cost = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), np.int64)
    if c.sum() < 1:
        return
    need = data.draw(st.integers(1, int(c.sum())))
    assert greedy_pods(c, cost, need).tolist() == _greedy_pods_reference(c, cost, need).tolist()


def test_rail_optimized_leaf_map() -> None:
    spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2, gpus_per_server=8)
    st_ = ClusterState.empty(spec, rail_optimized=True)
    # rail group = 16 servers = the whole pod here; GPU r of each server -> leaf r of the pod
    assert st_.leaf_of_gpu(np.array([0, 8, 15, 128 + 3])).tolist() == [0, 0, 7, 11]
    p = get_policy().place(st_, make_job(1, 64, pp=2))
    assert p.tier == "leaf" and len(p.leaves) == 8  # a rail group spans all 8 rails


def _pod_slots_reference(slot_free, idle, server_free, pod, m, sps, per_leaf, per_pod, gpp):  # type: ignore[no-untyped-def]
    """The NumPy formulation of the in-pod slot choice, an independent reference."""
    nb = per_pod // per_leaf
    base = pod * per_pod
    pf = slot_free[base : base + per_pod].reshape(nb, per_leaf)
    f = pf.sum(axis=1)
    idle_b = idle[pod * gpp : (pod + 1) * gpp].reshape(nb, -1).sum(axis=1)
    order = np.lexsort((np.arange(nb), idle_b, -f))
    k = int(np.searchsorted(np.cumsum(f[order]), m) + 1)
    chosen = order[: k - 1]
    rest = m - int(f[chosen].sum())
    left = np.ones(nb, dtype=bool)
    left[chosen] = False
    fit = np.flatnonzero(left & (f >= rest))
    last = int(fit[np.lexsort((fit, idle_b[fit], f[fit]))[0]])
    r, c = np.nonzero(pf[chosen])
    lb = base + last * per_leaf
    idx = np.flatnonzero(pf[last])
    rel = server_free[lb // sps :]
    tail = lb + idx[np.lexsort((idx, rel[idx // sps]))]
    return np.concatenate([base + chosen[r] * per_leaf + c, tail[:rest]])


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([(1, 4, 4), (2, 4, 2), (4, 8, 8)]))
def test_pod_slots_kernel_matches_reference(seed: int, shape: tuple[int, int, int]) -> None:
    """The compiled in-pod slot choice equals the NumPy formulation (random free slots)."""
    from lumoscore.placement.kernels import pod_slots

    sps, per_leaf, nb = shape
    rng = np.random.default_rng(seed)
    pods = 2
    per_pod = per_leaf * nb
    tp = 2
    slot_free = rng.random(pods * per_pod) < 0.6
    idle = np.repeat(slot_free, tp) | (rng.random(pods * per_pod * tp) < 0.2)
    server_free = slot_free.reshape(-1, sps).sum(axis=1).astype(np.int64)
    pod = int(rng.integers(pods))
    have = int(slot_free[pod * per_pod : (pod + 1) * per_pod].sum())
    if have == 0:
        return
    m = int(rng.integers(1, have + 1))
    args = (slot_free, idle, server_free, pod, m, sps, per_leaf, per_pod, per_pod * tp)
    assert pod_slots(*args).tolist() == _pod_slots_reference(*args).tolist()
