"""Incremental OCS reconfiguration: the current circuits patched on the pod pairs that change.

When a job arrives or leaves, the logical topology of a LumosCore cluster changes on the pod
pairs the job touches only. :func:`patch_circuits` realizes the new link counts by working on
those pairs alone: a pair that needs ``r`` fewer links gives up ``r`` of its links (the two
circuits of each, the ports with the highest numbers first); a pair that needs more links gets
each new link on a free port of either pod and a free port of the other whose types match
(the same channel, opposite sides of a paired channel or both on a self-paired one; see
:mod:`lumoscore.toe.model`), lowest channel and port first. No other circuit moves.

Rewiring is then the least any solver can reach: a new link needs its two circuits, and
nothing else is touched. The patch can fail where a rearrangement of other circuits would
have made room (the free ports of the two pods lie in different channels); it then returns
``None`` and the caller runs a full solver (:func:`~lumoscore.toe.configure`). Its cost grows
with the links that change, not with the cluster.

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec, build_wiring, verify_circuits
>>> from lumoscore.toe import PortModel, configure
>>> spec = ClusterSpec(pods=4, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
>>> w = build_wiring(spec, "cross")
>>> C = np.zeros((1, 4, 4), dtype=np.int64)           # one OCS group
>>> C[:, 0, 1] = C[:, 1, 0] = 2
>>> now = configure(C, w).circuits
>>> C2 = C.copy()
>>> C2[:, 2, 3] = C2[:, 3, 2] = 1             # a job on pods 2 and 3 arrives
>>> C2[:, 0, 1] = C2[:, 1, 0] = 1             # one on pods 0 and 1 leaves
>>> new = patch_circuits(PortModel.from_wiring(w), now, *changed_pairs(C, C2))
>>> verify_circuits(w, new, C2), len(new) - len(now)
([], 0)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit
from lumoscore.toe.model import PortModel

__all__ = ["changed_pairs", "pairs_of_changes", "patch_circuits"]

IntArray = NDArray[np.int64]


def changed_pairs(
    before: IntArray, after: IntArray, groups: IntArray | None = None
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """The pod pairs ``i < j`` whose link count differs between the symmetric ``(H, P, P)``
    counts ``before`` and ``after``: ``(group, i, j, after - before)`` (``groups``: the group
    of each of the ``H`` matrices, default ``0..H-1``), in ``(group, i, j)`` order.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((1, 3, 3), np.int64)
    >>> b = a.copy(); b[0, 0, 2] = b[0, 2, 0] = 2
    >>> [x.tolist() for x in changed_pairs(a, b, np.array([5]))]
    [[5], [0], [2], [2]]
    """
    b0, a0 = np.asarray(before), np.asarray(after)
    keys = np.flatnonzero(b0 != a0)  # one pass over the counts; the rest is per change
    delta = a0.reshape(-1)[keys] - b0.reshape(-1)[keys]
    return pairs_of_changes(keys, delta, b0.shape[-1], groups)


def pairs_of_changes(
    keys: IntArray, delta: IntArray, P: int, groups: IntArray | None = None
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """:func:`changed_pairs` from the differences ``delta`` of symmetric ``(H, P, P)`` counts
    at the flat ``keys`` (ascending, both directions of a pair listed, other keys allowed):
    the work is in the number of keys, for a caller that knows where the counts changed.

    Examples
    --------
    >>> import numpy as np
    >>> [x.tolist() for x in pairs_of_changes(np.array([2, 4, 6]), np.array([2, 0, 2]), 3)]
    [[0], [0], [2], [2]]
    """
    keys = np.asarray(keys, dtype=np.int64)
    delta = np.asarray(delta, dtype=np.int64)
    h, i, j = keys // (P * P), keys // P % P, keys % P
    m = (i < j) & (delta != 0)
    g = h[m] if groups is None else np.asarray(groups, dtype=np.int64)[h[m]]
    return g, i[m], j[m], delta[m]


def patch_circuits(
    model: PortModel,
    current: IntArray,
    group: IntArray,
    i: IntArray,
    j: IntArray,
    change: IntArray,
    *,
    merge: bool = False,
) -> IntArray | None:
    """``current`` circuits ``(n, 6)`` with the links of pod pair ``(group[e], i[e], j[e])``
    changed by ``change[e]`` (see the module), or ``None`` when a new link finds no pair of
    free ports of matching types, or a pair has fewer links than it should give up.

    The kept circuits stay in their order, the new ones follow (in group, pod, pod order);
    with ``merge`` each new circuit follows instead the kept circuits of its group, so
    circuits sorted by group stay sorted (the order a stable sort by group of the default
    result gives, without the sort). ``model`` covers every group (ports it marks dead are
    never used); ``current`` must be a valid configuration of it. A successful patch adds
    exactly two circuits per new link: ``2 * change[change > 0].sum()``.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=2, k_spine=2, tau=1, gpus_per_server=1)  # 2 groups
    >>> pm = PortModel.from_wiring(build_wiring(spec, "cross"))
    >>> empty = np.zeros((0, 6), np.int64)
    >>> one = patch_circuits(pm, empty, np.array([1]), np.array([0]), np.array([1]), np.array([1]))
    >>> both = patch_circuits(pm, one, np.array([0]), np.array([0]), np.array([1]), np.array([1]),
    ...                       merge=True)
    >>> one[:, 0].tolist(), both[:, 0].tolist()    # group 0's new circuits come first
    ([1, 1], [0, 0, 1, 1])
    """
    cur = np.ascontiguousarray(current, dtype=np.int64).reshape(-1, 6)
    H, P, K = model.tx_ocs.shape
    order = np.lexsort((j, i, group))  # deterministic: pairs in (group, i, j) order
    used = np.zeros(H * P * K, np.bool_)
    if model.dead is not None:
        used |= model.dead.reshape(-1)
    ok, keep, added = _patch(
        cur,
        np.ascontiguousarray(np.asarray(group, np.int64)[order]),
        np.ascontiguousarray(np.asarray(i, np.int64)[order]),
        np.ascontiguousarray(np.asarray(j, np.int64)[order]),
        np.ascontiguousarray(np.asarray(change, np.int64)[order]),
        np.ascontiguousarray(model.channel, dtype=np.int64).reshape(-1),
        np.ascontiguousarray(model.side, dtype=np.int64).reshape(-1),
        np.ascontiguousarray(model.tx_ocs, dtype=np.int64).reshape(-1),
        used,
        P,
        K,
    )
    if not ok:
        return None
    if merge:
        return _merged(cur, keep, added)
    return np.concatenate([cur[keep], added])


@cached_jit
def _merged(cur: IntArray, keep: NDArray[np.bool_], added: IntArray) -> IntArray:
    """The kept rows of ``cur`` with the rows of ``added`` (sorted by group) each placed
    after the kept rows of its group and before those of the next (``cur`` sorted by
    group)."""
    n_keep = 0
    for r in range(cur.shape[0]):
        if keep[r]:
            n_keep += 1
    out = np.empty((n_keep + added.shape[0], 6), np.int64)
    o = 0
    a = 0
    for r in range(cur.shape[0]):
        if not keep[r]:
            continue
        while a < added.shape[0] and added[a, 0] < cur[r, 0]:
            _copy_circuit(out, o, added, a)
            o += 1
            a += 1
        _copy_circuit(out, o, cur, r)
        o += 1
    while a < added.shape[0]:
        _copy_circuit(out, o, added, a)
        o += 1
        a += 1
    return out


@cached_jit(inline="always")
def _copy_circuit(out: IntArray, o: int, src: IntArray, r: int) -> None:  # pragma: no cover
    """``out[o] = src[r]`` for circuit rows (6 entries), entry by entry: a row assignment
    makes two array views, which costs ten times the copy."""
    for c in range(6):
        out[o, c] = src[r, c]


@cached_jit
def _patch(
    cur: IntArray,
    g_e: IntArray,
    i_e: IntArray,
    j_e: IntArray,
    d_e: IntArray,
    chan: IntArray,
    side: IntArray,
    tx_ocs: IntArray,
    used: NDArray[np.bool_],
    P: int,
    K: int,
) -> tuple[bool, NDArray[np.bool_], IntArray]:  # pragma: no cover - compiled
    """:func:`patch_circuits` on flat ``(H, P, K)`` port arrays; ``used`` starts with the
    dead ports and is the port table the patch works on."""
    n = cur.shape[0]
    keep = np.ones(n, np.bool_)
    none = np.zeros((0, 6), np.int64)
    # the row of each port's Tx, and the ports in use
    row_of = np.full(used.size, -1, np.int64)
    for r in range(n):
        p = (cur[r, 0] * P + cur[r, 2]) * K + cur[r, 3]
        row_of[p] = r
        used[p] = True
    # removals: the pair's links on the highest Tx ports of pod i first
    for e in range(g_e.size):
        if d_e[e] >= 0:
            continue
        g, a, b = g_e[e], i_e[e], j_e[e]
        left = -d_e[e]
        base_a = (g * P + a) * K
        for m in range(K - 1, -1, -1):
            if left == 0:
                break
            r = row_of[base_a + m]
            if r < 0 or not keep[r] or cur[r, 4] != b:
                continue
            q = (g * P + b) * K + cur[r, 5]
            back = row_of[q]
            if back < 0 or not keep[back]:
                return False, keep, none
            keep[r] = False
            keep[back] = False
            used[base_a + m] = False
            used[q] = False
            left -= 1
        if left:
            return False, keep, none
    # additions: a free port of one pod, a free port of matching type on the other
    total = 0
    for e in range(g_e.size):
        if d_e[e] > 0:
            total += d_e[e]
    added = np.empty((2 * total, 6), np.int64)
    o = 0
    for e in range(g_e.size):
        if d_e[e] <= 0:
            continue
        g, a, b = g_e[e], i_e[e], j_e[e]
        base_a = (g * P + a) * K
        base_b = (g * P + b) * K
        for _ in range(d_e[e]):
            found = False
            for m in range(K):
                pa = base_a + m
                if used[pa]:
                    continue
                want = 2 if side[pa] == 2 else 1 - side[pa]
                for nb in range(K):
                    pb = base_b + nb
                    if used[pb] or chan[pb] != chan[pa] or side[pb] != want:
                        continue
                    used[pa] = True
                    used[pb] = True
                    added[o, 0] = g
                    added[o, 1] = tx_ocs[pa]
                    added[o, 2] = a
                    added[o, 3] = m
                    added[o, 4] = b
                    added[o, 5] = nb
                    added[o + 1, 0] = g
                    added[o + 1, 1] = tx_ocs[pb]
                    added[o + 1, 2] = b
                    added[o + 1, 3] = nb
                    added[o + 1, 4] = a
                    added[o + 1, 5] = m
                    o += 2
                    found = True
                    break
                if found:
                    break
            if not found:
                return False, keep, none
    return True, keep, added
