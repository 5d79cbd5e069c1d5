"""The flow-level simulator: event core, max-min fair rates, fluid rounds, engine, results."""

from lumoscore.sim.engine import Simulator
from lumoscore.sim.events import Event, EventQueue
from lumoscore.sim.maxmin import MaxMinResult, incidence, maxmin_rates
from lumoscore.sim.placers import ServerPlacer
from lumoscore.sim.queueing import QUEUE_POLICIES
from lumoscore.sim.results import SimResult

__all__ = [
    "QUEUE_POLICIES",
    "Event",
    "EventQueue",
    "MaxMinResult",
    "ServerPlacer",
    "SimResult",
    "Simulator",
    "incidence",
    "maxmin_rates",
]
