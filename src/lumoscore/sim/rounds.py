"""The rate model of running jobs: isolated timelines, solo rounds and the shared fluid set.

A job runs ``iterations`` iterations of barrier rounds (compute, then the round's flows; the
round ends with its slowest flow). :class:`RoundModel` decides how each job and each round
advances in time, exactly:

* **isolated** — a job whose links are used by no other running job runs on its precomputed
  timeline: one ``finish`` event for the whole job (:meth:`RoundModel.begin`).
* **solo round** — a round whose links carry no other flows in flight (or only solo rounds
  whose summed peak loads fit the capacity) runs on its precomputed solo timeline: one
  ``roundend`` event (:meth:`RoundModel.run_solo`). The next round's links are claimed at the
  end of a round, ahead of its compute, when the run has no failures (reserved rounds).
* **fluid** — the other rounds share a :class:`~lumoscore.sim.fluid.FluidSet` whose flows get
  max-min fair rates; the set runs ahead in compiled code up to the next event
  (:meth:`RoundModel.advance`).

On a fabric whose routing is load-aware (probing) no round is claimed ahead: a round whose
planned links carry flows in flight when it starts is routed again against them
(:mod:`lumoscore.sim.probing`) and runs solo or fluid on those routes. A job alone on its
links (and with no flow in flight there) still runs isolated while planned routes hold:
each of its rounds would find its links idle and start on its plan. It goes round by round
when a round routed against the load may read one of its links
(:meth:`~lumoscore.fabric.base.Fabric.probed_links`), so that its flows count in flight
there, and when capacities change (from then on every round is routed again).

When a job or a round must leave its timeline (another job starts on its links, a
reconfiguration changes their capacities), it moves at its exact position (iteration, round,
bits left per flow): :meth:`RoundModel.materialize`, :meth:`RoundModel.solo_to_fluid`.

The model marks links in a shared boolean ``scratch`` array (one entry per link) to say "these
links are touched"; callers set marks, call :meth:`RoundModel.demote_isolated` or
:meth:`RoundModel.solo_to_fluid`, and clear them.

Examples
--------
A job alone on the ideal switch runs on its isolated timeline: its whole run is one event.

>>> from lumoscore.fabric import BestFabric
>>> from lumoscore.sim.plan import build_plan
>>> from lumoscore.sim.state import JobRun, RunState
>>> from lumoscore.workload import Job
>>> import numpy as np
>>> job = Job(job_id=0, arrival_s=0.0, gpus=16, model="llama_7b", tp=8, pp=2, dp=1, ep=8,
...           iterations=10, duration_s=1000.0)
>>> fab = BestFabric(gpus=64)
>>> st = RunState.new(fab, [job], eps=0.0, isolation=True)
>>> model = RoundModel(st, reserve=True)
>>> gpus = np.arange(16)
>>> run = JobRun(job, gpus, build_plan(job, gpus, fab), 0.0, isolated=True)
>>> st.running[0] = run
>>> model.begin(run, 0.0)
>>> ev = st.queue.pop()
>>> ev.kind, round(ev.time_s, 6)
('finish', 1000.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from lumoscore.fabric.base import NoRouteError
from lumoscore.sim.events import Event
from lumoscore.sim.fluid import FluidSet
from lumoscore.sim.plan import JobPlan, RoundPlan, resolo, solo_state
from lumoscore.sim.probing import InFlight, reroute
from lumoscore.sim.solo import any_marked, claim_solo, in_use, mark_in_use, release_solo
from lumoscore.sim.state import P_FINISH, P_FLUID, P_ROUND, JobRun, RunState, SimulationError

__all__ = ["Checkpoints", "RoundModel"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Solo rounds may share a link while their summed peak loads stay this far below capacity.
FIT_RTOL = 1e-9

#: How a round in flight runs: on its solo timeline or in the shared fluid set.
SOLO, FLUID = "solo", "fluid"


class Checkpoints(Protocol):
    """Checkpoint bookkeeping of a job that runs round by round (see
    :class:`~lumoscore.sim.outages.Outages`)."""

    def iteration_done(self, run: JobRun, now: float) -> None:
        """The job ended an iteration at ``now``: count the checkpoints that came due."""

    def resume(self, run: JobRun, elapsed_s: float) -> None:
        """An isolated job switches to round by round ``elapsed_s`` after it began: set the
        checkpoints it has written so far."""


class RoundModel:
    """Rates and timelines of the running jobs' rounds.

    Parameters
    ----------
    state : RunState
        The run's shared state (fabric capacities, event queue, running jobs, records).
    reserve : bool
        Claim a round's links at the end of the previous round, ahead of its compute (only
        without failures: a kill between the claim and the start would need its own
        bookkeeping).

    Attributes
    ----------
    fluid : FluidSet
        The contending flows in flight.
    inflight : dict
        Job id -> ``(round plan, start time, SOLO or FLUID)`` of every round whose flows are
        in flight (or claimed ahead of their start).
    scratch : ndarray of bool
        One mark per link (see the module docstring); all False between calls.
    checkpoints : Checkpoints, optional
        Checkpoint bookkeeping of round-by-round jobs (runs with failures).
    on_done : callable, optional
        Called as ``on_done(run, now)`` when a round-by-round job ends its last iteration.
    in_flight : InFlight, optional
        Flows of the rounds in flight per link (load-aware routing only).
    idle_routes_hold : bool
        A round whose planned links carry no flow in flight starts on its plan, not routed
        again (fabrics whose :attr:`~lumoscore.fabric.base.Fabric.keeps_idle_routes`, until
        the first capacity change).
    isolated_on : ndarray of bool, optional
        Load-aware routing: the links of the isolated jobs (each link of at most one).
    isolated_jobs : set of int
        Load-aware routing: the isolated jobs.
    """

    def __init__(self, state: RunState, *, reserve: bool) -> None:
        self.s = state
        n_links = state.fabric.n_links
        self.cap = state.cap
        self.eps = state.eps
        self.probing = state.fabric.load_aware
        self.isolation = state.isolation
        self.reserve = reserve and not self.probing
        self.fluid = FluidSet(state.cap, state.eps)
        self.scratch = np.zeros(n_links, dtype=bool)
        self.link_users = np.zeros(n_links, dtype=np.int64)  # running jobs on each link
        self.solo_count = np.zeros(n_links, dtype=np.int64)  # solo rounds on each link
        self.solo_load = np.zeros(n_links)  # sum of their peak loads, bit/s
        self.solo_until = np.full(n_links, -np.inf)  # the last time one of them sends there
        self.inflight: dict[int, tuple[RoundPlan, float, str]] = {}
        self.checkpoints: Checkpoints | None = None
        self.on_done: Callable[[JobRun, float], None] | None = None
        self.in_flight = InFlight(n_links) if self.probing else None
        # (off once capacities change: the plans were routed at the capacities of their time)
        self.idle_routes_hold = self.probing and state.fabric.keeps_idle_routes
        # load-aware routing: the links of the isolated jobs (theirs alone, see occupy) and
        # those jobs
        self.isolated_on = np.zeros(n_links, dtype=bool) if self.probing else None
        self.isolated_jobs: set[int] = set()

    # -- jobs -----------------------------------------------------------------------------
    def occupy(self, plan: JobPlan, now: float) -> bool:
        """Count a starting job on its links; return whether it may run isolated (no other
        running job on them), demoting the isolated jobs it meets to round by round.

        With load-aware routing a job runs isolated only while its planned routes hold
        (:attr:`idle_routes_hold`) and no flow is in flight on its links (a round routed
        again may have left its own plan's links): then every round of it finds its links
        idle and starts on its plan. It leaves its timeline when another job's plan shares a
        link with it or when a round routed against the load may read one of its links
        (:meth:`demote_probed`)."""
        in_flight = self.in_flight
        isolated = self.isolation and (
            in_flight is None or (self.idle_routes_hold and in_flight.idle(plan.links))
        )
        if not self.s.fabric.isolating:
            users = self.link_users
            links = plan.links
            shared = links[users[links] > 0]
            if shared.size or not self.isolation:
                isolated = False
                self._demote_on(shared, now)
            users[links] += 1
            if isolated and self.isolated_on is not None:
                self.isolated_on[links] = True
                self.isolated_jobs.add(plan.job_id)
        return isolated

    def demote_probed(self, rp: RoundPlan, now: float) -> None:
        """Before ``rp`` is routed against the flows in flight: the isolated jobs on links
        that routing may read (:meth:`~lumoscore.fabric.base.Fabric.probed_links`; all of
        them when it does not say) go round by round, so that their rounds in flight count
        there. The routes it may choose are among those links, so no isolated job is left
        on them either."""
        if self.isolated_on is None or rp.endpoints is None or not self.isolated_jobs:
            return
        # (a plan's round is probed again at every iteration: its probed links are kept)
        read = rp.start_state.get("probed_links")
        if read is None:
            read = self.s.fabric.probed_links(*rp.endpoints)
            if read is None:
                self.demote_all(now)
                return
            rp.start_state["probed_links"] = read
        if any_marked(read, self.isolated_on):
            self._demote_on(read, now)

    def demote_all(self, now: float) -> None:
        """Switch every isolated job to round by round."""
        for run in list(self.s.running.values()):
            if run.isolated:
                self.materialize(run, now)

    def crosses_running(self, links: IntArray) -> bool:
        """Whether some running job's routes may cross ``links``: a running job's plan
        on one of them (counted in ``link_users``), or True when the plans do not say
        (a fabric that isolates jobs counts none; routes chosen per round may leave the
        plan's links)."""
        if self.s.fabric.isolating or self.probing:
            return True
        return bool(self.link_users[links].any())

    def vacate(self, plan: JobPlan) -> None:
        """A job leaves its links."""
        if not self.s.fabric.isolating:
            self.link_users[plan.links] -= 1
        if self.isolated_on is not None:
            self.isolated_on[plan.links] = False  # (its own, or no one's)
            self.isolated_jobs.discard(plan.job_id)

    def replan(self, run: JobRun, plan: JobPlan, now: float) -> None:
        """A running job moves to routes of ``plan``: jobs it newly meets are demoted."""
        if not self.s.fabric.isolating:
            users = self.link_users
            users[run.plan.links] -= 1
            shared = plan.links[users[plan.links] > 0]
            self._demote_on(shared, now)
            users[plan.links] += 1
        run.plan = plan

    def _demote_on(self, links: IntArray, now: float) -> None:
        scratch = self.scratch
        scratch[links] = True
        self.demote_isolated(now)
        scratch[links] = False

    def begin(self, run: JobRun, now: float) -> None:
        """The job's GPUs are ready: start its first round (or schedule its whole run)."""
        s = self.s
        i = s.records.index[run.job.job_id]
        if math.isnan(s.records.start[i]):
            s.records.start[i] = now
        run.begin_s = now
        run.begun = True
        jid = run.job.job_id
        if run.isolated:
            s.queue.schedule(
                now + run.job.iterations * run.plan.iteration_s,
                "finish",
                key=("finish", jid),
                data=jid,
                priority=P_FINISH,
            )
        else:
            rp = run.plan.rounds[0]
            s.queue.schedule(
                now + rp.compute_s, "round", key=("round", jid), data=jid, priority=P_ROUND
            )

    def materialize(self, run: JobRun, now: float) -> None:
        """Switch an isolated job to round-by-round mode at its exact position."""
        s = self.s
        run.isolated = False
        if self.isolated_on is not None:
            self.isolated_on[run.plan.links] = False
            self.isolated_jobs.discard(run.job.job_id)
        if not run.begun:
            return  # not begun yet (start delay): it will run round by round
        s.stats["materialized"] += 1
        jid = run.job.job_id
        s.queue.cancel(("finish", jid))
        plan = run.plan
        elapsed = now - run.begin_s
        it = int(elapsed // plan.iteration_s) if plan.iteration_s > 0 else 0
        off = elapsed - it * plan.iteration_s
        run.iteration = it
        run.comm_s = it * plan.solo_comm_s
        if self.checkpoints is not None and plan.iteration_s > 0:
            self.checkpoints.resume(run, elapsed)
        for r, rp in enumerate(plan.rounds):
            run.round = r
            if off < rp.compute_s:
                s.queue.schedule(
                    now + (rp.compute_s - off),
                    "round",
                    key=("round", jid),
                    data=jid,
                    priority=P_ROUND,
                )
                return
            off -= rp.compute_s
            if off < rp.solo_s:
                run.round_start_s = now - off
                self.start_round(run, rp, now, t0=now - off)
                return
            off -= rp.solo_s
            run.comm_s += rp.solo_s
        # exactly at an iteration boundary (float round-off): next iteration's round 0
        run.round = len(plan.rounds) - 1
        run.round_start_s = now
        self.next_round(run, now)

    def demote_isolated(self, now: float) -> None:
        """Switch every isolated job crossing a link marked in ``scratch`` to round by round."""
        scratch = self.scratch
        for run in list(self.s.running.values()):
            if run.isolated and any_marked(run.plan.links, scratch):
                self.materialize(run, now)

    def resolo_marked(self) -> None:
        """Recompute the solo timelines of the running jobs crossing a marked link (their
        capacities changed)."""
        scratch, cap, eps = self.scratch, self.cap, self.eps
        for run in self.s.running.values():
            if any_marked(run.plan.links, scratch):
                run.plan = resolo(run.plan, cap, scratch, eps=eps)

    # -- rounds ---------------------------------------------------------------------------
    def on_begin(self, ev: Event) -> None:
        """A job's start delay (OCS switching, checkpoint load) is over."""
        self.begin(self.s.running[ev.data], ev.time_s)

    def on_round(self, ev: Event) -> None:
        """A round's compute is over: start its flows."""
        run = self.s.running[ev.data]
        now = ev.time_s
        rp = run.plan.rounds[run.round]
        run.round_start_s = now
        if rp.n_flows == 0 or rp.solo_s == 0.0:
            self.next_round(run, now)
            return
        if self.in_flight is not None and not (
            self.idle_routes_hold and self.in_flight.idle(rp.links)
        ):
            self.demote_probed(rp, now)
            try:
                rp = reroute(rp, self.s.fabric, self.in_flight.count, run.job.job_id, eps=self.eps)
            except NoRouteError:  # failed links leave no way around: it stalls until a repair
                stats = self.s.stats
                stats["stalled_reroutes"] = stats.get("stalled_reroutes", 0) + 1
        self.start_round(run, rp, now)

    def on_roundend(self, ev: Event) -> None:
        """A solo round's last flow is done."""
        self.end_inflight(ev.data)
        self.next_round(self.s.running[ev.data], ev.time_s)

    def next_round(self, run: JobRun, now: float) -> None:
        """The current round's flows are done: start the next round's compute."""
        run.comm_s += now - run.round_start_s
        run.round += 1
        if run.round == len(run.plan.rounds):
            run.round = 0
            run.iteration += 1
            if self.checkpoints is not None:
                self.checkpoints.iteration_done(run, now)
            if run.iteration == run.job.iterations:
                assert self.on_done is not None
                self.on_done(run, now)
                return
        rp = run.plan.rounds[run.round]
        t_start = now + rp.compute_s
        jid = run.job.job_id
        # claim the links of the next round now: if it fits, it is a solo round that
        # starts after its compute, without an event of its own; anything that would
        # touch these links before it starts hands it back (unreserve)
        if self.reserve and rp.n_flows and rp.solo_s > 0.0 and self.run_solo(jid, rp, t_start):
            self.s.stats["reserved_rounds"] += 1
            run.round_start_s = t_start
            return
        self.s.queue.schedule(t_start, "round", key=("round", jid), data=jid, priority=P_ROUND)

    def start_round(self, run: JobRun, rp: RoundPlan, now: float, t0: float | None = None) -> None:
        """Start a round's flows (``t0``: when they started, for a resumed round)."""
        jid = run.job.job_id
        t0 = now if t0 is None else t0
        if self.isolation and self.run_solo(jid, rp, t0):
            return
        self.solo_to_fluid_on(rp.links, now)
        self.s.stats["fluid_rounds"] += 1
        self.join_fluid(jid, rp, t0, now)

    def run_solo(self, jid: int, rp: RoundPlan, t0: float) -> bool:
        """Run a round on its solo timeline from ``t0`` if its links allow it: no flow of
        the fluid set on them, and on links shared with other solo rounds still sending
        there the summed peak loads fit (then no shared link ever saturates, so each flow
        keeps its solo max-min rate: its bottleneck is an unshared link)."""
        solo, shared, left = claim_solo(
            rp.links,
            self.peak_of(rp),
            self.idle_of(rp),
            t0,
            self.cap,
            self.fluid.link_rows,
            self.solo_count,
            self.solo_load,
            self.solo_until,
            FIT_RTOL,
        )
        if not solo:
            return False
        stats = self.s.stats
        stats["solo_rounds"] += 1
        stats["shared_solo_rounds"] += int(shared)
        stats["solo_rounds_on_left_links"] += int(left)
        self._enter(jid, rp, t0, SOLO)
        self.s.queue.schedule(
            t0 + rp.solo_s, "roundend", key=("roundend", jid), data=jid, priority=P_ROUND
        )
        return True

    def unreserve(self, jid: int) -> None:
        """A solo round claimed ahead of its start goes back to an ordinary start event
        (someone needs its links before it starts)."""
        t0 = self.inflight[jid][1]
        q = self.s.queue
        q.cancel(("roundend", jid))
        self.end_inflight(jid)
        stats = self.s.stats
        stats["solo_rounds"] -= 1
        stats["reserved_rounds"] -= 1
        stats["unreserved_rounds"] += 1
        q.schedule(t0, "round", key=("round", jid), data=jid, priority=P_ROUND)

    def peak_of(self, rp: RoundPlan) -> FloatArray:
        """A round's peak load on each of its links (capacity when not recorded)."""
        return self.cap[rp.links] if rp.peak_bps is None else rp.peak_bps

    def idle_of(self, rp: RoundPlan) -> FloatArray:
        """When, after its start, a round's last flow leaves each of its links."""
        return np.full(rp.links.size, rp.solo_s) if rp.idle_s is None else rp.idle_s

    def end_inflight(self, jid: int) -> None:
        """A round in flight ends or is withdrawn: give back its solo claims."""
        rp, _, mode = self.inflight.pop(jid)
        if self.in_flight is not None:
            self.in_flight.remove(rp)
        if mode == SOLO:
            release_solo(rp.links, self.peak_of(rp), self.solo_count, self.solo_load,
                         self.solo_until)  # fmt: skip

    def withdraw(self, jid: int) -> None:
        """Take a job's round in flight (if any) out of the model for good (a kill)."""
        if jid in self.inflight:
            if self.inflight[jid][2] == FLUID:
                self.fluid.remove_job(jid)
            self.end_inflight(jid)

    def join_fluid(self, jid: int, rp: RoundPlan, t0: float, now: float) -> None:
        """Put a round that started at ``t0`` into the fluid set at its exact progress
        (the fluid set has been run up to ``now``)."""
        # with a warm start for exact sets: the round's own rates and bottlenecks then
        # ((1+eps) sets solve from scratch when rounds join)
        rem = rate = bott = None
        eps = self.eps
        if t0 < now or eps == 0:
            rem, rate, bott = solo_state(rp, self.cap, now - t0, eps=eps)
        # (isolating runs keep the parts of the round that meet no other round on their
        # solo timeline; the reference mode solves every row in the shared set)
        started = t0 if self.isolation else None
        self.fluid.add(jid, rp, rem, now_s=now, rates=rate, bottleneck=bott, started_s=started)
        self._enter(jid, rp, t0, FLUID)

    def _enter(self, jid: int, rp: RoundPlan, t0: float, mode: str) -> None:
        """A round's flows are in flight (or claimed ahead of their start) in ``mode``."""
        self.inflight[jid] = (rp, t0, mode)
        if self.in_flight is not None:
            self.in_flight.add(rp)

    def solo_to_fluid_on(self, links: IntArray, now: float) -> None:
        """:meth:`solo_to_fluid` with ``links`` marked too (each may be listed more than
        once); the marks are restored, not cleared: a caller may have marked some of these
        links and read the marks after this (e.g. a capacity change re-solos the plans
        crossing them)."""
        scratch = self.scratch
        before = scratch[links]
        scratch[links] = True
        self.solo_to_fluid(now)
        scratch[links] = before

    def solo_to_fluid(self, now: float) -> None:
        """Move every solo in-flight round still sending on a link marked in ``scratch``
        into the fluid set, and then every solo round sharing a link in use with one
        moved: in the fluid set a round's loads are no longer bounded by its solo peaks.
        (A link a solo round has left for good, alone, carries none of its flows.)
        ``scratch`` is marked further while this runs and restored on return (each moved
        round's links as they were: no copy of the whole mask)."""
        marks = self.scratch
        saved: list[tuple[IntArray, NDArray[np.bool_]]] = []
        inflight = self.inflight
        moved = True
        try:
            while moved:
                moved = False
                for k in [k for k, v in inflight.items() if v[2] == SOLO]:
                    rp, t0, _ = inflight[k]
                    if t0 > now:  # claimed ahead, not started: start it in due time
                        if marks[rp.links].any():
                            self.unreserve(k)
                        continue
                    idle = self.idle_of(rp)
                    if in_use(rp.links, idle, t0, now, marks):
                        self.s.queue.cancel(("roundend", k))
                        self.end_inflight(k)
                        self.join_fluid(k, rp, t0, now)
                        saved.append((rp.links, marks[rp.links]))
                        mark_in_use(rp.links, idle, t0, now, marks)
                        moved = True
        finally:
            for links, before in reversed(saved):
                marks[links] = before

    def move_round(self, run: JobRun, now: float) -> None:
        """A rerouted job's round in flight continues on its new plan's routes, in the fluid
        set, with the bits its flows still have to send (a round claimed ahead of its start
        simply starts on the new plan)."""
        jid = run.job.job_id
        inflight = self.inflight
        if jid in inflight and inflight[jid][1] > now:
            self.unreserve(jid)  # it starts on the new plan
        if jid in inflight and inflight[jid][2] == SOLO:
            self.s.queue.cancel(("roundend", jid))
            rp, t0_round, _ = inflight[jid]
            self.end_inflight(jid)
            self.join_fluid(jid, rp, t0_round, now)
        if jid not in inflight:
            return
        t0_round = inflight[jid][1]
        rem = self.fluid.remove_job(jid)
        self.end_inflight(jid)
        new_rp = run.plan.rounds[run.round]
        if new_rp.n_flows != rem.size:
            raise SimulationError(
                f"job {jid}: rerouted round {run.round} has {new_rp.n_flows} flows, "
                f"the round in flight {rem.size}"
            )
        # solo rounds still sending on the new routes meet the moved bits there
        self.solo_to_fluid_on(new_rp.links, now)
        self.fluid.add(jid, new_rp, rem, now_s=now)
        self._enter(jid, new_rp, t0_round, FLUID)

    # -- the fluid set --------------------------------------------------------------------
    def advance(self, nxt: Event | None) -> float | None:
        """Run the fluid set ahead, in compiled code, up to the next event ``nxt`` (``None``:
        no event is left). Returns the time at which some fluid round ended (its barrier,
        handled here) when that comes first, else ``None``."""
        fluid = self.fluid
        if not fluid.busy():
            return None
        t_next = math.inf if nxt is None else nxt.time_s
        if fluid.run_until(t_next) and not (
            nxt is not None and fluid.clock_s == t_next and nxt.priority < P_FLUID
        ):
            now = fluid.clock_s
            self.s.queue.now_s = now
            self.s.stats["events"] += 1
            self.fluid_rounds_done(now)
            return now
        if nxt is None and len(fluid):
            raise SimulationError(
                f"{len(fluid)} flows in flight cannot progress (zero capacity) and "
                "no event is left that could change it"
            )
        return None

    def fluid_rounds_done(self, now: float) -> None:
        """Rounds in the fluid set whose last flow finished at ``now`` end (barrier)."""
        running = self.s.running
        for jid in sorted(self.fluid.pop_finished()):
            self.end_inflight(jid)
            self.next_round(running[jid], now)
