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
have to send), so the result is the same as simulating everything round by round. With
load-aware routing (probing) it also switches when a round routed against the flows in flight
may read one of its links (:mod:`lumoscore.sim.rounds`).

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

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import numpy as np

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import Fabric
from lumoscore.limits import check_seed
from lumoscore.sim.admission import Admission
from lumoscore.sim.changes import FabricChanges
from lumoscore.sim.events import Event
from lumoscore.sim.failures import FailureModel
from lumoscore.sim.link_failures import LinkFailureModel, LinkOutages
from lumoscore.sim.ocs_switching import OcsSwitching
from lumoscore.sim.outages import Outages
from lumoscore.sim.placers import PLACERS, FailurePlacer, Placer
from lumoscore.sim.queueing import QUEUE_POLICIES
from lumoscore.sim.results import SimResult
from lumoscore.sim.rounds import RoundModel
from lumoscore.sim.state import P_ARRIVE, RunState, SimulationError
from lumoscore.sim.topology_log import TopologyLog
from lumoscore.traffic.exposure import EXPOSURES
from lumoscore.workload.job import Job

__all__ = ["Handler", "Placer", "SimulationError", "Simulator", "frozen_gc"]

#: An event handler: called with the event when it is due.
Handler = Callable[[Event], None]


class Simulator:
    """Simulate ``jobs`` on ``fabric``.

    Parameters
    ----------
    fabric : Fabric
        The network (:mod:`lumoscore.fabric`).
    jobs : sequence of Job
        The trace (any order; sorted by arrival, ties by job id).
    placer : Placer or str, optional
        A :class:`~lumoscore.sim.placers.Placer`, or the name of one in
        :data:`~lumoscore.sim.placers.PLACERS`. Default: the fabric's
        :attr:`~lumoscore.fabric.base.Fabric.default_placer` (LumosCore places its own jobs;
        electrical fabrics use whole-server best-fit placement).
    queue : str
        Queue policy, a name in :data:`~lumoscore.sim.queueing.QUEUE_POLICIES`.
    progress : callable, optional
        Called as ``progress(finished_jobs, total_jobs)`` after each job finishes.
    isolation : bool
        Use the isolated fast path (default). ``False`` simulates every job round by round;
        results are the same (tested), only slower.
    eps : float
        0 (default) for exact max-min rates; > 0 for the (1+eps)-approximate allocation
        (Awerbuch-Shavitt): every rate is within a factor 1+eps below the level it would
        reach. Reported in the summary. Not a fast path: on contended fabrics it is several
        times slower than exact (``docs/simulator.md``).
    failures : FailureModel, optional
        GPU failures (:mod:`lumoscore.sim.failures`): a job on a failed GPU loses the work
        since its last checkpoint and goes back to the head of the queue. The placer must be
        a :class:`~lumoscore.sim.placers.FailurePlacer`.
    link_failures : LinkFailureModel, optional
        Leaf-spine cable failures and repairs (:mod:`lumoscore.sim.link_failures`): the
        fabric loses the capacity, jobs are routed around links that went down; none is
        lost. The fabric must have :meth:`~lumoscore.fabric.base.Fabric.cables`.
    record_topology : bool
        Record the pod-level circuits over time (:mod:`lumoscore.sim.topology_log`, a fabric
        with ``ocs_circuits``; LumosCore Fig. 10) in the result's ``topology`` table.
    seed : int
        Seed of every random choice of the run (the failure processes).
    exposure : str
        The traffic model, a name in :data:`~lumoscore.traffic.exposure.EXPOSURES`:
        ``"literal"`` (each class takes exactly its exposed share at 1.6 Tb/s) or
        ``"research"`` (the traffic of the paper's published runs). Reported in the summary.
    """

    def __init__(
        self,
        fabric: Fabric,
        jobs: Sequence[Job],
        *,
        placer: Placer | str | None = None,
        queue: str = "fifo",
        progress: Callable[[int, int], None] | None = None,
        isolation: bool = True,
        eps: float = 0.0,
        failures: FailureModel | None = None,
        link_failures: LinkFailureModel | None = None,
        record_topology: bool = False,
        seed: int = 0,
        exposure: str = "literal",
    ) -> None:
        self.fabric = fabric
        self.jobs = sorted(jobs, key=lambda j: (j.arrival_s, j.job_id))
        ids = [j.job_id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise ConfigError("job ids must be unique in a trace")
        if placer is None:
            placer = fabric.default_placer
        if isinstance(placer, str):
            placer = PLACERS[placer](fabric)
        if not isinstance(placer, Placer):
            raise ConfigError(
                f"placer must be a name ({', '.join(PLACERS)}) or an object with place() and "
                f"release(), got {type(placer).__name__}"
            )
        self.placer = placer
        self.queue = QUEUE_POLICIES.check(queue)
        self.progress = progress
        self.isolation = isolation
        if not (eps >= 0 and math.isfinite(eps)):
            raise ConfigError(f"eps must be a finite number >= 0, got {eps!r}")
        self.eps = float(eps)
        self.failures = failures if failures is not None and failures.enabled else None
        if self.failures is not None and not isinstance(placer, FailurePlacer):
            raise ConfigError("failures need a placer with fail_gpus() and repair_gpus()")
        self.link_failures = (
            link_failures if link_failures is not None and link_failures.enabled else None
        )
        if self.link_failures is not None:
            # a ConfigError now for a fabric without units of the element
            fabric.failure_units(self.link_failures.element)
        if record_topology and not hasattr(fabric, "ocs_circuits"):
            raise ConfigError(
                f"record_topology needs a fabric with OCS circuits; {fabric.name!r} has none"
            )
        self.record_topology = bool(record_topology)
        self.seed = check_seed(seed)
        self.exposure = EXPOSURES.check(exposure)

    # ------------------------------------------------------------------------------------
    def run(self) -> SimResult:
        """Run the whole trace; return per-job results and run statistics."""
        wall0 = time.perf_counter()
        state = RunState.new(
            self.fabric, self.jobs, eps=self.eps, isolation=self.isolation, exposure=self.exposure
        )
        model, admission, handlers, links = self._build(state)
        topo = None
        if self.record_topology:
            topo = TopologyLog(self.fabric)
            topo.record(0.0)
            admission.changes.observers.append(topo.record)
        loop(state, model, handlers)
        res = self._result(state, model, admission, links, time.perf_counter() - wall0)
        return res if topo is None else replace(res, topology=topo.frame())

    def _build(
        self, state: RunState
    ) -> tuple[RoundModel, Admission, dict[str, Handler], LinkOutages | None]:
        """Make the run's units, wire them, and schedule the first events; return the rate
        model, the admission unit, the event handlers by kind and the link outages (if
        any)."""
        fm = self.failures
        model = RoundModel(state, reserve=self.isolation and fm is None)
        changes = FabricChanges(state, model)
        admission = Admission(
            state,
            model,
            changes,
            self.placer,
            QUEUE_POLICIES[self.queue],
            restart_s=fm.restart_s if fm is not None else 0.0,
            progress=self.progress,
        )
        model.on_done = admission.finish
        handlers: dict[str, Handler] = {
            "arrive": admission.on_arrive,
            "begin": model.on_begin,
            "round": model.on_round,
            "roundend": model.on_roundend,
            "finish": admission.on_finish,
            "settle": changes.on_settle,
        }
        for i, job in enumerate(self.jobs):
            state.queue.schedule(job.arrival_s, "arrive", data=i, priority=P_ARRIVE)
        if fm is not None:
            assert isinstance(self.placer, FailurePlacer)
            rng = np.random.default_rng(self.seed)
            outages = Outages(state, model, admission, self.placer, fm, rng)
            model.checkpoints = outages
            handlers["fail"] = outages.on_fail
            handlers["repair"] = outages.on_repair
            outages.schedule_next(0.0)
        if getattr(self.fabric, "switch_interval_s", 0.0) > 0:
            switching = OcsSwitching(state, changes)
            handlers["ocsswitch"] = switching.on_switch
            switching.start()
        links = None
        if self.link_failures is not None:
            links = LinkOutages(
                state, changes, self.link_failures, np.random.default_rng([self.seed, 1]),
                admission,
            )  # fmt: skip
            handlers["linkfail"] = links.on_fail
            handlers["linkrepair"] = links.on_repair
            handlers["linkdraw"] = links.on_draw
            links.start()
        return model, admission, handlers, links

    def _result(
        self,
        state: RunState,
        model: RoundModel,
        admission: Admission,
        links: LinkOutages | None,
        wall_s: float,
    ) -> SimResult:
        rec = state.records
        return SimResult.build(
            fabric=self.fabric.describe(),
            jobs=self.jobs,
            arrival_s=np.array([j.arrival_s for j in self.jobs]),
            start_s=rec.start,
            finish_s=rec.finish,
            comm_actual_s=rec.comm_actual,
            comm_ideal_s=rec.comm_ideal,
            solo_iteration_s=rec.solo_iter,
            isolated=rec.isolated,
            rejected=rec.rejected,
            restarts=rec.restarts,
            lost_s=rec.lost_s,
            requeue_wait_s=rec.requeue_wait_s,
            fragmented=rec.fragmented,
            queue_t=np.array(admission.queue_t),
            queue_len=np.array(admission.queue_len),
            stats={**state.stats, **model.fluid.counters, "wall_s": wall_s},
            link_events=None if links is None else links.table(),
        )


def loop(state: RunState, model: RoundModel, handlers: dict[str, Handler]) -> None:
    """Run events until none is left: before each, the shared fluid set runs ahead to it
    (its flow completions are events too); then the event goes to its kind's handler."""
    q = state.queue
    stats = state.stats
    advance = model.advance
    while True:
        nxt = q.peek()
        if advance(nxt) is not None:
            continue
        if nxt is None:
            return
        ev = q.pop()
        stats["events"] += 1
        try:
            handler = handlers[ev.kind]
        except KeyError:
            raise SimulationError(
                f"event kind {ev.kind!r} has no handler; handled: {', '.join(handlers)}"
            ) from None
        handler(ev)


@contextlib.contextmanager
def frozen_gc() -> Iterator[None]:
    """Leave the objects that exist now out of the cyclic garbage collector's passes while
    the block runs (``gc.freeze``), for a process that runs simulations one at a time.

    A run makes many short-lived objects (events, plans, round states); a full collector
    pass over the modules, compiled kernels and trace that exist before it costs 0.1-0.3 s per
    4096-GPU run. ``gc.freeze`` is process-wide: do not use it where other threads run
    simulations (a threaded Dask worker). Nothing is done when the collector is off or the
    process has frozen objects itself.

    Examples
    --------
    >>> with frozen_gc():
    ...     pass
    """
    freeze = gc.isenabled() and gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()
