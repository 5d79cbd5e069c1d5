"""Staged reconfiguration (LumosCore Appendix A.8): merge OCS groups into few stages.

Reconfiguring every OCS group at once interrupts every cross-pod path; one group per stage
takes ``H`` stages. LumosCore merges the groups into ``theta`` sets reconfigured one after the
other, the fewest sets (searched from ``theta = 2`` upward, A.8.3) such that in every stage
no leaf loses more than a fraction ``iota`` of its cross-pod paths (constraint (46)).

Model used here: ``loss[a, h]`` = paths of leaf (or pod) ``a`` through OCS group ``h`` that
the reconfiguration of ``h`` interrupts, ``total[a]`` = all cross-pod paths of ``a``. A stage
``S`` is admissible when ``sum_{h in S} loss[a, h] <= iota * total[a]`` for every ``a``. Only
groups that change are staged. Because every leaf of a pod reaches spine ``h`` over the same
``tau`` links, a leaf loses the same share of its paths as its pod: :func:`circuit_loss`
computes pod-level ``loss``/``total`` from the current and the new circuits (removed circuits
of the pod's spine ``h`` / all its current circuits).

Each ``theta`` is tried first with first-fit decreasing, then with CP-SAT (an exact
vector-bin-packing model under a time limit); the plan reports whether the stage count was
proved minimal.

Examples
--------
>>> import numpy as np
>>> loss = np.array([[2, 2, 2, 2], [1, 0, 1, 0]])
>>> total = np.array([16, 8])
>>> plan = staged_plan(loss, total, iota=0.25)
>>> plan.stages, plan.max_loss_share
(((0, 1), (2, 3)), 0.25)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from lumoscore.errors import ConfigError, InfeasibleError

__all__ = ["StagedPlan", "circuit_loss", "staged_plan"]

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class StagedPlan:
    """Groups reconfigured in each stage, in order.

    Attributes
    ----------
    stages : tuple of tuple of int
        Stage ``w`` reconfigures the groups ``stages[w]``.
    max_loss_share : float
        Largest share of a leaf's paths interrupted in one stage.
    iota : float
        The bound asked for.
    proved_minimal : bool
        No plan with fewer stages (from ``min(2, groups)``) exists (CP-SAT proof or trivial).
    """

    stages: tuple[tuple[int, ...], ...]
    max_loss_share: float
    iota: float
    proved_minimal: bool


def circuit_loss(current: Any, new: Any, groups: int, pods: int) -> tuple[IntArray, IntArray]:
    """Pod-level ``loss[pod, group]`` (current circuits of the pod's Tx that the new
    configuration removes) and ``total[pod]`` (all current circuits of the pod's Tx).

    Examples
    --------
    >>> cur = [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0], [1, 0, 0, 0, 1, 1], [1, 1, 1, 1, 0, 0]]
    >>> loss, total = circuit_loss(cur, cur[:2], groups=2, pods=2)
    >>> loss.tolist(), total.tolist()
    ([[0, 1], [0, 1]], [2, 2])
    """
    old = np.asarray(current, dtype=np.int64).reshape(-1, 6)
    nw = np.asarray(new, dtype=np.int64).reshape(-1, 6)
    if len(old):
        span = np.maximum(old.max(axis=0), nw.max(axis=0, initial=0)) + 1
        key_old = np.ravel_multi_index(old.T, span)
        key_new = np.ravel_multi_index(nw.T, span) if len(nw) else np.zeros(0, np.int64)
        gone = old[~np.isin(key_old, key_new)]
    else:
        gone = old
    loss = np.bincount(gone[:, 2] * groups + gone[:, 0], minlength=pods * groups)
    total = np.bincount(old[:, 2], minlength=pods)
    return loss.reshape(pods, groups).astype(np.int64), total.astype(np.int64)


def _first_fit(loss: IntArray, cap: NDArray[np.float64], theta: int) -> list[int] | None:
    order = np.argsort(-loss.sum(axis=0), kind="stable")
    load = np.zeros((theta, loss.shape[0]))
    where = [-1] * loss.shape[1]
    for h in order.tolist():
        fits = np.flatnonzero(((load + loss[:, h]) <= cap + 1e-9).all(axis=1))
        if len(fits) == 0:
            return None
        w = int(fits[np.argmin(load[fits].max(axis=1))])
        load[w] += loss[:, h]
        where[h] = w
    return where


def _cp_sat(
    loss: IntArray, cap: NDArray[np.float64], theta: int, limit_s: float
) -> tuple[list[int] | None, bool]:
    """(assignment or None, proved) for ``theta`` stages."""
    A, H = loss.shape
    m = cp_model.CpModel()
    b = [[m.new_bool_var(f"b{h}_{w}") for w in range(theta)] for h in range(H)]
    for h in range(H):
        m.add_exactly_one(b[h])
        for w in range(min(h + 1, theta), theta):  # symmetry: group h in stage <= h
            m.add(b[h][w] == 0)
    icap = np.floor(cap + 1e-9).astype(np.int64)
    for a in range(A):
        hs = np.flatnonzero(loss[a])
        if len(hs) == 0:
            continue
        for w in range(theta):
            m.add(sum(int(loss[a, h]) * b[h][w] for h in hs) <= int(icap[a]))
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = limit_s
    s.parameters.num_workers = 1
    st = s.solve(m)
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return [next(w for w in range(theta) if s.value(b[h][w])) for h in range(H)], True
    return None, st == cp_model.INFEASIBLE


def staged_plan(
    loss: Any,
    total: Any,
    iota: float,
    *,
    changed: Any = None,
    time_limit_s: float = 10.0,
) -> StagedPlan:
    """Fewest stages of OCS groups such that no leaf loses more than ``iota`` of its paths.

    Parameters
    ----------
    loss : array_like
        ``(leaves or pods, H)`` paths of each leaf through each group interrupted when that
        group is reconfigured.
    total : array_like
        ``(leaves or pods,)`` cross-pod paths of each leaf.
    iota : float
        Largest share of a leaf's paths interrupted in one stage, ``0 < iota <= 1``.
    changed : array_like of bool, optional
        Groups that change (default: groups with some loss). Others are not staged.
    time_limit_s : float
        CP-SAT limit per stage count tried.

    Returns
    -------
    StagedPlan

    Raises
    ------
    lumoscore.errors.InfeasibleError
        One group alone interrupts more than ``iota`` of some leaf's paths (names both).

    Examples
    --------
    >>> import numpy as np
    >>> staged_plan(np.array([[1, 1, 1]]), np.array([4]), iota=0.5).stages
    ((0, 2), (1,))
    """
    L = np.asarray(loss, dtype=np.int64)
    tot = np.asarray(total, dtype=np.float64)
    if L.ndim != 2 or tot.shape != (L.shape[0],):
        raise ConfigError(f"loss must be (leaves, groups) and total (leaves,), got {L.shape}")
    if not 0 < iota <= 1:
        raise ConfigError(f"iota must be in (0, 1], got {iota}")
    ch = L.sum(axis=0) > 0 if changed is None else np.asarray(changed, dtype=bool)
    groups = np.flatnonzero(ch)
    if len(groups) == 0:
        return StagedPlan((), 0.0, iota, True)
    sub = L[:, groups]
    cap = iota * tot
    over = sub > cap[:, None] + 1e-9
    if over.any():
        a, k = (int(v) for v in np.argwhere(over)[0])
        raise InfeasibleError(
            f"reconfiguring OCS group {groups[k]} alone interrupts {sub[a, k]} of "
            f"{int(tot[a])} paths of leaf/pod {a} (share {sub[a, k] / tot[a]:.3f} > iota = "
            f"{iota}); raise iota"
        )
    start = min(2, len(groups))
    proved = True
    for theta in range(start, len(groups) + 1):
        where = _first_fit(sub, cap, theta)
        if where is None:
            where, proof = _cp_sat(sub, cap, theta, time_limit_s)
            if where is None:
                proved &= proof
                continue
        w_arr = np.asarray(where)
        stages = tuple(tuple(groups[w_arr == w].tolist()) for w in range(theta))
        stages = tuple(st for st in stages if st)
        loads = np.stack([sub[:, w_arr == w].sum(axis=1) for w in range(theta)])
        share = float((loads / np.maximum(tot, 1)).max())
        return StagedPlan(stages, share, iota, proved)
    raise InfeasibleError("no staged plan found")  # unreachable: theta = H always fits
