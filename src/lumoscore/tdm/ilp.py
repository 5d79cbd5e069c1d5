"""The ILP of §II.D (Eqs. 1-7), linearized, solved exactly with HiGHS for small instances.

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
('optimal', 2.1748)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import permutations

import highspy
import numpy as np

from lumoscore.errors import PreconditionError, SolverError
from lumoscore.tdm.schedule import N_STAGES, Instance, Schedule, stage_kt

__all__ = ["IlpResult", "solve_ilp"]

_GB = 1e9


@dataclass(frozen=True)
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
        Relative gap HiGHS reports.
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
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("threads", 1)

    bw = net.port_bytes_per_s / _GB  # GB/s
    bw_tor = net.tor_bytes_per_s / _GB
    demand = instance.demand_bytes / _GB  # (N, 2, P, P)
    tor = instance.tor_bytes / _GB
    unit = instance.unit_bytes / _GB
    train = instance.train_s

    x = [h.addBinary() for _ in range(n)]
    if grouping is not None:
        grouping = np.asarray(grouping, dtype=np.int8)
        if grouping.shape != (n,):
            raise PreconditionError(f"grouping must have {n} entries")
        for a, v in enumerate(grouping):
            h.changeColBounds(x[a].index, float(v), float(v))
    elif n:
        h.changeColBounds(x[0].index, 0.0, 0.0)

    def w(a: int, k: int):  # job a communicates when its group is k
        return x[a] if k == 1 else 1 - x[a]

    # Rings: Ring[r, t] over the ordered pairs of r's pods (Eq. 7).
    rar = [a for a in range(n) if instance.ring_pods[a].size >= 2]
    ring_var: dict[tuple[int, int, int, int], highspy.highs.highs_var] = {}
    for r in rar:
        pods = instance.ring_pods[r].tolist()
        size = len(pods)
        for t in range(2):
            for i, j in permutations(pods, 2):
                ring_var[r, t, i, j] = h.addBinary()
            for i in pods:
                h.addConstr(h.qsum(ring_var[r, t, i, j] for j in pods if j != i) == 1)
                h.addConstr(h.qsum(ring_var[r, t, j, i] for j in pods if j != i) == 1)
            if size >= 3:  # MTZ: order variables of the non-root pods
                u = {i: h.addVariable(lb=1, ub=size - 1) for i in pods[1:]}
                for i, j in permutations(pods[1:], 2):
                    h.addConstr(u[i] - u[j] + (size - 1) * ring_var[r, t, i, j] <= size - 2)
    # z[r, s, i, j] >= Ring[r, t, i, j] + w[r, k] - 1: ring traffic present in stage s.
    z_var = {}
    for (r, t, i, j), rv in ring_var.items():
        for k in range(2):
            z = h.addVariable(lb=0, ub=1)
            h.addConstr(z >= rv + w(r, k) - 1)
            z_var[r, 2 * t + k, i, j] = z

    t_comm = [h.addVariable(lb=0) for _ in range(N_STAGES)]
    t_stage = [h.addVariable(lb=0) for _ in range(N_STAGES)]
    reconf = [h.addBinary() for _ in range(N_STAGES)]
    y: dict[tuple[int, int, int, int], list] = {}
    links_expr: dict[tuple[int, int, int, int], object] = {}
    for s in range(N_STAGES):
        k, t = stage_kt(s)
        h.addConstr(t_stage[s] >= t_comm[s])
        for a in range(n):  # Eq. 3: the other group computes
            h.addConstr(t_stage[s] >= float(train[a]) * (1 - w(a, k)))
        for g in range(n_g):
            members = instance.jobs_in_group(g).tolist()
            for i in range(p):  # ToR bound of Eq. 2
                terms = [float(tor[a, i]) * w(a, k) for a in members if tor[a, i] > 0]
                if terms:
                    h.addConstr(bw_tor * t_comm[s] >= h.qsum(terms))
            for i, j in pairs:
                ys = [h.addBinary() for _ in range(m_max + 1)]
                h.addConstr(h.qsum(ys) == 1)
                y[s, g, i, j] = ys
                links_expr[s, g, i, j] = h.qsum(m * ys[m] for m in range(1, m_max + 1))
                terms = [float(demand[a, t, i, j]) * w(a, k) for a in members if demand[a, t, i, j]]
                d_max = sum(float(demand[a, :, i, j].max()) for a in members)
                for r in members:
                    if (r, s, i, j) in z_var:
                        terms.append(float(unit[r]) * z_var[r, s, i, j])
                        d_max += float(unit[r])
                if not terms:
                    continue
                d_expr = h.qsum(terms)
                h.addConstr(d_expr <= d_max * (1 - ys[0]))
                for m in range(1, m_max + 1):
                    h.addConstr(bw * m * t_comm[s] >= d_expr - d_max * (1 - ys[m]))
            for i in range(p):  # Eq. 6
                h.addConstr(
                    h.qsum(
                        [links_expr[s, g, i, j] for j in range(p) if j != i]
                        + [links_expr[s, g, j, i] for j in range(p) if j != i]
                    )
                    <= m_max
                )
    for s in range(N_STAGES):  # reconfiguration after stage s
        nxt = (s + 1) % N_STAGES
        for g in range(n_g):
            for i, j in pairs:
                if i > j:
                    continue
                c_now = links_expr[s, g, i, j] + links_expr[s, g, j, i]
                c_next = links_expr[nxt, g, i, j] + links_expr[nxt, g, j, i]
                h.addConstr(m_max * reconf[s] >= c_now - c_next)
                h.addConstr(m_max * reconf[s] >= c_next - c_now)

    if fix_schedule is not None:
        _fix_to_schedule(h, instance, fix_schedule, y, ring_var)

    h.minimize(h.qsum(t_stage) + net.reconfig_s * h.qsum(reconf))
    start = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - start
    status = h.getModelStatus()
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2
    if status == highspy.HighsModelStatus.kOptimal:
        label = "optimal"
    elif status == highspy.HighsModelStatus.kTimeLimit and has_solution:
        label = "time_limit"
    else:
        raise SolverError(
            f"HiGHS ended with {h.modelStatusToString(status)} and no usable solution "
            f"(time_limit_s={time_limit_s})"
        )
    xs = np.rint([h.val(v) for v in x]).astype(np.int8) if n else np.zeros(0, dtype=np.int8)
    links = np.zeros((N_STAGES, n_g, p, p), dtype=np.int64)
    for (s, g, i, j), ys in y.items():
        links[s, g, i, j] = int(np.argmax([h.val(v) for v in ys]))
    rings: dict[tuple[int, int], np.ndarray] = {}
    for r in rar:
        for t in range(2):
            edges = [
                (i, j)
                for (rr, tt, i, j), v in ring_var.items()
                if rr == r and tt == t and h.val(v) > 0.5
            ]
            rings[r, t] = np.array(edges, dtype=np.int64)
    return IlpResult(
        round_s=float(info.objective_function_value),
        grouping=xs,
        stage_s=np.array([h.val(v) for v in t_stage]),
        comm_s=np.array([h.val(v) for v in t_comm]),
        reconfig=np.array([h.val(v) > 0.5 for v in reconf]),
        links=links,
        rings=rings,
        status=label,
        mip_gap=float(info.mip_gap) if label != "optimal" else 0.0,
        solve_s=solve_s,
    )


def _fix_to_schedule(
    h: highspy.Highs,
    instance: Instance,
    schedule: Schedule,
    y: dict,
    ring_var: dict,
) -> None:
    """Fix the link and ring variables to those of a heuristic schedule."""
    links = np.asarray(schedule.links)
    if links.shape != (
        N_STAGES,
        instance.network.n_groups,
        *(instance.network.pods_per_group,) * 2,
    ):
        raise PreconditionError("fix_schedule.links does not match the instance")
    for (s, g, i, j), ys in y.items():
        m = int(links[s, g, i, j])
        for val, v in enumerate(ys):
            bound = 1.0 if val == m else 0.0
            h.changeColBounds(v.index, bound, bound)
    chosen = {
        (job, s // 2, i, j)
        for job, s, edges in schedule.rings
        for i, j in np.asarray(edges).tolist()
    }
    for key, v in ring_var.items():
        bound = 1.0 if key in chosen else 0.0
        h.changeColBounds(v.index, bound, bound)
