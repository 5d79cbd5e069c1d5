"""The flow-level simulator: event core, max-min fair rates, fluid rounds, engine, results.

The engine (:mod:`~lumoscore.sim.engine`) dispatches events to the handlers of small units:
:mod:`~lumoscore.sim.admission` (queue, placement, launch, release),
:mod:`~lumoscore.sim.rounds` (the rate model: isolated, solo and fluid rounds),
:mod:`~lumoscore.sim.changes` (reconfigurations, re-routing), :mod:`~lumoscore.sim.outages`
(GPU failures, checkpoints) and :mod:`~lumoscore.sim.probing` (the load load-aware routing
sees), over one :class:`~lumoscore.sim.state.RunState`. Plug-ins are registries:
:data:`QUEUE_POLICIES`, :data:`PLACERS`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lumoscore.sim.engine import Simulator, frozen_gc
    from lumoscore.sim.events import Event, EventQueue
    from lumoscore.sim.maxmin import MaxMinResult, incidence, maxmin_rates
    from lumoscore.sim.placers import PLACERS, FailurePlacer, Placer, ServerPlacer
    from lumoscore.sim.queueing import QUEUE_POLICIES, QueuePolicy
    from lumoscore.sim.results import SimResult
    from lumoscore.sim.state import SimulationError

#: Where each public name lives; the submodule is imported on first use, so importing a light
#: submodule (e.g. :mod:`~lumoscore.sim.queueing` for the CLI's help) does not load the engine
#: and its compiled kernels.
_HOME = {
    "Simulator": "engine",
    "frozen_gc": "engine",
    "Event": "events",
    "EventQueue": "events",
    "MaxMinResult": "maxmin",
    "incidence": "maxmin",
    "maxmin_rates": "maxmin",
    "PLACERS": "placers",
    "FailurePlacer": "placers",
    "Placer": "placers",
    "ServerPlacer": "placers",
    "QUEUE_POLICIES": "queueing",
    "QueuePolicy": "queueing",
    "SimResult": "results",
    "SimulationError": "state",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
