"""Rank arrangement (LumosCore A.5, Lemma A.1) and communication-domain arrangement (A.6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import PreconditionError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.arrangement import (
    arrange_halving_doubling,
    arrange_hierarchical_ring,
    arrange_job,
    arrange_ring,
)
from lumoscore.traffic.collectives import halving_doubling, hierarchical_ring, ring_allreduce
from lumoscore.traffic.demand import c_link, max_flows_pod_to_pod
from lumoscore.workload import Job

SPEC = ClusterSpec(pods=8, k_leaf=8, k_spine=4, tau=2, gpus_per_server=4)  # 16 GPUs a pod


@st.composite
def placements(draw: st.DrawFn, equal: bool = False) -> np.ndarray:
    """Random GPUs of random pods (random counts per pod unless ``equal``)."""
    pods = draw(
        st.lists(st.integers(0, SPEC.pods - 1), min_size=1, max_size=SPEC.pods, unique=True)
    )
    common = draw(st.integers(1, SPEC.gpus_per_pod))
    gpus = []
    for p in pods:
        c = common if equal else draw(st.integers(1, SPEC.gpus_per_pod))
        local = draw(st.permutations(range(SPEC.gpus_per_pod)))[:c]
        gpus += [p * SPEC.gpus_per_pod + j for j in local]
    return np.array(draw(st.permutations(gpus)))


@settings(max_examples=80, deadline=None)
@given(placements())
def test_lemma_a1_ring(gpus: np.ndarray) -> None:
    ranks = arrange_ring(gpus, SPEC)
    assert sorted(ranks.tolist()) == sorted(gpus.tolist())
    # every phase of the ring: at most one flow from any pod to any other pod
    assert c_link(ring_allreduce(ranks, 1.0), SPEC) <= 1


def test_ring_arrangement_matches_eq42() -> None:
    P, N = 4, 6
    gpus = np.array([p * SPEC.gpus_per_pod + n for p in range(P) for n in range(N)])
    ranks = arrange_ring(gpus, SPEC)
    rank_of = {int(g): r for r, g in enumerate(ranks)}
    for p in range(P):
        for n in range(N):
            eq42 = p * N // 2 + n if n < N // 2 else N * P - 1 - (p * N // 2 + n - N // 2)
            assert rank_of[p * SPEC.gpus_per_pod + n] == eq42


def test_unarranged_ring_needs_more_links() -> None:
    gpus = np.array([0, 16, 1, 17, 2, 18])  # alternating pods
    assert c_link(ring_allreduce(gpus, 1.0), SPEC) == 3
    assert c_link(ring_allreduce(arrange_ring(gpus, SPEC), 1.0), SPEC) == 1


def _rail_table(ranks: np.ndarray, m: int) -> np.ndarray:
    table = np.full(SPEC.gpus, -1)
    table[ranks] = np.arange(ranks.size) % m
    return table


@settings(max_examples=60, deadline=None)
@given(placements(equal=True))
def test_lemma_a1_hierarchical_ring(gpus: np.ndarray) -> None:
    ranks, m = arrange_hierarchical_ring(gpus, SPEC)
    P = ranks.size // m
    rail = _rail_table(ranks, m)
    sched = hierarchical_ring(ranks, 1.0, m, alternate=True)
    # each rail is a ring over the pods: one flow per directed pod pair and phase
    assert c_link(sched, SPEC, plane=lambda s, d: rail[s]) <= 1
    if P >= 3 and m >= 2:
        # Eq. 43: rails 2k and 2k+1 run opposite ways, so one bidirectional link per pod pair
        # serves both ...
        assert c_link(sched, SPEC, plane=lambda s, d: rail[s] // 2) <= 1
        # ... which the same-direction rings cannot do
        same = hierarchical_ring(ranks, 1.0, m, alternate=False)
        assert c_link(same, SPEC, plane=lambda s, d: rail[s] // 2) == 2


def test_hierarchical_arrangement_needs_equal_pods() -> None:
    with pytest.raises(PreconditionError, match="same number"):
        arrange_hierarchical_ring([0, 1, 16], SPEC)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8, 16]), st.data())
def test_halving_doubling_arrangement_pairs_pods(P: int, c: int, data: st.DataObject) -> None:
    pods = data.draw(st.permutations(range(SPEC.pods)))[:P]
    gpus = np.array([p * SPEC.gpus_per_pod + j for p in pods for j in range(c)])
    ranks = arrange_halving_doubling(data.draw(st.permutations(gpus.tolist())), SPEC)
    assert sorted(ranks.tolist()) == sorted(gpus.tolist())
    for r in halving_doubling(ranks, 1.0):
        sp = r.flows.src // SPEC.gpus_per_pod
        dp = r.flows.dst // SPEC.gpus_per_pod
        for p in set(sp.tolist()):
            assert len(set(dp[sp == p].tolist()) - {p}) <= 1  # each pod talks to <= 1 pod
        assert max_flows_pod_to_pod(r.flows, SPEC) <= c


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_arrange_job_is_greedy_grid_fill(data: st.DataObject) -> None:
    tp = data.draw(st.sampled_from([1, 2, 4]))
    pp = data.draw(st.sampled_from([1, 2, 4]))
    dp = data.draw(st.integers(1, 6))
    n_blocks = pp * dp
    all_blocks = SPEC.gpus // tp
    blocks = data.draw(
        st.lists(st.integers(0, all_blocks - 1), min_size=n_blocks, max_size=n_blocks, unique=True)
    )
    gpus = np.concatenate([np.arange(b * tp, (b + 1) * tp) for b in blocks])
    job = Job(
        job_id=0,
        arrival_s=0.0,
        gpus=tp * pp * dp,
        model="Pangu",
        tp=tp,
        pp=pp,
        dp=dp,
        ep=tp,
        iterations=1,
        duration_s=1.0,
    )
    ranks = arrange_job(job, np.random.default_rng(0).permutation(gpus), SPEC)
    assert sorted(ranks.tolist()) == sorted(gpus.tolist())
    tp_groups = ranks.reshape(-1, tp)
    assert (tp_groups[:, 0] % tp == 0).all() and (np.diff(tp_groups, axis=1) == 1).all()
    pod_seq = tp_groups[:, 0] // SPEC.gpus_per_pod
    # pods appear in contiguous runs, in ascending order of their block counts
    runs = [int(p) for i, p in enumerate(pod_seq) if i == 0 or p != pod_seq[i - 1]]
    assert len(runs) == len(set(runs))
    counts = [int((pod_seq == p).sum()) for p in runs]
    assert counts == sorted(counts)
