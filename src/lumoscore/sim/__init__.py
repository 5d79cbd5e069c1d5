"""The flow-level simulator: event core, max-min fair rates, fluid rounds, engine, results.

The engine (:mod:`~lumoscore.sim.engine`) dispatches events to the handlers of small units:
:mod:`~lumoscore.sim.admission` (queue, placement, launch, release),
:mod:`~lumoscore.sim.rounds` (the rate model: isolated, solo and fluid rounds),
:mod:`~lumoscore.sim.changes` (reconfigurations, re-routing), :mod:`~lumoscore.sim.outages`
(GPU failures, checkpoints) and :mod:`~lumoscore.sim.probing` (the load load-aware routing
sees), over one :class:`~lumoscore.sim.state.RunState`. Plug-ins are registries:
:data:`QUEUE_POLICIES`, :data:`PLACERS`.
"""

from lumoscore.sim.engine import Simulator, frozen_gc
from lumoscore.sim.events import Event, EventQueue
from lumoscore.sim.maxmin import MaxMinResult, incidence, maxmin_rates
from lumoscore.sim.placers import PLACERS, FailurePlacer, Placer, ServerPlacer
from lumoscore.sim.queueing import QUEUE_POLICIES, QueuePolicy
from lumoscore.sim.results import SimResult
from lumoscore.sim.state import SimulationError

__all__ = [
    "PLACERS",
    "QUEUE_POLICIES",
    "Event",
    "EventQueue",
    "FailurePlacer",
    "MaxMinResult",
    "Placer",
    "QueuePolicy",
    "ServerPlacer",
    "SimResult",
    "SimulationError",
    "Simulator",
    "frozen_gc",
    "incidence",
    "maxmin_rates",
]
