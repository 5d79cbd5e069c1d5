"""Reference max-min fair allocation by a sequence of linear programs (HiGHS).

Slow (two LPs per flow per level) but independent of the progressive-filling code in
:mod:`lumoscore.sim.maxmin`: use it to check that solver on small instances.

Stage ``s``: maximise the common level ``t`` that every unfrozen flow can reach while frozen
flows keep their rates; then a flow that cannot exceed ``t`` (its own LP maximum is ``t``) is
frozen at ``t``. The lexicographically maximal rate vector is reached when all flows are frozen.

Examples
--------
>>> maxmin_rates_lp(flow_links=[[0, 1], [0], [1]], capacity=[1.0, 2.0]).round(9).tolist()
[0.5, 0.5, 1.5]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from lumoscore.errors import SolverError
from lumoscore.sim.maxmin import _as_incidence

__all__ = ["maxmin_rates_lp"]


def maxmin_rates_lp(
    A: sp.sparray | sp.spmatrix | NDArray | None = None,
    capacity: ArrayLike = (),
    *,
    flow_links: Sequence[Sequence[int]] | None = None,
    weight: ArrayLike | None = None,
    max_rate: ArrayLike | None = None,
    tol: float = 1e-9,
) -> NDArray[np.float64]:
    """Max-min fair rates computed with a sequence of HiGHS LPs (reference implementation).

    Parameters are those of :func:`lumoscore.sim.maxmin.maxmin_rates`; capacities must be
    finite here. Returns the rate of one flow of each row.
    """
    cap = np.asarray(capacity, dtype=float).ravel()
    M = _as_incidence(A, flow_links, cap.size)
    n = M.shape[0]
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=float).ravel()
    ub = np.full(n, np.inf) if max_rate is None else np.asarray(max_rate, dtype=float).ravel()
    # link constraints on the rates r (n variables) and the level t (last variable)
    A_link = sp.hstack([sp.csr_array(M.T.multiply(w[None, :])), sp.csr_array((cap.size, 1))])
    rates = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)

    def solve(c: NDArray[np.float64], t_lb: float | None, t_fixed: float | None) -> NDArray:
        active = np.flatnonzero(~frozen)
        # r_f >= t for unfrozen flows:  t - r_f <= 0
        rows = sp.csr_array(
            (
                np.concatenate([np.ones(active.size), -np.ones(active.size)]),
                (
                    np.tile(np.arange(active.size), 2),
                    np.concatenate([np.full(active.size, n), active]),
                ),
            ),
            shape=(active.size, n + 1),
        )
        A_ub = sp.vstack([A_link, rows]).tocsr()
        b_ub = np.concatenate([cap, np.zeros(active.size)])
        bounds = [
            (rates[f], rates[f]) if frozen[f] else (0.0, None if np.isinf(ub[f]) else ub[f])
            for f in range(n)
        ]
        if t_fixed is not None:
            bounds.append((t_fixed, t_fixed))
        else:
            bounds.append((t_lb or 0.0, None))
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status != 0:
            raise SolverError(f"HiGHS failed on the max-min reference LP: {res.message}")
        return np.asarray(res.x)

    while not frozen.all():
        c = np.zeros(n + 1)
        c[n] = -1.0
        t = float(solve(c, None, None)[n])
        newly = []
        for f in np.flatnonzero(~frozen):
            c = np.zeros(n + 1)
            c[f] = -1.0
            best = float(solve(c, None, t)[f])
            if best <= t + tol * max(1.0, abs(t)):
                newly.append(f)
        if not newly:
            raise SolverError("max-min reference made no progress (numerical trouble)")
        rates[newly] = t
        frozen[newly] = True
    return rates
