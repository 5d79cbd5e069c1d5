"""Folded n-tier Clos (fat tree) fabrics of radix-R switches, 2 to 4 tiers.

Structure (LumosCore §2.1 and Table 1; ``lumoscore.hardware.sizing.clos_max_gpus``). With
``k = R/2``:

* a **leaf** (tier 1) has ``u = ceil(R / (o + 1))`` uplinks (``u = k`` when non-blocking,
  ``o = 1``) and ``d = R - u`` GPU ports;
* a tier-``s`` **block** ``B_s`` is ``k`` copies of ``B_{s-1}`` plus ``u k^(s-2)`` tier-``s``
  switches (``B_1`` = one leaf); each tier-``s`` switch below the top has ``k`` down ports (one
  to each sub-block) and ``k`` up ports;
* the **top** tier ``n`` has ``u k^(n-2)`` switches of ``2k`` down ports joining ``2k`` blocks
  ``B_{n-1}``; the full build has ``2 k^(n-1)`` leaves and ``2 k^(n-1) d`` GPUs.

A switch of tier ``s`` is named by its block and its **column** ``c`` in ``[0, u k^(s-2))``:
up-port ``p`` of the tier-``s`` switch of column ``c`` reaches the tier-``(s+1)`` switch of
column ``c k + p`` of the parent block (a leaf has column 0). The column of a tier-``s`` switch
is therefore the mixed-radix number of the up-ports taken to reach it, and the way down from a
switch is unique: to column ``c // k`` of the destination's sub-block.

Smaller clusters use the first leaves (and the blocks holding them); all top switches are kept.

Numbering (all by index arithmetic):

* tier-``s`` switch id = ``block * u k^(s-2) + column`` (leaf id = leaf index), blocks numbered
  from 0 in leaf order; tier-``s`` blocks below the top hold ``k^(s-1)`` leaves;
* links: ``[0, G)`` NIC uplinks (GPU ``g`` -> its leaf), ``[G, 2G)`` NIC downlinks; then for each
  boundary ``s = 1 .. n-1`` (tier ``s`` <-> tier ``s+1``) a block of up links and a block of
  down links: up link ``off_up[s] + switch * P_s + p`` (``P_1 = u``, ``P_s = k``) goes from
  tier-``s`` switch ``switch`` through its up-port ``p``; the down link of the same cable is
  ``off_down[s] + switch * P_s + p`` (``off_down[s] = off_up[s] + count``).

A flow between leaves ``a`` and ``b`` climbs to the lowest tier ``h`` whose block holds both
(``h = 1``: same leaf, 2 links; 4, 6, 8 links for ``h = 2, 3, 4``); the routing policy
(:mod:`lumoscore.fabric.routing`) picks the up-port at each tier ``1 .. h-1``.

**Rail-optimized** (``rail_optimized=True``, Qian et al. 2024, Alibaba HPN): within every pod
(tier-2 block of ``k`` leaves) the leaves form rail groups of ``gpus_per_server`` leaves; the
``d`` servers of a rail group attach GPU ``i`` of every server to rail leaf ``i`` of the group.
GPU ``g`` (server ``v = g // gps``, rail ``i = g % gps``) sits on leaf
``(v // d) * gps + i``, port ``v % d``. Same-rail traffic of a rail group stays in one leaf;
cross-rail traffic climbs to tier 2. The fabric's ``spec`` then has one "leaf" per rail group
(``d * gps`` consecutive GPUs, the servers that share a set of rail leaves).

Examples
--------
>>> import numpy as np
>>> fab = ClosFabric(gpus=128, port_gbps=400, radix=8, tiers=3, gpus_per_server=2)
>>> fab.describe()["switches_per_tier"]
[32, 32, 16]
>>> r = fab.routes(np.array([0, 0, 0]), np.array([3, 4, 127]), np.array([1, 2, 3]))
>>> np.diff(r.indptr).tolist()
[2, 4, 6]
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import Fabric, IntArray, Routes, check_positive, geometry_spec
from lumoscore.fabric.hashing import flow_hash_jit
from lumoscore.fabric.routing import (
    CANDIDATE_STEP,
    PROBE_CANDIDATES,
    candidate_counts_jit,
    check_candidates,
    choose_paths,
    path_score,
    probe_inputs,
)
from lumoscore.hardware.sizing import clos_max_gpus
from lumoscore.jit import cached_jit
from lumoscore.jitsort import sort

__all__ = ["PROBE_HASHES", "ClosFabric"]

#: How ``probing`` draws a flow's candidate paths: ``murmur`` (MurmurHash3 of the flow,
#: tier seeds moved per candidate), ``sum`` (the research simulator's port routing: up-port
#: ``(c + src + dst) mod P`` at every tier for candidate ``c``) or ``least-loaded`` (the
#: research simulator's hashed routing: at every tier the least loaded of the flow's
#: ``murmur`` up-ports of candidates ``c .. c + n - 1``; :func:`_route_least_loaded`).
PROBE_HASHES: tuple[str, ...] = ("murmur", "sum", "least-loaded")

#: Routing policy -> the code the compiled router switches on.
_MODE_CODE = {"ecmp": 0, "balanced": 1, "source": 2, "probing": 3}


@cached_jit(internal=True)
def _flow_ends(
    src: IntArray, dst: IntArray, params: IntArray, geometry: IntArray
) -> tuple[int, IntArray, IntArray, IntArray, IntArray, IntArray]:  # pragma: no cover - compiled
    """Per flow: source leaf ``a``, destination leaf ``b``, height ``h`` (the lowest tier
    whose block holds both), the source's port on its leaf, and the CSR ``indptr`` of the
    routes (``2 h`` links each); ``status`` 1 (the rest empty) when a flow's GPU id is out of
    range or both ends share a server. ``params`` and ``geometry``: :func:`_route_flows`."""
    n_gpus, tiers = params[1], params[2]
    rail, gps, gpus_per_leaf, downlinks = params[4] != 0, params[5], params[6], params[7]
    span = geometry[1]
    F = src.size
    none = np.zeros(0, np.int64)
    for i in range(F):
        gs, gd = src[i], dst[i]
        if gs < 0 or gd < 0 or gs >= n_gpus or gd >= n_gpus or gs // gps == gd // gps:
            return 1, none, none, none, none, np.zeros(1, np.int64)
    a = np.empty(F, np.int64)
    b = np.empty(F, np.int64)
    port = np.empty(F, np.int64)
    h = np.empty(F, np.int64)
    indptr = np.empty(F + 1, np.int64)
    indptr[0] = 0
    for i in range(F):
        gs, gd = src[i], dst[i]
        if rail:
            vs, vd = gs // gps, gd // gps
            a[i] = (vs // downlinks) * gps + gs % gps
            b[i] = (vd // downlinks) * gps + gd % gps
            port[i] = vs % downlinks
        else:
            a[i] = gs // gpus_per_leaf
            b[i] = gd // gpus_per_leaf
            port[i] = gs % gpus_per_leaf
        hi = tiers
        for s in range(1, tiers):
            if a[i] // span[s] == b[i] // span[s]:
                hi -= 1
        h[i] = hi
        indptr[i + 1] = indptr[i] + 2 * hi
    return 0, a, b, h, port, indptr


@cached_jit
def _route_flows(
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    params: IntArray,
    geometry: IntArray,
    seeds: NDArray[np.uint64],
    load: NDArray[np.float64],
    cap: NDArray[np.float64],
    weight: NDArray[np.float64],
    candidates: float,
    sum_hash: bool,
) -> tuple[int, IntArray, IntArray]:  # pragma: no cover - compiled
    """CSR routes of all flows (the module docstring's arithmetic, one flow at a time).

    ``params``: routing code (:data:`_MODE_CODE`), GPUs, tiers, ``k``, rail-optimized (0/1),
    GPUs per server, GPUs per leaf, leaf GPU ports. ``geometry`` rows (indexed by tier ``s``):
    switches per block, leaves per block, up-ports per switch, first up link, first down link,
    switches. Returns ``(status, indptr, indices)``; ``status`` is 1 (and the routes empty)
    when a flow's GPU id is out of range or both ends share a server.

    ``ecmp`` and ``balanced`` match :mod:`lumoscore.fabric.routing` applied tier by tier over
    the whole call (``balanced`` counts earlier flows per switch and tier in call order).
    ``probing`` draws each flow's candidate paths
    (:func:`~lumoscore.fabric.routing.candidate_counts` of them): candidate ``c`` is the ECMP
    path with every tier seed moved by ``c`` times
    :data:`~lumoscore.fabric.routing.CANDIDATE_STEP` (candidate 0 is the ECMP path), or with
    ``sum_hash`` the up-port ``(c + src + dst) mod P`` at every tier; then
    :func:`~lumoscore.fabric.routing.choose_paths` keeps the best of each flow's candidates
    against ``load`` (which comes back as it was given). Candidates built hop by hop:
    :func:`_route_least_loaded`.
    """
    mode, n_gpus, tiers, k = params[0], params[1], params[2], params[3]
    status, a, b, h, port, indptr = _flow_ends(src, dst, params, geometry)
    if status:  # (the routes empty)
        return status, indptr, np.zeros(0, np.int64)
    F = src.size
    if mode != 3:
        indices = np.empty(indptr[F], np.int64)
        _fill_paths(mode, np.int64(0), src, dst, key, a, b, h, port, indptr, indices, n_gpus, k,
                    tiers, geometry, seeds)  # fmt: skip
        return 0, indptr, indices
    n_cand = candidate_counts_jit(src, dst, key, candidates)
    every = _candidate_paths(src, dst, key, a, b, h, port, indptr, n_cand, n_gpus, k, tiers,
                             geometry, seeds, sum_hash)  # fmt: skip
    K, n = (max(n_cand.max(), 1) if F else 1), indptr[F]
    indptrs = np.empty((K, F + 1), np.int64)
    for c in range(K):
        for f in range(F + 1):
            indptrs[c, f] = indptr[f]
    offsets = np.arange(K + 1) * n
    ptr, chosen = choose_paths(indptrs, every, offsets, n_cand, load, cap, weight)
    return 0, ptr, chosen


@cached_jit(internal=True)
def _candidate_paths(
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    a: IntArray,
    b: IntArray,
    h: IntArray,
    port: IntArray,
    indptr: IntArray,
    n_cand: IntArray,
    n_gpus: int,
    k: int,
    tiers: int,
    geometry: IntArray,
    seeds: NDArray[np.uint64],
    sum_hash: bool,
) -> IntArray:  # pragma: no cover - compiled
    """The probing candidates of every flow, ``K = max(n_cand)`` CSR paths over the same
    ``indptr``, one after the other: candidate ``c`` of all flows is
    ``[c * n, (c + 1) * n)`` with ``n = indptr[-1]`` (see :func:`_route_flows`)."""
    F = src.size
    K = max(n_cand.max(), 1) if F else 1
    n = indptr[F]
    every = np.empty(K * n, np.int64)
    for c in range(K):
        moved = (seeds + np.uint64(c) * _CANDIDATE_STEP) & np.uint64(0xFFFFFFFF)
        _fill_paths(4 if sum_hash else 0, c, src, dst, key, a, b, h, port, indptr,
                    every[c * n : (c + 1) * n], n_gpus, k, tiers, geometry, moved)  # fmt: skip
    return every


@cached_jit
def _probed_links(
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    params: IntArray,
    geometry: IntArray,
    seeds: NDArray[np.uint64],
    candidates: float,
    sum_hash: bool,
    seen: NDArray[np.bool_],
) -> tuple[int, IntArray]:  # pragma: no cover - compiled
    """``(status, links)``: the links whose load whole-path probing reads for these flows,
    sorted, each once: every link of the candidates of the flows with more than one
    (a flow with one candidate takes it whatever the load). ``status`` as
    :func:`_route_flows`'s; ``seen`` (one False per link) is scratch, given back False."""
    status, a, b, h, port, indptr = _flow_ends(src, dst, params, geometry)
    if status:
        return status, np.zeros(0, np.int64)
    n_cand = candidate_counts_jit(src, dst, key, candidates)
    every = _candidate_paths(src, dst, key, a, b, h, port, indptr, n_cand, params[1],
                             params[3], params[2], geometry, seeds, sum_hash)  # fmt: skip
    n = indptr[src.size]
    read = np.empty(min(every.size, seen.size), np.int64)
    m = 0
    for i in range(src.size):
        if n_cand[i] > 1:
            for c in range(n_cand[i]):
                for q in range(c * n + indptr[i], c * n + indptr[i + 1]):
                    if not seen[every[q]]:
                        seen[every[q]] = True
                        read[m] = every[q]
                        m += 1
    out = sort(read[:m])
    for q in range(m):
        seen[out[q]] = False
    return 0, out


@cached_jit(internal=True)
def _fill_paths(
    mode: int,
    c: int,
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    a: IntArray,
    b: IntArray,
    h: IntArray,
    port: IntArray,
    indptr: IntArray,
    indices: IntArray,
    n_gpus: int,
    k: int,
    tiers: int,
    geometry: IntArray,
    seeds: NDArray[np.uint64],
) -> None:  # pragma: no cover - compiled
    """Each flow's links into ``indices``, the up-port at every tier chosen by ``mode``: 0 the
    ECMP hash with ``seeds``, 1 balanced, 2 source, 4 ``(c + src + dst) mod P``."""
    w, span, ports = geometry[0], geometry[1], geometry[2]
    off_up, off_down, n_switch = geometry[3], geometry[4], geometry[5]
    # balanced: flows already sent through each switch's up-ports, per tier
    count_off = np.zeros(tiers + 1, np.int64)
    if mode == 1:
        for s in range(1, tiers):
            count_off[s + 1] = count_off[s] + n_switch[s]
    count = np.zeros(count_off[tiers] if mode == 1 else 0, np.int64)
    for i in range(src.size):
        base, hi = indptr[i], h[i]
        indices[base] = src[i]
        indices[base + 2 * hi - 1] = n_gpus + dst[i]
        col = 0
        for s in range(1, hi):
            P = ports[s]
            sw_src = (a[i] // span[s]) * w[s] + col
            sw_dst = (b[i] // span[s]) * w[s] + col
            if mode == 0:
                p = np.int64(flow_hash_jit(src[i], dst[i], key[i], seeds[s - 1]) % np.uint64(P))
            elif mode == 1:
                q = count_off[s] + sw_src
                p = count[q] % P
                count[q] += 1
            elif mode == 2:
                p = port[i] % P if s == 1 else (a[i] // span[s - 1]) % P
            else:
                p = (c + src[i] + dst[i]) % P
            indices[base + s] = off_up[s] + sw_src * P + p
            indices[base + 2 * hi - 1 - s] = off_down[s] + sw_dst * P + p
            col = col * k + p


@cached_jit
def _route_least_loaded(
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    params: IntArray,
    geometry: IntArray,
    seeds: NDArray[np.uint64],
    load: NDArray[np.float64],
    cap: NDArray[np.float64],
    weight: NDArray[np.float64],
    candidates: float,
) -> tuple[int, IntArray, IntArray]:  # pragma: no cover - compiled
    """:func:`_route_flows` for ``probing`` with ``probe_hash="least-loaded"``: the
    candidates are built hop by hop against ``load`` (:func:`_least_loaded_paths`); a kernel
    of its own, compiled only when a fabric uses it."""
    status, a, b, h, _, indptr = _flow_ends(src, dst, params, geometry)
    if status:  # (the routes empty)
        return status, indptr, np.zeros(0, np.int64)
    n_cand = candidate_counts_jit(src, dst, key, candidates)
    indices = _least_loaded_paths(src, dst, key, a, b, h, indptr, n_cand, params[1], params[3],
                                  geometry, seeds, load, cap, weight)  # fmt: skip
    return 0, indptr, indices


@cached_jit
def _least_loaded_paths(
    src: IntArray,
    dst: IntArray,
    key: IntArray,
    a: IntArray,
    b: IntArray,
    h: IntArray,
    indptr: IntArray,
    n_cand: IntArray,
    n_gpus: int,
    k: int,
    geometry: IntArray,
    seeds: NDArray[np.uint64],
    load: NDArray[np.float64],
    cap: NDArray[np.float64],
    weight: NDArray[np.float64],
) -> IntArray:  # pragma: no cover - compiled
    """Probing with candidates built hop by hop, flow by flow in order: candidate ``c`` of a
    flow with ``n`` candidates takes, at every tier, the up-port of least load among the
    ECMP hashes with the tier seed moved by ``c, ..., c + n - 1`` times
    :data:`~lumoscore.fabric.routing.CANDIDATE_STEP` (the first such port on ties); the flow
    keeps the first candidate whose bottleneck ``min cap / max(load, 1)`` is largest and
    counts ``weight[i]`` flows on its links for the later flows. ``load`` comes back as it
    was given. With one candidate this is the ECMP path."""
    w, span, ports = geometry[0], geometry[1], geometry[2]
    off_up, off_down = geometry[3], geometry[4]
    F = src.size
    out = np.empty(indptr[F], np.int64)
    most = 2
    for i in range(F):
        most = max(most, indptr[i + 1] - indptr[i])
    path = np.empty(most, np.int64)
    for i in range(F):
        hi, n, base = h[i], n_cand[i], indptr[i]
        L = 2 * hi
        best_score = -1.0
        for c in range(n):
            path[0] = src[i]
            path[L - 1] = n_gpus + dst[i]
            col = 0
            for s in range(1, hi):
                P = ports[s]
                sw_src = (a[i] // span[s]) * w[s] + col
                sw_dst = (b[i] // span[s]) * w[s] + col
                p_best = np.int64(0)
                l_best = np.inf
                for t in range(n):
                    seed = (seeds[s - 1] + np.uint64(c + t) * _CANDIDATE_STEP) & np.uint64(
                        0xFFFFFFFF
                    )
                    p = np.int64(flow_hash_jit(src[i], dst[i], key[i], seed) % np.uint64(P))
                    v = load[off_up[s] + sw_src * P + p]
                    if v < l_best:
                        l_best, p_best = v, p
                path[s] = off_up[s] + sw_src * P + p_best
                path[L - 1 - s] = off_down[s] + sw_dst * P + p_best
                col = col * k + p_best
            score = path_score(path, 0, L, load, cap)
            if score > best_score:
                best_score = score
                for q in range(L):
                    out[base + q] = path[q]
        for q in range(base, base + L):
            load[out[q]] += weight[i]
    for i in range(F):
        for q in range(indptr[i], indptr[i + 1]):
            load[out[q]] -= weight[i]
    return out


# (the kernel's copy of the probing constant of lumoscore.fabric.routing)
_CANDIDATE_STEP = np.uint64(CANDIDATE_STEP)


class ClosFabric(Fabric):
    """A folded ``tiers``-tier fat tree of radix-``radix`` switches (see the module docstring).

    Parameters
    ----------
    gpus : int
        GPUs attached (the first leaves are used); at most the full build.
    port_gbps : float
        Speed of every port (NICs and switch links).
    radix : int
        Ports per switch (even, >= 4).
    tiers : int
        Switch tiers, 2 (leaf-spine) to 4.
    oversubscription : float
        Leaf downlink : uplink ratio ``o`` (>= 1); the leaf keeps ``ceil(radix / (o + 1))``
        uplinks.
    gpus_per_server : int
        GPUs per server (NVLink domain); a leaf holds whole servers.
    routing : str
        One of :attr:`routings` (default ``ecmp``).
    rail_optimized : bool
        Rail-optimized intra-pod wiring (GPU ``i`` of each server on rail leaf ``i``).
    polarized : bool
        ECMP only (routing ``ecmp-polarized`` sets it): use the same hash seed at every tier
        (shows hash polarization) instead of independent per-tier seeds.
    seed : int
        Seeds the per-tier hash seeds.
    probe_candidates : float
        ``probing`` only: candidate paths per flow (>= 1); a fractional part ``f`` gives a
        flow one more candidate with probability ``f`` (default
        :data:`~lumoscore.fabric.routing.PROBE_CANDIDATES`).
    probe_hash : str
        ``probing`` only: how the candidates are drawn, one of :data:`PROBE_HASHES`
        (default ``murmur``).
    name : str, optional
        Fabric name (default ``clos-<n>tier-r<R>``).

    Examples
    --------
    >>> fab = ClosFabric(gpus=32, port_gbps=800, radix=8, tiers=2, gpus_per_server=2)
    >>> fab.n_links, fab.gpus_per_leaf, fab.full_gpus
    (128, 4, 32)
    """

    routings = ("ecmp", "balanced", "source", "probing", "ideal", "ecmp-polarized")
    failure_elements = ("leaf-spine", "spine-ocs")  # spine-ocs: 3+ tiers

    def __init__(
        self,
        gpus: int,
        port_gbps: float,
        radix: int,
        tiers: int,
        *,
        oversubscription: float = 1.0,
        gpus_per_server: int = 8,
        routing: str = "ecmp",
        rail_optimized: bool = False,
        polarized: bool = False,
        seed: int = 0,
        probe_candidates: float = PROBE_CANDIDATES,
        probe_hash: str = "murmur",
        name: str | None = None,
    ) -> None:
        check_positive("port_gbps", port_gbps)
        if not (isinstance(radix, int | np.integer) and radix >= 4 and radix % 2 == 0):
            raise ConfigError(f"radix must be an even integer >= 4, got {radix!r}")
        if tiers not in (2, 3, 4):
            raise ConfigError(f"tiers must be 2, 3 or 4, got {tiers!r}")
        if not (oversubscription >= 1 and math.isfinite(oversubscription)):
            raise ConfigError(f"oversubscription must be a ratio >= 1, got {oversubscription!r}")
        routing = self.checked_routing(routing)
        if routing == "ecmp-polarized":  # the polarization case by name
            routing, polarized = "ecmp", True
        self.probe_candidates = check_candidates(probe_candidates)
        if probe_hash not in PROBE_HASHES:
            raise ConfigError(
                f"probe_hash {probe_hash!r} unknown; allowed: {', '.join(PROBE_HASHES)}"
            )
        self.probe_hash = probe_hash
        if gpus_per_server < 1:
            raise ConfigError(f"gpus_per_server must be >= 1, got {gpus_per_server}")
        R, n, gps = int(radix), int(tiers), int(gpus_per_server)
        k = R // 2
        u = math.ceil(R / (oversubscription + 1) - 1e-9)
        d = R - u
        self.radix, self.tiers, self.k = R, n, k
        self.uplinks, self.downlinks = u, d
        self.oversubscription = float(oversubscription)
        self.routing = routing
        self.rail_optimized = bool(rail_optimized)
        self.polarized = bool(polarized)
        self.seed = int(seed)
        full_leaves = 2 * k ** (n - 1)
        if self.rail_optimized:
            if k % gps:
                raise ConfigError(
                    f"rail_optimized needs gpus_per_server={gps} to divide the {k} leaves of a "
                    f"pod (radix={R})"
                )
            self.gpus_per_leaf = d
            group = d * gps  # GPUs of one rail group (consecutive servers)
            if gpus < 1 or gpus % group:
                raise ConfigError(
                    f"gpus={gpus} must be a positive multiple of a rail group "
                    f"({d} servers x {gps} GPUs = {group})"
                )
            leaves = gpus // group * gps
            spec_leaf = group
        else:
            gpl = d // gps * gps
            if gpl < 1:
                raise ConfigError(
                    f"a leaf has {d} GPU ports, fewer than gpus_per_server={gps} "
                    f"(radix={R}, oversubscription={oversubscription:g})"
                )
            self.gpus_per_leaf = gpl
            if gpus < 1 or gpus % gpl:
                raise ConfigError(f"gpus={gpus} must be a positive multiple of {gpl} (a leaf)")
            leaves = gpus // gpl
            spec_leaf = gpl
        self.full_gpus = full_leaves * self.gpus_per_leaf
        if leaves > full_leaves:
            raise ConfigError(
                f"gpus={gpus} exceeds the full {n}-tier build of radix {R} "
                f"({self.full_gpus} GPUs; clos_max_gpus={clos_max_gpus(R, n, oversubscription)})"
            )
        self.leaves = leaves
        self.name = name or f"clos-{n}tier-r{R}"
        self.spec = geometry_spec(gpus, spec_leaf, gps, port_gbps)

        # Per tier s = 1..n (index s): switches per block, leaves per block, blocks, switches.
        self._w = [0] + [1] + [u * k ** (s - 2) for s in range(2, n + 1)]
        self._span = [0] + [k ** (s - 1) for s in range(1, n)] + [full_leaves]
        self._blocks = [0] + [-(-leaves // self._span[s]) for s in range(1, n)] + [1]
        self._nsw = [self._blocks[s] * self._w[s] for s in range(n + 1)]
        self._ports = [0, u] + [k] * (n - 1)  # up-ports per switch of tier s (s < n)
        self._off_up = [0] * n
        self._off_down = [0] * n
        off = 2 * gpus
        for s in range(1, n):
            cnt = self._nsw[s] * self._ports[s]
            self._off_up[s], self._off_down[s] = off, off + cnt
            off += 2 * cnt
        self.capacity_bps = np.full(off, float(port_gbps) * 1e9)
        seeds = np.random.default_rng(seed).integers(0, 2**32, size=n - 1, dtype=np.uint64)
        if self.polarized:
            seeds[:] = seeds[0]
        self.tier_seeds: tuple[int, ...] = tuple(int(x) for x in seeds)
        # the compiled router's view of the geometry (see _route_flows)
        self._geometry = np.array(
            [
                x + [0] * (n + 1 - len(x))
                for x in (self._w, self._span, self._ports, self._off_up, self._off_down, self._nsw)
            ],
            dtype=np.int64,
        )
        self._seed_array = np.array(self.tier_seeds, dtype=np.uint64)
        self._no_load = np.zeros(0)
        #: zeros of every link: the load of a call with nothing in flight (the router gives
        #: a load back as it was given), made at the first use
        self._idle_load: NDArray[np.float64] | None = None
        self._probe_seen: NDArray[np.bool_] | None = None  # scratch of probed_links
        self._params = np.array(
            [
                _MODE_CODE.get(routing, -1),
                gpus,
                n,
                k,
                int(self.rail_optimized),
                gps,
                self.gpus_per_leaf,
                d,
            ],
            dtype=np.int64,
        )

    # ------------------------------------------------------------------ geometry
    def cables(self, element: str = "leaf-spine") -> tuple[IntArray, IntArray, float]:
        """Uplink cables: ``leaf-spine`` (tier 1 <-> tier 2), cable ``leaf * u + p`` is
        up-port ``p`` of ``leaf``; ``spine-ocs`` (tier 2 <-> tier 3, 3+ tiers only), cable
        ``switch * k + p`` is up-port ``p`` of a tier-2 switch; their up and down links, and
        the port speed.

        Examples
        --------
        >>> fab = ClosFabric(gpus=32, port_gbps=400, radix=8, tiers=2, gpus_per_server=2)
        >>> up, down, bps = fab.cables()
        >>> up.size, int(up[0]), int(down[0]), bps
        (32, 64, 96, 400000000000.0)
        """
        tier = {"leaf-spine": 1, "spine-ocs": 2}.get(element, 0)
        if not 0 < tier < self.tiers:
            raise self._no_element(element)
        n = self._nsw[tier] * self._ports[tier]
        up = self._off_up[tier] + np.arange(n, dtype=np.int64)
        return up, up + (self._off_down[tier] - self._off_up[tier]), self.port_gbps * 1e9

    def attachment(self, gpu: IntArray) -> tuple[IntArray, IntArray]:
        """Leaf and GPU-port index (in its leaf) of each GPU.

        Examples
        --------
        >>> import numpy as np
        >>> fab = ClosFabric(32, 800, radix=8, tiers=2, gpus_per_server=2, rail_optimized=True)
        >>> [x.tolist() for x in fab.attachment(np.array([0, 1, 2, 9]))]
        [[0, 1, 0, 3], [0, 0, 1, 0]]
        """
        g = np.asarray(gpu, dtype=np.int64)
        if self.rail_optimized:
            gps = self.spec.gpus_per_server
            server = g // gps
            d = self.downlinks
            return (server // d) * gps + g % gps, server % d
        return g // self.gpus_per_leaf, g % self.gpus_per_leaf

    def link_offsets(self) -> dict[str, list[int]]:
        """First up-link and down-link id of each boundary ``s = 1 .. n-1`` (tier s <-> s+1).

        Examples
        --------
        >>> ClosFabric(16, 800, radix=8, tiers=2, gpus_per_server=2).link_offsets()
        {'up': [32], 'down': [48]}
        """
        return {"up": self._off_up[1:], "down": self._off_down[1:]}

    def link_endpoints(self) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """Tail and head of every link as ``(tail_tier, tail_id, head_tier, head_id)``.

        Tier 0 is a GPU (id = GPU index); tiers ``1 .. n`` are switches (id as numbered in the
        module docstring).

        Examples
        --------
        >>> fab = ClosFabric(16, 800, radix=8, tiers=2, gpus_per_server=2)
        >>> tt, ti, ht, hi = fab.link_endpoints()
        >>> (int(tt[0]), int(ti[0]), int(ht[0]), int(hi[0]))  # GPU 0's NIC uplink
        (0, 0, 1, 0)
        """
        G = self.gpus
        leaf, _ = self.attachment(np.arange(G))
        tails_t, tails_i, heads_t, heads_i = (
            [np.zeros(G, np.int64), np.ones(G, np.int64)],
            [np.arange(G), leaf],
            [np.ones(G, np.int64), np.zeros(G, np.int64)],
            [leaf, np.arange(G)],
        )
        for s in range(1, self.tiers):
            P = self._ports[s]
            j = np.arange(self._nsw[s] * P)
            sw, p = j // P, j % P
            blk, col = sw // self._w[s], sw % self._w[s]
            parent_blk = blk // self.k if s + 1 < self.tiers else np.zeros_like(blk)
            upper = parent_blk * self._w[s + 1] + col * self.k + p
            lo_t, hi_t = np.full(j.size, s), np.full(j.size, s + 1)
            tails_t += [lo_t, hi_t]
            tails_i += [sw, upper]
            heads_t += [hi_t, lo_t]
            heads_i += [upper, sw]
        return tuple(
            np.concatenate(x).astype(np.int64) for x in (tails_t, tails_i, heads_t, heads_i)
        )  # type: ignore[return-value]

    def to_networkx(self) -> nx.MultiDiGraph:
        """The fabric as a directed multigraph; nodes ``("gpu", g)`` and ``("sw", tier, id)``,
        one edge per link with attributes ``link`` (its id) and ``capacity_bps``.

        Examples
        --------
        >>> g = ClosFabric(16, 800, radix=8, tiers=2, gpus_per_server=2).to_networkx()
        >>> g.number_of_edges(), sum(1 for n in g if n[0] == "sw")
        (64, 8)
        """
        tt, ti, ht, hi = self.link_endpoints()

        def node(t: int, i: int) -> tuple[Any, ...]:
            return ("gpu", i) if t == 0 else ("sw", t, i)

        graph = nx.MultiDiGraph()
        for link, (a, b, c, e) in enumerate(
            zip(tt.tolist(), ti.tolist(), ht.tolist(), hi.tolist(), strict=True)
        ):
            graph.add_edge(
                node(a, b), node(c, e), link=link, capacity_bps=float(self.capacity_bps[link])
            )
        return graph

    def describe(self) -> dict[str, object]:
        """Summary: tiers, radix, leaf ports, switch and link counts per tier, routing.

        Examples
        --------
        >>> d = ClosFabric(32, 800, radix=8, tiers=2, gpus_per_server=2).describe()
        >>> d["switches_per_tier"], d["links_per_boundary"], d["routing"]
        ([8, 4], [64], 'ecmp')
        """
        out = super().describe()
        out.update(
            {
                "tiers": self.tiers,
                "radix": self.radix,
                "leaf_uplinks": self.uplinks,
                "leaf_gpu_ports": self.downlinks,
                "gpus_per_leaf": self.gpus_per_leaf,
                "oversubscription": self.oversubscription,
                "leaves": self.leaves,
                "full_gpus": self.full_gpus,
                "switches_per_tier": self._nsw[1:],
                "links_per_boundary": [
                    2 * self._nsw[s] * self._ports[s] for s in range(1, self.tiers)
                ],
                "routing": self.routing,
                **(
                    {"probe_candidates": self.probe_candidates} if self.routing == "probing" else {}
                ),
                "polarized": self.polarized,
                "rail_optimized": self.rail_optimized,
            }
        )
        return out

    @property
    def placement_levels(self) -> tuple[int, ...]:
        """GPUs under one leaf, one tier-2 block (pod), ... up to the top tier's blocks.

        Examples
        --------
        >>> ClosFabric(128, 400, radix=8, tiers=4, gpus_per_server=2).placement_levels
        (4, 16, 64)
        """
        # the first level is a leaf's servers (rail-optimized: a rail group's, which share
        # a set of rail leaves); above, the GPUs attached to a tier-s block's leaves
        first = self.spec.k_leaf
        return (first, *(self.gpus_per_leaf * self._span[s] for s in range(2, self.tiers)))

    # ------------------------------------------------------------------ routing
    def heights(self, src: IntArray, dst: IntArray) -> IntArray:
        """Tier each flow climbs to (1 = same leaf, ``tiers`` = top).

        Examples
        --------
        >>> import numpy as np
        >>> fab = ClosFabric(128, 400, radix=8, tiers=4, gpus_per_server=2)
        >>> fab.heights(np.array([0, 0, 0, 0]), np.array([2, 4, 16, 64])).tolist()
        [1, 2, 3, 4]
        """
        a, _ = self.attachment(src)
        b, _ = self.attachment(dst)
        return self._heights(a, b)

    def _heights(self, a: IntArray, b: IntArray) -> IntArray:
        h = np.full(a.size, self.tiers, dtype=np.int64)
        for s in range(1, self.tiers):
            h -= (a // self._span[s]) == (b // self._span[s])
        return h

    def _load_aware_routes(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        job_id: int,
        link_load: NDArray[np.float64],
        flow_weight: NDArray[np.float64],
    ) -> tuple[IntArray, IntArray]:
        """With ``probing`` and no failed link, one compiled call on the plan's arrays as
        they are (the simulator's per-round path of :meth:`Fabric.rerouted`)."""
        dead = self.dead_links
        if self.routing != "probing" or (dead is not None and dead.any()):
            return super()._load_aware_routes(src, dst, flow_key, job_id, link_load, flow_weight)
        return self._compiled_routes(src, dst, flow_key, link_load, flow_weight)

    @property
    def keeps_idle_routes(self) -> bool:
        """Probing keeps a flow's idle choice when its links carry no other flow: extra load
        only lowers candidate scores, leaves the unloaded chosen path's score as it was, and
        the first best candidate wins ties (:func:`~lumoscore.fabric.routing.choose_paths`).
        Not while links are dead: a flow whose first choice crosses one is hashed again,
        and load elsewhere can change that first choice."""
        return self.dead_links is None or not bool(self.dead_links.any())

    def probed_links(self, src: IntArray, dst: IntArray, flow_key: IntArray) -> IntArray | None:
        """Whole-path probing (``probe_hash`` ``"murmur"`` or ``"sum"``): every link of the
        candidate paths of the flows that have more than one (their routes are chosen by
        load), sorted, each once. None for the other routings and for candidates built hop
        by hop (which hop they try depends on the load) or while links are dead (a re-hash
        may try any path). ``src``, ``dst``, ``flow_key`` as a round plan keeps them.

        Examples
        --------
        >>> import numpy as np
        >>> fab = ClosFabric(256, 1600, radix=16, tiers=3, gpus_per_server=8, routing="probing",
        ...                  probe_candidates=2)
        >>> s, d, k = np.array([0]), np.array([200]), np.array([0])
        >>> read = fab.probed_links(s, d, k)
        >>> bool(np.isin(fab.routes(s, d, k).indices, read).all()), read.size > 6
        (True, True)
        """
        dead = self.dead_links
        if (
            self.routing != "probing"
            or self.probe_hash == "least-loaded"
            or (dead is not None and dead.any())
        ):
            return None
        if self._probe_seen is None:
            self._probe_seen = np.zeros(self.n_links, dtype=bool)
        status, links = _probed_links(
            src, dst, flow_key, self._params, self._geometry, self._seed_array,
            self.probe_candidates, self.probe_hash == "sum", self._probe_seen,
        )  # fmt: skip
        if status:
            self._check_endpoints(src, dst)  # raises, naming the bad ids
        return links

    def _compiled_routes(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        load: NDArray[np.float64],
        weight: NDArray[np.float64],
    ) -> tuple[IntArray, IntArray]:
        """CSR routes from the compiled router (contiguous int64 endpoints and keys)."""
        args = (src, dst, flow_key, self._params, self._geometry, self._seed_array, load,
                self.capacity_bps, weight, self.probe_candidates)  # fmt: skip
        if self.routing == "probing" and self.probe_hash == "least-loaded":
            status, indptr, indices = _route_least_loaded(*args)
        else:
            status, indptr, indices = _route_flows(*args, self.probe_hash == "sum")
        if status:
            self._check_endpoints(src, dst)  # raises, naming the bad ids
        return indptr, indices

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
        """Links of each flow ``src[i] -> dst[i]`` (see the module docstring).

        ``link_load`` (``probing`` only): flows in flight per link, one entry per link (default
        none); each flow of this call takes the best of its candidate paths (see
        :attr:`probe_candidates`) and counts ``flow_weight[i]`` flows (default 1) on its
        links for the later flows of the call. ``link_load`` is used in place and given back
        unchanged. Other policies ignore both.

        Examples
        --------
        >>> import numpy as np
        >>> fab = ClosFabric(16, 800, radix=8, tiers=2, gpus_per_server=2, routing="source")
        >>> fab.routes(np.array([1]), np.array([5]), np.array([0])).links_of(0).tolist()
        [1, 33, 53, 21]
        """
        G = self.gpus
        if not (
            type(src) is np.ndarray
            and type(dst) is np.ndarray
            and type(flow_key) is np.ndarray
            and src.dtype == dst.dtype == flow_key.dtype == np.int64
            and src.ndim == 1
            and src.shape == dst.shape == flow_key.shape
            and self.routing != "ideal"
        ):
            # general inputs: checked conversion (raises on bad ones)
            src, dst, flow_key = self._route_inputs(src, dst, flow_key)
            if self.routing == "ideal":
                return Routes.from_columns(src, G + dst)
            src, dst, flow_key = src.reshape(-1), dst.reshape(-1), flow_key.reshape(-1)
        load = weight = self._no_load
        if self.routing == "probing":
            if self._idle_load is None:
                self._idle_load = np.zeros(self.n_links)
            load, weight = probe_inputs(
                link_load, flow_weight, self.n_links, src.size, idle=self._idle_load
            )
        indptr, indices = self._compiled_routes(
            np.ascontiguousarray(src),
            np.ascontiguousarray(dst),
            np.ascontiguousarray(flow_key),
            load,
            weight,
        )
        return Routes(indptr, indices)
