"""Compiled fluid-model kernels: flows sending at max-min fair rates until they finish.

Rates are piecewise constant between flow completions. Two facts keep the cost of a step
proportional to the flows whose rate actually changes, not to all flows in flight:

* **Refilling from a level.** After flows leave, every flow frozen at a level *below* the
  smallest rate ``r`` of the flows that left keeps its rate: progressive filling on the smaller
  problem goes through exactly the same levels up to ``r`` (a link crossed by a flow of rate
  ``r`` fills at a level ``>= r``, and removing load only raises fill levels). So only the flows
  at or above ``r`` are refilled, on the links they cross, with the others' load frozen in
  (:data:`REFILL_MARGIN` absorbs float round-off). Flows are kept sorted by rate, so the
  refilled ones are a suffix found by binary search. The same holds for the (1+eps)-approximate
  filling, whose levels are also monotone.
* **Finish times, not remaining bytes.** Each flow keeps its remaining bits at the time its rate
  was last set and its finish time, in a binary heap; nothing is touched for the flows whose
  rate did not change.

:func:`fluid_run` runs one set of flows that start together (a round alone on the fabric);
:func:`fluid_advance` runs the shared in-flight flows of several jobs ahead in time until the
next external event or until some job's round has no flow left (its barrier).

Examples
--------
Two flows share a 10 bit/s link; one has 10 bits, the other 20. Both get 5 bit/s; the first
finishes at t = 2 s, then the second gets 10 bit/s and finishes its last 10 bits at t = 3 s:

>>> import numpy as np
>>> t, rem, links, peak = fluid_run(
...     np.array([0, 1, 2]), np.array([0, 0]), np.ones(2), np.array([10.0, 20.0]),
...     np.array([10.0, 20.0]), np.array([10.0]), np.inf, 1e-9)
>>> float(t), rem.tolist(), links.tolist(), peak.tolist()
(3.0, [0.0, 0.0], [0], [10.0])
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from lumoscore.sim.maxmin import _compact

__all__ = ["REFILL_MARGIN", "FluidState", "fluid_advance", "fluid_run", "new_state"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Flows whose rate is below ``(1 - REFILL_MARGIN)`` times the smallest rate of the flows that
#: left keep their rate; the others are refilled.
REFILL_MARGIN = 1e-9
#: Relative tolerance under which two bottleneck levels are the same level.
LEVEL_RTOL = 1e-12

# solve modes
RATES_VALID, REFILL, FULL_SOLVE = 0, 1, 2

#: Per-row and per-link state of a fluid set (see :func:`new_state`), in this order:
#: rate, rem0 (remaining bits at t0), t0, fin (finish time), heap, pos (heap position or -1),
#: order (rows by rate), link_load (bit/s on each compact link), meta (int64[4]: heap size,
#: order length, solves, levels), lid (scratch: local number of each link, -1), peak (the
#: highest load each link has carried).
FluidState = tuple[
    FloatArray,
    FloatArray,
    FloatArray,
    FloatArray,
    IntArray,
    IntArray,
    IntArray,
    FloatArray,
    IntArray,
    IntArray,
    FloatArray,
]


@numba.njit(cache=True)
def new_state(n_rows: int, n_links: int) -> FluidState:  # pragma: no cover - compiled
    """Fresh kernel state for ``n_rows`` flow rows over ``n_links`` (compact) links."""
    return (
        np.zeros(n_rows),
        np.zeros(n_rows),
        np.zeros(n_rows),
        np.full(n_rows, np.inf),
        np.zeros(n_rows, dtype=np.int64),
        np.full(n_rows, -1, dtype=np.int64),
        np.zeros(n_rows, dtype=np.int64),
        np.zeros(n_links),
        np.zeros(4, dtype=np.int64),
        np.full(n_links, -1, dtype=np.int64),
        np.zeros(n_links),
    )


@numba.njit(cache=True)
def _sift_up(hp: IntArray, pos: IntArray, key: FloatArray, i: int) -> None:  # pragma: no cover
    f = hp[i]
    k = key[f]
    while i > 0:
        parent = (i - 1) >> 1
        g = hp[parent]
        if key[g] <= k:
            break
        hp[i] = g
        pos[g] = i
        i = parent
    hp[i] = f
    pos[f] = i


@numba.njit(cache=True)
def _sift_down(
    hp: IntArray, pos: IntArray, key: FloatArray, i: int, n: int
) -> None:  # pragma: no cover
    f = hp[i]
    k = key[f]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and key[hp[c + 1]] < key[hp[c]]:
            c += 1
        g = hp[c]
        if key[g] >= k:
            break
        hp[i] = g
        pos[g] = i
        i = c
    hp[i] = f
    pos[f] = i


@numba.njit(cache=True)
def _heap_set(
    hp: IntArray, pos: IntArray, key: FloatArray, meta: IntArray, f: int, value: float
) -> None:  # pragma: no cover - compiled
    """Insert item ``f`` with key ``value`` or change its key (``meta[0]``: heap size)."""
    if pos[f] < 0:
        i = meta[0]
        meta[0] += 1
        hp[i] = f
        pos[f] = i
        key[f] = value
        _sift_up(hp, pos, key, i)
        return
    old = key[f]
    key[f] = value
    if value < old:
        _sift_up(hp, pos, key, pos[f])
    else:
        _sift_down(hp, pos, key, pos[f], meta[0])


@numba.njit(cache=True)
def _heap_pop(
    hp: IntArray, pos: IntArray, key: FloatArray, meta: IntArray
) -> int:  # pragma: no cover - compiled
    f = hp[0]
    n = meta[0] - 1
    meta[0] = n
    pos[f] = -1
    if n > 0:
        last = hp[n]
        hp[0] = last
        pos[last] = 0
        _sift_down(hp, pos, key, 0, n)
    return f


@numba.njit(cache=True)
def _heap_remove(
    hp: IntArray, pos: IntArray, key: FloatArray, meta: IntArray, f: int
) -> None:  # pragma: no cover - compiled
    i = pos[f]
    n = meta[0] - 1
    meta[0] = n
    pos[f] = -1
    if i == n:
        return
    last = hp[n]
    hp[i] = last
    pos[last] = i
    if key[last] < key[f]:
        _sift_up(hp, pos, key, i)
    else:
        _sift_down(hp, pos, key, i, n)


@numba.njit(cache=True)
def _refill(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    alive: BoolArray,
    st: FluidState,
    p: int,
    clock_s: float,
    grow: float,
) -> None:  # pragma: no cover - compiled
    """Progressive filling of the alive rows in ``order[p:]`` (the others keep their rates and
    their load stays in ``link_load``); updates their finish times and the order."""
    rate, rem0, t0, fin, hp, pos, order, link_load, meta, local, peak = st
    n_order = meta[1]
    # the rows to fill, and the links they cross (local numbering)
    k = 0
    for i in range(p, n_order):
        if alive[order[i]]:
            k += 1
    rows = np.empty(k, dtype=np.int64)
    k = 0
    for i in range(p, n_order):
        f = order[i]
        if alive[f]:
            rows[k] = f
            k += 1
    nnz = 0
    for f in rows:
        nnz += f_ptr[f + 1] - f_ptr[f]
    links = np.empty(min(nnz, cap.size), dtype=np.int64)
    m = 0
    for f in rows:
        r_old = rate[f]
        sending = r_old > 0.0 and r_old < np.inf
        if sending:
            rem0[f] = max(rem0[f] - r_old * (clock_s - t0[f]), 0.0)
        t0[f] = clock_s
        for j in range(f_ptr[f], f_ptr[f + 1]):
            l = c_idx[j]
            if sending:
                link_load[l] -= weight[f] * r_old
            if local[l] < 0:
                local[l] = m
                links[m] = l
                m += 1
    n_act = np.zeros(m)
    l_ptr = np.zeros(m + 1, dtype=np.int64)
    for f in rows:
        for j in range(f_ptr[f], f_ptr[f + 1]):
            q = local[c_idx[j]]
            n_act[q] += weight[f]
            l_ptr[q + 1] += 1
    for q in range(m):
        l_ptr[q + 1] += l_ptr[q]
    fill = l_ptr[:-1].copy()
    l_rows = np.empty(nnz, dtype=np.int64)
    for i in range(k):
        f = rows[i]
        for j in range(f_ptr[f], f_ptr[f + 1]):
            q = local[c_idx[j]]
            l_rows[fill[q]] = i
            fill[q] += 1
    # progressive filling; the links' fill levels sit in a heap (levels never decrease)
    floor = n_act * 1e-12
    lev = np.full(m, np.inf)
    lhp = np.empty(m, dtype=np.int64)
    lpos = np.full(m, -1, dtype=np.int64)
    lsz = np.zeros(1, dtype=np.int64)
    for q in range(m):
        c = cap[links[q]]
        if n_act[q] > 0.0 and c < np.inf:
            _heap_set(lhp, lpos, lev, lsz, q, (c - link_load[links[q]]) / n_act[q])
    active = np.ones(k, dtype=np.bool_)
    left = k
    sat = np.empty(m, dtype=np.int64)
    while left > 0 and lsz[0] > 0:
        t = lev[lhp[0]]
        if t < 0.0:
            t = 0.0
        meta[3] += 1
        thresh = t * grow * (1.0 + LEVEL_RTOL)
        n_sat = 0
        while lsz[0] > 0 and lev[lhp[0]] <= thresh:
            sat[n_sat] = _heap_pop(lhp, lpos, lev, lsz)
            n_sat += 1
        for i in range(n_sat):
            q = sat[i]
            for z in range(l_ptr[q], l_ptr[q + 1]):
                r = l_rows[z]
                if active[r]:
                    active[r] = False
                    left -= 1
                    f = rows[r]
                    rate[f] = t
                    for j in range(f_ptr[f], f_ptr[f + 1]):
                        l2 = c_idx[j]
                        q2 = local[l2]
                        n_act[q2] -= weight[f]
                        link_load[l2] += weight[f] * t
                        if lpos[q2] >= 0:
                            if n_act[q2] <= floor[q2]:
                                n_act[q2] = 0.0
                                _heap_remove(lhp, lpos, lev, lsz, q2)
                            else:
                                _heap_set(
                                    lhp, lpos, lev, lsz, q2, (cap[l2] - link_load[l2]) / n_act[q2]
                                )
    for i in range(k):
        if active[i]:
            rate[rows[i]] = np.inf

    for q in range(m):
        l = links[q]
        local[l] = -1
        if link_load[l] > peak[l]:
            peak[l] = link_load[l]
    # new finish times, and the refilled rows back into the order, sorted by rate
    for f in rows:
        r = rate[f]
        _heap_set(hp, pos, fin, meta, f, clock_s + rem0[f] / r if r > 0.0 else np.inf)
    by_rate = np.argsort(rate[rows], kind="mergesort")
    for i in range(k):
        order[p + i] = rows[by_rate[i]]
    meta[1] = p + k


@numba.njit(cache=True)
def _first_at_least(
    rate: FloatArray, order: IntArray, n: int, limit: float
) -> int:  # pragma: no cover
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if rate[order[mid]] < limit:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _solve(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    alive: BoolArray,
    st: FluidState,
    mode: int,
    r_min: float,
    clock_s: float,
    grow: float,
) -> None:  # pragma: no cover - compiled
    rate, pos, order, link_load, meta = st[0], st[5], st[6], st[7], st[8]
    if mode == FULL_SOLVE:
        link_load[:] = 0.0
        meta[0] = 0
        n = 0
        for f in range(alive.size):
            pos[f] = -1
            if alive[f]:
                # rows keep their (rem0, t0, rate) history; zero rate = nothing sent since t0
                order[n] = f
                n += 1
        meta[1] = n
        for f in range(alive.size):
            if alive[f] and rate[f] > 0.0 and rate[f] < np.inf:
                for j in range(f_ptr[f], f_ptr[f + 1]):
                    link_load[c_idx[j]] += weight[f] * rate[f]
        _refill(f_ptr, c_idx, cap, weight, alive, st, 0, clock_s, grow)
    else:
        p = _first_at_least(rate, order, meta[1], r_min * (1.0 - REFILL_MARGIN))
        _refill(f_ptr, c_idx, cap, weight, alive, st, p, clock_s, grow)
    meta[2] += 1


@numba.njit(cache=True)
def fluid_advance(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    size: FloatArray,
    alive: BoolArray,
    slot: IntArray,
    live: IntArray,
    st: FluidState,
    clock_s: float,
    until_s: float,
    mode: int,
    r_min: float,
    grow: float,
    done_rtol: float,
) -> tuple[float, int, float, bool]:  # pragma: no cover - compiled
    """Run the in-flight rows from ``clock_s`` towards ``until_s``.

    Rates are (re)computed as ``mode`` says (:data:`FULL_SOLVE`, :data:`REFILL` above
    ``r_min``, or :data:`RATES_VALID`). Stops at ``until_s``, or as soon as flow completions
    leave some slot (a job's round) with no live row (``live[slot]`` counts them), or when no
    row can progress. ``alive``, ``live`` and the state ``st`` are updated in place.

    Returns ``(clock_s, mode, r_min, round_done)``.
    """
    rate, fin, hp, pos, link_load, meta = st[0], st[3], st[4], st[5], st[7], st[8]
    while True:
        if mode != RATES_VALID:
            _solve(f_ptr, c_idx, cap, weight, alive, st, mode, r_min, clock_s, grow)
            mode = RATES_VALID
            r_min = np.inf
        if meta[0] == 0 or fin[hp[0]] > until_s:
            if until_s < np.inf:
                clock_s = max(clock_s, until_s)
            return clock_s, mode, r_min, False
        t_next = fin[hp[0]]
        dt = t_next - clock_s
        clock_s = t_next
        done = False
        while meta[0] > 0:
            g = hp[0]
            r = rate[g]
            if r < np.inf and r * (fin[g] - clock_s) > size[g] * done_rtol + r * dt * 1e-12:
                break
            _heap_pop(hp, pos, fin, meta)
            alive[g] = False
            if r > 0.0 and r < np.inf:
                for j in range(f_ptr[g], f_ptr[g + 1]):
                    link_load[c_idx[j]] -= weight[g] * r
            live[slot[g]] -= 1
            if live[slot[g]] == 0:
                done = True
            if r < r_min:
                r_min = r
        mode = REFILL
        if done:
            return clock_s, mode, r_min, True


@numba.njit(cache=True)
def remaining_at(
    alive: BoolArray, st: FluidState, clock_s: float
) -> FloatArray:  # pragma: no cover - compiled
    """Remaining bits of every row at ``clock_s`` (0 for finished rows)."""
    rate, rem0, t0 = st[0], st[1], st[2]
    out = np.zeros(alive.size)
    for f in range(alive.size):
        if alive[f]:
            r = rate[f]
            out[f] = max(rem0[f] - (r * (clock_s - t0[f]) if r > 0.0 else 0.0), 0.0)
    return out


@numba.njit(cache=True)
def fluid_run(
    f_ptr: IntArray,
    f_idx: IntArray,
    weight: FloatArray,
    size: FloatArray,
    remaining: FloatArray,
    capacity: FloatArray,
    until_s: float,
    done_rtol: float,
    grow: float = 1.0,
) -> tuple[float, FloatArray, IntArray, FloatArray]:  # pragma: no cover - compiled
    """Fluid model of flows starting together: run until all finish or ``until_s`` passes.

    ``grow = 1 + eps`` selects the (1+eps)-approximate allocation. Returns the elapsed time
    (``inf`` if some flow can never finish), the remaining size of every flow, and the links
    the flows cross with the highest load (bit/s) each carried meanwhile.
    """
    n = weight.size
    alive = np.zeros(n, dtype=np.bool_)
    live = np.zeros(1, dtype=np.int64)
    for f in range(n):
        if remaining[f] > size[f] * done_rtol:
            alive[f] = True
            live[0] += 1
    c_idx, c_cap = _compact(f_idx, capacity)
    glob = np.empty(c_cap.size, dtype=np.int64)
    for k in range(f_idx.size):
        glob[c_idx[k]] = f_idx[k]
    st = new_state(n, c_cap.size)
    st[1][:] = np.where(alive, remaining, 0.0)
    slot = np.zeros(n, dtype=np.int64)
    t = 0.0
    if live[0] > 0:
        t, _, _, done = fluid_advance(
            f_ptr,
            c_idx,
            c_cap,
            weight,
            size,
            alive,
            slot,
            live,
            st,
            0.0,
            until_s,
            FULL_SOLVE,
            np.inf,
            grow,
            done_rtol,
        )
        if not done and t < until_s:
            t = np.inf  # some flow can never finish (zero capacity)
    return t, remaining_at(alive, st, t), glob, st[10]
