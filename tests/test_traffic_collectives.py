"""Collectives: closed-form volumes, step structure, leaf-wise permutation, Eq. 44."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import PreconditionError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.collectives import (
    halving_doubling,
    halving_doubling_bytes,
    hierarchical_ring,
    hierarchical_ring_bytes,
    pairwise_all_to_all,
    pairwise_all_to_all_bytes,
    parameter_server,
    parameter_server_bytes,
    pipeline,
    pipeline_bytes,
    pod_all_to_all,
    pod_all_to_all_bytes,
    ring_allreduce,
    ring_allreduce_bytes,
)
from lumoscore.traffic.demand import is_leafwise_permutation

sizes = st.sampled_from([1.0, 3.0, 1024.0, 7.5e6])


def _groups(b: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.permutation(b * n * 3)[: b * n].reshape(b, n)


def _no_self(s) -> bool:
    return all((r.flows.src != r.flows.dst).all() for r in s)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), sizes, st.integers(1, 3), st.booleans())
def test_ring_closed_form(n: int, size: float, b: int, reverse: bool) -> None:
    s = ring_allreduce(_groups(b, n), size, reverse=reverse)
    assert len(s) == 2 * (n - 1)
    assert s.total_bytes == pytest.approx(ring_allreduce_bytes(n, size, b))
    assert _no_self(s)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), sizes, st.integers(1, 3))
def test_halving_doubling_closed_form(n: int, size: float, b: int) -> None:
    s = halving_doubling(_groups(b, n), size)
    L = n.bit_length() - 1
    M = 1 << L
    assert len(s) == (0 if n < 2 else 2 * L + 2 * (n > M))
    assert s.total_bytes == pytest.approx(halving_doubling_bytes(n, size, b))
    assert _no_self(s)
    # every rank of the power-of-two core sends S (1 - 1/M) in each half: a balanced algorithm
    if n >= 2:
        core = set(_groups(b, n)[:, :M].reshape(-1).tolist())
        sent = Counter()
        for r in s:
            if r.tag == "hd-rs":
                for x, y in zip(r.flows.src.tolist(), r.flows.bytes.tolist(), strict=True):
                    sent[x] += y
        assert set(sent) == core
        assert all(v == pytest.approx(size * (1 - 1 / M)) for v in sent.values())


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), sizes, st.integers(1, 3), st.booleans())
def test_hierarchical_ring_closed_form(m: int, G: int, size: float, b: int, alt: bool) -> None:
    n = m * G
    for variant in ("rails", "leader"):
        s = hierarchical_ring(_groups(b, n), size, m, alternate=alt, variant=variant)
        assert s.total_bytes == pytest.approx(hierarchical_ring_bytes(n, size, m, b))
        assert s.total_bytes == pytest.approx(ring_allreduce_bytes(n, size, b))
        assert _no_self(s)
    s = hierarchical_ring(_groups(b, n), size, m)
    assert len(s) == 2 * (m - 1) + 2 * (G - 1)


def test_hierarchical_ring_needs_divisible_groups() -> None:
    with pytest.raises(PreconditionError, match="group_size"):
        hierarchical_ring(list(range(6)), 1.0, 4)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), sizes, st.integers(1, 3))
def test_pairwise_all_to_all_closed_form_and_coverage(n: int, size: float, b: int) -> None:
    ranks = _groups(b, n)
    s = pairwise_all_to_all(ranks, size)
    assert len(s) == max(n - 1, 0)
    assert s.total_bytes == pytest.approx(pairwise_all_to_all_bytes(n, size, b))
    pairs = Counter(zip(s.merged().src.tolist(), s.merged().dst.tolist(), strict=True))
    expect = {(int(x), int(y)) for row in ranks for x in row for y in row if x != y}
    assert set(pairs) == expect and set(pairs.values()) <= {1}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 10), sizes)
def test_pod_all_to_all_closed_form_and_coverage(per_pod: int, pods: int, size: float) -> None:
    n = per_pod * pods
    ranks = np.arange(n)
    s = pod_all_to_all(ranks, size, per_pod)
    assert len(s) == n
    assert s.total_bytes == pytest.approx(pod_all_to_all_bytes(n, size))
    pairs = Counter(zip(s.merged().src.tolist(), s.merged().dst.tolist(), strict=True))
    assert len(pairs) == n * (n - 1) and set(pairs.values()) <= {1}


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.data())
def test_pod_all_to_all_eq44_one_gpu_per_destination_pod(pods: int, data: st.DataObject) -> None:
    # Eq. 44's guarantee: no two GPUs of one pod send to the same pod in one phase. It needs
    # N <= P (otherwise N GPUs cannot reach N distinct pods).
    per_pod = data.draw(st.integers(1, pods))
    spec = ClusterSpec(pods=pods, k_leaf=8, k_spine=4, tau=2, gpus_per_server=8)
    local = data.draw(
        st.lists(
            st.integers(0, spec.gpus_per_pod - 1), min_size=per_pod, max_size=per_pod, unique=True
        )
    )
    ranks = np.array([p * spec.gpus_per_pod + j for p in range(pods) for j in sorted(local)])
    for r in pod_all_to_all(ranks, 1.0, per_pod):
        sp = r.flows.src // spec.gpus_per_pod
        dp = r.flows.dst // spec.gpus_per_pod
        pairs = Counter(zip(sp.tolist(), dp.tolist(), strict=True))
        assert max(pairs.values()) == 1


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 6), sizes)
def test_pipeline_closed_form(pp: int, m: int, size: float) -> None:
    stages = np.arange(pp * m).reshape(pp, m) * 3
    s = pipeline(stages, size)
    assert len(s) == 2 * (pp - 1)
    assert s.total_bytes == pytest.approx(pipeline_bytes(pp, m, size))
    assert pipeline(stages, size, "forward").total_bytes == pytest.approx(
        pipeline_bytes(pp, m, size, directions=1)
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True),
    st.lists(st.integers(0, 30), min_size=1, max_size=4, unique=True),
    sizes,
)
def test_parameter_server_closed_form(workers: list[int], servers: list[int], size: float) -> None:
    s = parameter_server(workers, servers, size)
    assert s.total_bytes == pytest.approx(parameter_server_bytes(workers, servers, size))
    assert _no_self(s)


# ---- vClos §5.3: leaf-wise permutations on a leaf-spine with leaf-contiguous ranks ----------
SPEC = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=4)  # 16 leaves of 8


def _contiguous(data: st.DataObject) -> np.ndarray:
    first = data.draw(st.integers(0, SPEC.leaves - 1))
    count = data.draw(st.integers(1, SPEC.leaves - first))
    return np.arange(first * SPEC.k_leaf, (first + count) * SPEC.k_leaf)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_leafwise_permutation_ring_hd_alltoall(data: st.DataObject) -> None:
    ranks = _contiguous(data)
    for sched in (
        ring_allreduce(ranks, 1.0),
        ring_allreduce(ranks, 1.0, reverse=True),
        halving_doubling(ranks, 1.0),
        pairwise_all_to_all(ranks, 1.0),
    ):
        for r in sched:
            assert is_leafwise_permutation(r.flows, SPEC), r.tag


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_leafwise_permutation_pipeline(data: st.DataObject) -> None:
    ranks = _contiguous(data)
    divisors = [d for d in range(1, ranks.size + 1) if ranks.size % d == 0]
    pp = data.draw(st.sampled_from(divisors))
    for r in pipeline(ranks.reshape(pp, -1), 1.0):
        assert is_leafwise_permutation(r.flows, SPEC)


def test_scattered_ranks_break_leafwise_permutation() -> None:
    # ranks on leaves 0, 1, 2, 0: in step 2 GPUs 8 and 16 (both uplink 0) both reach leaf 0
    s = pairwise_all_to_all(np.array([0, 8, 16, 1]), 1.0)
    assert is_leafwise_permutation(s[0].flows, SPEC)
    assert not is_leafwise_permutation(s[1].flows, SPEC)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 70), size=st.floats(1.0, 1e6), groups=st.integers(1, 3))
def test_double_binary_tree_bytes_and_trees(n, size, groups):
    from lumoscore.traffic.collectives import (
        binary_tree_parents,
        double_binary_tree,
        double_binary_tree_bytes,
    )

    ranks = np.arange(n * groups).reshape(groups, n)
    s = double_binary_tree(ranks, size)
    assert s.total_bytes == pytest.approx(double_binary_tree_bytes(n, size, groups))
    leaves = []
    for shift in (0, 1):
        parent = binary_tree_parents(n, shift)
        assert (parent == -1).sum() == 1  # one root
        for i in range(n):  # every rank reaches the root
            seen, p = 0, i
            while parent[p] >= 0:
                p, seen = parent[p], seen + 1
                assert seen <= n
        assert np.bincount(parent[parent >= 0], minlength=n).max() <= 2  # binary
        leaves.append(set(range(n)) - set(parent.tolist()))
    assert len(leaves[0] & leaves[1]) <= 1  # a leaf of one tree is inside the other
    # the reduce rounds go up the trees, the broadcast rounds mirror them
    half = len(s) // 2
    for up, down in zip(s.rounds[:half], reversed(s.rounds[half:]), strict=True):
        pairs_up = zip(up.flows.src.tolist(), up.flows.dst.tolist(), strict=True)
        pairs_down = zip(down.flows.dst.tolist(), down.flows.src.tolist(), strict=True)
        assert sorted(pairs_up) == sorted(pairs_down)
