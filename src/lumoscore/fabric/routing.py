"""Up-port choice policies for multi-rooted trees (ECMP, balanced, source, probing).

In a folded Clos a flow climbs to the lowest tier whose block holds both ends; at every tier
below that it picks one of the switch's ``n_ports`` up-ports, and the way down is then unique.
The functions here make that choice for many flows at once, one tier at a time. Each works on
per-flow arrays: the flow's current switch (or its link-id bases: the up link of port ``p`` is
``up_base + p`` and the matching down link on the destination side ``down_base + p``) and an
``active`` mask (flows that climb past this tier); inactive flows get port 0 (ignored).

Every routing policy a fabric can use is an entry of :data:`ROUTINGS` (name ->
:class:`Routing`: what the simulator needs to know of it); each fabric class lists the names it
implements in ``Fabric.routings`` (:mod:`lumoscore.fabric.base`), and validates a requested
name in one place (``Fabric.checked_routing``).

Policies (LumosCore §4.4 and §6.5, Fig. 25; vClos §5.2):

* ``ecmp``: ``hash(src, dst, flow_key; tier seed) mod n_ports`` (:func:`ecmp_ports`).
* ``balanced``: least-loaded ECMP over the flows of one call: the flows leaving one switch take
  its up-ports round-robin in call order, so port loads differ by at most one
  (:func:`balanced_ports`).
* ``source``: vClos source routing: the port is a fixed function of the source GPU.
* ``probing`` (LumosCore §6.2, the published runs' default): at the start of every round each
  flow draws a few candidate ECMP paths (re-hashes) and takes the first with the largest
  bottleneck ``min over its links of capacity / flows in flight``, counting the flows of every
  round in flight and the flows routed earlier in the same call
  (:class:`~lumoscore.fabric.clos.ClosFabric`, ``probe_candidates``).
* ``ideal``: no routing at all (a contention-free route of the two NIC links).
* ``planned`` (LumosCore): routes from the job's logical topology
  (:mod:`lumoscore.fabric.lumos`).
* ``fixed``: a fabric's one routing of its own, of which the simulator assumes nothing (the
  default of a :class:`~lumoscore.fabric.base.Fabric` subclass that declares no routings).

:class:`~lumoscore.fabric.clos.ClosFabric` routes with a compiled per-flow equivalent of these
policies (one pass over the flows, all tiers); the functions here are the whole-call, tier by
tier formulation of ``ecmp`` and ``balanced`` it is tested against.

Examples
--------
>>> import numpy as np
>>> balanced_ports(np.array([7, 7, 7, 3]), np.ones(4, bool), 2).tolist()
[0, 1, 0, 0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lumoscore.registry import Registry

__all__ = [
    "ROUTINGS",
    "Routing",
    "balanced_ports",
    "ecmp_ports",
    "rank_within_groups",
]


@dataclass(frozen=True)
class Routing:
    """What the simulator needs to know of a routing policy.

    Attributes
    ----------
    summary : str
        One line for help texts and docs.
    load_aware : bool
        Routes depend on the flows in flight: the simulator routes every round again when it
        starts, passing the flows in flight on each link (``link_load``) and the round's row
        weights (``flow_weight``) to :meth:`Fabric.routes
        <lumoscore.fabric.base.Fabric.routes>`.
    contention_free : bool
        Jobs never share a link above their NICs (routes depend only on the job): the
        simulator runs every job on its own timeline.
    """

    summary: str
    load_aware: bool = False
    contention_free: bool = False


#: Routing policies by name.
ROUTINGS: Registry[Routing] = Registry("routing")
ROUTINGS.register("ecmp", Routing("hash of the flow's 5-tuple per tier (MurmurHash3)"))
ROUTINGS.register("balanced", Routing("least-loaded up-port over the flows of one call"))
ROUTINGS.register("source", Routing("vClos source routing: the port follows the source GPU"))
ROUTINGS.register(
    "probing",
    Routing("best of a few hashed paths by the flows in flight, at every round", load_aware=True),
)
ROUTINGS.register("ideal", Routing("contention-free: the two NIC links", contention_free=True))
ROUTINGS.register("planned", Routing("LumosCore: from the job's logical topology"))
ROUTINGS.register("fixed", Routing("the fabric's own routes, nothing assumed of them"))

IntArray = NDArray[np.int64]


def ecmp_ports(hashes: NDArray[np.uint32], n_ports: int) -> IntArray:
    """ECMP next hop: ``hash mod n_ports`` for each flow.

    Examples
    --------
    >>> import numpy as np
    >>> ecmp_ports(np.array([5, 6, 7], dtype=np.uint32), 4).tolist()
    [1, 2, 3]
    """
    return (hashes % np.uint32(n_ports)).astype(np.int64)


def rank_within_groups(groups: IntArray) -> IntArray:
    """For each element, how many earlier elements share its group (stable, vectorized).

    Examples
    --------
    >>> import numpy as np
    >>> rank_within_groups(np.array([4, 2, 4, 4, 2])).tolist()
    [0, 0, 1, 2, 1]
    """
    g = np.asarray(groups, dtype=np.int64)
    n = g.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(g, kind="stable")
    sg = g[order]
    start = np.ones(n, dtype=bool)
    start[1:] = sg[1:] != sg[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - first
    return rank


def balanced_ports(switch: IntArray, active: NDArray[np.bool_], n_ports: int) -> IntArray:
    """Least-loaded ECMP within one call: the active flows of each switch take its up-ports
    round-robin in call order (the greedy least-loaded assignment).

    Examples
    --------
    >>> import numpy as np
    >>> balanced_ports(np.array([0, 0, 0]), np.array([True, False, True]), 4).tolist()
    [0, 0, 1]
    """
    out = np.zeros(switch.size, dtype=np.int64)
    idx = np.flatnonzero(active)
    out[idx] = rank_within_groups(switch[idx]) % n_ports
    return out
