"""The fabric interface every network model implements for the simulator.

A fabric is a set of directed links with capacities and a routing function. Routes are
computed for many flows at once and returned in CSR form: flow ``f`` crosses links
``indices[indptr[f]:indptr[f + 1]]``. Every GPU has one NIC uplink (GPU -> network) and one NIC
downlink (network -> GPU) at the port speed, so a flow's route starts with its source's uplink
and ends with its destination's downlink. Flows between two GPUs of one server never reach the
network (NVLink) and must not be routed.

Fabrics are plain objects with no global state; two simulations can hold two fabrics.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, InfeasibleError, PreconditionError
from lumoscore.fabric.routing import ROUTINGS
from lumoscore.jit import cached_jit
from lumoscore.npsets import unique
from lumoscore.topology.cluster import ClusterSpec

__all__ = [
    "FAILURE_ELEMENTS",
    "REHASH_TRIES",
    "Fabric",
    "FabricChange",
    "NoRouteError",
    "Routes",
    "check_failure_element",
    "check_positive",
    "geometry_spec",
]

#: What can fail (:meth:`Fabric.fail_units`): a leaf-spine cable; a spine's uplink (on
#: LumosCore the fiber between a spine port and its OCS, on a Clos of 3+ tiers the cable from
#: a tier-2 switch to tier 3); an OCS port (LumosCore only; on Cross Wiring it carries the Tx
#: of one spine port and the Rx of another, so both lose their links).
FAILURE_ELEMENTS: tuple[str, ...] = ("leaf-spine", "spine-ocs", "ocs-port")


def check_failure_element(element: str) -> str:
    """``element`` if it is one of :data:`FAILURE_ELEMENTS`, else a ConfigError listing them.

    Examples
    --------
    >>> check_failure_element("ocs-port")
    'ocs-port'
    """
    if element not in FAILURE_ELEMENTS:
        raise ConfigError(
            f"link failures: element must be one of {', '.join(FAILURE_ELEMENTS)}, got {element!r}"
        )
    return element


#: Flow keys a flow tries (``key + c * REHASH_STEP``, ``c = 1 ..``) to find a route that
#: avoids failed links (:meth:`Fabric.live_routes`): ECMP re-hashing over the surviving paths.
REHASH_TRIES = 64
REHASH_STEP = 0x2545F491


class NoRouteError(InfeasibleError):
    """No route avoids the failed links (e.g. every uplink of a leaf is down)."""


@cached_jit
def _same_routes(
    indptr: IntArray, indices: IntArray, cur_indptr: IntArray, cur_indices: IntArray
) -> bool:  # pragma: no cover - compiled
    """Whether two CSR route sets are the same."""
    if indptr.size != cur_indptr.size or indices.size != cur_indices.size:
        return False
    for i in range(indptr.size):
        if indptr[i] != cur_indptr[i]:
            return False
    for i in range(indices.size):  # noqa: SIM110 (compiled: an early exit, no generator)
        if indices[i] != cur_indices[i]:
            return False
    return True


@cached_jit
def _flows_over(dead: NDArray[np.bool_], indptr: IntArray, indices: IntArray) -> NDArray[np.bool_]:
    """Whether each flow of a CSR route set crosses a link marked in ``dead``."""
    out = np.zeros(indptr.size - 1, np.bool_)
    for f in range(indptr.size - 1):
        for q in range(indptr[f], indptr[f + 1]):
            if dead[indices[q]]:
                out[f] = True
                break
    return out


IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Routes:
    """Links of many flows in CSR form (``indptr`` has one entry more than there are flows)."""

    indptr: IntArray
    indices: IntArray

    def __post_init__(self) -> None:
        if self.indptr.ndim != 1 or self.indptr.size == 0 or self.indptr[0] != 0:
            raise PreconditionError("Routes.indptr must be a 1-D array starting at 0")
        if self.indptr[-1] != self.indices.size:
            raise PreconditionError("Routes.indptr[-1] must equal len(indices)")

    @property
    def n_flows(self) -> int:
        """Number of routed flows."""
        return int(self.indptr.size - 1)

    def links_of(self, f: int) -> IntArray:
        """Links of flow ``f``."""
        return self.indices[self.indptr[f] : self.indptr[f + 1]]

    @classmethod
    def from_columns(cls, *cols: IntArray) -> Routes:
        """Routes whose flows all cross the same number of links, one column per hop."""
        n = int(cols[0].size)
        mat = np.stack([np.asarray(c, dtype=np.int64) for c in cols], axis=1)
        return cls(np.arange(0, n * len(cols) + 1, len(cols), dtype=np.int64), mat.ravel())


@dataclass(frozen=True)
class FabricChange:
    """Capacities a fabric wants to change (an OCS reconfiguration), not yet applied.

    The simulator first moves every job whose links change off its precomputed timeline (at
    the old capacities), then calls :meth:`Fabric.apply`. ``delay_s`` delays the start of the
    job being admitted (e.g. the OCS switching time when circuits were rewired). ``reroute``
    lists running jobs whose routes cross a link the change removes: the simulator routes them
    again (:meth:`Fabric.forget_routes`, then ``routes``), flows in flight included.
    ``later`` lists ``(delay_s, links)``: ``delay_s`` after this change the simulator brings
    those links to the capacity the fabric's configuration gives them (:meth:`Fabric.settle`;
    a reconfiguration applied stage by stage).
    """

    delay_s: float = 0.0
    links: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    capacity_bps: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    note: str = ""
    reroute: tuple[int, ...] = ()
    later: tuple[tuple[float, IntArray], ...] = ()

    @property
    def empty(self) -> bool:
        """No capacity changes."""
        return self.links.size == 0


def geometry_spec(
    gpus: int, gpus_per_leaf: int, gpus_per_server: int, port_gbps: float
) -> ClusterSpec:
    """A :class:`ClusterSpec` with the server and leaf arithmetic of a non-LumosCore fabric.

    Traffic generation needs only ``gpu -> server`` and ``gpu -> leaf``; this spec has one
    leaf per "pod" (``k_leaf = gpus_per_leaf``, ``k_spine = tau = 2``) so that arithmetic is
    exact for any electrical fabric whose leaves hold ``gpus_per_leaf`` GPUs.

    Examples
    --------
    >>> s = geometry_spec(4096, 16, 8, 1600)
    >>> s.gpus, s.k_leaf, int(s.leaf_of_gpu(40))
    (4096, 16, 2)
    """
    if gpus_per_leaf < 1 or gpus_per_leaf % gpus_per_server or gpus_per_leaf % 2:
        raise ConfigError(
            f"gpus_per_leaf={gpus_per_leaf} must be an even multiple of "
            f"gpus_per_server={gpus_per_server}"
        )
    if gpus < 1 or gpus % gpus_per_leaf:
        raise ConfigError(f"gpus={gpus} must be a positive multiple of {gpus_per_leaf} (a leaf)")
    leaves = gpus // gpus_per_leaf
    return ClusterSpec(
        pods=leaves,
        k_leaf=gpus_per_leaf,
        k_spine=2,
        tau=2,
        gpus_per_server=gpus_per_server,
        ocs_ports=leaves,
        port_gbps=port_gbps,
    )


class Fabric(ABC):
    """A network the simulator can route flows over.

    Subclasses set :attr:`name`, :attr:`spec` (the geometry used to build traffic: GPUs per
    server and per leaf), :attr:`capacity_bps` (one entry per link), :attr:`routing` (checked
    with :meth:`checked_routing`) and implement :meth:`routes`. GPU ``g``'s NIC uplink is link
    ``g`` and its downlink is link ``gpus + g``.
    """

    name: str
    spec: ClusterSpec
    capacity_bps: NDArray[np.float64]
    #: Routing policies the class implements (names in
    #: :data:`~lumoscore.fabric.routing.ROUTINGS`); the first is the default.
    routings: tuple[str, ...] = ("fixed",)
    #: The routing policy in use.
    routing: str = "fixed"
    #: The placer the simulator uses when given none (a name in
    #: :data:`~lumoscore.sim.placers.PLACERS`).
    default_placer: str = "server"

    @property
    def placement_levels(self) -> tuple[int, ...]:
        """GPUs of a block at each level of the fabric's hierarchy below the whole cluster,
        ascending (a leaf, a pod, ...): what a locality placer keeps jobs inside. Default:
        none (a flat fabric)."""
        return ()

    @classmethod
    def checked_routing(cls, routing: str | None) -> str:
        """``routing`` if the class implements it (``None``: the default, ``routings[0]``);
        otherwise a :class:`~lumoscore.errors.ConfigError` listing the allowed names.

        Examples
        --------
        >>> from lumoscore.fabric import BestFabric
        >>> BestFabric.routings, BestFabric.checked_routing(None)
        (('ideal',), 'ideal')
        >>> BestFabric.checked_routing("ecmp")
        Traceback (most recent call last):
        ...
        lumoscore.errors.ConfigError: routing 'ecmp' does not apply to this fabric; allowed: ideal
        """
        if routing is None:
            return cls.routings[0]
        if routing not in cls.routings:
            why = "does not apply to this fabric" if routing in ROUTINGS else "unknown"
            raise ConfigError(f"routing {routing!r} {why}; allowed: {', '.join(cls.routings)}")
        return routing

    @property
    def isolating(self) -> bool:
        """Jobs never share a link above their NICs (routes depend only on the job)."""
        return ROUTINGS[self.routing].contention_free

    @property
    def load_aware(self) -> bool:
        """Routes depend on the flows in flight (the simulator passes the link load)."""
        return ROUTINGS[self.routing].load_aware

    @property
    def keeps_idle_routes(self) -> bool:
        """Whether the load-aware routing gives back a round's routes on the idle fabric
        whenever those routes' links carry no flow in flight, at unchanged capacities (the
        simulator then skips routing the round again). True only where the choice provably
        keeps them, such as :func:`~lumoscore.fabric.routing.choose_paths` on ClosFabric."""
        return False

    def probed_links(self, src: IntArray, dst: IntArray, flow_key: IntArray) -> IntArray | None:
        """The links whose load the load-aware routing of these flows may read (sorted, each
        once; a superset is fine), or None when it may read any link. The simulator runs a
        job on its precomputed timeline, without its rounds' flows counted in flight, only
        until a round routed against the load may read one of its links.

        Examples
        --------
        >>> import numpy as np
        >>> from lumoscore.fabric import BestFabric
        >>> BestFabric(gpus=16).probed_links(np.array([0]), np.array([9]), np.array([0])) is None
        True
        """
        return None

    @property
    def gpus(self) -> int:
        """GPUs attached to the fabric."""
        return self.spec.gpus

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return int(self.capacity_bps.size)

    @property
    def port_gbps(self) -> float:
        """Speed of a GPU NIC port."""
        return self.spec.port_gbps

    def _check_endpoints(self, src: IntArray, dst: IntArray) -> None:
        if src.shape != dst.shape:
            raise PreconditionError(f"src and dst shapes differ: {src.shape} vs {dst.shape}")
        if not src.size:
            return
        bad = _endpoint_fault(src.ravel(), dst.ravel(), self.gpus, self.spec.gpus_per_server)
        if bad == 1:
            lo, hi = min(src.min(), dst.min()), max(src.max(), dst.max())
            raise PreconditionError(f"GPU ids must be in [0, {self.gpus}), got {lo}..{hi}")
        if bad == 2:
            raise PreconditionError("intra-server flows must not be routed (NVLink)")

    def _route_inputs(
        self, src: ArrayLike, dst: ArrayLike, flow_key: ArrayLike
    ) -> tuple[IntArray, IntArray, IntArray]:
        """``src``, ``dst``, ``flow_key`` as int64 arrays, checked (endpoints, equal shapes)."""
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        k = np.asarray(flow_key, dtype=np.int64)
        self._check_endpoints(s, d)
        if k.shape != s.shape:
            raise PreconditionError(f"flow_key shape {k.shape} differs from {s.shape}")
        return s, d, k

    @abstractmethod
    def routes(
        self, src: IntArray, dst: IntArray, flow_key: IntArray, *, job_id: int = 0
    ) -> Routes:
        """Links of each flow ``src[i] -> dst[i]``.

        ``flow_key`` identifies each flow (its 5-tuple stand-in: hashed by ECMP); ``job_id``
        lets fabrics that plan routes per job (LumosCore, vClos) find the job's plan.
        """

    def admit(self, job_id: int, gpus: IntArray) -> FabricChange:
        """Hook called when a job is placed on ``gpus``, before its routes are computed.

        Returns the capacity changes it needs (applied by the simulator through
        :meth:`apply`) and a start delay. Default: no change, no delay.
        """
        return FabricChange()

    def release(self, job_id: int) -> FabricChange:
        """Hook called when a job finishes. Default: no change."""
        return FabricChange()

    def forget_routes(self, job_id: int) -> None:
        """Hook called before a running job listed in ``FabricChange.reroute`` is routed
        again (drop what its earlier routes fixed). Default: nothing."""
        return None

    def apply(self, change: FabricChange) -> None:
        """Apply a change returned by :meth:`admit` or :meth:`release` (in place)."""
        if not change.empty:
            self.capacity_bps[change.links] = change.capacity_bps

    def settle(self, links: IntArray) -> FabricChange:
        """The change bringing ``links`` to the capacity the fabric's configuration gives
        them, after a staged reconfiguration's stage (:attr:`FabricChange.later`). Fabrics
        without staged reconfigurations have nothing to settle."""
        return FabricChange()

    # ------------------------------------------------------------------ link failures
    #: ``(n_links,)`` links that failed cables took down entirely; ``None`` before the
    #: first failure.
    dead_links: NDArray[np.bool_] | None = None
    #: What can fail on the fabric (:data:`FAILURE_ELEMENTS`, :meth:`fail_units`).
    failure_elements: tuple[str, ...] = ()
    #: Failed cables per element (:meth:`_cable_change`).
    _cable_failed: dict[str, NDArray[np.bool_]] | None = None
    _cable_healthy: NDArray[np.float64] | None = None

    def cables(self, element: str = "leaf-spine") -> tuple[IntArray, IntArray, float]:
        """The cables of ``element`` (:data:`FAILURE_ELEMENTS`) failures act on: ``(up, down,
        bps)``, the up link and the down link each cable is part of, and its speed (a link
        may hold several cables, e.g. LumosCore's ``tau`` parallel ones). Default: a fabric
        without such cables."""
        raise self._no_element(element)

    def _no_element(self, element: str) -> ConfigError:
        """The error for ``element`` on a fabric without it (an unknown name raises here)."""
        check_failure_element(element)
        name = getattr(self, "name", type(self).__name__)
        return ConfigError(
            f"fabric {name!r} has no {element} links to fail (leaf-spine: Clos, leaf-spine "
            "and LumosCore fabrics; spine-ocs: LumosCore and Clos of 3+ tiers; ocs-port: "
            "LumosCore)"
        )

    def failure_units(self, element: str = "leaf-spine") -> tuple[int, float]:
        """How many units of ``element`` can fail, and the capacity one carries (bps).
        Default: the :meth:`cables` of the element."""
        up, _, bps = self.cables(element)
        return int(up.size), bps

    def fail_units(self, element: str, units: ArrayLike, fail: bool) -> FabricChange:
        """Units of ``element`` (indices below :meth:`failure_units`) go down (``fail``) or
        come back: the capacity change to apply. Routes must then avoid :attr:`dead_links`
        (:meth:`live_routes`). Default: the element's :meth:`cables`."""
        return self._cable_change(units, fail, element)

    def fail_cables(self, cables: ArrayLike) -> FabricChange:
        """Leaf-spine cables go down (indices into :meth:`cables`): the capacity change to
        apply (a link loses a cable's speed per failed cable)."""
        return self.fail_units("leaf-spine", cables, True)

    def repair_cables(self, cables: ArrayLike) -> FabricChange:
        """Failed leaf-spine cables are back: the capacity change to apply."""
        return self.fail_units("leaf-spine", cables, False)

    @staticmethod
    def _flip_units(
        failed: dict[str, NDArray[np.bool_]], element: str, n: int, units: ArrayLike, fail: bool
    ) -> IntArray:
        """Mark ``units`` of ``element`` (of ``n``) failed or working in ``failed`` (per
        element, created on first use); returns the distinct units whose state changed."""
        idx = unique(np.asarray(units, dtype=np.int64))
        if idx.size and (idx[0] < 0 or idx[-1] >= n):
            raise PreconditionError(f"{element} ids must be in [0, {n}), got {idx.tolist()}")
        state = failed.setdefault(element, np.zeros(n, np.bool_))
        idx = idx[state[idx] != fail]
        state[idx] = fail
        return idx

    def _cable_change(self, cables: ArrayLike, fail: bool, element: str) -> FabricChange:
        up, down, _ = self.cables(element)
        if self._cable_healthy is None:
            self._cable_failed = {}
            self._cable_healthy = self.capacity_bps.copy()
            self.dead_links = np.zeros(self.n_links, np.bool_)
        assert self._cable_failed is not None and self.dead_links is not None
        idx = self._flip_units(self._cable_failed, element, up.size, cables, fail)
        links = unique(np.concatenate([up[idx], down[idx]]))
        lost = np.zeros(self.n_links)
        for el, f in self._cable_failed.items():
            u, d, b = self.cables(el)
            lost += b * (np.bincount(u[f], minlength=self.n_links)
                         + np.bincount(d[f], minlength=self.n_links))  # fmt: skip
        new = np.maximum(self._cable_healthy[links] - lost[links], 0.0)
        self.dead_links[links] = new <= 0.0
        verb = "fail" if fail else "repair"
        return FabricChange(links=links, capacity_bps=new, note=f"{verb} {idx.size} cable(s)")

    def rerouted(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        indptr: IntArray,
        indices: IntArray,
        *,
        job_id: int,
        link_load: NDArray[np.float64],
        flow_weight: NDArray[np.float64],
    ) -> Routes | None:
        """The flows routed again as :meth:`live_routes` routes them (a load-aware routing
        at a round's start, against ``link_load``), or None when every flow keeps its route
        in the current CSR routes ``(indptr, indices)``. The simulator's call at every round:
        ``src``, ``dst``, ``flow_key`` as a round plan keeps them (int64, checked when the
        plan was built).

        Examples
        --------
        >>> import numpy as np
        >>> from lumoscore.fabric import ClosFabric
        >>> fab = ClosFabric(256, 1600, radix=16, tiers=3, gpus_per_server=8, routing="probing")
        >>> s, d, k = np.array([0]), np.array([200]), np.array([0])
        >>> r = fab.routes(s, d, k)
        >>> load = np.zeros(fab.n_links)
        >>> fab.rerouted(s, d, k, r.indptr, r.indices, job_id=0, link_load=load,
        ...              flow_weight=np.ones(1)) is None
        True
        """
        new_ptr, new_idx = self._load_aware_routes(
            src, dst, flow_key, job_id, link_load, flow_weight
        )
        if _same_routes(new_ptr, new_idx, indptr, indices):
            return None
        return Routes(new_ptr, new_idx)

    def _load_aware_routes(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        job_id: int,
        link_load: NDArray[np.float64],
        flow_weight: NDArray[np.float64],
    ) -> tuple[IntArray, IntArray]:
        """The CSR routes :meth:`rerouted` compares: :meth:`live_routes`'s (a subclass may
        compute them faster)."""
        routes = self.live_routes(
            src, dst, flow_key, job_id=job_id, link_load=link_load, flow_weight=flow_weight
        )
        return routes.indptr, routes.indices

    def live_routes(self, src: ArrayLike, dst: ArrayLike, flow_key: ArrayLike, **kw: Any) -> Routes:
        """:meth:`routes`, with every flow that would cross a link of :attr:`dead_links`
        routed again under other flow keys (ECMP re-hashing over the surviving paths, up to
        :data:`REHASH_TRIES` keys); :class:`NoRouteError` when none avoids them. Without
        failures this is :meth:`routes`. ``flow_weight`` in ``kw`` is per flow."""
        routes = self.routes(src, dst, flow_key, **kw)
        dead = self.dead_links
        if dead is None or not routes.indices.size or not dead.any():
            return routes
        bad = _flows_over(dead, routes.indptr, routes.indices)
        if not bad.any():
            return routes
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        k = np.asarray(flow_key, dtype=np.int64)
        weight = kw.get("flow_weight")
        found: dict[int, IntArray] = {}
        todo = np.flatnonzero(bad)
        for c in range(1, REHASH_TRIES + 1):
            sub = dict(kw)
            if weight is not None:
                sub["flow_weight"] = np.asarray(weight)[todo]
            alt = self._rehash_routes(s[todo], d[todo], k[todo] + c * REHASH_STEP, **sub)
            ok = ~_flows_over(dead, alt.indptr, alt.indices)
            for i in np.flatnonzero(ok):
                found[int(todo[i])] = alt.links_of(int(i))
            todo = todo[~ok]
            if not todo.size:
                break
        if todo.size:
            f = int(todo[0])
            raise NoRouteError(
                f"no route from GPU {int(s[f])} to GPU {int(d[f])} avoids the failed links "
                f"(routing {self.routing!r}, {REHASH_TRIES} flow keys tried)"
            )
        parts = [
            found[f] if f in found else routes.indices[routes.indptr[f] : routes.indptr[f + 1]]
            for f in range(bad.size)
        ]
        lengths = np.array([p.size for p in parts], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return Routes(indptr, np.concatenate(parts).astype(np.int64))

    def _rehash_routes(self, src: IntArray, dst: IntArray, flow_key: IntArray, **kw: Any) -> Routes:
        """Routes of flows that :meth:`live_routes` moves off failed links, under new flow
        keys. Default: :meth:`routes` (hashing policies pick other paths for other keys)."""
        return self.routes(src, dst, flow_key, **kw)

    def describe(self) -> dict[str, object]:
        """Summary for tables and result manifests."""
        return {
            "fabric": self.name,
            "gpus": self.gpus,
            "links": self.n_links,
            "port_gbps": self.port_gbps,
        }


def check_positive(name: str, value: float) -> None:
    """Raise a ConfigError naming ``name`` unless ``value`` > 0."""
    if not value > 0:
        raise ConfigError(f"{name} must be > 0, got {value!r}")


@cached_jit
def _endpoint_fault(
    src: IntArray, dst: IntArray, gpus: int, per_server: int
) -> int:  # pragma: no cover - compiled
    """0 if every flow joins two GPUs of ``[0, gpus)`` on different servers; 1 if some id is
    out of range (checked first, over all flows); 2 if some flow stays inside a server."""
    same = False
    for i in range(src.size):
        a, b = src[i], dst[i]
        if a < 0 or b < 0 or a >= gpus or b >= gpus:
            return 1
        if a // per_server == b // per_server:
            same = True
    return 2 if same else 0
