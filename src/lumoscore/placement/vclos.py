"""vClos, OCS-vClos and OCS-Relax: contention-free job isolation on a leaf-spine cluster.

The vClos paper (§4.1, §6, §7, Algorithms 1-4) gives every job a **virtual Clos**: ``l``
virtual leaves of ``s`` GPUs each and ``s`` virtual spines, every virtual leaf joined to every
virtual spine by one link that no other job uses. Source routing inside it (GPU at position
``i`` of its virtual leaf always climbs to virtual spine ``i``, Lemma 5.1) makes every
leaf-wise permutation round (ring, halving-doubling, pairwise all-to-all) contention-free, and
the reservation makes jobs unable to meet on any link.

Cluster (vClos §4.1, Table 1): ``L`` leaves, ``S`` spines, ``T`` GPUs per server; a leaf has
``d`` GPU ports (``d = S`` by default: half its ports down, half up) and ``S`` uplinks, uplink
``j`` of every leaf going to spine ``j`` (one link per leaf-spine pair). A strictly
non-blocking cluster has ``S >= 2 d - 1`` (§5.1). GPU ``g`` sits on server ``g // T`` and leaf
``g // d``; leaf ``n``'s uplink ``j`` is **port** ``n S + j``.

Allocators (:class:`VClosAllocator`, ``mode=``):

``vclos`` (Alg. 1 and 3)
    Stage 0: a job of ``N <= T`` GPUs goes to the server with the fewest free GPUs that holds
    it. Stage 1: ``ceil(N / T)`` idle servers of one leaf, the leaf with the fewest idle
    servers that has enough. Stage 2: a virtual Clos by link reservation: for each shape
    ``(l, s)`` (:func:`vclos_shapes`, fewest virtual leaves first, as FindvClos doubles ``l``
    from ``max(1, 2^floor(log2 N) / S)``), ``l`` leaves with ``s / T`` idle servers each and
    ``s`` spines whose ``l x s`` links are all free; among those, the smallest objective of
    Eq. 6 (leaves with the fewest idle servers, spines with the fewest free ports).
``ocs-vclos`` (Alg. 2 and 4)
    An OCS layer between leaves and spines: any idle leaf uplink can be circuited to any idle
    spine port or to another leaf's idle uplink; circuits of running jobs are never touched
    (OCS switching takes about 50 ms, §7). Stages 0 and 1 as ``vclos``. Stage 2: two leaves
    joined by direct circuits when the job fits two virtual leaves (Fig. 3, no spine port
    used), else one spine with the fewest free ports that has one for every GPU (each GPU its
    own circuit: any GPU-level permutation is contention-free). Stage 3: ``l`` virtual leaves
    (several may share a leaf) and ``s`` virtual spines (several may share a spine, each
    taking ``l`` of its ports), Eqs. 7-12.
``ocs-relax`` (§9.6)
    OCS-vClos without the locality constraint: a job takes free GPUs of partly used servers
    too (units of one GPU instead of whole idle servers), so traffic that would stay on
    NVLink crosses the network.
``free``
    The GPUs OCS-vClos would choose on an idle network, with nothing reserved: the
    scheduler of the shared baselines (ECMP, Balanced, SR) and of Best, so that the
    comparison differs only in the network.

Search (``search=``): ``greedy`` (default) is a multi-start greedy biclique search over
bitsets (:func:`greedy_biclique`, compiled), polynomial; ``ilp`` solves the vClos ILP of
Eqs. 2-6 (:func:`vclos_ilp`) or the OCS-vClos ILP of Eqs. 7-12 (:func:`ocs_vclos_ilp`) with
CP-SAT for each shape; ``greedy+ilp`` runs the ILP only for a shape the greedy misses. For
OCS-vClos with one OCS layer the Stage 3 problem separates into two knapsacks with unit
weights, so its greedy is exact (tested against the ILP).

Job sizes that form no virtual Clos (e.g. 24 GPUs with ``T = 8``, ``S = 16``: ``24 = 3 x 8``
is a shape, but 40 = 5 x 8 on four leaves is not): the paper takes the smallest larger size
that does (§6.1); :func:`padded_size` gives it and the job holds the extra GPUs unused.

Examples
--------
>>> alloc = VClosAllocator(leaves=4, spines=4, gpus_per_server=2)
>>> a = alloc.allocate(0, 6)  # 3 servers; a leaf has 2: a virtual Clos of 3 x 2 GPUs
>>> a.stage, a.shape, a.ports.tolist()  # ports n S + j: spines 0 and 1 of leaves 0, 1, 2
(2, (3, 2), [[0, 1], [4, 5], [8, 9]])
>>> alloc.allocate(1, 2).stage, alloc.free_gpus
(0, 8)
>>> alloc.release(0); alloc.free_gpus
14
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.jit import cached_jit
from lumoscore.jitsort import argsort_stable, sort
from lumoscore.npsets import unique

__all__ = [
    "ALLOCATORS",
    "ISOLATING_ALLOCATORS",
    "REFUSAL_CAUSES",
    "RESEARCH_REFUSAL_CAUSES",
    "SEARCHES",
    "VClosAllocation",
    "VClosAllocator",
    "greedy_biclique",
    "ocs_vclos_ilp",
    "padded_size",
    "vclos_ilp",
    "vclos_shapes",
]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Allocator modes (``free``: OCS-vClos's choice of GPUs with no link reserved, the placement
#: of the shared baselines and of Best in the vClos comparison).
ALLOCATORS: tuple[str, ...] = ("vclos", "ocs-vclos", "ocs-relax", "free")
#: The allocators that reserve a virtual Clos per job (architectures of the same names).
ISOLATING_ALLOCATORS: tuple[str, ...] = ALLOCATORS[:3]
#: Virtual-Clos search methods.
SEARCHES: tuple[str, ...] = ("greedy", "ilp", "greedy+ilp")
#: Why a job was refused: ``gpus`` -- fewer free GPUs than it needs (not fragmentation);
#: ``servers`` -- enough free GPUs, not in the idle servers and leaves a virtual Clos needs
#: (GPU fragmentation, vClos Table 2 "GPU"); ``network`` -- the servers are there but no
#: virtual Clos can be reserved (network fragmentation, Table 2 "Network").
REFUSAL_CAUSES: tuple[str, ...] = ("gpus", "servers", "network")
#: Refusal classes as the vClos research scheduler counts them (its Table 2): ``gpu`` -- a
#: job of ``n <= T`` GPUs finds no server with ``n`` free GPUs, a larger one fewer than
#: ``ceil(n / T)`` idle servers in the whole cluster; ``network`` -- every other refusal of a
#: job the free GPUs could hold. It tries a job again only when something was allocated or
#: released since its last refused attempt (the head of its FIFO queue at job completions).
RESEARCH_REFUSAL_CAUSES: tuple[str, ...] = ("gpu", "network")
#: ``down_rule`` of an allocation: ``lemma`` -- a flow into virtual leaf ``w`` from position
#: ``i`` enters through ``ports[w, i]`` (Lemma 5.1); ``own`` -- through the destination GPU's
#: own port (one spine, or one circuit per GPU).
DOWN_RULES: tuple[str, ...] = ("lemma", "own")
#: ``partner`` value of an unconnected OCS port.
UNCONNECTED = -(2**62)


def vclos_shapes(
    n: int, *, unit: int, spines: int, gpus_per_leaf: int, leaves: int
) -> list[tuple[int, int]]:
    """Virtual-Clos shapes ``(l, s)`` of ``n`` GPUs: ``l s = n``, ``2 <= l <= leaves``,
    ``s`` a multiple of ``unit`` (whole servers) and ``s <= min(spines, gpus_per_leaf)``;
    fewest virtual leaves first.

    Examples
    --------
    >>> vclos_shapes(64, unit=8, spines=16, gpus_per_leaf=16, leaves=32)
    [(4, 16), (8, 8)]
    >>> vclos_shapes(40, unit=8, spines=16, gpus_per_leaf=16, leaves=4)
    []
    """
    cap = min(spines, gpus_per_leaf)
    out = []
    for s in range(cap - cap % unit, unit - 1, -unit):
        if s and n % s == 0 and 2 <= n // s <= leaves:
            out.append((n // s, s))
    return out


def padded_size(n: int, *, unit: int, spines: int, gpus_per_leaf: int, leaves: int) -> int | None:
    """The smallest size ``>= n`` that has a virtual-Clos shape (vClos §6.1: a job whose size
    has none takes the next that has), or ``None`` when none fits the cluster.

    Examples
    --------
    >>> padded_size(40, unit=8, spines=16, gpus_per_leaf=16, leaves=4)
    48
    """
    top = leaves * min(spines, gpus_per_leaf)
    for m in range(n, top + 1):
        if vclos_shapes(m, unit=unit, spines=spines, gpus_per_leaf=gpus_per_leaf, leaves=leaves):
            return m
    return None


@cached_jit
def _greedy_biclique_jit(
    free: BoolArray, order: IntArray, l: int, s: int, leaf_cost: IntArray, spine_cost: IntArray
) -> tuple[IntArray, IntArray]:  # pragma: no cover - compiled
    C, S = free.shape
    best_leaves = np.full(l, -1, np.int64)
    best_spines = np.full(s, -1, np.int64)
    best_obj = np.iinfo(np.int64).max
    inter = np.empty(S, np.bool_)
    chosen = np.empty(l, np.int64)
    used = np.zeros(C, np.bool_)
    for rule in range(2):  # 0: rows in cost order; 1: the row keeping most columns
        if rule == 1 and best_obj < np.iinfo(np.int64).max:
            break  # the second rule only runs when the first finds nothing
        for a_i in range(C):
            a = order[a_i]
            cnt = 0
            for m in range(S):
                inter[m] = free[a, m]
                cnt += inter[m]
            if cnt < s:
                continue
            used[:] = False
            used[a] = True
            chosen[0] = a
            k = 1
            while k < l:
                pick, pick_cnt = -1, -1
                for b_i in range(C):
                    b = order[b_i]
                    if used[b]:
                        continue
                    c2 = 0
                    for m in range(S):
                        c2 += inter[m] and free[b, m]
                    if c2 >= s and c2 > pick_cnt:
                        pick, pick_cnt = b, c2
                        if rule == 0:
                            break
                if pick < 0:
                    break
                for m in range(S):
                    inter[m] = inter[m] and free[pick, m]
                used[pick] = True
                chosen[k] = pick
                k += 1
            if k < l:
                continue
            obj = 0
            for j in range(l):
                obj += leaf_cost[chosen[j]]
            # the s cheapest spines of the intersection (ties: lower index)
            idx = np.flatnonzero(inter)
            cost = spine_cost[idx]
            sel = idx[argsort_stable(cost)[:s]]
            for m in sel:
                obj += spine_cost[m]
            if obj < best_obj:
                best_obj = obj
                kept = sort(chosen[:l])
                for q in range(l):
                    best_leaves[q] = kept[q]
                kept = sort(sel)
                for q in range(kept.size):
                    best_spines[q] = kept[q]
    return best_leaves, best_spines


def greedy_biclique(
    free: BoolArray,
    l: int,
    s: int,
    leaf_cost: IntArray,
    spine_cost: IntArray,
) -> tuple[IntArray, IntArray] | None:
    """``l`` rows and ``s`` columns of ``free`` whose ``l x s`` entries are all True, or None.

    Multi-start greedy: from each row in order of ``leaf_cost`` (ties: index), rows are added
    in the same order while the common columns number at least ``s``; each complete set takes
    its ``s`` cheapest common columns, and the set of smallest total cost wins (``O(R^2 C)``
    for ``R`` rows and ``C`` columns). Only when that finds nothing, a second pass adds at
    each step the row that keeps the most common columns (``O(R^2 l C)``).

    Examples
    --------
    >>> import numpy as np
    >>> free = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool)
    >>> rows, cols = greedy_biclique(free, 2, 2, np.zeros(3, np.int64), np.zeros(3, np.int64))
    >>> rows.tolist(), cols.tolist()
    ([0, 1], [0, 1])
    """
    f = np.ascontiguousarray(free, dtype=np.bool_)
    if l > f.shape[0] or s > f.shape[1] or l < 1 or s < 1:
        return None
    lc = np.ascontiguousarray(leaf_cost, dtype=np.int64)
    sc = np.ascontiguousarray(spine_cost, dtype=np.int64)
    order = np.lexsort((np.arange(lc.size), lc)).astype(np.int64)
    rows, cols = _greedy_biclique_jit(f, order, int(l), int(s), lc, sc)
    if rows[0] < 0:
        return None
    return rows, cols


def _solve_two_sets(
    m: Any, x: list[Any], y: list[Any], x_cost: IntArray, y_cost: IntArray, time_limit_s: float
) -> tuple[IntArray, IntArray] | None:
    """Minimize ``x_cost . x + y_cost . y`` on CP-SAT model ``m`` (one worker, seed 0, so the
    same input gives the same answer); the values of ``x`` and ``y``, or None if infeasible."""
    from ortools.sat.python import cp_model

    m.minimize(
        sum(int(x_cost[i]) * v for i, v in enumerate(x))
        + sum(int(y_cost[j]) * v for j, v in enumerate(y))
    )
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    if solver.solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return (
        np.array([solver.value(v) for v in x], dtype=np.int64),
        np.array([solver.value(v) for v in y], dtype=np.int64),
    )


def vclos_ilp(
    free: BoolArray,
    l: int,
    s: int,
    leaf_cost: IntArray,
    spine_cost: IntArray,
    *,
    time_limit_s: float = 10.0,
) -> tuple[IntArray, IntArray] | None:
    """The vClos ILP (Eqs. 2-6) for one shape with CP-SAT: binary ``x_n`` (leaf ``n`` hosts a
    virtual leaf), ``y_m`` (spine ``m`` hosts a virtual spine), ``sum x = l``, ``sum y = s``,
    ``x_n + y_m <= 1`` where link ``(n, m)`` is taken; minimize ``sum leaf_cost x +
    sum spine_cost y``. Rows of ``free`` are the candidate leaves (enough idle servers).
    Returns the optimal ``(rows, columns)`` or None when infeasible.

    Examples
    --------
    >>> import numpy as np
    >>> free = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool)
    >>> r, c = vclos_ilp(free, 2, 2, np.array([0, 5, 0]), np.zeros(3, np.int64))
    >>> r.tolist(), c.tolist()
    ([1, 2], [1, 2])
    """
    from ortools.sat.python import cp_model

    R, C = free.shape
    if l > R or s > C:
        return None
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{n}") for n in range(R)]
    y = [m.new_bool_var(f"y{j}") for j in range(C)]
    m.add(sum(x) == l)
    m.add(sum(y) == s)
    for n in range(R):
        for j in range(C):
            if not free[n, j]:
                m.add_bool_or([x[n].Not(), y[j].Not()])
    got = _solve_two_sets(m, x, y, leaf_cost, spine_cost, time_limit_s)
    if got is None:
        return None
    return np.flatnonzero(got[0]).astype(np.int64), np.flatnonzero(got[1]).astype(np.int64)


def ocs_vclos_ilp(
    leaf_cap: IntArray,
    spine_cap: IntArray,
    l: int,
    s: int,
    leaf_cost: IntArray,
    spine_cost: IntArray,
    *,
    time_limit_s: float = 10.0,
) -> tuple[IntArray, IntArray] | None:
    """The OCS-vClos ILP (Eqs. 7-12) for one shape with one OCS layer, with CP-SAT: integer
    ``v_n in [0, leaf_cap[n]]`` virtual leaves on leaf ``n`` and ``w_m in [0, spine_cap[m]]``
    virtual spines on spine ``m`` (``spine_cap = free ports // l``), ``sum v = l``,
    ``sum w = s``; minimize ``sum leaf_cost v + sum spine_cost w``. Returns ``(v, w)`` or
    None when infeasible.

    Examples
    --------
    >>> import numpy as np
    >>> v, w = ocs_vclos_ilp(np.array([2, 1]), np.array([1, 3]), 3, 2,
    ...                      np.array([1, 5]), np.array([0, 1]))
    >>> v.tolist(), w.tolist()
    ([2, 1], [1, 1])
    """
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    v = [m.new_int_var(0, int(c), f"v{n}") for n, c in enumerate(leaf_cap)]
    w = [m.new_int_var(0, int(c), f"w{j}") for j, c in enumerate(spine_cap)]
    m.add(sum(v) == l)
    m.add(sum(w) == s)
    return _solve_two_sets(m, v, w, leaf_cost, spine_cost, time_limit_s)


def _take_cheapest(cap: IntArray, cost: IntArray, need: int) -> IntArray | None:
    """Units per item, ``need`` in all, cheapest items first (ties: index); exact for a
    separable objective with unit weights. None when the capacities do not reach ``need``."""
    if int(cap.sum()) < need:
        return None
    take = np.zeros(cap.size, np.int64)
    left = need
    for i in np.lexsort((np.arange(cap.size), cost)):
        if left == 0:
            break
        t = min(int(cap[i]), left)
        take[i] = t
        left -= t
    return take


@dataclass(frozen=True)
class VClosAllocation:
    """Where a job runs and the virtual Clos it holds.

    Attributes
    ----------
    job_id : int
    gpus : ndarray of int
        The job's GPUs in rank order (``n`` of them).
    held : ndarray of int
        Every GPU the job holds (whole servers, and the padding of :func:`padded_size`).
    stage : int
        0 one server, 1 one leaf, 2 virtual Clos (vClos) / two leaves or one spine
        (OCS-vClos), 3 OCS-vClos multi-spine virtual Clos.
    shape : tuple of int
        ``(l, s)``: virtual leaves and GPUs per virtual leaf (``(1, n)`` without network).
    ports : ndarray of int, shape (l, s)
        Leaf uplink port of each virtual leaf and position (empty ``(0, 0)`` at stages 0-1).
    down_rule : str
        How a flow enters its destination leaf (:data:`DOWN_RULES`).
    spine_ports : ndarray of int
        Spine ports held (``spine S... m L + p``; vClos: implied by ``ports``).
    circuits : ndarray of int, shape (k, 2)
        OCS circuits of the job: ``(leaf port, partner)`` with the partner a spine port
        ``>= 0`` or ``-(1 + leaf port)`` for a direct leaf-leaf circuit.
    rewired : int
        Circuits changed to admit the job (0: no OCS switching delay).
    search_s : float
        Time the allocation took (s).
    """

    job_id: int
    gpus: IntArray
    held: IntArray
    stage: int
    shape: tuple[int, int]
    ports: IntArray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    down_rule: str = "lemma"
    spine_ports: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    circuits: IntArray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    rewired: int = 0
    search_s: float = 0.0

    @property
    def padded(self) -> int:
        """GPUs held beyond the job's size (whole servers and shape padding)."""
        return int(self.held.size - self.gpus.size)


@dataclass
class _Choice:
    """An allocation before it is committed: per virtual leaf its leaf and GPU units."""

    stage: int
    shape: tuple[int, int]
    vleaf_gpus: list[IntArray]  # GPUs of each virtual leaf (s each), rank order
    ports: IntArray
    down_rule: str = "lemma"
    circuits: list[tuple[int, int]] = field(default_factory=list)
    spine_ports: list[int] = field(default_factory=list)


class VClosAllocator:
    """GPUs, links and (OCS modes) circuits of a leaf-spine cluster under vClos-style
    isolation (see the module docstring).

    Parameters
    ----------
    leaves, spines : int
        ``L`` leaves and ``S`` spines (leaf uplinks, one to each spine).
    gpus_per_server : int
        ``T``.
    gpus_per_leaf : int, optional
        GPU ports of a leaf ``d`` (default ``S``); at most ``S`` (source routing maps GPU
        ports to uplinks one to one), a multiple of ``T``.
    mode : str
        One of :data:`ALLOCATORS`.
    search : str
        One of :data:`SEARCHES`.
    ilp_time_limit_s : float
        CP-SAT time limit per shape.

    Attributes
    ----------
    refusals : dict
        Refused allocations per cause (:data:`REFUSAL_CAUSES`); :meth:`describe` also counts
        the jobs refused at least once per cause (``refused_jobs_<cause>``).
    research_refusals : dict
        Refused allocations counted and classified as the research scheduler does
        (:data:`RESEARCH_REFUSAL_CAUSES`): a job refused again before anything was allocated
        or released is not counted twice, nor is one refused for want of free GPUs.
    stage_counts : list of int
        Allocations per stage.
    search_s : list of float
        Time of every allocation attempt (placed or refused).
    placed : list of (int, float)
        Stage and time of every placement.
    """

    def __init__(
        self,
        leaves: int,
        spines: int,
        gpus_per_server: int,
        gpus_per_leaf: int | None = None,
        *,
        mode: str = "vclos",
        search: str = "greedy",
        ilp_time_limit_s: float = 10.0,
    ) -> None:
        sizes = (("leaves", leaves), ("spines", spines), ("gpus_per_server", gpus_per_server))
        for name, v in sizes:
            if not (isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 1):
                raise ConfigError(f"{name} must be a positive integer, got {v!r}")
        d = spines if gpus_per_leaf is None else gpus_per_leaf
        if not (isinstance(d, int | np.integer) and 1 <= d <= spines and d % gpus_per_server == 0):
            raise ConfigError(
                f"gpus_per_leaf must be a multiple of gpus_per_server={gpus_per_server} and at "
                f"most spines={spines} (one uplink per GPU port), got {gpus_per_leaf!r}"
            )
        if mode not in ALLOCATORS:
            raise ConfigError(f"allocator {mode!r} unknown; allowed: {', '.join(ALLOCATORS)}")
        if search not in SEARCHES:
            raise ConfigError(f"search {search!r} unknown; allowed: {', '.join(SEARCHES)}")
        self.L, self.S, self.T, self.d = int(leaves), int(spines), int(gpus_per_server), int(d)
        self.mode, self.search = mode, search
        self.ocs = mode != "vclos"
        self.reserve = mode != "free"
        self.unit = 1 if mode == "ocs-relax" else self.T
        self.ilp_time_limit_s = float(ilp_time_limit_s)
        self.gpus = self.L * self.d
        self.servers_per_leaf = self.d // self.T
        self.gpu_owner = np.full(self.gpus, -1, np.int64)
        self.port_owner = np.full(self.L * self.S, -1, np.int64)
        self.spine_port_owner = np.full(self.S * self.L, -1, np.int64)
        # OCS circuits: leaf port -> spine port (>= 0), -(1 + leaf port) or UNCONNECTED;
        # spine port -> leaf port or UNCONNECTED. Initially the uniform leaf-spine wiring.
        n_, j_ = np.divmod(np.arange(self.L * self.S), self.S)
        self.partner = (j_ * self.L + n_).astype(np.int64)
        sp_m, sp_p = np.divmod(np.arange(self.S * self.L), self.L)
        self.spine_partner = (sp_p * self.S + sp_m).astype(np.int64)
        self.jobs: dict[int, VClosAllocation] = {}
        self.refusals = dict.fromkeys(REFUSAL_CAUSES, 0)
        self._refused_jobs: dict[str, set[int]] = {c: set() for c in REFUSAL_CAUSES}
        self.last_refusal: str | None = None
        self.research_refusals = dict.fromkeys(RESEARCH_REFUSAL_CAUSES, 0)
        self._changes = 0  # allocations and releases so far
        self._last_refused: tuple[int, int] | None = None  # (job, changes) of the last refusal
        self.stage_counts = [0, 0, 0, 0]
        self.rewired_circuits = 0
        self.search_s: list[float] = []
        self.placed: list[tuple[int, float]] = []  # (stage, seconds) of every placement

    # -- views ----------------------------------------------------------------------------
    @property
    def free_gpus(self) -> int:
        """GPUs held by no job."""
        return int(np.count_nonzero(self.gpu_owner < 0))

    def _server_free(self) -> IntArray:
        return (self.gpu_owner < 0).reshape(-1, self.T).sum(axis=1)

    def _leaf_units(self) -> IntArray:
        """Free units per leaf: idle servers (locality) or free GPUs (relax)."""
        if self.unit == 1:
            return (self.gpu_owner < 0).reshape(self.L, self.d).sum(axis=1)
        return (self._server_free() == self.T).reshape(self.L, -1).sum(axis=1)

    def _leaf_gpus(self, leaf: int, units: int) -> IntArray:
        """``units`` free units of ``leaf`` as GPU ids (locality: the lowest idle servers;
        relax: free GPUs of the fullest servers first)."""
        lo = leaf * self.d
        free = self.gpu_owner[lo : lo + self.d] < 0
        if self.unit == 1:
            per_server = free.reshape(-1, self.T).sum(axis=1)
            order = np.lexsort((np.arange(per_server.size), per_server))
            ids = [lo + v * self.T + np.flatnonzero(free[v * self.T : (v + 1) * self.T])
                   for v in order if per_server[v]]  # fmt: skip
            return np.concatenate(ids)[:units].astype(np.int64)
        idle = np.flatnonzero(free.reshape(-1, self.T).all(axis=1))[:units]
        return (lo + idle[:, None] * self.T + np.arange(self.T)).ravel().astype(np.int64)

    def _free_ports(self, leaf: int) -> IntArray:
        lo = leaf * self.S
        return lo + np.flatnonzero(self.port_owner[lo : lo + self.S] < 0)

    def spine_free_ports(self) -> IntArray:
        """Free ports per spine (RPN of Eq. 6)."""
        if self.ocs:
            return (self.spine_port_owner < 0).reshape(self.S, self.L).sum(axis=1)
        return (self.port_owner < 0).reshape(self.L, self.S).sum(axis=0)

    # -- allocation -----------------------------------------------------------------------
    def allocate(self, job_id: int, n: int) -> VClosAllocation | None:
        """Place a job of ``n`` GPUs; its allocation, or None (cause in
        :attr:`last_refusal`, counted in :attr:`refusals`)."""
        if job_id in self.jobs:
            raise PreconditionError(f"job {job_id} already holds an allocation")
        if not 1 <= n <= self.gpus:
            raise PreconditionError(f"job size must be in [1, {self.gpus}], got {n}")
        t0 = time.perf_counter()
        choice, cause = self._choose(int(n))
        elapsed = time.perf_counter() - t0
        self.search_s.append(elapsed)
        if choice is None:
            self.last_refusal = cause
            self.refusals[cause] += 1
            self._refused_jobs[cause].add(int(job_id))
            attempt = (int(job_id), self._changes)
            if cause != "gpus" and attempt != self._last_refused:
                self.research_refusals[self._research_cause(int(n))] += 1
            self._last_refused = attempt
            return None
        self.last_refusal = None
        self._changes += 1
        return self._commit(job_id, int(n), choice, elapsed)

    def _research_cause(self, n: int) -> str:
        """The research scheduler's class of a refusal of ``n`` GPUs that the free GPUs
        could hold (:data:`RESEARCH_REFUSAL_CAUSES`)."""
        sf = self._server_free()
        if n <= self.T:
            return "network" if (sf >= n).any() else "gpu"
        return "network" if int(np.count_nonzero(sf == self.T)) >= -(-n // self.T) else "gpu"

    def _choose(self, n: int) -> tuple[_Choice | None, str]:
        if n > self.free_gpus:
            return None, "gpus"
        T = self.T
        if n <= T:
            sf = self._server_free()
            ok = np.flatnonzero(sf >= n)
            if ok.size:
                v = int(ok[np.argmin(sf[ok])])
                g = v * T + np.flatnonzero(self.gpu_owner[v * T : (v + 1) * T] < 0)[:n]
                return _Choice(0, (1, n), [g.astype(np.int64)], np.zeros((0, 0), np.int64)), ""
            if self.unit == T:
                return None, "servers"
        units = self._leaf_units()
        need = -(-n // self.unit)
        fits = np.flatnonzero(units >= need) if need * self.unit <= self.d else np.zeros(0, int)
        if fits.size:  # Stage 1: one leaf, the one with the fewest free units
            leaf = int(fits[np.argmin(units[fits])])
            g = self._leaf_gpus(leaf, need)
            return _Choice(1, (1, n), [g], np.zeros((0, 0), np.int64)), ""
        size = padded_size(n, unit=self.unit, spines=self.S, gpus_per_leaf=self.d, leaves=self.L)
        shapes = (
            vclos_shapes(size, unit=self.unit, spines=self.S, gpus_per_leaf=self.d, leaves=self.L)
            if size is not None and size <= self.free_gpus
            else []
        )
        if self.ocs:  # Stage 2: two leaves joined directly, else one spine
            got = self._two_leaves(shapes, units) or self._one_spine(n, units)
            if got is not None:
                return got, ""
        gpu_ok = False
        for l, s in shapes:
            per = s // self.unit
            cand = np.flatnonzero(units >= per)
            if (int((units // per).sum()) if self.ocs else cand.size) < l:
                continue
            gpu_ok = True
            got = self._stage3(l, s, units) if self.ocs else self._stage2(l, s, cand, units)
            if got is not None:
                return got, ""
        if self.ocs:  # one spine needs only enough free units anywhere
            gpu_ok = gpu_ok or int(units.sum()) >= need
        return None, ("network" if gpu_ok else "servers")

    # vClos Stage 2 -------------------------------------------------------------------------
    def _stage2(self, l: int, s: int, cand: IntArray, units: IntArray) -> _Choice | None:
        free = (self.port_owner < 0).reshape(self.L, self.S)[cand]
        leaf_cost = units[cand] * self.unit  # RSN(L_n) T
        spine_cost = self.spine_free_ports()  # RPN(S_m)
        got = None
        if self.search in ("greedy", "greedy+ilp"):
            got = greedy_biclique(free, l, s, leaf_cost, spine_cost)
        if got is None and self.search in ("ilp", "greedy+ilp"):
            got = vclos_ilp(free, l, s, leaf_cost, spine_cost, time_limit_s=self.ilp_time_limit_s)
        if got is None:
            return None
        rows, spines = got
        leaves = np.sort(cand[rows])
        per = s // self.unit
        vg = [self._leaf_gpus(int(n), per) for n in leaves]
        ports = leaves[:, None] * self.S + np.sort(spines)[None, :]
        return _Choice(2, (l, s), vg, ports.astype(np.int64))

    # OCS-vClos Stage 2: two leaves joined directly, or one spine ---------------------------
    def _two_leaves(self, shapes: list[tuple[int, int]], units: IntArray) -> _Choice | None:
        for l, s in shapes:
            if l != 2:
                continue
            per = s // self.unit
            nports = (self.port_owner < 0).reshape(self.L, self.S).sum(axis=1)
            ok = np.flatnonzero((units >= per) & (nports >= s))
            if ok.size < 2:
                return None
            a, b = sorted(int(x) for x in ok[np.lexsort((ok, units[ok]))][:2])
            pa, pb = self._free_ports(a)[:s], self._free_ports(b)[:s]
            circuits = [(int(x), -(1 + int(y))) for x, y in zip(pa, pb, strict=True)]
            vg = [self._leaf_gpus(a, per), self._leaf_gpus(b, per)]
            return _Choice(2, (2, s), vg, np.stack([pa, pb]).astype(np.int64), "lemma", circuits)
        return None

    def _one_spine_layout(self, n: int, units: IntArray) -> list[tuple[int, int]] | None:
        """``(leaf, units)`` for a job on one spine: fewest-free leaves first."""
        need = -(-n // self.unit)
        order = np.lexsort((np.arange(self.L), units))
        out, left = [], need
        for leaf in order:
            if left == 0:
                break
            t = min(int(units[leaf]), left)
            if t:
                out.append((int(leaf), t))
                left -= t
        return out if left == 0 else None

    def _one_spine(self, n: int, units: IntArray) -> _Choice | None:
        sp_free = self.spine_free_ports()
        ok = np.flatnonzero(sp_free >= n)
        if not ok.size:
            return None
        layout = self._one_spine_layout(n, units)
        if layout is None:
            return None
        m = int(ok[np.argmin(sp_free[ok])])
        gpus = np.concatenate([self._leaf_gpus(leaf, t) for leaf, t in layout])[:n]
        leaf_of = gpus // self.d
        ports = np.empty(n, np.int64)
        for leaf in unique(leaf_of):
            sel = np.flatnonzero(leaf_of == leaf)
            fp = self._free_ports(int(leaf))
            if fp.size < sel.size:
                return None
            ports[sel] = fp[: sel.size]
        lo = m * self.L
        sp = lo + np.flatnonzero(self.spine_port_owner[lo : lo + self.L] < 0)[:n]
        circuits = [(int(q), int(p)) for q, p in zip(ports, sp, strict=True)]
        return _Choice(2, (1, n), [gpus], ports[None, :], "own", circuits, sp.tolist())

    # OCS-vClos Stage 3 ---------------------------------------------------------------------
    def _stage3(self, l: int, s: int, units: IntArray) -> _Choice | None:
        per = s // self.unit
        leaf_cap = units // per
        sp_free = self.spine_free_ports()
        spine_cap = sp_free // l
        leaf_cost = units * self.unit
        got: tuple[IntArray, IntArray] | None = None
        if self.search in ("greedy", "greedy+ilp"):
            v = _take_cheapest(leaf_cap, leaf_cost, l)
            w = _take_cheapest(spine_cap, sp_free, s)
            got = (v, w) if v is not None and w is not None else None
        if got is None and self.search in ("ilp", "greedy+ilp"):
            got = ocs_vclos_ilp(
                leaf_cap, spine_cap, l, s, leaf_cost, sp_free, time_limit_s=self.ilp_time_limit_s
            )
        if got is None:
            return None
        v, w = got
        vg: list[IntArray] = []
        rows: list[IntArray] = []
        for n in np.flatnonzero(v):
            k = int(v[n])
            fp = self._free_ports(int(n))
            if fp.size < k * s:
                return None
            g = self._leaf_gpus(int(n), k * per)
            for a in range(k):
                vg.append(g[a * s : (a + 1) * s])
                rows.append(fp[a * s : (a + 1) * s])
        ports = np.stack(rows).astype(np.int64)
        circuits: list[tuple[int, int]] = []
        spine_ports: list[int] = []
        i = 0
        for m in np.flatnonzero(w):
            lo = int(m) * self.L
            free_p = lo + np.flatnonzero(self.spine_port_owner[lo : lo + self.L] < 0)
            for k in range(int(w[m])):  # virtual spine i takes l ports of spine m
                sp = free_p[k * l : (k + 1) * l]
                circuits.extend((int(ports[r, i]), int(sp[r])) for r in range(l))
                spine_ports.extend(sp.tolist())
                i += 1
        return _Choice(3, (l, s), vg, ports, "lemma", circuits, spine_ports)

    # -- commit and release ---------------------------------------------------------------
    def _commit(self, job_id: int, n: int, c: _Choice, elapsed: float) -> VClosAllocation:
        every = np.concatenate(c.vleaf_gpus).astype(np.int64)
        gpus = every[:n]
        # whole servers are held (locality); relax holds only the GPUs taken
        if self.unit == self.T and c.stage > 0:
            servers = unique(every // self.T)
            held = (servers[:, None] * self.T + np.arange(self.T)).ravel()
        else:
            held = every
        if (self.gpu_owner[held] >= 0).any():
            raise PreconditionError(f"job {job_id}: allocation overlaps a running job's GPUs")
        self.gpu_owner[held] = job_id
        ports = c.ports if self.reserve else np.zeros((0, 0), np.int64)
        if ports.size:
            if (self.port_owner[ports.ravel()] >= 0).any():
                raise PreconditionError(f"job {job_id}: allocation reuses a reserved link")
            self.port_owner[ports.ravel()] = job_id
        rewired = 0
        if not self.reserve:
            c = _Choice(c.stage, c.shape, c.vleaf_gpus, ports, c.down_rule)
        elif self.ocs:
            sp = np.asarray(c.spine_ports, np.int64)
            self.spine_port_owner[sp] = job_id
            for q, target in c.circuits:
                rewired += self._connect(q, target, job_id)
        elif ports.size:  # vClos: the fixed link (leaf n, spine m) holds spine m's port n
            leaf, spine = np.divmod(ports.ravel(), self.S)
            self.spine_port_owner[spine * self.L + leaf] = job_id
        self.rewired_circuits += rewired
        self.stage_counts[c.stage] += 1
        self.placed.append((c.stage, elapsed))
        alloc = VClosAllocation(
            job_id=job_id,
            gpus=gpus,
            held=np.sort(held),
            stage=c.stage,
            shape=c.shape,
            ports=ports,
            down_rule=c.down_rule,
            spine_ports=np.asarray(c.spine_ports, np.int64),
            circuits=np.array(c.circuits, np.int64).reshape(-1, 2),
            rewired=rewired,
            search_s=elapsed,
        )
        self.jobs[job_id] = alloc
        return alloc

    def _connect(self, q: int, target: int, job_id: int) -> int:
        """Circuit leaf port ``q`` to ``target`` (spine port, or ``-(1 + leaf port)``); the
        ports' old partners become unconnected. Returns 1 if anything changed."""
        if self.partner[q] == target:
            return 0
        self._disconnect_leaf(q, job_id)
        if target >= 0:
            old = self.spine_partner[target]
            if old != UNCONNECTED:
                self._disconnect_leaf(int(old), job_id)
            self.spine_partner[target] = q
        else:
            self._disconnect_leaf(-(1 + target), job_id)
            self.partner[-(1 + target)] = -(1 + q)
        self.partner[q] = target
        return 1

    def _disconnect_leaf(self, q: int, job_id: int) -> None:
        """Leave leaf port ``q`` unconnected (and its partner); only a port that is idle or
        the admitted job's own may be rewired (busy circuits never change)."""
        p = int(self.partner[q])
        if p == UNCONNECTED:
            return
        if self.port_owner[q] not in (-1, job_id):
            raise PreconditionError(f"rewiring would break port {q} of running job")
        if p >= 0:
            self.spine_partner[p] = UNCONNECTED
        else:
            self.partner[-(1 + p)] = UNCONNECTED
        self.partner[q] = UNCONNECTED

    def release(self, job_id: int) -> None:
        """Free the job's GPUs, links and spine ports (circuits stay as they are, idle)."""
        alloc = self.jobs.pop(job_id, None)
        if alloc is None:
            raise PreconditionError(f"job {job_id} holds no allocation")
        self._changes += 1
        self.gpu_owner[alloc.held] = -1
        if alloc.ports.size:
            self.port_owner[alloc.ports.ravel()] = -1
        self.spine_port_owner[self.spine_port_owner == job_id] = -1

    # -- checks ---------------------------------------------------------------------------
    def check(self) -> None:
        """Raise PreconditionError unless the state is consistent: every job's GPUs, ports
        and spine ports are its own, and (OCS) every job's circuits are in place."""
        for jid, a in self.jobs.items():
            if not (self.gpu_owner[a.held] == jid).all():
                raise PreconditionError(f"job {jid}: GPUs not held")
            if a.ports.size and not (self.port_owner[a.ports.ravel()] == jid).all():
                raise PreconditionError(f"job {jid}: ports not held")
            for q, t in a.circuits.tolist():
                if self.partner[q] != t:
                    raise PreconditionError(f"job {jid}: circuit of port {q} was rewired")
        if self.ocs:
            lp = np.flatnonzero(self.partner >= 0)
            if not (self.spine_partner[self.partner[lp]] == lp).all():
                raise PreconditionError("leaf-spine circuits are not symmetric")

    def describe(self) -> dict[str, Any]:
        """Counters for results: stages, refusals by cause, rewired circuits, and the time of
        the allocation attempts (all: ``allocation_ms_*``; placements that built a virtual
        Clos, stages 2-3: ``virtual_clos_ms_*``)."""
        t = np.array(self.search_s) if self.search_s else np.zeros(1)
        net = np.array([s for stage, s in self.placed if stage >= 2] or [0.0])
        gpu_side = self._refused_jobs["gpus"] | self._refused_jobs["servers"]
        return {
            "allocator": self.mode,
            "search": self.search,
            "allocations_per_stage": list(self.stage_counts),
            **{f"refusals_{k}": int(v) for k, v in self.refusals.items()},
            **{f"refused_jobs_{k}": len(v) for k, v in self._refused_jobs.items()},
            # jobs refused for want of GPUs or of idle servers (vClos Table 2 "GPU")
            "refused_jobs_gpu_side": len(gpu_side),
            **{f"research_refusals_{k}": int(v) for k, v in self.research_refusals.items()},
            "rewired_circuits": int(self.rewired_circuits),
            "allocation_ms_median": float(np.median(t) * 1e3),
            "allocation_ms_p99": float(np.quantile(t, 0.99) * 1e3),
            "allocation_ms_max": float(t.max() * 1e3),
            "virtual_clos_ms_median": float(np.median(net) * 1e3),
            "virtual_clos_ms_max": float(net.max() * 1e3),
        }
