"""Round-time evaluation of a grouping: four TDM stages, their OXC topologies and reconfigurations.

Jobs are split into group 0 and group 1 (``grouping[n]``). A round has four stages ``s = 2t + k``
(the paper's stage index ``2t + k + 1``): in stage ``s`` group ``k = s % 2`` communicates (its
PS jobs push when ``t = 0`` and pull when ``t = 1``; RAR and all-to-all jobs run their collective)
while the other group computes (local training, or aggregation for PS jobs), each for its
Eq. (8) time. Each stage lasts ``max(t_comm, max t_train)`` (Eq. 3). ``t_comm`` is the worst
pod group's time from Alg. 2 (RAR rings from Alg. 3).

Reconfiguration: an OXC keeps its circuits (the undirected multigraph ``L + L^T``: a half-duplex
circuit serves either direction) when a stage has no traffic through it. The boundary after stage
``s`` costs ``reconfig_s`` once when any OXC holds different circuits in stage ``s + 1`` (cyclic)
than in stage ``s`` (Alg. 1 line 3). Round time = sum of stages + reconfiguration time (line 4).

The non-TDM baseline (every job computes, then every job communicates) is the grouping with
every job in group 0: stage 1 is everybody's push/collective, stage 2 everybody's compute, etc.

Examples
--------
>>> import numpy as np
>>> from lumoscore.tdm.models import LLAMA3, Job, Network
>>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
>>> jobs = [Job("ps", LLAMA3["8B"], 4, tokens=64), Job("rar", LLAMA3["8B"], 4, tokens=64)]
>>> inst = build_instance(net, jobs)
>>> base = non_tdm_baseline(inst)
>>> tdm = evaluate_grouping(inst, np.array([0, 1]))
>>> bool(tdm.round_s < base.round_s)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lumoscore.errors import PreconditionError
from lumoscore.tdm.deployment import deploy
from lumoscore.tdm.models import Job, JobKind, Network, Placement, job_traffic
from lumoscore.tdm.ring import form_ring
from lumoscore.tdm.topology import oxc_topology

__all__ = [
    "N_STAGES",
    "GroupStages",
    "Instance",
    "Schedule",
    "StageCache",
    "build_instance",
    "evaluate_grouping",
    "evaluate_pod_group",
    "non_tdm_baseline",
    "stage_kt",
]

#: Stages per round.
N_STAGES = 4


def stage_kt(s: int) -> tuple[int, int]:
    """``(k, t)`` of stage ``s``: group ``k`` communicates, ``t`` = 0 push / 1 pull.

    Examples
    --------
    >>> [stage_kt(s) for s in range(4)]
    [(0, 0), (1, 0), (0, 1), (1, 1)]
    """
    return s % 2, s // 2


@dataclass(frozen=True, eq=False)
class Instance:
    """A deployed scheduling instance with its traffic precomputed as arrays.

    Build it with :func:`build_instance`.

    Attributes
    ----------
    network : Network
    jobs : tuple of Job
    placements : tuple of Placement
    demand_bytes : numpy.ndarray
        ``(N, 2, P, P)`` fixed pod-pair traffic of each job in its two communication stages
        (zero for RAR jobs, whose ring is decided per stage).
    tor_bytes : numpy.ndarray
        ``(N, P)`` ToR traffic of each job in a communication stage.
    train_s : numpy.ndarray
        ``(N,)`` compute-stage time of each job.
    group_of_job : numpy.ndarray
        ``(N,)`` pod group of each job.
    unit_bytes : numpy.ndarray
        ``(N,)`` traffic of one ring connection (RAR) / one unit.
    ring_pods : tuple of numpy.ndarray
        Pods each RAR ring must visit (empty when none or one pod).
    """

    network: Network
    jobs: tuple[Job, ...]
    placements: tuple[Placement, ...]
    demand_bytes: np.ndarray = field(repr=False)
    tor_bytes: np.ndarray = field(repr=False)
    train_s: np.ndarray = field(repr=False)
    group_of_job: np.ndarray = field(repr=False)
    unit_bytes: np.ndarray = field(repr=False)
    ring_pods: tuple[np.ndarray, ...] = field(repr=False)

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    def jobs_in_group(self, g: int) -> np.ndarray:
        """Indices of the jobs deployed in pod group ``g``."""
        return np.flatnonzero(self.group_of_job == g)


def build_instance(
    network: Network, jobs: Sequence[Job], placements: Sequence[Placement] | None = None
) -> Instance:
    """Deploy ``jobs`` (§IV.B unless ``placements`` is given) and precompute their traffic.

    Examples
    --------
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> inst = build_instance(Network(n_pods=4, pods_per_group=2, gpus_per_pod=8,
    ...                               ports_per_pod=2), [Job("alltoall", LLAMA3["1B"], 2)])
    >>> inst.demand_bytes.shape, inst.group_of_job.tolist()
    ((1, 2, 2, 2), [0])
    """
    jobs = tuple(jobs)
    if placements is None:
        placements = deploy(network, jobs)
    placements = tuple(placements)
    if len(placements) != len(jobs):
        raise PreconditionError(
            f"{len(placements)} placements for {len(jobs)} jobs: need one per job"
        )
    p = network.pods_per_group
    n = len(jobs)
    demand = np.zeros((n, 2, p, p))
    tor = np.zeros((n, p))
    rings = []
    for idx, (job, pl) in enumerate(zip(jobs, placements, strict=True)):
        units = np.asarray(pl.units_per_pod)
        if units.shape != (p,) or units.sum() != job.degree or np.any(units < 0):
            raise PreconditionError(
                f"job {idx}: units_per_pod must be {p} non-negative counts summing to the "
                f"degree {job.degree}, got {units.tolist()}"
            )
        if not 0 <= pl.group < network.n_groups:
            raise PreconditionError(
                f"job {idx}: group {pl.group} outside 0..{network.n_groups - 1}"
            )
        if job.kind is JobKind.PS and not 0 <= pl.ps_pod < p:
            raise PreconditionError(f"job {idx}: ps_pod {pl.ps_pod} outside 0..{p - 1}")
        demand[idx], tor[idx], ring = job_traffic(job, pl)
        rings.append(ring)
    return Instance(
        network=network,
        jobs=jobs,
        placements=placements,
        demand_bytes=demand,
        tor_bytes=tor,
        train_s=np.array([j.train_s for j in jobs], dtype=float),
        group_of_job=np.array([pl.group for pl in placements], dtype=np.int64),
        unit_bytes=np.array([j.unit_bytes for j in jobs], dtype=float),
        ring_pods=tuple(rings),
    )


@dataclass(frozen=True, eq=False)
class GroupStages:
    """The four stages of one pod group (OXC) under a grouping of its jobs.

    Attributes
    ----------
    links : numpy.ndarray
        ``(4, P, P)`` directed connections per stage (idle stages repeat the held circuits).
    comm_s : numpy.ndarray
        ``(4,)`` communication time per stage (``inf`` when infeasible).
    idle : numpy.ndarray
        ``(4,)`` bool: no OXC traffic in the stage.
    reconfig : numpy.ndarray
        ``(4,)`` bool: the OXC changes circuits after stage ``s``.
    rings : tuple
        ``(job, stage, edges)`` for each RAR ring formed (global job index, local pods).
    """

    links: np.ndarray
    comm_s: np.ndarray
    idle: np.ndarray
    reconfig: np.ndarray
    rings: tuple[tuple[int, int, np.ndarray], ...]


def evaluate_pod_group(instance: Instance, g: int, grouping: np.ndarray) -> GroupStages:
    """Alg. 2 (with Alg. 3 rings) for the four stages of pod group ``g``.

    ``grouping`` is the full ``(N,)`` 0/1 vector; only the jobs of group ``g`` are read.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
    >>> inst = build_instance(net, [Job("rar", LLAMA3["1B"], 4)])
    >>> gs = evaluate_pod_group(inst, 0, np.array([0]))
    >>> gs.idle.tolist(), gs.reconfig.tolist()
    ([False, True, False, True], [False, False, False, False])
    """
    net = instance.network
    p = net.pods_per_group
    members = instance.jobs_in_group(g)
    grouping = np.asarray(grouping)
    demand = np.zeros((N_STAGES, p, p))
    tor = np.zeros((N_STAGES, p))
    rings: list[tuple[int, int, np.ndarray]] = []
    for s in range(N_STAGES):
        k, t = stage_kt(s)
        comm = members[grouping[members] == k]
        if comm.size == 0:
            continue
        demand[s] = instance.demand_bytes[comm, t].sum(axis=0)
        tor[s] = instance.tor_bytes[comm].sum(axis=0)
        required = demand[s] > 0
        for n in comm:  # lines 5-8: RAR rings, after the fixed traffic
            pods = instance.ring_pods[n]
            if pods.size < 2:
                continue
            edges = form_ring(pods, required)
            demand[s, edges[:, 0], edges[:, 1]] += instance.unit_bytes[n]
            required[edges[:, 0], edges[:, 1]] = True
            rings.append((int(n), s, edges))
    links, comm_s = oxc_topology(
        demand,
        tor,
        port_bytes_per_s=net.port_bytes_per_s,
        tor_bytes_per_s=net.tor_bytes_per_s,
        ports_per_pod=net.ports_per_pod,
    )
    idle = ~(demand > 0).any(axis=(1, 2))
    busy = np.flatnonzero(~idle)
    if busy.size and idle.any():
        # An idle stage keeps the circuits of the last busy stage before it (cyclically).
        prev = busy[np.searchsorted(busy, np.arange(N_STAGES), side="right") - 1]
        links = links[prev]
    circuits = links + np.swapaxes(links, 1, 2)
    reconfig = (circuits != np.roll(circuits, -1, axis=0)).any(axis=(1, 2))
    return GroupStages(links, comm_s, idle, reconfig, tuple(rings))


class StageCache:
    """Memo of :func:`evaluate_pod_group` keyed by the grouping of a pod group's jobs.

    A pod group's four stages depend only on which of *its* jobs are in group 1, so a local
    search revisits few distinct keys. One cache belongs to one instance.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self._members = [instance.jobs_in_group(g) for g in range(instance.network.n_groups)]
        self._memo: dict[tuple[int, bytes], GroupStages] = {}

    def __len__(self) -> int:
        return len(self._memo)

    def get(self, g: int, grouping: np.ndarray) -> GroupStages:
        """Stages of pod group ``g`` under ``grouping`` (computed once per distinct key)."""
        key = (g, np.asarray(grouping, dtype=np.int8)[self._members[g]].tobytes())
        hit = self._memo.get(key)
        if hit is None:
            hit = evaluate_pod_group(self.instance, g, grouping)
            self._memo[key] = hit
        return hit


