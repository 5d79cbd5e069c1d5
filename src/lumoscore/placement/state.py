"""Cluster state for GPU placement: GPU ownership, failures, placements and leaf demand.

A :class:`ClusterState` holds, as NumPy arrays,

* ``owner[gpu]`` -- the job id that holds the GPU, or ``-1`` when idle;
* ``failed[gpu]`` -- failed GPUs (never placed on; a failed GPU of a running job stays owned
  until the job is released);
* ``placements`` -- every running job's :class:`Placement` (GPU ids in rank order);
* ``L`` -- the current leaf-level cross-pod demand (``leaves x leaves``, symmetric ``int64``),
  the sum over running jobs of their parts ``job_demand[job_id] = (rows, cols, values)``:
  read-only, changed by :meth:`~ClusterState.add_demand` and
  :meth:`~ClusterState.remove_demand` only (so that the parts can stand for it:
  :meth:`~ClusterState.demand_entries`);
* ``circuits`` -- the OCS configuration deployed now (``(n, 6)`` rows of
  :mod:`lumoscore.toe`), ``logical`` -- the logical topology it realizes, ``job_split`` -- the
  part of ``logical`` each job added incrementally (removed exactly when it finishes; cleared
  by a full recomputation);
* ``refusals`` -- the fragmentation record (one :class:`Refusal` per refused attempt);
* ``toe_circuits``, ``toe_wiring`` -- the configuration :func:`~lumoscore.placement.reconfigure`
  deployed last and the wiring it was computed for: while ``circuits`` is that very array,
  the next reconfiguration skips validating it (bookkeeping only; None = not known);
  ``toe_counts`` -- its links per pod pair ``(H, P, P)`` when known (None: counted again;
  the state's own array, updated in place), ``toe_keys`` -- the flat keys of their non-zero
  entries, ascending (None: not known), ``toe_counts_of`` -- the ``token`` of the logical
  topology whose ``C`` they equal (None: none known);
* ``failed_links`` -- leaf-spine links down per ``(leaf, spine)``; ``spine_ports`` -- the
  working OCS-facing ports of every spine ``(H, P)`` when some are out of service (None:
  all ``k_spine`` work), the logical topology's port budget.

Every method that changes the state says so in its name (``allocate``, ``release``,
``fail_gpus``, ...); everything else is a pure query. Ties are broken by index and nothing is
random, so two runs with the same inputs give the same placements.

Examples
--------
>>> from lumoscore.topology import ClusterSpec
>>> spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2, gpus_per_server=8)
>>> st = ClusterState.empty(spec)
>>> st.free_gpus
256
>>> st.allocate(Placement(job_id=7, gpus=np.arange(8, 16), pods=(0,), leaves=(0,)))
>>> st.free_gpus, int(st.owner[9])
(248, 7)
>>> st.release(7).job_id, st.free_gpus
(7, 256)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.npsets import unique
from lumoscore.topology.cluster import ClusterSpec

__all__ = [
    "REFUSAL_KINDS",
    "ClusterState",
    "DemandPart",
    "Placement",
    "PlacementError",
    "Refusal",
]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: ``Refusal.kind`` values: not enough idle GPUs (or whole TP slots); enough, but the locality
#: rules (EP inside a pod) leave no pod set; enough, but the network cannot carry the job.
REFUSAL_KINDS: tuple[str, ...] = ("gpus", "locality", "network")


class PlacementError(PreconditionError):
    """A placement breaks the state (GPU already owned, failed, unknown job, ...)."""


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class Placement:
    """Where a job runs.

    Attributes
    ----------
    job_id : int
        The job.
    gpus : ndarray of int64
        GPU ids in rank order (TP fastest, then DP, then PP, after the A.6 arrangement), as
        :mod:`lumoscore.traffic` expects.
    pods, leaves : tuple of int
        Pods and leaves used (sorted).
    policy : str
        Policy that made it.
    tier : str
        Locality reached: ``server``, ``leaf``, ``pod``, ``pods`` or ``any``.
    """

    job_id: int
    gpus: IntArray
    pods: tuple[int, ...]
    leaves: tuple[int, ...]
    policy: str = "manual"
    tier: str = "any"

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", np.asarray(self.gpus, dtype=np.int64).reshape(-1))


@dataclass(frozen=True)
class Refusal:
    """Why a job did not fit (one row of the fragmentation record).

    Attributes
    ----------
    job_id : int
        The job.
    kind : str
        One of :data:`REFUSAL_KINDS`: ``"gpus"`` -- not enough idle GPUs (or whole TP slots)
        anywhere; ``"locality"`` -- enough idle TP slots, but not in whole EP groups per pod
        (only when the EP-split fallback of :func:`~lumoscore.placement.admit` is off, or for a
        bare policy call); ``"network"`` -- enough idle GPUs, but the leaves' cross-pod ports
        (row sums of ``L`` above ``K_leaf`` even with path sharing) or the OCS layer (the ToE
        cannot realise the logical topology) cannot carry the job.
    reason : str
        ``"gpus"``, ``"tp-slots"`` (idle GPUs are scattered over partly used servers),
        ``"ep-confinement"``, ``"leaf-ports"`` or ``"ocs"``.
    needed_gpus, free_gpus : int
        What the job asked for and what was idle.
    detail : str
        One human-readable line.
    """

    job_id: int
    kind: str
    reason: str
    needed_gpus: int
    free_gpus: int
    detail: str = ""


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class DemandPart:
    """A running job's leaf-level cross-pod demand as symmetric COO entries (both orientations).

    ``cost`` is the per-unit cost of sharing each entry's links (low for pipeline traffic, see
    :func:`lumoscore.placement.demand.job_demand`); ``shared`` counts the links given up by
    path sharing (:func:`lumoscore.placement.demand.share_paths`); ``leaning`` are the leaf
    pairs (rows, then columns) whose links path sharing gave up entirely: the job's flows
    there ride on other jobs' links, and one of them is handed to the job when the last of
    those jobs leaves (:meth:`ClusterState.hand_over`).
    """

    rows: IntArray
    cols: IntArray
    values: IntArray
    cost: IntArray
    shared: int = 0
    leaning: tuple[IntArray, IntArray] = field(default_factory=lambda: (_empty_int(), _empty_int()))

    @property
    def total(self) -> int:
        """Sum of the entries (twice the number of bidirectional links)."""
        return int(self.values.sum())


def _empty_int() -> IntArray:
    return np.zeros(0, np.int64)


def _leaning_jobs(job_demand: dict[int, DemandPart]) -> dict[int, None]:
    """The jobs whose demand part leans on other jobs' links, in the parts' order."""
    return {j: None for j, p in job_demand.items() if p.leaning[0].size}


def _values_at(part: DemandPart, rows: IntArray, cols: IntArray, n: int) -> IntArray:
    """``part``'s entries at ``(rows, cols)`` (0 where it has none); ``n`` leaves."""
    key, at = part.rows * n + part.cols, rows * n + cols
    uk, inv = np.unique(key, return_inverse=True)
    v = np.bincount(inv.reshape(-1), weights=part.values, minlength=uk.size).astype(np.int64)
    pos = np.searchsorted(uk, at)
    hit = pos < uk.size
    hit[hit] = uk[pos[hit]] == at[hit]
    out = np.zeros(at.size, np.int64)
    out[hit] = v[pos[hit]]
    return out


