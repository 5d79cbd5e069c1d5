"""Uniform-Wiring heuristics: Birkhoff-von Neumann style (``bvn``) and Helios-style (``helios``).

On Uniform Wiring every OCS ``k`` is a self-paired channel: a link between pods ``i`` and
``j`` uses port ``k`` of both, so each OCS carries a *matching* of pods (Cross Wiring (7)-(10));
finding ``K`` matchings covering ``C`` is NP-complete (Thm 2.1). Both heuristics accept fewer
links than asked (LTCR < 1) and never more.

``bvn`` (the Uniform-Heuristic of Cross Wiring §6.2)
    Decompose ``C`` into ``K`` directed partial permutations at once (Birkhoff-von Neumann by
    the integer decomposition, row sums ``<= 1`` per OCS), then keep in OCS ``k`` a symmetric
    matching of its permutation: 2-cycles ``i <-> j`` first, then the other edges greedily by
    remaining demand. No repair: units dropped by the symmetrisation stay unrealized.
``helios`` (Helios, Farrington et al. 2010: a matching per circuit switch)
    OCS by OCS, a maximum-weight bipartite assignment on the remaining demand (SciPy's
    ``linear_sum_assignment``), turned into a symmetric matching greedily (heaviest edges
    first); the realized links are subtracted before the next OCS. Helios' Edmonds matching is
    replaced by the assignment + symmetrisation, which is exact on 2-cycles and much faster.

With ``G > 1`` ports of a pod on one OCS (Dual-link Uniform Wiring treated without its mirror
structure) the matching step repeats ``G`` times per OCS.

Examples
--------
>>> import numpy as np
>>> from lumoscore.toe import configure, evaluate
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=3)
>>> C = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)
>>> res = configure(C, build_wiring(spec, "uniform"), solver="helios")
>>> round(evaluate(res.circuits, C).ltcr, 4)
0.6667
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from lumoscore.decompose import integer_decomposition
from lumoscore.toe.errors import WiringMismatchError
from lumoscore.toe.model import PortModel

__all__ = ["bvn_counts", "helios_counts", "symmetric_matching"]

IntArray = NDArray[np.int64]


def _require_self(model: PortModel, groups: IntArray, name: str) -> None:
    real = model.chan_ocs[:, :, 0] >= 0
    if (real & ~model.chan_self).any():
        h = int(np.argwhere(real & ~model.chan_self)[0][0])
        raise WiringMismatchError(
            f"solver {name!r} is a Uniform-Wiring heuristic: group {groups[h]} has OCSes whose "
            f"Tx and Rx ports differ (cross wiring or circulators); allowed solvers for this "
            f"wiring: mdmcf, mcf, ilp"
        )


def symmetric_matching(
    i: IntArray, j: IntArray, weight: IntArray, residual: IntArray, free: IntArray
) -> list[tuple[int, int]]:
    """Greedy matching on candidate edges ``(i, j)``: heaviest first, both ends free.

    An edge needs ``residual[i, j] > 0``; taking it decrements ``residual`` (both directions)
    and ``free`` of both pods (in place).

    Examples
    --------
    >>> import numpy as np
    >>> R = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    >>> symmetric_matching(np.array([0, 1]), np.array([1, 2]), np.array([1, 2]), R,
    ...                    np.ones(3, dtype=np.int64))
    [(1, 2)]
    """
    out = []
    for k in np.argsort(-weight, kind="stable").tolist():
        a, b = int(i[k]), int(j[k])
        if a != b and free[a] > 0 and free[b] > 0 and residual[a, b] > 0:
            out.append((min(a, b), max(a, b)))
            residual[a, b] -= 1
            residual[b, a] -= 1
            free[a] -= 1
            free[b] -= 1
    return out


def _record(x: IntArray, c: int, pairs: list[tuple[int, int]]) -> None:
    for a, b in pairs:
        x[c, a, b] += 1


def bvn_counts(C: IntArray, model: PortModel, groups: IntArray) -> IntArray:
    """Per-OCS link counts of the BvN-style heuristic (see module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 4, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t, t)
    >>> C = np.array([[[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 0, 1], [0, 1, 1, 0]]])
    >>> int(bvn_counts(C, pm, np.array([0])).sum()) <= 4
    True
    """
    _require_self(model, groups, "bvn")
    H, n_chan, P = model.groups, model.channels, model.pods
    x = np.zeros((H, n_chan, P, P), dtype=np.int64)
    for h in range(H):
        n = int((model.chan_ocs[h, :, 0] >= 0).sum())
        if C[h].sum() == 0 or n == 0:
            continue
        X = integer_decomposition(C[h], n)
        R = C[h].copy()
        for c in range(n):
            free = model.cap[h, c, 0].copy()
            Xk = X[c]
            both = np.minimum(Xk, Xk.T)
            ii, jj = np.nonzero(np.triu(both, 1))
            pairs = symmetric_matching(ii, jj, both[ii, jj] + 10**6, R, free)
            ii, jj = np.nonzero(Xk)
            pairs += symmetric_matching(ii, jj, R[ii, jj], R, free)
            _record(x[h], c, pairs)
    return x


def helios_counts(C: IntArray, model: PortModel, groups: IntArray) -> IntArray:
    """Per-OCS link counts of the Helios-style heuristic (see module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 4, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t, t)
    >>> C = np.array([[[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 0, 1], [0, 1, 1, 0]]])
    >>> int(helios_counts(C, pm, np.array([0])).sum())  # a 4-cycle: two perfect matchings
    4
    """
    _require_self(model, groups, "helios")
    H, n_chan, P = model.groups, model.channels, model.pods
    x = np.zeros((H, n_chan, P, P), dtype=np.int64)
    big = 10**9
    for h in range(H):
        R = C[h].copy()
        for c in range(n_chan):
            if model.chan_ocs[h, c, 0] < 0:
                continue
            free = model.cap[h, c, 0].copy()
            for _ in range(int(free.max(initial=0))):
                if R.sum() == 0:
                    break
                W = np.where(free[:, None] * free[None, :] > 0, R, 0).astype(np.int64)
                np.fill_diagonal(W, -big)
                ri, ci = linear_sum_assignment(W, maximize=True)
                w = W[ri, ci]
                keep = w > 0
                ri, ci, w = ri[keep], ci[keep], w[keep]
                # 2-cycles of the assignment first (exact), then the rest by weight
                perm = np.full(P, -1, dtype=np.int64)
                perm[ri] = ci
                two = perm[ci] == ri
                pairs = symmetric_matching(ri, ci, w + big * two, R, free)
                _record(x[h], c, pairs)
    return x