@dataclass(frozen=True, eq=False)
class Schedule:
    """A complete round: grouping, stage times, topologies and reconfigurations.

    Attributes
    ----------
    grouping : numpy.ndarray
        ``(N,)`` 0/1 group of each job.
    stage_s, comm_s, train_s : numpy.ndarray
        ``(4,)`` stage duration, its communication time and its compute time.
    reconfig : numpy.ndarray
        ``(4,)`` bool: reconfiguration after stage ``s``.
    reconfig_s : float
        Total reconfiguration time of the round (``epsilon``).
    round_s : float
        Sum of the stages plus ``reconfig_s``.
    links : numpy.ndarray
        ``(4, G, P, P)`` directed OXC connections per stage and pod group.
    rings : tuple
        ``(job, stage, edges)`` of every RAR ring (edges in local pod indices of its group).
    """

    grouping: np.ndarray
    stage_s: np.ndarray
    comm_s: np.ndarray
    train_s: np.ndarray
    reconfig: np.ndarray
    reconfig_s: float
    round_s: float
    links: np.ndarray = field(repr=False)
    rings: tuple[tuple[int, int, np.ndarray], ...] = field(repr=False)

    @property
    def feasible(self) -> bool:
        """Whether every stage has a topology within the port limits."""
        return bool(np.isfinite(self.round_s))


