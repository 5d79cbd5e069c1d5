"""Fabric changes during a run: capacity changes (OCS reconfigurations) and re-routing.

A fabric returns a :class:`~lumoscore.fabric.base.FabricChange` when it admits or releases a
job. :class:`FabricChanges` applies it exactly: every job whose links change first leaves its
precomputed timeline at the old capacities (isolated jobs go round by round, solo rounds
join the fluid set), then the capacities change, then the timelines crossing them are
recomputed; running jobs whose routes crossed a link that went away are routed again, with
the bits of their round in flight moved onto the new routes.

It also builds every job's plan (:meth:`FabricChanges.routed`): routing depends on the fabric
as it is at that moment (its capacities, and for load-aware routing the flows in flight).

Examples
--------
>>> import numpy as np
>>> from lumoscore.fabric import BestFabric
>>> from lumoscore.fabric.base import FabricChange
>>> from lumoscore.sim.rounds import RoundModel
>>> from lumoscore.sim.state import RunState
>>> fab = BestFabric(gpus=16)
>>> st = RunState.new(fab, [], eps=0.0, isolation=True)
>>> changes = FabricChanges(st, RoundModel(st, reserve=True))
>>> changes.apply(FabricChange(links=np.array([0]), capacity_bps=np.array([5e11])), 0.0)
>>> float(fab.capacity_bps[0]), st.stats["reconfigurations"]
(500000000000.0, 1)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from lumoscore.fabric.base import FabricChange, NoRouteError
from lumoscore.sim.events import Event
from lumoscore.sim.plan import JobPlan, build_plan
from lumoscore.sim.rounds import RoundModel
from lumoscore.sim.state import P_FINISH, JobRun, RunState, SimulationError
from lumoscore.workload.job import Job

__all__ = ["FabricChanges"]

IntArray = NDArray[np.int64]


class FabricChanges:
    """Capacity changes, routing and re-routing of one run.

    Parameters
    ----------
    state : RunState
        The run's shared state.
    model : RoundModel
        The rate model whose timelines the changes move.
    """

    def __init__(self, state: RunState, model: RoundModel) -> None:
        self.s = state
        self.model = model
        #: Called with the time after every change applied (e.g. a topology log).
        self.observers: list[Callable[[float], None]] = []

    def apply(self, change: FabricChange, now: float) -> None:
        """Apply a capacity change exactly: first take every job whose links change off
        its precomputed timeline (at the old capacities), then apply, then re-solve. The
        links of its later stages (:attr:`~lumoscore.fabric.base.FabricChange.later`) settle
        in ``settle`` events."""
        s, model = self.s, self.model
        for delay_s, links in change.later:
            s.queue.schedule(now + delay_s, "settle", data=links, priority=P_FINISH)
        if change.empty:
            return
        s.stats["reconfigurations"] += 1
        scratch = model.scratch
        scratch[change.links] = True
        # (no running job's routes on the links, e.g. new circuits: none to demote or re-solo)
        crossed = model.crosses_running(change.links)
        if crossed:
            model.demote_isolated(now)
            if model.idle_routes_hold:  # (from now on every round is routed again)
                model.demote_all(now)
            # the rounds in flight of the jobs routed again below keep the progress they
            # made at the old capacities: into the shared set now, with those they meet
            inflight = model.inflight
            moving = [inflight[j][0].links for j in change.reroute if j in inflight]
            model.solo_to_fluid_on(np.concatenate([np.zeros(0, np.int64), *moving]), now)
        model.fluid.attach(change.links)
        s.fabric.apply(change)
        model.idle_routes_hold = False  # (plans were routed at the old capacities)
        model.fluid.touch()
        if crossed:
            model.resolo_marked()
        scratch[change.links] = False
        for observe in self.observers:
            observe(now)
        for jid in change.reroute:
            if jid in s.running:
                self.reroute(s.running[jid], now)

    def on_settle(self, ev: Event) -> None:
        """A stage of a staged reconfiguration is done: its links reach the capacity of the
        fabric's configuration (:meth:`~lumoscore.fabric.base.Fabric.settle`)."""
        self.s.stats["settled_stages"] = self.s.stats.get("settled_stages", 0) + 1
        self.apply(self.s.fabric.settle(ev.data), ev.time_s)

    def reroute(self, run: JobRun, now: float) -> None:
        """Route a running job again (its routes crossed a link that went away): new plan
        from the next round on, and a round in flight moves its remaining bits onto the new
        routes now (in the shared fluid set). A job that failed links leave without a route
        keeps its plan and stalls on the dead links until they are repaired
        (``stats["stalled_reroutes"]``)."""
        jid = run.job.job_id
        s = self.s
        s.fabric.forget_routes(jid)
        t0 = time.perf_counter()
        try:
            plan = self.routed(run.job, run.gpus)
        except NoRouteError:  # no way around the failed links: it stalls until a repair
            s.stats["stalled_reroutes"] = s.stats.get("stalled_reroutes", 0) + 1
            return
        s.stats["plans_s"] += time.perf_counter() - t0
        s.stats["reroutes"] += 1
        self.model.replan(run, plan, now)
        self.model.move_round(run, now)

    def routed(self, job: Job, gpus: IntArray) -> JobPlan:
        """The job's plan on the fabric as it is now; its flows must be able to finish."""
        s = self.s
        plan = build_plan(job, gpus, s.fabric, eps=s.eps, exposure=s.exposure)
        cap = s.cap
        for r, rp in enumerate(plan.rounds):
            if not math.isfinite(rp.solo_s):
                dead = rp.links[cap[rp.links] <= 0.0]
                raise SimulationError(
                    f"job {job.job_id}: round {r} ({rp.tag}) is routed over links of no "
                    f"capacity {dead[:8].tolist()}: its flows can never finish (the fabric "
                    "must route around links it has taken away)"
                )
        return plan
