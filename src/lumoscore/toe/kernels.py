"""Compiled network builders of the ToE's min-cost flows (:mod:`lumoscore.toe.mdmcf`).

The flows themselves are solved by OR-Tools; building their arc arrays took many small NumPy
calls per sub-problem batch. These kernels build the same arrays (same arcs, same order) in
one pass:

* :func:`two_channel_network` -- the bounded circulation of a batch of two-channel splits
  (Cross Wiring Appendix D.2, see :func:`~lumoscore.toe.mdmcf.two_channel_split`).

Examples
--------
>>> import numpy as np
>>> z = np.zeros(2, dtype=np.int64)
>>> lo, hi = np.zeros((1, 2), dtype=np.int64), np.ones((1, 2), dtype=np.int64)
>>> t, h, cap, cost, supply = two_channel_network(
...     z, np.array([0, 1]), np.array([1, 0]), np.array([1, 1]), np.array([0, 1]),
...     np.array([1, 0]), lo, hi, lo, hi)
>>> len(t), cost.tolist()[:6], supply.tolist()
(11, [-1, -1, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit
from lumoscore.jitsort import argsort_stable

__all__ = [
    "assemble_links",
    "forward_links",
    "split_children",
    "split_level",
    "two_channel_network",
]

IntArray = NDArray[np.int64]


@cached_jit
def two_channel_network(
    sub: IntArray,
    i: IntArray,
    j: IntArray,
    a: IntArray,
    u1: IntArray,
    u2: IntArray,
    row_lo: IntArray,
    row_hi: IntArray,
    col_lo: IntArray,
    col_hi: IntArray,
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:  # pragma: no cover - jit
    """Arcs ``(tails, heads, capacities, unit costs)`` and node supplies of the two-channel
    circulation of every sub-problem (nodes of sub-problem ``s``: rows ``s * (2P + 2) + [0,
    P)``, columns ``+ [P, 2P)``, source, sink).

    Arcs: the three linear pieces of every entry (costs -1, 0, +1), source -> row for rows
    with ``row_hi > 0`` and column -> sink for columns with ``col_hi > 0`` (capacity ``hi -
    lo``), sink -> source (capacity: the sub-problem's total); the lower bounds are moved into
    the supplies.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, np.int64)
    >>> lo, hi = np.zeros((1, 2), np.int64), np.full((1, 2), 2, np.int64)
    >>> out = two_channel_network(0 * one, 0 * one, one, 2 * one, one, 0 * one, lo, hi, lo, hi)
    >>> out[2].tolist()   # pieces (1, 1, 0), two row arcs, two column arcs, the total
    [1, 1, 0, 2, 2, 2, 2, 2]
    """
    m, P = row_lo.shape
    width = 2 * P + 2
    n = a.size
    n_r = 0
    n_c = 0
    for s in range(m):
        for p in range(P):
            if row_hi[s, p] > 0:
                n_r += 1
            if col_hi[s, p] > 0:
                n_c += 1
    n_arcs = 3 * n + n_r + n_c + m
    t = np.empty(n_arcs, np.int64)
    h = np.empty(n_arcs, np.int64)
    cp = np.empty(n_arcs, np.int64)
    cs = np.zeros(n_arcs, np.int64)
    total = np.zeros(m, np.int64)
    for e in range(n):
        ae = a[e]
        p = min(max(u1[e], 0), ae)
        q = min(max(ae - u2[e], 0), ae)
        b1, b2 = min(p, q), max(p, q)
        tail = sub[e] * width + i[e]
        head = sub[e] * width + P + j[e]
        for k in range(3):
            t[k * n + e] = tail
            h[k * n + e] = head
        cp[e] = b1
        cp[n + e] = b2 - b1
        cp[2 * n + e] = ae - b2
        cs[e] = -1
        cs[2 * n + e] = 1
        total[sub[e]] += ae
    o = 3 * n
    for s in range(m):
        for p in range(P):
            if row_hi[s, p] > 0:
                t[o] = s * width + 2 * P
                h[o] = s * width + p
                cp[o] = row_hi[s, p] - row_lo[s, p]
                o += 1
    for s in range(m):
        for p in range(P):
            if col_hi[s, p] > 0:
                t[o] = s * width + P + p
                h[o] = s * width + 2 * P + 1
                cp[o] = col_hi[s, p] - col_lo[s, p]
                o += 1
    supplies = np.zeros(m * width, np.int64)
    for s in range(m):
        src = s * width + 2 * P
        t[o] = src + 1
        h[o] = src
        cp[o] = total[s]
        o += 1
        r_sum = 0
        c_sum = 0
        for p in range(P):
            supplies[s * width + p] = row_lo[s, p]
            supplies[s * width + P + p] = -col_lo[s, p]
            r_sum += row_lo[s, p]
            c_sum += col_lo[s, p]
        supplies[src] = -r_sum
        supplies[src + 1] = c_sum
    return t, h, cp, cs, supplies


@cached_jit
def split_level(
    e_sub: IntArray,
    e_i: IntArray,
    e_j: IntArray,
    e_a: IntArray,
    e_o: IntArray,
    sub_h: IntArray,
    sub_lo: IntArray,
    sub_hi: IntArray,
    c_cum: IntArray,
    u_cum: IntArray,
    halves: bool,
):  # type: ignore[no-untyped-def]  # pragma: no cover - jit
    """One depth of the merge-decomposition recursion
    (:func:`~lumoscore.toe.mdmcf.split_entries`) up to its two-channel flow.

    Entries ``(e_sub, e_i, e_j, e_a)`` of sub-problems ``(sub_h, sub_lo, sub_hi)`` (group,
    channel range); ``e_o`` indexes ``u_cum`` (current circuits cumulated over the channels),
    ``c_cum`` the ports cumulated over the channels. Returns

    * ``leaf``: ``(h, channel, i, j, value)`` of the entries whose sub-problem has one channel
      left (in entry order);
    * the other entries ``(sub, i, j, a, o)``, their sub-problems renumbered in order (those
      without entries dropped) and those sub-problems ``(h, lo, hi, mid)`` (``mid``: the split
      point, halves or one channel against the rest);
    * the two-channel problem: current circuits ``u1, u2`` of every entry in the two halves
      and the ``(lo, hi)`` bounds ``(m, P)`` of the units each row and column puts in the
      first half.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.zeros(1, np.int64)
    >>> c_cum = np.zeros((1, 3, 2, 2), np.int64); c_cum[0, 1:] = [1, 2]
    >>> out = split_level(one, one, one + 1, one + 1, one, one, one, one + 2, c_cum,
    ...                   np.zeros((1, 3), np.int64), True)
    >>> out[0][0].size, out[1][0].tolist(), out[2][3].tolist()   # no leaf; split at channel 1
    (0, [0], [1])
    """
    n = e_sub.size
    m_old = sub_h.size
    n_chan1 = u_cum.shape[1]
    P = c_cum.shape[3]
    n_leaf = 0
    for e in range(n):
        if sub_hi[e_sub[e]] - sub_lo[e_sub[e]] == 1:
            n_leaf += 1
    lh = np.empty(n_leaf, np.int64)
    lc = np.empty(n_leaf, np.int64)
    li = np.empty(n_leaf, np.int64)
    lj = np.empty(n_leaf, np.int64)
    lv = np.empty(n_leaf, np.int64)
    k = n - n_leaf
    r_sub = np.empty(k, np.int64)
    r_i = np.empty(k, np.int64)
    r_j = np.empty(k, np.int64)
    r_a = np.empty(k, np.int64)
    r_o = np.empty(k, np.int64)
    has = np.zeros(m_old, np.bool_)
    q = 0
    w = 0
    for e in range(n):
        s = e_sub[e]
        if sub_hi[s] - sub_lo[s] == 1:
            lh[q] = sub_h[s]
            lc[q] = sub_lo[s]
            li[q] = e_i[e]
            lj[q] = e_j[e]
            lv[q] = e_a[e]
            q += 1
        else:
            r_sub[w] = s
            r_i[w] = e_i[e]
            r_j[w] = e_j[e]
            r_a[w] = e_a[e]
            r_o[w] = e_o[e]
            has[s] = True
            w += 1
    remap = np.full(m_old, -1, np.int64)
    m = 0
    for s in range(m_old):
        if has[s]:
            remap[s] = m
            m += 1
    s_h = np.empty(m, np.int64)
    s_lo = np.empty(m, np.int64)
    s_hi = np.empty(m, np.int64)
    s_mid = np.empty(m, np.int64)
    for s in range(m_old):
        t = remap[s]
        if t >= 0:
            s_h[t] = sub_h[s]
            s_lo[t] = sub_lo[s]
            s_hi[t] = sub_hi[s]
            s_mid[t] = sub_lo[s] + (sub_hi[s] - sub_lo[s]) // 2 if halves else sub_lo[s] + 1
    R = np.zeros((m, P), np.int64)
    S = np.zeros((m, P), np.int64)
    u1 = np.empty(k, np.int64)
    u2 = np.empty(k, np.int64)
    for e in range(k):
        s = remap[r_sub[e]]
        r_sub[e] = s
        R[s, r_i[e]] += r_a[e]
        S[s, r_j[e]] += r_a[e]
        o = r_o[e]
        lo_, mid_, hi_ = s_lo[s], s_mid[s], s_hi[s]
        if hi_ >= n_chan1 or lo_ < 0:
            raise IndexError("split_level: channel range out of bounds")
        u1[e] = u_cum[o, mid_] - u_cum[o, lo_]
        u2[e] = u_cum[o, hi_] - u_cum[o, mid_]
    row_lo = np.empty((m, P), np.int64)
    row_hi = np.empty((m, P), np.int64)
    col_lo = np.empty((m, P), np.int64)
    col_hi = np.empty((m, P), np.int64)
    for s in range(m):
        h, lo_, mid_, hi_ = s_h[s], s_lo[s], s_mid[s], s_hi[s]
        for p in range(P):
            g1_f = c_cum[h, mid_, 0, p] - c_cum[h, lo_, 0, p]
            g2_f = c_cum[h, hi_, 0, p] - c_cum[h, mid_, 0, p]
            g1_b = c_cum[h, mid_, 1, p] - c_cum[h, lo_, 1, p]
            g2_b = c_cum[h, hi_, 1, p] - c_cum[h, mid_, 1, p]
            row_lo[s, p] = max(R[s, p] - g2_f, 0)
            row_hi[s, p] = min(g1_f, R[s, p])
            col_lo[s, p] = max(S[s, p] - g2_b, 0)
            col_hi[s, p] = min(g1_b, S[s, p])
    return (
        (lh, lc, li, lj, lv),
        (r_sub, r_i, r_j, r_a, r_o),
        (s_h, s_lo, s_hi, s_mid),
        (u1, u2, row_lo, row_hi, col_lo, col_hi),
    )


@cached_jit
def split_children(
    e_sub: IntArray,
    e_i: IntArray,
    e_j: IntArray,
    e_a: IntArray,
    e_o: IntArray,
    x1: IntArray,
    s_h: IntArray,
    s_lo: IntArray,
    s_hi: IntArray,
    s_mid: IntArray,
):  # type: ignore[no-untyped-def]  # pragma: no cover - jit
    """The entries and sub-problems of the next depth after a two-channel split: sub-problem
    ``s`` becomes ``2 s`` (channels ``[lo, mid)``, units ``x1``) and ``2 s + 1`` (``[mid,
    hi)``, the rest); the entries with units in the first half come first (in order), then
    those with units in the second half.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros(1, np.int64)
    >>> out = split_children(z, z, z + 1, z + 3, z, z + 1, z, z, z + 2, z + 1)
    >>> out[0][0].tolist(), out[0][3].tolist(), out[1][1].tolist(), out[1][2].tolist()
    ([0, 1], [1, 2], [0, 1], [1, 2])
    """
    n = e_sub.size
    k = 0
    for e in range(n):
        if x1[e] > 0:
            k += 1
        if e_a[e] - x1[e] > 0:
            k += 1
    c_sub = np.empty(k, np.int64)
    c_i = np.empty(k, np.int64)
    c_j = np.empty(k, np.int64)
    c_a = np.empty(k, np.int64)
    c_o = np.empty(k, np.int64)
    w = 0
    for half in range(2):
        for e in range(n):
            v = x1[e] if half == 0 else e_a[e] - x1[e]
            if v > 0:
                c_sub[w] = 2 * e_sub[e] + half
                c_i[w] = e_i[e]
                c_j[w] = e_j[e]
                c_a[w] = v
                c_o[w] = e_o[e]
                w += 1
    m = s_h.size
    n_h = np.empty(2 * m, np.int64)
    n_lo = np.empty(2 * m, np.int64)
    n_hi = np.empty(2 * m, np.int64)
    for s in range(m):
        n_h[2 * s] = s_h[s]
        n_h[2 * s + 1] = s_h[s]
        n_lo[2 * s] = s_lo[s]
        n_hi[2 * s] = s_mid[s]
        n_lo[2 * s + 1] = s_mid[s]
        n_hi[2 * s + 1] = s_hi[s]
    return (c_sub, c_i, c_j, c_a, c_o), (n_h, n_lo, n_hi)


@cached_jit
def assemble_links(
    keys: IntArray,
    vals: IntArray,
    cur: IntArray,
    channel: IntArray,
    side: IntArray,
    chan_self: NDArray[np.bool_],
    dead: NDArray[np.bool_],
    P: int,
    K: int,
) -> tuple[IntArray, int]:  # pragma: no cover - jit
    """Links ``[h, channel, pod_a, port_a, pod_b, port_b]`` realizing the counts
    ``x.flat[keys] = vals`` over ``(H, n_chan, P, P)``, keeping current links ``cur`` (same
    columns) where the counts allow (:func:`~lumoscore.toe.model.assemble_sparse`), and the
    pool ``((h n_chan + c) P + pod) 2 + backward`` of the first end without a free port (-1:
    none). Ports flagged in ``dead`` (flat ``(H, P, K)``) are never used; ``cur`` must not
    use them.

    Per ``(h, c, i, j)`` the first (stable by key) ``min(count, current)`` current links are
    kept; the other links' ends take, in request order (all ``a`` ends, then all ``b`` ends),
    the free ports of their pool in ascending port order.

    Examples
    --------
    >>> import numpy as np
    >>> ch = np.array([[[0, 1]] * 3]); sd = np.zeros((1, 3, 2), np.int64)
    >>> links, bad = assemble_links(np.array([1, 14]), np.array([1, 1]),
    ...                             np.zeros((0, 6), np.int64), ch, sd,
    ...                             np.ones((1, 2), bool), np.zeros(6, bool), 3, 2)
    >>> links.tolist(), bad
    ([[0, 0, 0, 0, 1, 0], [0, 1, 1, 1, 2, 1]], -1)
    """
    H = channel.shape[0]
    n_chan = chan_self.shape[1]
    PP = P * P
    n_keys = keys.size
    need = vals.copy()
    n_cur = cur.shape[0]
    keep = np.zeros(n_cur, np.bool_)
    if n_cur and n_keys:
        k_old = np.empty(n_cur, np.int64)
        for r in range(n_cur):
            k_old[r] = ((cur[r, 0] * n_chan + cur[r, 1]) * P + cur[r, 2]) * P + cur[r, 4]
        order = argsort_stable(k_old)
        run = 0
        for q in range(n_cur):
            r = order[q]
            if q > 0 and k_old[r] == k_old[order[q - 1]]:
                run += 1
            else:
                run = 0
            at = min(np.searchsorted(keys, k_old[r]), n_keys - 1)
            x_old = vals[at] if keys[at] == k_old[r] else 0
            if run < x_old:
                keep[r] = True
                need[at] -= 1
    used = dead.copy()
    n_kept = 0
    for r in range(n_cur):
        if keep[r]:
            used[(cur[r, 0] * P + cur[r, 2]) * K + cur[r, 3]] = True
            used[(cur[r, 0] * P + cur[r, 4]) * K + cur[r, 5]] = True
            n_kept += 1
    # free ports per pool (h, channel, pod, backward?), ascending
    n_pool = H * n_chan * P * 2
    start = np.zeros(n_pool + 1, np.int64)
    pool_of = np.empty(H * P * K, np.int64)
    for port in range(H * P * K):
        h, pod = port // (P * K), port // K % P
        pool_of[port] = ((h * n_chan + channel[h, pod, port % K]) * P + pod) * 2 + (
            1 if side[h, pod, port % K] == 1 else 0
        )
        if not used[port]:
            start[pool_of[port] + 1] += 1
    for p in range(n_pool):
        start[p + 1] += start[p]
    free = np.empty(start[n_pool], np.int64)
    fill = start[:n_pool].copy()
    for port in range(H * P * K):
        if not used[port]:
            free[fill[pool_of[port]]] = port
            fill[pool_of[port]] += 1
    n_new = 0
    for e in range(n_keys):
        if need[e] > 0:
            n_new += need[e]
    links = np.empty((n_kept + n_new, 6), np.int64)
    o = 0
    for r in range(n_cur):
        if keep[r]:
            for col in range(6):
                links[o, col] = cur[r, col]
            o += 1
    cursor = start[:n_pool].copy()
    bad = -1
    for end in range(2):  # all a ends first, then all b ends (request order)
        q = n_kept
        for e in range(n_keys):
            if need[e] <= 0:
                continue
            g = keys[e]
            gi, gj = (g // P) % P, g % P
            gc = (g // PP) % n_chan
            gh = g // (PP * n_chan)
            for _ in range(need[e]):
                if end == 0:
                    pool = ((gh * n_chan + gc) * P + gi) * 2
                else:
                    pool = ((gh * n_chan + gc) * P + gj) * 2 + (0 if chan_self[gh, gc] else 1)
                if cursor[pool] >= start[pool + 1]:
                    if bad < 0:
                        bad = pool
                    port = 0
                else:
                    port = free[cursor[pool]]
                    cursor[pool] += 1
                links[q, 0] = gh
                links[q, 1] = gc
                if end == 0:
                    links[q, 2] = gi
                    links[q, 3] = port % K
                else:
                    links[q, 4] = gj
                    links[q, 5] = port % K
                q += 1
    return links, bad


@cached_jit
def forward_links(
    c: IntArray, pos: IntArray, channel: IntArray, side: IntArray
) -> IntArray:  # pragma: no cover - jit
    """Rows ``[h, channel, pod_a, port_a, pod_b, port_b]`` of the circuits ``c`` (``(n, 6)``)
    that are links of :func:`~lumoscore.toe.model.current_links`: a forward circuit of a paired
    channel, or a circuit of a self-paired channel with ``(pod_a, port_a) < (pod_b, port_b)``,
    between two pods; ``h = pos[group]``.

    Examples
    --------
    >>> import numpy as np
    >>> ch = np.zeros((1, 2, 2), np.int64); sd = np.array([[[0, 1], [0, 1]]])
    >>> forward_links(np.array([[0, 0, 0, 0, 1, 1], [0, 0, 1, 0, 0, 1]]), np.array([0]),
    ...               ch, sd).tolist()
    [[0, 0, 0, 0, 1, 1], [0, 0, 1, 0, 0, 1]]
    """
    n = c.shape[0]
    keep = np.zeros(n, np.bool_)
    k = 0
    for r in range(n):
        h = pos[c[r, 0]]
        i, pi, j, pj = c[r, 2], c[r, 3], c[r, 4], c[r, 5]
        if i == j or channel[h, i, pi] != channel[h, j, pj]:
            continue
        s_tx, s_rx = side[h, i, pi], side[h, j, pj]
        if (s_tx == 0 and s_rx == 1) or (s_tx == 2 and (i < j or (i == j and pi < pj))):
            keep[r] = True
            k += 1
    out = np.empty((k, 6), np.int64)
    o = 0
    for r in range(n):
        if keep[r]:
            h = pos[c[r, 0]]
            out[o, 0] = h
            out[o, 1] = channel[h, c[r, 2], c[r, 3]]
            for col in range(2, 6):
                out[o, col] = c[r, col]
            o += 1
    return out
