"""Leaf-spine fabrics of the vClos paper: the shared baseline and the isolating vClos family.

Cluster (vClos §4.1, Table 1): ``L`` leaves of ``d`` GPU ports each, ``S`` spines, ``T`` GPUs
per server; every leaf has one uplink to every spine (a uniform bipartite graph). ``d = S``
is the paper's rearrangeably non-blocking cluster (half of a leaf's ports down, half up);
``S >= 2 d - 1`` is strictly non-blocking (§5.1); ``S = 1.5 d`` is the testbed's redundant ECMP
(rECMP, +50 % leaf-spine links, §8.2).

Links (directed, by index arithmetic; ``G = L d`` GPUs): ``[0, G)`` NIC uplinks, ``[G, 2G)``
NIC downlinks; **port** ``q = n S + j`` is leaf ``n``'s uplink ``j``: link ``2G + q`` leaves
the leaf through it, link ``2G + L S + q`` enters the leaf through it. Without an OCS, uplink
``j`` is cabled to spine ``j``, so ``2G + n S + m`` is leaf ``n`` -> spine ``m`` and
``2G + L S + n S + m`` spine ``m`` -> leaf ``n``. A flow inside one leaf crosses 2 links, any
other 4: ``[NIC up, leaf out, leaf in, NIC down]``.

:class:`LeafSpineFabric` (the shared baselines; jobs share links) routes with:

* ``ecmp``: spine ``MurmurHash3(src, dst, flow_key) mod S`` (the 5-tuple hash of §3.1);
* ``balanced`` (§9.3 "Balanced ECMP"): the least congested port of the source leaf, the
  uplink carrying the fewest flows in flight (the research simulator's balanced routing
  senses the uplinks only; the spine's downlink to the destination leaf is not seen), ties
  broken at random (a per-flow hash picks where the scan starts); load-aware: routed again
  at every round's start;
* ``source`` (§5.2, on the whole fabric): spine = the source's GPU port in its leaf;
* ``ideal``: NIC links only.

:class:`VClosFabric` (``vclos``, ``ocs-vclos``, ``ocs-relax``) places its own jobs with a
:class:`~lumoscore.placement.vclos.VClosAllocator` and routes each job inside its own virtual
Clos (routing ``vclos``, Lemma 5.1): rank ``r`` at position ``i`` of virtual leaf ``v`` leaves
through ``ports[v, i]`` and enters virtual leaf ``w`` through ``ports[w, i]`` (or, with one
spine per job, through the destination's own port). With an OCS layer, a port's link runs
through whatever circuit the allocator gave it; circuits of running jobs never change.

Examples
--------
>>> import numpy as np
>>> fab = LeafSpineFabric(leaves=4, spines=4, gpus_per_server=2, routing="source")
>>> fab.gpus, fab.n_links
(16, 64)
>>> fab.routes(np.array([1, 1]), np.array([2, 5]), np.array([0, 0])).links_of(1).tolist()
[1, 33, 53, 21]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.fabric.base import (
    Fabric,
    FabricChange,
    IntArray,
    Routes,
    check_positive,
    geometry_spec,
)
from lumoscore.fabric.hashing import flow_hash_jit
from lumoscore.fabric.routing import probe_inputs
from lumoscore.jit import cached_jit
from lumoscore.placement.vclos import VClosAllocation, VClosAllocator
from lumoscore.workload.job import Job

__all__ = ["DEFAULT_OCS_DELAY_S", "LeafSpineFabric", "VClosFabric", "leaf_spine_shape"]

#: OCS switching time of OCS-vClos (vClos §7: 50 ms).
DEFAULT_OCS_DELAY_S = 0.05

_MODES = {"ecmp": 0, "balanced": 1, "source": 2}


def leaf_spine_shape(gpus: int, gpus_per_server: int) -> tuple[int, int]:
    """``(leaves, spines)`` of the smallest-radix leaf-spine cluster of ``gpus`` GPUs with
    ``d = S`` (half of a leaf's ports down): ``S`` the smallest multiple of
    ``gpus_per_server`` dividing ``gpus`` with ``L = gpus / S <= 2 S`` (a spine has no more
    ports than a leaf). The vClos paper's CLUSTER512 and CLUSTER2048 are ``(32, 16)`` and
    ``(64, 32)``.

    Examples
    --------
    >>> leaf_spine_shape(512, 8), leaf_spine_shape(2048, 8), leaf_spine_shape(32, 4)
    ((32, 16), (64, 32), (8, 4))
    """
    if gpus < 1 or gpus_per_server < 1 or gpus % gpus_per_server:
        raise ConfigError(
            f"gpus={gpus} must be a positive multiple of gpus_per_server={gpus_per_server}"
        )
    start = max(gpus_per_server, math.isqrt(max(gpus // 2, 1)))
    start += (-start) % gpus_per_server
    for s in range(start, gpus + 1, gpus_per_server):
        if gpus % s == 0 and gpus // s <= 2 * s:
            return gpus // s, s
    raise ConfigError(f"no leaf-spine shape holds gpus={gpus}")  # pragma: no cover


@cached_jit
def _leaf_spine_routes(
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    mode: int,
    L: int,
    S: int,
    d: int,
    gps: int,
    seed: np.uint64,
    load: NDArray[np.float64],
    weight: NDArray[np.float64],
) -> tuple[int, IntArray, IntArray]:  # pragma: no cover - compiled
    """``(status, indptr, indices)`` of every flow (module docstring); status 1 when an id is
    out of range or a flow stays in its server. ``balanced`` counts each flow on its links for
    the later ones and gives ``load`` back unchanged."""
    G = L * d
    F = src.size
    indptr = np.empty(F + 1, np.int64)
    indptr[0] = 0
    for i in range(F):
        a, b = src[i], dst[i]
        if a < 0 or b < 0 or a >= G or b >= G or a // gps == b // gps:
            return 1, indptr[:1], np.zeros(0, np.int64)
        indptr[i + 1] = indptr[i] + (2 if a // d == b // d else 4)
    out = np.empty(indptr[F], np.int64)
    up0, down0 = 2 * G, 2 * G + L * S
    for i in range(F):
        a, b = src[i], dst[i]
        p = indptr[i]
        out[p] = a
        if a // d == b // d:
            out[p + 1] = G + b
            continue
        la, lb = a // d, b // d
        if mode == 0:
            m = np.int64(flow_hash_jit(a, b, key[i], seed) % np.uint64(S))
        elif mode == 2:
            m = a % d
        else:
            start = np.int64(flow_hash_jit(a, b, key[i], seed) % np.uint64(S))
            m, best = start, np.inf
            for t in range(S):
                c = (start + t) % S
                v = load[up0 + la * S + c]
                if v < best:
                    m, best = c, v
            load[up0 + la * S + m] += weight[i]
            load[down0 + lb * S + m] += weight[i]
        out[p + 1] = up0 + la * S + m
        out[p + 2] = down0 + lb * S + m
        out[p + 3] = G + b
    if mode == 1:
        for i in range(F):
            if indptr[i + 1] - indptr[i] == 4:
                load[out[indptr[i] + 1]] -= weight[i]
                load[out[indptr[i] + 2]] -= weight[i]
    return 0, indptr, out


class LeafSpineFabric(Fabric):
    """A two-tier leaf-spine cluster, one link per leaf-spine pair (module docstring).

    Parameters
    ----------
    leaves, spines : int
        ``L`` and ``S``.
    gpus_per_server : int
        ``T``.
    gpus_per_leaf : int, optional
        ``d``, GPU ports per leaf (default ``S``); an even multiple of ``T``, at most ``S``.
    port_gbps : float
        Speed of every port (NICs and leaf-spine links).
    routing : str
        One of :attr:`routings`.
    seed : int
        Seed of the ECMP hash.
    name : str, optional
        Fabric name.

    Examples
    --------
    >>> fab = LeafSpineFabric(leaves=32, spines=16, gpus_per_server=8)
    >>> fab.describe()["leaves"], fab.gpus, fab.placement_levels
    (32, 512, (16,))
    """

    routings = ("ecmp", "balanced", "source", "ideal")
    failure_elements = ("leaf-spine",)
    #: The vClos paper's scheduler: the GPUs OCS-vClos would choose, nothing reserved.
    default_placer = "vclos"

    def __init__(
        self,
        leaves: int,
        spines: int,
        gpus_per_server: int = 8,
        *,
        gpus_per_leaf: int | None = None,
        port_gbps: float = 1600.0,
        routing: str = "ecmp",
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        check_positive("port_gbps", port_gbps)
        for what, v in (("leaves", leaves), ("spines", spines)):
            if not (isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 1):
                raise ConfigError(f"{what} must be a positive integer, got {v!r}")
        d = spines if gpus_per_leaf is None else gpus_per_leaf
        if not (isinstance(d, int | np.integer) and 1 <= d <= spines):
            raise ConfigError(
                f"gpus_per_leaf must be an integer in [1, spines={spines}] (source routing needs "
                f"an uplink per GPU port), got {gpus_per_leaf!r}"
            )
        self.routing = self.checked_routing(routing)
        self.L, self.S, self.d = int(leaves), int(spines), int(d)
        self.spec = geometry_spec(self.L * self.d, self.d, gpus_per_server, port_gbps)
        self.name = name or f"leaf-spine-{self.L}x{self.S}"
        self.seed = int(seed)
        self._seed = np.uint64(np.random.default_rng(seed).integers(0, 2**32, dtype=np.uint64))
        G = self.L * self.d
        self.capacity_bps = np.full(2 * G + 2 * self.L * self.S, float(port_gbps) * 1e9)
        self._no_load = np.zeros(0)

    @property
    def placement_levels(self) -> tuple[int, ...]:
        """A leaf."""
        return (self.d,)

    @property
    def load_aware(self) -> bool:
        """``balanced`` senses the flows in flight (§9.3), so it is routed at every round."""
        return self.routing == "balanced"

    def up_link(self, port: IntArray) -> IntArray:
        """Link leaving a leaf through uplink ``port`` (``n S + j``)."""
        return 2 * self.gpus + np.asarray(port, dtype=np.int64)

    def down_link(self, port: IntArray) -> IntArray:
        """Link entering a leaf through uplink ``port``."""
        return 2 * self.gpus + self.L * self.S + np.asarray(port, dtype=np.int64)

    def cables(self, element: str = "leaf-spine") -> tuple[IntArray, IntArray, float]:
        """Leaf uplink cables (the only element): cable ``q`` is port ``q`` (leaf ``q // S``,
        spine ``q % S``); its up and down links, and the port speed."""
        if element != "leaf-spine":
            raise self._no_element(element)
        q = np.arange(self.L * self.S, dtype=np.int64)
        return self.up_link(q), self.down_link(q), self.port_gbps * 1e9

    def routes(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        *,
        job_id: int = 0,
        link_load: NDArray[np.float64] | None = None,
        flow_weight: NDArray[np.float64] | None = None,
    ) -> Routes:
        """Links of each flow (module docstring). ``link_load`` / ``flow_weight``
        (``balanced`` only): flows in flight per link and the flows each row stands for."""
        s, d, k = self._route_inputs(src, dst, flow_key)
        s, d, k = s.reshape(-1), d.reshape(-1), k.reshape(-1)
        if self.routing == "ideal":
            return Routes.from_columns(s, self.gpus + d)
        load = weight = self._no_load
        if self.routing == "balanced":
            load, weight = probe_inputs(link_load, flow_weight, self.n_links, s.size)
        _, indptr, indices = _leaf_spine_routes(
            s, d, k, _MODES[self.routing], self.L, self.S, self.d,
            self.spec.gpus_per_server, self._seed, load, weight,
        )  # fmt: skip
        return Routes(indptr, indices)

    def describe(self) -> dict[str, object]:
        """Summary: leaves, spines, GPU ports per leaf, routing."""
        out = super().describe()
        out.update(
            {
                "leaves": self.L,
                "spines": self.S,
                "gpus_per_leaf": self.d,
                "nonblocking": "strict" if 2 * self.d - 1 <= self.S else "rearrangeable",
                "routing": self.routing,
            }
        )
        return out


class VClosFabric(LeafSpineFabric):
    """A leaf-spine cluster whose jobs each get a virtual Clos (vClos, OCS-vClos, OCS-Relax),
    placing its own jobs (see the module docstring and :mod:`lumoscore.placement.vclos`).

    Parameters
    ----------
    leaves, spines, gpus_per_server, gpus_per_leaf, port_gbps, name
        As :class:`LeafSpineFabric`.
    allocator : str
        ``vclos``, ``ocs-vclos`` or ``ocs-relax``
        (:data:`~lumoscore.placement.vclos.ALLOCATORS`).
    search : str
        Virtual-Clos search (:data:`~lumoscore.placement.vclos.SEARCHES`).
    reconfig_delay_s : float
        Start delay of a job whose admission rewired circuits (OCS modes; default
        :data:`DEFAULT_OCS_DELAY_S`).

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> fab = VClosFabric(leaves=4, spines=4, gpus_per_server=2)
    >>> job = Job(job_id=7, arrival_s=0.0, gpus=8, model="llama_7b", tp=2, pp=1, dp=4,
    ...           ep=2, iterations=1, duration_s=1.0)
    >>> gpus = fab.place(job); fab.allocation(7).shape
    (2, 4)
    >>> fab.routes(gpus[[0]], gpus[[4]], np.array([0]), job_id=7).n_flows
    1
    """

    routings = ("vclos",)
    failure_elements = ()  # a virtual Clos reserves its links (see cables)
    routing = "vclos"
    default_placer = "fabric"

    def __init__(
        self,
        leaves: int,
        spines: int,
        gpus_per_server: int = 8,
        *,
        gpus_per_leaf: int | None = None,
        port_gbps: float = 1600.0,
        allocator: str = "vclos",
        search: str = "greedy",
        reconfig_delay_s: float = DEFAULT_OCS_DELAY_S,
        routing: str = "vclos",
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        super().__init__(
            leaves, spines, gpus_per_server, gpus_per_leaf=gpus_per_leaf, port_gbps=port_gbps,
            routing=routing, seed=seed, name=name or allocator,
        )  # fmt: skip
        if not (reconfig_delay_s >= 0 and math.isfinite(reconfig_delay_s)):
            raise ConfigError(
                f"reconfig_delay_s must be a finite value >= 0, got {reconfig_delay_s!r}"
            )
        self.reconfig_delay_s = float(reconfig_delay_s)
        self.allocator = VClosAllocator(
            self.L, self.S, gpus_per_server, self.d, mode=allocator, search=search
        )
        self._vleaf = np.full(self.gpus, -1, np.int64)
        self._pos = np.full(self.gpus, -1, np.int64)

    def cables(self, element: str = "leaf-spine") -> tuple[IntArray, IntArray, float]:
        """Not modelled: a virtual Clos reserves its links, and the allocators have no rule
        for a reserved link that fails."""
        raise ConfigError(
            f"fabric {self.name!r}: link failures are not modelled on vClos fabrics (a job's "
            "virtual Clos reserves its links); use vclos-leaf-spine"
        )

    @property
    def free_gpus(self) -> int:
        """GPUs held by no job (the simulator's fragmentation count)."""
        return self.allocator.free_gpus

    def allocation(self, job_id: int) -> VClosAllocation:
        """The job's allocation (its virtual Clos)."""
        try:
            return self.allocator.jobs[job_id]
        except KeyError:
            raise PreconditionError(f"job {job_id} is not running on this fabric") from None

    # -- placer ---------------------------------------------------------------------------
    def place(self, job: Job) -> IntArray | None:
        """The job's GPUs in rank order, or None (cause in ``allocator.refusals``)."""
        alloc = self.allocator.allocate(job.job_id, int(job.gpus))
        if alloc is None:
            return None
        s = alloc.shape[1]
        r = np.arange(alloc.gpus.size)
        self._vleaf[alloc.gpus] = r // s
        self._pos[alloc.gpus] = r % s
        return alloc.gpus

    def admit(self, job_id: int, gpus: IntArray) -> FabricChange:
        """OCS switching delay when the job's circuits were rewired; capacities never change
        (a link is a leaf port, whatever circuit it runs through)."""
        alloc = self.allocation(job_id)
        delay = self.reconfig_delay_s if alloc.rewired else 0.0
        return FabricChange(delay_s=delay, note=f"admit job {job_id}")

    def release(self, job_id: int) -> FabricChange:
        """Free the job's GPUs, links and ports."""
        alloc = self.allocation(job_id)
        self._vleaf[alloc.gpus] = -1
        self._pos[alloc.gpus] = -1
        self.allocator.release(job_id)
        return FabricChange()

    # -- routing --------------------------------------------------------------------------
    def routes(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        *,
        job_id: int = 0,
        link_load: NDArray[np.float64] | None = None,
        flow_weight: NDArray[np.float64] | None = None,
    ) -> Routes:
        """Source routes inside the job's virtual Clos (Lemma 5.1); every flow must join two
        GPUs of job ``job_id``."""
        s, d, _ = self._route_inputs(src, dst, flow_key)
        s, d = s.reshape(-1), d.reshape(-1)
        alloc = self.allocation(job_id)
        owner = self.allocator.gpu_owner
        if s.size and not ((owner[s] == job_id).all() and (owner[d] == job_id).all()):
            raise PreconditionError(f"job {job_id}: a flow leaves the job's GPUs")
        cross = s // self.d != d // self.d
        n_links = np.where(cross, 4, 2)
        indptr = np.concatenate([[0], np.cumsum(n_links)]).astype(np.int64)
        out = np.empty(indptr[-1], np.int64)
        out[indptr[:-1]] = s
        out[indptr[1:] - 1] = self.gpus + d
        if cross.any():
            if not alloc.ports.size:
                raise PreconditionError(f"job {job_id} holds no links, yet a flow leaves its leaf")
            c = np.flatnonzero(cross)
            sc, dc = s[c], d[c]
            up = alloc.ports[self._vleaf[sc], self._pos[sc]]
            into = self._pos[sc] if alloc.down_rule == "lemma" else self._pos[dc]
            down = alloc.ports[self._vleaf[dc], into]
            out[indptr[c] + 1] = self.up_link(up)
            out[indptr[c] + 2] = self.down_link(down)
        return Routes(indptr, out)

    def describe(self) -> dict[str, object]:
        """Summary with the allocator's counters (stages, refusals by cause, allocation
        times, rewired circuits)."""
        out: dict[str, Any] = super().describe()
        out["routing"] = "vclos"
        out.update(self.allocator.describe())
        return out