def _compute_per_stage(train_s: np.ndarray, grouping: np.ndarray) -> np.ndarray:
    """``(..., 4)`` compute time per stage: the slowest job of the non-communicating group."""
    grouping = np.asarray(grouping)
    out = []
    for s in range(N_STAGES):
        k, _ = stage_kt(s)
        out.append(np.where(grouping != k, train_s, 0.0).max(axis=-1, initial=0.0))
    return np.stack(out, axis=-1)


def evaluate_grouping(
    instance: Instance, grouping: np.ndarray, cache: StageCache | None = None
) -> Schedule:
    """Round time, topologies and reconfigurations of a grouping (Alg. 1 lines 2-4).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
    >>> inst = build_instance(net, [Job("ps", LLAMA3["1B"], 3)])
    >>> sch = evaluate_grouping(inst, np.array([0]))
    >>> bool(np.isclose(sch.round_s, sch.comm_s[0] + sch.comm_s[2] + 2 * inst.train_s[0]))
    True
    """
    grouping = np.asarray(grouping, dtype=np.int8)
    if grouping.shape != (instance.n_jobs,) or not np.isin(grouping, (0, 1)).all():
        raise PreconditionError(
            f"grouping must be {instance.n_jobs} values in {{0, 1}}, got {grouping.tolist()}"
        )
    cache = cache or StageCache(instance)
    net = instance.network
    per_group = [cache.get(g, grouping) for g in range(net.n_groups)]
    comm = np.stack([gs.comm_s for gs in per_group]).max(axis=0)
    reconf = np.stack([gs.reconfig for gs in per_group]).any(axis=0)
    train = _compute_per_stage(instance.train_s, grouping)
    stage = np.maximum(comm, train)
    reconfig_s = float(reconf.sum() * net.reconfig_s)
    return Schedule(
        grouping=grouping.copy(),
        stage_s=stage,
        comm_s=comm,
        train_s=train,
        reconfig=reconf,
        reconfig_s=reconfig_s,
        round_s=float(stage.sum() + reconfig_s),
        links=np.stack([gs.links for gs in per_group], axis=1),
        rings=tuple(r for gs in per_group for r in gs.rings),
    )


def non_tdm_baseline(instance: Instance, cache: StageCache | None = None) -> Schedule:
    """The non-TDM baseline: all jobs compute, then all communicate (twice per round).

    Examples
    --------
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
    >>> inst = build_instance(net, [Job("ps", LLAMA3["1B"], 3)])
    >>> int(non_tdm_baseline(inst).grouping.sum())
    0
    """
    return evaluate_grouping(instance, np.zeros(instance.n_jobs, dtype=np.int8), cache)
