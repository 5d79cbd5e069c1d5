"""Admission: the queue of waiting jobs, placement, launch and release.

:class:`Admission` offers the waiting jobs to the placer in the order of the queue policy
(:data:`~lumoscore.sim.queueing.QUEUE_POLICIES`), launches each job that gets GPUs (the
fabric admits it, the job's plan is routed, the rate model counts it on its links) and, when a
job ends, records it and gives its GPUs, links and circuits back.

Examples
--------
Two jobs that each need the whole cluster: the second waits for the first.

>>> from lumoscore.fabric import BestFabric
>>> from lumoscore.sim import Simulator
>>> from lumoscore.workload import Job
>>> jobs = [Job(job_id=i, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=8,
...             iterations=10, duration_s=100.0) for i in range(2)]
>>> res = Simulator(BestFabric(gpus=64), jobs).run()
>>> res.jobs["start_s"].round(6).tolist()
[0.0, 100.0]
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.fabric.base import NoRouteError
from lumoscore.sim.changes import FabricChanges
from lumoscore.sim.events import Event
from lumoscore.sim.placers import Placer
from lumoscore.sim.queueing import QueuePolicy
from lumoscore.sim.rounds import RoundModel
from lumoscore.sim.state import P_BEGIN, JobRun, RunState
from lumoscore.workload.job import Job

__all__ = ["Admission"]

IntArray = NDArray[np.int64]


class Admission:
    """Waiting jobs, placement and the GPUs of one run.

    Parameters
    ----------
    state : RunState
        The run's shared state.
    model : RoundModel
        The rate model (launched jobs join it).
    changes : FabricChanges
        Applies the fabric's changes at admission and release, and routes jobs.
    placer : Placer
        Chooses the GPUs of a job.
    policy : QueuePolicy
        The order in which waiting jobs are offered to the placer.
    restart_s : float
        Extra start-up time of a job restarted after a failure (its checkpoint load).
    progress : callable, optional
        Called as ``progress(finished_jobs, total_jobs)`` after each job finishes.

    Attributes
    ----------
    waiting : deque of Job
        Jobs waiting to start, in arrival order (a job restarted after a failure first).
    gpu_owner : ndarray of int
        The job on each GPU (-1: none).
    gpu_down : ndarray of bool
        GPUs that failed and are not repaired yet.
    """

    def __init__(
        self,
        state: RunState,
        model: RoundModel,
        changes: FabricChanges,
        placer: Placer,
        policy: QueuePolicy,
        *,
        restart_s: float = 0.0,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.s = state
        self.model = model
        self.changes = changes
        self.placer = placer
        self.policy = policy
        self.restart_s = float(restart_s)
        self.progress = progress
        self.waiting: deque[Job] = deque()
        gpus = state.fabric.gpus
        self.gpu_owner = np.full(gpus, -1, dtype=np.int64)
        self.gpu_down = np.zeros(gpus, dtype=bool)
        self.queue_t: list[float] = []
        self.queue_len: list[int] = []

    # -- events ---------------------------------------------------------------------------
    def on_arrive(self, ev: Event) -> None:
        """A job arrives: it waits, and starts if the queue lets it (a job larger than the
        cluster is rejected)."""
        s = self.s
        job = s.records.jobs[ev.data]
        if job.gpus > s.fabric.gpus:
            s.records.rejected[ev.data] = True
            s.done += 1
            return
        self.waiting.append(job)
        self.record_queue(ev.time_s)
        self.try_start(ev.time_s)

    def on_finish(self, ev: Event) -> None:
        """An isolated job ends its last iteration."""
        self.finish(self.s.running[ev.data], ev.time_s)

    # -- queue and placement --------------------------------------------------------------
    def record_queue(self, now: float) -> None:
        """Record the queue depth at ``now``."""
        self.queue_t.append(now)
        self.queue_len.append(len(self.waiting))

    def free_gpus(self) -> int:
        """GPUs a job could be placed on now (held by no job, not failed)."""
        free = getattr(self.placer, "free_gpus", None)
        if free is not None:
            return int(free)
        return int(np.count_nonzero((self.gpu_owner < 0) & ~self.gpu_down))

    def try_start(self, now: float) -> None:
        """Offer the waiting jobs to the placer in the policy's order; launch those placed."""
        started = False
        s = self.s
        blocking = self.policy.blocking
        for job in self.policy.order(list(self.waiting)):
            gpus = self.placer.place(job)
            if gpus is None:
                if self.free_gpus() >= job.gpus:
                    s.stats["fragmentation_blocks"] += 1
                    s.records.fragmented[s.records.index[job.job_id]] = True
                if blocking:
                    break
                continue
            if not self.launch(job, np.asarray(gpus, dtype=np.int64), now):
                if blocking:  # its flows cannot be routed around failed links: it waits
                    break
                continue
            self.waiting.remove(job)
            started = True
        if started:
            self.record_queue(now)

    def launch(self, job: Job, gpus: IntArray, now: float) -> bool:
        """Start ``job`` on ``gpus``: the fabric admits it, its plan is routed, and it runs
        isolated or round by round (after the fabric's start delay, if any). False (the
        placement undone, ``stats["unroutable_placements"]``) when failed links leave some
        of its flows without a route."""
        s, rec = self.s, self.s.records
        change = s.fabric.admit(job.job_id, gpus)
        self.changes.apply(change, now)
        t0 = time.perf_counter()
        try:
            plan = self.changes.routed(job, gpus)
        except NoRouteError:
            s.stats["unroutable_placements"] = s.stats.get("unroutable_placements", 0) + 1
            self.give_back(job.job_id, now)
            return False
        s.stats["plans_s"] += time.perf_counter() - t0
        i = rec.index[job.job_id]
        rec.solo_iter[i] = plan.iteration_s
        isolated = self.model.occupy(plan, now)
        rec.isolated[i] = isolated
        run = JobRun(job, gpus, plan, now, isolated, launched_s=now)
        s.running[job.job_id] = run
        self.gpu_owner[gpus] = job.job_id
        delay = change.delay_s
        if rec.restarts[i]:
            rec.requeue_wait_s[i] += now - rec.failed_at[i]
            delay = max(delay, self.restart_s)  # checkpoint load overlaps the OCS switch
        if delay > 0:
            s.queue.schedule(
                now + delay, "begin", key=("begin", job.job_id), data=job.job_id,
                priority=P_BEGIN,
            )  # fmt: skip
        else:
            self.model.begin(run, now)
        return True

    # -- leaving --------------------------------------------------------------------------
    def finish(self, run: JobRun, now: float) -> None:
        """A job ends its last iteration: record it, free it, start waiting jobs."""
        self.complete(run, now)
        self.try_start(now)

    def complete(self, run: JobRun, now: float) -> None:
        """Record a finished job and give its resources back."""
        s, rec = self.s, self.s.records
        i = rec.index[run.job.job_id]
        rec.finish[i] = now
        if run.isolated:
            rec.comm_actual[i] += run.job.iterations * run.plan.solo_comm_s
        else:
            rec.comm_actual[i] += run.comm_s
        rec.comm_ideal[i] += run.job.iterations * run.plan.ideal_comm_s
        if rec.restarts[i]:
            rec.lost_s[i] += run.begin_s - run.launched_s  # loading the last checkpoint
        self.free(run, now)
        s.done += 1
        if self.progress is not None:
            self.progress(s.done, rec.n)

    def free(self, run: JobRun, now: float) -> None:
        """Give a job's links, GPUs and circuits back."""
        s = self.s
        jid = run.job.job_id
        self.model.vacate(run.plan)
        del s.running[jid]
        self.gpu_owner[run.gpus] = -1
        self.give_back(jid, now)

    def give_back(self, jid: int, now: float) -> None:
        """Release a job's GPUs to the placer and its circuits to the fabric."""
        fab: Any = self.s.fabric
        if self.placer is not fab:
            self.placer.release(jid)
        self.changes.apply(fab.release(jid), now)  # a placing fabric frees GPUs here

    def requeue(self, job: Job) -> None:
        """Put a job at the head of the queue (what is left of a job killed by a failure)."""
        self.waiting.appendleft(job)
