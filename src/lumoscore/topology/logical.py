"""Logical topology: leaf-level cross-pod demand ``L`` -> per-spine split ``L_abh`` -> ``C_ijh``.

LumosCore §4.1 and Appendix A.2. ``L`` is a symmetric ``leaves x leaves`` integer matrix,
zero inside pods: ``L_ab`` bidirectional leaf-to-leaf links the running jobs need. A split
``L_abh`` sends part of ``L_ab`` through spine ``h`` of both pods (OCS group ``h``); the pod-level
logical topology is ``C_ijh = sum_{a in pod i, b in pod j} L_abh`` (Eq. 7). The model:

* (5) ``sum_h L_abh = L_ab``;
* (6) ``sum_b L_abh <= tau`` and ``sum_a L_abh <= tau`` (each leaf has ``tau`` links to each
  spine: no contention on leaf-spine links);
* (8) ``C_h`` symmetric (every logical link bidirectional, L2 compatible).

Algorithms:

* :func:`heuristic_decomposition` -- Heuristic-Decomposition (§4.1.1): ``L = A + A.T``
  (:func:`~lumoscore.decompose.symmetric_decomposition`), ``A = A^1 + ... + A^H``
  (:func:`~lumoscore.decompose.integer_decomposition_sparse`), ``L_abh = A^h_ab + A^h_ba``.
  Theorem 4.1: for even ``tau`` (the paper: ``tau = 2``) and row sums ``<= K_leaf`` it meets
  (5)(6)(8); for ``tau = 1`` it still meets (5)(8) and every leaf-spine link carries at most
  2 requirements (contention <= 2).
* :func:`greedy_spine_assignment` -- the greedy of Theorem 4.2: each pair's requirements go to
  spines with a free link at both leaves. When every row sum is at most ``K_leaf / 2`` it meets
  (5)(6)(8) (a leaf has used fewer than half of its spines, so two leaves share a free one).
  Otherwise leftover requirements go where the larger of the two loads is least, and the result
  reports its contention.
* :func:`ilp_logical_topology` -- constraints (5)(6)(8) as a CP-SAT feasibility model (a
  reference for small cases; proves infeasibility, e.g. the Fig. 12 triangle with ``tau = 1``).
* :func:`design_logical_topology` -- ``method="auto"``: Heuristic-Decomposition for even
  ``tau``; for ``tau = 1`` the greedy when Theorem 4.2's condition holds, otherwise the better
  (lower peak contention) of greedy and Heuristic-Decomposition (contention <= 2).
* :func:`check_logical_topology` -- violations of (5)(6)(8); :func:`backup_mesh` -- idle OCS
  ports joined into a full-mesh backup (LumosCore Fig. 10 caption).

A :class:`LogicalTopology` holds ``L_abh`` as COO arrays (``a, b, h, value``), ``C`` as an
``(H, P, P)`` array, and the contention of every leaf-spine link (``leaf_contention``, leaves x
H: requirements per link, rounded up) and every spine's OCS-facing links (``spine_contention``,
H x P).

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec
>>> spec = ClusterSpec(pods=3, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)  # 2 leaves a pod
>>> L = np.zeros((6, 6), np.int64)
>>> L[0, 2] = L[2, 0] = 3; L[0, 4] = L[4, 0] = 1; L[3, 5] = L[5, 3] = 4
>>> topo = design_logical_topology(L, spec)
>>> topo.method, topo.C.shape, topo.max_contention
('heuristic', (2, 3, 3), 1)
>>> check_logical_topology(L, topo, spec)
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from lumoscore.decompose import integer_decomposition_entries, symmetric_split_entries
from lumoscore.errors import ConfigError, InfeasibleError, PreconditionError, SolverError
from lumoscore.npsets import unique
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.topology.kernels import greedy_assign, merge_split

__all__ = [
    "LOGICAL_METHODS",
    "LogicalTopology",
    "Split",
    "apply_split",
    "backup_mesh",
    "check_logical_topology",
    "design_logical_topology",
    "extend_logical_topology",
    "free_link_split",
    "greedy_spine_assignment",
    "heuristic_decomposition",
    "ilp_logical_topology",
    "port_mesh",
    "shrink_logical_topology",
    "theorem_42_condition",
]

IntArray = NDArray[np.int64]

LOGICAL_METHODS: tuple[str, ...] = ("auto", "heuristic", "greedy", "ilp")
"""Methods accepted by :func:`design_logical_topology`."""


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class LogicalTopology:
    """A per-spine split of ``L`` and the pod-level logical topology it induces.

    Attributes
    ----------
    a, b, h, value : ndarray of int64
        ``L_abh = value`` (directed leaf ``a`` -> leaf ``b`` through spine ``h``), non-zero
        entries only, sorted by ``(a, b, h)``.
    C : ndarray of int64
        ``(H, P, P)`` logical topology (Eq. 7), the demand of :func:`lumoscore.toe.configure`.
        Computed from the entries at the first access (an admission that needs only what
        changed, or a design compared and dropped, never builds it).
    leaf_up, leaf_down : ndarray of int64
        ``(leaves, H)``: requirements on the links leaf -> spine (``sum_b L_abh``) and
        spine -> leaf (``sum_b L_bah``).
    capacity : ndarray of int64
        ``(leaves, H)`` working links between each leaf and spine (``tau`` unless failed).
    k_spine : int
        OCS-facing ports of a spine.
    method : str
        Algorithm that produced it.
    token : object
        This topology's identity (a fresh object each; :func:`dataclasses.replace` keeps
        it): what :attr:`derived_from` refers to.
    derived_from : object or None
        Set by :func:`apply_split` and :func:`shrink_logical_topology`: the :attr:`token` of
        the topology it started from.
    changed_keys, changed_delta : ndarray or None
        Set with ``derived_from``: the flat keys into ``(H, P, P)`` (ascending) where this
        ``C`` can differ from that of the topology it started from, and the difference
        there (what a caller comparing the two needs; the rest of ``C`` is the same).
    row_sums : ndarray or None
        ``(H, P)`` ``sum_j C_ijh`` when known (set by the algorithms here, kept up to date
        by :func:`apply_split`); :meth:`spine_row_sums` computes it otherwise.
    pod_counts : ndarray or None
        ``C`` once built (None until :attr:`C` is read).
    """

    a: IntArray
    b: IntArray
    h: IntArray
    value: IntArray
    leaf_up: IntArray
    leaf_down: IntArray
    capacity: IntArray
    k_spine: int
    method: str
    token: object = field(default_factory=object, repr=False)
    derived_from: object | None = field(default=None, repr=False)
    changed_keys: IntArray | None = field(default=None, repr=False)
    changed_delta: IntArray | None = field(default=None, repr=False)
    row_sums: IntArray | None = field(default=None, repr=False)
    pod_counts: IntArray | None = field(default=None, repr=False)

    @property
    def C(self) -> IntArray:
        """``(H, P, P)`` logical topology (Eq. 7); see the class."""
        if self.pod_counts is None:
            assert self.row_sums is not None  # (set whenever C is not)
            H, P = self.row_sums.shape
            per = self.leaf_up.shape[0] // P
            C = np.zeros(H * P * P, np.int64)
            np.add.at(C, (self.h * P + self.a // per) * P + self.b // per, self.value)
            object.__setattr__(self, "pod_counts", C.reshape(H, P, P))
        return self.pod_counts  # type: ignore[return-value]

    def pod_entries(self) -> tuple[IntArray, IntArray]:
        """The non-zero entries of :attr:`C`: flat keys into ``(H, P, P)`` (ascending) and
        their values, from the leaf-level entries (without building ``C``)."""
        known = self.pod_counts if self.pod_counts is not None else self.row_sums
        assert known is not None  # (row_sums is set whenever C is not)
        P = known.shape[1]
        keys, val = _pod_sums(self.a, self.b, self.h, self.value, P, self.leaf_up.shape[0] // P)
        nz = val != 0
        return keys[nz], val[nz]

    def spine_row_sums(self) -> IntArray:
        """``(H, P)``: the OCS ports each spine needs, ``sum_j C_ijh``."""
        return self.C.sum(axis=2) if self.row_sums is None else self.row_sums

    @property
    def leaf_contention(self) -> IntArray:
        """``(leaves, H)`` contention level of each leaf-spine link bundle: requirements per
        working link, rounded up (0 = unused, 1 = every requirement has its own link).
        A bundle with load but no working link reports its load."""
        load = np.maximum(self.leaf_up, self.leaf_down)
        cap = np.maximum(self.capacity, 1)
        return -(-load // cap)

    @property
    def spine_contention(self) -> IntArray:
        """``(H, P)`` contention level of each spine's OCS-facing links:
        ``ceil(sum_j C_ijh / k_spine)``."""
        return -(-self.spine_row_sums() // self.k_spine)

    @property
    def max_contention(self) -> int:
        """Largest contention level over all leaf-spine and spine-OCS links (0 = no demand)."""
        lc = int(self.leaf_contention.max(initial=0))
        return max(lc, int(self.spine_contention.max(initial=0)))

    @property
    def contention_free(self) -> bool:
        """Constraints (6) hold and no spine needs more OCS ports than it has
        (``max_contention <= 1``, compared without the divisions)."""
        cap = np.maximum(self.capacity, 1)
        return bool(
            (self.leaf_up <= cap).all()
            and (self.leaf_down <= cap).all()
            and (self.spine_row_sums() <= self.k_spine).all()
        )

    def split_of(self, a: Any, b: Any) -> IntArray:
        """``L_abh`` for leaf pairs ``(a[k], b[k])``: an ``(len(a), H)`` array (planned routing:
        a pair's traffic uses spine ``h`` for ``L_abh`` of its links).

        Examples
        --------
        >>> import numpy as np
        >>> from lumoscore.topology import ClusterSpec
        >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=2, gpus_per_server=2)
        >>> t = heuristic_decomposition(np.array([[0, 3], [3, 0]]), spec)
        >>> t.split_of([0, 1], [1, 0]).tolist()
        [[1, 2], [1, 2]]
        """
        n, H = self.leaf_up.shape
        qa = np.asarray(a, dtype=np.int64).reshape(-1)
        qb = np.asarray(b, dtype=np.int64).reshape(-1)
        key = (self.a * n + self.b) * H + self.h  # unique per entry (built by _build)
        order = np.argsort(key)
        sk = key[order]
        q = ((qa * n + qb)[:, None] * H + np.arange(H)).reshape(-1)
        pos = np.minimum(np.searchsorted(sk, q), max(sk.size - 1, 0))
        hit = (sk[pos] == q) if sk.size else np.zeros(q.size, bool)
        out = np.zeros(q.size, np.int64)
        out[hit] = self.value[order[pos[hit]]]
        return out.reshape(-1, H)

    def dense(self) -> IntArray:
        """``L_abh`` as a dense ``(H, leaves, leaves)`` array (small clusters only)."""
        n = self.leaf_up.shape[0]
        out = np.zeros((self.C.shape[0], n, n), np.int64)
        np.add.at(out, (self.h, self.a, self.b), self.value)
        return out


# ---- helpers ------------------------------------------------------------------------------
def _coo(L: Any, spec: ClusterSpec) -> tuple[IntArray, IntArray, IntArray]:
    """Upper-triangle COO (a < b) of a validated demand matrix: dense, ``scipy.sparse``, or
    a ``(rows, cols, values)`` triple of COO entries (duplicates summed)."""
    n = spec.leaves
    if isinstance(L, tuple):
        r, c, v = (np.asarray(x).reshape(-1) for x in L)
        if not (r.size == c.size == v.size):
            raise ConfigError(f"L: rows, cols, values sizes differ: {r.size}, {c.size}, {v.size}")
        r, c = r.astype(np.int64), c.astype(np.int64)
        if r.size and (min(r.min(), c.min()) < 0 or max(r.max(), c.max()) >= n):
            raise ConfigError(f"L: entries must index leaves 0..{n - 1}")
        key = r * n + c
        if r.size > 1 and unique(key).size < key.size:  # sum duplicate entries
            key, inv = np.unique(key, return_inverse=True)
            v = np.bincount(inv.reshape(-1), weights=v, minlength=key.size)
            r, c = key // n, key % n
    elif sp.issparse(L):
        m = sp.coo_array(L)
        if m.shape != (n, n):
            raise ConfigError(f"L: shape must be ({n}, {n}) (leaves), got {m.shape}")
        r, c, v = m.row.astype(np.int64), m.col.astype(np.int64), np.asarray(m.data)
    else:
        arr = np.asarray(L)
        if arr.shape != (n, n):
            raise ConfigError(f"L: shape must be ({n}, {n}) (leaves), got {arr.shape}")
        r, c = np.nonzero(arr)
        r, c = r.astype(np.int64), c.astype(np.int64)
        v = arr[r, c]
    fractional = v.size and not np.issubdtype(v.dtype, np.integer)
    if fractional and not np.array_equal(v, np.round(v)):
        raise ConfigError("L: entries must be integers")
    v = v.astype(np.int64)
    keep = v != 0
    r, c, v = r[keep], c[keep], v[keep]
    if (v < 0).any():
        k = int(np.flatnonzero(v < 0)[0])
        raise ConfigError(f"L: entries must be >= 0, got L[{r[k]}, {c[k]}] = {v[k]}")
    per = spec.leaves_per_pod
    inside = r // per == c // per
    if inside.any():
        k = int(np.flatnonzero(inside)[0])
        raise ConfigError(
            f"L: entries inside a pod must be 0 (cross-pod demand only), got "
            f"L[{r[k]}, {c[k]}] = {v[k]}"
        )
    up = r < c
    ru, cu, vu = r[up], c[up], v[up]
    rl, cl, vl = c[~up], r[~up], v[~up]
    ku = ru * n + cu
    kl = rl * n + cl
    ou, ol = np.argsort(ku), np.argsort(kl)
    if not (np.array_equal(ku[ou], kl[ol]) and np.array_equal(vu[ou], vl[ol])):
        raise ConfigError("L: must be symmetric (L[a, b] == L[b, a])")
    return ru[ou], cu[ou], vu[ou]


def _pod_sums(
    a: IntArray, b: IntArray, h: IntArray, v: IntArray, P: int, per: int
) -> tuple[IntArray, IntArray]:
    """Leaf-level entries ``L_abh = v`` summed per pod-level entry of ``C``: flat keys into
    ``(H, P, P)`` (ascending, each once) and the sums (zeros kept); ``per`` leaves a pod."""
    keys, inv = np.unique((h * P + a // per) * P + b // per, return_inverse=True)
    return keys, np.bincount(inv.reshape(-1), weights=v, minlength=keys.size).astype(np.int64)


def _sums_at(i: IntArray, j: IntArray, v: Any, shape: tuple[int, int]) -> IntArray:
    """The ``shape`` array of the sums of ``v`` at ``(i, j)`` (a leaf's or a spine's
    requirements from entries: ``(leaf, h)`` for ``leaf_up``/``leaf_down``, ``(h, pod)``
    for the spines' row sums)."""
    flat = np.bincount(i * shape[1] + j, weights=v, minlength=shape[0] * shape[1])
    return flat.astype(np.int64).reshape(shape)


def _capacity(spec: ClusterSpec, capacity: Any) -> IntArray:
    shape = (spec.leaves, spec.ocs_groups)
    if capacity is None:
        return np.full(shape, spec.tau, np.int64)
    cap = np.asarray(capacity, dtype=np.int64)
    if cap.shape != shape:
        raise ConfigError(f"capacity: shape must be {shape} (leaves, H), got {cap.shape}")
    return cap


def _build(
    a: IntArray,
    b: IntArray,
    h: IntArray,
    v: IntArray,
    spec: ClusterSpec,
    cap: IntArray,
    method: str,
) -> LogicalTopology:
    """Aggregate directed entries and derive ``C`` and the link loads."""
    n, H, P = spec.leaves, spec.ocs_groups, spec.pods
    key = (a * n + b) * H + h
    uk, inv = np.unique(key, return_inverse=True)
    val = np.bincount(inv.reshape(-1), weights=v, minlength=uk.size).astype(np.int64)
    nz = val != 0
    uk, val = uk[nz], val[nz]
    hh = uk % H
    ab = uk // H
    aa, bb = ab // n, ab % n
    per = spec.leaves_per_pod
    # C (H P^2 entries) is built at the first access (C property): a candidate design that is
    # compared and dropped, or one whose caller reads the row sums only, never builds it
    rows = _sums_at(hh, aa // per, val, (H, P))
    up = _sums_at(aa, hh, val, (n, H))
    down = _sums_at(bb, hh, val, (n, H))
    return LogicalTopology(
        a=aa,
        b=bb,
        h=hh,
        value=val,
        row_sums=rows.reshape(H, P),
        leaf_up=up.reshape(n, H),
        leaf_down=down.reshape(n, H),
        capacity=cap,
        k_spine=spec.k_spine,
        method=method,
    )


def _empty(spec: ClusterSpec, cap: IntArray, method: str) -> LogicalTopology:
    z = np.zeros(0, np.int64)
    return _build(z, z, z, z, spec, cap, method)


# ---- algorithms ---------------------------------------------------------------------------
def heuristic_decomposition(L: Any, spec: ClusterSpec, *, capacity: Any = None) -> LogicalTopology:
    """Heuristic-Decomposition of §4.1.1 (Theorem 4.1); see the module docstring.

    Only leaves with demand enter the two min-cost-flow decompositions.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=2, gpus_per_server=2)
    >>> L = np.array([[0, 4], [4, 0]])                      # one leaf a pod, 2 spines
    >>> heuristic_decomposition(L, spec).C[:, 0, 1].tolist()  # 2 links through each spine
    [2, 2]
    """
    cap = _capacity(spec, capacity)
    r, c, v = _coo(L, spec)
    if v.size == 0:
        return _empty(spec, cap, "heuristic")
    # the leaves with demand, numbered 0..m-1; both decompositions work on the entries only
    act, inv = np.unique(np.concatenate([r, c]), return_inverse=True)
    m = act.size
    i, j, c2, a = symmetric_split_entries(m, inv[: r.size], inv[r.size :], v)
    parts = integer_decomposition_entries(
        np.concatenate([i, j]), np.concatenate([j, i]), np.concatenate([a, c2 - a]), (m, m),
        spec.ocs_groups,
    )  # fmt: skip
    pa, pb, ph, pv = act[parts.row], act[parts.col], parts.part, parts.value
    return _build(
        np.concatenate([pa, pb]),
        np.concatenate([pb, pa]),
        np.concatenate([ph, ph]),
        np.concatenate([pv, pv]),
        spec,
        cap,
        "heuristic",
    )


def theorem_42_condition(L: Any, spec: ClusterSpec) -> bool:
    """Every row sum of ``L`` is at most ``K_leaf / 2`` (Theorem 4.2's condition).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=2)
    >>> theorem_42_condition(np.array([[0, 0, 2, 0], [0] * 4, [2, 0, 0, 0], [0] * 4]), spec)
    True
    """
    r, c, v = _coo(L, spec)
    rows = np.bincount(np.concatenate([r, c]), weights=np.concatenate([v, v]), minlength=1)
    return bool(rows.max(initial=0) * 2 <= spec.k_leaf)


def _greedy(
    r: IntArray,
    c: IntArray,
    v: IntArray,
    cap: IntArray,
    load: IntArray,
    concentrate: bool,
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Greedy spine assignment of the pairs ``(r, c, v)`` on top of ``load`` (updated in
    place); returns the upper-orientation COO ``(a, b, h, value)``
    (:func:`lumoscore.topology.kernels.greedy_assign`)."""
    as64 = [np.ascontiguousarray(x, dtype=np.int64) for x in (r, c, v, cap)]
    work = np.ascontiguousarray(load, dtype=np.int64)
    out = greedy_assign(*as64, work, bool(concentrate))
    if work is not load:
        load[...] = work
    return out


def _mirror(
    a: IntArray, b: IntArray, h: IntArray, v: IntArray
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    return np.r_[a, b], np.r_[b, a], np.r_[h, h], np.r_[v, v]


def greedy_spine_assignment(L: Any, spec: ClusterSpec, *, capacity: Any = None) -> LogicalTopology:
    """Theorem 4.2's greedy: each pair's requirements on spines free at both leaves.

    Pairs are taken in ``(a, b)`` order; a pair's requirements are spread round-robin over the
    spines with a free link at both leaves (most common free links first, ties by spine index).
    Requirements left over (possible only when the theorem's condition fails) go one by one
    to the spine where the larger of the two leaves' loads is least. ``L_abh`` is symmetric,
    so (8) always holds. ``capacity`` (``leaves x H``, default ``tau``) allows failed links.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=2)
    >>> L = np.zeros((4, 4), np.int64); L[0, 2] = L[2, 0] = 2
    >>> t = greedy_spine_assignment(L, spec)
    >>> t.C[:, 0, 1].tolist(), t.max_contention
    ([1, 1, 0, 0], 1)
    """
    cap = _capacity(spec, capacity)
    r, c, v = _coo(L, spec)
    parts = _greedy(r, c, v, cap, np.zeros_like(cap), concentrate=False)
    return _build(*_mirror(*parts), spec, cap, "greedy")


def extend_logical_topology(
    topo: LogicalTopology, L_add: Any, spec: ClusterSpec, *, capacity: Any = None
) -> LogicalTopology:
    """Add demand ``L_add`` to a symmetric split without moving what is already placed.

    The new requirements go greedily onto the links left free by ``topo`` (same rule as
    :func:`greedy_spine_assignment`, but filling the spines this call already uses first, so
    few OCS groups change). The result may have contention when the residual links do not
    suffice; callers then recompute from scratch (:func:`design_logical_topology`).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=2, gpus_per_server=2)
    >>> L = np.array([[0, 2], [2, 0]])
    >>> t = extend_logical_topology(heuristic_decomposition(L, spec), L, spec)
    >>> t.C[:, 0, 1].tolist(), t.contention_free      # 1 + 1 before, one more on each
    ([2, 2], True)
    """
    cap = _capacity(spec, capacity)
    split = free_link_split(topo, L_add, spec, capacity=cap)
    return apply_split(topo, split, spec, capacity=cap, method="incremental")


Split = tuple[IntArray, IntArray, IntArray, IntArray]
"""COO entries ``(a, b, h, value)`` of a per-spine split (both orientations)."""


def free_link_split(
    topo: LogicalTopology, L_add: Any, spec: ClusterSpec, *, capacity: Any = None
) -> Split:
    """The split of ``L_add`` that :func:`extend_logical_topology` adds to ``topo``, as COO
    entries (both orientations), e.g. to remove exactly this part later (:func:`apply_split`).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=2, gpus_per_server=2)
    >>> t = heuristic_decomposition(np.zeros((2, 2), np.int64), spec)
    >>> a, b, h, v = free_link_split(t, np.array([[0, 3], [3, 0]]), spec)
    >>> a.tolist(), b.tolist(), h.tolist(), v.tolist()   # spine 0 filled first
    ([0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 0, 1], [2, 1, 2, 1])
    """
    cap = _capacity(spec, capacity)
    r, c, v = _coo(L_add, spec)
    load = np.maximum(topo.leaf_up, topo.leaf_down)
    return _mirror(*_greedy(r, c, v, cap, load, concentrate=True))


def apply_split(
    topo: LogicalTopology,
    split: Split,
    spec: ClusterSpec,
    *,
    sign: int = 1,
    capacity: Any = None,
    method: str | None = None,
) -> LogicalTopology:
    """``topo`` with the entries of ``split`` added (``sign=1``) or removed (``sign=-1``).

    Raises :class:`~lumoscore.errors.PreconditionError` if a removal takes more than ``topo``
    carries on some ``(a, b, h)``.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=2, gpus_per_server=2)
    >>> t = heuristic_decomposition(np.array([[0, 2], [2, 0]]), spec)
    >>> s = free_link_split(t, np.array([[0, 1], [1, 0]]), spec)
    >>> back = apply_split(apply_split(t, s, spec), s, spec, sign=-1)
    >>> bool((back.dense() == t.dense()).all())
    True
    """
    if sign not in (1, -1):
        raise ConfigError(f"sign must be 1 or -1, got {sign}")
    cap = topo.capacity if capacity is None else _capacity(spec, capacity)
    a, b, h, v = (np.asarray(x, dtype=np.int64).reshape(-1) for x in split)
    v = sign * v
    n, H, P, per = spec.leaves, spec.ocs_groups, spec.pods, spec.leaves_per_pod
    # the split's entries merged into topo's (sorted by key, see _build): the work is a pass
    # over the entries, no sort of them, and C is not built (the C property builds it)
    ea, eb, eh, value, up, down, ok = merge_split(
        topo.a, topo.b, topo.h, topo.value, a, b, h, v, topo.leaf_up, topo.leaf_down, n, H
    )
    if not ok:
        raise PreconditionError("apply_split: removing more than the split carries")
    # what changed at pod level, for callers that compare C with topo.C (reconfigure)
    keys, delta = _pod_sums(a, b, h, v, P, per)
    rows = topo.spine_row_sums() + _sums_at(h, a // per, v, (H, P))
    return LogicalTopology(
        a=ea,
        b=eb,
        h=eh,
        value=value,
        leaf_up=up,
        leaf_down=down,
        capacity=cap,
        k_spine=spec.k_spine,
        method=topo.method if method is None else method,
        derived_from=topo.token,
        changed_keys=keys,
        changed_delta=delta,
        row_sums=rows,
    )


def shrink_logical_topology(
    topo: LogicalTopology,
    L_remove: Any,
    spec: ClusterSpec,
    *,
    capacity: Any = None,
    keep: Split | None = None,
) -> LogicalTopology:
    """Remove demand ``L_remove`` (at most what ``topo`` carries per pair) from a split.

    A pair's requirements are taken off its highest-numbered spines first, in both directions
    alike, so a symmetric split stays symmetric; loads only fall, so (5)(6)(8) keep holding.
    Entries of ``keep`` (a split ``(a, b, h, value)``: what other jobs' admissions added, whose
    removal must find them later) are taken only when the rest of the pair's entries do not
    cover the removal.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=2, gpus_per_server=2)
    >>> t = heuristic_decomposition(np.array([[0, 4], [4, 0]]), spec)
    >>> one = np.array([[0, 1], [1, 0]])
    >>> shrink_logical_topology(t, one, spec).C[:, 0, 1].tolist()
    [2, 1]
    >>> kept = (np.array([0, 1]), np.array([1, 0]), np.array([1, 1]), np.array([2, 2]))
    >>> shrink_logical_topology(t, one, spec, keep=kept).C[:, 0, 1].tolist()  # spine 1 held
    [1, 2]
    """
    cap = topo.capacity if capacity is None else _capacity(spec, capacity)
    r, c, v = _coo(L_remove, spec)
    n, H = spec.leaves, spec.ocs_groups
    key_pair = np.minimum(topo.a, topo.b) * n + np.maximum(topo.a, topo.b)
    want = np.zeros(key_pair.size, np.int64)
    if v.size:
        pk = r * n + c
        pos = np.searchsorted(pk, key_pair)
        hit = (pos < pk.size) & (pk[np.minimum(pos, pk.size - 1)] == key_pair)
        want[hit] = v[pos[hit]]
    held = np.zeros(topo.value.size, np.int64)
    if keep is not None:
        ka, kb, kh, kv = (np.asarray(x, dtype=np.int64) for x in keep)
        key = (topo.a * n + topo.b) * H + topo.h  # (unique and sorted: see _build)
        kk = (ka * n + kb) * H + kh
        pos = np.searchsorted(key, kk)
        hit = (pos < key.size) & (key[np.minimum(pos, key.size - 1)] == kk)
        np.add.at(held, pos[hit], kv[hit])
        held = np.clip(held, 0, topo.value)
    # the entries of the pairs that lose demand, by (direction, pair, spine descending);
    # cumulative removal inside a group, from the entries not held first, then from the held
    # ones (the other entries keep their values: the work is in the pairs removed from)
    sel = np.flatnonzero(want > 0)
    direction = (topo.a[sel] > topo.b[sel]).astype(np.int64)
    by = np.lexsort((-topo.h[sel], key_pair[sel], direction))
    o = sel[by]
    grp = direction[by] * (n * n) + key_pair[o]
    start = np.r_[True, grp[1:] != grp[:-1]]
    free = (topo.value - held)[o]
    take_free = _take_in_order(free, want[o], start)
    rest = want[o] - _group_total(take_free, start)
    taken = take_free + _take_in_order(held[o], rest, start)
    value = topo.value.copy()
    value[o] -= taken
    left = value > 0  # (entries stay sorted by (a, b, h), as _build leaves them)
    P, per = spec.pods, spec.leaves_per_pod
    ta, tb, th = topo.a[o], topo.b[o], topo.h[o]
    up = topo.leaf_up - _sums_at(ta, th, taken, (n, H))
    down = topo.leaf_down - _sums_at(tb, th, taken, (n, H))
    rows = topo.spine_row_sums() - _sums_at(th, ta // per, taken, (H, P))
    # what changed at pod level (as apply_split records it), for callers comparing C
    hit = taken > 0
    keys, delta = _pod_sums(ta[hit], tb[hit], th[hit], taken[hit], P, per)
    return LogicalTopology(
        a=topo.a[left],
        b=topo.b[left],
        h=topo.h[left],
        value=value[left],
        leaf_up=up,
        leaf_down=down,
        capacity=cap,
        k_spine=spec.k_spine,
        method=topo.method,
        derived_from=topo.token,
        changed_keys=keys,
        changed_delta=-delta,
        row_sums=rows,
    )


def _group_total(vals: IntArray, start: IntArray) -> IntArray:
    """Per entry, the sum of ``vals`` over its group (groups are runs that begin at
    ``start``)."""
    if not vals.size:
        return vals
    first = np.flatnonzero(start)
    return np.repeat(np.add.reduceat(vals, first), np.diff(np.r_[first, vals.size]))


def _take_in_order(vals: IntArray, want: IntArray, start: IntArray) -> IntArray:
    """How much each entry gives when every group (runs that begin at ``start``, ``want`` the
    same on all its entries) gives ``want`` from its entries in order, each at most its
    ``vals``."""
    csum = np.cumsum(vals)
    base = np.maximum.accumulate(np.where(start, csum - vals, 0))
    before = csum - vals - base
    return np.clip(want - before, 0, vals)


def ilp_logical_topology(
    L: Any, spec: ClusterSpec, *, capacity: Any = None, time_limit_s: float = 10.0
) -> LogicalTopology:
    """Constraints (5)(6)(8) as a CP-SAT model (directed ``L_abh``, no symmetry imposed at
    the leaf level); a reference for small cases.

    Raises
    ------
    lumoscore.errors.InfeasibleError
        CP-SAT proves that no split meets (5)(6)(8).
    lumoscore.errors.SolverError
        Neither a solution nor a proof within ``time_limit_s``.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=3, k_leaf=2, k_spine=2, tau=1, gpus_per_server=1)
    >>> L = np.zeros((6, 6), np.int64)
    >>> for x, y in [(0, 2), (2, 4), (0, 4)]: L[x, y] = L[y, x] = 1
    >>> ilp_logical_topology(L, spec)   # the Fig. 12-style triangle, tau = 1
    Traceback (most recent call last):
    ...
    lumoscore.errors.InfeasibleError: logical topology: constraints (5)(6)(8) are infeasible ...
    """
    cap = _capacity(spec, capacity)
    r, c, v = _coo(L, spec)
    H, per = spec.ocs_groups, spec.leaves_per_pod
    if v.size == 0:
        return _empty(spec, cap, "ilp")
    src = np.concatenate([r, c])
    dst = np.concatenate([c, r])
    dem = np.concatenate([v, v])
    m = cp_model.CpModel()
    x = {
        (e, h): m.new_int_var(0, int(min(dem[e], cap[src[e], h], cap[dst[e], h])), f"x{e}_{h}")
        for e in range(src.size)
        for h in range(H)
    }
    for e in range(src.size):  # (5)
        m.add(sum(x[e, h] for h in range(H)) == int(dem[e]))
    for h in range(H):  # (6)
        for leaf in unique(src).tolist():
            m.add(sum(x[e, h] for e in np.flatnonzero(src == leaf).tolist()) <= int(cap[leaf, h]))
        for leaf in unique(dst).tolist():
            m.add(sum(x[e, h] for e in np.flatnonzero(dst == leaf).tolist()) <= int(cap[leaf, h]))
    ps, pd = src // per, dst // per
    for i, j in {(min(p, q), max(p, q)) for p, q in zip(ps.tolist(), pd.tolist(), strict=True)}:
        fwd = np.flatnonzero((ps == i) & (pd == j)).tolist()
        bwd = np.flatnonzero((ps == j) & (pd == i)).tolist()
        for h in range(H):  # (8)
            m.add(sum(x[e, h] for e in fwd) == sum(x[e, h] for e in bwd))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = time_limit_s
    status = solver.solve(m)
    if status == cp_model.INFEASIBLE:
        raise InfeasibleError(
            f"logical topology: constraints (5)(6)(8) are infeasible for this L with "
            f"tau={spec.tau} (CP-SAT proof)"
        )
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise SolverError(f"logical topology ILP: CP-SAT status {solver.status_name(status)}")
    eh = np.array(list(x), dtype=np.int64).reshape(-1, 2)
    val = np.array([solver.value(var) for var in x.values()], np.int64)
    return _build(src[eh[:, 0]], dst[eh[:, 0]], eh[:, 1], val, spec, cap, "ilp")


def design_logical_topology(
    L: Any, spec: ClusterSpec, *, method: str = "auto", capacity: Any = None
) -> LogicalTopology:
    """Logical topology for ``L`` by ``method`` (one of :data:`LOGICAL_METHODS`).

    ``auto``: Heuristic-Decomposition for even ``tau`` with no failed links (Theorem 4.1);
    otherwise the greedy, and when it is not contention-free the better of greedy and
    Heuristic-Decomposition (fewer links on leaf-spine pairs whose links all failed, then
    the lower peak contention, then fewer links at the peak).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=3, k_leaf=2, k_spine=2, tau=1, gpus_per_server=1)
    >>> L = np.zeros((6, 6), np.int64)
    >>> for x, y in [(0, 2), (2, 4), (0, 4)]: L[x, y] = L[y, x] = 1
    >>> design_logical_topology(L, spec).max_contention    # Theorem 4.2 fails: contention 2
    2
    """
    if method not in LOGICAL_METHODS:
        raise ConfigError(f"method: unknown {method!r}; allowed: {', '.join(LOGICAL_METHODS)}")
    if method == "heuristic":
        return heuristic_decomposition(L, spec, capacity=capacity)
    if method == "greedy":
        return greedy_spine_assignment(L, spec, capacity=capacity)
    if method == "ilp":
        return ilp_logical_topology(L, spec, capacity=capacity)
    cap = _capacity(spec, capacity)
    if spec.tau % 2 == 0 and (cap == spec.tau).all():
        return heuristic_decomposition(L, spec, capacity=cap)
    g = greedy_spine_assignment(L, spec, capacity=cap)
    if g.contention_free:
        return g
    hd = heuristic_decomposition(L, spec, capacity=cap)

    dead = cap == 0

    def badness(t: LogicalTopology) -> tuple[int, int, int]:
        lc = t.leaf_contention
        # links on a failed leaf-spine pair cannot be carried at all: worst of all
        on_dead = int(t.leaf_up[dead].sum() + t.leaf_down[dead].sum())
        return on_dead, t.max_contention, int((lc == lc.max(initial=0)).sum())

    return hd if badness(hd) < badness(g) else g


def check_logical_topology(
    L: Any, topo: LogicalTopology, spec: ClusterSpec, *, capacity: Any = None
) -> list[str]:
    """Violations of (5), (6) and (8) (empty list = all hold).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=2, k_spine=2, tau=1, gpus_per_server=1)
    >>> L = np.zeros((4, 4), np.int64); L[0, 2] = L[2, 0] = 2
    >>> check_logical_topology(L, heuristic_decomposition(L, spec), spec)
    []
    """
    cap = _capacity(spec, capacity)
    r, c, v = _coo(L, spec)
    n = spec.leaves
    msgs: list[str] = []
    want = np.zeros(n * n, np.int64)
    np.add.at(want, r * n + c, v)
    np.add.at(want, c * n + r, v)
    got = np.bincount(topo.a * n + topo.b, weights=topo.value, minlength=n * n).astype(np.int64)
    bad = np.flatnonzero(got != want)
    msgs += [
        f"(5) leaves {k // n}->{k % n}: sum_h L_abh = {got[k]}, L = {want[k]}" for k in bad[:10]
    ]
    for name, load in (("up", topo.leaf_up), ("down", topo.leaf_down)):
        over = np.argwhere(load > cap)
        msgs += [
            f"(6) leaf {a} spine {h} ({name}): {load[a, h]} requirements on {cap[a, h]} links"
            for a, h in over[:10].tolist()
        ]
    Ct = topo.C.transpose(0, 2, 1)
    asym = np.argwhere(Ct != topo.C)
    msgs += [
        f"(8) group {h}: C[{i}, {j}] = {topo.C[h, i, j]} but C[{j}, {i}] = {topo.C[h, j, i]}"
        for h, i, j in asym[:10].tolist()
        if i < j
    ]
    if (topo.C.sum(axis=2) > spec.k_spine).any():
        h, i = np.argwhere(topo.C.sum(axis=2) > spec.k_spine)[0].tolist()
        msgs.append(f"group {h} pod {i}: needs {topo.C[h, i].sum()} > k_spine={spec.k_spine}")
    return msgs


def backup_mesh(C: Any, spec: ClusterSpec, ports: Any = None) -> IntArray:
    """Backup links from idle OCS ports (LumosCore Fig. 10 caption: "we configure the
    remaining idle links to form a full-mesh backup network").

    Per group, pod pairs ``(i, i + d mod P)`` for ``d = 1, 2, ...`` get one link while both
    spines have idle ports, so with enough idle ports every pod pair is joined (full mesh).
    Returns the backup ``B`` (same shape as ``C``, symmetric); ``C + B`` is the configuration
    demand, row sums at most ``k_spine`` (or ``ports``, ``(H, P)``: every spine's working
    OCS ports).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=3, k_leaf=2, k_spine=4, tau=2, gpus_per_server=1)
    >>> backup_mesh(np.zeros((1, 3, 3), np.int64), spec)[0].tolist()
    [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    """
    Cm = np.asarray(C, dtype=np.int64)
    P = Cm.shape[1]
    free = (spec.k_spine if ports is None else np.asarray(ports)) - Cm.sum(axis=2)
    if (free < 0).any():
        raise PreconditionError("backup_mesh: C needs more ports than the spines have")
    B = np.zeros_like(Cm)
    i = np.arange(P)
    for d in range(1, P // 2 + 1):
        j = (i + d) % P
        src = i if 2 * d != P else i[: P // 2]
        dst = j if 2 * d != P else j[: P // 2]
        # each pod appears at most twice per shift: accept where both keep a spare port
        ok = (free[:, src] >= 2) & (free[:, dst] >= 2)
        ok |= (free[:, src] >= 1) & (free[:, dst] >= 1) & (2 * d == P)
        hh, kk = np.nonzero(ok)
        if hh.size == 0:
            continue
        B[hh, src[kk], dst[kk]] += 1
        B[hh, dst[kk], src[kk]] += 1
        np.subtract.at(free, (hh, src[kk]), 1)
        np.subtract.at(free, (hh, dst[kk]), 1)
    return B


def port_mesh(spec: ClusterSpec, ports: Any = None) -> IntArray:
    """A static logical topology using every OCS port: :func:`backup_mesh` passes from an
    empty topology until no spine has a port to give, so every group joins the pods as
    evenly as the ports allow (``ports``: ``(H, P)`` working ports, default ``k_spine``).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=3, k_leaf=2, k_spine=8, tau=2, gpus_per_server=1)
    >>> port_mesh(spec)[0].tolist()  # the testbed's static triangle: 4 links a pair
    [[0, 4, 4], [4, 0, 4], [4, 4, 0]]
    """
    C = np.zeros((spec.ocs_groups, spec.pods, spec.pods), np.int64)
    while True:
        B = backup_mesh(C, spec, ports)
        if not B.any():
            return C
        C += B
