"""Binary min-heaps over preallocated arrays, for compiled progressive filling.

A heap holds items ``hp`` and their keys ``hk`` by position (keys side by side: sifting reads
no item's data), ``pos`` maps every item to its position (-1 if absent) and ``size[0]`` is
the number of items. :func:`open_links`, :func:`fresh_top` and :func:`pop_through` serve
progressive fillings: a link's key is its fill level ``(cap - load) / n_act``; levels only
rise, so keys are lower bounds, brought up to date when a link reaches the top.

Examples
--------
>>> import numpy as np
>>> hp, hk = np.zeros(3, dtype=np.int64), np.zeros(3)
>>> pos, size = np.full(3, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)
>>> for item, key in [(0, 5.0), (1, 2.0), (2, 9.0)]:
...     heap_set(hp, hk, pos, size, item, key)
>>> heap_set(hp, hk, pos, size, 2, 1.0)  # a key changes
>>> heap_remove(hp, hk, pos, size, 1)
>>> [int(heap_pop(hp, hk, pos, size)) for _ in range(2)]
[2, 0]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit

__all__ = [
    "fresh_top",
    "heap_pop",
    "heap_remove",
    "heap_set",
    "open_links",
    "pop_through",
    "sift_down",
    "sift_up",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@cached_jit(inline="always")
def sift_up(
    hp: IntArray, hk: FloatArray, pos: IntArray, i: int, f: int, k: float
) -> None:  # pragma: no cover - compiled
    """Put item ``f`` with key ``k`` into the hole at heap position ``i``, moving up."""
    while i > 0:
        parent = (i - 1) >> 1
        if hk[parent] <= k:
            break
        g = hp[parent]
        hp[i] = g
        hk[i] = hk[parent]
        pos[g] = i
        i = parent
    hp[i] = f
    hk[i] = k
    pos[f] = i


@cached_jit(inline="always")
def sift_down(
    hp: IntArray, hk: FloatArray, pos: IntArray, i: int, f: int, k: float, n: int
) -> None:  # pragma: no cover - compiled
    """Put item ``f`` with key ``k`` into the hole at heap position ``i``, moving down."""
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] >= k:
            break
        g = hp[c]
        hp[i] = g
        hk[i] = hk[c]
        pos[g] = i
        i = c
    hp[i] = f
    hk[i] = k
    pos[f] = i


@cached_jit(inline="always")
def heap_set(
    hp: IntArray, hk: FloatArray, pos: IntArray, size: IntArray, f: int, value: float
) -> None:  # pragma: no cover - compiled
    """Insert item ``f`` with key ``value`` or change its key. The heap holds items ``hp``
    and their keys ``hk`` by position (keys next to each other: sifting reads no item's
    row), ``pos`` is every item's position (-1 if absent), ``size[0]`` the heap size."""
    i = pos[f]
    if i < 0:
        i = size[0]
        size[0] += 1
        sift_up(hp, hk, pos, i, f, value)
    elif value < hk[i]:
        sift_up(hp, hk, pos, i, f, value)
    else:
        sift_down(hp, hk, pos, i, f, value, size[0])


@cached_jit(inline="always")
def heap_pop(
    hp: IntArray, hk: FloatArray, pos: IntArray, size: IntArray
) -> int:  # pragma: no cover - compiled
    f = hp[0]
    n = size[0] - 1
    size[0] = n
    pos[f] = -1
    if n > 0:
        sift_down(hp, hk, pos, 0, hp[n], hk[n], n)
    return f


@cached_jit(inline="always")
def heap_remove(
    hp: IntArray, hk: FloatArray, pos: IntArray, size: IntArray, f: int
) -> None:  # pragma: no cover - compiled
    """Take item ``f`` (in the heap) out: the last item fills its hole."""
    i = pos[f]
    pos[f] = -1
    n = size[0] - 1
    size[0] = n
    if i < n:
        g, k = hp[n], hk[n]
        if i > 0 and hk[(i - 1) >> 1] > k:
            sift_up(hp, hk, pos, i, g, k)
        else:
            sift_down(hp, hk, pos, i, g, k, n)


@cached_jit(internal=True)
def open_links(
    lhp: IntArray,
    lev: FloatArray,
    lpos: IntArray,
    lsz: IntArray,
    cap: FloatArray,
    load: FloatArray,
    n_act: FloatArray,
) -> None:  # pragma: no cover - compiled
    """Put every link with active flows (``n_act > 0``) and finite capacity into a filling's
    link heap at its fill level ``(cap - load) / n_act``."""
    for q in range(cap.size):
        if n_act[q] > 0.0 and cap[q] < np.inf:
            heap_set(lhp, lev, lpos, lsz, q, (cap[q] - load[q]) / n_act[q])


@cached_jit(inline="always")
def fresh_top(
    lhp: IntArray,
    lev: FloatArray,
    lpos: IntArray,
    lsz: IntArray,
    cap: FloatArray,
    load: FloatArray,
    n_act: FloatArray,
    floor: FloatArray,
) -> bool:  # pragma: no cover - compiled
    """Bring the key at the top of a progressive filling's link heap up to date: a link whose
    fill level ``(cap - load) / n_act`` rose sinks to its place, a link left with no active
    flow (``n_act <= floor``) leaves. Heap items are link numbers into ``cap``, ``load``,
    ``n_act`` and ``floor``. Returns False when the heap is empty."""
    while lsz[0] > 0:
        q = lhp[0]
        if n_act[q] <= floor[q]:
            n_act[q] = 0.0
            heap_pop(lhp, lev, lpos, lsz)
            continue
        level = (cap[q] - load[q]) / n_act[q]
        if level <= lev[0]:  # (up to round-off: it never falls)
            lev[0] = level
            return True
        sift_down(lhp, lev, lpos, 0, q, level, lsz[0])
    return False


@cached_jit(inline="always")
def pop_through(
    lhp: IntArray,
    lev: FloatArray,
    lpos: IntArray,
    lsz: IntArray,
    cap: FloatArray,
    load: FloatArray,
    n_act: FloatArray,
    floor: FloatArray,
    thresh: float,
    sat: IntArray,
) -> int:  # pragma: no cover - compiled
    """Pop every link of a progressive filling's link heap whose (fresh) fill level is at most
    ``thresh`` into ``sat``; returns how many (the links that saturate at this level)."""
    n_sat = 0
    while fresh_top(lhp, lev, lpos, lsz, cap, load, n_act, floor) and lev[0] <= thresh:
        sat[n_sat] = heap_pop(lhp, lev, lpos, lsz)
        n_sat += 1
    return n_sat
