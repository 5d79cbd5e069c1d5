"""Compiled loops of the placement policies (:mod:`lumoscore.placement.policies`).

* :func:`pod_slots` -- the free TP slots a job takes inside one pod: the fewest leaves, the
  largest first, the last one best fit (:meth:`PlacementPolicy._in_pod
  <lumoscore.placement.policies.PlacementPolicy>`). It runs once per pod of every multi-pod
  placement on a handful of leaves, so NumPy's per-call overhead dominated it.
* :func:`greedy_pods` -- the pods of :func:`~lumoscore.placement.podselect.select_pods_greedy`
  (every multi-pod placement): sorts and scans over a few dozen pods, where NumPy's lexsorts
  and masks cost more in calls than in work.
* :func:`block_counts`, :func:`block_all` -- the idle GPUs (or free slots) of every server,
  leaf or pod and whether a block is all idle: one pass over the cluster's flags (NumPy's
  reductions of small boolean blocks cost several times that).

Examples
--------
>>> import numpy as np
>>> free = np.array([1, 1, 0, 0, 1, 1, 1, 1], bool)   # 2 leaves of 4 slots, 1 slot a server
>>> pod_slots(free, np.ones(8, bool), free.astype(np.int64), 0, 5, 1, 4, 8, 8).tolist()
[4, 5, 6, 7, 0]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit
from lumoscore.jitsort import argsort, argsort_stable, unique

__all__ = [
    "block_all",
    "block_counts",
    "flow_pair_codes",
    "greedy_pods",
    "pod_slots",
    "sorted_difference",
]

IntArray = NDArray[np.int64]


@cached_jit
def pod_slots(
    slot_free: NDArray[np.bool_],
    idle: NDArray[np.bool_],
    server_free: IntArray,
    pod: int,
    m: int,
    sps: int,
    per_leaf: int,
    per_pod: int,
    gpus_per_pod: int,
) -> IntArray:  # pragma: no cover - jit
    """``m`` free slots of ``pod`` on the fewest leaves (slot ids ascending by leaf order).

    The leaves are ordered by free slots (most first), then idle GPUs (fewest first), then
    index; the first ones are taken whole while they do not reach ``m``; the rest comes from
    the leaf with the fewest free slots that suffice (then fewest idle GPUs, then index),
    whose slots go by their server's free slots (fewest first), then index.

    ``slot_free``: free TP slots of the cluster; ``idle``: idle GPUs of the cluster;
    ``server_free``: free slots of every server of the cluster; ``sps``: slots a server.

    Examples
    --------
    >>> import numpy as np
    >>> free = np.ones(4, bool)
    >>> pod_slots(free, np.ones(4, bool), np.array([1, 1, 1, 1]), 0, 3, 1, 2, 4, 4).tolist()
    [0, 1, 2]
    """
    nb = per_pod // per_leaf
    base = pod * per_pod
    f = np.zeros(nb, np.int64)
    for q in range(nb):
        for s in range(per_leaf):
            if slot_free[base + q * per_leaf + s]:
                f[q] += 1
    idle_gpus = np.zeros(nb, np.int64)  # idle GPUs of every leaf block of the pod
    per_block = gpus_per_pod // nb
    for g in range(per_block * nb):
        if idle[pod * gpus_per_pod + g]:
            idle_gpus[g // per_block] += 1
    top = 0
    for q in range(nb):
        top = max(top, idle_gpus[q])
    key = np.empty(nb, np.int64)
    for q in range(nb):  # most free slots, fewest idle GPUs, index
        key[q] = ((per_leaf - f[q]) * (top + 1) + idle_gpus[q]) * nb + q
    order = argsort(key)
    total = 0
    k = 0  # leaves taken whole: while the running total stays below m
    while k < nb and total + f[order[k]] < m:
        total += f[order[k]]
        k += 1
    rest = m - total
    chosen = np.zeros(nb, np.bool_)
    for q in range(k):
        chosen[order[q]] = True
    last = -1
    for q in range(nb):  # fewest free slots that suffice, fewest idle GPUs, index
        if chosen[q] or f[q] < rest:
            continue
        if last < 0 or (f[q], idle_gpus[q]) < (f[last], idle_gpus[last]):
            last = q
    if last < 0:
        raise IndexError("pod_slots: no leaf of the pod has the slots left")
    out = np.empty(m, np.int64)
    o = 0
    for q in range(k):
        leaf = order[q]
        for s in range(per_leaf):
            slot = base + leaf * per_leaf + s
            if slot_free[slot]:
                out[o] = slot
                o += 1
    lb = base + last * per_leaf
    n_free = f[last]
    cand = np.empty(n_free, np.int64)
    ck = np.empty(n_free, np.int64)
    c = 0
    for s in range(per_leaf):
        if slot_free[lb + s]:
            cand[c] = lb + s
            ck[c] = server_free[lb // sps + s // sps] * per_leaf + s
            c += 1
    pick = argsort(ck)
    for q in range(rest):
        out[o] = cand[pick[q]]
        o += 1
    return out


@cached_jit
def flow_pair_codes(
    leaf: IntArray,
    ep: int,
    use_pp: bool,
    use_dp: bool,
    use_ep: bool,
    leaves_per_pod: int,
    leaves: int,
) -> IntArray:  # pragma: no cover - jit
    """Sorted distinct codes ``min(a, b) * leaves + max(a, b)`` of the cross-pod leaf pairs
    joined by a job's flows, from the leaf of every rank (``leaf``: ``(pp, dp, tp)``):
    neighbouring pipeline stages (``use_pp``), neighbouring DP ranks of a ring, wrap-around
    included (``use_dp``), and every two leaves of an expert group of ``ep`` consecutive
    ranks (``use_ep``).

    Examples
    --------
    >>> import numpy as np
    >>> leaf = np.array([[[0], [2]], [[1], [3]]])        # pp = 2, dp = 2, tp = 1
    >>> flow_pair_codes(leaf, 1, True, True, False, 2, 4).tolist()   # pods {0, 1}, {2, 3}: DP
    [2, 7]
    """
    pp, dp, tp = leaf.shape
    flat = leaf.reshape(-1)
    n_ranks = flat.size
    cap = 0
    if use_pp:
        cap += (pp - 1) * dp * tp
    if use_dp:
        cap += n_ranks
    if use_ep:
        cap += (n_ranks // ep) * ep * (ep - 1)
    codes = np.empty(cap, np.int64)
    k = 0
    if use_pp:
        for s in range(pp - 1):
            for d in range(dp):
                for t in range(tp):
                    x, y = leaf[s, d, t], leaf[s + 1, d, t]
                    if x // leaves_per_pod != y // leaves_per_pod:
                        codes[k] = min(x, y) * leaves + max(x, y)
                        k += 1
    if use_dp:
        for s in range(pp):
            for d in range(dp):
                for t in range(tp):
                    x, y = leaf[s, d, t], leaf[s, (d + 1) % dp, t]
                    if x // leaves_per_pod != y // leaves_per_pod:
                        codes[k] = min(x, y) * leaves + max(x, y)
                        k += 1
    if use_ep:
        for g in range(n_ranks // ep):
            row = unique(flat[g * ep : (g + 1) * ep])
            for u in range(row.size):
                for v in range(u + 1, row.size):
                    x, y = row[u], row[v]
                    if x // leaves_per_pod != y // leaves_per_pod:
                        codes[k] = x * leaves + y
                        k += 1
    return unique(codes[:k])


@cached_jit
def sorted_difference(a: IntArray, b: IntArray) -> IntArray:  # pragma: no cover - jit
    """Elements of ``a`` not in ``b`` (both sorted and distinct), in order
    (``np.setdiff1d`` of such arrays).

    Examples
    --------
    >>> import numpy as np
    >>> sorted_difference(np.array([1, 3, 5, 7]), np.array([3, 4, 7])).tolist()
    [1, 5]
    """
    out = np.empty(a.size, np.int64)
    k = 0
    q = 0
    for x in a:
        while q < b.size and b[q] < x:
            q += 1
        if q < b.size and b[q] == x:
            continue
        out[k] = x
        k += 1
    return out[:k]


@cached_jit
def block_counts(flags: NDArray[np.bool_], size: int) -> IntArray:  # pragma: no cover - jit
    """The number of set flags in each block of ``size`` consecutive ones
    (``flags.reshape(-1, size).sum(axis=1)``).

    Examples
    --------
    >>> block_counts(np.array([1, 1, 0, 1, 0, 0], bool), 2).tolist()
    [2, 1, 0]
    """
    n = flags.size // size
    out = np.zeros(n, np.int64)
    for i in range(n):
        c = 0
        for j in range(i * size, (i + 1) * size):
            c += flags[j]
        out[i] = c
    return out


@cached_jit
def block_all(flags: NDArray[np.bool_], size: int) -> NDArray[np.bool_]:  # pragma: no cover
    """Whether every flag of each block of ``size`` consecutive ones is set
    (``flags.reshape(-1, size).all(axis=1)``).

    Examples
    --------
    >>> block_all(np.array([1, 1, 0, 1, 1, 1], bool), 2).tolist()
    [True, False, True]
    """
    n = flags.size // size
    out = np.ones(n, np.bool_)
    for i in range(n):
        for j in range(i * size, (i + 1) * size):
            if not flags[j]:
                out[i] = False
                break
    return out


@cached_jit(inline="always")
def _before(cost: IntArray, c: IntArray, i: int, j: int) -> bool:  # pragma: no cover - jit
    """Pod ``i`` precedes pod ``j`` by (cost, capacity, index)."""
    if cost[i] != cost[j]:
        return cost[i] < cost[j]
    if c[i] != c[j]:
        return c[i] < c[j]
    return i < j


@cached_jit
def greedy_pods(c: IntArray, cost: IntArray, need: int) -> NDArray[np.bool_]:  # pragma: no cover
    """The pods :func:`~lumoscore.placement.podselect.select_pods_greedy` selects (a mask):
    the ``k - 1`` pods first by (capacity descending, cost, index) with ``k`` the fewest that
    cover ``need`` (``sum(c) >= need``), plus the first by (cost, capacity, index) of the
    others that covers the rest; then, while some selected pod (by cost descending, then
    index) can be replaced by a cheaper unselected one that keeps ``need`` covered, the
    first such by (cost, capacity, index) replaces it.

    Examples
    --------
    >>> import numpy as np
    >>> greedy_pods(np.array([4, 2, 3, 1]), np.array([4, 2, 3, 1]), 5).tolist()
    [True, False, False, True]
    """
    P = c.size
    o1 = argsort_stable(cost)  # (stable: ties by index)
    neg = np.empty(P, np.int64)
    for t in range(P):
        neg[t] = -c[o1[t]]
    by_cap = o1[argsort_stable(neg)]
    sel = np.zeros(P, np.bool_)
    got = 0
    for t in range(P):  # the largest pods while they do not cover need on their own
        if got + c[by_cap[t]] >= need:
            break
        sel[by_cap[t]] = True
        got += c[by_cap[t]]
    last = -1
    for i in range(P):
        if not sel[i] and c[i] >= need - got and (last < 0 or _before(cost, c, i, last)):
            last = i
    sel[last] = True
    total = got + c[last]
    improved = True
    while improved:
        improved = False
        chosen = np.flatnonzero(sel)
        negc = np.empty(chosen.size, np.int64)
        for t in range(chosen.size):
            negc[t] = -cost[chosen[t]]
        for i in chosen[argsort_stable(negc)]:
            best = -1
            for j in range(P):
                if (not sel[j] and c[j] >= need - (total - c[i]) and cost[j] < cost[i]
                        and (best < 0 or _before(cost, c, j, best))):  # fmt: skip
                    best = j
            if best >= 0:
                sel[i] = False
                sel[best] = True
                total += c[best] - c[i]
                improved = True
                break
    return sel
