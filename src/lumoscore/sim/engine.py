"""The flow-level simulator of multi-tenant LLM training on a fabric.

Jobs arrive, wait in a queue, are placed on GPUs and run ``iterations`` iterations of barrier
rounds (compute, then the round's flows; the round ends with its slowest flow). Flows share
links max-min fairly.

Two execution modes keep it fast while staying exact:

* **isolated** — a job whose links (NICs and every fabric link any of its rounds uses) are used
  by no other running job cannot be slowed by anyone, so its whole run is known when it starts:
  ``iterations * iteration_s`` with ``iteration_s`` from the fluid model of its rounds alone.
  One event per job.
* **contending** — a job that shares a link with another running job runs round by round in a
  shared :class:`~lumoscore.sim.fluid.FluidSet`: its flows' rates are recomputed (max-min over
  all contending flows in flight) whenever a round starts or a flow finishes.

When a starting job shares links with an isolated one, the isolated job is switched to
contending at its exact current position (iteration, round, phase and the bits its flows still
have to send), so the result is the same as simulating everything round by round.

Contending jobs get the same treatment per round: a round whose links carry no other flows in
flight runs on its precomputed solo timeline (one event, no rate computation); only when a
round starts on links that are busy do the overlapping rounds move into the shared fluid set,
at their exact progress. Rounds are short next to compute, so most rounds never meet another.

Examples
--------
>>> from lumoscore.fabric import BestFabric
>>> from lumoscore.workload import Job
>>> jobs = [Job(job_id=0, arrival_s=0.0, gpus=16, model="llama_7b", tp=8, pp=2, dp=1, ep=8,
...             iterations=10, duration_s=1000.0)]
>>> res = Simulator(BestFabric(gpus=64), jobs).run()
>>> round(float(res.jobs["jrt_s"][0]), 6)
1000.0
"""

from __future__ import annotations

import gc
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError, SolverError
from lumoscore.fabric.base import Fabric, FabricChange
from lumoscore.sim.events import EventQueue
from lumoscore.sim.failures import FailureModel
from lumoscore.sim.fluid import FluidSet
from lumoscore.sim.placers import ServerPlacer
from lumoscore.sim.plan import (
    JobPlan,
    RoundPlan,
    build_plan,
    probe_load,
    resolo,
    solo_state,
)
from lumoscore.sim.queueing import blocking, check_policy, ordered
from lumoscore.sim.results import SimResult
from lumoscore.sim.solo import claim_solo, in_use, mark_in_use, release_solo
from lumoscore.workload.job import Job

__all__ = ["Placer", "SimulationError", "Simulator"]

IntArray = NDArray[np.int64]


class SimulationError(SolverError):
    """The simulation cannot go on (e.g. flows stuck on links of zero capacity)."""


# Event priorities at equal times: finishes free resources before arrivals try to use them.
_P_FINISH, _P_ROUND, _P_FLUID, _P_BEGIN, _P_ARRIVE = 0, 1, 2, 3, 4
# Solo rounds may share a link while their summed peak loads stay this far below capacity.
_FIT_RTOL = 1e-9


class Placer:
    """What the simulator needs from a placement policy (duck-typed).

    A fabric that places its own jobs (LumosCore: placement, logical topology and OCS
    configuration go together) implements these methods and is used as the placer.
    """

    def place(self, job: Job) -> IntArray | None:  # pragma: no cover
        """GPUs for the job in rank order, or ``None`` if it does not fit now."""
        raise NotImplementedError

    def release(self, job_id: int) -> None:  # pragma: no cover
        """Free the job's GPUs."""
        raise NotImplementedError


@dataclass
class _Run:
    job: Job
    gpus: IntArray
    plan: JobPlan
    begin_s: float
    isolated: bool
    iteration: int = 0
    round: int = 0
    round_start_s: float = 0.0
    comm_s: float = 0.0  # actual communication time accumulated (contending mode)
    begun: bool = False
    launched_s: float = 0.0
    ckpt_k: int = 0  # checkpoints written so far (one every checkpoint_interval_s of run time)
    ckpt_iters: int = 0  # iterations the last checkpoint holds


