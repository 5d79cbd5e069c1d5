"""Minimum-MLU traffic engineering over direct and two-hop pod paths, by LP.

A commodity is a pod pair ``(s, t)`` with demand ``D[s, t] > 0``; its paths are the direct
link ``s -> t`` and every two-hop path ``s -> k -> t`` over links of capacity > 0 (Cross
Wiring §8.1's TE on an OCS-realized topology). :func:`min_mlu` solves

    min U  s.t.  sum_p x_p = D[s, t] for every commodity,
                 sum_{p through e} x_p <= U cap[e] for every link e,  x >= 0,

over path variables, with HiGHS through SciPy. There are ``P^3`` two-hop paths, so beyond
:data:`FULL_LP_PATHS` of them (about 80 pods) the LP is solved by **column generation**,
exactly: it starts
from the direct paths (and, in :func:`min_mlu_series`, the paths the previous snapshot used),
prices every two-hop path with the link duals (a vectorized min-plus product) and adds the
paths of negative reduced cost until there are none, so the optimum is the full LP's. On
dense, skewed matrices many links reach the MLU together and column generation needs dozens
of rounds, so below that size the full LP is faster (64 pods: about 2 s a snapshot either
way, on one core).
:func:`min_mlu_edge_flows` solves the same problem over per-commodity link flows with
conservation at the intermediate pods, an independent formulation used to check the first
(the tests compare them to 1e-6).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import linprog

from lumoscore.errors import ConfigError, InfeasibleError, SolverError
from lumoscore.te.matrices import check_capacity, check_traffic

__all__ = [
    "FULL_LP_PATHS",
    "TE_METHODS",
    "TEMethod",
    "TEResult",
    "min_mlu",
    "min_mlu_edge_flows",
    "min_mlu_series",
    "path_incidence",
    "two_hop_paths",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: How :func:`min_mlu` solves: every path at once, column generation, by size (exact), or
#: to a certified relative gap (:mod:`lumoscore.te.fast`).
TEMethod = Literal["auto", "full", "columns", "certified"]
#: ``method="auto"`` solves the full path LP up to this many two-hop paths.
FULL_LP_PATHS = 500_000
#: Relative tolerance on a path's reduced cost in column generation.
_RC_TOL = 1e-9
#: Paths added per commodity and round of column generation.
_ADD_PER_ROUND = 3
#: The methods :func:`min_mlu` accepts.
TE_METHODS: tuple[str, ...] = ("auto", "full", "columns", "certified")


@dataclass(frozen=True)
class TEResult:
    """A routing: its MLU, the load on every link, the share of the demand sent directly,
    the two-hop paths carrying flow (``(s, k, t)`` rows), and a lower bound on the optimal
    MLU with the relative gap ``(mlu - lower_bound) / lower_bound`` (the exact methods: the
    LP optimum itself, gap 0)."""

    mlu: float
    load: FloatArray
    direct_share: float
    transit: IntArray
    lower_bound: float = float("nan")
    gap: float = 0.0


def _commodities(cap: FloatArray, tm: FloatArray) -> tuple[IntArray, IntArray]:
    s, t = np.nonzero(tm > 0)
    up = cap > 0
    reach = up[s, t] | (up[s] & up[:, t].T).any(axis=1)
    if not reach.all():
        q = int(np.flatnonzero(~reach)[0])
        raise InfeasibleError(
            f"pods {s[q]} -> {t[q]}: demand {tm[s[q], t[q]]:g} but no direct or two-hop path"
        )
    return s, t


def _inputs(capacity: Any, traffic: Any) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """Checked capacity and traffic, and the commodities ``(s, t)``."""
    cap = check_capacity(capacity)
    tm = check_traffic(traffic, pods=cap.shape[0])
    if tm.ndim != 2:
        raise ConfigError(f"traffic matrix: one (P, P) snapshot expected, got {tm.shape}")
    s, t = _commodities(cap, tm)
    return cap, tm, s, t


def _min_u(
    cap: FloatArray, link: IntArray, col: IntArray, a_eq: Any, b_eq: Any
) -> tuple[FloatArray, float, Any, Any]:
    """Solve ``min U`` over columns ``0..n-1`` (then ``U``) whose flow crosses the links
    ``link`` (flat ``i * P + j``, one entry per (link, column) pair in ``col``), each link's
    load at most ``U`` times its capacity, with the equalities ``a_eq x = b_eq``. Returns the
    column values, ``U``, the link x column incidence (with the links) and the HiGHS result."""
    n = a_eq.shape[1] - 1
    links = np.flatnonzero(cap.ravel() > 0)
    pos = np.full(cap.size, -1)
    pos[links] = np.arange(links.size)
    inc = sp.csr_matrix((np.ones(link.size), (pos[link], col)), shape=(links.size, n))
    a_ub = sp.hstack([inc, sp.csr_matrix(-cap.ravel()[links][:, None])]).tocsr()
    c = np.zeros(n + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(links.size), A_eq=a_eq, b_eq=b_eq,
                  bounds=(0, None), method="highs")  # fmt: skip
    if res.status != 0:
        raise SolverError(f"HiGHS: {res.message}")
    return res.x[:n], float(res.x[-1]), (links, inc), res


def two_hop_paths(up: NDArray[np.bool_], s: IntArray, t: IntArray) -> tuple[IntArray, IntArray]:
    """Every two-hop path of the commodities ``(s, t)`` over the links ``up``: rows
    ``(commodity, k)`` with ``up[s, k]`` and ``up[k, t]``, ``k`` neither end.

    Examples
    --------
    >>> up = ~np.eye(3, dtype=bool)
    >>> [a.tolist() for a in two_hop_paths(up, np.array([0]), np.array([1]))]
    [[0], [2]]
    """
    ok = up[s] & up[:, t].T
    ok[np.arange(s.size), s] = False
    ok[np.arange(s.size), t] = False
    q, k = np.nonzero(ok)
    return q.astype(np.int64), k.astype(np.int64)


def _solve_paths(
    cap: FloatArray, tm: FloatArray, s: IntArray, t: IntArray, q: IntArray, k: IntArray
) -> tuple[FloatArray, float, Any, Any]:
    """The path LP over the direct paths and the two-hop paths ``(q, k)``: column ``j <
    n_direct`` is commodity ``direct[j]``'s direct path, then one column per ``(q, k)``."""
    direct = np.flatnonzero(cap[s, t] > 0)
    link, col, com = path_incidence(cap.shape[0], s, t, direct, q, k)
    n = com.size
    a_eq = sp.csr_matrix((np.ones(n), (com, np.arange(n))), shape=(s.size, n + 1))
    x, u, li, res = _min_u(cap, link, col, a_eq, tm[s, t])
    return x, u, li, (res, direct)


