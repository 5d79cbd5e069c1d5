"""Max-min fair bandwidth allocation by exact progressive filling, vectorized.

Flows share links of finite capacity. Max-min fairness raises the rate of every unfrozen flow
together; when a link fills up, the flows crossing it are frozen at the current level. The
solver works on *weighted* flows: a row of weight ``w`` stands for ``w`` identical flows that
follow the same path (the aggregation of PERFORMANCE-NOTES.md), each of which gets the returned
rate, and loads every link on its path with ``w * rate``.

The filling is computed in absolute levels, not increments, so no rounding error accumulates:
a link ``l`` with frozen load ``F_l``, unfrozen weight ``n_l`` and capacity ``c_l`` would fill at
level ``(c_l - F_l) / n_l``; the next level is the smallest of these (or of a flow's own rate cap),
and every flow on a link filling at that level (within a relative ``rtol``) freezes there. Only
the links of newly frozen flows are touched per level, so a solve costs ``O(nnz)`` sparse work
plus ``O(links)`` NumPy work per distinct bottleneck level.

With ``eps > 0`` the solver is the (1+eps)-approximate variant (Awerbuch–Shavitt): all links
filling within a factor ``1 + eps`` of the smallest level freeze together at that level, so the
number of levels is at most ``log_{1+eps}`` of the range of levels. Every rate is then at most
the exact one's and at least ``1/(1+eps)`` of the level it would have frozen at.

Examples
--------
Two flows on one link get half each; a third flow alone on a second link gets all of it:

>>> import numpy as np
>>> r = maxmin_rates(
...     flow_links=[[0], [0], [1]], capacity=np.array([10.0, 4.0])
... )
>>> r.rates.tolist()
[5.0, 5.0, 4.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import PreconditionError
from lumoscore.jit import cached_jit
from lumoscore.jitsort import argsort
from lumoscore.sim.heaps import fresh_top, open_links, pop_through

__all__ = ["MaxMinResult", "incidence", "maxmin_rates"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class MaxMinResult:
    """Rates of a max-min fair allocation.

    Attributes
    ----------
    rates : ndarray of float
        Rate of one flow of each row (a row of weight ``w`` uses ``w * rate``).
    levels : int
        Distinct bottleneck levels the filling went through.
    eps : float
        Approximation used (0 = exact).
    bottleneck : ndarray of int
        For each flow, a link that froze it (``-1`` if its own rate cap did).
    """

    rates: FloatArray
    levels: int
    eps: float
    bottleneck: NDArray[np.int64]

    def link_load(self, A: sp.csr_array, weight: ArrayLike | None = None) -> FloatArray:
        """Load of every link (``A`` is the flow x link incidence)."""
        w = np.ones(A.shape[0]) if weight is None else np.asarray(weight, dtype=float)
        return np.asarray(A.T @ (w * self.rates), dtype=float)


def incidence(flow_links: Sequence[Sequence[int]], n_links: int | None = None) -> sp.csr_array:
    """Flow x link incidence matrix (CSR, 0/1) from each flow's list of links.

    A link listed twice for one flow counts twice (the flow crosses it twice).

    Examples
    --------
    >>> incidence([[0, 2], [1]]).toarray().astype(int).tolist()
    [[1, 0, 1], [0, 1, 0]]
    """
    lengths = np.fromiter((len(p) for p in flow_links), dtype=np.int64, count=len(flow_links))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = (
        np.fromiter((l for p in flow_links for l in p), dtype=np.int64, count=int(indptr[-1]))
        if indptr[-1]
        else np.zeros(0, dtype=np.int64)
    )
    if indices.size and indices.min() < 0:
        raise PreconditionError(f"link indices must be >= 0, got {int(indices.min())}")
    n = int(indices.max()) + 1 if n_links is None and indices.size else (n_links or 0)
    A = sp.csr_array(
        (np.ones(indices.size), indices, indptr), shape=(len(flow_links), n), dtype=float
    )
    A.sum_duplicates()
    return A


def _as_incidence(
    A: sp.sparray | sp.spmatrix | NDArray | None,
    flow_links: Sequence[Sequence[int]] | None,
    n_links: int,
) -> sp.csr_array:
    if (A is None) == (flow_links is None):
        raise PreconditionError("give exactly one of A (flow x link incidence) or flow_links")
    if A is None:
        return incidence(flow_links, n_links)  # type: ignore[arg-type]
    M = sp.csr_array(A, dtype=float)
    if M.shape[1] != n_links:
        raise PreconditionError(
            f"incidence has {M.shape[1]} link columns but capacity has {n_links} entries"
        )
    if M.nnz and (M.data.min() < 0 or not np.all(np.isfinite(M.data))):
        raise PreconditionError("incidence entries must be finite and >= 0")
    M.eliminate_zeros()
    return M


def maxmin_rates(
    A: sp.sparray | sp.spmatrix | NDArray | None = None,
    capacity: ArrayLike = (),
    *,
    flow_links: Sequence[Sequence[int]] | None = None,
    weight: ArrayLike | None = None,
    max_rate: ArrayLike | None = None,
    eps: float = 0.0,
    rtol: float = 1e-12,
) -> MaxMinResult:
    """Max-min fair rates of weighted flows over capacitated links.

    Parameters
    ----------
    A : sparse or dense array, shape (flows, links), optional
        Flow x link incidence: ``A[f, l]`` is how many times flow ``f`` crosses link ``l``
        (usually 0/1). Give either ``A`` or ``flow_links``.
    capacity : array_like, shape (links,)
        Link capacities (> 0; ``inf`` for links that never limit).
    flow_links : sequence of sequences of int, optional
        The links of each flow, instead of ``A``.
    weight : array_like, shape (flows,), optional
        Identical flows each row stands for (> 0). Default 1.
    max_rate : array_like, shape (flows,), optional
        Per-flow rate cap (e.g. a demand); ``inf`` = none. A flow crossing no link needs a
        finite cap.
    eps : float
        0 for the exact allocation; > 0 for the (1+eps)-approximate one.
    rtol : float
        Relative tolerance under which two bottleneck levels are treated as equal.

    Returns
    -------
    MaxMinResult

    Raises
    ------
    PreconditionError
        Shapes disagree, a capacity is not positive, a weight is not positive, or a flow has
        neither a link nor a finite cap (its rate would be unbounded).

    Examples
    --------
    The classic three-link line: one long flow over links 0 and 1, one short flow on each.

    >>> res = maxmin_rates(flow_links=[[0, 1], [0], [1]], capacity=[1.0, 2.0])
    >>> res.rates.tolist()
    [0.5, 0.5, 1.5]
    """
    cap = np.asarray(capacity, dtype=float).ravel()
    L = cap.size
    M = _as_incidence(A, flow_links, L)
    n_flows = M.shape[0]
    if L and (np.any(np.isnan(cap)) or cap.min() <= 0):
        raise PreconditionError("link capacities must be > 0 (use inf for unlimited links)")
    w = np.ones(n_flows) if weight is None else np.asarray(weight, dtype=float).ravel()
    if w.shape != (n_flows,):
        raise PreconditionError(f"weight has shape {w.shape}, expected ({n_flows},)")
    if n_flows and (not np.all(np.isfinite(w)) or w.min() <= 0):
        raise PreconditionError("flow weights must be finite and > 0")
    cap_f = np.full(n_flows, np.inf) if max_rate is None else np.asarray(max_rate, float).ravel()
    if cap_f.shape != (n_flows,):
        raise PreconditionError(f"max_rate has shape {cap_f.shape}, expected ({n_flows},)")
    if n_flows and (np.any(np.isnan(cap_f)) or cap_f.min() < 0):
        raise PreconditionError("max_rate must be >= 0")
    if not (eps >= 0 and math.isfinite(eps)):
        raise PreconditionError(f"eps must be a finite number >= 0, got {eps!r}")

    if n_flows == 0:
        return MaxMinResult(np.zeros(0), 0, eps, np.zeros(0, dtype=np.int64))
    lonely = np.diff(M.indptr) == 0
    if np.any(lonely & ~np.isfinite(cap_f)):
        f = int(np.flatnonzero(lonely & ~np.isfinite(cap_f))[0])
        raise PreconditionError(f"flow {f} crosses no link and has no finite max_rate")
    T = sp.csr_array(M.T)
    rates, bottleneck, levels = _fill(
        M.indptr.astype(np.int64),
        M.indices.astype(np.int64),
        M.data,
        T.indptr.astype(np.int64),
        T.indices.astype(np.int64),
        T.data,
        cap,
        w,
        cap_f,
        1.0 + eps,
        rtol,
        np.ones(n_flows, dtype=np.bool_),
    )
    return MaxMinResult(rates, int(levels), eps, bottleneck)


@cached_jit
def _fill(
    f_ptr: NDArray[np.int64],
    f_idx: NDArray[np.int64],
    f_val: FloatArray,
    t_ptr: NDArray[np.int64],
    t_idx: NDArray[np.int64],
    t_val: FloatArray,
    cap: FloatArray,
    w: FloatArray,
    cap_f: FloatArray,
    grow: float,
    rtol: float,
    alive: NDArray[np.bool_],
) -> tuple[FloatArray, NDArray[np.int64], int]:  # pragma: no cover - compiled
    """Progressive filling over the flows with ``alive[f]``; the others get rate 0."""
    n_flows = f_ptr.size - 1
    n_links = cap.size
    n_act = np.zeros(n_links)
    for f in range(n_flows):
        if not alive[f]:
            continue
        for k in range(f_ptr[f], f_ptr[f + 1]):
            n_act[f_idx[k]] += f_val[k] * w[f]
    floor = n_act * 1e-12
    load = np.zeros(n_links)
    active = alive.copy()
    rates = np.zeros(n_flows)
    bott = np.full(n_flows, -1, dtype=np.int64)
    by_cap = argsort(cap_f)
    next_cap = 0
    left = 0
    for f in range(n_flows):
        if alive[f]:
            left += 1
    levels = 0
    # open links by fill level; levels only rise, so keys are lower bounds (see fresh_top)
    lev = np.empty(n_links)
    hp = np.empty(n_links, dtype=np.int64)
    pos = np.full(n_links, -1, dtype=np.int64)
    size = np.zeros(1, dtype=np.int64)
    open_links(hp, lev, pos, size, cap, load, n_act)
    sat = np.empty(n_links, dtype=np.int64)
    while left > 0:
        t = np.inf
        if fresh_top(hp, lev, pos, size, cap, load, n_act, floor):
            t = lev[0]
        while next_cap < n_flows and not active[by_cap[next_cap]]:
            next_cap += 1
        if next_cap < n_flows and cap_f[by_cap[next_cap]] < t:
            t = cap_f[by_cap[next_cap]]
        if t < 0.0:
            t = 0.0
        levels += 1
        thresh = t * grow * (1.0 + rtol)
        n_sat = pop_through(hp, lev, pos, size, cap, load, n_act, floor, thresh, sat)
        for i in range(n_sat):
            l = sat[i]
            for k in range(t_ptr[l], t_ptr[l + 1]):
                f = t_idx[k]
                if active[f]:
                    active[f] = False
                    left -= 1
                    rates[f] = t
                    bott[f] = l
                    for j in range(f_ptr[f], f_ptr[f + 1]):
                        l2 = f_idx[j]
                        n_act[l2] -= f_val[j] * w[f]
                        load[l2] += f_val[j] * w[f] * t
        while next_cap < n_flows and cap_f[by_cap[next_cap]] <= thresh:
            f = by_cap[next_cap]
            next_cap += 1
            if active[f]:
                active[f] = False
                left -= 1
                rates[f] = cap_f[f] if grow == 1.0 else t
                for j in range(f_ptr[f], f_ptr[f + 1]):
                    l2 = f_idx[j]
                    n_act[l2] -= f_val[j] * w[f]
                    load[l2] += f_val[j] * w[f] * rates[f]
    return rates, bott, levels


@cached_jit
def _transpose(
    f_ptr: NDArray[np.int64], f_idx: NDArray[np.int64], n_links: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:  # pragma: no cover - compiled
    """Link -> flows CSR of a flow -> links CSR (counting sort, O(nnz))."""
    t_ptr = np.zeros(n_links + 1, dtype=np.int64)
    for k in range(f_idx.size):
        t_ptr[f_idx[k] + 1] += 1
    for l in range(n_links):
        t_ptr[l + 1] += t_ptr[l]
    fill = t_ptr[:-1].copy()
    t_idx = np.empty(f_idx.size, dtype=np.int64)
    for f in range(f_ptr.size - 1):
        for k in range(f_ptr[f], f_ptr[f + 1]):
            l = f_idx[k]
            t_idx[fill[l]] = f
            fill[l] += 1
    return t_ptr, t_idx


@cached_jit(internal=True)
def _compact(
    f_idx: NDArray[np.int64], capacity: FloatArray
) -> tuple[NDArray[np.int64], FloatArray, NDArray[np.int64]]:  # pragma: no cover - compiled
    """Renumber the links that flows use as 0..m-1 in order of first use; returns the local
    route entries, the local capacities and each local link's fabric id (progressive filling
    scans links per level, so a round that touches few of a large fabric's links must not pay
    for the others). O(route entries): the fabric-sized map is left uninitialised and an
    entry counts only where it points back to its link (a sparse set), so a round on a
    fabric of millions of links does not clear millions of entries."""
    remap = np.empty(capacity.size, dtype=np.int64)
    glob = np.empty(f_idx.size, dtype=np.int64)
    c_idx = np.empty(f_idx.size, dtype=np.int64)
    m = 0
    for k in range(f_idx.size):
        l = f_idx[k]
        r = remap[l]
        if r < 0 or r >= m or glob[r] != l:
            r = m
            remap[l] = m
            glob[m] = l
            m += 1
        c_idx[k] = r
    c_cap = np.empty(m)
    for r in range(m):
        c_cap[r] = capacity[glob[r]]
    return c_idx, c_cap, glob[:m]
