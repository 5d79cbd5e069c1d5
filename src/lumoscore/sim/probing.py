"""The link load that load-aware routing sees: flows every running job sends on each link.

A fabric whose routing is load-aware (:attr:`Fabric.load_aware
<lumoscore.fabric.base.Fabric.load_aware>`, e.g. Clos ``probing``) routes a starting job's
flows around the flows running jobs already send. :class:`LinkLoad` keeps that load: per
job, the most flows any of its rounds puts on each link (:func:`~lumoscore.sim.plan.probe_load`),
summed over the running jobs.

Examples
--------
>>> import numpy as np
>>> from lumoscore.sim.plan import JobPlan, RoundPlan
>>> rp = RoundPlan(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([2.0, 1.0]),
...                np.ones(2), 0.0, "x", 0.0, 0.0, np.array([0, 1]))
>>> load = LinkLoad(3)
>>> load.add(5, JobPlan(5, (rp,), np.array([0, 1]), 1.0))
>>> load.load.tolist()
[2.0, 3.0, 0.0]
>>> load.remove(5)
>>> load.load.tolist()
[0.0, 0.0, 0.0]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.sim.plan import JobPlan, probe_load

__all__ = ["LinkLoad"]


class LinkLoad:
    """Flows the running jobs send on each of ``n_links`` links (:attr:`load`)."""

    __slots__ = ("_by_job", "load", "n_links")

    def __init__(self, n_links: int) -> None:
        self.n_links = int(n_links)
        self.load: NDArray[np.float64] = np.zeros(self.n_links)
        self._by_job: dict[int, NDArray[np.float64]] = {}

    def add(self, job_id: int, plan: JobPlan) -> None:
        """A job starts sending on its plan's links."""
        own = probe_load(plan, self.n_links)
        self._by_job[job_id] = own
        np.add(self.load, own, out=self.load)

    def remove(self, job_id: int) -> None:
        """A job stops sending."""
        np.subtract(self.load, self._by_job.pop(job_id), out=self.load)

    def replace(self, job_id: int, plan: JobPlan) -> None:
        """A running job moves to the routes of ``plan``."""
        self.remove(job_id)
        self.add(job_id, plan)
