"""Compiled per-flow loops of the LumosCore fabric's routing (:mod:`lumoscore.fabric.lumos`).

A route call holds a few to a few thousand flows; spread over NumPy calls, each step costs more
in call overhead than in work. These kernels do the per-flow work in one pass each:

* :func:`rank_and_count` -- rank of every element among the earlier elements of its group
  (stable order) and the group's size;
* :func:`classify_flows` -- leaves and pods of every flow, its rank and count among the
  call's flows of its leaf pair, and which flows stay in a pod or cross pods;
* :func:`intra_spines` -- the planned intra-pod spine of some flows (an edge colouring of the
  leaf-spine link units left free at both ends, repaired along alternating paths);
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
from lumoscore.jitsort import argsort, argsort_stable, unique

__all__ = [
    "classify_flows",
    "intra_spines",
    "intra_spines_free",
    "ocs_capacity_diff",
    "planned_cross_spines",
    "rank_and_count",
    "route_links",
]

IntArray = NDArray[np.int64]


@cached_jit(internal=True)
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
    order = argsort_stable(groups)
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


@cached_jit(internal=True)
def _fit_level(
    u: IntArray, v: IntArray, load_u: IntArray, load_d: IntArray, cap_u: IntArray, cap_d: IntArray
) -> int:  # pragma: no cover - jit
    """The least whole number of flows per link unit at which every leaf's flows (``u`` /
    ``v`` sending / receiving ends, plus the loads) fit its links."""
    n, H = cap_u.shape
    deg_u = np.zeros(n, np.int64)
    deg_d = np.zeros(n, np.int64)
    for q in range(u.size):
        deg_u[u[q]] += 1
        deg_d[v[q]] += 1
    level = 1
    for x in range(n):
        tu = 0
        td = 0
        for k in range(H):
            deg_u[x] += load_u[x, k]
            deg_d[x] += load_d[x, k]
            tu += cap_u[x, k]
            td += cap_d[x, k]
        if tu > 0:
            level = max(level, (deg_u[x] + tu - 1) // tu)
        if td > 0:
            level = max(level, (deg_d[x] + td - 1) // td)
    return level


@cached_jit
def intra_spines(
    idx: IntArray,
    a: IntArray,
    b: IntArray,
    rank: IntArray,
    count: IntArray,
    up: IntArray,
    down: IntArray,
    fixed: IntArray,
    fixed_h: IntArray,
    tau: int,
    leaves_per_pod: int,
) -> IntArray:  # pragma: no cover - jit
    """Spine of the intra-pod flows ``a[f] -> b[f]``, ``f`` in ``idx``: an edge colouring of
    the leaf-to-leaf multigraph with one colour per leaf-spine link unit.

    A flow takes a unit of spine ``k`` free at both ends (``up[a, k]`` free uplinks at its
    source leaf, ``down[b, k]`` at its destination, less the flows ``fixed`` that already use
    spine ``fixed_h`` there: the call's cross-pod flows), searched from the spine ``(rank +
    count * ((b - a) mod leaves_per_pod)) mod H``. When no unit is free at both ends, the
    flows on an alternating path of two units are swapped (Kempe chain) to free one; when
    that fails too, the flow takes the spine least loaded relative to its free links at both
    ends. With nothing fixed and every leaf-spine pair ``tau`` free links, every leaf
    sending and receiving at most ``H * tau`` of the flows gets them all without two on one
    link unit (Konig's edge-colouring theorem). When the fixed flows leave some leaf too few
    links, the colouring ignores them (they are often far smaller, e.g. pipeline sends beside
    data-parallel rings); when the intra-pod flows alone exceed a leaf's free links, every
    link takes ``level`` units, the least whole number of flows per link that fits them all.
    A leaf with no free link at all counts ``tau`` on every spine.

    Examples
    --------
    >>> import numpy as np
    >>> up = np.array([[1, 1], [1, 1]]); down = np.array([[0, 1], [1, 1]])
    >>> z = np.zeros(0, np.int64)
    >>> intra_spines(np.arange(2), np.array([1, 1]), np.array([0, 0]), np.array([0, 1]),
    ...              np.array([2, 2]), up, down, z, z, 2, 2).tolist()   # leaf 0 receives on spine 1
    [1, 1]
    """
    leaves = _flow_leaves(idx, a, b)
    free_u = np.empty((leaves.size, up.shape[1]), np.int64)
    free_d = np.empty((leaves.size, up.shape[1]), np.int64)
    for x in range(leaves.size):
        free_u[x] = up[leaves[x]]
        free_d[x] = down[leaves[x]]
    return _colour(idx, a, b, rank, count, leaves, free_u, free_d, fixed, fixed_h, tau,
                   leaves_per_pod)  # fmt: skip


@cached_jit
def intra_spines_free(
    idx: IntArray,
    a: IntArray,
    b: IntArray,
    rank: IntArray,
    count: IntArray,
    failed: IntArray,
    leaf_up: IntArray,
    leaf_down: IntArray,
    own: tuple[IntArray, IntArray, IntArray, IntArray],
    fixed: IntArray,
    fixed_h: IntArray,
    tau: int,
    leaves_per_pod: int,
) -> IntArray:  # pragma: no cover - jit
    """:func:`intra_spines` with the free units of the flows' leaves computed here, for
    those leaves only: each leaf-spine pair's ``tau - failed`` working links less the
    requirements of the other jobs' cross-pod split there (``leaf_up``, ``leaf_down``:
    every job's, ``(leaves, H)``, less the job's own split ``own = (a, b, h, value)``),
    none below zero.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros(0, np.int64)
    >>> used = np.array([[0, 0], [2, 0]])              # another job uses leaf 1's spine 0
    >>> intra_spines_free(np.arange(2), np.array([1, 1]), np.array([0, 0]), np.array([0, 1]),
    ...                   np.array([2, 2]), 0 * used, used, 0 * used, (z, z, z, z), z, z, 2,
    ...                   2).tolist()                  # leaf 1 sends on spine 1
    [1, 1]
    """
    leaves = _flow_leaves(idx, a, b)
    n, H = leaves.size, leaf_up.shape[1]
    own_u = np.zeros((n, H), np.int64)
    own_d = np.zeros((n, H), np.int64)
    oa, ob, oh, ov = own
    for e in range(oa.size):
        x = np.searchsorted(leaves, oa[e])
        if x < n and leaves[x] == oa[e]:
            own_u[x, oh[e]] += ov[e]
        y = np.searchsorted(leaves, ob[e])
        if y < n and leaves[y] == ob[e]:
            own_d[y, oh[e]] += ov[e]
    free_u = np.empty((n, H), np.int64)
    free_d = np.empty((n, H), np.int64)
    for x in range(n):
        lf = leaves[x]
        for k in range(H):
            cap = tau - failed[lf, k]
            free_u[x, k] = max(cap - max(leaf_up[lf, k] - own_u[x, k], 0), 0)
            free_d[x, k] = max(cap - max(leaf_down[lf, k] - own_d[x, k], 0), 0)
    return _colour(idx, a, b, rank, count, leaves, free_u, free_d, fixed, fixed_h, tau,
                   leaves_per_pod)  # fmt: skip


@cached_jit(internal=True)
def _flow_leaves(idx: IntArray, a: IntArray, b: IntArray) -> IntArray:  # pragma: no cover
    """The leaves the flows ``idx`` (``a[f] -> b[f]``) start or end at, ascending."""
    F = idx.size
    ends = np.empty(2 * F, np.int64)
    for q in range(F):
        ends[q] = a[idx[q]]
        ends[F + q] = b[idx[q]]
    return unique(ends)


@cached_jit(internal=True)
def _colour(
    idx: IntArray,
    a: IntArray,
    b: IntArray,
    rank: IntArray,
    count: IntArray,
    leaves: IntArray,
    free_u: IntArray,
    free_d: IntArray,
    fixed: IntArray,
    fixed_h: IntArray,
    tau: int,
    leaves_per_pod: int,
) -> IntArray:  # pragma: no cover - jit
    """The colouring of :func:`intra_spines` given the free units ``free_u``, ``free_d``
    (``(len(leaves), H)``) of the flows' leaves ``leaves`` (ascending)."""
    H = free_u.shape[1]
    T = max(tau, 1)
    C = H * T
    F = idx.size
    out = np.empty(F, np.int64)
    if F == 0:
        return out
    n = leaves.size
    u = np.searchsorted(leaves, a[idx])
    v = np.searchsorted(leaves, b[idx])
    # free units per local leaf and spine, up (sending) and down (receiving); a leaf with
    # no free link at all counts tau on every spine
    cap_u = np.empty((n, H), np.int64)
    cap_d = np.empty((n, H), np.int64)
    for x in range(n):
        su = 0
        sd = 0
        for k in range(H):
            su += free_u[x, k]
            sd += free_d[x, k]
        for k in range(H):
            cap_u[x, k] = free_u[x, k] if su > 0 else T
            cap_d[x, k] = free_d[x, k] if sd > 0 else T
    load_u = np.zeros((n, H), np.int64)  # fixed, coloured and overflowing flows
    load_d = np.zeros((n, H), np.int64)
    for i in range(fixed.size):
        f = fixed[i]
        x = np.searchsorted(leaves, a[f])
        if x < n and leaves[x] == a[f]:
            load_u[x, fixed_h[i]] += 1
        y = np.searchsorted(leaves, b[f])
        if y < n and leaves[y] == b[f]:
            load_d[y, fixed_h[i]] += 1
    # the least whole number of flows per link at which every leaf's flows fit its links;
    # when the fixed flows make some leaf overflow, the intra-pod flows are kept apart from
    # each other only (the fixed ones are often far smaller)
    level = _fit_level(u, v, load_u, load_d, cap_u, cap_d)
    if level > 1:
        load_u[:] = 0
        load_d[:] = 0
        level = _fit_level(u, v, load_u, load_d, cap_u, cap_d)
    if level > 1:
        T *= level
        C = H * T
        for x in range(cap_u.shape[0]):
            for k in range(cap_u.shape[1]):
                cap_u[x, k] *= level
                cap_d[x, k] *= level
    # unit c = k * T + j of spine k is usable at a leaf when j < free links (cap - fixed)
    free_u = np.empty((n, H), np.int64)
    free_d = np.empty((n, H), np.int64)
    for x in range(n):
        for k in range(H):
            free_u[x, k] = max(cap_u[x, k] - load_u[x, k], 0)
            free_d[x, k] = max(cap_d[x, k] - load_d[x, k], 0)
    at_u = np.full((n, C), -1, np.int64)  # flow (q) holding unit c at a leaf, or -1
    at_d = np.full((n, C), -1, np.int64)
    colour = np.full(F, -1, np.int64)
    path = np.empty(F, np.int64)
    for q in range(F):
        x = u[q]
        y = v[q]
        f = idx[q]
        s0 = (rank[f] + count[f] * ((b[f] - a[f]) % leaves_per_pod)) % H
        pick = -1
        alpha = -1
        beta = -1
        for s in range(C):
            c = (s0 * T + s) % C
            k = c // T
            j = c % T
            ok_u = j < free_u[x, k] and at_u[x, c] < 0
            ok_d = j < free_d[y, k] and at_d[y, c] < 0
            if ok_u and ok_d:
                pick = c
                break
            if alpha < 0 and ok_u and j < free_d[y, k]:
                alpha = c  # free at the source, held by a flow at the destination
            if beta < 0 and ok_d:
                beta = c
        if pick < 0 and alpha >= 0 and beta >= 0:
            # the alpha/beta path from the destination: its flows swap alpha and beta
            m = 0
            z = y
            down_side = True
            c_from = alpha
            c_to = beta
            ok = False
            while m < F:
                e = at_d[z, c_from] if down_side else at_u[z, c_from]
                if e < 0:
                    ok = True
                    break
                w = u[e] if down_side else v[e]  # the flow's other end needs c_to there
                kk = c_to // T
                jj = c_to % T
                if down_side:
                    if jj >= free_u[w, kk]:
                        break
                elif jj >= free_d[w, kk]:
                    break
                path[m] = e
                m += 1
                z = w
                down_side = not down_side
                c_from, c_to = c_to, c_from
            if ok:
                for i in range(m):
                    e = path[i]
                    at_u[u[e], colour[e]] = -1
                    at_d[v[e], colour[e]] = -1
                for i in range(m):
                    e = path[i]
                    c = beta if colour[e] == alpha else alpha
                    load_u[u[e], colour[e] // T] -= 1  # (the loads follow the flow's spine)
                    load_d[v[e], colour[e] // T] -= 1
                    load_u[u[e], c // T] += 1
                    load_d[v[e], c // T] += 1
                    colour[e] = c
                    at_u[u[e], c] = e
                    at_d[v[e], c] = e
                pick = alpha
        if pick >= 0:
            colour[q] = pick
            at_u[x, pick] = q
            at_d[y, pick] = q
            k = pick // T
        else:  # overflow: the spine least loaded relative to its links at both ends
            best = np.inf
            k = s0
            for s in range(H):
                kk = (s0 + s) % H
                ru = (load_u[x, kk] + 1) / cap_u[x, kk] if cap_u[x, kk] > 0 else np.inf
                rd = (load_d[y, kk] + 1) / cap_d[y, kk] if cap_d[y, kk] > 0 else np.inf
                r = max(ru, rd)
                if r < best:
                    best = r
                    k = kk
        load_u[x, k] += 1
        load_d[y, k] += 1
        out[q] = k
    for q in range(F):
        if colour[q] >= 0:
            out[q] = colour[q] // T
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


@cached_jit
def ocs_capacity_diff(
    circuits: IntArray,
    capacity_bps: NDArray[np.float64],
    P: int,
    port_bps: float,
    support: IntArray,
    count: IntArray,
    seen: NDArray[np.bool_],
) -> tuple[IntArray, NDArray[np.float64]]:  # pragma: no cover - jit
    """OCS links (offsets into the ``(H, P, P)`` block) whose capacity ``capacity_bps``
    differs from the circuits ``(n, 6)`` times ``port_bps``, in ascending order, and their new
    capacities. Only the circuits' links and ``support`` (a superset of the links of non-zero
    capacity, in any order) can differ, so the work is in their number, not in ``H P^2``.
    ``count`` and ``seen`` (``H P^2`` entries, zero / False) are scratch, kept by the caller
    between calls and cleared again on return.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([[0, 0, 0, 0, 1, 0], [0, 1, 1, 0, 0, 0]])
    >>> cap = np.zeros(4); cap[3] = 5.0
    >>> idx, new = ocs_capacity_diff(c, cap, 2, 10.0, np.array([3]), np.zeros(4, np.int64),
    ...                              np.zeros(4, np.bool_))
    >>> idx.tolist(), new.tolist()
    ([1, 2, 3], [10.0, 10.0, 0.0])
    """
    n = circuits.shape[0]
    keys = np.empty(n + support.size, np.int64)
    for r in range(n):
        k = (circuits[r, 0] * P + circuits[r, 2]) * P + circuits[r, 4]
        count[k] += 1
        keys[r] = k
    for s in range(support.size):
        keys[n + s] = support[s]
    idx = np.empty(keys.size, np.int64)
    cap = np.empty(keys.size, np.float64)
    o = 0
    for q in range(keys.size):
        k = keys[q]
        if seen[k]:
            continue
        seen[k] = True
        new = count[k] * port_bps
        if new != capacity_bps[k]:
            idx[o] = k
            cap[o] = new
            o += 1
    for q in range(keys.size):
        count[keys[q]] = 0
        seen[keys[q]] = False
    order = argsort(idx[:o])
    return idx[:o][order], cap[:o][order]


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
