"""The research traffic model: what the LumosCore paper's published runs put on the wire.

The paper's §6 numbers come from its public research simulator, whose LLM strategy takes every
class's full exposed share out of compute but sends only part of it. This module builds one
iteration of a placed job that way (``exposure="research"``); :func:`~lumoscore.traffic.
iteration.iteration_flows` is our literal reading of §6.1 (``exposure="literal"``: each class
takes exactly its exposed share at 1.6 Tb/s). Both keep a trace's ``duration_s`` as the job's
run time on the ideal network (Best), so one trace gives one Best.

Model (``D``: one iteration's length in the research model, ``r_dp, r_pp, r_ep``: the model's
shares, :data:`~lumoscore.workload.job.MODEL_SHARES`; a class with parallel degree 1 has share
0, and so has the expert class when ``ep == tp``; times are at 1.6 Tb/s):

* **pipeline**: ``F(s)`` every GPU of stage ``s`` sends to the same position of stage ``s+1``,
  ``B(s)`` to stage ``s-1``; one send takes ``D r_pp / (2 (pp-1))``;
* **data parallel** (stage ``s``): one ring per rail (the ``dp`` GPUs with one TP index),
  forward ``d -> d+1`` on the rails ``t < tp/2``, backward ``d+1 -> d`` on the others; one flow
  takes ``D r_dp / (tp (dp-1))`` (whatever the job's ``collective``);
* **expert** (``ep > tp`` only; groups of ``ep`` consecutive ranks, ``m = ep/tp`` servers): one
  stage ``k`` of the pairwise exchange between the group's GPUs of one rail,
  ``face[i] -> face[(i+k+1) mod m]``, chosen by the job id, its flow sized for all
  ``2 (m-1)`` stages: it takes ``2 (m-1) D r_ep / (ep-1)``. With ``ep < tp`` there is no
  expert traffic but its share still leaves compute (as in the published runs);
* **rounds**: ``F(0) .. F(pp-2)``; then ``DP(pp-1-i) + B(pp-2-i)`` for ``i = 0 .. pp-3``; the
  expert round; ``DP(1) + B(1)``; ``DP(0)`` (rounds without flows are left out; ``B(pp-1)`` is
  not sent and ``B(1)`` twice, as in the published runs);
* **compute**: ``D (1 - r_dp - r_pp - r_ep)``, split evenly over the rounds' compute slots:
  one before every round, none before the expert round when a stage other than the first is
  chosen, two before ``F(pp-2)`` when ``pp >= 3``.

On the ideal network an iteration then lasts ``k D`` (``k`` the compute share plus each
round's most loaded NIC time per unit ``D``); ``D`` is set to ``duration_s / (iterations k)``.

Deliberate differences from the research simulator: intra-leaf flows are kept (it drops all
but one per round, which shortens rounds at the NICs), bandwidth is shared max-min fairly, and
the first iteration has no extra compute slot when the first round has none.

Examples
--------
>>> from lumoscore.topology.cluster import ClusterSpec
>>> from lumoscore.workload import Job
>>> spec = ClusterSpec(pods=2, k_leaf=32, k_spine=32, tau=2)
>>> job = Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=16,
...           iterations=10, duration_s=1000.0)
>>> s = research_flows(job, range(64), spec)
>>> [r.tag for r in s]
['pp', 'ep', 'dp+pp', 'dp']
>>> round(sum(r.compute_s + r.ideal_s for r in s), 9)  # the iteration on Best
100.0
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import PreconditionError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.flows import Flows, Round, Schedule
from lumoscore.traffic.iteration import AggregateKey, _size_rounds, checked_grid
from lumoscore.workload.job import REFERENCE_PORT_GBPS, Job

__all__ = ["research_flows", "research_shares", "research_stage_rings"]

IntArray = NDArray[np.int64]
#: One class's unit flows in a round: (class, src, dst, time of one flow per unit ``D``).
_Part = tuple[str, IntArray, IntArray, float]


def research_shares(job: Job) -> tuple[float, float, float]:
    """The shares ``(r_dp, r_pp, r_ep)`` the research model takes out of compute.

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=32, model="llama_7b", tp=8, pp=1, dp=4, ep=4,
    ...           iterations=10, duration_s=1.0)
    >>> research_shares(job)  # ep < tp: no expert traffic, but its share leaves compute
    (0.069, 0.0, 0.255)
    """
    s = job.shares
    return (
        s.dp if job.dp > 1 else 0.0,
        s.pp if job.pp > 1 else 0.0,
        s.ep if job.ep != job.tp else 0.0,
    )


def research_stage_rings(stage: IntArray) -> tuple[IntArray, IntArray]:
    """One stage's data-parallel flows (``stage``: shape (dp, tp), GPUs by DP index and TP
    index): forward rings on the rails ``t < tp/2``, backward rings on the others.

    Examples
    --------
    >>> import numpy as np
    >>> src, dst = research_stage_rings(np.array([[0, 1, 2, 3], [10, 11, 12, 13]]))
    >>> list(zip(src.tolist(), dst.tolist()))
    [(0, 10), (1, 11), (12, 2), (13, 3), (10, 0), (11, 1), (2, 12), (3, 13)]
    """
    tp = stage.shape[1]
    nxt = np.roll(stage, -1, axis=0)  # GPU of DP index d+1 (mod dp), same rail
    forward = np.arange(tp) < tp // 2
    src = np.where(forward[None, :], stage, nxt)
    dst = np.where(forward[None, :], nxt, stage)
    return src.reshape(-1), dst.reshape(-1)


def _expert_stage(job: Job, flat: IntArray) -> tuple[IntArray, IntArray, int, int]:
    """The expert round's flows, the chosen stage and the number of stages ``m - 1``."""
    if job.gpus % job.ep or job.ep % job.tp:
        raise PreconditionError(
            f"job {job.job_id}: the research model needs ep={job.ep} to divide gpus={job.gpus} "
            f"and to be a multiple of tp={job.tp}"
        )
    m = job.ep // job.tp
    # (groups, m, tp): group g, its server i in the group, rail j
    faces = flat.reshape(-1, m, job.tp)
    stage = int(np.random.default_rng(job.job_id).integers(m - 1))
    dst = np.roll(faces, -(stage + 1), axis=1)
    return faces.reshape(-1), dst.reshape(-1), stage, m - 1


