"""Pod-level logical topologies for TE: a full mesh, a demand-proportional design and a
COUDER-style robust traffic-aware design.

A logical topology is ``(H, P, P)``: circuits between pod pairs in each of the ``H`` OCS
groups, symmetric, at most ``ports`` per pod and group (the spine's OCS-facing ports).

* :func:`full_mesh` -- one circuit per pod pair and group (Cross Wiring Fig. 9(a)).
* :func:`demand_topology` -- circuits in proportion to the mean demand (D'Hondt).
* :func:`robust_topology` -- the traffic-aware design of Cross Wiring Fig. 9(b), in the
  manner of COUDER (Teh et al.): the logical topology and the routing are optimized
  *together* over a set of traffic matrices (a window of history). One LP (HiGHS) chooses
  fractional circuits ``c[i, j]`` (at most ``H ports`` a pod) and, for every matrix, a
  routing over direct and two-hop paths, maximizing the factor ``theta`` by which every
  matrix of the set can be scaled and still fit (so ``1 / theta`` is the best MLU any
  fractional topology guarantees for all of them at once); the fractional circuits are then
  rounded to integers within the ports by :func:`demand_topology`. Our reading: COUDER
  also rounds by an LP-guided heuristic and picks the matrices as the critical ones of the
  window; we use the window's matrices with the highest pod load (at most
  ``max_matrices``).

Examples
--------
>>> import numpy as np
>>> d = np.zeros((2, 4, 4)); d[:, 0, 1] = d[:, 2, 3] = 1.0
>>> design = robust_topology(d, groups=1, ports=3)
>>> design.circuits[0, 0].tolist(), round(design.mlu, 3)   # pod 0's three ports all to pod 1
([0, 3, 0, 0], 0.333)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import linprog

from lumoscore.errors import ConfigError, SolverError
from lumoscore.te.lp import _unit, path_incidence, two_hop_paths
from lumoscore.te.matrices import check_traffic

__all__ = ["MAX_DESIGN_PATHS", "RobustDesign", "demand_topology", "full_mesh", "robust_topology"]

#: Largest robust-design LP (path variables over all its matrices) :func:`robust_topology`
#: builds: about a minute of HiGHS on two cores.
MAX_DESIGN_PATHS = 1_500_000


def full_mesh(pods: int, groups: int) -> NDArray[np.int64]:
    """The ``(groups, P, P)`` full-mesh logical topology: one circuit between every pod pair
    in every OCS group (Cross Wiring Fig. 9(a)).

    Examples
    --------
    >>> full_mesh(3, 2).sum(axis=0).tolist()
    [[0, 2, 2], [2, 0, 2], [2, 2, 0]]
    """
    if pods < 2 or groups < 1:
        raise ConfigError(f"full mesh needs pods >= 2 and groups >= 1, got {pods}, {groups}")
    one = np.ones((pods, pods), np.int64) - np.eye(pods, dtype=np.int64)
    return np.repeat(one[None], groups, axis=0)


def demand_topology(traffic: Any, groups: int, ports: int) -> NDArray[np.int64]:
    """A traffic-aware logical topology ``(groups, P, P)``: the pod pairs' circuits in
    proportion to their demand (``traffic``: ``(P, P)`` or a window ``(T, P, P)``, its mean,
    both directions), every pair with demand getting one circuit first, then one more at a
    time to the pair with the most demand per circuit (D'Hondt) while both pods have ports
    left; circuits spread over the OCS groups, at most ``ports`` per pod and group. A
    demand-proportional design; :func:`robust_topology` rounds its LP optimum with it.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0, 3.0, 1.0], [0, 0, 0], [0, 0, 0]])
    >>> C = demand_topology(d, groups=2, ports=2)
    >>> C.sum(axis=0).tolist()
    [[0, 3, 1], [3, 0, 0], [1, 0, 0]]
    """
    tm = check_traffic(traffic)
    mean = tm.mean(axis=0) if tm.ndim == 3 else tm
    S = mean + mean.T
    P = S.shape[0]
    if groups < 1 or ports < 1:
        raise ConfigError(f"groups and ports must be >= 1, got {groups}, {ports}")
    C = np.zeros((groups, P, P), np.int64)
    left = np.full((groups, P), ports, np.int64)

    def place(i: int, j: int) -> bool:
        h = np.flatnonzero((left[:, i] > 0) & (left[:, j] > 0))
        if not h.size:
            return False
        g = int(h[np.argmax(left[h, i] + left[h, j])])  # the least used group
        C[g, i, j] += 1
        C[g, j, i] += 1
        left[g, i] -= 1
        left[g, j] -= 1
        return True

    iu, ju = np.triu_indices(P, 1)
    want = S[iu, ju]
    order = np.argsort(-want, kind="stable")
    for k in order[want[order] > 0]:  # connectivity first, heaviest pairs first
        place(int(iu[k]), int(ju[k]))
    count = C.sum(axis=0)[iu, ju].astype(float)
    active = want > 0
    while True:
        score = np.where(active, want / (count + 1), -1.0)
        k = int(np.argmax(score))
        if score[k] <= 0:
            return C
        if place(int(iu[k]), int(ju[k])):
            count[k] += 1
        else:
            active[k] = False


@dataclass(frozen=True)
class RobustDesign:
    """A robust traffic-aware logical topology: the integer ``circuits`` ``(H, P, P)``, the
    LP's fractional circuits per pod pair, its MLU ``1 / theta`` over the matrices used (in
    units of ``port_gbps``), and the indices of those matrices in the window."""

    circuits: NDArray[np.int64]
    fractional: NDArray[np.float64]
    mlu: float
    matrices: NDArray[np.int64]


def critical_matrices(window: NDArray[np.float64], count: int) -> NDArray[np.int64]:
    """Indices of the ``count`` matrices of ``window`` with the highest pod load (the
    largest row or column sum), in time order."""
    peak = np.maximum(window.sum(axis=2).max(axis=1), window.sum(axis=1).max(axis=1))
    return np.sort(np.argsort(-peak, kind="stable")[:count]).astype(np.int64)


def robust_topology(
    traffic: Any,
    groups: int,
    ports: int,
    *,
    port_gbps: float = 1.0,
    max_matrices: int = 12,
) -> RobustDesign:
    """The COUDER-style robust logical topology for ``traffic`` (``(P, P)`` or a window
    ``(T, P, P)``; module docstring).

    Parameters
    ----------
    traffic : array_like
        The matrices to design for, in the units of ``port_gbps``.
    groups, ports : int
        OCS groups ``H`` and OCS-facing ports per pod and group.
    port_gbps : float
        Capacity of one circuit.
    max_matrices : int
        At most this many matrices enter the LP (:func:`critical_matrices`).

    Raises
    ------
    ConfigError
        ``groups``, ``ports``, ``port_gbps`` or ``max_matrices`` out of range, or no demand.
    SolverError
        HiGHS fails.
    """
    tm = check_traffic(traffic)
    window = tm if tm.ndim == 3 else tm[None]
    if groups < 1 or ports < 1:
        raise ConfigError(f"groups and ports must be >= 1, got {groups}, {ports}")
    if not (port_gbps > 0) or max_matrices < 1:
        raise ConfigError(f"port_gbps > 0 and max_matrices >= 1, got {port_gbps}, {max_matrices}")
    if not (window > 0).any():
        raise ConfigError("traffic: no demand to design a topology for")
    chosen = critical_matrices(window, max_matrices)
    P = window.shape[1]
    paths = int(sum(np.count_nonzero(window[w]) for w in chosen)) * (P - 1)
    if paths > MAX_DESIGN_PATHS:
        raise ConfigError(
            f"max_matrices: a design over {chosen.size} matrices of {P} pods has {paths:,} "
            f"path variables (limit {MAX_DESIGN_PATHS:,}); use fewer matrices"
        )
    # HiGHS's tolerances are absolute: far from unit scale (traffic or circuit capacity, or
    # their ratio, beyond 2^+-10..20) the LP is solved on both divided by powers of two
    # (exact), theta mapped back below; in range, as given (its optimum is degenerate: a
    # rescaled solve may pick another optimal design)
    top = float(window.max())
    a = b = 1.0
    if not (2.0**-10 <= top <= 2.0**20 and 2.0**-10 <= port_gbps / top <= 2.0**10):
        a, b = _unit(window), _unit(np.array([port_gbps], dtype=np.float64))
        window, port_gbps = window / a, port_gbps / b
    iu, ju = np.triu_indices(P, 1)
    pair = np.full((P, P), -1)
    pair[iu, ju] = pair[ju, iu] = np.arange(iu.size)
    n_pair = iu.size
    up = ~np.eye(P, dtype=bool)
    cols, rows, vals = [], [], []  # the sparse constraint matrix, built in blocks
    eq_rows, eq_cols, eq_vals = [], [], []
    n_var = n_pair + 1  # circuits, then theta, then the flows of every matrix
    n_ub = n_eq = 0
    lk = np.flatnonzero(up.ravel())  # every directed link: its capacity is its pair's circuits
    for w in chosen:
        d = window[w]
        s, t = np.nonzero(d > 0)
        q, k = two_hop_paths(up, s, t)
        nq = s.size
        link, col, com = path_incidence(P, s, t, np.arange(nq), q, k)
        flow = n_var + np.arange(com.size)
        rows += [n_ub + link]  # one row per directed link of this matrix
        cols += [n_var + col]
        vals += [np.ones(col.size)]
        rows += [n_ub + lk]
        cols += [pair.ravel()[lk]]
        vals += [np.full(lk.size, -port_gbps)]
        eq_rows += [n_eq + com, n_eq + np.arange(nq)]
        eq_cols += [flow, np.full(nq, n_pair)]
        eq_vals += [np.ones(flow.size), -d[s, t]]
        n_ub += P * P
        n_eq += nq
        n_var += flow.size
    # ports: every pod's circuits over all groups
    pods = np.concatenate([iu, ju])
    rows += [n_ub + pods]
    cols += [np.concatenate([np.arange(n_pair)] * 2)]
    vals += [np.ones(2 * n_pair)]
    ub_rhs = np.concatenate([np.zeros(n_ub), np.full(P, float(groups * ports))])
    n_ub += P
    a_ub = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_ub, n_var)
    )
    a_eq = sp.csr_matrix(
        (np.concatenate(eq_vals), (np.concatenate(eq_rows), np.concatenate(eq_cols))),
        shape=(n_eq, n_var),
    )
    c = np.zeros(n_var)
    c[n_pair] = -1.0  # maximize theta
    res = linprog(c, A_ub=a_ub, b_ub=ub_rhs, A_eq=a_eq, b_eq=np.zeros(n_eq),
                  bounds=(0, None), method="highs")  # fmt: skip
    if res.status != 0:
        raise SolverError(f"HiGHS: {res.message}")
    theta = float(res.x[n_pair]) * (b / a)
    frac = np.zeros((P, P))
    frac[iu, ju] = frac[ju, iu] = res.x[:n_pair]
    weights = np.where(frac > 1e-6 * max(frac.max(), 1e-300), frac, 0.0)
    return RobustDesign(
        demand_topology(weights, groups, ports), frac, 1.0 / theta if theta > 0 else np.inf, chosen
    )
