"""Load-aware routing in the simulator: the flows in flight, and a round routed when it starts.

On a fabric whose routing is load-aware (:attr:`Fabric.load_aware
<lumoscore.fabric.base.Fabric.load_aware>`, e.g. Clos ``probing``, LumosCore §6.2) every round
is routed again when its flows start: each flow scores its candidate paths by the flows in
flight on their links, the flows of **every** round in flight (all jobs) plus the flows of
the same round routed before it. :class:`InFlight` keeps those counts: a round's rows count,
with their weights, on each of their links from the round's start to its end (its barrier).

Examples
--------
>>> import numpy as np
>>> from lumoscore.sim.plan import RoundPlan
>>> rp = RoundPlan(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([2.0, 1.0]),
...                np.ones(2), 0.0, "x", 0.0, 0.0, np.array([0, 1]))
>>> flows = InFlight(3)
>>> flows.add(rp)
>>> flows.count.tolist()
[2.0, 3.0, 0.0]
>>> flows.idle(np.array([2])), flows.idle(np.array([1, 2]))
(True, False)
>>> flows.remove(rp)
>>> flows.count.tolist()
[0.0, 0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from lumoscore.fabric.base import Fabric
from lumoscore.jit import cached_jit
from lumoscore.sim.plan import RoundPlan, _solo_run
from lumoscore.sim.solo import any_marked

__all__ = ["InFlight", "reroute"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@cached_jit
def _count_rows(
    count: FloatArray, indptr: IntArray, indices: IntArray, weight: FloatArray, sign: float
) -> None:  # pragma: no cover - compiled
    for i in range(weight.size):
        w = sign * weight[i]
        for q in range(indptr[i], indptr[i + 1]):
            count[indices[q]] += w


class InFlight:
    """Flows of the rounds in flight on each of ``n_links`` links (:attr:`count`)."""

    __slots__ = ("count", "n_links")

    def __init__(self, n_links: int) -> None:
        self.n_links = int(n_links)
        self.count: FloatArray = np.zeros(self.n_links)

    def add(self, rp: RoundPlan) -> None:
        """A round's flows start."""
        _count_rows(self.count, rp.indptr, rp.indices, rp.weight, 1.0)

    def remove(self, rp: RoundPlan) -> None:
        """A round ends (or leaves the model)."""
        _count_rows(self.count, rp.indptr, rp.indices, rp.weight, -1.0)

    def idle(self, links: IntArray) -> bool:
        """Whether no flow is in flight on any of ``links`` (``not count[links].any()``
        without the copy)."""
        return not any_marked(links, self.count)


def reroute(
    rp: RoundPlan, fabric: Fabric, in_flight: FloatArray, job_id: int, *, eps: float = 0.0
) -> RoundPlan:
    """``rp`` routed again on ``fabric`` against the flows ``in_flight`` on each link.

    The same plan object when every row keeps its route (its cached solo timeline stays
    valid); otherwise a copy with the new routes and their solo timeline.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.fabric import ClosFabric
    >>> from lumoscore.sim.plan import build_plan
    >>> from lumoscore.workload import Job
    >>> fab = ClosFabric(256, 1600, radix=16, tiers=3, gpus_per_server=8, routing="probing")
    >>> job = Job(job_id=0, arrival_s=0.0, gpus=32, model="llama_7b", tp=8, pp=1, dp=4, ep=8,
    ...           iterations=1, duration_s=100.0)
    >>> rp = build_plan(job, np.arange(32), fab).rounds[0]
    >>> reroute(rp, fab, np.zeros(fab.n_links), 0) is rp  # nothing else in flight
    True
    """
    if rp.endpoints is None:
        raise ValueError("the round keeps no endpoints: its fabric's routing is not load-aware")
    src, dst, keys = rp.endpoints
    routes = fabric.rerouted(
        src, dst, keys, rp.indptr, rp.indices,
        job_id=job_id, link_load=in_flight, flow_weight=rp.weight,
    )  # fmt: skip
    if routes is None:
        return rp
    solo_s, links, peak, idle, start = _solo_run(
        routes.indptr, routes.indices, rp.weight, rp.bits, fabric.capacity_bps, eps
    )
    return replace(
        rp,
        indptr=routes.indptr,
        indices=routes.indices,
        solo_s=solo_s,
        links=links,
        peak_bps=peak,
        idle_s=idle,
        start_state=start,
    )
