"""The flow-level simulator: event core, max-min fair rates, queue policies, metrics."""

from lumoscore.sim.events import Event, EventQueue
from lumoscore.sim.maxmin import MaxMinResult, incidence, maxmin_rates

__all__ = ["Event", "EventQueue", "MaxMinResult", "incidence", "maxmin_rates"]
