"""GPU failures and repairs during a run, and the checkpoints that limit what they cost.

:class:`Outages` draws failures from a :class:`~lumoscore.sim.failures.FailureModel` (one
pending ``fail`` event at a time), takes a failed GPU out of service until its ``repair``
event, and kills the job on it: the job keeps the iterations its last checkpoint holds and
what is left of it goes back to the head of the queue. It also keeps the checkpoint count of
jobs that run round by round (it implements :class:`~lumoscore.sim.rounds.Checkpoints`).

Examples
--------
>>> from lumoscore.fabric import BestFabric
>>> from lumoscore.sim import Simulator
>>> from lumoscore.sim.failures import FailureModel
>>> from lumoscore.workload import Job
>>> jobs = [Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=8,
...             iterations=100, duration_s=20 * 86400.0)]
>>> fm = FailureModel(rate_per_gpu_day=0.01, checkpoint_interval_s=3600.0)
>>> res = Simulator(BestFabric(gpus=64), jobs, failures=fm, seed=1).run()
>>> int(res.jobs["restarts"][0]) > 0, bool(res.jobs["lost_s"][0] > 0)
(True, True)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from lumoscore.sim.admission import Admission
from lumoscore.sim.events import Event
from lumoscore.sim.failures import FailureModel
from lumoscore.sim.placers import FailurePlacer
from lumoscore.sim.rounds import RoundModel
from lumoscore.sim.state import P_FINISH, JobRun, RunState

__all__ = ["Outages"]

#: Events of a job that a kill cancels.
_JOB_EVENTS = ("finish", "round", "roundend", "begin")


class Outages:
    """Failures, repairs and checkpoints of one run.

    Parameters
    ----------
    state : RunState
        The run's shared state.
    model : RoundModel
        The rate model (a killed job's round in flight leaves it).
    admission : Admission
        Frees a killed job and queues what is left of it.
    placer : FailurePlacer
        Takes failed GPUs out of service and back.
    failures : FailureModel
        The failure process and checkpoint parameters.
    rng : numpy.random.Generator
        Draws the failures.
    """

    def __init__(
        self,
        state: RunState,
        model: RoundModel,
        admission: Admission,
        placer: FailurePlacer,
        failures: FailureModel,
        rng: np.random.Generator,
    ) -> None:
        self.s = state
        self.model = model
        self.admission = admission
        self.placer = placer
        self.fm = failures
        self.rng = rng

    def schedule_next(self, now: float) -> None:
        """Draw the next failure after ``now`` (none once every job is done)."""
        s = self.s
        if s.done < s.records.n:
            t, gpu, hard, repair = self.fm.draw(self.rng, now, s.fabric.gpus)
            s.queue.schedule(t, "fail", data=(gpu, hard, repair), priority=P_FINISH)

    # -- events ---------------------------------------------------------------------------
    def on_fail(self, ev: Event) -> None:
        """A GPU fails: the job on it (if any) is killed; the GPU is out until repaired."""
        s, adm = self.s, self.admission
        now = ev.time_s
        gpu, hard, repair = ev.data
        self.schedule_next(now)
        if adm.gpu_down[gpu]:
            return
        s.stats["failures"] += 1
        s.stats["hard_failures"] += int(hard)
        adm.gpu_down[gpu] = True
        owner = int(adm.gpu_owner[gpu])
        if owner >= 0:
            s.stats["failures_hitting_jobs"] += 1
            self.kill(s.running[owner], now)
        self.placer.fail_gpus(np.array([gpu]))
        s.queue.schedule(now + repair, "repair", data=gpu, priority=P_FINISH)
        adm.try_start(now)

    def on_repair(self, ev: Event) -> None:
        """A failed GPU is back."""
        adm = self.admission
        adm.gpu_down[ev.data] = False
        self.placer.repair_gpus(np.array([ev.data]))
        if adm.waiting:
            adm.try_start(ev.time_s)

    # -- kills ----------------------------------------------------------------------------
    def kill(self, run: JobRun, now: float) -> None:
        """A GPU of the job failed: stop it, keep what its last checkpoint holds, and put
        the rest of the job back at the head of the queue."""
        s, fm, rec = self.s, self.fm, self.s.records
        jid = run.job.job_id
        i = rec.index[jid]
        plan = run.plan
        ran_s = now - run.begin_s if run.begun else 0.0
        for kind in _JOB_EVENTS:
            s.queue.cancel((kind, jid))
        if run.isolated:
            its = int(ran_s // plan.iteration_s) if plan.iteration_s > 0 else 0
            kept = fm.kept_iterations(ran_s, plan.iteration_s)
            rec.comm_actual[i] += its * plan.solo_comm_s
        else:
            its, kept = run.iteration, run.ckpt_iters
            if fm.checkpoints(ran_s) > run.ckpt_k:
                kept = its  # a checkpoint came due after the last iteration boundary
            self.model.withdraw(jid)
            rec.comm_actual[i] += run.comm_s
        rec.comm_ideal[i] += its * plan.ideal_comm_s
        kept = min(kept, run.job.iterations - 1)
        # everything since launch (start-up included) but the iterations kept
        rec.lost_s[i] += max(now - run.launched_s - kept * plan.iteration_s, 0.0)
        rec.restarts[i] += 1
        rec.failed_at[i] = now
        self.admission.free(run, now)
        left = run.job.iterations - kept
        rest = replace(
            run.job, iterations=left, duration_s=run.job.duration_s * left / run.job.iterations
        )
        self.admission.requeue(rest)

    # -- checkpoints (RoundModel's Checkpoints) -------------------------------------------
    def iteration_done(self, run: JobRun, now: float) -> None:
        """The job ended an iteration at ``now``: count the checkpoints that came due."""
        fm = self.fm
        k = fm.checkpoints(now - run.begin_s)
        if k > run.ckpt_k:  # a checkpoint was due during this iteration
            run.ckpt_k = k
            on_time = run.begin_s + k * fm.checkpoint_interval_s == now
            run.ckpt_iters = run.iteration if on_time else run.iteration - 1

    def resume(self, run: JobRun, elapsed_s: float) -> None:
        """An isolated job switches to round by round ``elapsed_s`` after it began."""
        run.ckpt_k = self.fm.checkpoints(elapsed_s)
        run.ckpt_iters = self.fm.kept_iterations(elapsed_s, run.plan.iteration_s)
