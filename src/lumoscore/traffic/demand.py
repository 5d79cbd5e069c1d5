"""Traffic against the topology: leaf-level cross-pod demand and contention checks.

* :func:`leaf_demand` -- the placed job's leaf-level cross-pod network requirement ``L1``
  (LumosCore §4.2.2, A.12): a symmetric ``leaves x leaves`` integer matrix of bidirectional
  leaf-to-leaf links.
* :func:`is_leafwise_permutation` -- vClos Definition 1 as used in its §5.3 proofs.
* :func:`max_flows_pod_to_pod` -- ``C_link`` of LumosCore A.5 for one phase (and
  :func:`c_link` for every phase of a schedule).

Examples
--------
>>> from lumoscore.topology.cluster import ClusterSpec
>>> from lumoscore.traffic.flows import Flows
>>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=2)  # 8 GPUs a pod
>>> max_flows_pod_to_pod(Flows.of([0, 1, 2], [8, 9, 0], 1.0), spec)
2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError
from lumoscore.npsets import unique
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.arrangement import arrange_job
from lumoscore.traffic.flows import Flows, Schedule
from lumoscore.traffic.iteration import iteration_flows, rank_grid
from lumoscore.workload.job import Job

__all__ = [
    "c_link",
    "is_leafwise_permutation",
    "leaf_demand",
    "max_flows_pod_to_pod",
    "research_pairs",
]

IntArray = NDArray[np.int64]
PlaneSpec = ArrayLike | Callable[[IntArray, IntArray], ArrayLike] | None


def _plane(plane: PlaneSpec, flows: Flows) -> IntArray:
    if plane is None:
        return np.zeros(len(flows), np.int64)
    arr = plane(flows.src, flows.dst) if callable(plane) else plane
    out = np.asarray(arr, dtype=np.int64).reshape(-1)
    if out.shape[0] != len(flows):
        raise ConfigError(f"plane must give one id per flow ({len(flows)}), got {out.shape[0]}")
    return out


def max_flows_pod_to_pod(flows: Flows, spec: ClusterSpec, plane: PlaneSpec = None) -> int:
    """``C_link`` of one phase: the most flows any pod sends to any other pod (A.5).

    ``C^t_ij`` counts the flows (weights included) from pod ``i`` to pod ``j != i``; the result
    is ``max_ij C^t_ij`` (0 without cross-pod flows). ``plane`` optionally splits the count by
    a per-flow plane id (an array, or a callable ``(src, dst) -> ids``), e.g. the rail pair of a
    hierarchical ring, and returns the maximum over planes too.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=2)
    >>> f = Flows.of([0, 1], [8, 9], 1.0)
    >>> max_flows_pod_to_pod(f, spec), max_flows_pod_to_pod(f, spec, plane=[0, 1])
    (2, 1)
    """
    if len(flows) == 0:
        return 0
    ps = flows.src // spec.gpus_per_pod
    pd = flows.dst // spec.gpus_per_pod
    cross = ps != pd
    if not cross.any():
        return 0
    pl = _plane(plane, flows)[cross]
    P = spec.pods
    code = (pl - pl.min()) * (P * P) + ps[cross] * P + pd[cross]
    _, inv = np.unique(code, return_inverse=True)
    return int(np.bincount(inv.reshape(-1), flows.weight[cross]).max())


def c_link(schedule: Schedule, spec: ClusterSpec, plane: PlaneSpec = None) -> int:
    """``C_link = max over phases t, pods i != j of C^t_ij`` for a whole schedule.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> from lumoscore.traffic.collectives import ring_allreduce
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=2)
    >>> c_link(ring_allreduce([0, 8, 1, 9], 1.0), spec)   # pod order 0 1 0 1: two 0 -> 1 flows
    2
    >>> c_link(ring_allreduce([0, 1, 9, 8], 1.0), spec)   # arranged: one flow each way
    1
    """
    return max((max_flows_pod_to_pod(r.flows, spec, plane) for r in schedule), default=0)


def is_leafwise_permutation(flows: Flows, spec: ClusterSpec) -> bool:
    """vClos Definition 1 (leaf-wise permutation), in the form its §5.3 proofs check.

    The phase must be a (partial) permutation -- every GPU sends at most one flow and receives
    at most one -- and, with source routing (a GPU on leaf port ``p = gpu mod k_leaf`` sends
    every cross-leaf flow up uplink ``p``), flows that leave through the same uplink index
    from different leaves reach different leaves, i.e. the pairs ``(src mod k_leaf,
    leaf(dst))`` of cross-leaf flows are distinct. Then no spine-to-leaf link carries two flows
    (Lemma 5.1): the phase is contention-free on a leaf-spine fabric.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=2)
    >>> is_leafwise_permutation(Flows.of([0, 4], [4, 8], 1.0), spec)
    True
    >>> is_leafwise_permutation(Flows.of([0, 4], [8, 9], 1.0), spec)  # uplink 0 twice to leaf 2
    False
    """
    if len(flows) == 0:
        return True
    if (flows.weight != 1).any():
        return False
    if unique(flows.src).size != len(flows) or unique(flows.dst).size != len(flows):
        return False
    k = spec.k_leaf
    cross = (flows.src // k) != (flows.dst // k)
    code = (flows.src[cross] % k) * spec.leaves + flows.dst[cross] // k
    return bool(unique(code).size == code.size)


def _symmetric(rows: IntArray, cols: IntArray, vals: IntArray, n: int, sparse: bool):
    m = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    m = (m + m.T).tocsr()
    m.sum_duplicates()
    return m if sparse else m.toarray().astype(np.int64)


def leaf_demand(
    job: Job,
    gpus: ArrayLike,
    spec: ClusterSpec,
    arranged: bool = True,
    *,
    method: Literal["research", "phases"] = "research",
    sparse: bool = False,
) -> NDArray[np.int64] | sp.csr_array:
    """Leaf-level cross-pod demand ``L1`` of a placed job (LumosCore §4.2.2, A.12).

    Parameters
    ----------
    job : Job
        The job.
    gpus : array of int
        The job's GPUs: in rank order (TP, DP, PP) when ``arranged`` is false, any order when
        it is true (:func:`~lumoscore.traffic.arrangement.arrange_job` orders them).
    spec : ClusterSpec
        The cluster.
    arranged : bool
        Apply the A.6 communication-domain arrangement first.
    method : {"research", "phases"}
        ``"research"`` -- the published research simulator's rule: every cross-pod leaf pair
        joined by a PP neighbour (same DP and TP index, consecutive stages) gets ``+tp`` links,
        every cross-pod leaf pair joined by a DP ring neighbour (same stage, consecutive DP
        index, wrap-around included) gets ``+ceil(tp/2)`` (the clockwise rails use the links one
        way, the counter-clockwise rails the other way); each pair counts once per job per rule
        (rounds reuse links by time multiplexing). ``"phases"`` -- A.12's exclusive link per
        concurrent flow: for every round of :func:`~lumoscore.traffic.iteration.iteration_flows`
        the links a leaf pair needs are ``max(flows a->b, flows b->a)`` over its cross-pod flows,
        and ``L1`` is the maximum over rounds (expert traffic included when it crosses pods).
    sparse : bool
        Return a ``scipy.sparse.csr_array`` instead of a dense array.

    Returns
    -------
    ndarray or csr_array
        Symmetric ``(leaves, leaves)`` int matrix, zero on the diagonal and inside pods.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> from lumoscore.workload import Job
    >>> spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2)   # 8 leaves of 16 GPUs a pod
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=32, model="Pangu", tp=8, pp=2, dp=2, ep=8,
    ...           iterations=1, duration_s=1.0)
    >>> gpus = [*range(0, 16), *range(128, 144)]          # leaf 0 (pod 0), leaf 8 (pod 1)
    >>> L = leaf_demand(job, gpus, spec, arranged=False)
    >>> int(L[0, 8]), int(L[8, 0]), int(L.sum())            # PP joins leaf 0 and leaf 8
    (8, 8, 16)
    >>> int(leaf_demand(job, gpus, spec, arranged=False, method="phases")[0, 8])  # 2 x 8 sends
    16
    """
    if method not in ("research", "phases"):
        raise ConfigError(f"method must be 'research' or 'phases', got {method!r}")
    order = arrange_job(job, gpus, spec) if arranged else gpus
    n = spec.leaves
    if method == "phases":
        sched = iteration_flows(job, order, spec, aggregate=False)
        rows, vals = [], []
        for r in sched:
            f = r.flows
            cross = (f.src // spec.gpus_per_pod) != (f.dst // spec.gpus_per_pod)
            if not cross.any():
                continue
            a = f.src[cross] // spec.k_leaf
            b = f.dst[cross] // spec.k_leaf
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            fwd = (a == lo).astype(np.int64)
            code = lo * n + hi
            u, inv = np.unique(code, return_inverse=True)
            inv = inv.reshape(-1)
            w = f.weight[cross]
            up = np.bincount(inv, w * fwd, u.size)
            down = np.bincount(inv, w * (1 - fwd), u.size)
            rows.append(u)
            vals.append(np.maximum(up, down).astype(np.int64))
        if not rows:
            return _symmetric(*(np.zeros(0, np.int64),) * 3, n, sparse)
        code = np.concatenate(rows)
        val = np.concatenate(vals)
        o = np.lexsort((-val, code))
        code, val = code[o], val[o]
        first = np.ones(code.size, bool)
        first[1:] = code[1:] != code[:-1]
        code, val = code[first], val[first]
        return _symmetric(code // n, code % n, val, n, sparse)

    code, val, _ = research_pairs(job, rank_grid(job, order), spec)
    return _symmetric(code // n, code % n, val, n, sparse)


def research_pairs(
    job: Job, grid: IntArray, spec: ClusterSpec
) -> tuple[IntArray, IntArray, NDArray[np.bool_]]:
    """The ``research`` rule of :func:`leaf_demand` as upper-triangle entries: codes
    ``a * leaves + b`` (``a < b``, ascending) of the cross-pod leaf pairs, their link counts,
    and whether a pipeline neighbour joins the pair (``+tp``; otherwise only the DP ring).

    ``grid`` is the job's rank grid (:func:`~lumoscore.traffic.iteration.rank_grid` of its GPUs
    in rank order).

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> from lumoscore.traffic.iteration import rank_grid
    >>> from lumoscore.workload import Job
    >>> spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2)
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=32, model="Pangu", tp=8, pp=2, dp=2, ep=8,
    ...           iterations=1, duration_s=1.0)
    >>> grid = rank_grid(job, [*range(0, 16), *range(128, 144)])
    >>> [x.tolist() for x in research_pairs(job, grid, spec)]
    [[8], [8], [True]]
    """
    n = spec.leaves
    leaf = grid[:, :, 0] // spec.k_leaf  # (pp, dp): leaf of every TP group
    pod = leaf // spec.leaves_per_pod
    codes, vals = [], []
    n_pp = 0
    if job.pp > 1:
        a, b = leaf[:-1].reshape(-1), leaf[1:].reshape(-1)
        cross = pod[:-1].reshape(-1) != pod[1:].reshape(-1)
        a, b = a[cross], b[cross]
        code = unique(np.minimum(a, b) * n + np.maximum(a, b))
        codes.append(code)
        vals.append(np.full(code.size, job.tp, np.int64))
        n_pp = code.size
    if job.dp > 1:
        a, b = leaf.reshape(-1), np.roll(leaf, -1, axis=1).reshape(-1)
        cross = (pod != np.roll(pod, -1, axis=1)).reshape(-1)
        a, b = a[cross], b[cross]
        code = unique(np.minimum(a, b) * n + np.maximum(a, b))
        codes.append(code)
        vals.append(np.full(code.size, -(-job.tp // 2), np.int64))
    if not codes:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0, bool)
    if len(codes) == 1:
        return codes[0], vals[0], np.full(codes[0].size, n_pp > 0)
    code, inv = np.unique(np.concatenate(codes), return_inverse=True)
    inv = inv.reshape(-1)
    val = np.bincount(inv, weights=np.concatenate(vals), minlength=code.size).astype(np.int64)
    is_pp = np.zeros(code.size, bool)
    is_pp[inv[:n_pp]] = True
    return code, val, is_pp
