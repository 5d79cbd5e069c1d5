"""Rank arrangement (LumosCore A.5) and communication-domain arrangement (A.6).

Input is the set of GPUs a placement gave a job; every function first sorts them by GPU id,
which orders them by pod, then leaf, then server (:class:`~lumoscore.topology.ClusterSpec`
index arithmetic). Output is the same GPUs in RANK order: ``ranks[r]`` is the GPU of rank ``r``.

* :func:`arrange_ring` -- Eq. 42 generalised to unequal pods: the first half of every pod's GPUs
  in pod order, then the second halves in reverse (a "snake"). A ring over these ranks crosses
  between pods ``p`` and ``p+1`` once in each direction and nowhere else, so every phase has at
  most one flow per directed pod pair (Lemma A.1).
* :func:`arrange_hierarchical_ring` -- Eq. 43: pod-major ranks, groups = pods, to be run with
  ``hierarchical_ring(..., alternate=True)`` so that even rails go round the pods clockwise and
  odd rails counter-clockwise; rails ``2k`` and ``2k+1`` then use one optical link per pod pair
  in both directions.
* :func:`arrange_halving_doubling` -- the EFLOPS rank mapping (Dong et al. 2020) used by A.5.4:
  pod-major, larger pods first, leaf-contiguous inside a pod, so the short-distance steps stay
  inside leaves and pods and every long-distance step pairs each pod with few pods.
* :func:`arrange_job` -- A.6, the greedy PP x DP grid filling: TP groups (servers) are taken
  pod by pod, pods in ascending order of the job's servers in them, and fill the grid whose rows
  are DP domains (pipeline stages) and columns PP domains, left to right and top to bottom;
  that fill order IS the rank order of :mod:`lumoscore.traffic.iteration` (TP, DP, PP).

Examples
--------
>>> from lumoscore.topology.cluster import ClusterSpec
>>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)  # 8 GPUs per pod
>>> arrange_ring([0, 1, 2, 3, 8, 9, 10, 11], spec).tolist()
[0, 1, 8, 9, 11, 10, 3, 2]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.workload.job import Job

__all__ = [
    "arrange_halving_doubling",
    "arrange_hierarchical_ring",
    "arrange_job",
    "arrange_ring",
    "pod_counts",
]

IntArray = NDArray[np.int64]


def _sorted(gpus: ArrayLike, spec: ClusterSpec) -> IntArray:
    arr = np.asarray(list(gpus) if not isinstance(gpus, np.ndarray) else gpus)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"gpus must be integer GPU ids, got dtype {arr.dtype}")
    arr = np.sort(arr.astype(np.int64).reshape(-1))
    if arr.size and (arr[0] < 0 or arr[-1] >= spec.gpus):
        raise ConfigError(f"GPU ids must lie in [0, {spec.gpus}), got {arr[0]}..{arr[-1]}")
    if arr.size > 1 and (arr[1:] == arr[:-1]).any():
        raise ConfigError("gpus must be distinct")
    return arr


def pod_counts(gpus: ArrayLike, spec: ClusterSpec) -> tuple[IntArray, IntArray]:
    """Pods used by ``gpus`` and the number of GPUs in each: ``(pods, counts)``.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)
    >>> [a.tolist() for a in pod_counts([0, 1, 9, 30], spec)]
    [[0, 1, 3], [2, 1, 1]]
    """
    g = _sorted(gpus, spec)
    pods, counts = np.unique(g // spec.gpus_per_pod, return_counts=True)
    return pods, counts


def arrange_ring(gpus: ArrayLike, spec: ClusterSpec) -> IntArray:
    """Eq. 42 rank arrangement for a ring (any number of GPUs per pod).

    Pod ``p`` with ``c`` of the job's GPUs puts its first ``ceil(c/2)`` GPUs on the outbound
    path (pods in increasing order) and the rest on the return path (pods in decreasing order,
    GPUs reversed). With equal counts ``N`` per pod this is exactly
    ``G(pN + n) = pN/2 + n`` for ``n < N/2`` and ``NP - 1 - (pN/2 + n - N/2)`` otherwise.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)
    >>> arrange_ring([0, 1, 8, 16, 17, 18], spec).tolist()
    [0, 8, 16, 17, 18, 1]
    """
    g = _sorted(gpus, spec)
    if g.size == 0:
        return g
    pod = g // spec.gpus_per_pod
    _, start, counts = np.unique(pod, return_index=True, return_counts=True)
    local = np.arange(g.size) - np.repeat(start, counts)
    first = local < np.repeat((counts + 1) // 2, counts)
    return np.concatenate([g[first], g[~first][::-1]])


def arrange_hierarchical_ring(gpus: ArrayLike, spec: ClusterSpec) -> tuple[IntArray, int]:
    """Eq. 43 arrangement: pod-major ranks and the group size (GPUs per pod).

    Run the result with ``hierarchical_ring(ranks, S, group_size, alternate=True)``: local
    index ``n`` of every pod is rail ``n``; even rails visit the pods in order ``0, 1, ...``,
    odd rails in order ``0, P-1, P-2, ...`` (Eq. 43's ``P - p``).

    Raises
    ------
    PreconditionError
        If the pods hold different numbers of the job's GPUs.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)
    >>> ranks, m = arrange_hierarchical_ring([9, 8, 0, 1], spec)
    >>> ranks.tolist(), m
    ([0, 1, 8, 9], 2)
    """
    g = _sorted(gpus, spec)
    _, counts = np.unique(g // spec.gpus_per_pod, return_counts=True)
    if counts.size and (counts != counts[0]).any():
        raise PreconditionError(
            f"hierarchical ring needs the same number of GPUs in every pod, got counts "
            f"{counts.tolist()}"
        )
    return g, int(counts[0]) if counts.size else 0


def arrange_halving_doubling(gpus: ArrayLike, spec: ClusterSpec) -> IntArray:
    """EFLOPS-style arrangement for halving-doubling: pod-major, larger pods first.

    Pods are ordered by decreasing GPU count (ties by pod id), GPUs inside a pod by id (leaf by
    leaf). With power-of-two counts the pods form aligned binary blocks, so a step of distance
    ``d`` stays inside a pod when ``d`` is below the pod's count and otherwise pairs the pod's
    block with one aligned block of the same size.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)
    >>> arrange_halving_doubling([0, 1, 8, 9, 10, 11], spec).tolist()
    [8, 9, 10, 11, 0, 1]
    """
    g = _sorted(gpus, spec)
    if g.size == 0:
        return g
    pod = g // spec.gpus_per_pod
    pods, inv, counts = np.unique(pod, return_inverse=True, return_counts=True)
    rank_of_pod = np.empty(pods.size, np.int64)
    rank_of_pod[np.lexsort((pods, -counts))] = np.arange(pods.size)
    return g[np.lexsort((g, rank_of_pod[inv]))]


def arrange_job(job: Job, gpus: ArrayLike, spec: ClusterSpec) -> IntArray:
    """A.6 communication-domain arrangement: the job's GPUs in rank order (TP, DP, PP).

    The sorted GPUs are cut into TP groups of ``tp`` consecutive GPUs. Pods are sorted in
    ascending order of the job's TP groups in them (ties by pod id); TP groups then fill the
    ``pp x dp`` grid (row = DP domain = one pipeline stage, column = PP domain) left to right,
    top to bottom, taking every group of the first pod before the next pod.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> from lumoscore.workload import Job
    >>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=8, model="Pangu", tp=2, pp=2, dp=2, ep=2,
    ...           iterations=1, duration_s=1.0)
    >>> arrange_job(job, [0, 1, 2, 3, 4, 5, 8, 9], spec).tolist()   # pod 1 has fewer GPUs
    [8, 9, 0, 1, 2, 3, 4, 5]
    """
    g = _sorted(gpus, spec)
    if g.size != job.gpus:
        raise ConfigError(f"job {job.job_id}: got {g.size} GPUs, the job needs {job.gpus}")
    blocks = g.reshape(-1, job.tp)
    pod = blocks[:, 0] // spec.gpus_per_pod
    if (blocks[:, -1] // spec.gpus_per_pod != pod).any():
        raise PreconditionError(f"job {job.job_id}: a TP group of {job.tp} GPUs spans two pods")
    pods, inv, counts = np.unique(pod, return_inverse=True, return_counts=True)
    rank_of_pod = np.empty(pods.size, np.int64)
    rank_of_pod[np.lexsort((pods, counts))] = np.arange(pods.size)
    order = np.lexsort((blocks[:, 0], rank_of_pod[inv]))
    return blocks[order].reshape(-1)
