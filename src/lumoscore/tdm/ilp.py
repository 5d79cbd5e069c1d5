"""The ILP of §II.D (Eqs. 1-7), linearized, solved exactly with HiGHS for small instances.

HiGHS is called through :func:`scipy.optimize.milp` (the model is assembled as a sparse
matrix): the ``highspy`` wheel and OR-Tools export clashing HiGHS symbols and cannot be loaded
into one process, while SciPy's copy of HiGHS coexists with OR-Tools.

Decision variables: the group ``x_n`` of every job, per stage ``s`` and OXC the directed link
counts ``L[s, g, i, j]`` (one-hot ``y[..., m]`` for ``L = m``, ``m = 0..N_link``), per RAR job
and communication stage its ring ``Ring[r, t, i, j]`` (Eq. 7: in/out-degree one on its pods,
Miller-Tucker-Zemlin sub-tour elimination so the ring is single), the stage communication time
``T_s``, the stage time ``t_s`` and one reconfiguration flag per stage boundary.

Linearization of the products the paper omits:

* ``D[i, j] = B L[i, j] T[i, j]`` with ``T_s >= T[i, j]`` (Eq. 2): for every ``m >= 1``,
  ``B m T_s >= D[i, j] - Dmax[i, j] (1 - y[i, j, m])``, and
  ``D[i, j] <= Dmax[i, j] (1 - y[i, j, 0])`` (traffic needs a link).
* Job ``n`` communicates in stage ``s = (k, t)`` iff ``w[n, k] = 1`` with ``w[n, 1] = x_n``,
  ``w[n, 0] = 1 - x_n``; ring traffic uses ``z >= Ring + w - 1`` (``z >= 0``).
* ``t_s >= T_s``, ``t_s >= t_train[n] * (1 - w[n, k])`` (Eq. 3); ``T_s >= D_i / B_tor``.
* Reconfiguration after stage ``s``: ``N_link * r_s >= +-(C[s] - C[s + 1])`` for the circuits
  ``C = L + L^T`` of every OXC (same rule as :mod:`lumoscore.tdm.schedule`).

Objective: ``sum_s t_s + reconfig_s * sum_s r_s`` (Eq. 1 plus Alg. 1's epsilon). Group symmetry
is broken by ``x_0 = 0`` (swapping the groups only rotates the round).

Examples
--------
>>> from lumoscore.tdm.models import LLAMA3, Job, Network
>>> from lumoscore.tdm.schedule import build_instance
>>> net = Network(n_pods=3, pods_per_group=3, gpus_per_pod=64, ports_per_pod=4)
>>> inst = build_instance(net, [Job("ps", LLAMA3["8B"], 3, tokens=64),
...                             Job("rar", LLAMA3["8B"], 3, tokens=64)])
>>> res = solve_ilp(inst)
>>> res.status, round(res.round_s, 4)
('optimal', 2.2613)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import permutations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from lumoscore.errors import PreconditionError, SolverError
from lumoscore.tdm.schedule import N_STAGES, Instance, Schedule, stage_kt

__all__ = ["IlpResult", "solve_ilp"]

_GB = 1e9


class _Expr:
    """Sparse linear expression ``sum coef[v] * x[v] + const`` over model columns."""

    __slots__ = ("coef", "const")

    def __init__(self, coef: dict[int, float] | None = None, const: float = 0.0) -> None:
        self.coef = coef or {}
        self.const = const

    def __add__(self, other: _Expr | float) -> _Expr:
        if not isinstance(other, _Expr):
            return _Expr(dict(self.coef), self.const + float(other))
        coef = dict(self.coef)
        for v, c in other.coef.items():
            coef[v] = coef.get(v, 0.0) + c
        return _Expr(coef, self.const + other.const)

    __radd__ = __add__

    def __mul__(self, k: float) -> _Expr:
        return _Expr({v: c * k for v, c in self.coef.items()}, self.const * k)

    __rmul__ = __mul__

    def __sub__(self, other: _Expr | float) -> _Expr:
        return self + (-1.0) * other if isinstance(other, _Expr) else self + (-float(other))

    def __rsub__(self, other: float) -> _Expr:
        return (-1.0) * self + float(other)


def _qsum(items: Iterable[_Expr]) -> _Expr:
    total = _Expr()
    for e in items:
        total = total + e
    return total


class _Model:
    """Columns and rows of a MILP, assembled into SciPy's sparse form at solve time."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows_v: list[int] = []
        self.rows_c: list[float] = []
        self.rows_r: list[int] = []
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []

    def var(self, lb: float = 0.0, ub: float = np.inf, integer: bool = False) -> _Expr:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(int(integer))
        return _Expr({len(self.lb) - 1: 1.0})

    def binary(self) -> _Expr:
        return self.var(0.0, 1.0, True)

    def fix(self, e: _Expr, value: float) -> None:
        (v,) = e.coef
        self.lb[v] = self.ub[v] = float(value)

    def add(self, e: _Expr, lo: float = -np.inf, hi: float = np.inf) -> None:
        """Add ``lo <= e <= hi``."""
        r = len(self.row_lo)
        for v, c in e.coef.items():
            if c:
                self.rows_r.append(r)
                self.rows_v.append(v)
                self.rows_c.append(c)
        self.row_lo.append(lo - e.const)
        self.row_hi.append(hi - e.const)

    def ge(self, a: _Expr, b: _Expr | float) -> None:
        """``a >= b``."""
        self.add(a - b, lo=0.0)

    def eq(self, a: _Expr, b: _Expr | float) -> None:
        """``a == b``."""
        self.add(a - b, lo=0.0, hi=0.0)

    def solve(self, objective: _Expr, time_limit_s: float):
        n = len(self.lb)
        c = np.zeros(n)
        for v, k in objective.coef.items():
            c[v] += k
        a = coo_matrix((self.rows_c, (self.rows_r, self.rows_v)), shape=(len(self.row_lo), n))
        return milp(
            c,
            constraints=LinearConstraint(a.tocsr(), self.row_lo, self.row_hi),
            integrality=np.asarray(self.integer),
            bounds=Bounds(self.lb, self.ub),
            options={"time_limit": float(time_limit_s), "mip_rel_gap": 1e-9, "disp": False},
        )


