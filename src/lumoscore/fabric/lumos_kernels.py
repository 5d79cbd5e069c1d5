"""Compiled per-flow loops of the LumosCore fabric's routing (:mod:`lumoscore.fabric.lumos`).

A route call holds a few to a few thousand flows; spread over NumPy calls, each step costs more
in call overhead than in work. These kernels do the per-flow work in one pass each, with the
same integer arithmetic as the NumPy formulation they replace (so routes are unchanged):

* :func:`rank_and_count` -- rank of every element among the earlier elements of its group
  (stable order) and the group's size;
* :func:`classify_flows` -- leaves and pods of every flow, its rank and count among the
  call's flows of its leaf pair, and which flows stay in a pod or cross pods;
* :func:`intra_spines` -- the planned intra-pod spine of some flows (weighted round-robin over
  the leaf-spine links left free at both ends, from a per-pair offset);
* :func:`route_links` -- the CSR links of every flow from its leaves, pods, spine and
  intermediate pod.

Examples
--------
>>> import numpy as np
>>> r, c = rank_and_count(np.array([4, 2, 4, 4, 2]))
>>> r.tolist(), c.tolist()
([0, 0, 1, 2, 1], [3, 2, 3, 3, 2])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit

__all__ = [
    "classify_flows",
    "diff_scratch",
    "intra_spines",
    "ocs_capacity_diff",
    "planned_cross_spines",
    "rank_and_count",
    "route_links",
]

IntArray = NDArray[np.int64]


@cached_jit
def rank_and_count(groups: IntArray) -> tuple[IntArray, IntArray]:  # pragma: no cover - jit
    """How many earlier elements share each element's group, and the group's size.

    The rank is :func:`lumoscore.fabric.routing.rank_within_groups` (stable order).

    Examples
    --------
    >>> import numpy as np
    >>> [x.tolist() for x in rank_and_count(np.array([7, 7, 1]))]
    [[0, 1, 0], [2, 2, 1]]
    """
    n = groups.size
    order = np.argsort(groups, kind="mergesort")
    rank = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    start = 0
    while start < n:
        g = groups[order[start]]
        end = start + 1
        while end < n and groups[order[end]] == g:
            end += 1
        for k in range(start, end):
            rank[order[k]] = k - start
            count[order[k]] = end - start
        start = end
    return rank, count


@cached_jit
def classify_flows(
    src: IntArray, dst: IntArray, k_leaf: int, leaves_per_pod: int, leaves: int
) -> tuple[
    IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray
]:  # pragma: no cover - jit
    """``(a, b, pa, pb, rank, count, intra, cross)``: source and destination leaf and pod of
    every flow, its :func:`rank_and_count` among the flows of its leaf pair (flows inside one
    leaf form one group), and the indices of the intra-pod (two leaves) and cross-pod flows.

    Examples
    --------
    >>> import numpy as np
    >>> out = classify_flows(np.array([0, 0, 1]), np.array([2, 4, 3]), 1, 2, 8)
    >>> [x.tolist() for x in out[4:]]
    [[0, 0, 0], [1, 1, 1], [], [0, 1, 2]]
    """
    F = src.size
    a = np.empty(F, np.int64)
    b = np.empty(F, np.int64)
    pa = np.empty(F, np.int64)
    pb = np.empty(F, np.int64)
    group = np.empty(F, np.int64)
    n_intra = 0
    for f in range(F):
        a[f] = src[f] // k_leaf
        b[f] = dst[f] // k_leaf
        pa[f] = a[f] // leaves_per_pod
        pb[f] = b[f] // leaves_per_pod
        group[f] = -1 if a[f] == b[f] else a[f] * leaves + b[f]
        if pa[f] == pb[f] and a[f] != b[f]:
            n_intra += 1
    n_cross = 0
    for f in range(F):
        if pa[f] != pb[f]:
            n_cross += 1
    intra = np.empty(n_intra, np.int64)
    cross = np.empty(n_cross, np.int64)
    i = 0
    c = 0
    for f in range(F):
        if pa[f] != pb[f]:
            cross[c] = f
            c += 1
        elif a[f] != b[f]:
            intra[i] = f
            i += 1
    rank, count = rank_and_count(group)
    return a, b, pa, pb, rank, count, intra, cross


@cached_jit
def intra_spines(
    idx: IntArray,
    a: IntArray,
    b: IntArray,
    rank: IntArray,
    count: IntArray,
    up: IntArray,
    down: IntArray,
    tau: int,
    leaves_per_pod: int,
) -> IntArray:  # pragma: no cover - jit
    """Spine of the intra-pod flows ``a[f] -> b[f]``, ``f`` in ``idx``: unit ``rank + count *
    ((b - a) mod leaves_per_pod)`` (cyclically) of the weights ``min(up[a], down[b])`` per
    spine, or of ``tau`` on every spine when no link is free at both ends.

    Examples
    --------
    >>> import numpy as np
    >>> up = np.array([[1, 1], [1, 1]]); down = np.array([[0, 1], [1, 1]])
    >>> intra_spines(np.arange(2), np.array([1, 1]), np.array([0, 0]), np.array([0, 1]),
    ...              np.array([2, 2]), up, down, 2, 2).tolist()   # leaf 0 receives on spine 1
    [1, 1]
    """
    H = up.shape[1]
    out = np.empty(idx.size, np.int64)
    w = np.empty(H, np.int64)
    for q in range(idx.size):
        f = idx[q]
        total = 0
        for k in range(H):
            x = min(up[a[f], k], down[b[f], k])
            w[k] = x
            total += x
        if total == 0:
            for k in range(H):
                w[k] = tau
            total = tau * H
        pos = (rank[f] + count[f] * ((b[f] - a[f]) % leaves_per_pod)) % total
        cum = 0
        h = 0
        for k in range(H):
            cum += w[k]
            if cum > pos:
                h = k
                break
        out[q] = h
    return out


@cached_jit
def route_links(
    src: IntArray,
    dst: IntArray,
    a: IntArray,
    b: IntArray,
    pa: IntArray,
    pb: IntArray,
    h: IntArray,
    via: IntArray,
    gpus: int,
    off_leaf_up: int,
    off_leaf_down: int,
    off_ocs: int,
    H: int,
    P: int,
) -> tuple[IntArray, IntArray]:  # pragma: no cover - jit
    """CSR ``(indptr, indices)`` of the routes (link numbering of
    :class:`~lumoscore.fabric.lumos.LumosCoreFabric`): NIC up, then for a cross-leaf flow
    leaf -> spine ``h``, the OCS link(s) of a cross-pod flow (through pod ``via >= 0`` for two
    hops), spine -> leaf, then NIC down.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros(1, np.int64)
    >>> route_links(z, z + 5, z, z + 1, z, z, z, z - 1, 8, 16, 20, 24, 1, 1)[1].tolist()
    [0, 16, 21, 13]
    """
    F = src.size
    hops = np.empty(F, np.int64)
    n_links = 0
    for f in range(F):
        if a[f] == b[f]:
            k = 2
        elif pa[f] == pb[f]:
            k = 4
        elif via[f] >= 0:
            k = 6
        else:
            k = 5
        hops[f] = k
        n_links += k
    indptr = np.empty(F + 1, np.int64)
    indices = np.empty(n_links, np.int64)
    indptr[0] = 0
    o = 0
    for f in range(F):
        indices[o] = src[f]
        o += 1
        if hops[f] > 2:
            indices[o] = off_leaf_up + a[f] * H + h[f]
            o += 1
            if hops[f] == 6:
                indices[o] = off_ocs + (h[f] * P + pa[f]) * P + via[f]
                indices[o + 1] = off_ocs + (h[f] * P + via[f]) * P + pb[f]
                o += 2
            elif hops[f] == 5:
                indices[o] = off_ocs + (h[f] * P + pa[f]) * P + pb[f]
                o += 1
            indices[o] = off_leaf_down + b[f] * H + h[f]
            o += 1
        indices[o] = gpus + dst[f]
        o += 1
        indptr[f + 1] = o
    return indptr, indices


def ocs_capacity_diff(
    circuits: IntArray,
    capacity_bps: NDArray[np.float64],
    H: int,
    P: int,
    port_bps: float,
    scratch: tuple[IntArray, IntArray, NDArray[np.float64]] | None = None,
) -> tuple[IntArray, NDArray[np.float64]]:
    """OCS links (offsets into the ``(H, P, P)`` block) whose capacity differs from the
    circuits ``(n, 6)`` times ``port_bps``, and their new capacities.

    ``scratch`` (:func:`diff_scratch`), kept by the caller between calls, saves allocating
    and clearing three arrays of ``H P^2`` entries per call (its counts are zero again on
    return).

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([[0, 0, 0, 0, 1, 0], [0, 1, 1, 0, 0, 0]])
    >>> idx, cap = ocs_capacity_diff(c, np.zeros(4), 1, 2, 10.0)
    >>> idx.tolist(), cap.tolist()
    ([1, 2], [10.0, 10.0])
    """
    if scratch is None:
        scratch = diff_scratch(H * P * P)
    return _capacity_diff(circuits, capacity_bps, P, port_bps, *scratch)


def diff_scratch(size: int) -> tuple[IntArray, IntArray, NDArray[np.float64]]:
    """Scratch of :func:`ocs_capacity_diff` for ``size`` OCS links: circuit counts (all
    zero), link numbers, capacities."""
    return np.zeros(size, np.int64), np.empty(size, np.int64), np.empty(size, np.float64)


@cached_jit
def _capacity_diff(
    circuits: IntArray,
    capacity_bps: NDArray[np.float64],
    P: int,
    port_bps: float,
    count: IntArray,
    idx: IntArray,
    cap: NDArray[np.float64],
) -> tuple[IntArray, NDArray[np.float64]]:  # pragma: no cover - jit
    """:func:`ocs_capacity_diff` into the scratch ``count`` (zero on entry and on exit),
    ``idx`` and ``cap``."""
    for r in range(circuits.shape[0]):
        count[(circuits[r, 0] * P + circuits[r, 2]) * P + circuits[r, 4]] += 1
    o = 0
    for k in range(count.size):
        new = count[k] * port_bps
        if new != capacity_bps[k]:
            idx[o] = k
            cap[o] = new
            o += 1
    for r in range(circuits.shape[0]):
        count[(circuits[r, 0] * P + circuits[r, 2]) * P + circuits[r, 4]] = 0
    return idx[:o].copy(), cap[:o].copy()


@cached_jit
def planned_cross_spines(
    a: IntArray,
    b: IntArray,
    pa: IntArray,
    pb: IntArray,
    rank: IntArray,
    ocs_bps: NDArray[np.float64],
    keys: IntArray,
    vals: IntArray,
    leaves: int,
    H: int,
    P: int,
) -> tuple[IntArray, bool]:  # pragma: no cover - jit
    """Planned OCS group of every cross-pod flow ``a -> b`` (pods ``pa -> pb``): unit
    ``rank`` (cyclically) of the job's split of the leaf pair (``keys`` ``(a leaves + b) H +
    h``, sorted and distinct, and ``vals``) over the groups with a circuit ``pa -> pb``
    (``ocs_bps > 0``, ``(H, P, P)`` flat), or of those groups when the split gives none.
    The flag is False (and the groups meaningless) when some flow's pods have no circuit.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros(2, np.int64)
    >>> bps = np.array([0, 1, 0, 0, 0, 1, 0, 0.0])   # groups 0 and 1 join pod 0 to pod 1
    >>> h, ok = planned_cross_spines(z, z + 1, z, z + 1, np.arange(2), bps,
    ...                              np.array([3]), np.array([1]), 2, 2, 2)
    >>> h.tolist(), ok      # the split has one unit on group 1 for leaves 0 -> 1
    ([1, 1], True)
    """
    F = a.size
    out = np.zeros(F, np.int64)
    w = np.empty(H, np.int64)
    avail = np.empty(H, np.int64)
    n_keys = keys.size
    for f in range(F):
        n_avail = 0
        for k in range(H):
            avail[k] = 1 if ocs_bps[(k * P + pa[f]) * P + pb[f]] > 0 else 0
            n_avail += avail[k]
        if n_avail == 0:
            return out, False
        base = (a[f] * leaves + b[f]) * H
        p = np.searchsorted(keys, base) if n_keys else 0
        total = 0
        for k in range(H):
            x = 0
            if p < n_keys and keys[p] == base + k:
                x = vals[p]
                p += 1
            w[k] = x * avail[k]
            total += w[k]
        if total == 0:
            for k in range(H):
                w[k] = avail[k]
            total = n_avail
        pos = rank[f] % total
        cum = 0
        for k in range(H):
            cum += w[k]
            if cum > pos:
                out[f] = k
                break
    return out, True