def _shifted(part: DemandPart, rows: IntArray, cols: IntArray, delta: int, n: int) -> DemandPart:
    """``part`` with ``delta`` added to its entries ``(rows, cols)`` (new entries cost 1;
    entries falling to 0 leave); ``n`` leaves."""
    key = np.concatenate([part.rows * n + part.cols, rows * n + cols])
    val = np.concatenate([part.values, np.full(rows.size, delta, np.int64)])
    cost = np.concatenate([part.cost, np.ones(rows.size, np.int64)])
    uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    v = np.bincount(inv.reshape(-1), weights=val, minlength=uk.size).astype(np.int64)
    keep = v > 0
    return replace(
        part, rows=(uk // n)[keep], cols=(uk % n)[keep], values=v[keep], cost=cost[first][keep]
    )


@dataclass(eq=False)
class ClusterState:
    """Mutable cluster state; see the module docstring. Build with :meth:`empty`."""

    spec: ClusterSpec
    owner: IntArray
    failed: BoolArray
    L: IntArray
    placements: dict[int, Placement] = field(default_factory=dict)
    job_demand: dict[int, DemandPart] = field(default_factory=dict)
    circuits: IntArray = field(default_factory=lambda: np.zeros((0, 6), np.int64))
    logical: Any = None
    refusals: list[Refusal] = field(default_factory=list)
    failed_links: IntArray | None = None
    rail_optimized: bool = False
    job_split: dict[int, Any] = field(default_factory=dict)
    toe_circuits: IntArray | None = None
    toe_wiring: Any = None
    toe_counts: IntArray | None = None
    toe_keys: IntArray | None = None
    toe_counts_of: object | None = None
    spine_ports: IntArray | None = None

    # ---- construction -----------------------------------------------------------------
    def __post_init__(self) -> None:
        # L is changed through the demand parts only (add_demand, remove_demand): the
        # state writes its own array, the attribute is a read-only view of it
        self._L = np.require(self.L, np.int64, ["C", "W"])
        self.L = self._read_only_L()
        # L's row sums, kept with it (an admission reads its leaves' rows only)
        self._rows = self._L.sum(axis=1)
        # the jobs that lean on other jobs' links, in the order of job_demand (hand_over)
        self._leaning = _leaning_jobs(self.job_demand)

    def _read_only_L(self) -> IntArray:
        view = self._L.view()
        view.flags.writeable = False
        return view

    def __getstate__(self) -> dict[str, Any]:
        # (a copy or pickle keeps one L array, the state's own, and views it again)
        state = dict(self.__dict__)
        state.pop("L")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.L = self._read_only_L()

    @classmethod
    def empty(cls, spec: ClusterSpec, *, rail_optimized: bool = False) -> ClusterState:
        """An idle cluster (no jobs, no failures, no circuits).

        ``rail_optimized=True`` models rail-optimized intra-pod wiring: GPU ``r`` of every
        server of a rail group (``k_leaf`` consecutive servers) connects to the group's leaf
        ``r`` (see :meth:`leaf_of_gpu`); needs ``gpus_per_server`` to divide the leaves of a
        pod.

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> ClusterState.empty(ClusterSpec(pods=2, k_leaf=4, k_spine=4, tau=2,
        ...                                gpus_per_server=2)).L.shape
        (4, 4)
        """
        if rail_optimized and spec.leaves_per_pod % spec.gpus_per_server:
            raise ConfigError(
                f"rail_optimized: gpus_per_server={spec.gpus_per_server} must divide the "
                f"leaves of a pod ({spec.leaves_per_pod})"
            )
        return cls(
            spec=spec,
            owner=np.full(spec.gpus, -1, np.int64),
            failed=np.zeros(spec.gpus, bool),
            L=np.zeros((spec.leaves, spec.leaves), np.int64),
            failed_links=np.zeros((spec.leaves, spec.ocs_groups), np.int64),
            rail_optimized=rail_optimized,
        )

    def copy(self) -> ClusterState:
        """A deep copy (arrays copied; placements and parts are immutable and shared)."""
        return ClusterState(
            spec=self.spec,
            owner=self.owner.copy(),
            failed=self.failed.copy(),
            L=self.L.copy(),
            placements=dict(self.placements),
            job_demand=dict(self.job_demand),
            circuits=self.circuits.copy(),
            logical=self.logical,
            refusals=list(self.refusals),
            failed_links=None if self.failed_links is None else self.failed_links.copy(),
            rail_optimized=self.rail_optimized,
            spine_ports=None if self.spine_ports is None else self.spine_ports.copy(),
            job_split=dict(self.job_split),
        )

    # ---- queries ------------------------------------------------------------------------
    @property
    def idle(self) -> BoolArray:
        """Idle healthy GPUs."""
        return (self.owner < 0) & ~self.failed

    @property
    def free_gpus(self) -> int:
        """Number of idle healthy GPUs."""
        return int(self.idle.sum())

    @property
    def running(self) -> tuple[int, ...]:
        """Ids of the placed jobs, ascending."""
        return tuple(sorted(self.placements))

    @property
    def leaf_block(self) -> int:
        """GPUs of one locality unit below a pod: a leaf, or a rail group when rail-optimized."""
        s = self.spec
        return s.k_leaf * s.gpus_per_server if self.rail_optimized else s.k_leaf

    @cached_property
    def gpu_leaves(self) -> IntArray:
        """:meth:`leaf_of_gpu` of every GPU, in GPU order (read-only; computed once)."""
        leaves = self.leaf_of_gpu(np.arange(self.spec.gpus))
        leaves.flags.writeable = False
        return leaves

    def leaf_of_gpu(self, gpu: ArrayLike) -> IntArray:
        """Leaf each GPU is cabled to (rail-optimized: the rail leaf of its rail group).

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=1, k_leaf=4, k_spine=8, tau=2, gpus_per_server=2)
        >>> ClusterState.empty(spec, rail_optimized=True).leaf_of_gpu([0, 1, 2, 3]).tolist()
        [0, 1, 0, 1]
        """
        s = self.spec
        g = np.asarray(gpu, dtype=np.int64)
        if not self.rail_optimized:
            return s.leaf_of_gpu(g)
        group = g // (s.k_leaf * s.gpus_per_server)
        return group * s.gpus_per_server + g % s.gpus_per_server

    def row_sums(self, leaves: IntArray | None = None) -> IntArray:
        """Cross-pod links each leaf needs now (row sums of ``L``), of ``leaves`` only when
        given (a new array; kept up to date by the demand parts, not summed over ``L``).

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> st = ClusterState.empty(ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1,
        ...                                     gpus_per_server=1))
        >>> st.add_demand(1, DemandPart(np.array([0, 2]), np.array([2, 0]), np.array([3, 3]),
        ...                             np.ones(2, int)))
        >>> st.row_sums().tolist(), st.row_sums(np.array([2, 1])).tolist()
        ([3, 0, 3, 0], [3, 0])
        """
        return self._rows.copy() if leaves is None else self._rows[leaves]

    # ---- changes ------------------------------------------------------------------------
    def allocate(self, placement: Placement, demand: DemandPart | None = None) -> None:
        """Give the placement's GPUs to its job and add its demand part to ``L``.

        Raises :class:`PlacementError` if the job is already placed or a GPU is owned or failed.
        """
        j = placement.job_id
        g = placement.gpus
        if j in self.placements:
            raise PlacementError(f"job {j} is already placed")
        if g.size and (g.min() < 0 or g.max() >= self.spec.gpus):
            raise PlacementError(f"job {j}: GPU ids must be in [0, {self.spec.gpus})")
        if unique(g).size != g.size:
            raise PlacementError(f"job {j}: a GPU is listed twice")
        busy = self.owner[g] >= 0
        if busy.any():
            k = int(np.flatnonzero(busy)[0])
            raise PlacementError(
                f"job {j}: GPU {int(g[k])} is owned by job {int(self.owner[g[k]])}"
            )
        if self.failed[g].any():
            k = int(np.flatnonzero(self.failed[g])[0])
            raise PlacementError(f"job {j}: GPU {int(g[k])} has failed")
        self.owner[g] = j
        self.placements[j] = placement
        if demand is not None:
            self.add_demand(j, demand)

    def add_demand(self, job_id: int, demand: DemandPart) -> None:
        """Record a running job's demand part and add it to ``L`` (replaces an older part)."""
        self.remove_demand(job_id)
        # (flat keys: NumPy's ufunc.at is several times faster on a 1-d target)
        np.add.at(self._L.reshape(-1), demand.rows * self._L.shape[1] + demand.cols, demand.values)
        np.add.at(self._rows, demand.rows, demand.values)
        self.job_demand[job_id] = demand
        if demand.leaning[0].size:
            self._leaning[job_id] = None

    def remove_demand(self, job_id: int) -> DemandPart | None:
        """Subtract a job's demand part from ``L`` and forget it; returns it (or None)."""
        part = self.job_demand.pop(job_id, None)
        self._leaning.pop(job_id, None)
        if part is not None:
            np.subtract.at(
                self._L.reshape(-1), part.rows * self._L.shape[1] + part.cols, part.values
            )
            np.subtract.at(self._rows, part.rows, part.values)
        return part

    def demand_entries(self) -> tuple[IntArray, IntArray, IntArray]:
        """``L`` as COO entries ``(rows, cols, values)``: the running jobs' parts side by
        side (a position may repeat: the entries sum to ``L``), in time that grows with the
        parts, not with ``L``'s ``leaves^2`` entries (what
        :func:`~lumoscore.topology.design_logical_topology` takes)."""
        parts = list(self.job_demand.values())
        if not parts:
            return _empty_int(), _empty_int(), _empty_int()
        return (
            np.concatenate([p.rows for p in parts]).astype(np.int64, copy=False),
            np.concatenate([p.cols for p in parts]).astype(np.int64, copy=False),
            np.concatenate([p.values for p in parts]).astype(np.int64, copy=False),
        )

    def hand_over(self, job_id: int) -> bool:
        """Before job ``job_id`` leaves: every leaf pair another running job leans on (its
        flows ride on other jobs' links there, ``DemandPart.leaning``) whose links are all
        ``job_id``'s gets one of them (both directions), moved from ``job_id``'s demand into
        that job's, so no running job's flows lose their pair's links. ``L`` is unchanged; a
        job that receives links loses its recorded split (``job_split``: its removal then
        takes its whole part, received links included). Returns whether any link moved."""
        mine = self.job_demand.get(job_id)
        if mine is None:
            return False
        moved = False
        n = self.L.shape[0]
        for j in list(self._leaning):  # (those with leaning pairs, in job_demand's order)
            part = self.job_demand[j]
            r, c = part.leaning
            if j == job_id:
                continue
            own = _values_at(mine, r, c, n)
            lost = (own >= 1) & (own == self.L[r, c])
            if not lost.any():
                continue
            ra, ca = r[lost], c[lost]  # (leaning lists both orientations: both move)
            mine = _shifted(mine, ra, ca, -1, n)
            self.job_demand[j] = replace(_shifted(part, ra, ca, 1, n), leaning=(r[~lost], c[~lost]))
            if lost.all():
                del self._leaning[j]
            self.job_split.pop(j, None)
            moved = True
        self.job_demand[job_id] = mine
        return moved

    def release(self, job_id: int) -> Placement:
        """Free a job's GPUs and remove its demand; returns its placement.

        Raises :class:`PlacementError` for a job that is not placed.
        """
        if job_id not in self.placements:
            raise PlacementError(f"job {job_id} is not placed (running: {list(self.running)[:10]})")
        p = self.placements.pop(job_id)
        self.owner[p.gpus] = -1
        self.remove_demand(job_id)
        self.job_split.pop(job_id, None)
        return p

    def fail_gpus(self, gpus: ArrayLike) -> tuple[int, ...]:
        """Mark GPUs failed; returns the (sorted) ids of running jobs that hold one of them."""
        g = unique(np.asarray(gpus, dtype=np.int64).reshape(-1))
        if g.size and (g.min() < 0 or g.max() >= self.spec.gpus):
            raise ConfigError(f"gpus: ids must be in [0, {self.spec.gpus})")
        self.failed[g] = True
        hit = unique(self.owner[g])
        return tuple(int(x) for x in hit[hit >= 0])

    def fail_servers(self, servers: ArrayLike) -> tuple[int, ...]:
        """Mark every GPU of the servers failed; returns the affected running jobs."""
        s = np.asarray(servers, dtype=np.int64).reshape(-1)
        per = self.spec.gpus_per_server
        return self.fail_gpus((s[:, None] * per + np.arange(per)).reshape(-1))

    def repair_gpus(self, gpus: ArrayLike) -> None:
        """Mark GPUs healthy again."""
        self.failed[np.asarray(gpus, dtype=np.int64).reshape(-1)] = False

    def fail_link(self, leaf: int, group: int, count: int = 1) -> None:
        """Take ``count`` of the ``tau`` links between a leaf and its spine ``group`` down."""
        s = self.spec
        if not (0 <= leaf < s.leaves and 0 <= group < s.ocs_groups):
            raise ConfigError(
                f"link: leaf must be in [0, {s.leaves}) and group in [0, {s.ocs_groups}), "
                f"got leaf={leaf}, group={group}"
            )
        assert self.failed_links is not None
        self.failed_links[leaf, group] = min(s.tau, int(self.failed_links[leaf, group]) + count)

    def repair_link(self, leaf: int, group: int) -> None:
        """Bring every link between a leaf and its spine ``group`` back up."""
        assert self.failed_links is not None
        self.failed_links[leaf, group] = 0

    def link_capacity(self) -> IntArray:
        """Working links ``(leaves, H)`` between every leaf and each spine of its pod."""
        assert self.failed_links is not None
        return self.spec.tau - self.failed_links

    def check(self) -> list[str]:
        """Consistency violations (empty = consistent): owner vs placements, ``L`` vs parts.

        Examples
        --------
        >>> from lumoscore.topology import ClusterSpec
        >>> ClusterState.empty(ClusterSpec(pods=1, k_leaf=4, k_spine=4, tau=2,
        ...                                gpus_per_server=2)).check()
        []
        """
        msgs: list[str] = []
        expect = np.full(self.spec.gpus, -1, np.int64)
        for j, p in self.placements.items():
            if (expect[p.gpus] >= 0).any():
                msgs.append(f"job {j} shares a GPU with another job")
            expect[p.gpus] = j
        if not np.array_equal(expect, self.owner):
            msgs.append("owner array disagrees with the placements")
        L = np.zeros_like(self.L)
        for part in self.job_demand.values():
            np.add.at(L, (part.rows, part.cols), part.values)
        if not np.array_equal(L, self.L):
            msgs.append("L is not the sum of the running jobs' demand parts")
        if not np.array_equal(self.L, self.L.T):
            msgs.append("L is not symmetric")
        if not np.array_equal(self._rows, self.L.sum(axis=1)):
            msgs.append("the row sums kept with L disagree with L")
        if list(self._leaning) != list(_leaning_jobs(self.job_demand)):
            msgs.append("the leaning jobs kept with the demand parts disagree with them")
        if set(self.job_demand) - set(self.placements):
            msgs.append("demand recorded for a job that is not placed")
        return msgs
