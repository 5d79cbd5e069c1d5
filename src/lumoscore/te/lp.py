"""Minimum-MLU traffic engineering over direct and two-hop pod paths, by LP.

A commodity is a pod pair ``(s, t)`` with demand ``D[s, t] > 0``; its paths are the direct
link ``s -> t`` and every two-hop path ``s -> k -> t`` over links of capacity > 0 (Cross
Wiring §8.1's TE on an OCS-realized topology). :func:`min_mlu` solves

    min U  s.t.  sum_p x_p = D[s, t] for every commodity,
                 sum_{p through e} x_p <= U cap[e] for every link e,  x >= 0,

over path variables. :func:`min_mlu_edge_flows` solves the same problem over per-commodity
link flows with conservation at the intermediate pods, an independent formulation used to
check the first (the tests compare them to 1e-6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import linprog

from lumoscore.errors import InfeasibleError, SolverError
from lumoscore.te.matrices import check_capacity, check_traffic

__all__ = ["TEResult", "min_mlu", "min_mlu_edge_flows"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class TEResult:
    """An optimal routing: its MLU, the load on every link, and the share of each
    commodity's demand sent directly."""

    mlu: float
    load: FloatArray
    direct_share: float


def _commodities(cap: FloatArray, tm: FloatArray) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    s, t = np.nonzero(tm > 0)
    for a, b in zip(s, t, strict=True):
        if cap[a, b] <= 0 and not ((cap[a] > 0) & (cap[:, b] > 0)).any():
            raise InfeasibleError(
                f"pods {a} -> {b}: demand {tm[a, b]:g} but no direct or two-hop path"
            )
    return s, t


def _inputs(
    capacity: Any, traffic: Any
) -> tuple[FloatArray, FloatArray, NDArray[np.int64], NDArray[np.int64]]:
    """Checked capacity and traffic, and the commodities ``(s, t)``."""
    cap = check_capacity(capacity)
    tm = check_traffic(traffic, pods=cap.shape[0])
    s, t = _commodities(cap, tm)
    return cap, tm, s, t


def _min_u(
    cap: FloatArray, link: NDArray[np.int64], col: NDArray[np.int64], a_eq: Any, b_eq: Any
) -> tuple[FloatArray, float, Any]:
    """Solve ``min U`` over columns ``0..n-1`` (then ``U``) whose flow crosses the links
    ``link`` (flat ``i * P + j``, one entry per (link, column) pair in ``col``), each link's
    load at most ``U`` times its capacity, with the equalities ``a_eq x = b_eq``. Returns the
    column values, ``U`` and the link x column incidence."""
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
    return res.x[:n], float(res.x[-1]), (links, inc)


def min_mlu(capacity: Any, traffic: Any) -> TEResult:
    """The minimum MLU of ``traffic`` (``(P, P)``) on links of ``capacity`` (``(P, P)``,
    same units per second as the traffic), over direct and two-hop paths.

    Raises :class:`~lumoscore.errors.InfeasibleError` when a commodity has no path.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.array([[0, 2.0], [2.0, 0]])
    >>> min_mlu(cap, np.array([[0, 1.0], [3.0, 0]])).mlu
    1.5
    """
    cap, tm, s, t = _inputs(capacity, traffic)
    P = cap.shape[0]
    if not s.size:
        return TEResult(0.0, np.zeros((P, P)), 1.0)
    link, col = [], []  # (link, path) incidence
    path_com, is_direct = [], []
    j = 0
    for q, (a, b) in enumerate(zip(s, t, strict=True)):
        if cap[a, b] > 0:
            link.append(a * P + b), col.append(j)
            path_com.append(q), is_direct.append(True)
            j += 1
        for k in np.flatnonzero((cap[a] > 0) & (cap[:, b] > 0)):
            if k in (a, b):
                continue
            link += [a * P + k, k * P + b]
            col += [j, j]
            path_com.append(q), is_direct.append(False)
            j += 1
    a_eq = sp.csr_matrix((np.ones(j), (np.asarray(path_com), np.arange(j))), shape=(s.size, j + 1))
    x, mlu, (links, inc) = _min_u(cap, np.asarray(link), np.asarray(col), a_eq, tm[s, t])
    load = np.zeros(P * P)
    load[links] = inc @ x
    direct = float(x[np.asarray(is_direct)].sum() / tm[s, t].sum())
    return TEResult(mlu, load.reshape(P, P), direct)


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
