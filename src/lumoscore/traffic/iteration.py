"""One training iteration of a placed LLM job as rounds of flows (``WORKLOAD.md``).

Rank layout
-----------
``gpus[r]`` is the GPU of rank ``r``; ranks are laid out TP fastest, then DP, then PP::

    r = t + tp * (d + dp * s)        t: TP index, d: DP index, s: pipeline stage

so ``gpus.reshape(pp, dp, tp)[s, d, t]`` is the GPU of (stage ``s``, DP index ``d``, TP index
``t``). An expert-parallel group is a block of ``ep`` consecutive ranks (``ep`` counts GPUs).

Rounds (a barrier after each; the research simulator's order)
-------------------------------------------------------------
1. ``pp-1`` rounds ``"pp"``: forward sends of stage ``s`` to ``s+1`` (``s = 0..pp-2``).
2. ``pp-2`` rounds ``"dp+pp"``: for ``s = pp-1 .. 2``, the backward send of stage ``s`` to
   ``s-1`` together with the data-parallel all-reduce of stage ``s`` (its gradients are ready).
3. one round ``"ep"``: the expert all-to-all of every EP group.
4. the last ``"dp+pp"`` round: backward send of stage 1 to 0 and the all-reduce of stage 1.
5. the last ``"dp"`` round: the all-reduce of stage 0.

A round whose classes all have parallel degree 1 is left out (``pp = 1``: no pipeline rounds;
``dp = 1``: no all-reduce; ``ep <= tp``: no expert round); with none left, the iteration is one
compute-only round. The job's compute time is split evenly over the rounds.

Inside a round each class is one concurrent set of flows (a collective's steps are merged into
one round, as the research simulator did):

* data parallel -- the stage's all-reduce runs on each of the ``tp`` rails (the ``dp`` GPUs with
  the same TP index): ``"ring"`` and ``"hierarchical-ring"`` (whose intra-server parts stay on
  NVLink, leaving exactly the rail rings on the network) send to the next DP rank on even rails
  (clockwise) and to the previous one on odd rails (counter-clockwise); ``"halving-doubling"``
  and ``"all-to-all"`` use every step of :func:`~lumoscore.traffic.collectives.halving_doubling`
  / :func:`~lumoscore.traffic.collectives.pairwise_all_to_all` on each rail;
* pipeline -- every GPU of the stage sends to the same position of the neighbouring stage;
* expert -- ``ep_pattern="all-pairs"`` (default): every GPU sends to every other GPU of its EP
  group (all steps of the pairwise all-to-all at once); ``"one-stage"``: the research
  simulator's single stage (rank ``i`` to ``i + tp`` in its group) carrying the whole volume.

Volumes
-------
Flows between GPUs of one server stay off the network (NVLink) and are dropped. On the ideal
network (every NIC at ``port_gbps``, non-blocking core) a round lasts as long as its most loaded
NIC needs (:func:`~lumoscore.traffic.flows.ideal_round_s`). Each class's sizes are scaled so
that, alone, it takes its exposed time: DP ``share_dp * T / pp`` per stage, PP
``share_pp * T / (2 (pp-1))`` per send, EP ``share_ep * T``, with ``T`` the ideal iteration time.
In a ``"dp+pp"`` round every sender of the stage carries one DP and one PP flow, so the round
lasts the sum, and over the iteration::

    sum(round ideal_s) = (share_dp + share_ep + share_pp) * T,   sum(compute_s) = compute_s(job)

Exposed time the ideal network does not spend on the wire (a class whose traffic stays inside
servers, or classes whose busiest NICs differ) is added to the round's ``compute_s`` so the
iteration still takes ``T``.

Examples
--------
>>> from lumoscore.topology.cluster import ClusterSpec
>>> from lumoscore.workload import Job
>>> spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2)
>>> job = Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=16,
...           iterations=10, duration_s=1000.0)
>>> sched = iteration_flows(job, list(range(64)), spec, aggregate=False)
>>> [r.tag for r in sched]
['pp', 'ep', 'dp+pp', 'dp']
>>> round(sum(r.ideal_s for r in sched) + sched.compute_s, 9) == job.iteration_s
True
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.jit import cached_jit
from lumoscore.registry import Registry
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.collectives import (
    double_binary_tree,
    halving_doubling,
    pairwise_all_to_all,
)
from lumoscore.traffic.flows import Flows, Round, Schedule
from lumoscore.workload.job import REFERENCE_PORT_GBPS, Job

__all__ = [
    "DP_COLLECTIVES",
    "all_to_all_steps",
    "alternating_rings",
    "class_times_s",
    "double_binary_tree_steps",
    "halving_doubling_steps",
    "iteration_flows",
    "rank_grid",
]

IntArray = NDArray[np.int64]
AggregateKey = Literal["leaf", "server", "gpu"]
EpPattern = Literal["all-pairs", "one-stage"]
#: Order of the classes in a round's tag.
_CLASS_ORDER = ("dp", "ep", "pp")
#: One class's unit-size flows in a round: (class, src, dst, sizes or None for all ones).
_Part = tuple[str, IntArray, IntArray, NDArray[np.float64] | None]


def rank_grid(job: Job, gpus: ArrayLike) -> IntArray:
    """GPU of every (stage, DP index, TP index): ``gpus.reshape(pp, dp, tp)``.

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> job = Job(job_id=1, arrival_s=0.0, gpus=16, model="Pangu", tp=8, pp=2, dp=1, ep=8,
    ...           iterations=1, duration_s=1.0)
    >>> rank_grid(job, range(16))[1, 0, :3].tolist()
    [8, 9, 10]
    """
    arr = np.asarray(list(gpus) if not isinstance(gpus, np.ndarray) else gpus)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"gpus must be integer GPU ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False).reshape(-1)
    if arr.shape[0] != job.gpus:
        raise ConfigError(f"job {job.job_id}: got {arr.shape[0]} GPUs, the job needs {job.gpus}")
    ids = np.sort(arr)
    if ids.size > 1 and (ids[1:] == ids[:-1]).any():
        raise ConfigError(f"job {job.job_id}: gpus must be distinct")
    return arr.reshape(job.pp, job.dp, job.tp)


def checked_grid(
    job: Job, gpus: ArrayLike, spec: ClusterSpec, *, key: str, port_gbps: float
) -> IntArray:
    """The job's rank grid (:func:`rank_grid`) after checking a traffic model's inputs: GPU
    ids inside the cluster, an aggregation ``key`` and a positive ``port_gbps``."""
    grid = rank_grid(job, gpus)
    flat = grid.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= spec.gpus):
        raise ConfigError(f"job {job.job_id}: GPU ids must lie in [0, {spec.gpus})")
    if key not in ("leaf", "server", "gpu"):
        raise ConfigError(f"key must be 'leaf', 'server' or 'gpu', got {key!r}")
    if not (port_gbps > 0):
        raise ConfigError(f"port_gbps must be > 0, got {port_gbps!r}")
    return grid


def class_times_s(job: Job) -> dict[str, float]:
    """Exposed time of each class on the ideal network, per round it occupies.

    ``dp``: one stage's all-reduce, ``pp``: one send between two stages, ``ep``: the expert
    round.

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=16,
    ...           iterations=10, duration_s=1000.0)
    >>> {k: round(v, 6) for k, v in class_times_s(job).items()}
    {'dp': 3.45, 'pp': 0.385, 'ep': 25.5}
    """
    sh = job.effective_shares
    T = job.iteration_s
    return {
        "dp": sh.dp * T / job.pp,
        "pp": sh.pp * T / (2 * (job.pp - 1)) if job.pp > 1 else 0.0,
        "ep": sh.ep * T,
    }


def _ep_pattern(
    job: Job, gpus: IntArray, pattern: EpPattern
) -> tuple[IntArray, IntArray, NDArray[np.float64] | None]:
    """Unit-size expert flows (``None`` sizes mean all ones)."""
    ep = min(job.ep, job.gpus)
    if job.gpus % ep:
        raise PreconditionError(
            f"job {job.job_id}: ep={job.ep} must divide gpus={job.gpus} (EP groups are blocks "
            f"of ep consecutive ranks)"
        )
    groups = gpus.reshape(-1, ep)
    if pattern == "one-stage":
        src = groups.reshape(-1)
        dst = np.roll(groups, -job.tp, axis=1).reshape(-1)
        return src, dst, None
    if pattern != "all-pairs":
        raise ConfigError(f"ep_pattern must be 'all-pairs' or 'one-stage', got {pattern!r}")
    n = ep
    g = groups.shape[0]
    # every (i, i + t mod n) for t = 1..n-1, built at once
    offs = np.arange(1, n)
    pos = np.arange(n)
    dst_pos = (pos[None, :] + offs[:, None]) % n  # (n-1, n)
    src = np.broadcast_to(groups[:, None, :], (g, n - 1, n)).reshape(-1)
    dst = groups[:, dst_pos].reshape(-1)
    return src, dst, None


def iteration_flows(
    job: Job,
    gpus: ArrayLike,
    spec: ClusterSpec,
    aggregate: bool = True,
    *,
    key: AggregateKey = "leaf",
    ep_pattern: EpPattern = "all-pairs",
    port_gbps: float = REFERENCE_PORT_GBPS,
) -> Schedule:
    """Rounds of flows of one iteration of ``job`` placed on ``gpus`` (in rank order).

    Parameters
    ----------
    job : Job
        The job (parallel degrees, collective, exposed shares, ideal iteration time).
    gpus : array of int
        GPU of every rank (TP fastest, then DP, then PP; see the module docstring). Use
        :func:`lumoscore.traffic.arrangement.arrange_job` to order a placement's GPUs.
    spec : ClusterSpec
        The cluster (servers, leaves).
    aggregate : bool
        Merge each round's flows with :func:`~lumoscore.traffic.flows.aggregate` by ``key``.
    key : {"leaf", "server", "gpu"}
        Aggregation level: rows become (node, node, bytes, weight) with node = the GPU's leaf,
        its server, or the GPU itself. Node-level rows keep the load of every link above the
        NICs exact but forget which flows share a NIC (in ``"dp+pp"`` rounds a sender carries
        one DP and one PP flow); :attr:`Round.ideal_s` is always computed on GPU-level flows.
    ep_pattern : {"all-pairs", "one-stage"}
        Expert all-to-all traffic (see the module docstring).
    port_gbps : float
        NIC speed of the ideal network the volumes are sized for.

    Returns
    -------
    Schedule
        Rounds with flows, compute seconds, tag (``"pp"``, ``"dp+pp"``, ``"ep"``, ``"dp"``) and
        ideal communication time.

    Examples
    --------
    >>> from lumoscore.topology.cluster import ClusterSpec
    >>> from lumoscore.workload import Job
    >>> spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2)
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=32, model="Pangu", tp=8, pp=1, dp=4, ep=8,
    ...           iterations=10, duration_s=100.0)
    >>> s = iteration_flows(job, range(32), spec)
    >>> [r.tag for r in s], s[0].flows.src.tolist(), s[0].flows.weight.tolist()
    (['dp'], [0, 0, 1, 1], [8, 8, 8, 8])
    """
    grid = checked_grid(job, gpus, spec, key=key, port_gbps=port_gbps)
    flat = grid.reshape(-1)
    gps = spec.gpus_per_server
    times = class_times_s(job)
    pp, dp = job.pp, job.dp
    has_ep = job.ep > job.tp

    # Every class's unit-size flows, built for all stages at once (views of small arrays).
    stage_rows = grid.reshape(pp, -1)
    dp_parts = _dp_patterns(job, grid) if dp > 1 else []

    # parts per round, in the research simulator's order
    plan: list[list[_Part]] = [
        [("pp", stage_rows[s], stage_rows[s + 1], None)] for s in range(pp - 1)
    ]

    def back_round(s: int) -> list[_Part]:
        parts: list[_Part] = []
        if dp > 1:
            parts.append(("dp", *dp_parts[s]))
        if s >= 1:
            parts.append(("pp", stage_rows[s], stage_rows[s - 1], None))
        return parts

    for s in range(pp - 1, 1, -1):
        plan.append(back_round(s))
    if has_ep:
        ep_src, ep_dst, ep_unit = _ep_pattern(job, flat, ep_pattern)
        plan.append([("ep", ep_src, ep_dst, ep_unit)])
    if pp >= 2:
        plan.append(back_round(1))
    if dp > 1:
        plan.append(back_round(0))
    plan = [p for p in plan if p]

    if not plan:
        return Schedule((Round(Flows.empty(), job.iteration_s, "compute", 0.0),))
    compute_each = job.compute_s / len(plan)

    # One compiled pass over all rounds: drop intra-server flows, size each class to its
    # exposed time, the round's ideal time, and (optionally) the aggregation.
    parts = [part for rnd in plan for part in rnd]
    part_ptr = np.fromiter(
        accumulate((part[1].shape[0] for part in parts), initial=0), np.int64, len(parts) + 1
    )
    unit = np.ones(int(part_ptr[-1]))
    for i, part in enumerate(parts):
        if part[3] is not None:
            unit[part_ptr[i] : part_ptr[i + 1]] = part[3]
    round_ptr = np.fromiter(
        accumulate((len(rnd) for rnd in plan), initial=0), np.int64, len(plan) + 1
    )
    per_node = {"leaf": spec.k_leaf, "server": gps, "gpu": 1}[key]
    out_src, out_dst, out_bytes, out_weight, out_ptr, ideal = _size_rounds(
        np.concatenate([part[1] for part in parts]),
        np.concatenate([part[2] for part in parts]),
        unit,
        part_ptr,
        np.array([times[part[0]] for part in parts], dtype=np.float64),
        round_ptr,
        gps,
        float(port_gbps),
        per_node if aggregate else 0,
        spec.gpus,
    )
    bounds = out_ptr.tolist()
    ideals = ideal.tolist()
    kinds: dict[tuple[str, ...], tuple[str, float]] = {}  # classes -> (tag, exposed time)
    rounds: list[Round] = []
    for r, rnd in enumerate(plan):
        classes = tuple(part[0] for part in rnd)
        kind = kinds.get(classes)
        if kind is None:
            budget = 0.0
            for cls in classes:
                budget += times[cls]
            tag = "+".join(sorted(set(classes), key=_CLASS_ORDER.index))
            kind = kinds[classes] = (tag, budget)
        lo, hi = bounds[r], bounds[r + 1]
        flows = Flows._unchecked(
            out_src[lo:hi], out_dst[lo:hi], out_bytes[lo:hi], out_weight[lo:hi]
        )
        tag, budget = kind
        rounds.append(Round(flows, compute_each + max(budget - ideals[r], 0.0), tag, ideals[r]))
    return Schedule(tuple(rounds))


@cached_jit
def _size_rounds(
    src: IntArray,
    dst: IntArray,
    unit: NDArray[np.float64],
    part_ptr: IntArray,
    target_s: NDArray[np.float64],
    round_ptr: IntArray,
    gps: int,
    port_gbps: float,
    per_node: int,
    n_gpus: int,
) -> tuple[
    IntArray, IntArray, NDArray[np.float64], IntArray, IntArray, NDArray[np.float64]
]:  # pragma: no cover - compiled
    """Every round's network flows, sized, with the round's ideal time (compiled).

    Part ``p`` holds rows ``part_ptr[p]:part_ptr[p+1]`` of unit-size flows of one class, to
    last ``target_s[p]`` alone on the ideal network; round ``r`` is parts
    ``round_ptr[r]:round_ptr[r+1]``. Intra-server rows are dropped; each part (with a
    positive target and rows left) is scaled by ``target / ideal_round_s(part)``; the round's
    ideal time is :func:`ideal_round_s` of its parts together. ``per_node > 0`` aggregates
    each round's rows by ``(g // per_node)`` node ids as :func:`aggregate` does (sorted by
    ``(src, dst, bytes)``, equal rows merged). Sums run in row order, as ``np.bincount``
    does, so every value is bit-identical to the NumPy formulation. Returns the rows of all
    rounds (``out_ptr`` delimits them) and each round's ideal time.
    """
    n_rows = src.size
    n_rounds = round_ptr.size - 1
    denom = port_gbps * 1e9
    sent = np.zeros(n_gpus)
    recv = np.zeros(n_gpus)
    buf_src = np.empty(n_rows, np.int64)
    buf_dst = np.empty(n_rows, np.int64)
    buf_bytes = np.empty(n_rows)
    out_src = np.empty(n_rows, np.int64)
    out_dst = np.empty(n_rows, np.int64)
    out_bytes = np.empty(n_rows)
    out_weight = np.empty(n_rows, np.int64)
    out_ptr = np.zeros(n_rounds + 1, np.int64)
    ideal = np.zeros(n_rounds)
    m = 0  # rows written to out
    for r in range(n_rounds):
        n = np.int64(0)  # rows of this round in buf (no literal: one compile of _peak_load)
        for p in range(round_ptr[r], round_ptr[r + 1]):
            lo, hi = part_ptr[p], part_ptr[p + 1]
            first = n
            for i in range(lo, hi):
                if src[i] // gps != dst[i] // gps:
                    buf_src[n] = src[i]
                    buf_dst[n] = dst[i]
                    buf_bytes[n] = unit[i]
                    n += 1
            target = target_s[p]
            if target <= 0.0 or n == first:
                n = first  # the part adds nothing
                continue
            peak = _peak_load(buf_src, buf_dst, buf_bytes, first, n, sent, recv)
            factor = target / (peak * 8.0 / denom)
            for i in range(first, n):
                buf_bytes[i] = buf_bytes[i] * factor
        if n > 0:
            # (np.int64: a literal 0 would compile _peak_load once more)
            ideal[r] = (
                _peak_load(buf_src, buf_dst, buf_bytes, np.int64(0), n, sent, recv) * 8.0 / denom
            )
        if per_node == 0 or n == 0:
            for i in range(n):
                out_src[m + i] = buf_src[i]
                out_dst[m + i] = buf_dst[i]
                out_bytes[m + i] = buf_bytes[i]
                out_weight[m + i] = 1
            m += n
        else:
            if per_node == 1:
                node_src, node_dst = buf_src[:n], buf_dst[:n]
            else:
                node_src, node_dst = buf_src[:n] // per_node, buf_dst[:n] // per_node
            order = _lex_order(node_src, node_dst, buf_bytes[:n])
            for j in range(n):
                i = order[j]
                if (
                    j == 0
                    or node_src[i] != out_src[m - 1]
                    or node_dst[i] != out_dst[m - 1]
                    or buf_bytes[i] != out_bytes[m - 1]
                ):
                    out_src[m] = node_src[i]
                    out_dst[m] = node_dst[i]
                    out_bytes[m] = buf_bytes[i]
                    out_weight[m] = 1
                    m += 1
                else:
                    out_weight[m - 1] += 1
        out_ptr[r + 1] = m
    return out_src, out_dst, out_bytes, out_weight, out_ptr, ideal


@cached_jit(internal=True)
def _lex_order(
    src: IntArray, dst: IntArray, size: NDArray[np.float64]
) -> IntArray:  # pragma: no cover - compiled
    """Rows in ``(src, dst, size)`` order (``np.lexsort((size, dst, src))`` up to the order
    of equal rows, which the caller merges): a counting sort by ``src`` (small ids), then
    each source's rows sorted by ``(dst, size)`` (insertion sort, heap sort when long).
    Hand-written rather than ``np.argsort``, which takes Numba many seconds to compile."""
    n = src.size
    lo, hi = src.min(), src.max()
    starts = np.zeros(hi - lo + 2, np.int64)
    for i in range(n):
        starts[src[i] - lo + 1] += 1
    for v in range(1, hi - lo + 2):
        starts[v] += starts[v - 1]
    fill = starts[:-1].copy()
    order = np.empty(n, np.int64)
    for i in range(n):
        v = src[i] - lo
        order[fill[v]] = i
        fill[v] += 1
    for v in range(hi - lo + 1):
        a, e = starts[v], starts[v + 1]
        if e - a > 32:
            _heap_sort(order, a, e, dst, size)
            continue
        for j in range(a + 1, e):  # stable insertion sort of a short run
            x = order[j]
            k = j - 1
            while k >= a and (
                dst[order[k]] > dst[x] or (dst[order[k]] == dst[x] and size[order[k]] > size[x])
            ):
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = x
    return order


@cached_jit(internal=True)
def _heap_sort(
    order: IntArray, a: int, e: int, dst: IntArray, size: NDArray[np.float64]
) -> None:  # pragma: no cover - compiled
    """Sort ``order[a:e]`` by ``(dst, size)`` of the rows it names (in place, not stable)."""
    n = e - a
    for start in range(n // 2 - 1, -1, -1):
        _sift_down(order, a, start, n, dst, size)
    for end in range(n - 1, 0, -1):
        order[a], order[a + end] = order[a + end], order[a]
        _sift_down(order, a, np.int64(0), end, dst, size)  # (no literal: one compile)


@cached_jit(internal=True)
def _sift_down(
    order: IntArray, a: int, root: int, n: int, dst: IntArray, size: NDArray[np.float64]
) -> None:  # pragma: no cover - compiled
    """Restore the max-heap ``order[a:a+n]`` (key ``(dst, size)``) below ``root``."""
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        i, j = order[a + child], order[a + child + 1] if child + 1 < n else -1
        if j >= 0 and (dst[i] < dst[j] or (dst[i] == dst[j] and size[i] < size[j])):
            child += 1
            i = j
        r = order[a + root]
        if not (dst[r] < dst[i] or (dst[r] == dst[i] and size[r] < size[i])):
            return
        order[a + root], order[a + child] = i, r
        root = child


@cached_jit(internal=True)
def _peak_load(
    src: IntArray,
    dst: IntArray,
    size: NDArray[np.float64],
    lo: int,
    hi: int,
    sent: NDArray[np.float64],
    recv: NDArray[np.float64],
) -> float:  # pragma: no cover - compiled
    """Most bytes one NIC sends or receives over rows ``lo:hi`` (``sent``/``recv`` are zero
    scratch arrays, left zero)."""
    for i in range(lo, hi):
        sent[src[i]] += size[i]
        recv[dst[i]] += size[i]
    peak = 0.0
    for i in range(lo, hi):
        peak = max(peak, sent[src[i]], recv[dst[i]])
    for i in range(lo, hi):
        sent[src[i]] = 0.0
        recv[dst[i]] = 0.0
    return peak


#: One stage's unit-size data-parallel flows: ``(src, dst, sizes)``, ``sizes`` ``None`` for
#: all ones.
DPFlows = tuple[IntArray, IntArray, NDArray[np.float64] | None]


def alternating_rings(rails: IntArray) -> DPFlows:
    """Rings over each rail (``rails``: shape (tp, dp), GPUs in DP rank order): to the next
    rank on even rails, to the previous one on odd rails."""
    odd = (np.arange(rails.shape[0]) % 2 == 1)[:, None]
    dst = np.where(odd, np.roll(rails, 1, axis=1), np.roll(rails, -1, axis=1))
    return rails.reshape(-1), dst.reshape(-1), None


def halving_doubling_steps(rails: IntArray) -> DPFlows:
    """Every step of a halving-doubling all-reduce on each rail, merged."""
    f = halving_doubling(rails, 1.0).merged()
    return f.src, f.dst, f.bytes


def double_binary_tree_steps(rails: IntArray) -> DPFlows:
    """Every step of a double-binary-tree all-reduce on each rail, merged."""
    f = double_binary_tree(rails, 1.0).merged()
    return f.src, f.dst, f.bytes


def all_to_all_steps(rails: IntArray) -> DPFlows:
    """Every step of a pairwise all-to-all on each rail, merged."""
    f = pairwise_all_to_all(rails, 1.0).merged()
    return f.src, f.dst, f.bytes


#: Data-parallel collectives by name (the names of
#: :data:`~lumoscore.workload.job.COLLECTIVES`): ``pattern(rails) -> DPFlows`` for one
#: stage's rails. Hierarchical ring's intra-server parts stay on NVLink, leaving exactly the
#: rail rings on the network.
DP_COLLECTIVES: Registry[Callable[[IntArray], DPFlows]] = Registry("collective")
DP_COLLECTIVES.register("ring", alternating_rings)
DP_COLLECTIVES.register("hierarchical-ring", alternating_rings)
DP_COLLECTIVES.register("halving-doubling", halving_doubling_steps)
DP_COLLECTIVES.register("all-to-all", all_to_all_steps)
DP_COLLECTIVES.register("double-binary-tree", double_binary_tree_steps)


def _dp_patterns(job: Job, grid: IntArray) -> list[DPFlows]:
    """Unit-size DP flows of every stage (``grid`` has shape (pp, dp, tp))."""
    rails = grid.transpose(0, 2, 1)  # (pp, tp, dp): one row per rail
    pattern = DP_COLLECTIVES[job.collective]
    return [pattern(rails[s]) for s in range(job.pp)]
