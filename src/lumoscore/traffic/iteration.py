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

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.collectives import halving_doubling, pairwise_all_to_all
from lumoscore.traffic.flows import Flows, Round, Schedule, aggregate, ideal_round_s
from lumoscore.workload.job import REFERENCE_PORT_GBPS, Job

__all__ = ["class_times_s", "iteration_flows", "rank_grid"]

IntArray = NDArray[np.int64]
AggregateKey = Literal["leaf", "server", "gpu"]
EpPattern = Literal["all-pairs", "one-stage"]


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
    if np.unique(arr).shape[0] != arr.shape[0]:
        raise ConfigError(f"job {job.job_id}: gpus must be distinct")
    return arr.reshape(job.pp, job.dp, job.tp)


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


def _network(src: IntArray, dst: IntArray, gps: int) -> tuple[IntArray, IntArray]:
    keep = (src // gps) != (dst // gps)
    return src[keep], dst[keep]


def _dp_pattern(job: Job, stage: IntArray) -> tuple[IntArray, IntArray, NDArray[np.float64]]:
    """Unit-size DP flows of one stage (``stage`` has shape (dp, tp))."""
    rails = stage.T  # (tp, dp): one row per rail
    if job.collective in ("ring", "hierarchical-ring"):
        odd = (np.arange(job.tp) % 2 == 1)[:, None]
        dst = np.where(odd, np.roll(rails, 1, axis=1), np.roll(rails, -1, axis=1))
        src = rails.reshape(-1)
        dst = dst.reshape(-1)
        return src, dst, np.ones(src.shape[0])
    if job.collective == "halving-doubling":
        f = halving_doubling(rails, 1.0).merged()
    else:  # "all-to-all"
        f = pairwise_all_to_all(rails, 1.0).merged()
    return f.src, f.dst, f.bytes


def _ep_pattern(
    job: Job, gpus: IntArray, pattern: EpPattern
) -> tuple[IntArray, IntArray, NDArray[np.float64]]:
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
        return src, dst, np.ones(src.shape[0])
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
    return src, dst, np.ones(src.shape[0])


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
    grid = rank_grid(job, gpus)
    flat = grid.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= spec.gpus):
        raise ConfigError(f"job {job.job_id}: GPU ids must lie in [0, {spec.gpus})")
    if key not in ("leaf", "server", "gpu"):
        raise ConfigError(f"key must be 'leaf', 'server' or 'gpu', got {key!r}")
    if not (port_gbps > 0):
        raise ConfigError(f"port_gbps must be > 0, got {port_gbps!r}")
    gps = spec.gpus_per_server
    times = class_times_s(job)
    pp, dp = job.pp, job.dp
    has_ep = job.ep > job.tp

    # (tag, [(class, src, dst, unit_bytes)]) per round, in the research simulator's order
    plan: list[list[tuple[str, IntArray, IntArray, NDArray[np.float64]]]] = []
    for s in range(pp - 1):
        a, b = grid[s].reshape(-1), grid[s + 1].reshape(-1)
        plan.append([("pp", a, b, np.ones(a.shape[0]))])

    def back_round(s: int) -> list[tuple[str, IntArray, IntArray, NDArray[np.float64]]]:
        parts = []
        if dp > 1:
            parts.append(("dp", *_dp_pattern(job, grid[s])))
        if s >= 1:
            a, b = grid[s].reshape(-1), grid[s - 1].reshape(-1)
            parts.append(("pp", a, b, np.ones(a.shape[0])))
        return parts

    for s in range(pp - 1, 1, -1):
        plan.append(back_round(s))
    if has_ep:
        plan.append([("ep", *_ep_pattern(job, flat, ep_pattern))])
    if pp >= 2:
        plan.append(back_round(1))
    if dp > 1:
        plan.append(back_round(0))
    plan = [p for p in plan if p]

    if not plan:
        return Schedule((Round(Flows.empty(), job.iteration_s, "compute", 0.0),))
    compute_each = job.compute_s / len(plan)
    rounds: list[Round] = []
    for parts in plan:
        pieces: list[Flows] = []
        budget = 0.0
        for cls, src, dst, unit in parts:
            target = times[cls]
            budget += target
            keep = (src // gps) != (dst // gps)
            src, dst, unit = src[keep], dst[keep], unit[keep]
            if target <= 0.0 or src.shape[0] == 0:
                continue
            f = Flows(src, dst, unit, np.ones(src.shape[0], np.int64))
            t_unit = ideal_round_s(f, port_gbps)
            pieces.append(f.scaled(target / t_unit))
        flows = Flows.concat(pieces)
        ideal = ideal_round_s(flows, port_gbps)
        tag = "+".join(sorted({c for c, *_ in parts}, key=["dp", "ep", "pp"].index))
        if aggregate and len(flows):
            if key == "leaf":
                flows = _aggregate(flows, spec.k_leaf)
            elif key == "server":
                flows = _aggregate(flows, gps)
            else:
                flows = _aggregate(flows, 1)
        rounds.append(Round(flows, compute_each + max(budget - ideal, 0.0), tag, ideal))
    return Schedule(tuple(rounds))


def _aggregate(flows: Flows, per_node: int) -> Flows:
    if per_node == 1:
        return aggregate(flows)
    return aggregate(flows, key=lambda g: g // per_node)