def path_incidence(
    P: int, s: IntArray, t: IntArray, direct: IntArray, q: IntArray, k: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Columns of a path LP over ``P`` pods: first the direct paths of the commodities
    ``direct``, then the two-hop paths ``(q, k)`` (commodity ``q`` through pod ``k``).
    Returns ``(link, col, com)``: every (flat link ``i * P + j``, column) incidence, and
    each column's commodity.

    Examples
    --------
    >>> [a.tolist() for a in path_incidence(3, np.array([0]), np.array([1]), np.array([0]),
    ...                                     np.array([0]), np.array([2]))]
    [[1, 2, 7], [0, 1, 1], [0, 0]]
    """
    nd = direct.size
    two = nd + np.arange(q.size)
    link = np.concatenate([s[direct] * P + t[direct], s[q] * P + k, k * P + t[q]])
    col = np.concatenate([np.arange(nd), two, two])
    return link, col, np.concatenate([direct, q])


def _price(cap: FloatArray, res: Any, links: IntArray, s: IntArray, t: IntArray) -> FloatArray:
    """``(Q, P)`` reduced cost of every commodity's path through every pod (``inf`` where
    there is none): the duals of its two links minus the commodity's."""
    P = cap.shape[0]
    w = np.full(P * P, np.inf)
    w[links] = -res.ineqlin.marginals
    W = w.reshape(P, P)
    rc = W[s] + W[:, t].T - res.eqlin.marginals[:, None]
    rc[np.arange(s.size), s] = np.inf
    rc[np.arange(s.size), t] = np.inf
    return rc


