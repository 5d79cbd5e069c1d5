"""The LumosCore fabric: leaf-spine pods joined by OCS groups, placing its own jobs.

LumosCore (§2.4, §4) is a set of pods, each a two-tier leaf-spine network, whose spines are
joined by optical circuit switches: spine ``h`` of every pod connects to OCS group ``h``, so a
circuit of group ``h`` joins spine ``h`` of pod ``i`` to spine ``h`` of pod ``j``. Which
circuits exist follows from the jobs running: placement, the leaf-level demand ``L``, its
per-spine split ``L_abh`` and the pod-level logical topology ``C`` (``(H, P, P)``) are the
placement package's (:func:`lumoscore.placement.admit`); the OCS configuration is the ToE's
(:mod:`lumoscore.toe`). This module turns that state into links, capacities and routes for the
flow-level simulator, and is the simulator's placer (it has :meth:`LumosCoreFabric.place`).

Links (all directed, numbered by index arithmetic; ``G`` GPUs, ``n`` leaves, ``H`` spines per
pod = OCS groups, ``P`` pods):

* ``[0, G)`` NIC uplinks (GPU ``g`` -> its leaf), ``[G, 2G)`` NIC downlinks;
* ``2G + leaf * H + h``: leaf -> spine ``h`` of its pod; then ``2G + n H + leaf * H + h``:
  spine ``h`` -> leaf. The ``tau`` parallel cables of a leaf-spine pair are modelled as **one**
  link of ``tau x`` port speed (a flow never exceeds its NIC speed, so a single flow cannot
  tell the difference, and ``tau`` flows fit either way);
* ``2G + 2 n H + (h P + i) P + j``: the OCS link spine ``(i, h)`` -> spine ``(j, h)`` of capacity
  ``C[h, i, j] x`` port speed, counted from the deployed circuits (0 without a circuit: no
  route ever uses such a link; ``i == j`` links exist for the arithmetic and stay 0).

Routing (``routing=``):

* ``planned`` (LumosCore §4.4): a cross-pod flow between leaves ``a`` and ``b`` goes through the
  spines of the job's own per-spine split of that leaf pair (the entries the admission added for
  it, ``state.job_split``; the whole pair's split when the admission recomputed the logical
  topology from scratch), the round's flows of the pair spread over the spines in proportion
  to the split, in call order (deterministic). Intra-pod flows between two leaves spread the
  same way over the leaf-spine links left free by the other jobs' cross-pod split (with a
  per-pair offset
  that balances all-to-all and ring patterns at both ends).
* ``ecmp``: the spine is ``hash(src, dst, flow_key) mod`` the candidates: every spine inside a
  pod, the groups ``h`` with ``C[h, i, j] > 0`` across pods.
* ``probing`` (Fig. 25): every round, each flow takes the best of ``probe_candidates`` ECMP
  candidates (hash seeds moved per candidate) by ``min capacity / max(flows, 1)`` over its
  links, counting the flows in flight (:func:`lumoscore.fabric.routing.choose_paths`).
* ``ideal``: the two NIC links only (:attr:`isolating` is True).

A cross-pod leaf pair without any split entry (e.g. a pair whose links the job shares with
another job's requirement) takes the groups with a circuit between the two pods. The admission
gives every pod pair a job's flows use at least one circuit (the demand covers every such pair,
:func:`lumoscore.placement.job_demand`; scaling a logical topology down to the spines' ports
keeps one circuit per pair, :func:`lumoscore.placement.feasible_demand`). Where that is
impossible (``tau = 1`` contention so heavy that no OCS group has a port free at both pods,
never seen in our runs) the flows take **two OCS hops** through an intermediate pod ``k``:
leaf ``a`` -> spine ``(i, h)`` -> OCS link ``(h, i, k)`` -> OCS link ``(h, k, j)`` -> spine
``(j, h)`` -> leaf ``b`` (6 links; spine ``(k, h)`` forwards between two of its OCS ports),
spread over the ``(h, k)`` in proportion to ``min(C[h, i, k], C[h, k, j])``, sharing those
circuits with their own traffic (counted in ``stats["two_hop_flows"]``). Only when no such
path exists either is a :class:`NoCircuitError` raised. Routing never drops a flow.

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.workload import Job
>>> spec = ClusterSpec(pods=2, k_leaf=8, k_spine=8, tau=2, gpus_per_server=8, ocs_ports=4)
>>> fab = LumosCoreFabric(spec)
>>> fab.gpus, fab.n_links
(64, 208)
>>> job = Job(job_id=1, arrival_s=0.0, gpus=64, model="Pangu", tp=8, pp=2, dp=4, ep=8,
...           iterations=1, duration_s=1.0)
>>> gpus = fab.place(job)
>>> change = fab.admit(1, gpus)
>>> fab.apply(change)
>>> bool(change.delay_s == fab.reconfig_delay_s), int(fab.ocs_circuits().sum()) > 0
(True, True)
>>> fab.apply(fab.release(1)); int(fab.ocs_circuits().sum())
0
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, InfeasibleError, PreconditionError
from lumoscore.fabric.base import (
    FAILURE_ELEMENTS,
    Fabric,
    FabricChange,
    IntArray,
    Routes,
    check_positive,
)
from lumoscore.fabric.hashing import flow_hash
from lumoscore.fabric.lumos_kernels import (
    classify_flows,
    intra_spines_free,
    ocs_capacity_diff,
    planned_cross_spines,
    route_links,
)
from lumoscore.fabric.routing import (
    CANDIDATE_STEP,
    PROBE_CANDIDATES,
    candidate_counts,
    check_candidates,
    choose_paths,
    probe_inputs,
)
from lumoscore.limits import MAX_TIME_S
from lumoscore.npsets import unique
from lumoscore.placement import ClusterState, admit, finish, reconfigure
from lumoscore.placement.admit import LOGICAL_MODES, Reconfiguration
from lumoscore.toe import PortModel
from lumoscore.toe.solve import check_solver
from lumoscore.toe.staging import circuit_loss, staged_plan
from lumoscore.topology import ClusterSpec, build_wiring
from lumoscore.workload.job import Job

__all__ = [
    "DEFAULT_RECONFIG_DELAY_S",
    "REFUSAL_CAUSES",
    "LumosCoreFabric",
    "NoCircuitError",
]

#: Default OCS switching time (s): MEMS OCS switch in about 10-100 ms; we take the slow end
#: (100 ms) plus nothing for the control plane, so the delay is an upper bound of the optics.
DEFAULT_RECONFIG_DELAY_S = 0.1

#: Causes of a refused placement, counted in ``stats["refusals_<cause>"]``: ``gpus`` -- fewer
#: idle GPUs than the job needs (waiting for GPUs, not fragmentation); ``tp_slots`` -- enough
#: idle GPUs, not in whole TP slots of ``tp`` GPUs of one server; ``locality`` -- enough idle
#: slots, not in whole EP groups per pod (only with the EP-split fallback off); ``network`` --
#: enough GPUs, but the leaves' cross-pod ports (even with path sharing) or the OCS layer cannot
#: carry the job.
REFUSAL_CAUSES: tuple[str, ...] = ("gpus", "tp_slots", "locality", "network")
_REASON_CAUSE = {
    "gpus": "gpus",
    "tp-slots": "tp_slots",
    "ep-confinement": "locality",
    "leaf-ports": "network",
    "ocs": "network",
}


class NoCircuitError(InfeasibleError):
    """A cross-pod flow between two pods that no OCS circuit joins."""


def _split_lookup(split: Any, n_leaves: int, H: int) -> tuple[IntArray, IntArray]:
    """Sorted keys ``(a n + b) H + h`` and values of a COO split ``(a, b, h, value)``."""
    a, b, h, v = (np.asarray(x, dtype=np.int64) for x in split)
    key = (a * n_leaves + b) * H + h
    order = np.argsort(key, kind="stable")
    key, v = key[order], v[order]
    # merge duplicate entries (a split may list one (a, b, h) more than once)
    uniq, start = np.unique(key, return_index=True)
    return uniq, np.add.reduceat(v, start) if v.size else v


def _split_rows(lookup: tuple[IntArray, IntArray], a: IntArray, b: IntArray, n: int, H: int):
    """``(len(a), H)`` split values of the leaf pairs ``(a, b)``."""
    keys, vals = lookup
    q = ((a * n + b)[:, None] * H + np.arange(H)).reshape(-1)
    out = np.zeros(q.size, np.int64)
    if keys.size:
        pos = np.minimum(np.searchsorted(keys, q), keys.size - 1)
        hit = keys[pos] == q
        out[hit] = vals[pos[hit]]
    return out.reshape(-1, H)


def _spread(weights: IntArray, rank: IntArray) -> IntArray:
    """Column of each row's ``rank``-th unit when row ``f`` has ``weights[f, h]`` units on
    column ``h`` (cyclically: rank modulo the row total, which must be > 0)."""
    cum = np.cumsum(weights, axis=1)
    pos = rank % cum[:, -1]
    return np.argmax(cum > pos[:, None], axis=1).astype(np.int64)


#: Share of an OCS link's capacity left during a periodic switch (its flows stall).
_BLACKHOLED = 1e-6

#: Options of :func:`lumoscore.placement.admit` that a release passes on to ``finish``.
_FINISH_OPTIONS = frozenset(
    ("logical_method", "logical_mode", "iota", "backup", "static", "toe_patch")
)


def _check_delay(name: str, value: float) -> None:
    """A fabric's time option: a finite number of seconds from 0 to MAX_TIME_S (a delay of
    1e300 s made every run time 0), else a ConfigError naming ``name``."""
    if not (0 <= value <= MAX_TIME_S):  # (NaN and infinities too)
        raise ConfigError(
            f"{name} must be a number of seconds from 0 to {MAX_TIME_S:.0e} (MAX_TIME_S), "
            f"got {value!r}"
        )


class LumosCoreFabric(Fabric):
    """A LumosCore cluster as a simulator fabric and placer (see the module docstring).

    Parameters
    ----------
    spec : ClusterSpec
        The cluster (pods, ``k_leaf``, ``k_spine``, ``tau``, port speed).
    routing : str
        One of :attr:`routings` (default ``planned``).
    wiring : str
        Spine-OCS wiring (:func:`lumoscore.topology.build_wiring`), default ``cross``.
    solver : str
        ToE solver (:func:`lumoscore.toe.configure`), default ``mdmcf``.
    reconfig_delay_s : float
        Start delay of a job whose admission rewired circuits (OCS switching time; default
        :data:`DEFAULT_RECONFIG_DELAY_S`). 0 disables it.
    policy : str
        Placement policy (:data:`lumoscore.placement.POLICIES`), default ``locality``.
    seed : int
        Seed of the ECMP hash.
    name : str, optional
        Fabric name (default ``lumoscore-tau<tau>``).
    demand_method : str
        Leaf-demand rule of the admission (:func:`lumoscore.traffic.leaf_demand`):
        ``research`` (default, the published simulator's ``+tp`` per PP pair and
        ``+ceil(tp/2)`` per DP pair) or ``phases`` (one link per concurrent flow, A.12).
    admit_options : dict, optional
        Extra keyword arguments for :func:`lumoscore.placement.admit` / ``finish``
        (e.g. ``split_ep=False`` turns the EP-split fallback off).
    stage_delay_s : float
        Staged reconfiguration in time (LumosCore A.8): 0 (default) switches every changed
        OCS group at once and the admitted job starts ``reconfig_delay_s`` later; > 0 runs
        the ToE's staged plan (:func:`lumoscore.toe.staged_plan` with ``iota``), stage after
        stage, each taking this long, and the admitted job starts when the last one ends. A
        reconfiguration after a link failure, which moves running jobs' circuits, is applied
        in time: the circuits being rewired are down until their stage ends
        (:meth:`_staged_in_time`).
    iota : float
        Largest share of a pod's cross-pod paths one stage may interrupt (``0 < iota <= 1``,
        default 0.25).
    switch_interval_s : float
        Periodic OCS switching (LumosCore Table 5, Cross Wiring Table 4): every this many
        seconds a share ``switch_share`` of every OCS link's circuits is switched, and the
        cross-pod traffic stalls for ``switch_s`` (the OCS switching and BGP convergence;
        :meth:`ocs_switch`). 0 (default): none.
    switch_share : float
        Share of the circuits a periodic switch takes out, in ``(0, 1)`` (default 0.5, the
        papers' "half of the OCS links").
    switch_s : float
        How long a periodic switch keeps them out (default 2.38 s, the testbed's BGP
        convergence time at 4 pods, LumosCore Table 3).
    backup : bool
        Idle OCS ports form a full-mesh backup of the logical topology
        (:func:`lumoscore.topology.logical.backup_mesh`); default off.
    static_mesh : bool
        The OCS layer holds a fixed mesh of every spine's ports
        (:func:`lumoscore.topology.logical.port_mesh`), configured at the first admission and
        never changed; the jobs' logical topology only plans their routes over it (the
        testbeds' static scenario: on Uniform Wiring part of the mesh is not realized, and
        the flows planned on it share the rest). Default off.
    logical_mode : str
        ``incremental`` (default: running jobs keep their split) or ``full`` (the whole
        demand is split afresh at every admission), :func:`lumoscore.placement.admit`.
    probe_candidates : float
        ``probing`` only: ECMP candidates per flow, as for
        :class:`~lumoscore.fabric.clos.ClosFabric` (the OCS group of a cross-pod flow and
        the spine of an intra-pod one are what the candidates differ in).
    rail_optimized : bool
        Rail-optimized pods (LumosCore Fig. 24): the ``k_leaf`` servers of a rail group attach
        GPU ``r`` to the group's rail leaf ``r`` (:meth:`ClusterState.leaf_of_gpu
        <lumoscore.placement.ClusterState.leaf_of_gpu>`), so same-rail traffic of a rail group
        stays in one leaf. Needs ``gpus_per_server`` to divide the leaves of a pod.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=3, k_leaf=4, k_spine=4, tau=2, gpus_per_server=4, ocs_ports=4)
    >>> fab = LumosCoreFabric(spec, routing="ecmp")
    >>> d = fab.describe()
    >>> d["pods"], d["spines_per_pod"], d["routing"], d["links"]
    (3, 2, 'ecmp', 90)
    """

    routings = ("planned", "ecmp", "probing", "ideal")
    failure_elements = FAILURE_ELEMENTS
    default_placer = "fabric"  # placement, logical topology and OCS configuration together

    def __init__(
        self,
        spec: ClusterSpec,
        *,
        routing: str = "planned",
        wiring: str = "cross",
        solver: str = "mdmcf",
        reconfig_delay_s: float = DEFAULT_RECONFIG_DELAY_S,
        policy: str = "locality",
        seed: int = 0,
        name: str | None = None,
        demand_method: str = "research",
        admit_options: dict[str, Any] | None = None,
        chip_tbps: float | None = None,
        probe_candidates: float = PROBE_CANDIDATES,
        rail_optimized: bool = False,
        backup: bool = False,
        static_mesh: bool = False,
        logical_mode: str = "incremental",
        switch_interval_s: float = 0.0,
        switch_share: float = 0.5,
        switch_s: float = 2.38,
        stage_delay_s: float = 0.0,
        iota: float = 0.25,
    ) -> None:
        if not isinstance(spec, ClusterSpec):
            raise ConfigError(f"spec must be a ClusterSpec, got {type(spec).__name__}")
        routing = self.checked_routing(routing)
        self.probe_candidates = check_candidates(probe_candidates)
        _check_delay("reconfig_delay_s", reconfig_delay_s)
        check_positive("port_gbps", spec.port_gbps)
        self.spec = spec
        self.routing = routing
        self.wiring_kind = wiring
        self.wiring = build_wiring(spec, wiring)
        self.solver = solver
        try:
            check_solver(self.wiring, solver)
        except PreconditionError as exc:  # a solver that cannot configure this wiring
            raise ConfigError(f"solver: {exc}") from None
        # the ToE's channel view of the wiring, built once (configure accepts it as the wiring)
        self._toe_wiring: Any = self._toe_target(None)
        # failed spine-OCS fibers and OCS ports (fail_units), per element
        self._port_failed: dict[str, NDArray[np.bool_]] = {}
        self.reconfig_delay_s = float(reconfig_delay_s)
        _check_delay("switch_interval_s", switch_interval_s)
        if not 0 < switch_share < 1:
            raise ConfigError(f"switch_share must be in (0, 1), got {switch_share!r}")
        if not (switch_s > 0 and np.isfinite(switch_s)) or (
            switch_interval_s and switch_s >= switch_interval_s
        ):
            raise ConfigError(
                f"switch_s must be > 0 and shorter than switch_interval_s, got {switch_s!r}"
            )
        _check_delay("stage_delay_s", stage_delay_s)
        if not 0 < iota <= 1:
            raise ConfigError(f"iota must be in (0, 1], got {iota!r}")
        self.stage_delay_s = float(stage_delay_s)
        self.iota = float(iota)
        self.switch_interval_s = float(switch_interval_s)
        self.switch_share = float(switch_share)
        self.switch_s = float(switch_s)
        self._switching = False  # a periodic switch is under way
        #: scratch of ocs_capacity_diff, made at the first use (counts and marks, H P^2)
        self._diff_scratch: tuple[IntArray, NDArray[np.bool_]] | None = None
        #: the circuits (and switching state) the OCS block's capacities were last compared
        #: with, None: not known; and the OCS links whose capacity may differ from theirs
        #: since (those the diff found, those changed since: see _ocs_diff)
        self._ocs_basis: tuple[IntArray, bool] | None = None
        self._ocs_dirty: IntArray = np.zeros(0, np.int64)
        self.policy = policy
        self.seed = int(seed)
        self.chip_tbps = chip_tbps
        self.name = name or f"lumoscore-tau{spec.tau}"
        self.demand_method = demand_method
        if logical_mode not in LOGICAL_MODES:
            raise ConfigError(
                f"logical_mode: unknown {logical_mode!r}; allowed: {', '.join(LOGICAL_MODES)}"
            )
        self.admit_options = {
            "backup": bool(backup),
            "static": bool(static_mesh),
            "logical_mode": logical_mode,
            **dict(admit_options or {}),
        }
        self.state = ClusterState.empty(spec, rail_optimized=bool(rail_optimized))
        self.rail_optimized = bool(rail_optimized)
        G, n, H, P = spec.gpus, spec.leaves, spec.ocs_groups, spec.pods
        # position of every GPU's NIC among the leaves' downlinks (leaf * k_leaf + port): the
        # identity unless rail-optimized; routing works on positions
        g = np.arange(G, dtype=np.int64)
        port = (g // spec.gpus_per_server) % spec.k_leaf  # the server's place in its rail group
        self._wire_pos = self.state.leaf_of_gpu(g) * spec.k_leaf + port if rail_optimized else g
        self._wire_gpu = np.argsort(self._wire_pos).astype(np.int64)
        self._n, self._H, self._P = n, H, P
        self.off_leaf_up = 2 * G
        self.off_leaf_down = 2 * G + n * H
        self.off_ocs = 2 * G + 2 * n * H
        port_bps = spec.port_gbps * 1e9
        self.capacity_bps = np.concatenate(
            [
                np.full(2 * G, port_bps),
                np.full(2 * n * H, spec.tau * port_bps),
                np.zeros(H * P * P),
            ]
        )
        #: OCS links (offsets into the OCS block) that may have a non-zero capacity: every one
        #: that has (and some back at zero), kept by :meth:`apply` (see :meth:`_ocs_diff`)
        self._ocs_support = np.zeros(0, np.int64)
        self._ocs_listed = np.zeros(H * P * P, np.bool_)
        self._pending: dict[int, FabricChange] = {}
        #: Links each admitted job shares with others (path sharing, > 0: contention expected).
        self.shared_links: dict[int, int] = {}
        self._job_lookup: dict[int, tuple[IntArray, IntArray]] = {}
        self._job_split: dict[int, tuple[IntArray, IntArray, IntArray, IntArray]] = {}
        self._job_ocs_new: dict[int, list[IntArray]] = {}  # OCS links routed, not merged yet
        self._job_ocs_seen: dict[int, IntArray] = {}  # OCS links routed, merged (_job_ocs)
        #: no cross-pod split: zero requirements on every leaf-spine pair
        self._no_split = np.zeros((n, H), np.int64)
        self._hash_seed = int(np.random.default_rng(seed).integers(0, 2**32, dtype=np.uint64))
        self.stats = {
            "admissions": 0,
            "relaxed_admissions": 0,
            "refusals": 0,
            **{f"refusals_{cause}": 0 for cause in REFUSAL_CAUSES},
            "rewired_circuits": 0,
            "reconfigurations": 0,
            "rerouted_jobs": 0,
            "two_hop_flows": 0,
            "reconfiguration_stages": 0,
        }

    # ------------------------------------------------------------------ geometry
    def ocs_link(self, h: IntArray, i: IntArray, j: IntArray) -> IntArray:
        """Link id of the OCS link spine ``(i, h)`` -> spine ``(j, h)``."""
        P = self._P
        return self.off_ocs + (np.asarray(h) * P + np.asarray(i)) * P + np.asarray(j)

    def nic_link(self, gpus: IntArray) -> IntArray:
        """Uplink id of each GPU's NIC (its downlink is ``gpus`` links later): the GPU id,
        or with rail-optimized pods its place among the leaves' ports (``leaf * k_leaf +
        port``).

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=1, k_leaf=4, k_spine=8, tau=2, gpus_per_server=2)
        >>> LumosCoreFabric(spec, rail_optimized=True).nic_link([0, 1, 2, 3]).tolist()
        [0, 4, 1, 5]
        """
        return self._wire_pos[np.asarray(gpus, dtype=np.int64)]

    def ocs_circuits(self) -> IntArray:
        """``(H, P, P)`` circuits currently deployed (``state.circuits`` counted per group and
        ordered pod pair).

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2, gpus_per_server=4,
        ...                    ocs_ports=2)
        >>> LumosCoreFabric(spec).ocs_circuits().shape
        (2, 2, 2)
        """
        H, P = self._H, self._P
        c = self.state.circuits
        out = np.bincount((c[:, 0] * P + c[:, 2]) * P + c[:, 4], minlength=H * P * P)
        return out.reshape(H, P, P).astype(np.int64, copy=False)

    def link_endpoints(self) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """``(tail_kind, tail_id, head_kind, head_id)`` of every link: kind 0 = GPU, 1 = leaf
        (global leaf index), 2 = spine (global spine index ``pod * H + h``).

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2, gpus_per_server=4,
        ...                    ocs_ports=2)
        >>> tk, ti, hk, hi = LumosCoreFabric(spec).link_endpoints()
        >>> (int(tk[0]), int(ti[0]), int(hk[0]), int(hi[0]))
        (0, 0, 1, 0)
        """
        spec, n, H, P = self.spec, self._n, self._H, self._P
        G = spec.gpus
        g = self._wire_gpu  # NIC links are numbered by position
        leaf_g = np.arange(G) // spec.k_leaf
        lf = np.repeat(np.arange(n), H)
        hh = np.tile(np.arange(H), n)
        sp_l = spec.pod_of_leaf(lf) * H + hh
        hg, ig, jg = (
            x.ravel() for x in np.meshgrid(np.arange(H), np.arange(P), np.arange(P), indexing="ij")
        )
        z = np.zeros
        tk = np.concatenate(
            [z(G), np.ones(G), np.ones(n * H), np.full(n * H, 2), np.full(hg.size, 2)]
        )
        ti = np.concatenate([g, leaf_g, lf, sp_l, ig * H + hg])
        hk = np.concatenate(
            [np.ones(G), z(G), np.full(n * H, 2), np.ones(n * H), np.full(hg.size, 2)]
        )
        hi = np.concatenate([leaf_g, g, sp_l, lf, jg * H + hg])
        return tuple(x.astype(np.int64) for x in (tk, ti, hk, hi))  # type: ignore[return-value]

    # ------------------------------------------------------------------ placer
    def apply(self, change: FabricChange) -> None:
        """:meth:`Fabric.apply`, keeping the list of OCS links of non-zero capacity (what
        :meth:`_ocs_diff` looks at besides the circuits' links). The OCS block's capacities
        change only here."""
        super().apply(change)
        if change.empty:
            return
        k = change.links - self.off_ocs
        if self._ocs_basis is not None:  # (a capacity set here may differ from the circuits')
            self._ocs_dirty = np.concatenate([self._ocs_dirty, k[k >= 0]])
        k = k[(k >= 0) & (change.capacity_bps != 0)]
        k = k[~self._ocs_listed[k]]
        if k.size:
            k = unique(k)
            self._ocs_listed[k] = True
            self._ocs_support = np.concatenate([self._ocs_support, k])

    def _ocs_diff(self) -> tuple[IntArray, NDArray[np.float64]]:
        """OCS links (offsets into the OCS block) whose capacity differs from what the
        current circuits give them, and that capacity: the circuits' links and those of
        non-zero capacity are compared, in their number rather than ``H P^2``. When the
        circuits changed since the last diff only by reconfigurations that said which pod
        pairs changed (:meth:`_track`), and the deployed counts are known, only those pairs,
        the links that differed then and the links whose capacity was set since are
        compared."""
        current = self.state.circuits
        port = self.spec.port_bps * (_BLACKHOLED if self._switching else 1.0)
        st = self.state
        basis = self._ocs_basis
        if (
            basis is not None
            and basis[0] is current
            and basis[1] == self._switching
            and current is st.toe_circuits
            and st.toe_counts is not None
        ):
            keys = unique(self._ocs_dirty)
            new_bps = st.toe_counts.reshape(-1)[keys] * port
            differ = new_bps != self.capacity_bps[self.off_ocs + keys]
            diff, new_bps = keys[differ], new_bps[differ]
        else:
            diff, new_bps = self._ocs_diff_all(current, port)
        self._ocs_basis, self._ocs_dirty = (current, self._switching), diff
        return diff, new_bps

    def _ocs_diff_all(self, current: IntArray, port: float) -> tuple[IntArray, NDArray[np.float64]]:
        """:meth:`_ocs_diff` by counting the circuits (``current``)."""
        circuits = np.ascontiguousarray(current, dtype=np.int64)
        old = np.ascontiguousarray(self.capacity_bps[self.off_ocs :])
        sup = self._ocs_support
        gone = old[sup] == 0
        if gone.any():  # links back to zero leave the list
            self._ocs_listed[sup[gone]] = False
            self._ocs_support = sup = sup[~gone]
        if self._diff_scratch is None:
            self._diff_scratch = (np.zeros(old.size, np.int64), np.zeros(old.size, np.bool_))
        return ocs_capacity_diff(circuits, old, self._P, port, sup, *self._diff_scratch)

    def _track(self, before: IntArray, rec: Reconfiguration | None) -> None:
        """Note what an admission or release changed in the circuits (``before`` -> now):
        the pod pairs ``rec`` says changed join the links :meth:`_ocs_diff` compares; an
        unknown change makes it count the circuits again."""
        now = self.state.circuits
        if now is before or self._ocs_basis is None:
            return
        if rec is None or rec.changed_links is None or self._ocs_basis[0] is not before:
            self._ocs_basis = None
            return
        self._ocs_basis = (now, self._ocs_basis[1])
        self._ocs_dirty = np.concatenate([self._ocs_dirty, rec.changed_links])

    def _ocs_change(self, delay_s: float, note: str) -> FabricChange:
        diff, new_bps = self._ocs_diff()
        lost = diff[new_bps == 0]
        # running jobs whose routes cross a circuit that goes away are routed again
        reroute: tuple[int, ...] = ()
        if lost.size:
            gone = np.zeros(self.capacity_bps.size - self.off_ocs, bool)
            gone[lost] = True
            jobs = [(j, used) for j, used in self._job_ocs.items() if used.size]
            if jobs:  # (one pass over every job's OCS links)
                sizes = np.array([used.size for _, used in jobs])
                hit = gone[np.concatenate([used for _, used in jobs]) - self.off_ocs]
                crossed = np.logical_or.reduceat(hit, np.cumsum(sizes) - sizes)
                reroute = tuple(sorted(j for (j, _), x in zip(jobs, crossed, strict=True) if x))
        self.stats["rerouted_jobs"] += len(reroute)
        return FabricChange(
            delay_s=delay_s,
            links=(self.off_ocs + diff).astype(np.int64),
            capacity_bps=new_bps,
            note=note,
            reroute=reroute,
        )

    def _stages(self, change: FabricChange, before: IntArray) -> list[list[int]]:
        """The OCS groups of ``change`` (circuits ``before`` -> now) in the stages of the
        ToE's staged plan (:func:`lumoscore.toe.staged_plan`, at most ``iota`` of a pod's
        paths interrupted per stage); one group per stage when a group alone breaks
        ``iota``."""
        H, P = self._H, self._P
        changed = np.zeros(H, bool)
        changed[(change.links - self.off_ocs) // (P * P)] = True
        loss, total = circuit_loss(before, self.state.circuits, H, P)
        try:
            plan = staged_plan(loss, total, self.iota, changed=changed, time_limit_s=1.0)
        except InfeasibleError:
            return [[int(h)] for h in np.flatnonzero(changed)]
        return [list(st) for st in plan.stages]

    def _staged(self, change: FabricChange, before: IntArray) -> FabricChange:
        """``change`` with the start delay of the ToE's staged plan: its stages
        (:func:`lumoscore.toe.staged_plan` over the changed groups, at most ``iota`` of a
        pod's paths interrupted per stage) one after the other, ``stage_delay_s`` each.
        The capacities change at once (the circuits a stage adds serve only the job
        waiting for them; those it removes carried no running job's routes, or those jobs
        are routed again now)."""
        stages = len(self._stages(change, before))
        self.stats["reconfiguration_stages"] += stages
        return FabricChange(
            delay_s=stages * self.stage_delay_s,
            links=change.links,
            capacity_bps=change.capacity_bps,
            note=f"{change.note} ({stages} stage(s))",
            reroute=change.reroute,
        )

    def _staged_in_time(self, change: FabricChange, before: IntArray) -> FabricChange:
        """A reconfiguration that moves running jobs' circuits (a failure's), applied stage
        by stage: the ToE's staged plan (:func:`lumoscore.toe.staged_plan`, at most ``iota``
        of a pod's paths interrupted per stage; groups that only gain circuits go in the first
        stage), ``stage_delay_s`` each. Now every changed link drops to the smaller of its old
        and new capacity (the circuits being rewired are down; a link with no circuit left
        keeps :data:`_BLACKHOLED` of its new capacity so routes stay valid); the links of
        stage ``i`` settle to their new capacity ``(i + 1) stage_delay_s`` later. A job
        rerouted onto circuits that are not up yet stalls until its stage is done."""
        H, P = self._H, self._P
        group = (change.links - self.off_ocs) // (P * P)
        stages = self._stages(change, before) or [[]]
        self.stats["reconfiguration_stages"] += len(stages)
        stage_of = np.zeros(H, np.int64)
        for i, st in enumerate(stages):
            stage_of[st] = i
        old = self.capacity_bps[change.links]
        now = np.minimum(old, change.capacity_bps)
        now = np.where(now > 0, now, change.capacity_bps * _BLACKHOLED)
        later = tuple(
            ((i + 1) * self.stage_delay_s, change.links[stage_of[group] == i])
            for i in range(len(stages))
        )
        return FabricChange(
            links=change.links,
            capacity_bps=now,
            note=f"{change.note} ({len(stages)} stage(s))",
            reroute=change.reroute,
            later=tuple((d, links) for d, links in later if links.size),
        )

    def settle(self, links: IntArray) -> FabricChange:
        """``links`` (OCS links) at the capacity of the current circuits (a stage of
        :meth:`_staged_in_time` is done)."""
        off = self.off_ocs
        diff, new_bps = self._ocs_diff()
        keep = np.isin(off + diff, links)
        return FabricChange(
            links=(off + diff[keep]).astype(np.int64),
            capacity_bps=new_bps[keep],
            note="reconfiguration stage done",
        )

    def ocs_switch(self, on: bool) -> FabricChange:
        """Start (``on``) or end a periodic OCS switch. While it lasts the OCS links carry
        (almost) nothing: with ``switch_share`` of every link's circuits being switched, ECMP
        puts some flows of every cross-pod round on them, those flows are blackholed until
        BGP converges, and the round's barrier holds the rest (a link keeps
        :data:`_BLACKHOLED` of its capacity, so routes stay valid and rates finite). Running
        jobs keep their routes."""
        self._switching = bool(on)
        change = self._ocs_change(0.0, "periodic OCS switch" + ("" if on else " done"))
        return FabricChange(links=change.links, capacity_bps=change.capacity_bps,
                            note=change.note)  # fmt: skip

    def forget_routes(self, job_id: int) -> None:
        """The job will be routed again on the current logical topology: its split is read
        afresh (:meth:`_own_split`) and its record of OCS links used starts over."""
        split = self._own_split(job_id)
        self._job_split[job_id] = split
        self._job_lookup[job_id] = _split_lookup(split, self._n, self._H)
        self._forget_ocs(job_id)

    def place(self, job: Job) -> IntArray | None:
        """Admit ``job`` (placement, logical topology, OCS configuration); its GPUs in rank
        order, or None when it does not fit now (refusal in ``state.refusals``).

        The capacity change is kept for :meth:`admit`. A job whose EP groups fit no pod set
        whole is placed with its EP groups split over the fewest pods (the admission's
        fallback, counted in ``stats["relaxed_admissions"]``; ``admit_options={"split_ep":
        False}`` refuses it instead). A refusal is counted in ``stats["refusals"]`` and in
        ``stats["refusals_<cause>"]``, one of :data:`REFUSAL_CAUSES`.
        """
        before = self.state.circuits
        adm = admit(
            self.state,
            job,
            wiring=self._toe_wiring,
            solver=self.solver,
            policy=self.policy,
            demand_method=self.demand_method,
            **self.admit_options,
        )
        if not adm.admitted:
            assert adm.refusal is not None
            self.stats["refusals"] += 1
            self.stats[f"refusals_{_REASON_CAUSE[adm.refusal.reason]}"] += 1
            return None
        assert adm.placement is not None
        self._track(before, adm.reconfiguration)
        self.stats["admissions"] += 1
        self.stats["relaxed_admissions"] += int(adm.relaxed)
        self.shared_links[job.job_id] = int(adm.shared_links)
        rewired = int(adm.rewired_circuits)
        self.stats["rewired_circuits"] += rewired
        split = self._own_split(job.job_id)
        self._job_split[job.job_id] = split
        self._job_lookup[job.job_id] = _split_lookup(split, self._n, self._H)
        change = self._ocs_change(
            self.reconfig_delay_s if rewired else 0.0, f"admit job {job.job_id}"
        )
        if rewired and self.stage_delay_s > 0:
            change = self._staged(change, before)
        if not change.empty:
            self.stats["reconfigurations"] += 1
        self._pending[job.job_id] = change
        return np.asarray(adm.placement.gpus, dtype=np.int64)

    def admit(self, job_id: int, gpus: IntArray) -> FabricChange:
        """The capacity change of ``job_id``'s admission (computed by :meth:`place`)."""
        if job_id not in self._pending:
            raise PreconditionError(f"job {job_id} was not placed by this fabric (call place)")
        return self._pending.pop(job_id)

    def release(self, job_id: int) -> FabricChange:
        """Free the job (GPUs, demand, circuits) and return the capacity change."""
        if job_id not in self.state.placements:
            raise PreconditionError(f"job {job_id} is not running on this fabric")
        self._pending.pop(job_id, None)
        self._job_lookup.pop(job_id, None)
        self._job_split.pop(job_id, None)
        self._forget_ocs(job_id)
        before = self.state.circuits
        done = finish(
            self.state,
            job_id,
            wiring=self._toe_wiring,
            solver=self.solver,
            **{k: v for k, v in self.admit_options.items() if k in _FINISH_OPTIONS},
        )
        self._track(before, done.reconfiguration)
        change = self._ocs_change(0.0, f"release job {job_id}")
        if not change.empty:
            self.stats["reconfigurations"] += 1
        return change

    def cables(self, element: str = "leaf-spine") -> tuple[IntArray, IntArray, float]:
        """The ``tau`` parallel cables of every leaf and spine ``h`` of its pod: cable
        ``(leaf * H + h) * tau + t``; its up and down links (one link holds the ``tau``
        cables of a pair) and the port speed. (``spine-ocs`` and ``ocs-port`` failures
        act on OCS ports, not on links: :meth:`fail_units`.)"""
        if element != "leaf-spine":
            raise self._no_element(element)
        n, H, tau = self._n, self._H, self.spec.tau
        pair = np.repeat(np.arange(n * H, dtype=np.int64), tau)
        return self.off_leaf_up + pair, self.off_leaf_down + pair, self.spec.port_bps

    def _ocs_ports(self) -> tuple[IntArray, IntArray, IntArray]:
        """The wired OCS ports (ascending keys ``(h * n_ocs + ocs) * Q + port``) and the key
        of the OCS port the Tx and the Rx of every spine port ``(H, P, K)`` is wired to."""
        w = self.wiring
        n_ocs = int(max(w.tx_ocs.max(), w.rx_ocs.max())) + 1
        Q = int(max(w.tx_ocs_port.max(), w.rx_ocs_port.max())) + 1
        h = np.arange(self._H)[:, None, None]
        tx = (h * n_ocs + w.tx_ocs) * Q + w.tx_ocs_port
        rx = (h * n_ocs + w.rx_ocs) * Q + w.rx_ocs_port
        return unique(np.concatenate([tx.ravel(), rx.ravel()])), tx, rx

    def failure_units(self, element: str = "leaf-spine") -> tuple[int, float]:
        """Leaf-spine cables (:meth:`cables`); ``spine-ocs``: every spine's OCS-facing ports,
        unit ``(h * P + pod) * K + port`` (:attr:`wiring` order); ``ocs-port``: the wired
        OCS ports, in ascending ``(group, OCS, port)``."""
        if element == "spine-ocs":
            return int(np.prod(self.wiring.tx_ocs.shape)), self.spec.port_bps
        if element == "ocs-port":
            return int(self._ocs_ports()[0].size), self.spec.port_bps
        return super().failure_units(element)

    def fail_units(self, element: str, units: ArrayLike, fail: bool) -> FabricChange:
        """Leaf-spine cables as :meth:`Fabric.fail_units`; spine-OCS fibers and OCS ports
        take spine ports out of service: the logical topology is designed again within
        every spine's working ports and the OCS configuration computed around the dead
        ones (:meth:`~lumoscore.toe.PortModel.without_ports`; running jobs whose circuits
        go are routed again). A repair gives the ports back and reconfigures likewise."""
        if element not in ("spine-ocs", "ocs-port"):
            return super().fail_units(element, units, fail)
        if getattr(self.wiring, "coupled", False):
            raise ConfigError(
                f"link failures: {element} failures are not modelled on {self.wiring_kind} "
                "wiring (its lanes are coupled in pairs); use cross, uniform or dual-link"
            )
        n, _ = self.failure_units(element)
        idx = self._flip_units(self._port_failed, element, n, units, fail)
        if not idx.size:
            return FabricChange()
        dead = self.dead_ports()
        self._toe_wiring = self._toe_target(dead)
        working = self.spec.k_spine - dead.sum(axis=2)
        self.state.spine_ports = working if dead.any() else None
        verb = "fail" if fail else "repair"
        return self._reconfigure_around(f"{verb} {idx.size} {element} port(s)")

    def _toe_target(self, dead: NDArray[np.bool_] | None) -> Any:
        """What the ToE configures: the mirror solvers' channel view of the wiring, or the
        wiring itself (``ilp``, ``bvn``, ``helios``); with dead ports (``(H, P, K)``), the
        channel view without them."""
        mirror = self.solver in ("mdmcf", "mcf")
        if dead is not None and dead.any():
            return PortModel.from_wiring(self.wiring, mirror=mirror).without_ports(dead)
        return PortModel.from_wiring(self.wiring, mirror=True) if mirror else self.wiring

    def dead_ports(self) -> NDArray[np.bool_]:
        """Spine ports ``(H, P, K)`` out of service: their fiber to the OCS failed, or the
        OCS port their Tx or Rx is wired to."""
        shape = self.wiring.tx_ocs.shape
        dead = np.zeros(shape, bool)
        if "spine-ocs" in self._port_failed:
            dead |= self._port_failed["spine-ocs"].reshape(shape)
        if "ocs-port" in self._port_failed:
            keys, tx, rx = self._ocs_ports()
            down = keys[self._port_failed["ocs-port"]]
            dead |= np.isin(tx, down) | np.isin(rx, down)
        return dead

    def _reconfigure_around(self, note: str) -> FabricChange:
        """LumosCore's reaction to a failure: the logical topology and the OCS configuration
        recomputed on the working links and ports (:func:`lumoscore.placement.reconfigure`),
        staged in time when ``stage_delay_s > 0``."""
        opts = self.admit_options
        before = np.array(self.state.circuits, dtype=np.int64)
        reconfigure(
            self.state,
            wiring=self._toe_wiring,
            solver=self.solver,
            method=opts.get("logical_method", "auto"),
            backup=bool(opts.get("backup", False)),
            static=bool(opts.get("static", False)),
        )
        ocs = self._ocs_change(0.0, note)
        if not ocs.empty:
            self.stats["reconfigurations"] += 1
            if self.stage_delay_s > 0:
                ocs = self._staged_in_time(ocs, before)
        return ocs

    def _cable_change(self, cables: ArrayLike, fail: bool, element: str) -> FabricChange:
        """Cables down or back: the leaf links' capacities. On a failure, LumosCore's
        reaction: the logical topology and the OCS configuration recomputed on the leaves'
        working links (:func:`lumoscore.placement.reconfigure`); the running jobs whose routes
        crossed a circuit that went away are routed again (those crossing a link that died,
        by the simulator). A repair only gives the capacity back (the running jobs' topology stays
        valid); the next admission designs on the repaired links."""
        leaf = super()._cable_change(cables, fail, element)
        if leaf.empty:
            return leaf
        assert self._cable_failed is not None and self.state.failed_links is not None
        n, H = self._n, self._H
        self.state.failed_links[:] = self._cable_failed[element].reshape(n, H, -1).sum(axis=2)
        if not fail:
            return leaf
        ocs = self._reconfigure_around(leaf.note)
        return FabricChange(
            links=np.concatenate([leaf.links, ocs.links]),
            capacity_bps=np.concatenate([leaf.capacity_bps, ocs.capacity_bps]),
            note=leaf.note,
            reroute=ocs.reroute,
            later=ocs.later,
        )

    def fail_gpus(self, gpus: IntArray) -> None:
        """GPUs failed: never placed on until :meth:`repair_gpus` (their jobs are released by
        the simulator first)."""
        self.state.fail_gpus(gpus)

    def repair_gpus(self, gpus: IntArray) -> None:
        """Failed GPUs are back."""
        self.state.repair_gpus(gpus)

    # ------------------------------------------------------------------ routing
    def _hash(self, src: IntArray, dst: IntArray, key: IntArray) -> NDArray[np.uint32]:
        return flow_hash(src, dst, key, self._hash_seed)

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

        ``link_load`` and ``flow_weight`` (``probing`` only): flows in flight per link and
        the flows each row stands for, as for :meth:`ClosFabric.routes
        <lumoscore.fabric.clos.ClosFabric.routes>`; other policies ignore them.

        Examples
        --------
        >>> import numpy as np
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2, gpus_per_server=4,
        ...                    ocs_ports=2)
        >>> fab = LumosCoreFabric(spec)
        >>> fab.routes(np.array([0, 0]), np.array([4, 7]), np.array([0, 1])).links_of(1).tolist()
        [0, 33, 43, 23]
        """
        src, dst, flow_key = self._route_inputs(src, dst, flow_key)
        return self._route_by(self.routing, src, dst, flow_key, job_id, link_load, flow_weight)

    def _rehash_routes(self, src: IntArray, dst: IntArray, flow_key: IntArray, **kw: Any) -> Routes:
        """Flows moved off failed links: ECMP over the spines and OCS groups (hashed with the
        new keys) whatever the routing policy, since a planned route does not change with
        the key."""
        return self._route_by("ecmp", src, dst, flow_key, int(kw.get("job_id", 0)))

    def _route_by(
        self,
        policy: str,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        job_id: int,
        link_load: NDArray[np.float64] | None = None,
        flow_weight: NDArray[np.float64] | None = None,
    ) -> Routes:
        """:meth:`routes` of checked GPU endpoints under ``policy``."""
        if self.rail_optimized:
            src, dst = self._wire_pos[src], self._wire_pos[dst]
        spec = self.spec
        if policy == "ideal":
            return Routes.from_columns(src, spec.gpus + dst)
        # leaves and pods of the endpoints (checked above), rank and count of every flow
        # among the call's flows of its leaf pair, the intra-pod and the cross-pod flows
        cls = classify_flows(src, dst, spec.k_leaf, spec.leaves_per_pod, self._n)
        if policy == "probing":
            return self._probe(src, dst, flow_key, cls, job_id, link_load, flow_weight)
        hashes = self._hash(src, dst, flow_key) if policy == "ecmp" else None
        return Routes(*self._route_once(src, dst, cls, hashes, job_id, record=True))

    def _probe(
        self,
        src: IntArray,
        dst: IntArray,
        flow_key: IntArray,
        cls: tuple[IntArray, ...],
        job_id: int,
        link_load: NDArray[np.float64] | None,
        flow_weight: NDArray[np.float64] | None,
    ) -> Routes:
        """``probing``: the best of each flow's ECMP candidates (hash seeds moved per
        candidate; see :func:`lumoscore.fabric.routing.choose_paths`)."""
        F = src.size
        n_cand = candidate_counts(src, dst, flow_key, self.probe_candidates)
        K = int(n_cand.max(initial=1))
        ptrs, parts = [], []
        for c in range(K):
            seed = (self._hash_seed + c * CANDIDATE_STEP) & 0xFFFFFFFF
            ptr, idx = self._route_once(
                src, dst, cls, flow_hash(src, dst, flow_key, seed), job_id, record=False
            )
            ptrs.append(ptr)
            parts.append(idx)
        offsets = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
        load, weight = probe_inputs(link_load, flow_weight, self.n_links, F)
        indptr, indices = choose_paths(
            np.stack(ptrs), np.concatenate(parts), offsets, n_cand, load, self.capacity_bps,
            weight,
        )  # fmt: skip
        ocs = indices[indices >= self.off_ocs]
        if ocs.size:
            self._note_ocs(job_id, ocs)
        self.stats["two_hop_flows"] += int(np.count_nonzero(np.diff(indptr) == 6))
        return Routes(indptr, indices)

    def _route_once(
        self,
        src: IntArray,
        dst: IntArray,
        cls: tuple[IntArray, ...],
        hashes: NDArray[np.uint32] | None,
        job_id: int,
        *,
        record: bool,
    ) -> tuple[IntArray, IntArray]:
        """CSR routes: ECMP over ``hashes`` (``None``: planned); ``record`` notes the OCS
        links and two-hop flows of the job."""
        H, G, F = self._H, self.spec.gpus, src.size
        a, b, pa, pb, rank, count, intra, cross = cls
        h = np.zeros(F, np.int64)
        via = np.full(F, -1, np.int64)  # intermediate pod of a two-hop cross-pod route
        n_cross = cross.size
        if n_cross:
            idx = slice(None) if n_cross == F else cross
            h[idx], via[idx] = self._cross_spines(
                a[idx], b[idx], pa[idx], pb[idx], rank[idx],
                None if hashes is None else hashes[idx], job_id,
            )  # fmt: skip
            hc, pac, pbc, vc = h[idx], pa[idx], pb[idx], via[idx]
            two = vc >= 0
            if record and two.any():
                used = [self.ocs_link(hc, pac, np.where(two, vc, pbc))]
                used.append(self.ocs_link(hc[two], vc[two], pbc[two]))
                self._note_ocs(job_id, np.concatenate(used))
                self.stats["two_hop_flows"] += int(two.sum())
            elif record:
                self._note_ocs(job_id, self.ocs_link(hc, pac, pbc))
        if intra.size:  # after the cross-pod flows, whose spines the intra-pod ones avoid
            if hashes is not None:
                h[intra] = (hashes[intra] % np.uint32(H)).astype(np.int64)
            else:
                h[intra] = self._intra_spines(intra, a, b, rank, count, cross, h[cross], job_id)
        return route_links(
            src, dst, a, b, pa, pb, h, via, G,
            self.off_leaf_up, self.off_leaf_down, self.off_ocs, H, self._P,
        )  # fmt: skip

    def _note_ocs(self, job_id: int, links: IntArray) -> None:
        """Record OCS links the job's routes cross (merged lazily, see :attr:`_job_ocs`)."""
        self._job_ocs_new.setdefault(job_id, []).append(links)

    @property
    def _job_ocs(self) -> dict[int, IntArray]:
        """OCS links (sorted, distinct) each job's current routes cross."""
        for job_id, parts in self._job_ocs_new.items():
            prev = self._job_ocs_seen.get(job_id)
            if prev is not None:
                parts = [prev, *parts]
            self._job_ocs_seen[job_id] = unique(np.concatenate(parts))
        self._job_ocs_new.clear()
        return self._job_ocs_seen

    def _forget_ocs(self, job_id: int) -> None:
        self._job_ocs_new.pop(job_id, None)
        self._job_ocs_seen.pop(job_id, None)

    def _own_split(self, job_id: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """The job's per-spine split as COO ``(a, b, h, value)``: the entries its admission
        added (``state.job_split``) or, after a full recomputation of the logical topology,
        the whole split of the leaf pairs of its demand."""
        split = self.state.job_split.get(job_id)
        if split is not None:
            return tuple(np.asarray(x, dtype=np.int64) for x in split)  # type: ignore[return-value]
        topo = self.state.logical
        part = self.state.job_demand.get(job_id)
        if topo is None or part is None or not part.total:
            z = np.zeros(0, np.int64)
            return z, z, z, z
        w = topo.split_of(part.rows, part.cols)
        r, h = np.nonzero(w)
        rows, cols = np.asarray(part.rows, np.int64), np.asarray(part.cols, np.int64)
        return rows[r], cols[r], h.astype(np.int64), w[r, h]

    def _intra_spines(
        self,
        idx: IntArray,
        a: IntArray,
        b: IntArray,
        rank: IntArray,
        count: IntArray,
        fixed: IntArray,
        fixed_h: IntArray,
        job_id: int,
    ) -> IntArray:
        """Planned intra-pod spines of the flows ``idx``: an edge colouring of the leaf-spine
        links left free by the other jobs' cross-pod split and by the call's cross-pod flows
        ``fixed`` (on spines ``fixed_h``), so that no two flows share a link while each leaf
        sends and receives at most its free links (Konig's theorem; alternating-path repair,
        :func:`~lumoscore.fabric.lumos_kernels.intra_spines`). The search starts at an offset
        ``m_ab * ((b - a) mod leaves)`` (``m_ab`` flows of the pair in this call: ``count``).
        The links left free (the job's own cross-pod requirements run in other rounds or are
        counted in its own flows) are counted for the flows' leaves only, in the kernel
        (:func:`~lumoscore.fabric.lumos_kernels.intra_spines_free`)."""
        st = self.state
        assert st.failed_links is not None
        topo = st.logical
        if topo is None:
            up = down = self._no_split
        else:
            up, down = topo.leaf_up, topo.leaf_down
        z = np.zeros(0, np.int64)
        own = self._job_split.get(job_id, (z, z, z, z))
        return intra_spines_free(
            idx, a, b, rank, count, st.failed_links, up, down, own, fixed, fixed_h,
            self.spec.tau, self.spec.leaves_per_pod,
        )  # fmt: skip

    def _cross_spines(
        self,
        a: IntArray,
        b: IntArray,
        pa: IntArray,
        pb: IntArray,
        rank: IntArray,
        hashes: NDArray[np.uint32] | None,
        job_id: int,
    ) -> tuple[IntArray, IntArray]:
        """Group ``h`` and intermediate pod (-1: direct) of each cross-pod flow."""
        n, H = self._n, self._H
        lookup = self._job_lookup.get(job_id)
        if hashes is None and lookup is not None:  # planned, the job's split: one kernel pass
            h, direct = planned_cross_spines(
                a, b, pa, pb, rank, self.capacity_bps[self.off_ocs :], *lookup, n, H, self._P
            )
            if direct:
                return h, np.full(a.size, -1, np.int64)
        circuits = self.capacity_bps[self.off_ocs :].reshape(H, self._P, self._P) > 0
        avail = circuits[:, pa, pb].T.astype(np.int64)  # (F, H)
        direct = avail.sum(axis=1) > 0
        if not direct.all():  # pods without a circuit: two OCS hops (see the module docstring)
            h = np.zeros(a.size, np.int64)
            via = np.full(a.size, -1, np.int64)
            sel = ~direct
            key = rank[sel] if hashes is None else hashes[sel].astype(np.int64)
            h[sel], via[sel] = self._two_hop(pa[sel], pb[sel], key)
            if direct.any():
                h[direct], _ = self._cross_spines(
                    a[direct], b[direct], pa[direct], pb[direct], rank[direct],
                    None if hashes is None else hashes[direct], job_id,
                )  # fmt: skip
            return h, via
        none = np.full(a.size, -1, np.int64)
        if hashes is not None:  # ECMP over the job's groups with a circuit (else any group)
            z = np.zeros(0, np.int64)
            ja, jb, jh, _ = self._job_split.get(job_id, (z, z, z, z))
            own = np.zeros((H, self._P, self._P), bool)
            lpp = self.spec.leaves_per_pod
            own[jh, ja // lpp, jb // lpp] = True
            mine = avail * own[:, pa, pb].T
            has = mine.sum(axis=1) > 0
            avail[has] = mine[has]
            cnt = avail.sum(axis=1)
            k = (hashes % cnt.astype(np.uint32)).astype(np.int64)
            return _spread(avail, k), none
        if lookup is not None:
            w = _split_rows(lookup, a, b, n, H)
        else:  # routes of a job this fabric did not place: the pairs' whole split
            topo = self.state.logical
            w = np.zeros((a.size, H), np.int64) if topo is None else topo.split_of(a, b)
        w = w * avail  # never a group without a circuit
        empty = w.sum(axis=1) == 0
        w[empty] = avail[empty]
        return _spread(w, rank), none

    def _two_hop(self, pa: IntArray, pb: IntArray, key: IntArray) -> tuple[IntArray, IntArray]:
        """Group ``h`` and intermediate pod ``k`` of two-hop routes ``pa -> k -> pb`` over the
        circuits ``(h, pa, k)`` and ``(h, k, pb)`` (spine ``(k, h)`` forwards between two of its
        OCS ports): the flows spread over the ``(h, k)`` in proportion to
        ``min(C[h, pa, k], C[h, k, pb])``, unit ``key`` (rank or hash) of each flow."""
        H, P = self._H, self._P
        live = self.capacity_bps[self.off_ocs :].reshape(H, P, P)
        c = np.rint(live / self.spec.port_bps).astype(np.int64)
        w = np.minimum(c[:, pa, :].transpose(1, 0, 2), c[:, :, pb].transpose(2, 0, 1))
        w = w.reshape(pa.size, H * P)  # (F, (h, k)); k = pa or pb gives 0 (no self circuit)
        none = w.sum(axis=1) == 0
        if none.any():
            f = int(np.flatnonzero(none)[0])
            raise NoCircuitError(
                f"no OCS circuit joins pod {int(pa[f])} to pod {int(pb[f])} in any group, "
                f"directly or through another pod: the admission gave this job's cross-pod "
                f"traffic no connectivity ({int(none.sum())} flow(s) affected)"
            )
        col = _spread(w, key)
        return col // P, col % P

    # ------------------------------------------------------------------ summary
    def describe(self) -> dict[str, object]:
        """Summary: chip, tau, pods, spines per pod, port speed, routing, admissions.

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2, gpus_per_server=4,
        ...                    ocs_ports=2)
        >>> d = LumosCoreFabric(spec, chip_tbps=12.8).describe()
        >>> d["chip_tbps"], d["tau"], d["gpus_per_pod"], d["reconfig_delay_s"]
        (12.8, 2, 8, 0.1)
        """
        out = super().describe()
        s = self.spec
        out.update(
            {
                "chip_tbps": self.chip_tbps,
                "tau": s.tau,
                "pods": s.pods,
                "leaves_per_pod": s.leaves_per_pod,
                "spines_per_pod": s.spines_per_pod,
                "gpus_per_pod": s.gpus_per_pod,
                "k_leaf": s.k_leaf,
                "k_spine": s.k_spine,
                "ocs_groups": s.ocs_groups,
                "ocs_ports": s.ocs_ports,
                "routing": self.routing,
                "wiring": self.wiring_kind,
                "solver": self.solver,
                "policy": self.policy,
                "reconfig_delay_s": self.reconfig_delay_s,
                "rail_optimized": self.rail_optimized,
                "switch_interval_s": self.switch_interval_s,
                "stage_delay_s": self.stage_delay_s,
                **self.stats,
            }
        )
        # circuits of the whole OCS core: every OCS port of every group joins two pods
        circuits = s.ocs_groups * s.k_spine * (s.pods // 2)
        reconf = int(self.stats["reconfigurations"])
        out["total_circuits"] = circuits
        out["rewired_share"] = (
            float(self.stats["rewired_circuits"]) / (reconf * circuits)
            if reconf and circuits
            else 0.0
        )
        return out