class Simulator:
    """Simulate ``jobs`` on ``fabric``.

    Parameters
    ----------
    fabric : Fabric
        The network (:mod:`lumoscore.fabric`).
    jobs : sequence of Job
        The trace (any order; sorted by arrival, ties by job id).
    placer : object with ``place(job_id, n_gpus)`` and ``release(job_id)``, optional
        Default: the fabric itself when it has ``place`` (LumosCore), else
        :class:`~lumoscore.sim.placers.ServerPlacer` over the fabric's GPUs.
    queue : str
        Queue policy, one of :data:`~lumoscore.sim.queueing.QUEUE_POLICIES`.
    progress : callable, optional
        Called as ``progress(finished_jobs, total_jobs)`` after each job finishes.
    eps : float
        0 (default) for exact max-min rates; > 0 for the (1+eps)-approximate allocation
        (Awerbuch-Shavitt): every rate is within a factor 1+eps below the level it would
        reach. Reported in the summary. Not a fast path: on contended fabrics it is several
        times slower than exact (``docs/simulator.md``).
    isolation : bool
        Use the isolated fast path (default). ``False`` simulates every job round by round;
        results are the same (tested), only slower.
    failures : FailureModel, optional
        GPU failures (:mod:`lumoscore.sim.failures`): a job on a failed GPU loses the work
        since its last checkpoint and goes back to the head of the queue.
    seed : int
        Seed of every random choice of the run (the failure process).
    """

    def __init__(
        self,
        fabric: Fabric,
        jobs: Sequence[Job],
        *,
        placer: Placer | ServerPlacer | None = None,
        queue: str = "fifo",
        progress: Callable[[int, int], None] | None = None,
        isolation: bool = True,
        eps: float = 0.0,
        failures: FailureModel | None = None,
        seed: int = 0,
    ) -> None:
        self.fabric = fabric
        self.jobs = sorted(jobs, key=lambda j: (j.arrival_s, j.job_id))
        ids = [j.job_id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise ConfigError("job ids must be unique in a trace")
        if placer is None:
            placer = (
                fabric  # type: ignore[assignment]
                if callable(getattr(fabric, "place", None))
                else ServerPlacer(fabric.gpus, fabric.spec.gpus_per_server)
            )
        self.placer = placer
        self.queue = check_policy(queue)
        self.progress = progress
        self.isolation = isolation
        if not (eps >= 0 and math.isfinite(eps)):
            raise ConfigError(f"eps must be a finite number >= 0, got {eps!r}")
        self.eps = float(eps)
        self.failures = failures if failures is not None and failures.enabled else None
        if self.failures is not None and not (
            callable(getattr(placer, "fail_gpus", None))
            and callable(getattr(placer, "repair_gpus", None))
        ):
            raise ConfigError("failures need a placer with fail_gpus() and repair_gpus()")
        self.seed = int(seed)

    # ------------------------------------------------------------------------------------
    def run(self) -> SimResult:
        """Run the whole trace; return per-job results and run statistics."""
        # A run makes many short-lived objects (events, plans, round states). The objects
        # that exist before it (modules, compiled kernels, the trace) are left out of the
        # cyclic collector's passes meanwhile (``gc.freeze``): a full pass over them cost
        # 0.1-0.3 s per 4096-GPU run. Not done when the process has frozen objects itself.
        freeze = gc.isenabled() and gc.get_freeze_count() == 0
        if freeze:
            gc.freeze()
        try:
            return self._run()
        finally:
            if freeze:
                gc.unfreeze()

    def _run(self) -> SimResult:
        wall0 = time.perf_counter()
        fab = self.fabric
        cap = fab.capacity_bps
        q = EventQueue()
        fluid = FluidSet(cap, self.eps)
        eps = self.eps
        link_users = np.zeros(fab.n_links, dtype=np.int64)
        solo_count = np.zeros(fab.n_links, dtype=np.int64)  # solo rounds on each link
        solo_load = np.zeros(fab.n_links)  # sum of their peak loads, bit/s
        solo_until = np.full(fab.n_links, -np.inf)  # the last time one of them sends there
        scratch = np.zeros(fab.n_links, dtype=bool)
        inflight: dict[int, tuple[RoundPlan, float, str]] = {}
        waiting: deque[Job] = deque()
        running: dict[int, _Run] = {}
        n = len(self.jobs)
        index = {j.job_id: i for i, j in enumerate(self.jobs)}
        start = np.full(n, np.nan)
        finish = np.full(n, np.nan)
        comm_actual = np.zeros(n)
        comm_ideal = np.zeros(n)
        solo_iter = np.full(n, np.nan)
        isolated_flag = np.zeros(n, dtype=bool)
        rejected = np.zeros(n, dtype=bool)
        restarts = np.zeros(n, dtype=np.int64)
        lost_s = np.zeros(n)  # run time lost to failures (work redone after restarts)
        requeue_wait_s = np.zeros(n)  # time waiting in the queue again after failures
        failed_at = np.full(n, np.nan)
        fragmented = np.zeros(n, dtype=bool)  # blocked while enough GPUs were free in total
        gpu_owner = np.full(fab.gpus, -1, dtype=np.int64)
        gpu_down = np.zeros(fab.gpus, dtype=bool)
        fm = self.failures
        # claim a solo round's links when its compute starts (not with failures: a kill
        # between claim and start would need its own bookkeeping)
        reserve = self.isolation and fm is None
        rng = np.random.default_rng(self.seed)
        # probing routing sees the flows running jobs send on each link
        probe_bg = np.zeros(fab.n_links) if getattr(fab, "routing", None) == "probing" else None
        probed: dict[int, NDArray[np.float64]] = {}
        queue_t: list[float] = []
        queue_len: list[int] = []
        stats = {
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
            "eps": self.eps,
        }
        done = 0  # jobs finished or rejected

        for i, job in enumerate(self.jobs):
            q.schedule(job.arrival_s, "arrive", data=i, priority=_P_ARRIVE)

        def next_failure(now: float) -> None:
            if fm is not None and done < n:
                t, gpu, hard, repair = fm.draw(rng, now, fab.gpus)
                q.schedule(t, "fail", data=(gpu, hard, repair), priority=_P_FINISH)

        next_failure(0.0)

        def record_queue(now: float) -> None:
            queue_t.append(now)
            queue_len.append(len(waiting))

        def complete(run: _Run, now: float) -> None:
            nonlocal done
            i = index[run.job.job_id]
            finish[i] = now
            if run.isolated:
                comm_actual[i] += run.job.iterations * run.plan.solo_comm_s
            else:
                comm_actual[i] += run.comm_s
            comm_ideal[i] += run.job.iterations * run.plan.ideal_comm_s
            if restarts[i]:
                lost_s[i] += run.begin_s - run.launched_s  # loading the last checkpoint
            free(run, now)
            done += 1
            if self.progress is not None:
                self.progress(done, n)

        def free(run: _Run, now: float) -> None:
            """Give a job's links, GPUs and circuits back."""
            if probe_bg is not None:
                np.subtract(probe_bg, probed.pop(run.job.job_id), out=probe_bg)
            if not fab.isolating:
                link_users[run.plan.links] -= 1
            del running[run.job.job_id]
            gpu_owner[run.gpus] = -1
            if self.placer is not fab:
                self.placer.release(run.job.job_id)
            change_fabric(fab.release(run.job.job_id), now)  # a placing fabric frees GPUs here

        def kill(run: _Run, now: float) -> None:
            """A GPU of the job failed: stop it, keep what its last checkpoint holds, and put
            the rest of the job back at the head of the queue."""
            assert fm is not None
            jid = run.job.job_id
            i = index[jid]
            plan = run.plan
            ran_s = now - run.begin_s if run.begun else 0.0
            for kind in ("finish", "round", "roundend", "begin"):
                q.cancel((kind, jid))
            if run.isolated:
                its = int(ran_s // plan.iteration_s) if plan.iteration_s > 0 else 0
                kept = fm.kept_iterations(ran_s, plan.iteration_s)
                comm_actual[i] += its * plan.solo_comm_s
            else:
                its, kept = run.iteration, run.ckpt_iters
                if fm.checkpoints(ran_s) > run.ckpt_k:
                    kept = its  # a checkpoint came due after the last iteration boundary
                if jid in inflight:
                    if inflight[jid][2] == "fluid":
                        fluid.remove_job(jid)
                    end_inflight(jid)
                comm_actual[i] += run.comm_s
            comm_ideal[i] += its * plan.ideal_comm_s
            kept = min(kept, run.job.iterations - 1)
            # everything since launch (start-up included) but the iterations kept
            lost_s[i] += max(now - run.launched_s - kept * plan.iteration_s, 0.0)
            restarts[i] += 1
            failed_at[i] = now
            free(run, now)
            left = run.job.iterations - kept
            rest = replace(
                run.job, iterations=left, duration_s=run.job.duration_s * left / run.job.iterations
            )
            waiting.appendleft(rest)

        def next_round(run: _Run, now: float) -> None:
            """The current round's flows are done: start the next round's compute."""
            run.comm_s += now - run.round_start_s
            run.round += 1
            if run.round == len(run.plan.rounds):
                run.round = 0
                run.iteration += 1
                if fm is not None:
                    k = fm.checkpoints(now - run.begin_s)
                    if k > run.ckpt_k:  # a checkpoint was due during this iteration
                        run.ckpt_k = k
                        on_time = run.begin_s + k * fm.checkpoint_interval_s == now
                        run.ckpt_iters = run.iteration if on_time else run.iteration - 1
                if run.iteration == run.job.iterations:
                    complete(run, now)
                    try_start(now)
                    return
            rp = run.plan.rounds[run.round]
            t_start = now + rp.compute_s
            # claim the links of the next round now: if it fits, it is a solo round that
            # starts after its compute, without an event of its own; anything that would
            # touch these links before it starts hands it back (unreserve)
            if reserve and rp.n_flows and rp.solo_s > 0.0 and run_solo(run.job.job_id, rp, t_start):
                stats["reserved_rounds"] += 1
                run.round_start_s = t_start
                return
            q.schedule(
                t_start,
                "round",
                key=("round", run.job.job_id),
                data=run.job.job_id,
                priority=_P_ROUND,
            )

        def unreserve(jid: int) -> None:
            """A solo round claimed ahead of its start goes back to an ordinary start event
            (someone needs its links before it starts)."""
            t0 = inflight[jid][1]
            q.cancel(("roundend", jid))
            end_inflight(jid)
            stats["solo_rounds"] -= 1
            stats["reserved_rounds"] -= 1
            stats["unreserved_rounds"] += 1
            q.schedule(t0, "round", key=("round", jid), data=jid, priority=_P_ROUND)

        def peak_of(rp: RoundPlan) -> NDArray[np.float64]:
            return cap[rp.links] if rp.peak_bps is None else rp.peak_bps

        def idle_of(rp: RoundPlan) -> NDArray[np.float64]:
            return np.full(rp.links.size, rp.solo_s) if rp.idle_s is None else rp.idle_s

        def end_inflight(jid: int) -> None:
            rp, _, mode = inflight.pop(jid)
            if mode == "solo":
                release_solo(rp.links, peak_of(rp), solo_count, solo_load, solo_until)

        def join_fluid(jid: int, rp: RoundPlan, t0: float, now: float) -> None:
            """Put a round that started at ``t0`` into the fluid set at its exact progress
            (the fluid set has been run up to ``now``)."""
            # with a warm start for exact sets: the round's own rates and bottlenecks then
            # ((1+eps) sets solve from scratch when rounds join)
            rem = rate = bott = None
            if t0 < now or eps == 0:
                rem, rate, bott = solo_state(rp, cap, now - t0, eps=eps)
            # (isolating runs keep the parts of the round that meet no other round on their
            # solo timeline; the reference mode solves every row in the shared set)
            started = t0 if self.isolation else None
            fluid.add(jid, rp, rem, now_s=now, rates=rate, bottleneck=bott, started_s=started)
            inflight[jid] = (rp, t0, "fluid")

        def solo_to_fluid(now: float) -> None:
            """Move every solo in-flight round still sending on a link marked in ``scratch``
            into the fluid set, and then every solo round sharing a link in use with one
            moved: in the fluid set a round's loads are no longer bounded by its solo peaks.
            (A link a solo round has left for good, alone, carries none of its flows.)"""
            marks = scratch.copy()
            moved = True
            while moved:
                moved = False
                for k in [k for k, v in inflight.items() if v[2] == "solo"]:
                    rp, t0, _ = inflight[k]
                    if t0 > now:  # claimed ahead, not started: start it in due time
                        if marks[rp.links].any():
                            unreserve(k)
                        continue
                    idle = idle_of(rp)
                    if in_use(rp.links, idle, t0, now, marks):
                        q.cancel(("roundend", k))
                        end_inflight(k)
                        join_fluid(k, rp, t0, now)
                        mark_in_use(rp.links, idle, t0, now, marks)
                        moved = True

        def demote_isolated(now: float) -> None:
            """Switch every isolated job crossing a link marked in ``scratch`` to round by round."""
            for run in list(running.values()):
                if run.isolated and scratch[run.plan.links].any():
                    materialize(run, now)

        def run_solo(jid: int, rp: RoundPlan, t0: float) -> bool:
            """Run a round on its solo timeline from ``t0`` if its links allow it: no flow of
            the fluid set on them, and on links shared with other solo rounds still sending
            there the summed peak loads fit (then no shared link ever saturates, so each flow
            keeps its solo max-min rate: its bottleneck is an unshared link)."""
            solo, shared, left = claim_solo(
                rp.links,
                peak_of(rp),
                idle_of(rp),
                t0,
                cap,
                fluid.link_rows,
                solo_count,
                solo_load,
                solo_until,
                _FIT_RTOL,
            )
            if not solo:
                return False
            stats["solo_rounds"] += 1
            stats["shared_solo_rounds"] += int(shared)
            stats["solo_rounds_on_left_links"] += int(left)
            inflight[jid] = (rp, t0, "solo")
            q.schedule(
                t0 + rp.solo_s, "roundend", key=("roundend", jid), data=jid, priority=_P_ROUND
            )
            return True

        def start_round(run: _Run, rp: RoundPlan, now: float, t0: float | None = None) -> None:
            """Start a round's flows (``t0``: when they started, for a resumed round)."""
            jid = run.job.job_id
            t0 = now if t0 is None else t0
            links = rp.links
            if self.isolation and run_solo(jid, rp, t0):
                return
            # (restore, not clear: a caller may have marked some of these links and read the
            # marks after this, e.g. a capacity change re-solos the plans crossing them)
            before = scratch[links]
            scratch[links] = True
            solo_to_fluid(now)
            scratch[links] = before
            stats["fluid_rounds"] += 1
            join_fluid(jid, rp, t0, now)

        def fluid_rounds_done(now: float) -> None:
            """Rounds in the fluid set whose last flow finished at ``now`` end (barrier)."""
            for jid in sorted(fluid.pop_finished()):
                end_inflight(jid)
                next_round(running[jid], now)

        def materialize(run: _Run, now: float) -> None:
            """Switch an isolated job to round-by-round mode at its exact position."""
            run.isolated = False
            if not run.begun:
                return  # not begun yet (start delay): it will run round by round
            stats["materialized"] += 1
            q.cancel(("finish", run.job.job_id))
            plan = run.plan
            elapsed = now - run.begin_s
            it = int(elapsed // plan.iteration_s) if plan.iteration_s > 0 else 0
            off = elapsed - it * plan.iteration_s
            run.iteration = it
            run.comm_s = it * plan.solo_comm_s
            if fm is not None and plan.iteration_s > 0:
                run.ckpt_k = fm.checkpoints(elapsed)
                run.ckpt_iters = fm.kept_iterations(elapsed, plan.iteration_s)
            for r, rp in enumerate(plan.rounds):
                run.round = r
                if off < rp.compute_s:
                    q.schedule(
                        now + (rp.compute_s - off),
                        "round",
                        key=("round", run.job.job_id),
                        data=run.job.job_id,
                        priority=_P_ROUND,
                    )
                    return
                off -= rp.compute_s
                if off < rp.solo_s:
                    run.round_start_s = now - off
                    start_round(run, rp, now, t0=now - off)
                    return
                off -= rp.solo_s
                run.comm_s += rp.solo_s
            # exactly at an iteration boundary (float round-off): next iteration's round 0
            run.round = len(plan.rounds) - 1
            run.round_start_s = now
            next_round(run, now)

        def begin(run: _Run, now: float) -> None:
            """The job's GPUs are ready: start its first round (or schedule its whole run)."""
            i = index[run.job.job_id]
            if math.isnan(start[i]):
                start[i] = now
            run.begin_s = now
            run.begun = True
            if run.isolated:
                q.schedule(
                    now + run.job.iterations * run.plan.iteration_s,
                    "finish",
                    key=("finish", run.job.job_id),
                    data=run.job.job_id,
                    priority=_P_FINISH,
                )
            else:
                rp = run.plan.rounds[0]
                q.schedule(
                    now + rp.compute_s,
                    "round",
                    key=("round", run.job.job_id),
                    data=run.job.job_id,
                    priority=_P_ROUND,
                )

        def change_fabric(change: FabricChange, now: float) -> None:
            """Apply a capacity change exactly: first take every job whose links change off
            its precomputed timeline (at the old capacities), then apply, then re-solve."""
            if change.empty:
                return
            stats["reconfigurations"] += 1
            scratch[change.links] = True
            demote_isolated(now)
            solo_to_fluid(now)
            fluid.attach(change.links)
            fab.apply(change)
            fluid.touch()
            for run in running.values():
                if scratch[run.plan.links].any():
                    run.plan = resolo(run.plan, cap, scratch, eps=eps)
            scratch[change.links] = False
            for jid in change.reroute:
                if jid in running:
                    reroute(running[jid], now)

        def reroute(run: _Run, now: float) -> None:
            """Route a running job again (its routes crossed a link that went away): new plan
            from the next round on, and a round in flight moves its remaining bits onto the new
            routes now (in the shared fluid set)."""
            jid = run.job.job_id
            fab.forget_routes(jid)
            t0 = time.perf_counter()
            plan = routed(run.job, run.gpus)
            stats["plans_s"] += time.perf_counter() - t0
            stats["reroutes"] += 1
            if probe_bg is not None:
                np.subtract(probe_bg, probed[jid], out=probe_bg)
                probed[jid] = probe_load(plan, fab.n_links)
                np.add(probe_bg, probed[jid], out=probe_bg)
            if not fab.isolating:
                link_users[run.plan.links] -= 1
                shared = plan.links[link_users[plan.links] > 0]
                scratch[shared] = True
                demote_isolated(now)
                scratch[shared] = False
                link_users[plan.links] += 1
            run.plan = plan
            if jid in inflight and inflight[jid][1] > now:
                unreserve(jid)  # it starts on the new plan
            if jid in inflight and inflight[jid][2] == "solo":
                q.cancel(("roundend", jid))
                rp, t0_round, _ = inflight[jid]
                end_inflight(jid)
                join_fluid(jid, rp, t0_round, now)
            if jid in inflight:
                t0_round = inflight[jid][1]
                rem = fluid.remove_job(jid)
                end_inflight(jid)
                new_rp = plan.rounds[run.round]
                if new_rp.n_flows != rem.size:
                    raise SimulationError(
                        f"job {jid}: rerouted round {run.round} has {new_rp.n_flows} flows, "
                        f"the round in flight {rem.size}"
                    )
                # solo rounds still sending on the new routes meet the moved bits there
                scratch[new_rp.links] = True
                solo_to_fluid(now)
                scratch[new_rp.links] = False
                fluid.add(jid, new_rp, rem, now_s=now)
                inflight[jid] = (new_rp, t0_round, "fluid")

        def routed(job: Job, gpus: IntArray) -> JobPlan:
            """The job's plan on the fabric as it is now; its flows must be able to finish."""
            plan = build_plan(job, gpus, fab, eps=eps, link_load=probe_bg)
            for r, rp in enumerate(plan.rounds):
                if not math.isfinite(rp.solo_s):
                    dead = rp.links[cap[rp.links] <= 0.0]
                    raise SimulationError(
                        f"job {job.job_id}: round {r} ({rp.tag}) is routed over links of no "
                        f"capacity {dead[:8].tolist()}: its flows can never finish (the fabric "
                        "must route around links it has taken away)"
                    )
            return plan

        def launch(job: Job, gpus: IntArray, now: float) -> None:
            change = fab.admit(job.job_id, gpus)
            change_fabric(change, now)
            t0 = time.perf_counter()
            plan = routed(job, gpus)
            if probe_bg is not None:
                probed[job.job_id] = probe_load(plan, fab.n_links)
                np.add(probe_bg, probed[job.job_id], out=probe_bg)
            stats["plans_s"] += time.perf_counter() - t0
            i = index[job.job_id]
            solo_iter[i] = plan.iteration_s
            isolated = self.isolation
            if not fab.isolating:
                links = plan.links
                shared = links[link_users[links] > 0]
                if shared.size or not self.isolation:
                    isolated = False
                    scratch[shared] = True
                    demote_isolated(now)
                    scratch[shared] = False
                link_users[links] += 1
            isolated_flag[i] = isolated
            run = _Run(job, gpus, plan, now, isolated, launched_s=now)
            running[job.job_id] = run
            gpu_owner[gpus] = job.job_id
            delay = change.delay_s
            if restarts[i]:
                requeue_wait_s[i] += now - failed_at[i]
                assert fm is not None
                delay = max(delay, fm.restart_s)  # checkpoint load overlaps the OCS switch
            if delay > 0:
                q.schedule(
                    now + delay,
                    "begin",
                    key=("begin", job.job_id),
                    data=job.job_id,
                    priority=_P_BEGIN,
                )
            else:
                begin(run, now)

        def free_gpus() -> int:
            pl = self.placer
            if hasattr(pl, "free_gpus"):
                return int(pl.free_gpus)
            return int(np.count_nonzero((gpu_owner < 0) & ~gpu_down))

        def try_start(now: float) -> None:
            started = False
            for job in ordered(self.queue, list(waiting)):
                gpus = self.placer.place(job)
                if gpus is None:
                    if free_gpus() >= job.gpus:
                        stats["fragmentation_blocks"] += 1
                        fragmented[index[job.job_id]] = True
                    if blocking(self.queue):
                        break
                    continue
                waiting.remove(job)
                started = True
                launch(job, np.asarray(gpus, dtype=np.int64), now)
            if started:
                record_queue(now)

        while True:
            nxt = q.peek()
            if len(fluid) or fluid.finished_pending():
                # run the contending flows ahead, in compiled code, up to the next event
                t_next = math.inf if nxt is None else nxt.time_s
                if fluid.run_until(t_next) and not (
                    nxt is not None and fluid.clock_s == t_next and nxt.priority < _P_FLUID
                ):
                    now = q.now_s = fluid.clock_s
                    stats["events"] += 1
                    fluid_rounds_done(now)
                    continue
                if nxt is None and len(fluid):
                    raise SimulationError(
                        f"{len(fluid)} flows in flight cannot progress (zero capacity) and "
                        "no event is left that could change it"
                    )
            if nxt is None:
                break
            ev = q.pop()
            now = ev.time_s
            stats["events"] += 1
            if ev.kind == "arrive":
                job = self.jobs[ev.data]
                if job.gpus > fab.gpus:
                    rejected[ev.data] = True
                    done += 1
                    continue
                waiting.append(job)
                record_queue(now)
                try_start(now)
            elif ev.kind == "finish":
                complete(running[ev.data], now)
                try_start(now)
            elif ev.kind == "round":
                run = running[ev.data]
                rp = run.plan.rounds[run.round]
                run.round_start_s = now
                if rp.n_flows == 0 or rp.solo_s == 0.0:
                    next_round(run, now)
                    continue
                start_round(run, rp, now)
            elif ev.kind == "roundend":
                run = running[ev.data]
                end_inflight(run.job.job_id)
                next_round(run, now)
            elif ev.kind == "fail":
                gpu, hard, repair = ev.data
                next_failure(now)
                if gpu_down[gpu]:
                    continue
                stats["failures"] += 1
                stats["hard_failures"] += int(hard)
                gpu_down[gpu] = True
                owner = int(gpu_owner[gpu])
                if owner >= 0:
                    stats["failures_hitting_jobs"] += 1
                    kill(running[owner], now)
                self.placer.fail_gpus(np.array([gpu]))  # type: ignore[union-attr]
                q.schedule(now + repair, "repair", data=gpu, priority=_P_FINISH)
                try_start(now)
            elif ev.kind == "repair":
                gpu_down[ev.data] = False
                self.placer.repair_gpus(np.array([ev.data]))  # type: ignore[union-attr]
                if waiting:
                    try_start(now)
            elif ev.kind == "begin":
                begin(running[ev.data], now)
        arrival = np.array([j.arrival_s for j in self.jobs])
        return SimResult.build(
            fabric=fab.describe(),
            jobs=self.jobs,
            arrival_s=arrival,
            start_s=start,
            finish_s=finish,
            comm_actual_s=comm_actual,
            comm_ideal_s=comm_ideal,
            solo_iteration_s=solo_iter,
            isolated=isolated_flag,
            rejected=rejected,
            restarts=restarts,
            lost_s=lost_s,
            requeue_wait_s=requeue_wait_s,
            fragmented=fragmented,
            queue_t=np.array(queue_t),
            queue_len=np.array(queue_len),
            stats={**stats, **fluid.counters, "wall_s": time.perf_counter() - wall0},
        )
