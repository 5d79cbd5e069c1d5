"""Pod selection for a job that needs several pods (LumosCore Appendix A.4, Eqs. 37-41).

A job needs ``need`` units (a unit = one EP group's worth of TP slots, so that an EP group
never crosses a pod). Pod ``i`` can give ``cap[i]`` units (its idle slots, rounded down to
whole units -- Eqs. (38)-(40)); selecting it costs ``r[i]`` (its idle capacity, Eq. (41): "select
the pods with the fewest idle GPUs"). Locality first makes the number of pods the primary
objective:

    minimise  (#pods selected, sum_i r_i x_i)   lexicographically
    s.t.      sum_i y_i = need,  x_i <= y_i <= cap_i x_i,  x binary, y integer.

* :func:`select_pods_exact` -- the model above, exactly: OR-Tools CP-SAT (one worker, fixed
  seed: deterministic), or, with at most :data:`ENUMERATE_MAX_PODS` pods that have room, every
  set of them when one set alone is optimal (CP-SAT can only find that one; when several tie it
  decides, so the choice is always CP-SAT's). A nearly full cluster (the placement's case) has
  a few such pods: about 20 us a selection instead of 1-2 ms.
* :func:`select_pods_greedy` -- ``O(P log P)``. **Guarantee**: it uses the minimum number of
  pods ``k*`` (the ``k*`` largest capacities are the only test needed, so this part is exact),
  and when ``r = cap`` (the default objective) its cost is below ``OPT + max(cap)``, i.e. less
  than twice the optimum (``OPT >= need > max(cap)`` when more than one pod is needed). Proof:
  it starts from the ``k* - 1`` largest pods (together ``< need`` units, by minimality of
  ``k*``) plus the cheapest pod that covers the rest (``<= max(cap)``), then only applies
  improving swaps.

Both return a :class:`PodSelection` whose ``units`` fill the selected pods in ascending order of
capacity (small pods are filled completely, the largest keeps the rest), ties by pod index.

Examples
--------
>>> import numpy as np
>>> cap = np.array([4, 2, 3, 1])
>>> g = select_pods_greedy(cap, need=5)
>>> g.pods, g.units, g.cost
((0, 3), (4, 1), 5)
>>> e = select_pods_exact(cap, need=5)
>>> len(e.pods), e.cost
(2, 5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from ortools.sat.python import cp_model

from lumoscore.errors import ConfigError, InfeasibleError, SolverError
from lumoscore.placement.kernels import greedy_pods

__all__ = [
    "ENUMERATE_MAX_PODS",
    "PodSelection",
    "distribute_units",
    "select_pods_exact",
    "select_pods_greedy",
]

IntArray = NDArray[np.int64]

#: :func:`select_pods_exact` enumerates the sets of at most this many pods with room (4,095
#: sets) before it asks CP-SAT.
ENUMERATE_MAX_PODS = 12


@dataclass(frozen=True)
class PodSelection:
    """Selected pods (ascending), units taken from each, the objective value and the method."""

    pods: tuple[int, ...]
    units: tuple[int, ...]
    cost: int
    method: str


def _inputs(cap: ArrayLike, need: int, r: ArrayLike | None) -> tuple[IntArray, IntArray]:
    c = np.asarray(cap, dtype=np.int64).reshape(-1)
    if (c < 0).any():
        raise ConfigError("cap: capacities must be >= 0")
    if need < 1:
        raise ConfigError(f"need must be >= 1, got {need}")
    cost = c.copy() if r is None else np.asarray(r, dtype=np.int64).reshape(-1)
    if cost.shape != c.shape:
        raise ConfigError(f"r: need one cost per pod ({c.size}), got {cost.size}")
    if int(c.sum()) < need:
        raise InfeasibleError(f"pods can give {int(c.sum())} units, the job needs {need}")
    return c, cost


def distribute_units(cap: ArrayLike, pods: ArrayLike, need: int) -> tuple[int, ...]:
    """Units per selected pod: fill pods in ascending capacity (ties by index), the last gets
    the rest.

    Examples
    --------
    >>> distribute_units([5, 2, 3], [0, 1, 2], 7)
    (2, 2, 3)
    """
    c = np.asarray(cap, dtype=np.int64).reshape(-1)
    p = np.asarray(pods, dtype=np.int64).reshape(-1)
    order = p[np.lexsort((p, c[p]))]
    before = np.concatenate(([0], np.cumsum(c[order])[:-1]))
    take = np.minimum(c[order], np.maximum(0, need - before))
    units = dict(zip(order.tolist(), take.tolist(), strict=True))
    return tuple(int(units[int(i)]) for i in np.sort(p))


def select_pods_greedy(cap: ArrayLike, need: int, r: ArrayLike | None = None) -> PodSelection:
    """Fewest pods, then (approximately) the least idle capacity; see the module docstring.

    Examples
    --------
    >>> select_pods_greedy([3, 3, 8], need=6).pods        # one pod of 8 beats two of 3
    (2,)
    """
    c, cost = _inputs(cap, need, r)
    sel = greedy_pods(c, cost, int(need))
    pods = np.flatnonzero(sel)
    return PodSelection(
        pods=tuple(int(p) for p in pods),
        units=distribute_units(c, pods, need),
        cost=int(cost[pods].sum()),
        method="greedy",
    )


def select_pods_exact(
    cap: ArrayLike, need: int, r: ArrayLike | None = None, *, time_limit_s: float = 5.0
) -> PodSelection:
    """Model (37)-(41) with pod count first, solved exactly: by enumeration when the optimum
    is one set of at most :data:`ENUMERATE_MAX_PODS` pods with room, else by CP-SAT (see the
    module; the result is CP-SAT's either way).

    Raises :class:`~lumoscore.errors.SolverError` when CP-SAT proves nothing in the time limit.

    Examples
    --------
    >>> select_pods_exact([3, 3, 8], need=6).pods
    (2,)
    """
    c, cost = _inputs(cap, need, r)
    # a pod without capacity cannot be chosen (y >= x, y <= 0): it is left out of the model
    # (CP-SAT's presolve would remove it; a full cluster has few pods with room)
    live = np.flatnonzero(c > 0)
    pods = _sole_optimum(c, cost, live, need) if live.size <= ENUMERATE_MAX_PODS else None
    if pods is None:
        pods = _cp_sat_pods(c, cost, live, need, time_limit_s)
    return PodSelection(
        pods=tuple(int(p) for p in pods),
        units=distribute_units(c, pods, need),
        cost=int(cost[pods].sum()),
        method="exact",
    )


def _pod_weights(cost: IntArray) -> IntArray:
    """Each pod's term in the objective, ``big + cost_i`` with ``big`` above every set's
    total cost: fewer pods first, then the cheaper set."""
    return int(cost.sum()) + 1 + cost


def _sole_optimum(c: IntArray, cost: IntArray, live: IntArray, need: int) -> IntArray | None:
    """The optimal set of the pods ``live`` (ascending) by enumerating every set of them;
    None when several sets tie (or none is feasible)."""
    k = live.size
    member = (np.arange(1, 1 << k)[:, None] >> np.arange(k)) & 1  # one row per set
    size = member.sum(axis=1)
    feasible = np.flatnonzero((size <= need) & (member @ c[live] >= need))  # 1 <= y_i <= cap_i
    if feasible.size == 0:
        return None
    objective = member[feasible] @ _pod_weights(cost)[live]  # CP-SAT's, term for term
    best = feasible[objective == objective.min()]
    return live[member[best[0]] == 1] if best.size == 1 else None


def _cp_sat_pods(
    c: IntArray, cost: IntArray, live: IntArray, need: int, time_limit_s: float
) -> IntArray:
    """Model (37)-(41) over the pods ``live`` by CP-SAT; the selected pods, ascending."""
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in live]
    y = [m.new_int_var(0, int(c[i]), f"y{i}") for i in live]
    for j, i in enumerate(live):
        m.add(y[j] <= int(c[i]) * x[j])
        m.add(y[j] >= x[j])
    m.add(sum(y) == need)
    w = _pod_weights(cost)
    m.minimize(sum(int(w[i]) * x[j] for j, i in enumerate(live)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = time_limit_s
    status = solver.solve(m)
    if status != cp_model.OPTIMAL:
        raise SolverError(f"pod selection: CP-SAT status {solver.status_name(status)}")
    return np.array([i for j, i in enumerate(live) if solver.value(x[j])], np.int64)
