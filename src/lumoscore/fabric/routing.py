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
* ``ecmp-polarized`` (Clos): ``ecmp`` with one hash seed at every tier (hash polarization).
* ``balanced``: least-loaded ECMP. On a Clos, over the flows of one call: the flows leaving
  one switch take its up-ports round-robin in call order, so port loads differ by at most one
  (:func:`balanced_ports`). On the vClos leaf-spine baseline (vClos §9.3), by the flows in
  flight: load-aware (:class:`~lumoscore.fabric.leafspine.LeafSpineFabric`).
* ``source``: vClos source routing: the port is a fixed function of the source GPU.
* ``vclos``: source routing inside each job's own virtual Clos (vClos Lemma 5.1,
  :class:`~lumoscore.fabric.leafspine.VClosFabric`); jobs never share a link.
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

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.fabric.hashing import flow_hash_jit
from lumoscore.jit import cached_jit
from lumoscore.registry import Registry

__all__ = [
    "CANDIDATE_STEP",
    "EXTRA_SEED",
    "PROBE_CANDIDATES",
    "ROUTINGS",
    "Routing",
    "balanced_ports",
    "candidate_counts",
    "candidate_counts_jit",
    "check_candidates",
    "choose_paths",
    "ecmp_ports",
    "path_score",
    "probe_inputs",
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
ROUTINGS.register(
    "ecmp-polarized",
    Routing("ecmp with the same hash seed at every tier (Clos: shows hash polarization)"),
)
ROUTINGS.register(
    "balanced",
    Routing("least-loaded up-port (Clos: over the call; vClos leaf-spine: flows in flight)"),
)
ROUTINGS.register("source", Routing("vClos source routing: the port follows the source GPU"))
ROUTINGS.register(
    "probing",
    Routing("best of a few hashed paths by the flows in flight, at every round", load_aware=True),
)
ROUTINGS.register("ideal", Routing("contention-free: the two NIC links", contention_free=True))
ROUTINGS.register(
    "vclos",
    Routing(
        "vClos: source routing inside the job's own virtual Clos (Lemma 5.1)",
        contention_free=True,
    ),
)
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


#: Candidate paths per flow of ``probing``. The research simulator draws
#: ``max_rehashing_time + round(U(0, 0.7))`` hash candidates per flow (a one-more candidate
#: with probability 2/7). Its published 4096-GPU LumosCore configuration has
#: ``max_rehashing_time = 1``; that of its Clos runs is not public. ``3 + 2/7``
#: (``max_rehashing_time = 3``) is the value of that form that best reproduces the published
#: Clos results (docs/results-4096.md: 5 of the 6 Clos JCT/JRT ratios over seeds 1-5 within
#: tolerance; 1 + 2/7 gives 2 of 6, 2 + 2/7 4 of 6, 4 + 2/7 5 of 6).
PROBE_CANDIDATES = 3.0 + 2.0 / 7.0


def check_candidates(value: float) -> float:
    """``value`` as a candidate count (a number >= 1), or a ConfigError naming
    ``probe_candidates``."""
    if not (
        isinstance(value, int | float | np.number)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 1
    ):
        raise ConfigError(f"probe_candidates must be a number >= 1, got {value!r}")
    return float(value)


#: Candidate ``c`` of a probing flow hashes with its seed(s) moved by ``c`` times this.
CANDIDATE_STEP = 0x9E3779B9
#: Seed of the per-flow draw of a fractional extra candidate.
EXTRA_SEED = 0x5BD1E995
_EXTRA_SEED = np.uint64(EXTRA_SEED)


def candidate_counts(
    src: IntArray, dst: IntArray, flow_key: IntArray, candidates: float
) -> IntArray:
    """Candidate paths of each probing flow: ``floor(candidates)``, plus one when the flow's
    hash (seed :data:`EXTRA_SEED`) falls below ``candidates mod 1`` (at least 1).

    Examples
    --------
    >>> import numpy as np
    >>> candidate_counts(np.arange(4), np.arange(4) + 9, np.zeros(4, np.int64), 2.0).tolist()
    [2, 2, 2, 2]
    """
    as_int = (np.ascontiguousarray(x, dtype=np.int64).reshape(-1) for x in (src, dst, flow_key))
    return candidate_counts_jit(*as_int, float(candidates))


@cached_jit
def candidate_counts_jit(
    src: IntArray, dst: IntArray, key: IntArray, candidates: float
) -> IntArray:  # pragma: no cover - compiled
    """:func:`candidate_counts`, compiled: int64 arrays only; other kernels call it."""
    whole = math.floor(candidates)
    frac = candidates - whole
    n = np.full(src.size, max(whole, 1), np.int64)
    if frac > 0.0:
        for i in range(src.size):
            u = float(flow_hash_jit(src[i], dst[i], key[i], _EXTRA_SEED)) / 4294967296.0
            if u < frac:
                n[i] = whole + 1
    return n


def probe_inputs(
    link_load: ArrayLike | None,
    flow_weight: ArrayLike | None,
    n_links: int,
    n_flows: int,
    idle: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The flows in flight per link (used in place when already a writable contiguous
    float64 array; zeros when ``None``: ``idle``, a caller's zeros that the router gives
    back unchanged, when given) and the flows each row stands for (ones when ``None``),
    checked against ``n_links`` and ``n_flows``."""
    if link_load is None and idle is not None:
        link_load = idle
    if link_load is None:
        load = np.zeros(n_links)
    else:
        load = link_load  # type: ignore[assignment]
        if not (
            type(load) is np.ndarray
            and load.dtype == np.float64
            and load.flags.c_contiguous
            and load.flags.writeable
        ):
            load = np.array(link_load, dtype=np.float64)
    if load.shape != (n_links,):
        raise PreconditionError(
            f"link_load must have one entry per link ({n_links}), got shape {load.shape}"
        )
    weight = (
        np.ones(n_flows)
        if flow_weight is None
        else np.ascontiguousarray(flow_weight, dtype=np.float64).reshape(-1)
    )
    if weight.shape != (n_flows,):
        raise PreconditionError(
            f"flow_weight shape {weight.shape} differs from the flows' ({n_flows},)"
        )
    return load, weight


@cached_jit(inline="always")
def path_score(
    links: IntArray, lo: int, hi: int, load: NDArray[np.float64], cap: NDArray[np.float64]
) -> float:  # pragma: no cover - compiled
    """The probing score of the path ``links[lo:hi]``: its bottleneck
    ``min cap[l] / max(load[l], 1)`` (the research simulator's path score)."""
    score = np.inf
    for q in range(lo, hi):
        v = cap[links[q]] / max(load[links[q]], 1.0)
        if v < score:
            score = v
    return score


@cached_jit
def choose_paths(
    indptrs: IntArray,
    indices: IntArray,
    offsets: IntArray,
    n_cand: IntArray,
    load: NDArray[np.float64],
    cap: NDArray[np.float64],
    weight: NDArray[np.float64],
) -> tuple[IntArray, IntArray]:  # pragma: no cover - compiled
    """Probing over precomputed candidate routes, flow by flow in order.

    Candidate ``c`` is the CSR ``(indptrs[c], indices[offsets[c]:offsets[c + 1]])`` over the
    same flows. Flow ``i`` keeps the first of its ``n_cand[i]`` candidates whose bottleneck
    ``min cap[l] / max(load[l], 1)`` is largest and counts ``weight[i]`` flows on its links
    for the later flows; ``load`` is given back unchanged. Returns the chosen CSR.
    """
    F = n_cand.size
    pick = np.zeros(F, np.int64)
    length = np.empty(F, np.int64)
    for i in range(F):
        best, best_score = 0, -1.0
        for c in range(min(n_cand[i], indptrs.shape[0])):
            lo = offsets[c] + indptrs[c, i]
            score = path_score(indices, lo, offsets[c] + indptrs[c, i + 1], load, cap)
            if score > best_score:
                best, best_score = c, score
        pick[i] = best
        length[i] = indptrs[best, i + 1] - indptrs[best, i]
        for q in range(offsets[best] + indptrs[best, i], offsets[best] + indptrs[best, i + 1]):
            load[indices[q]] += weight[i]
    out_ptr = np.zeros(F + 1, np.int64)
    for i in range(F):
        out_ptr[i + 1] = out_ptr[i] + length[i]
    out = np.empty(out_ptr[F], np.int64)
    for i in range(F):
        c = pick[i]
        base = offsets[c] + indptrs[c, i]
        for j in range(length[i]):
            out[out_ptr[i] + j] = indices[base + j]
            load[indices[base + j]] -= weight[i]
    return out_ptr, out