def _columns(
    cap: FloatArray, tm: FloatArray, s: IntArray, t: IntArray, start: IntArray | None
) -> tuple[FloatArray, float, Any, Any, IntArray, IntArray]:
    """Column generation (module docstring) from the two-hop paths ``start`` (``(s, k, t)``
    rows) and, for a commodity without a direct link, its widest two-hop path."""
    P = cap.shape[0]
    up = cap > 0
    index = np.full((P, P), -1)
    index[s, t] = np.arange(s.size)
    qs, ks = [], []
    if start is not None and len(start):
        st = np.asarray(start, dtype=np.int64).reshape(-1, 3)
        q0 = index[st[:, 0], st[:, 2]]
        keep = (q0 >= 0) & up[st[:, 0], st[:, 1]] & up[st[:, 1], st[:, 2]]
        qs.append(q0[keep]), ks.append(st[keep, 1])
    alone = np.flatnonzero(~up[s, t])
    if alone.size:
        qs.append(alone)
        ks.append(np.argmax(np.minimum(cap[s[alone]], cap[:, t[alone]].T), axis=1))
    q = np.concatenate(qs) if qs else np.zeros(0, np.int64)
    k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
    have = np.zeros((s.size, P), bool)
    have[q, k] = True
    q, k = np.nonzero(have)
    while True:
        x, u, li, (res, direct) = _solve_paths(cap, tm, s, t, q, k)
        rc = _price(cap, res, li[0], s, t)
        new = (rc < -_RC_TOL * max(1.0, u)) & ~have
        if not new.any():
            return x, u, li, direct, q, k
        # add each commodity's _ADD_PER_ROUND most negative paths (all of them at once
        # makes every round a near-full LP)
        rc[~new] = np.inf
        best = np.argpartition(rc, min(_ADD_PER_ROUND, P - 1), axis=1)[:, :_ADD_PER_ROUND]
        rows = np.repeat(np.arange(s.size), best.shape[1])
        pick = best.ravel()
        ok = np.isfinite(rc[rows, pick])
        have[rows[ok], pick[ok]] = True
        q, k = np.nonzero(have)


def min_mlu(
    capacity: Any,
    traffic: Any,
    *,
    method: TEMethod = "auto",
    start: Any = None,
    eps: float = 1e-3,
) -> TEResult:
    """The minimum MLU of ``traffic`` (``(P, P)``) on links of ``capacity`` (``(P, P)``,
    same units per second as the traffic), over direct and two-hop paths.

    Parameters
    ----------
    capacity, traffic : array_like
        ``(P, P)`` link capacities and demands, checked (:func:`check_traffic`).
    method : {"auto", "full", "columns", "certified"}
        ``full`` solves the LP over every path, ``columns`` by column generation (module
        docstring; the same optimum), ``auto`` picks ``full`` up to :data:`FULL_LP_PATHS`
        two-hop paths; ``certified`` routes by a first-order method to within ``eps`` of the
        optimum, proved by an LP-duality bound (:mod:`lumoscore.te.fast`; milliseconds where
        the LP takes seconds to minutes).
    start : array_like, optional
        ``(n, 3)`` two-hop paths ``(s, k, t)`` to start column generation from (a previous
        snapshot's :attr:`TEResult.transit`).
    eps : float
        ``certified`` only: the relative gap ``(MLU - bound) / bound`` to reach, in (0, 1).

    Raises
    ------
    InfeasibleError
        A commodity has no path.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.array([[0, 2.0], [2.0, 0]])
    >>> min_mlu(cap, np.array([[0, 1.0], [3.0, 0]])).mlu
    1.5
    """
    if method not in TE_METHODS:
        raise ConfigError(f"method {method!r} unknown; allowed: {', '.join(TE_METHODS)}")
    if not 0 < eps < 1:
        raise ConfigError(f"eps must be in (0, 1), got {eps!r}")
    cap, tm, s, t = _inputs(capacity, traffic)
    P = cap.shape[0]
    if not s.size:
        return TEResult(0.0, np.zeros((P, P)), 1.0, np.zeros((0, 3), np.int64), 0.0)
    if method == "certified":
        return _certified(cap, tm, eps)
    if method == "auto":
        method = "full" if s.size * max(P - 2, 0) <= FULL_LP_PATHS else "columns"
    # HiGHS's tolerances are absolute (1e-7): the LP is solved on traffic and capacities
    # scaled by powers of two to a largest entry in [0.5, 1), and mapped back exactly
    a, b = _unit(tm), _unit(cap)
    tm_u, cap_u = tm / a, cap / b
    if method == "full":
        q, k = two_hop_paths(cap > 0, s, t)
        x, mlu, (links, inc), (_, direct) = _solve_paths(cap_u, tm_u, s, t, q, k)
    else:
        x, mlu, (links, inc), direct, q, k = _columns(cap_u, tm_u, s, t, start)
    x, mlu = x * a, mlu * (a / b)
    load = np.zeros(P * P)
    load[links] = inc @ x
    nd = direct.size
    used = x[nd:] > 1e-12 * max(1.0, float(tm.max()))
    transit = np.stack([s[q[used]], k[used], t[q[used]]], axis=1).astype(np.int64)
    share = float(x[:nd].sum() / tm[s, t].sum())
    return TEResult(mlu, load.reshape(P, P), share, transit, mlu)


