"""Exposure models: how a job's exposed communication is put on the wire.

An exposure model turns one iteration of a placed job into rounds of flows
(``model(job, gpus, spec, aggregate=True, *, key="leaf", port_gbps=1600.0) -> Schedule``). Both
models keep a trace's ``duration_s`` as the job's run time on the ideal network, so one trace
gives one Best; they differ in how much of the exposed time goes on the wire and how it is
split into rounds:

* ``literal`` (:func:`~lumoscore.traffic.iteration.iteration_flows`): our reading of the
  paper's §6.1: each class takes exactly its exposed share of the iteration at 1.6 Tb/s;
* ``research`` (:func:`~lumoscore.traffic.research.research_flows`): the traffic of the
  published runs (every share leaves compute, part of it goes on the wire).

Examples
--------
>>> from lumoscore.topology.cluster import ClusterSpec
>>> from lumoscore.workload import Job
>>> spec = ClusterSpec(pods=2, k_leaf=32, k_spine=32, tau=2)
>>> job = Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=16,
...           iterations=10, duration_s=1000.0)
>>> {name: round(sum(r.ideal_s for r in EXPOSURES[name](job, range(64), spec)), 2)
...  for name in EXPOSURES}  # seconds on the wire per 100 s iteration
{'literal': 33.17, 'research': 6.63}
"""

from __future__ import annotations

from collections.abc import Callable

from lumoscore.registry import Registry
from lumoscore.traffic.flows import Schedule
from lumoscore.traffic.iteration import iteration_flows
from lumoscore.traffic.research import research_flows

__all__ = ["EXPOSURES"]

#: Exposure models by name.
EXPOSURES: Registry[Callable[..., Schedule]] = Registry("exposure model")
EXPOSURES.register("literal", iteration_flows)
EXPOSURES.register("research", research_flows)
