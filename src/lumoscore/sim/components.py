"""Independent parts of a round (compiled): rows that never share a link of finite capacity.

Max-min rates of rows that share no saturable link with each other are independent: a round
whose rows fall into several such parts runs each part on its own timeline, and alone each
part ends when its last flow leaves its links (the latest ``idle_s`` of its links in the
round's solo run). The shared fluid set (:class:`~lumoscore.sim.fluid.FluidSet`) therefore
solves only the parts of a round that cross a link other rounds use; the others keep their
solo timeline *detached*, hold their links (so that a round joining later on one of them
brings that part into the shared solve at its exact progress) and end at a known time.

Examples
--------
Rows 0 and 1 share link 2; row 2 runs alone on link 3; link 0 (infinite capacity) joins
nothing:

>>> import numpy as np
>>> indptr, indices = np.array([0, 2, 4, 6]), np.array([0, 2, 0, 2, 0, 3])
>>> cap = np.array([np.inf, 1.0, 1.0, 1.0])
>>> lab, end, link_part = round_components(indptr, indices, cap, np.array([0, 2, 3]),
...                                        np.array([0.0, 4.0, 1.5]))
>>> lab.tolist(), end.tolist(), link_part.tolist()
([0, 0, 1], [4.0, 1.5], [-1, 0, 1])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit
from lumoscore.jitsort import argsort
from lumoscore.sim.maxmin import _compact

__all__ = ["mark_parts", "round_components", "split_round", "sub_rows"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@cached_jit(internal=True)
def _root(parent: IntArray, q: int) -> int:  # pragma: no cover - compiled
    while parent[q] != q:
        parent[q] = parent[parent[q]]
        q = parent[q]
    return q


@cached_jit
def round_components(
    indptr: IntArray, indices: IntArray, capacity: FloatArray, links: IntArray, idle_s: FloatArray
) -> tuple[IntArray, FloatArray, IntArray]:  # pragma: no cover - compiled
    """Split a round's rows (CSR routes) into parts joined by links of finite capacity.

    ``links`` are the round's links (sorted, each once) and ``idle_s`` when, alone, its last
    flow leaves each. Returns each row's part, when each part ends alone (from the round's
    start; 0 for rows that cross no link of finite capacity) and each link's part (-1 for
    links of infinite capacity)."""
    c_idx, _, glob = _compact(indices, capacity)
    m = glob.size
    parent = np.arange(m)
    n = indptr.size - 1
    first = np.full(n, -1, dtype=np.int64)  # a finite link of each row (local id)
    for f in range(n):
        for j in range(indptr[f], indptr[f + 1]):
            q = c_idx[j]
            if not capacity[glob[q]] < np.inf:
                continue
            if first[f] < 0:
                first[f] = q
            else:
                a, b = _root(parent, first[f]), _root(parent, q)
                if a != b:
                    parent[b] = a
    label_of = np.full(m, -1, dtype=np.int64)  # part of each root
    lab = np.empty(n, dtype=np.int64)
    n_parts = 0
    for f in range(n):
        if first[f] < 0:
            lab[f] = n_parts
            n_parts += 1
            continue
        r = _root(parent, first[f])
        if label_of[r] < 0:
            label_of[r] = n_parts
            n_parts += 1
        lab[f] = label_of[r]
    end = np.zeros(n_parts)
    link_part = np.full(links.size, -1, dtype=np.int64)
    by_id = argsort(glob)  # local ids in the order of ``links``
    if links.size != m:
        raise ValueError("links must be the links of the round's routes, sorted, each once")
    for i in range(links.size):
        q = by_id[i]
        if glob[q] != links[i]:
            raise ValueError("links must be the links of the round's routes, sorted, each once")
        if capacity[glob[q]] < np.inf:
            c = label_of[_root(parent, q)]
            link_part[i] = c
            if idle_s[i] > end[c]:
                end[c] = idle_s[i]
    return lab, end, link_part


@cached_jit
def split_round(
    links: IntArray,
    link_part: IntArray,
    end_s: FloatArray,
    started_s: float,
    now_s: float,
    link_rows: IntArray,
    detached_on: IntArray,
) -> tuple[BoolArray, IntArray]:  # pragma: no cover - compiled
    """Which parts of a round joining a fluid set at ``now_s`` (on its solo timeline since
    ``started_s``) must be solved in the set: those crossing a link with rows of the set
    (``link_rows > 0``) and those that end by ``now_s``. Also returns the round's links that
    detached parts of other rounds hold (``detached_on``: holder per link, -1 none): those
    parts must join the set too."""
    solve = started_s + end_s <= now_s
    others = np.empty(links.size, dtype=np.int64)
    k = 0
    for i in range(links.size):
        c = link_part[i]
        if c < 0:
            continue
        l = links[i]
        if link_rows[l] > 0:
            solve[c] = True
        if detached_on[l] >= 0:
            others[k] = l
            k += 1
    return solve, others[:k]


@cached_jit
def mark_parts(
    links: IntArray,
    link_part: IntArray,
    parts: BoolArray,
    link_rows: IntArray,
    detached_on: IntArray,
    holder: int,
) -> None:  # pragma: no cover - compiled
    """Hold (``holder >= 0``) or give back (``holder = -1``) the links of the marked
    ``parts`` of a round: one row more or less on each in ``link_rows``, and the holder in
    ``detached_on``."""
    delta = 1 if holder >= 0 else -1
    for i in range(links.size):
        c = link_part[i]
        if c >= 0 and parts[c]:
            link_rows[links[i]] += delta
            detached_on[links[i]] = holder


@cached_jit
def sub_rows(
    indptr: IntArray, indices: IntArray, rows: IntArray
) -> tuple[IntArray, IntArray]:  # pragma: no cover - compiled
    """The CSR routes of ``rows`` only."""
    ptr = np.zeros(rows.size + 1, dtype=np.int64)
    for i in range(rows.size):
        ptr[i + 1] = ptr[i] + indptr[rows[i] + 1] - indptr[rows[i]]
    idx = np.empty(ptr[-1], dtype=np.int64)
    for i in range(rows.size):
        start = indptr[rows[i]]
        for j in range(ptr[i + 1] - ptr[i]):
            idx[ptr[i] + j] = indices[start + j]
    return ptr, idx
