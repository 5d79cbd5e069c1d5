"""Compiled loops of the logical-topology algorithms (:mod:`lumoscore.topology.logical`).

* :func:`greedy_assign` -- the pair-by-pair greedy spine assignment behind
  :func:`~lumoscore.topology.logical.greedy_spine_assignment` (Theorem 4.2) and
  :func:`~lumoscore.topology.logical.free_link_split` (incremental admissions). Each pair's
  step works on ``H`` spines only, so a Python loop over NumPy calls spent its time in call
  overhead; this kernel runs the same integer rule in one pass.
* :func:`merge_split` -- a split added to (or taken from) a logical topology's entries and
  leaf requirements behind :func:`~lumoscore.topology.logical.apply_split` (every admission
  and release): one pass over the sorted entries instead of a dozen NumPy passes.

Examples
--------
>>> import numpy as np
>>> cap = np.full((4, 2), 1, np.int64)
>>> a, b, h, v = greedy_assign(np.array([0]), np.array([2]), np.array([2]), cap,
...                            np.zeros((4, 2), np.int64), False)
>>> a.tolist(), b.tolist(), h.tolist(), v.tolist()
([0, 0], [2, 2], [0, 1], [1, 1])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit
from lumoscore.jitsort import argsort_stable

__all__ = ["greedy_assign", "merge_split"]

IntArray = NDArray[np.int64]


#: Penalty of a spine with no working link at one of the two leaves (the greedy's leftover
#: rule takes it only when every spine is such).
_DEAD = 1 << 40


@cached_jit
def greedy_assign(
    r: IntArray,
    c: IntArray,
    v: IntArray,
    cap: IntArray,
    load: IntArray,
    concentrate: bool,
) -> tuple[IntArray, IntArray, IntArray, IntArray]:  # pragma: no cover - jit
    """Greedy spine assignment of the pairs ``(r, c, v)`` on top of ``load`` (``(leaves, H)``,
    updated in place); returns the upper-orientation COO ``(a, b, h, value)``, per pair by
    ascending spine.

    For each pair, ``common`` is the number of links free at both leaves per spine. With
    ``concentrate`` the requirements fill the spines already used by this call first, then
    the others, both by index; otherwise they go round-robin over the spines, most common free
    links first (ties by index). What is left goes one unit at a time to the spine where the
    larger of the two loads exceeds the smaller capacity least (ties by index), never to one
    whose links at either leaf all failed (capacity 0) while another spine has working links
    at both.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.full((4, 2), 2, np.int64)
    >>> out = greedy_assign(np.array([0, 1]), np.array([2, 3]), np.array([1, 1]), cap,
    ...                     np.zeros((4, 2), np.int64), True)
    >>> [x.tolist() for x in out]    # the second pair fills spine 0 too (already used)
    [[0, 1], [2, 3], [0, 0], [1, 1]]
    """
    n_pairs = r.size
    H = cap.shape[1]
    touched = np.zeros(H, np.bool_)
    common = np.empty(H, np.int64)
    take = np.empty(H, np.int64)
    order = np.empty(H, np.int64)
    out_a = np.empty(n_pairs * H, np.int64)
    out_b = np.empty(n_pairs * H, np.int64)
    out_h = np.empty(n_pairs * H, np.int64)
    out_v = np.empty(n_pairs * H, np.int64)
    o = 0
    for p in range(n_pairs):
        a, b = r[p], c[p]
        for k in range(H):
            common[k] = max(min(cap[a, k] - load[a, k], cap[b, k] - load[b, k]), 0)
            take[k] = 0
        left = v[p]
        if concentrate:  # used spines by index, then unused spines by index
            m = 0
            for k in range(H):
                if touched[k]:
                    order[m] = k
                    m += 1
            for k in range(H):
                if not touched[k]:
                    order[m] = k
                    m += 1
            for q in range(H):
                k = order[q]
                t = min(common[k], max(left, 0))
                take[k] = t
                left -= t
        else:  # most common free links first (stable: ties by index), round-robin
            by = argsort_stable(-common)
            for q in range(H):
                order[q] = by[q]
            while left > 0:
                got = 0
                for q in range(H):
                    if got == left:
                        break
                    k = order[q]
                    if common[k] - take[k] > 0:
                        take[k] += 1
                        got += 1
                if got == 0:
                    break
                left -= got
        while left > 0:  # no free link at both leaves: least-contended spine
            best = 0
            best_w = 0
            for k in range(H):
                w = max(load[a, k] + take[k], load[b, k] + take[k]) - min(cap[a, k], cap[b, k])
                if cap[a, k] == 0 or cap[b, k] == 0:
                    w += _DEAD  # a spine whose link failed at either leaf: the last resort
                if k == 0 or w < best_w:
                    best, best_w = k, w
            take[best] += 1
            left -= 1
        for k in range(H):
            load[a, k] += take[k]
            load[b, k] += take[k]
            if take[k] != 0:
                touched[k] = True
                out_a[o] = a
                out_b[o] = b
                out_h[o] = k
                out_v[o] = take[k]
                o += 1
    return out_a[:o], out_b[:o], out_h[:o], out_v[:o]


@cached_jit
def merge_split(
    a0: IntArray,
    b0: IntArray,
    h0: IntArray,
    v0: IntArray,
    a: IntArray,
    b: IntArray,
    h: IntArray,
    v: IntArray,
    up0: IntArray,
    down0: IntArray,
    n: int,
    H: int,
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, bool]:  # pragma: no cover
    """Entries ``(a0, b0, h0, v0)`` (distinct, sorted by the key ``(a * n + b) * H + h``)
    plus ``(a, b, h, v)`` (any order; entries of one key summed): the sum's nonzero entries,
    sorted by key; the leaf requirements ``up0``/``down0`` (``(n, H)``) plus ``v`` on
    ``(a, h)``/``(b, h)`` (new arrays); and whether no sum is negative.

    Examples
    --------
    >>> import numpy as np
    >>> i = lambda *x: np.array(x, np.int64)
    >>> z = np.zeros((3, 2), np.int64)
    >>> a, b, h, v, up, down, ok = merge_split(
    ...     i(0, 1), i(1, 2), i(0, 1), i(2, 1), i(1, 0, 0), i(2, 1, 2), i(1, 0, 1), i(-1, -2, 4),
    ...     z, z, 3, 2)
    >>> a.tolist(), b.tolist(), h.tolist(), v.tolist(), ok
    ([0], [2], [1], [4], True)
    >>> up[:, 1].tolist(), down[:, 0].tolist()
    ([4, -1, 0], [0, -2, 0])
    """
    s = a.size
    sk = np.empty(s, np.int64)
    for i in range(s):
        sk[i] = (a[i] * n + b[i]) * H + h[i]
    order = argsort_stable(sk)
    ua = np.empty(s, np.int64)  # the split's keys, distinct, sorted, their sums
    uk = np.empty(s, np.int64)
    uv = np.empty(s, np.int64)
    m = 0
    for j in range(s):
        i = order[j]
        if m > 0 and uk[m - 1] == sk[i]:
            uv[m - 1] += v[i]
        else:
            ua[m], uk[m], uv[m] = i, sk[i], v[i]
            m += 1
    e = a0.size
    oa = np.empty(e + m, np.int64)
    ob = np.empty(e + m, np.int64)
    oh = np.empty(e + m, np.int64)
    ov = np.empty(e + m, np.int64)
    ok = True
    i = j = k = 0
    while i < e or j < m:
        k0 = (a0[i] * n + b0[i]) * H + h0[i] if i < e else -1
        if j >= m or (i < e and k0 < uk[j]):  # an entry the split leaves alone
            oa[k], ob[k], oh[k], ov[k] = a0[i], b0[i], h0[i], v0[i]
            k += 1
            i += 1
            continue
        if i < e and k0 == uk[j]:
            val = v0[i] + uv[j]
            i += 1
        else:
            val = uv[j]
        if val < 0:
            ok = False
        if val != 0:
            f = ua[j]
            oa[k], ob[k], oh[k], ov[k] = a[f], b[f], h[f], val
            k += 1
        j += 1
    up = up0.copy()
    down = down0.copy()
    for i in range(s):
        up[a[i], h[i]] += v[i]
        down[b[i], h[i]] += v[i]
    return oa[:k], ob[:k], oh[:k], ov[:k], up, down, ok