@dataclass(frozen=True, eq=False)
class IlpResult:
    """Optimum of the §II.D ILP.

    Attributes
    ----------
    round_s : float
        Optimal round time (objective).
    grouping : numpy.ndarray
        ``(N,)`` 0/1 group of each job.
    stage_s, comm_s : numpy.ndarray
        ``(4,)`` stage durations and communication times.
    reconfig : numpy.ndarray
        ``(4,)`` bool reconfiguration after each stage.
    links : numpy.ndarray
        ``(4, G, P, P)`` directed OXC connections.
    rings : dict
        ``(job, t) -> (m, 2)`` ring edges (local pods) of each RAR job.
    status : str
        ``"optimal"`` or ``"time_limit"`` (best solution found, see ``mip_gap``).
    mip_gap : float
        Relative gap HiGHS reports (0 when optimal).
    solve_s : float
        Wall time of the solve.
    """

    round_s: float
    grouping: np.ndarray
    stage_s: np.ndarray
    comm_s: np.ndarray
    reconfig: np.ndarray
    links: np.ndarray = field(repr=False)
    rings: dict[tuple[int, int], np.ndarray] = field(repr=False)
    status: str = "optimal"
    mip_gap: float = 0.0
    solve_s: float = 0.0


def solve_ilp(
    instance: Instance,
    *,
    grouping: np.ndarray | None = None,
    fix_schedule: Schedule | None = None,
    time_limit_s: float = 60.0,
    max_jobs: int = 12,
    max_pairs: int = 64,
) -> IlpResult:
    """Solve the linearized ILP exactly with HiGHS.

    Parameters
    ----------
    instance : Instance
        A small instance (``max_jobs`` jobs, ``max_pairs`` directed pod pairs in all).
    grouping : numpy.ndarray or None
        Fix the groups and optimize topologies and rings only.
    fix_schedule : Schedule or None
        Fix groups, links and rings to a heuristic schedule: the objective is then that
        schedule's round time under the ILP's own constraints (an independent evaluation).
    time_limit_s : float
        HiGHS time limit.
    max_jobs, max_pairs : int
        Size guards: the model grows as ``pairs * N_link`` binaries per stage.

    Returns
    -------
    IlpResult

    Raises
    ------
    PreconditionError
        Instance too large, or a fixed schedule that does not match the instance.
    SolverError
        HiGHS found no feasible solution within the time limit, or the model is infeasible.

    Examples
    --------
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> from lumoscore.tdm.schedule import build_instance
    >>> net = Network(n_pods=2, pods_per_group=2, gpus_per_pod=8, ports_per_pod=4)
    >>> inst = build_instance(net, [Job("ps", LLAMA3["1B"], 2, tokens=16)])
    >>> res = solve_ilp(inst)
    >>> res.status, res.links[0, 0].tolist()
    ('optimal', [[0, 0], [4, 0]])
    """
    net = instance.network
    n, p, n_g = instance.n_jobs, net.pods_per_group, net.n_groups
    m_max = net.ports_per_pod
    pairs = [(i, j) for i in range(p) for j in range(p) if i != j]
    if n > max_jobs or n_g * len(pairs) > max_pairs:
        raise PreconditionError(
            f"ILP limited to {max_jobs} jobs and {max_pairs} pod pairs; got {n} jobs and "
            f"{n_g * len(pairs)} pairs (use the heuristic for larger instances)"
        )
    if fix_schedule is not None:
        grouping = fix_schedule.grouping
    mdl = _Model()
    bw = net.port_bytes_per_s / _GB  # GB/s
    bw_tor = net.tor_bytes_per_s / _GB
    demand = instance.demand_bytes / _GB  # (N, 2, P, P)
    tor = instance.tor_bytes / _GB
    unit = instance.unit_bytes / _GB
    train = instance.train_s

    x = [mdl.binary() for _ in range(n)]
    if grouping is not None:
        grouping = np.asarray(grouping, dtype=np.int8)
        if grouping.shape != (n,):
            raise PreconditionError(f"grouping must have {n} entries")
        for a, v in enumerate(grouping):
            mdl.fix(x[a], float(v))
    elif n:
        mdl.fix(x[0], 0.0)

    def w(a: int, k: int) -> _Expr:  # job a communicates when its group is k
        return x[a] if k == 1 else 1.0 - x[a]

    # Rings: Ring[r, t] over the ordered pairs of r's pods (Eq. 7).
    rar = [a for a in range(n) if instance.ring_pods[a].size >= 2]
    ring_var: dict[tuple[int, int, int, int], _Expr] = {}
    for r in rar:
        pods = instance.ring_pods[r].tolist()
        size = len(pods)
        for t in range(2):
            for i, j in permutations(pods, 2):
                ring_var[r, t, i, j] = mdl.binary()
            for i in pods:
                mdl.eq(_qsum(ring_var[r, t, i, j] for j in pods if j != i), 1.0)
                mdl.eq(_qsum(ring_var[r, t, j, i] for j in pods if j != i), 1.0)
            if size >= 3:  # MTZ: order variables of the non-root pods
                u = {i: mdl.var(1.0, size - 1.0) for i in pods[1:]}
                for i, j in permutations(pods[1:], 2):
                    mdl.add(u[i] - u[j] + (size - 1.0) * ring_var[r, t, i, j], hi=size - 2.0)
    # z[r, s, i, j] >= Ring[r, t, i, j] + w[r, k] - 1: ring traffic present in stage s.
    z_var: dict[tuple[int, int, int, int], _Expr] = {}
    for (r, t, i, j), rv in ring_var.items():
        for k in range(2):
            z = mdl.var(0.0, 1.0)
            mdl.ge(z, rv + w(r, k) - 1.0)
            z_var[r, 2 * t + k, i, j] = z

    t_comm = [mdl.var() for _ in range(N_STAGES)]
    t_stage = [mdl.var() for _ in range(N_STAGES)]
    reconf = [mdl.binary() for _ in range(N_STAGES)]
    y: dict[tuple[int, int, int, int], list[_Expr]] = {}
    links_expr: dict[tuple[int, int, int, int], _Expr] = {}
    for s in range(N_STAGES):
        k, t = stage_kt(s)
        mdl.ge(t_stage[s], t_comm[s])
        for a in range(n):  # Eq. 3: the other group computes
            mdl.ge(t_stage[s], float(train[a]) * (1.0 - w(a, k)))
        for g in range(n_g):
            members = instance.jobs_in_group(g).tolist()
            for i in range(p):  # ToR bound of Eq. 2
                terms = [float(tor[a, i]) * w(a, k) for a in members if tor[a, i] > 0]
                if terms:
                    mdl.ge(bw_tor * t_comm[s], _qsum(terms))
            for i, j in pairs:
                ys = [mdl.binary() for _ in range(m_max + 1)]
                mdl.eq(_qsum(ys), 1.0)
                y[s, g, i, j] = ys
                links_expr[s, g, i, j] = _qsum(float(m) * ys[m] for m in range(1, m_max + 1))
                terms = [float(demand[a, t, i, j]) * w(a, k) for a in members if demand[a, t, i, j]]
                d_max = sum(float(demand[a, :, i, j].max()) for a in members)
                for r in members:
                    if (r, s, i, j) in z_var:
                        terms.append(float(unit[r]) * z_var[r, s, i, j])
                        d_max += float(unit[r])
                if not terms:
                    continue
                d_expr = _qsum(terms)
                mdl.add(d_expr + d_max * ys[0], hi=d_max)  # traffic needs a link
                for m in range(1, m_max + 1):  # Eq. 2: D <= B m T_s when L = m
                    mdl.ge(bw * m * t_comm[s], d_expr - d_max * (1.0 - ys[m]))
            for i in range(p):  # Eq. 6
                used = _qsum(
                    [links_expr[s, g, i, j] for j in range(p) if j != i]
                    + [links_expr[s, g, j, i] for j in range(p) if j != i]
                )
                mdl.add(used, hi=float(m_max))
    for s in range(N_STAGES):  # reconfiguration after stage s
        nxt = (s + 1) % N_STAGES
        for g in range(n_g):
            for i, j in pairs:
                if i > j:
                    continue
                c_now = links_expr[s, g, i, j] + links_expr[s, g, j, i]
                c_next = links_expr[nxt, g, i, j] + links_expr[nxt, g, j, i]
                mdl.ge(float(m_max) * reconf[s], c_now - c_next)
                mdl.ge(float(m_max) * reconf[s], c_next - c_now)

    if fix_schedule is not None:
        _fix_to_schedule(mdl, instance, fix_schedule, y, ring_var)

    objective = _qsum(t_stage) + net.reconfig_s * _qsum(reconf)
    start = time.perf_counter()
    res = mdl.solve(objective, time_limit_s)
    solve_s = time.perf_counter() - start
    if res.status == 0:
        label = "optimal"
    elif res.status == 1 and res.x is not None:
        label = "time_limit"
    else:
        raise SolverError(
            f"HiGHS (scipy.optimize.milp) ended with status {res.status}: {res.message} "
            f"(time_limit_s={time_limit_s})"
        )
    sol = res.x

    def val(e: _Expr) -> float:
        return float(sum(c * sol[v] for v, c in e.coef.items()) + e.const)

    xs = np.array([round(val(v)) for v in x], dtype=np.int8)
    links = np.zeros((N_STAGES, n_g, p, p), dtype=np.int64)
    for (s, g, i, j), ys in y.items():
        links[s, g, i, j] = int(np.argmax([val(v) for v in ys]))
    rings: dict[tuple[int, int], np.ndarray] = {}
    for r in rar:
        for t in range(2):
            edges = [
                (i, j)
                for (rr, tt, i, j), v in ring_var.items()
                if rr == r and tt == t and val(v) > 0.5
            ]
            rings[r, t] = np.array(edges, dtype=np.int64)
    return IlpResult(
        round_s=float(res.fun),
        grouping=xs,
        stage_s=np.array([val(v) for v in t_stage]),
        comm_s=np.array([val(v) for v in t_comm]),
        reconfig=np.array([val(v) > 0.5 for v in reconf]),
        links=links,
        rings=rings,
        status=label,
        mip_gap=float(getattr(res, "mip_gap", 0.0) or 0.0) if label != "optimal" else 0.0,
        solve_s=solve_s,
    )


def _fix_to_schedule(
    mdl: _Model,
    instance: Instance,
    schedule: Schedule,
    y: dict[tuple[int, int, int, int], list[_Expr]],
    ring_var: dict[tuple[int, int, int, int], _Expr],
) -> None:
    """Fix the link and ring variables to those of a heuristic schedule."""
    links = np.asarray(schedule.links)
    net = instance.network
    if links.shape != (N_STAGES, net.n_groups, net.pods_per_group, net.pods_per_group):
        raise PreconditionError("fix_schedule.links does not match the instance")
    for (s, g, i, j), ys in y.items():
        m = int(links[s, g, i, j])
        for value, v in enumerate(ys):
            mdl.fix(v, 1.0 if value == m else 0.0)
    chosen = {
        (job, s // 2, i, j)
        for job, s, edges in schedule.rings
        for i, j in np.asarray(edges).tolist()
    }
    for key, v in ring_var.items():
        mdl.fix(v, 1.0 if key in chosen else 0.0)
