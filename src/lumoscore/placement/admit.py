"""One call per event: admit a job, finish a job, react to failures (LumosCore §4, A.8, A.12).

:func:`admit` takes the cluster state and a new job and

1. places it (:class:`~lumoscore.placement.policies.PlacementPolicy`, ``locality`` by default);
   when the locality rules find no pod set only because the EP groups do not fit whole into
   pods (enough TP slots idle), it places the job with its EP groups split over the fewest pods
   instead (``split_ep=True``, the default: LumosCore §4.2 Principle 2 allows EP across pods in
   a fragmented cluster; tier ``pods-ep-split``, ``Admission.relaxed``), so a job is refused
   only for want of GPUs or of network;
2. computes its demand part ``L1`` (:func:`~lumoscore.placement.demand.job_demand`) and checks
   ``L = L2 + L1``: when a leaf would need more than its limit (``K_leaf``; ``K_leaf / 2`` with
   ``tau = 1``, Theorem 4.2) it first re-places the job away from the overloaded leaves (up to
   ``replace_attempts`` times), then, above ``K_leaf``, lets the new job share links by min-cost
   flow (:func:`~lumoscore.placement.demand.share_paths`); if even that fails the job is refused
   (``kind="network"``, ``reason="leaf-ports"``); re-placements keep the first placement's
   mode (locality, or the EP split);
3. allocates the GPUs and adds ``L1`` to ``L``;
4. updates the logical topology ``C`` and the per-spine split ``L_abh``: by default
   (``logical_mode="incremental"``) the running jobs keep their split and only ``L1`` is
   assigned, greedily, to the links they leave free, filling few OCS groups
   (:func:`~lumoscore.topology.logical.extend_logical_topology`); when that is not
   contention-free, or with ``logical_mode="full"``, the whole ``L`` is split afresh
   (:func:`~lumoscore.topology.logical.design_logical_topology`: Heuristic-Decomposition for
   ``tau = 2``, Theorem 4.1). Skipped when ``L1`` is empty;
5. with a wiring, reconfigures the OCS groups whose ``C_h`` changed through
   :func:`lumoscore.toe.configure` (minimal rewiring from ``state.circuits``), measures the
   rewired circuits and, with ``iota``, plans the staged reconfiguration
   (:func:`lumoscore.toe.staged_plan`). Should the logical topology or the ToE prove
   infeasible (:class:`~lumoscore.errors.InfeasibleError`), the job's allocation is undone
   and it is refused (``kind="network"``, ``reason="ocs"``).

:func:`finish` releases a job (and by default reconfigures); :func:`fail` marks GPUs, servers or
leaf-spine links failed, releases the jobs hit (optional) and reconfigures; :func:`reconfigure`
recomputes the logical topology and the OCS configuration of the current ``L``.

A logical topology needing more OCS ports than a spine has (possible only with contention, e.g.
``tau = 1`` beyond Theorem 4.2) is scaled down symmetrically before the ToE, keeping one circuit
for every pod pair it joins (:func:`feasible_demand`: ``C'_ij = 1 + floor((C_ij - 1) *
min(s_i, s_j))``, ``s_i = min(1, (k_spine - m_i) / sum_j (C_ij - 1))``, ``m_i`` the spine's
partners; a plain ``floor(C_ij * s)`` would drop a pair's single requirement and leave its
jobs' flows without a circuit); with
``backup=True`` the idle OCS ports form a full-mesh backup
(:func:`lumoscore.topology.logical.backup_mesh`). With ``static=True`` the OCS layer holds a
fixed mesh of every spine's ports instead (:func:`lumoscore.topology.logical.port_mesh`, the
testbeds' static scenario): the logical topology still plans the jobs' routes, but the
circuits never follow it.

Examples
--------
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> from lumoscore.workload import Job
>>> spec = ClusterSpec(pods=4, k_leaf=16, k_spine=16, tau=2, gpus_per_server=8, ocs_ports=4)
>>> w = build_wiring(spec, "cross")
>>> st = ClusterState.empty(spec)
>>> job = Job(job_id=1, arrival_s=0.0, gpus=256, model="Pangu", tp=8, pp=2, dp=16, ep=8,
...           iterations=1, duration_s=1.0)
>>> adm = admit(st, job, wiring=w)
>>> adm.admitted, adm.placement.pods, adm.logical.contention_free
(True, (0, 1), True)
>>> adm.rewired_circuits == len(st.circuits) > 0, adm.C.shape, adm.toe.solver
(True, (8, 4, 4), 'mdmcf')
>>> finish(st, 1, wiring=w).reconfiguration.circuits.shape
(0, 6)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError, InfeasibleError, PreconditionError
from lumoscore.npsets import lookup, union
from lumoscore.placement.demand import job_demand, share_paths
from lumoscore.placement.policies import EP_SPLIT_TIER, PlacementPolicy, get_policy
from lumoscore.placement.state import ClusterState, DemandPart, Placement, Refusal
from lumoscore.toe import StagedPlan, ToeResult, circuit_loss, configure, rewired_circuits
from lumoscore.toe import staged_plan as toe_staged_plan
from lumoscore.toe.model import PortModel, sort_rows
from lumoscore.toe.patch import changed_pairs, pairs_of_changes, patch_circuits
from lumoscore.topology.logical import (
    LogicalTopology,
    apply_split,
    backup_mesh,
    design_logical_topology,
    free_link_split,
    port_mesh,
    shrink_logical_topology,
)
from lumoscore.workload.job import Job

__all__ = [
    "LOGICAL_MODES",
    "Admission",
    "LinkEntries",
    "Reconfiguration",
    "admit",
    "fail",
    "feasible_demand",
    "finish",
    "reconfigure",
]

IntArray = NDArray[np.int64]

LOGICAL_MODES: tuple[str, ...] = ("incremental", "full")
"""``logical_mode`` values: ``incremental`` keeps the running jobs' split ``L_abh`` and adds
(greedy) or removes only the event's demand, falling back to ``full`` (a fresh
:func:`~lumoscore.topology.logical.design_logical_topology` of the whole ``L``) when the
greedy addition is not contention-free; ``full`` always recomputes (the paper's procedure)."""


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class LinkEntries:
    """Links per pod pair ``(H, P, P)`` given by their non-zero entries: flat keys
    (ascending) and values; :meth:`dense` builds the array.

    Examples
    --------
    >>> import numpy as np
    >>> LinkEntries(np.array([1, 2]), np.array([3, 3]), (1, 2, 2)).dense().tolist()
    [[[0, 3], [3, 0]]]
    """

    key: IntArray
    value: IntArray
    shape: tuple[int, int, int]

    def dense(self) -> IntArray:
        """The ``shape`` array."""
        out = np.zeros(self.shape, np.int64)
        out.reshape(-1)[self.key] = self.value
        return out


def _dense(links: IntArray | LinkEntries) -> IntArray:
    return links.dense() if isinstance(links, LinkEntries) else links


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class Reconfiguration:
    """Logical topology and OCS configuration after an event.

    Attributes
    ----------
    logical : LogicalTopology
        ``C`` (``(H, P, P)``), ``L_abh`` and the contention of every link.
    circuits : ndarray
        The new OCS configuration (``(n, 6)``), also stored in ``state.circuits``.
    toe : ToeResult or None
        The ToE call (None without a wiring or when no group changed).
    changed_groups : tuple of int
        OCS groups reconfigured.
    rewired_circuits : int
        Circuits of the new configuration absent from the previous one.
    plan : StagedPlan or None
        Staged reconfiguration (with ``iota`` and a previous configuration).
    ocs_links : ndarray or None
        ``(H, P, P)`` links asked of the ToE for ``C`` (a property): ``C`` itself, or ``C``
        scaled down to the spines' ports (before any backup links, ``scaled_links``, also a
        property; built when read). None without a wiring (``wired`` False).
    scaled : ndarray, LinkEntries or None
        The links asked when ``C`` was scaled down, as the array or its entries (what
        ``scaled_links`` reads); None when ``C`` was asked as it is.
    changed_links : ndarray or None
        Flat keys into ``(H, P, P)`` (both directions) of the pod pairs whose number of
        circuits changed, when known (the patch, or no change); None when a solver rebuilt
        the changed groups (compare the circuits to know).
    logical_time_s, toe_time_s : float
        Wall-clock time of the two steps.
    notes : tuple of str
        Fallbacks taken (scaled-down ``C``, staging infeasible, ...).
    """

    logical: LogicalTopology
    circuits: IntArray
    toe: ToeResult | None = None
    changed_groups: tuple[int, ...] = ()
    rewired_circuits: int = 0
    plan: StagedPlan | None = None
    wired: bool = False
    scaled: IntArray | LinkEntries | None = field(default=None, repr=False)
    changed_links: IntArray | None = None
    logical_time_s: float = 0.0
    toe_time_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def scaled_links(self) -> IntArray | None:
        """``(H, P, P)`` links asked of the ToE when ``C`` had to be scaled down to the spines'
        ports (before any backup links), else None."""
        return None if self.scaled is None else _dense(self.scaled)

    @property
    def ocs_links(self) -> IntArray | None:
        """See the class (``C`` is built only when asked for)."""
        if not self.wired:
            return None
        return self.logical.C if self.scaled_links is None else self.scaled_links

    @property
    def spine_link_contention(self) -> IntArray | None:
        """``(H, P, P)`` contention level of the spine-to-spine (OCS) links of every pod pair:
        requirements ``C_ijh`` per link asked of the ToE, rounded up (1 unless ``C`` had to be
        scaled down to the spines' ports; 0 for unused pairs). None without a wiring."""
        if self.ocs_links is None:
            return None
        C = self.logical.C
        return np.where(C > 0, -(-C // np.maximum(self.ocs_links, 1)), 0)


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class Admission:
    """Outcome of :func:`admit` (or :func:`finish` / :func:`fail`).

    ``placement``/``demand`` are None for refused jobs (``refusal`` says why). ``attempts`` counts
    placements tried, ``shared_links`` the links the job shares with others (path sharing),
    ``released`` the jobs released by the event; :attr:`relaxed` tells a placement of the
    EP-split fallback.
    """

    job_id: int
    placement: Placement | None
    refusal: Refusal | None = None
    demand: DemandPart | None = None
    attempts: int = 0
    shared_links: int = 0
    reconfiguration: Reconfiguration | None = None
    released: tuple[int, ...] = ()
    place_time_s: float = 0.0

    @property
    def admitted(self) -> bool:
        """The job was placed."""
        return self.placement is not None

    @property
    def relaxed(self) -> bool:
        """The job was placed by the EP-split fallback (its EP groups cross pods)."""
        return self.placement is not None and self.placement.tier == EP_SPLIT_TIER

    @property
    def logical(self) -> LogicalTopology | None:
        """Logical topology after the event (None when not recomputed)."""
        return None if self.reconfiguration is None else self.reconfiguration.logical

    @property
    def C(self) -> IntArray | None:
        """Pod-level logical topology ``(H, P, P)`` after the event (None: unchanged)."""
        return None if self.logical is None else self.logical.C

    @property
    def toe(self) -> ToeResult | None:
        """The ToE result (None: no OCS group changed or no wiring)."""
        return None if self.reconfiguration is None else self.reconfiguration.toe

    @property
    def rewired_circuits(self) -> int:
        """Circuits set up by the event's reconfiguration (0 without one)."""
        return 0 if self.reconfiguration is None else self.reconfiguration.rewired_circuits

    @property
    def plan(self) -> StagedPlan | None:
        """Staged reconfiguration plan (with ``iota``)."""
        return None if self.reconfiguration is None else self.reconfiguration.plan


def feasible_demand(C: Any, k_spine: Any, rows: IntArray | None = None) -> IntArray:
    """Scale ``C`` down symmetrically so no spine needs more than ``k_spine`` OCS ports
    (one number, or ``(H, P)`` per spine: its working ports), keeping every pod pair of
    ``C`` connected (``rows``: ``C.sum(axis=2)`` when the caller knows it; a logical
    topology is scaled on its entries instead, :func:`_scaled_topology`).

    A pod pair whose requirements are scaled down must keep at least one circuit: the jobs'
    flows between the two pods need one (LumosCore §4.2: the logical topology serves every
    requirement of ``L``; sharing a circuit is contention, having none is no connectivity).
    Every positive entry therefore keeps one circuit and only the rest is scaled:
    ``C'_ij = 1 + floor((C_ij - 1) min(s_i, s_j))`` with
    ``s_i = min(1, (k_spine - m_i) / sum_j (C_ij - 1))``, ``m_i`` the partners of spine ``i``
    (row sum ``<= m_i + k_spine - m_i``). ``C`` unchanged when it fits.

    A spine with more partners than ports (``m_i > k_spine``, rare) cannot keep them all in its
    group: pairs are dropped one at a time, preferring pairs connected in another group, then
    pairs whose other end is also over its ports, then the smallest requirement. A pod pair
    left without a circuit in every group then gets one in a group with a port free at both
    ends, or freeable there: a full spine gives up one circuit of a pair that keeps another
    (a second circuit in that group or one in another group), so no pair is disconnected.

    Examples
    --------
    >>> feasible_demand([[[0, 3, 3], [3, 0, 0], [3, 0, 0]]], 4)[0].tolist()
    [[0, 2, 2], [2, 0, 0], [2, 0, 0]]
    >>> feasible_demand([[[0, 1, 8], [1, 0, 0], [8, 0, 0]]], 8)[0].tolist()  # 0-1 kept
    [[0, 1, 7], [1, 0, 0], [7, 0, 0]]
    """
    Cm = np.asarray(C, dtype=np.int64)
    rows = Cm.sum(axis=2) if rows is None else rows
    k_spine = np.broadcast_to(np.asarray(k_spine, dtype=np.int64), rows.shape)
    if (rows <= k_spine).all():
        return Cm
    pos = Cm > 0
    partners = pos.sum(axis=2)
    extra = np.maximum(Cm - 1, 0)
    extra_rows = extra.sum(axis=2)
    budget = np.maximum(k_spine - partners, 0)
    s = np.minimum(1.0, budget / np.maximum(extra_rows, 1))
    f = np.minimum(s[:, :, None], s[:, None, :])
    out = pos.astype(np.int64) + np.floor(extra * f + 1e-9).astype(np.int64)
    # spines with more partners than ports: drop pairs (a short greedy over the overflow)
    for h in np.flatnonzero((out.sum(axis=2) > k_spine).any(axis=1)):
        D = out[h]
        while True:
            over = D.sum(axis=1) > k_spine[h]
            if not over.any():
                break
            i, j = np.nonzero((D > 0) & over[:, None])
            elsewhere = (out[:, i, j] > 0).sum(axis=0) > 1
            f_ = np.lexsort((Cm[h, i, j], ~over[j], ~elsewhere))[0]  # last key first
            D[i[f_], j[f_]] = D[j[f_], i[f_]] = 0
    # pod pairs left without any circuit: one in a group with a port free (or freeable) at
    # both ends; passes until no pair gains one (a pass can free ports for an earlier pair)
    progress = True
    while progress:
        progress = False
        ii, jj = np.nonzero(np.triu(pos.any(axis=0) & ~(out > 0).any(axis=0), 1))
        for i, j in zip(ii.tolist(), jj.tolist(), strict=True):
            progress |= _connect(out, i, j, k_spine)
    return out


def _scaled_entries(
    shape: tuple[int, ...], entries: tuple[IntArray, IntArray], k_spine: IntArray
) -> LinkEntries | None:
    """:func:`feasible_demand`'s scaling computed on the non-zero entries of ``C`` (flat
    keys, values), or None when some spine still has more partners than ports (the greedy
    over the overflow then runs on the whole matrix). Every entry keeps at least one circuit,
    so no pod pair is left to reconnect."""
    H, P, _ = shape
    key, c = entries
    hi = key // P  # spine (h, i) of each entry, as h * P + i
    j = key % P
    partners = np.bincount(hi, minlength=H * P).reshape(H, P)
    extra = c - 1
    extra_rows = np.bincount(hi, weights=extra, minlength=H * P).reshape(H, P)
    budget = np.maximum(k_spine - partners, 0)
    s = np.minimum(1.0, budget / np.maximum(extra_rows, 1))
    sf = s.reshape(-1)
    f = np.minimum(sf[hi], sf[(hi // P) * P + j])
    val = 1 + np.floor(extra * f + 1e-9).astype(np.int64)
    if (np.bincount(hi, weights=val, minlength=H * P).reshape(H, P) > k_spine).any():
        return None
    return LinkEntries(key, val, (H, P, P))


def _scaled_topology(
    topo: LogicalTopology, ports: Any, rows: IntArray
) -> IntArray | LinkEntries | None:
    """:func:`feasible_demand` of ``topo.C`` (row sums ``rows``), or None when that leaves it
    as it is; on ``C``'s entries, and as entries, when no spine has more partners than ports
    (then neither ``C`` nor a comparison with it is built: the scaled matrix has ``C``'s
    support)."""
    key, val = topo.pod_entries()
    H, P = rows.shape
    k_spine = np.broadcast_to(np.asarray(ports, dtype=np.int64), rows.shape)
    demand = _scaled_entries((H, P, P), (key, val), k_spine)
    if demand is None:
        demand = feasible_demand(topo.C, ports, rows=rows)
        return None if np.array_equal(demand, topo.C) else demand
    return None if np.array_equal(demand.value, val) else demand


def _freeable(out: IntArray, h: int, x: int) -> int:
    """A partner ``m`` of spine ``(x, h)`` whose circuit can go without disconnecting pods ``x``
    and ``m`` (a second circuit in group ``h`` or a circuit in another group), else -1."""
    row = out[h, x]
    ok = (row >= 2) | ((row == 1) & ((out[:, x, :] > 0).sum(axis=0) > 1))
    return int(np.argmax(np.where(ok, row, 0))) if ok.any() else -1


def _connect(out: IntArray, i: int, j: int, k_spine: IntArray) -> bool:
    """Give pods ``i`` and ``j`` one circuit in the group with the most ports free at both ends,
    freeing a port (:func:`_freeable`) at a full end when no group has both free. In place."""
    slack = k_spine - out.sum(axis=2)
    both = np.minimum(slack[:, i], slack[:, j])
    order = np.lexsort((-np.maximum(slack[:, i], slack[:, j]), -both))
    for h in order.tolist():
        give = [(x, -1 if slack[h, x] > 0 else _freeable(out, h, x)) for x in (i, j)]
        if any(slack[h, x] <= 0 and m < 0 for x, m in give):
            continue
        for x, m in give:
            if m >= 0:
                out[h, x, m] -= 1
                out[h, m, x] -= 1
        out[h, i, j] = out[h, j, i] = 1
        return True
    return False


def reconfigure(
    state: ClusterState,
    *,
    wiring: Any = None,
    solver: str = "mdmcf",
    method: str = "auto",
    iota: float | None = None,
    backup: bool = False,
    static: bool = False,
    logical: LogicalTopology | None = None,
    patch: bool = True,
) -> Reconfiguration:
    """Recompute the logical topology of ``state.L`` (or take ``logical``, already computed)
    and, with a wiring, the OCS configuration.

    Only groups whose demand changed are handed to the ToE; the others keep their circuits.
    With ``patch`` (default) and a configuration this function deployed on the same channel
    view of the wiring (a :class:`~lumoscore.toe.PortModel`), the circuits are first patched
    on the pod pairs whose link count changed (:func:`lumoscore.toe.patch.patch_circuits`:
    the least rewiring, at a cost that grows with the change); ``solver`` runs when the
    patch finds no free ports for a new link. Updates ``state.logical`` and
    ``state.circuits``.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec
    >>> st = ClusterState.empty(ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2,
    ...                                     gpus_per_server=2))
    >>> reconfigure(st).logical.C.sum()
    np.int64(0)
    """
    spec = state.spec
    t0 = time.perf_counter()
    cap = state.link_capacity()
    if logical is None:  # a fresh split: the jobs' incremental parts are no longer separable
        state.job_split.clear()
    # (L from the running jobs' parts: ClusterState's invariant, without a pass over L)
    topo = logical or design_logical_topology(
        state.demand_entries(), spec, method=method, capacity=cap
    )
    t1 = time.perf_counter()
    notes: list[str] = []
    if wiring is None:
        state.logical = topo
        return Reconfiguration(topo, state.circuits, logical_time_s=t1 - t0)
    ports = spec.k_spine if state.spine_ports is None else state.spine_ports
    rows = topo.spine_row_sums()
    # demand None: C itself (asked of the ToE unchanged; not built where not needed)
    demand: IntArray | LinkEntries | None = None
    if static:
        demand = port_mesh(spec, ports)
    elif not _fits(rows, ports):
        demand = _scaled_topology(topo, ports, rows)
    scaled = not static and demand is not None
    if scaled:
        notes.append("logical topology scaled down to the spines' OCS ports (contention)")
    # the links asked per pod pair (Reconfiguration.spine_link_contention), before backups
    links = demand if scaled else None
    if backup and not static:
        base = topo.C if demand is None else _dense(demand)
        demand = base + backup_mesh(base, spec, ports)
    old = state.circuits
    H, P = spec.ocs_groups, spec.pods
    prev, pairs, step, support = _pairs_to_change(state, topo, demand)
    counts: IntArray | None = prev  # links per pod pair of the new circuits, when known
    changed = np.zeros(H, bool)
    changed[pairs[0]] = True
    live = getattr(wiring, "live", None)  # a PortModel with dead ports: their circuits go
    if live is not None and len(old):
        changed[old[~live(old), 0]] = True
    changed = np.flatnonzero(changed)
    res = None
    new = old
    rewired = 0
    if changed.size:
        # circuits this function deployed for the same wiring need no validation
        trusted = old is state.toe_circuits and wiring is state.toe_wiring
        if patch and trusted and isinstance(wiring, PortModel) and not backup and not static:
            t_patch = time.perf_counter()
            # (merged: sorted by group as deployed; nothing but the new links' two circuits
            # each is new, so that is the rewiring)
            patched = patch_circuits(wiring, old, *pairs, merge=True)
            if patched is not None:
                # the patch realizes every count exactly (the counts are the state's own:
                # updated in place where they changed, else a copy of C; a dense demand
                # other than C is this call's own array and never updated in place later,
                # since toe_counts_of stays None and the support is not known)
                if step is not None:
                    prev.reshape(-1)[step[0]] += step[1]
                elif demand is not None:
                    counts = _dense(demand)
                else:
                    counts = np.array(topo.C, np.int64)
                new = patched
                rewired = 2 * int(pairs[3][pairs[3] > 0].sum())
                res = ToeResult(
                    circuits=_group_rows(new, changed),
                    solver="patch",
                    status="optimal",
                    solve_time_s=time.perf_counter() - t_patch,
                    groups=tuple(int(h) for h in changed),
                )
        if res is None:
            counts = None
            member = np.zeros(H, bool)
            member[changed] = True
            hit = member[old[:, 0]]
            res = configure(
                (topo.C if demand is None else _dense(demand))[changed],
                wiring,
                current=old,
                solver=solver,
                groups=changed,
                check=not trusted,
            )
            new = np.concatenate([old[~hit], res.circuits]).astype(np.int64)
            # trusted: both parts sorted and their groups disjoint: sorting by group suffices
            new = new[np.argsort(new[:, 0], kind="stable")] if trusted else sort_rows(new)
            # unchanged groups keep their circuits: compare the changed groups only
            if not len(res.circuits):
                rewired = 0
            elif trusted:
                rewired = _new_circuits(res.circuits, old[hit], np.shape(wiring.tx_ocs))
            else:
                rewired = rewired_circuits(res.circuits, old[hit])
    t2 = time.perf_counter()
    plan = None
    if iota is not None and len(old) and changed.size:
        loss, total = circuit_loss(old, new, H, P)
        try:
            plan = toe_staged_plan(loss, total, iota)
        except InfeasibleError as exc:
            notes.append(f"staged plan: {exc}")
    state.logical = topo
    state.circuits = new
    state.toe_circuits, state.toe_wiring, state.toe_counts = new, wiring, counts
    state.toe_keys = None if counts is None else support
    # (the counts are C's when nothing scaled or added to it)
    state.toe_counts_of = topo.token if counts is not None and demand is None else None
    changed_links = None
    if counts is not None:  # the new circuits realize the counts: only the pairs changed
        g, i, j = pairs[:3]
        changed_links = np.concatenate([(g * P + i) * P + j, (g * P + j) * P + i])
    return Reconfiguration(
        logical=topo,
        circuits=new,
        toe=res,
        changed_groups=tuple(int(h) for h in changed),
        rewired_circuits=rewired,
        plan=plan,
        wired=True,
        scaled=links,
        changed_links=changed_links,
        logical_time_s=t1 - t0,
        toe_time_s=t2 - t1,
        notes=tuple(notes),
    )


def _pairs_to_change(
    state: ClusterState, topo: LogicalTopology, demand: IntArray | LinkEntries | None
) -> tuple[
    IntArray,
    tuple[IntArray, IntArray, IntArray, IntArray],
    tuple[IntArray, IntArray] | None,
    IntArray | None,
]:
    """The links per pod pair of the deployed circuits, the pod pairs whose count must
    change to reach ``demand`` (None: ``topo.C``) as ``(group, i, j, change)``, the change as
    ``(flat keys, difference)`` when the deployed counts are the state's own array (to update
    in place once the circuits realize it; None otherwise), and the flat keys of the new
    counts' non-zero entries when known.

    Without building ``C``, or comparing ``(H, P, P)`` arrays, when the deployed counts are
    known: the changes ``topo`` lists when they are those of the topology it was derived
    from, else the new entries (``topo``'s, or the scaled ones) against the deployed counts
    on the union of the two supports.
    """
    old = state.circuits
    H, P = state.spec.ocs_groups, state.spec.pods
    known = old is state.toe_circuits and state.toe_counts is not None
    prev = state.toe_counts
    if (
        demand is None
        and known
        and topo.derived_from is not None
        and topo.derived_from is state.toe_counts_of
    ):
        assert prev is not None and topo.changed_keys is not None
        assert topo.changed_delta is not None
        keys, delta = topo.changed_keys, topo.changed_delta
        support = None
        if state.toe_keys is not None:
            support = union(state.toe_keys, keys)
            support = support[(prev.reshape(-1)[support] + lookup(keys, delta, support)) != 0]
        return prev, pairs_of_changes(keys, delta, P), (keys, delta), support
    if known and state.toe_keys is not None and not isinstance(demand, np.ndarray):
        assert prev is not None
        key, val = topo.pod_entries() if demand is None else (demand.key, demand.value)
        both = union(state.toe_keys, key)
        delta = lookup(key, val, both) - prev.reshape(-1)[both]
        moved = delta != 0
        keys, delta = both[moved], delta[moved]
        return prev, pairs_of_changes(keys, delta, P), (keys, delta), key
    if known:
        assert prev is not None
    else:
        prev = np.bincount((old[:, 0] * P + old[:, 2]) * P + old[:, 4], minlength=H * P * P)
        prev = prev.reshape(H, P, P)
    # (symmetric counts: a pair i < j per change)
    new = topo.C if demand is None else _dense(demand)
    support = None
    if demand is None:
        support = topo.pod_entries()[0]
    elif isinstance(demand, LinkEntries):
        support = demand.key
    return prev, changed_pairs(prev, new), None, support


def _fits(rows: IntArray, ports: Any) -> bool:
    """No spine needs more OCS ports (row sums ``rows``, ``(H, P)``) than it has
    (``ports``: one number or ``(H, P)``): :func:`feasible_demand` leaves ``C`` as it is."""
    return bool((rows <= np.asarray(ports, dtype=np.int64)).all())


def _group_rows(circuits: IntArray, groups: IntArray) -> IntArray:
    """The rows of ``circuits`` (sorted by group) in ``groups`` (ascending), in order."""
    lo = np.searchsorted(circuits[:, 0], groups, side="left")
    hi = np.searchsorted(circuits[:, 0], groups, side="right")
    return np.concatenate([circuits[a:b] for a, b in zip(lo, hi, strict=True)])


def _new_circuits(new: IntArray, old: IntArray, shape: tuple[int, ...]) -> int:
    """:func:`~lumoscore.toe.rewired_circuits` of two valid configurations (every Tx port in
    at most one circuit): circuits of ``new`` whose Tx port has another circuit, or none, in
    ``old``, through a table indexed by Tx port instead of sorting (``shape``: the wiring's
    ``(H, P, K)``)."""
    H, P, K = shape
    tx_new = (new[:, 0] * P + new[:, 2]) * K + new[:, 3]
    tx_old = (old[:, 0] * P + old[:, 2]) * K + old[:, 3]
    rest = (new[:, 1] * P + new[:, 4]) * K + new[:, 5]  # (ocs, rx pod, rx port)
    table = np.full(H * P * K, -1, np.int64)
    table[tx_old] = (old[:, 1] * P + old[:, 4]) * K + old[:, 5]
    return int(np.count_nonzero(table[tx_new] != rest))


def _matrix(part: DemandPart) -> tuple[IntArray, IntArray, IntArray]:
    """The part as the COO triple the logical-topology functions accept for ``L``."""
    return part.rows, part.cols, part.values


def _incremental(
    state: ClusterState,
    job_id: int,
    part: DemandPart,
    add: bool,
    mode: str,
    split: Any = None,
) -> LogicalTopology | None:
    """The split after adding/removing ``part`` without moving the rest, or None (recompute)."""
    if mode not in LOGICAL_MODES:
        raise ConfigError(f"logical_mode: unknown {mode!r}; allowed: {', '.join(LOGICAL_MODES)}")
    old = state.logical
    cap = state.link_capacity()
    if mode == "full" or old is None or not np.array_equal(old.capacity, cap):
        return None
    m = _matrix(part)
    if not add:
        if split is not None:  # exactly what the job added: only its OCS groups change
            try:
                return apply_split(old, split, state.spec, sign=-1)
            except PreconditionError:  # (a shrink had to take some of it: see below)
                pass
        # the other jobs' splits stay, for their own removals (and routes); the job's
        # requirements per pair are in the split (it serves L), so the rest covers them
        others = [s for j, s in state.job_split.items() if j != job_id]
        keep = tuple(np.concatenate(x) for x in zip(*others, strict=True)) if others else None
        return shrink_logical_topology(old, m, state.spec, keep=keep)  # type: ignore[arg-type]
    split = free_link_split(old, m, state.spec, capacity=cap)
    topo = apply_split(old, split, state.spec, capacity=cap, method="incremental")
    if not topo.contention_free:
        return None
    state.job_split[job_id] = split
    return topo


def _overloaded(state: ClusterState, part: DemandPart, limit: int) -> IntArray:
    """Leaves of the part whose cross-pod links (row sums of ``state.L``, read for the
    part's leaves only) plus the part's exceed ``limit``."""
    rows, inv = np.unique(part.rows, return_inverse=True)  # (the part's leaves only)
    add = np.bincount(inv.reshape(-1), weights=part.values, minlength=rows.size).astype(np.int64)
    nz = add != 0
    rows, add = rows[nz], add[nz]
    over = np.zeros(state.spec.leaves, bool)
    over[rows] = state.row_sums(rows) + add > limit
    return over


def admit(
    state: ClusterState,
    job: Job,
    *,
    wiring: Any = None,
    solver: str = "mdmcf",
    policy: str | PlacementPolicy = "locality",
    demand_method: str = "research",
    logical_method: str = "auto",
    logical_mode: str = "incremental",
    replace_attempts: int = 2,
    share: bool = True,
    iota: float | None = None,
    backup: bool = False,
    static: bool = False,
    split_ep: bool = True,
    toe_patch: bool = True,
) -> Admission:
    """Place a new job, update ``L``, the logical topology and the OCS configuration.

    See the module docstring. ``split_ep`` enables the EP-split fallback of step 1 (``False``:
    such a job is refused, ``kind="locality"``, ``reason="ep-confinement"``). ``toe_patch``:
    the OCS configuration is patched on the changed pod pairs before ``solver`` runs
    (:func:`reconfigure`'s ``patch``). A refused job
    leaves the state unchanged except for the fragmentation record (``state.refusals``).
    """
    t0 = time.perf_counter()
    pol = get_policy(policy) if isinstance(policy, str) else policy
    spec = state.spec
    k = spec.k_leaf
    target = k // 2 if spec.tau == 1 else k
    got = pol.propose(state, job)
    split = False  # EP-split fallback (and its re-placements)
    if split_ep and isinstance(got, Refusal) and got.reason == "ep-confinement":
        got = pol.propose(state, job, split_ep=True)
        split = True
    if isinstance(got, Refusal):
        state.refusals.append(got)
        return Admission(job.job_id, None, refusal=got, place_time_s=time.perf_counter() - t0)
    first = got
    part = first_part = job_demand(job, got, state, method=demand_method)
    avoid = np.zeros(spec.leaves, bool)
    attempts = 1
    over = _overloaded(state, part, target)
    while over.any() and attempts <= replace_attempts:
        avoid |= over
        alt = pol.propose(state, job, avoid_leaves=avoid, split_ep=split)
        if isinstance(alt, Refusal):
            break
        attempts += 1
        got, part = alt, job_demand(job, alt, state, method=demand_method)
        over = _overloaded(state, part, target)
    if over.any() and _overloaded(state, part, k).any():
        if not _overloaded(state, first_part, k).any():
            got, part = first, first_part  # the first placement fits K_leaf after all
        elif share:
            shared = share_paths(state, first_part)
            if shared is None:
                ref = Refusal(
                    job.job_id, "network", "leaf-ports", job.gpus, state.free_gpus,
                    "cross-pod links exceed K_leaf even with path sharing",
                )  # fmt: skip
                state.refusals.append(ref)
                return Admission(job.job_id, None, refusal=ref, attempts=attempts)
            got, part = first, shared
        else:
            ref = Refusal(
                job.job_id, "network", "leaf-ports", job.gpus, state.free_gpus,
                f"cross-pod links exceed K_leaf={k} and path sharing is off",
            )  # fmt: skip
            state.refusals.append(ref)
            return Admission(job.job_id, None, refusal=ref, attempts=attempts)
    state.allocate(got, part)
    t1 = time.perf_counter()
    rec = None
    if part.total or state.logical is None:
        splits = dict(state.job_split)  # (a full recomputation clears them)
        try:
            tl = time.perf_counter()
            topo = _incremental(state, job.job_id, part, True, logical_mode) if part.total else None
            tl = time.perf_counter() - tl
            rec = reconfigure(
                state,
                wiring=wiring,
                solver=solver,
                method=logical_method,
                iota=iota,
                backup=backup,
                static=static,
                logical=topo,
                patch=toe_patch,
            )
        except InfeasibleError as exc:  # the OCS layer cannot carry it: undo the allocation
            state.release(job.job_id)
            state.job_split.clear()
            state.job_split.update(splits)
            ref = Refusal(
                job.job_id, "network", "ocs", job.gpus, state.free_gpus,
                f"the OCS layer cannot realise the logical topology: {exc}",
            )  # fmt: skip
            state.refusals.append(ref)
            return Admission(job.job_id, None, refusal=ref, attempts=attempts)
        rec = replace(rec, logical_time_s=rec.logical_time_s + tl)
    return Admission(
        job.job_id,
        got,
        demand=part,
        attempts=attempts,
        shared_links=part.shared,
        reconfiguration=rec,
        place_time_s=t1 - t0,
    )


def finish(
    state: ClusterState,
    job_id: int,
    *,
    wiring: Any = None,
    solver: str = "mdmcf",
    logical_method: str = "auto",
    logical_mode: str = "incremental",
    reconfigure_now: bool = True,
    iota: float | None = None,
    backup: bool = False,
    static: bool = False,
    toe_patch: bool = True,
) -> Admission:
    """Release a finished job (GPUs and demand) and, if it had cross-pod demand and
    ``reconfigure_now``, recompute the logical topology and OCS configuration (``toe_patch``:
    as in :func:`admit`)."""
    split = state.job_split.get(job_id)
    if state.hand_over(job_id):
        split = None  # (part of the job's links stay, for jobs leaning on them)
    part = state.job_demand.get(job_id)
    p = state.release(job_id)
    rec = None
    if part is not None and part.total and not reconfigure_now:
        state.logical = _incremental(state, job_id, part, False, logical_mode, split)
    elif part is not None and part.total:
        topo = _incremental(state, job_id, part, False, logical_mode, split)
        rec = reconfigure(
            state,
            wiring=wiring,
            solver=solver,
            method=logical_method,
            iota=iota,
            backup=backup,
            static=static,
            logical=topo,
            patch=toe_patch,
        )
    return Admission(job_id, p, demand=part, reconfiguration=rec, released=(job_id,))


def fail(
    state: ClusterState,
    *,
    gpus: Any = None,
    servers: Any = None,
    links: Any = None,
    release_jobs: bool = True,
    wiring: Any = None,
    solver: str = "mdmcf",
    logical_method: str = "auto",
) -> Admission:
    """Failed GPUs, servers or leaf-spine links (``(leaf, group)`` pairs): update the state,
    release the jobs hit (``release_jobs``), recompute ``L``'s logical topology and the OCS
    configuration. ``job_id`` of the result is -1; ``released`` lists the jobs released.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec
    >>> st = ClusterState.empty(ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2,
    ...                                     gpus_per_server=2))
    >>> fail(st, gpus=[3], links=[(0, 1)]).released, int(st.link_capacity()[0, 1])
    ((), 1)
    """
    hit: set[int] = set()
    if gpus is not None:
        hit |= set(state.fail_gpus(gpus))
    if servers is not None:
        hit |= set(state.fail_servers(servers))
    for leaf, group in [] if links is None else links:
        state.fail_link(int(leaf), int(group))
    released = tuple(sorted(hit)) if release_jobs else ()
    for j in released:
        state.hand_over(j)
        state.release(j)
    rec = reconfigure(state, wiring=wiring, solver=solver, method=logical_method)
    return Admission(-1, None, reconfiguration=rec, released=released)
