"""Connectivity of an admission: every cross-pod pod pair a job's flows use gets a circuit.

Two ways it could be lost (both seen in simulations before the fix): scaling a logical topology
down to the spines' OCS ports (``feasible_demand``) used to floor a pair's single requirement to
zero; and the research demand rule counts PP and DP-ring pairs only, so expert (all-pairs) or
other traffic between pods that no PP/DP pair joins had no requirement at all.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lumoscore.errors import PreconditionError
from lumoscore.placement import (
    ClusterState,
    DemandPart,
    Placement,
    feasible_demand,
    job_demand,
    reconfigure,
)
from lumoscore.placement.admit import _scaled_entries
from lumoscore.topology import ClusterSpec, build_wiring, logical_topology
from lumoscore.traffic import iteration_flows
from lumoscore.workload import Job


@st.composite
def logical(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    """A symmetric ``(H, P, P)`` logical topology (zero diagonal) and a spine port count."""
    H = draw(st.integers(1, 3))
    P = draw(st.integers(2, 7))
    k = draw(st.sampled_from([2, 4, 6, 8]))
    vals = draw(
        st.lists(
            st.sampled_from([0, 0, 0, 1, 1, 2, 3, 5]),
            min_size=H * P * P,
            max_size=H * P * P,
        )
    )
    C = np.triu(np.array(vals, np.int64).reshape(H, P, P), 1)
    return C + C.transpose(0, 2, 1), k


#: A spine of group 1 gives up pair (2, 3), which group 0 connects too, for pair (0, 2), which
#: group 0 had to drop (its spine 0 has three partners and two ports).
FREED = np.array(
    [
        [[0, 2, 1, 1], [2, 0, 0, 0], [1, 0, 0, 1], [1, 0, 1, 0]],
        [[0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]],
    ]
)


@settings(max_examples=300, deadline=None)
@given(case=logical())
@example(case=(FREED, 2))
def test_feasible_demand_fits_the_ports_and_keeps_pairs_connected(
    case: tuple[np.ndarray, int],
) -> None:
    C, k = case
    D = feasible_demand(C, k)
    # the scaling on the entries (what reconfigure uses): the same matrix where it applies
    # (None: a spine has more partners than ports, the greedy above runs)
    key = np.flatnonzero(C)
    entries = (key, C.reshape(-1)[key])
    on_entries = _scaled_entries(C.shape, entries, np.full(C.shape[:2], k))
    assert on_entries is None or np.array_equal(on_entries.dense(), D)
    # and with ports per spine (some out of service)
    ports = np.maximum(k - (np.arange(C.shape[0] * C.shape[1]) % 3), 1).reshape(C.shape[:2])
    want = feasible_demand(C, ports)
    on_entries = _scaled_entries(C.shape, entries, ports)
    assert on_entries is None or np.array_equal(on_entries.dense(), want)
    assert (D >= 0).all() and (D.transpose(0, 2, 1) == D).all()
    assert (np.einsum("hii->hi", D) == 0).all()
    assert (D.sum(axis=2) <= k).all()
    if (C.sum(axis=2) <= k).all():
        assert np.array_equal(D, C)  # nothing to scale: C as asked
    # a circuit where C has none only for a pod pair that had no circuit in any group
    extra = (D > 0) & (C == 0)
    assert (D[extra] == 1).all()
    for h, i, j in zip(*np.nonzero(extra), strict=True):
        others = np.delete(D[:, i, j], h)
        assert not (others > 0).any() and C[:, i, j].any()
    # elsewhere never above the request
    assert (D[~extra] <= C[~extra]).all()
    # every requirement keeps a circuit in its own group when both spines have the ports
    # for all their partners there (the closed form 1 + floor((C - 1) s)), unless one end gave
    # it up for a pod pair with no circuit anywhere else: then the pair keeps a circuit in
    # another group, and a circuit C did not ask for sits at that end
    partners = (C > 0).sum(axis=2)
    fits = (partners[:, :, None] <= k) & (partners[:, None, :] <= k)
    row_ok = np.all(partners <= k, axis=1)  # the whole group fits partner-wise
    keep = (C > 0) & fits & row_ok[:, None, None]
    for h, i, j in zip(*np.nonzero(keep & (D == 0)), strict=True):
        assert D[:, i, j].any() and (extra[h, i].any() or extra[h, j].any())
    # a pod pair of C left without any circuit: no group has a port free, or freeable without
    # disconnecting another pair, at both ends
    slack = k - D.sum(axis=2)
    multi = (D > 0).sum(axis=0) > 1  # pairs connected in more than one group
    freeable = ((D >= 2) | ((D == 1) & multi[None])).any(axis=2)  # (H, P)
    room = (slack > 0) | freeable
    lost_i, lost_j = np.nonzero(C.any(axis=0) & ~(D > 0).any(axis=0))
    for i, j in zip(lost_i, lost_j, strict=True):
        assert not (room[:, i] & room[:, j]).any()


def test_feasible_demand_keeps_a_single_requirement_on_an_overloaded_spine() -> None:
    # the 4096-GPU lumoscore-25.6T-tau1 failure in miniature: spine (pod 1, group 0) is asked
    # for 9 circuits with 8 ports, one of them the only requirement of pods 1-2; the old
    # symmetric scaling floor(1 * 8/9) = 0 left pods 1 and 2 without any circuit
    C = np.zeros((2, 4, 4), np.int64)
    C[0, 1, 2] = 1
    C[0, 1, 3] = 8
    C[1, 0, 3] = 4
    C = C + C.transpose(0, 2, 1)
    D = feasible_demand(C, 8)
    assert D[0, 1, 2] == D[0, 2, 1] == 1
    assert D[0, 1, 3] == 7 and D[0, 1].sum() == 8
    assert np.array_equal(D[1], C[1])


def test_feasible_demand_moves_a_pair_to_a_group_with_free_ports() -> None:
    # spine (pod 0, group 0) has 3 partners and 2 ports: one pair must leave group 0; the pair
    # not connected in group 1 keeps its circuit here, the dropped one gets one in group 1
    C = np.zeros((2, 4, 4), np.int64)
    C[0, 0, 1] = C[0, 0, 2] = C[0, 0, 3] = 1
    C[1, 0, 1] = 1
    C = C + C.transpose(0, 2, 1)
    D = feasible_demand(C, 2)
    assert (D.sum(axis=2) <= 2).all()
    connected = (D > 0).any(axis=0)
    assert connected[0, 1] and connected[0, 2] and connected[0, 3]
    assert D[0, 0, 1] == 0 and D[1, 0, 1] == 1  # 0-1 was the pair connected elsewhere


TAU1 = ClusterSpec(pods=6, k_leaf=4, k_spine=4, tau=1, gpus_per_server=2, ocs_ports=6)
# 4 leaves x 4 GPUs a pod, 4 spines = 4 OCS groups with 4 OCS ports a spine


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.integers(0, TAU1.leaves - 1), st.integers(0, TAU1.leaves - 1),
                  st.integers(1, 3)),
        min_size=10, max_size=60,
    )
)  # fmt: skip
def test_reconfigure_connects_every_pod_pair_of_L(pairs: list[tuple[int, int, int]]) -> None:
    """Whatever the contention (tau = 1, leaves within K_leaf), the OCS configuration joins
    every pair of pods that ``L`` joins."""
    spec = TAU1
    state = ClusterState.empty(spec)
    per = spec.leaves_per_pod
    L = np.zeros_like(state.L)
    for a, b, v in pairs:
        if a // per == b // per:
            continue
        row_a, row_b = L[a].sum(), L[b].sum()
        v = min(v, spec.k_leaf - row_a, spec.k_leaf - row_b)
        if v > 0:
            L[a, b] += v
            L[b, a] += v
    r, c = np.nonzero(L)
    state.add_demand(0, DemandPart(r, c, L[r, c], np.ones(r.size, np.int64)))
    wiring = build_wiring(spec, "cross")
    rec = reconfigure(state, wiring=wiring)
    realised = logical_topology(wiring, state.circuits)
    assert np.array_equal(realised, feasible_demand(rec.logical.C, spec.k_spine))
    assert (realised.sum(axis=2) <= spec.k_spine).all()
    a, b = np.nonzero(state.L)
    lost = ~(realised[:, a // per, b // per] > 0).any(axis=0)
    # (never seen on this spec: 4000 random instances all connected) a pair may stay
    # without a circuit only when no group has a port free or freeable at both ends
    slack = spec.k_spine - realised.sum(axis=2)
    multi = (realised > 0).sum(axis=0) > 1
    room = (slack > 0) | ((realised >= 2) | ((realised == 1) & multi[None])).any(axis=2)
    for i, j in zip(a[lost] // per, b[lost] // per, strict=True):
        assert not (room[:, i] & room[:, j]).any()


def test_job_demand_covers_expert_traffic_across_pods() -> None:
    """A job on four servers in four pods (relaxed placement can do that): the DP ring joins
    pods 0-1, 1-2, 2-3, 3-0; the expert all-to-all also joins 0-2 and 1-3, which the research
    rule does not count: they get one link each."""
    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=1, gpus_per_server=8, ocs_ports=4)
    job = Job(job_id=0, arrival_s=0.0, gpus=32, model="Pangu", tp=8, pp=1, dp=4, ep=32,
              iterations=1, duration_s=1.0)  # fmt: skip
    gpus = np.concatenate([np.arange(8) + 64 * p for p in range(4)])  # leaf 0 of every pod
    state = ClusterState.empty(spec)
    part = job_demand(job, Placement(0, gpus, pods=(0, 1, 2, 3), leaves=(0, 8, 16, 24)), state)
    L = np.zeros((spec.leaves, spec.leaves), np.int64)
    L[part.rows, part.cols] = part.values
    ring = (0, 8), (8, 16), (16, 24), (0, 24)
    assert all(L[a, b] == L[b, a] == 4 for a, b in ring)  # ceil(tp / 2) per DP ring pair
    assert L[0, 16] == L[8, 24] == 1  # expert traffic only: connectivity
    assert np.count_nonzero(L) == 12
    # every cross-pod leaf pair of the job's flows has a requirement
    for rd in iteration_flows(job, gpus, spec, aggregate=True, key="gpu"):
        a, b = rd.flows.src // spec.k_leaf, rd.flows.dst // spec.k_leaf
        cross = a // spec.leaves_per_pod != b // spec.leaves_per_pod
        assert (L[a[cross], b[cross]] > 0).all()


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    tp=st.sampled_from([1, 2, 4]),
    pp=st.integers(1, 4),
    dp=st.integers(1, 5),
    ep_mult=st.sampled_from([1, 2, 4, 3]),
    collective=st.sampled_from(["ring", "hierarchical-ring", "halving-doubling", "all-to-all"]),
    zero_share=st.sampled_from([None, "dp", "ep", "pp"]),
    rail=st.booleans(),
)
def test_flow_pairs_are_the_cross_pod_pairs_of_the_iteration_flows(
    seed, tp, pp, dp, ep_mult, collective, zero_share, rail
) -> None:
    """The leaf pairs the admission reads off the rank grid are exactly those of the flows of
    every round of ``iteration_flows`` (any collective, expert group size, a class with no
    exposed time, rail-optimized leaves, GPUs scattered over the pods)."""
    from lumoscore.placement.demand import _flow_pairs
    from lumoscore.workload.job import ExposedShares

    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=1, gpus_per_server=2, ocs_ports=4)
    shares = {"dp": 0.05, "ep": 0.2, "pp": 0.01}
    if zero_share:
        shares[zero_share] = 0.0
    gpus_n = tp * pp * dp
    job = Job(job_id=0, arrival_s=0.0, gpus=gpus_n, model="x", tp=tp, pp=pp, dp=dp,
              ep=tp * ep_mult, iterations=1, duration_s=1.0, collective=collective,
              shares=ExposedShares(**shares))  # fmt: skip
    rng = np.random.default_rng(seed)
    gpus = rng.choice(spec.gpus, size=gpus_n, replace=False)
    state = ClusterState.empty(spec, rail_optimized=rail)
    pods = tuple(sorted(set((gpus // spec.gpus_per_pod).tolist())))
    placement = Placement(0, gpus, pods=pods, leaves=())
    if gpus_n % min(job.ep, gpus_n):
        with pytest.raises(PreconditionError):
            _flow_pairs(job, placement, state)
        return
    want = set()
    for rd in iteration_flows(job, gpus, spec, aggregate=False):
        a, b = state.leaf_of_gpu(rd.flows.src), state.leaf_of_gpu(rd.flows.dst)
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            if x // spec.leaves_per_pod != y // spec.leaves_per_pod:
                want.add(min(x, y) * spec.leaves + max(x, y))
    assert sorted(want) == _flow_pairs(job, placement, state).tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([(2, 2, 1), (1, 4, 2), (3, 2, 2), (2, 3, 1)]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_flow_pair_codes_match_numpy(seed, shape, use_pp, use_dp, use_ep) -> None:  # type: ignore[no-untyped-def]
    """The compiled pair codes equal the NumPy formulation (pipeline neighbours, DP ring
    neighbours with wrap-around, all pairs of every expert group; cross-pod pairs only)."""
    from lumoscore.placement.kernels import flow_pair_codes, sorted_difference

    rng = np.random.default_rng(seed)
    pp, dp, tp = shape
    n, per = 12, 3
    leaf = rng.integers(0, n, size=(pp, dp, tp)).astype(np.int64)
    ep = tp * int(rng.choice([d for d in range(1, dp + 1) if dp % d == 0]))
    a, b = [], []
    if use_pp and pp > 1:
        a.append(leaf[:-1].reshape(-1))
        b.append(leaf[1:].reshape(-1))
    if use_dp:
        a.append(leaf.reshape(-1))
        b.append(np.roll(leaf, -1, axis=1).reshape(-1))
    if use_ep:
        for row in leaf.reshape(-1, ep):
            u = np.unique(row)
            x, y = np.meshgrid(u, u)
            a.append(x.reshape(-1))
            b.append(y.reshape(-1))
    want = np.zeros(0, np.int64)
    if a:
        x, y = np.concatenate(a), np.concatenate(b)
        cross = x // per != y // per
        want = np.unique(np.minimum(x, y)[cross] * n + np.maximum(x, y)[cross])
    got = flow_pair_codes(leaf, ep, use_pp and pp > 1, use_dp, use_ep, per, n)
    assert got.tolist() == want.tolist()
    drop = want[::2]
    assert sorted_difference(got, drop).tolist() == np.setdiff1d(want, drop).tolist()
