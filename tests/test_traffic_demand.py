"""Leaf-level cross-pod demand L1 and the contention checks, against plain-Python references."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.arrangement import arrange_job
from lumoscore.traffic.demand import is_leafwise_permutation, leaf_demand, max_flows_pod_to_pod
from lumoscore.traffic.flows import Flows
from lumoscore.traffic.iteration import iteration_flows
from lumoscore.workload.job import Job

SPEC = ClusterSpec(pods=4, k_leaf=16, k_spine=8, tau=2, gpus_per_server=8)  # 4 leaves a pod


@st.composite
def placed_jobs(draw: st.DrawFn):
    pp = draw(st.sampled_from([1, 2, 3, 4]))
    dp = draw(st.integers(1, 6))
    servers = pp * dp
    ep = draw(st.sampled_from([e for e in (8, 16) if (8 * servers) % e == 0]))
    job = Job(
        job_id=0,
        arrival_s=0.0,
        gpus=8 * servers,
        model="GPT2_13b",
        tp=8,
        pp=pp,
        dp=dp,
        ep=ep,
        iterations=5,
        duration_s=50.0,
    )
    picked = draw(st.permutations(range(SPEC.servers)))[:servers]
    gpus = (np.array(picked)[:, None] * 8 + np.arange(8)).reshape(-1)
    return job, gpus


def _research_reference(job: Job, ranks: np.ndarray) -> np.ndarray:
    grid = ranks.reshape(job.pp, job.dp, job.tp)
    leaf = lambda g: int(g) // SPEC.k_leaf  # noqa: E731
    pod = lambda lf: lf // SPEC.leaves_per_pod  # noqa: E731
    pp_pairs, dp_pairs = set(), set()
    for s in range(job.pp):
        for d in range(job.dp):
            a = leaf(grid[s, d, 0])
            if s + 1 < job.pp:
                b = leaf(grid[s + 1, d, 0])
                if pod(a) != pod(b):
                    pp_pairs.add(frozenset((a, b)))
            if job.dp > 1:
                b = leaf(grid[s, (d + 1) % job.dp, 0])
                if pod(a) != pod(b):
                    dp_pairs.add(frozenset((a, b)))
    L = np.zeros((SPEC.leaves, SPEC.leaves), np.int64)
    for pairs, links in ((pp_pairs, job.tp), (dp_pairs, (job.tp + 1) // 2)):
        for pr in pairs:
            a, b = sorted(pr)
            L[a, b] += links
            L[b, a] += links
    return L


def _phases_reference(job: Job, ranks: np.ndarray) -> np.ndarray:
    L = np.zeros((SPEC.leaves, SPEC.leaves), np.int64)
    for r in iteration_flows(job, ranks, SPEC, aggregate=False):
        c: Counter[tuple[int, int]] = Counter()
        for s, d in zip(r.flows.src.tolist(), r.flows.dst.tolist(), strict=True):
            if s // SPEC.gpus_per_pod != d // SPEC.gpus_per_pod:
                c[s // SPEC.k_leaf, d // SPEC.k_leaf] += 1
        for (a, b), n in c.items():
            need = max(n, c.get((b, a), 0))
            L[a, b] = max(L[a, b], need)
    return L


@settings(max_examples=50, deadline=None)
@given(placed_jobs(), st.booleans())
def test_research_rule_matches_reference(case, arranged: bool) -> None:
    job, gpus = case
    L = leaf_demand(job, gpus, SPEC, arranged=arranged)
    ranks = arrange_job(job, gpus, SPEC) if arranged else gpus
    assert np.array_equal(L, _research_reference(job, ranks))
    assert np.array_equal(L, L.T) and (np.diag(L) == 0).all()
    pods = np.arange(SPEC.leaves) // SPEC.leaves_per_pod
    assert (L[pods[:, None] == pods[None, :]] == 0).all()
    sparse = leaf_demand(job, gpus, SPEC, arranged=arranged, sparse=True)
    assert np.array_equal(sparse.toarray(), L)


@settings(max_examples=30, deadline=None)
@given(placed_jobs(), st.booleans())
def test_phases_method_matches_reference(case, arranged: bool) -> None:
    job, gpus = case
    L = leaf_demand(job, gpus, SPEC, arranged=arranged, method="phases")
    ranks = arrange_job(job, gpus, SPEC) if arranged else gpus
    assert np.array_equal(L, _phases_reference(job, ranks))
    assert np.array_equal(L, L.T)


def test_arranged_equals_explicit_arrangement() -> None:
    job = Job(
        job_id=0,
        arrival_s=0.0,
        gpus=128,
        model="Pangu",
        tp=8,
        pp=4,
        dp=4,
        ep=16,
        iterations=1,
        duration_s=1.0,
    )
    gpus = np.concatenate([np.arange(0, 112), np.arange(128, 144)])  # 14 servers + 2 servers
    a = leaf_demand(job, gpus, SPEC, arranged=True)
    b = leaf_demand(job, arrange_job(job, gpus, SPEC), SPEC, arranged=False)
    assert np.array_equal(a, b) and a.sum() > 0
    with pytest.raises(ConfigError, match="method"):
        leaf_demand(job, gpus, SPEC, method="ilp")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, SPEC.gpus - 1), st.integers(0, SPEC.gpus - 1), st.integers(1, 3)),
        max_size=40,
    )
)
def test_max_flows_pod_to_pod_reference(rows) -> None:
    src = [s for s, _, _ in rows]
    dst = [d for _, d, _ in rows]
    f = Flows.of(src, dst, 1.0, [w for *_, w in rows]) if rows else Flows.empty()
    c: dict[tuple[int, int], int] = defaultdict(int)
    for s, d, w in rows:
        if s // SPEC.gpus_per_pod != d // SPEC.gpus_per_pod:
            c[s // SPEC.gpus_per_pod, d // SPEC.gpus_per_pod] += w
    assert max_flows_pod_to_pod(f, SPEC) == max(c.values(), default=0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, SPEC.gpus - 1), st.integers(0, SPEC.gpus - 1)), max_size=30)
)
def test_leafwise_permutation_reference(rows) -> None:
    f = Flows.of([s for s, _ in rows], [d for _, d in rows], 1.0) if rows else Flows.empty()
    srcs = [s for s, _ in rows]
    dsts = [d for _, d in rows]
    perm = len(set(srcs)) == len(srcs) and len(set(dsts)) == len(dsts)
    k = SPEC.k_leaf
    keys = [(s % k, d // k) for s, d in rows if s // k != d // k]
    expect = perm and len(set(keys)) == len(keys)
    assert is_leafwise_permutation(f, SPEC) == expect
