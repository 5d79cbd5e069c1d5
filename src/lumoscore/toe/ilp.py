"""Exact OCS configuration by OR-Tools CP-SAT (the ``ilp`` solver), for any wiring.

One model per OCS group on the channel view of the wiring (:mod:`lumoscore.toe.model`):

* paired channel ``c`` (Cross Wiring): integer ``y[c, i, j]`` = links from a forward port of
  pod ``i`` to a backward port of pod ``j``; ``sum_j y[c, i, j] <= G^fwd_{c,i}``,
  ``sum_i y[c, i, j] <= G^bwd_{c,j}``;
* self-paired channel ``c`` (Uniform Wiring, OCS ``c``): integer ``z[c, i, j]``, ``i < j``, =
  links between pods ``i`` and ``j``; ``sum_j z[c, {i, j}] <= G_{c,i}`` (Cross Wiring (7)-(10));
* links per pod pair ``X_ij = sum_c y[c, i, j] + y[c, j, i] + z[c, i, j]``.

Objectives:

* **Cross Wiring** (no self-paired channel): ``X = C`` is always feasible (Thm 4.1), so the
  model fixes it and minimises the rewiring -- the new circuits per OCS and pod pair that the
  current configuration lacks, ``sum (x_ijk - u_ijk)^+`` (equivalent to objective (26), since
  the number of circuits is fixed). Unlike ``mdmcf`` the split ``C = A + A.T`` is free too.
* **Uniform Wiring**, and any group with dead ports
  (:meth:`~lumoscore.toe.model.PortModel.without_ports`): constraint (1) relaxed to
  ``X <= C``; first maximise the realized links
  (LTCR), then, with that optimum fixed, minimise the rewiring (lexicographic, two solves; the
  second starts from the first's solution).

Every solve has a time limit. A solve that stops at the limit with a solution reports
``"timeout"``; one without a solution makes :func:`~lumoscore.toe.configure` fall back to a
polynomial solver (recorded in the result).

Examples
--------
>>> import numpy as np
>>> from lumoscore.toe import configure, evaluate
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=3)
>>> C = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)  # Cross Wiring Fig. 1
>>> res = configure(C, build_wiring(spec, "uniform"), solver="ilp", time_limit_s=10)
>>> res.status, round(evaluate(res.circuits, C).ltcr, 4)
('optimal', 0.6667)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from lumoscore.toe.model import PortModel, channel_counts

__all__ = ["IlpOutcome", "ilp_counts"]

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class IlpOutcome:
    """Counts (``None`` if some group found no solution), status and per-group notes."""

    counts: IntArray | None
    status: str
    notes: tuple[str, ...]


def _excess_terms(
    m: cp_model.CpModel, var: cp_model.IntVar, ub: int, u: int, obj: list[Any]
) -> None:
    """Add ``(var - u)^+`` to the objective list."""
    if u <= 0:
        obj.append(var)
    elif ub > u:
        e = m.new_int_var(0, ub - u, "")
        m.add(e >= var - u)
        obj.append(e)


def _solve(m: cp_model.CpModel, limit_s: float, seed: int | None, workers: int) -> Any:
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = max(limit_s, 0.01)
    s.parameters.num_workers = workers
    if seed is not None:
        s.parameters.random_seed = int(seed)
    status = s.solve(m)
    return s, status


#: What :func:`_group` reports for a group proved to have no solution.
INFEASIBLE = "infeasible"


def _group(
    C: IntArray,
    model: PortModel,
    h: int,
    u: IntArray,
    limit_s: float,
    seed: int | None,
    workers: int,
) -> tuple[IntArray | None, str]:
    n_chan, P = model.channels, model.pods
    m = cp_model.CpModel()
    obj: list[Any] = []
    pair_terms: dict[tuple[int, int], list[Any]] = {}
    row: dict[tuple[int, int, int], list[Any]] = {}
    vars_: list[tuple[int, int, int, Any]] = []
    iu, ju = np.nonzero(np.triu(C, 1))
    for c in range(n_chan):
        if model.chan_ocs[h, c, 0] < 0:
            continue
        capf, capb = model.cap[h, c, 0], model.cap[h, c, 1]
        if model.chan_self[h, c]:
            for i, j in zip(iu.tolist(), ju.tolist(), strict=True):
                ub = int(min(capf[i], capf[j], C[i, j]))
                if ub <= 0:
                    continue
                v = m.new_int_var(0, ub, f"z{c}_{i}_{j}")
                vars_.append((c, i, j, v))
                pair_terms.setdefault((i, j), []).append(v)
                row.setdefault((c, 0, i), []).append(v)
                row.setdefault((c, 0, j), []).append(v)
                _excess_terms(m, v, ub, int(u[c, 0, i, j]), obj)
                _excess_terms(m, v, ub, int(u[c, 0, j, i]), obj)
            continue
        for i, j in zip(iu.tolist(), ju.tolist(), strict=True):
            for a, b in ((i, j), (j, i)):
                ub = int(min(capf[a], capb[b], C[i, j]))
                if ub <= 0:
                    continue
                v = m.new_int_var(0, ub, f"y{c}_{a}_{b}")
                vars_.append((c, a, b, v))
                pair_terms.setdefault((i, j), []).append(v)
                row.setdefault((c, 0, a), []).append(v)
                row.setdefault((c, 1, b), []).append(v)
                _excess_terms(m, v, ub, int(u[c, 0, a, b]), obj)
                _excess_terms(m, v, ub, int(u[c, 1, b, a]), obj)
    for (c, s, i), terms in row.items():
        m.add(sum(terms) <= int(model.cap[h, c, s, i]))
    # Thm 4.1 (X = C feasible) needs every port; with dead ports maximise the links as on
    # Uniform Wiring
    full = not model.chan_self[h].any() and (model.dead is None or not model.dead[h].any())
    totals = []
    for i, j in zip(iu.tolist(), ju.tolist(), strict=True):
        terms = pair_terms.get((i, j), [])
        if full:
            m.add(sum(terms) == int(C[i, j]))
        elif terms:
            m.add(sum(terms) <= int(C[i, j]))
            totals.extend(terms)
    t0 = time.perf_counter()
    status_name = "optimal"
    if not full and totals:
        m.maximize(sum(totals))
        s, st = _solve(m, limit_s / 2, seed, workers)
        if st == cp_model.INFEASIBLE:
            return None, INFEASIBLE
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, "no solution (time limit)"
        best = round(s.objective_value)
        if st != cp_model.OPTIMAL:
            status_name = "timeout"
        for _, _, _, v in vars_:
            m.add_hint(v, int(s.value(v)))
        m.clear_objective()
        m.add(sum(totals) >= best)
    m.minimize(sum(obj) if obj else 0)
    s, st = _solve(m, limit_s - (time.perf_counter() - t0), seed, workers)
    if st == cp_model.INFEASIBLE:
        return None, INFEASIBLE
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, "no solution (time limit)"
    if st != cp_model.OPTIMAL:
        status_name = "timeout"
    x = np.zeros((n_chan, P, P), dtype=np.int64)
    for c, a, b, v in vars_:
        x[c, a, b] += int(s.value(v))
    return x, status_name


def ilp_counts(
    C: IntArray,
    model: PortModel,
    current: Any,
    groups: IntArray,
    *,
    time_limit_s: float = 60.0,
    seed: int | None = 0,
    workers: int = 1,
) -> IlpOutcome:
    """Per-channel link counts of the exact CP-SAT model for every group (see module doc).

    Parameters
    ----------
    C : ndarray
        ``(H, P, P)`` validated demand of ``groups``.
    model : PortModel
        Wiring of those groups (channel view, ``mirror=False``).
    current : array_like or None
        Current circuits.
    groups : ndarray
        Real group indices.
    time_limit_s : float
        Limit for all groups together: the time left is split evenly over the groups still
        to solve, and a group that found no solution in its share tries again with the time
        the others left over, so an unsolved instance stops at the limit (tested), not
        before.
    seed : int, optional
        CP-SAT random seed.
    workers : int
        CP-SAT search workers.

    Returns
    -------
    IlpOutcome
        ``status`` is ``"optimal"`` if every group was solved to optimality, ``"infeasible"``
        when a group is proved to have no solution, else ``"timeout"``; ``counts`` is
        ``None`` when some group found no solution.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=2)
    >>> pm = PortModel.from_wiring(build_wiring(spec, "cross"))
    >>> out = ilp_counts(np.array([[[0, 2], [2, 0]]]), pm, None, np.array([0]))
    >>> out.status, int(out.counts.sum())
    ('optimal', 2)
    """
    u = channel_counts(model, current, groups=groups)
    H = model.groups
    out = np.zeros((H, model.channels, model.pods, model.pods), dtype=np.int64)
    notes: list[str] = []
    status = "optimal"
    t0 = time.perf_counter()
    todo = list(range(H))
    # Each pass splits the time left evenly over the groups still without a solution; a
    # group that found none in its share tries again with the time the others left over,
    # so the whole limit is used before giving up.
    while todo:
        unsolved = []
        for i, h in enumerate(todo):
            left = time_limit_s - (time.perf_counter() - t0)
            x, st = _group(C[h], model, h, u[h], max(left, 0.01) / (len(todo) - i), seed, workers)
            if x is None and st == INFEASIBLE:  # (proved: more time would not help)
                notes.append(f"group {groups[h]}: {st}")
                return IlpOutcome(None, "infeasible", tuple(notes))
            if x is None:
                unsolved.append(h)
                continue
            if st != "optimal":
                status = "timeout"
                notes.append(f"group {groups[h]}: time limit reached, best solution kept")
            out[h] = x
        if unsolved and time_limit_s - (time.perf_counter() - t0) < 0.05:
            notes += [f"group {groups[h]}: no solution within the time limit" for h in unsolved]
            return IlpOutcome(None, "timeout", tuple(notes))
        if len(unsolved) == len(todo) and len(todo) == 1:
            continue  # (one group left: it gets all the time that remains)
        todo = unsolved
    # self-paired counts live in the upper triangle (assemble_circuits convention)
    sp = model.chan_self
    if sp.any():
        sym = out + out.transpose(0, 1, 3, 2)
        out = np.where(sp[:, :, None, None], np.triu(sym, 1), out)
    return IlpOutcome(out, status, tuple(notes))
