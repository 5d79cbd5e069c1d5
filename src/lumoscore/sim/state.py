"""The state of one simulation run, in one explicit object.

:class:`RunState` holds what the engine's units share: the fabric and its capacities, the
event queue, the running jobs (:class:`JobRun`), the per-job result arrays
(:class:`JobRecords`) and the run counters. Each unit (:mod:`~lumoscore.sim.admission`,
:mod:`~lumoscore.sim.rounds`, :mod:`~lumoscore.sim.changes`, :mod:`~lumoscore.sim.outages`,
:mod:`~lumoscore.sim.probing`) keeps its own state besides and reads or writes this one; a
unit can be built and tested on a :class:`RunState` of its own.

Examples
--------
>>> from lumoscore.fabric import BestFabric
>>> from lumoscore.workload import Job
>>> job = Job(job_id=7, arrival_s=0.0, gpus=16, model="llama_7b", tp=8, pp=2, dp=1, ep=8,
...           iterations=10, duration_s=1000.0)
>>> st = RunState.new(BestFabric(gpus=64), [job], eps=0.0, isolation=True)
>>> st.records.index[7], st.records.n, st.stats["events"]
(0, 1, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import SolverError
from lumoscore.fabric.base import Fabric
from lumoscore.sim.events import EventQueue
from lumoscore.sim.plan import JobPlan
from lumoscore.workload.job import Job

__all__ = [
    "P_ARRIVE",
    "P_BEGIN",
    "P_FINISH",
    "P_FLUID",
    "P_ROUND",
    "JobRecords",
    "JobRun",
    "RunState",
    "SimulationError",
]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: Event priorities at equal times: finishes free resources before arrivals try to use them.
#: ``P_FLUID`` is the rank of the shared fluid set's next flow completion among the events.
P_FINISH, P_ROUND, P_FLUID, P_BEGIN, P_ARRIVE = 0, 1, 2, 3, 4


class SimulationError(SolverError):
    """The simulation cannot go on (e.g. flows stuck on links of zero capacity)."""


@dataclass(eq=False, slots=True)
class JobRun:
    """A job placed on GPUs: where it is in its run.

    ``iteration``, ``round`` and ``round_start_s`` locate a job that runs round by round;
    an isolated job (``isolated``) runs on its precomputed timeline from ``begin_s``.
    """

    job: Job
    gpus: IntArray
    plan: JobPlan
    begin_s: float
    isolated: bool
    iteration: int = 0
    round: int = 0
    round_start_s: float = 0.0
    comm_s: float = 0.0  # actual communication time accumulated (round-by-round mode)
    begun: bool = False
    launched_s: float = 0.0
    ckpt_k: int = 0  # checkpoints written so far (one every checkpoint_interval_s of run time)
    ckpt_iters: int = 0  # iterations the last checkpoint holds


@dataclass(eq=False)
class JobRecords:
    """Per-job result arrays, in trace order (:attr:`index` maps a job id to its row)."""

    jobs: Sequence[Job]
    index: dict[int, int]
    start: FloatArray
    finish: FloatArray
    comm_actual: FloatArray
    comm_ideal: FloatArray
    solo_iter: FloatArray
    isolated: NDArray[np.bool_]
    rejected: NDArray[np.bool_]
    restarts: IntArray
    lost_s: FloatArray  # run time lost to failures (work redone after restarts)
    requeue_wait_s: FloatArray  # time waiting in the queue again after failures
    failed_at: FloatArray
    fragmented: NDArray[np.bool_]  # blocked while enough GPUs were free in total

    @classmethod
    def empty(cls, jobs: Sequence[Job]) -> JobRecords:
        """Records of ``jobs`` before the run."""
        n = len(jobs)
        return cls(
            jobs=jobs,
            index={j.job_id: i for i, j in enumerate(jobs)},
            start=np.full(n, np.nan),
            finish=np.full(n, np.nan),
            comm_actual=np.zeros(n),
            comm_ideal=np.zeros(n),
            solo_iter=np.full(n, np.nan),
            isolated=np.zeros(n, dtype=bool),
            rejected=np.zeros(n, dtype=bool),
            restarts=np.zeros(n, dtype=np.int64),
            lost_s=np.zeros(n),
            requeue_wait_s=np.zeros(n),
            failed_at=np.full(n, np.nan),
            fragmented=np.zeros(n, dtype=bool),
        )

    @property
    def n(self) -> int:
        """Number of jobs in the trace."""
        return len(self.jobs)


def _new_stats(eps: float, exposure: str) -> dict[str, Any]:
    return {
        "events": 0,
        "materialized": 0,
        "plans_s": 0.0,
        "solo_rounds": 0,
        "shared_solo_rounds": 0,
        "solo_rounds_on_left_links": 0,
        "fluid_rounds": 0,
        "reserved_rounds": 0,
        "unreserved_rounds": 0,
        "reconfigurations": 0,
        "reroutes": 0,
        "failures": 0,
        "hard_failures": 0,
        "failures_hitting_jobs": 0,
        "fragmentation_blocks": 0,
        "eps": eps,
        "exposure": exposure,
    }


@dataclass(eq=False)
class RunState:
    """What the units of one run share.

    Attributes
    ----------
    fabric : Fabric
        The network; ``cap`` is its capacity array (changed in place by reconfigurations).
    eps : float
        0 for exact max-min rates, > 0 for the (1+eps)-approximate allocation.
    isolation : bool
        Whether jobs and rounds that meet no other may run on their precomputed timelines.
    exposure : str
        The traffic model jobs are planned with
        (:data:`~lumoscore.traffic.exposure.EXPOSURES`).
    queue : EventQueue
        The pending events.
    running : dict
        Job id -> :class:`JobRun` of every placed job, in launch order.
    records : JobRecords
        Per-job result arrays.
    stats : dict
        Run counters (reported in :attr:`SimResult.stats <lumoscore.sim.results.SimResult>`).
    done : int
        Jobs finished or rejected.
    """

    fabric: Fabric
    cap: FloatArray
    eps: float
    isolation: bool
    exposure: str
    queue: EventQueue
    records: JobRecords
    running: dict[int, JobRun] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    done: int = 0

    @classmethod
    def new(
        cls,
        fabric: Fabric,
        jobs: Sequence[Job],
        *,
        eps: float,
        isolation: bool,
        exposure: str = "literal",
    ) -> RunState:
        """The state before the first event of a run of ``jobs`` (in trace order)."""
        return cls(
            fabric=fabric,
            cap=fabric.capacity_bps,
            eps=float(eps),
            isolation=bool(isolation),
            exposure=exposure,
            queue=EventQueue(),
            records=JobRecords.empty(jobs),
            stats=_new_stats(float(eps), exposure),
        )