def _plan(job: Job, grid: IntArray) -> tuple[list[list[_Part]], list[int]]:
    """The rounds' parts and compute slots (per unit ``D``)."""
    r_dp, r_pp, r_ep = research_shares(job)
    pp, dp, tp = job.pp, job.dp, job.tp
    t_pp = r_pp / (2 * (pp - 1)) if pp > 1 else 0.0
    t_dp = r_dp / (tp * (dp - 1)) if dp > 1 else 0.0

    def send(s: int, to: int) -> _Part:
        return ("pp", grid[s].reshape(-1), grid[to].reshape(-1), t_pp)

    def ring(s: int) -> list[_Part]:
        return [("dp", *research_stage_rings(grid[s]), t_dp)] if dp > 1 else []

    rounds: list[list[_Part]] = []
    slots: list[int] = []
    for s in range(pp - 1):
        rounds.append([send(s, s + 1)])
        slots.append(2 if pp >= 3 and s == pp - 2 else 1)
    for i in range(pp - 2):
        rounds.append([*ring(pp - 1 - i), send(pp - 2 - i, pp - 3 - i)])
        slots.append(1)
    if job.ep > tp:
        src, dst, stage, stages = _expert_stage(job, grid.reshape(-1))
        rounds.append([("ep", src, dst, 2 * stages * r_ep / (job.ep - 1))])
        slots.append(1 if stage == 0 else 0)
    if pp >= 2:
        rounds.append([*ring(1), send(1, 0)])
        slots.append(1)
    if dp > 1:
        rounds.append(ring(0))
        slots.append(1)
    keep = [i for i, parts in enumerate(rounds) if parts]
    return [rounds[i] for i in keep], [slots[i] for i in keep]


def research_flows(
    job: Job,
    gpus: ArrayLike,
    spec: ClusterSpec,
    aggregate: bool = True,
    *,
    key: AggregateKey = "leaf",
    port_gbps: float = REFERENCE_PORT_GBPS,
) -> Schedule:
    """Rounds of flows of one iteration of ``job`` on ``gpus`` (rank order) in the research
    traffic model (see the module docstring).

    Parameters
    ----------
    job : Job
        The job; its ``duration_s`` is its run time on the ideal network.
    gpus : array of int
        GPU of every rank (TP fastest, then DP, then PP).
    spec : ClusterSpec
        The cluster (servers, leaves).
    aggregate : bool
        Merge each round's identical flows between the same nodes (see ``key``).
    key : {"leaf", "server", "gpu"}
        Aggregation level, as for :func:`~lumoscore.traffic.iteration.iteration_flows`.
    port_gbps : float
        NIC speed of the ideal network (the research model's 1.6 Tb/s).

    Returns
    -------
    Schedule
        Rounds with flows, compute seconds, tag and ideal communication time; the rounds'
        compute and ideal times add up to the job's iteration time.
    """
    grid = checked_grid(job, gpus, spec, key=key, port_gbps=port_gbps)
    rounds, slots = _plan(job, grid)
    if not rounds:
        return Schedule((Round(Flows.empty(), job.iteration_s, "compute", 0.0),))
    if sum(slots) == 0:  # (the job's first round always has its compute before it)
        slots = [1, *slots[1:]]
    per_slot = (1.0 - sum(research_shares(job))) / sum(slots)
    parts = [part for rnd in rounds for part in rnd]
    part_ptr = np.cumsum([0] + [part[1].shape[0] for part in parts]).astype(np.int64)
    round_ptr = np.cumsum([0] + [len(rnd) for rnd in rounds]).astype(np.int64)
    gps = spec.gpus_per_server
    per_node = {"leaf": spec.k_leaf, "server": gps, "gpu": 1}[key]
    out_src, out_dst, out_bytes, out_weight, out_ptr, ideal = _size_rounds(
        np.concatenate([part[1] for part in parts]),
        np.concatenate([part[2] for part in parts]),
        np.ones(int(part_ptr[-1])),
        part_ptr,
        np.array([part[3] for part in parts], dtype=np.float64),
        round_ptr,
        gps,
        float(port_gbps),
        per_node if aggregate else 0,
        spec.gpus,
    )
    k = per_slot * sum(slots) + float(ideal.sum())
    d = job.iteration_s / k  # the research model's iteration length for this run time
    bounds = out_ptr.tolist()
    out_bytes = out_bytes[: bounds[-1]] * d
    out: list[Round] = []
    for r, rnd in enumerate(rounds):
        tag = "+".join(sorted({part[0] for part in rnd}, key=("dp", "ep", "pp").index))
        lo, hi = bounds[r], bounds[r + 1]
        flows = Flows._unchecked(
            out_src[lo:hi], out_dst[lo:hi], out_bytes[lo:hi], out_weight[lo:hi]
        )
        out.append(Round(flows, per_slot * slots[r] * d, tag, float(ideal[r]) * d))
    return Schedule(tuple(out))