def _unit(m: FloatArray) -> float:
    """The power of two ``2**e`` with ``m.max() / 2**e`` in ``[0.5, 1)`` (1 for a zero
    matrix): dividing by it is exact."""
    top = float(m.max())
    return math.ldexp(1.0, math.frexp(top)[1]) if top > 0 else 1.0


def _certified(cap: FloatArray, tm: FloatArray, eps: float) -> TEResult:
    """``min_mlu(method="certified")`` of checked inputs with a demand."""
    from lumoscore.te.fast import certified_mlu, path_loads

    r = certified_mlu(cap, tm, eps=eps)
    P = cap.shape[0]
    split = r.split * (tm > 0)[:, :, None]
    two = split > 1e-12
    two[:, np.arange(P), np.arange(P)] = False  # [s, d, d] is the direct share
    s, t, k = np.nonzero(two)
    share = float((tm * split[:, np.arange(P), np.arange(P)]).sum() / tm.sum())
    transit = np.stack([s, k, t], axis=1).astype(np.int64)
    return TEResult(r.mlu, path_loads(cap, tm, split), share, transit, r.lower_bound, r.gap)


def min_mlu_series(
    capacity: Any, traffic: Any, *, method: TEMethod = "auto", eps: float = 1e-3
) -> Iterator[TEResult]:
    """:func:`min_mlu` of every snapshot of ``traffic`` (``(T, P, P)``) in turn, each column
    generation starting from the two-hop paths the previous snapshot used (consecutive
    snapshots of a real sequence route alike; ``certified`` starts every snapshot afresh,
    which measured faster). Yields one result per snapshot.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.array([[0, 2.0], [2.0, 0]])
    >>> [r.mlu for r in min_mlu_series(cap, [[[0, 1.0], [1.0, 0]], [[0, 4.0], [0, 0]]])]
    [0.5, 2.0]
    """
    seq = check_traffic(traffic)
    if seq.ndim == 2:
        seq = seq[None]
    start = None
    for tm in seq:
        res = min_mlu(capacity, tm, method=method, start=start, eps=eps)
        start = res.transit
        yield res


def min_mlu_edge_flows(capacity: Any, traffic: Any) -> float:
    """:func:`min_mlu`'s MLU from an edge-flow LP: per commodity ``(s, t)`` a flow on
    ``s -> t``, ``s -> k`` and ``k -> t`` (links of capacity > 0), conserved at every ``k``
    and delivering ``D[s, t]`` at ``t``; link loads at most ``U`` times capacity.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], float)
    >>> tm = np.array([[0, 2, 0], [0, 0, 0], [0, 0, 0]], float)
    >>> round(min_mlu_edge_flows(cap, tm), 6)
    1.0
    """
    cap, tm, s, t = _inputs(capacity, traffic)
    P = cap.shape[0]
    if not s.size:
        return 0.0
    edge_of: list[tuple[int, int, int]] = []  # (commodity, tail, head)
    for q, (a, b) in enumerate(zip(s, t, strict=True)):
        for u in range(P):
            for v in range(P):
                if cap[u, v] <= 0 or v == a or u in (v, b):
                    continue
                if (u == a) or (v == b):  # leaves the source or enters the sink: <= 2 hops
                    edge_of.append((q, u, v))
    n = len(edge_of)
    com = np.array([e[0] for e in edge_of])
    tail = np.array([e[1] for e in edge_of])
    head = np.array([e[2] for e in edge_of])
    eq_r, eq_c, eq_v, b_eq = [], [], [], []
    row = 0
    for q, (a, b) in enumerate(zip(s, t, strict=True)):
        mine = np.flatnonzero(com == q)
        into_t = mine[head[mine] == b]  # delivered at t
        eq_r += [row] * into_t.size
        eq_c += into_t.tolist()
        eq_v += [1.0] * into_t.size
        b_eq.append(tm[a, b])
        row += 1
        for k in range(P):  # conservation at an intermediate pod
            if k in (a, b):
                continue
            inn = mine[head[mine] == k]
            out = mine[tail[mine] == k]
            if not inn.size and not out.size:
                continue
            eq_r += [row] * (inn.size + out.size)
            eq_c += inn.tolist() + out.tolist()
            eq_v += [1.0] * inn.size + [-1.0] * out.size
            b_eq.append(0.0)
            row += 1
    a_eq = sp.csr_matrix((eq_v, (eq_r, eq_c)), shape=(row, n + 1))
    return _min_u(cap, tail * P + head, np.arange(n), a_eq, np.asarray(b_eq))[1]
