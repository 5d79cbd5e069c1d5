"""A placed job's leaf-level demand part and path sharing (LumosCore §4.2.2, Appendix A.12).

* :func:`job_demand` -- the job's cross-pod demand ``L1`` as a :class:`DemandPart` (symmetric
  COO), from :func:`lumoscore.traffic.leaf_demand` on the placement's rank order (the research
  rule: ``+tp`` per leaf pair joined by a pipeline neighbour, ``+ceil(tp/2)`` per pair joined by
  a data-parallel ring neighbour). With rail-optimized wiring the rule counts GPU flows per
  rail: ``+1`` per pipeline send and per data-parallel ring hop between two rail leaves (the
  ``+tp`` of a server pair is one link per rail). Every other cross-pod leaf pair the job's
  flows use (:func:`~lumoscore.traffic.iteration.iteration_flows` as the simulator routes
  them: expert all-pairs traffic of an EP group that crosses pods, e.g. under ``relaxed``
  placement, or a non-ring DP collective) gets **one** link, so the admission gives every pod
  pair the job talks over a circuit (connectivity; the rule's link counts are unchanged). Each
  entry carries a sharing **cost** per link: the exposed share of one round of its cheapest
  class (pipeline: ``share_pp / (2 (pp - 1))``, data parallel: ``share_dp / pp``), in units
  of 1e-4, at least 1 -- pipeline flows are small, so they are shared first; connectivity
  links carry the largest of the job's class costs (expert: ``share_ep``), so they are shared
  last.
* :func:`share_paths` -- when ``L = L2 + L1`` gives some leaf more than ``K_leaf`` cross-pod
  links, let some of the new job's requirements share a link with another requirement of the
  same leaf pair (each pair keeps at least one link). Which ones is a min-cost flow: every
  leaf ``a`` must shed ``e_a = rowsum_a - K_leaf`` links; on the bipartite double cover (rows =
  leaves as senders, columns = leaves as receivers) a flow with node lower bounds ``e`` over
  arcs ``a -> b`` (capacity = the job's links on the pair that may go, cost = the pair's
  cost) picks the links; the reduction is then made symmetric by taking, for every pair, the
  larger of its two directions (which only sheds more, so every bound still holds).

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.workload import Job
>>> from lumoscore.placement.state import ClusterState, Placement
>>> spec = ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2)
>>> st = ClusterState.empty(spec)
>>> job = Job(job_id=0, arrival_s=0.0, gpus=32, model="Pangu", tp=8, pp=2, dp=2, ep=8,
...           iterations=1, duration_s=1.0)
>>> p = Placement(0, np.r_[0:16, 128:144], pods=(0, 1), leaves=(0, 8))
>>> part = job_demand(job, p, st)
>>> part.rows.tolist(), part.cols.tolist(), part.values.tolist()
([0, 8], [8, 0], [8, 8])
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from lumoscore.decompose.flow import solve_bounded_flow
from lumoscore.errors import ConfigError, SolverError
from lumoscore.npsets import unique
from lumoscore.placement.kernels import flow_pair_codes, sorted_difference
from lumoscore.placement.state import ClusterState, DemandPart, Placement
from lumoscore.traffic.demand import leaf_demand, research_pairs
from lumoscore.traffic.iteration import class_times_s, iteration_flows, rank_grid
from lumoscore.workload.job import Job

__all__ = ["DEMAND_METHODS", "class_costs", "job_demand", "share_paths"]

IntArray = NDArray[np.int64]

DEMAND_METHODS: tuple[str, ...] = ("research", "phases")
"""``method`` values of :func:`job_demand` (see :func:`lumoscore.traffic.leaf_demand`)."""


def class_costs(job: Job) -> tuple[int, int]:
    """Sharing cost per link of the job's pipeline and data-parallel pairs (1e-4 units, >= 1).

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> class_costs(Job(job_id=0, arrival_s=0.0, gpus=64, model="Pangu", tp=8, pp=2, dp=4,
    ...                 ep=8, iterations=1, duration_s=1.0))
    (29, 368)
    """
    s = job.effective_shares
    pp = max(1, round(1e4 * s.pp / max(1, 2 * (job.pp - 1))))
    dp = max(1, round(1e4 * s.dp / job.pp))
    return int(pp), int(dp)


def _pair_codes(a: IntArray, b: IntArray, per: int, n: int) -> IntArray:
    """Code ``min * n + max`` of every cross-pod leaf pair ``(a[i], b[i])``, one per pair
    given (repeats kept)."""
    cross = a // per != b // per
    a, b = a[cross], b[cross]
    return np.minimum(a, b) * n + np.maximum(a, b)


def _pairs(a: IntArray, b: IntArray, per: int, n: int) -> IntArray:
    return unique(_pair_codes(a, b, per, n))


def _flow_pairs_of_schedule(job: Job, placement: Placement, state: ClusterState) -> IntArray:
    """:func:`_flow_pairs` read off the flows of
    :func:`~lumoscore.traffic.iteration.iteration_flows` (any collective)."""
    spec = state.spec
    sched = iteration_flows(job, placement.gpus, spec, aggregate=True, key="gpu")
    if not len(sched):
        return np.zeros(0, np.int64)
    src = np.concatenate([rd.flows.src for rd in sched]).astype(np.int64)
    dst = np.concatenate([rd.flows.dst for rd in sched]).astype(np.int64)
    return _pairs(state.leaf_of_gpu(src), state.leaf_of_gpu(dst), spec.leaves_per_pod, spec.leaves)


def _flow_pairs(
    job: Job, placement: Placement, state: ClusterState, grid: IntArray | None = None
) -> IntArray:
    """Codes ``min(a, b) * leaves + max(a, b)`` of the cross-pod leaf pairs the job's flows
    use (every round of :func:`~lumoscore.traffic.iteration.iteration_flows`, as the simulator
    routes them: expert all-pairs included).

    Read off the rank grid without building the rounds' flows: pipeline sends between
    neighbouring stages, the data-parallel rings of every stage (``ring`` and
    ``hierarchical-ring``: a rail's ring joins neighbouring DP ranks whichever way it turns),
    every pair of leaves of an expert group (all-pairs); a class whose exposed time is 0 sends
    nothing. Other collectives take the flows of the schedule. ``grid``: the placement's
    rank grid when the caller has it.
    """
    ep = min(job.ep, job.gpus)
    if job.collective not in ("ring", "hierarchical-ring") or job.gpus % ep:
        return _flow_pairs_of_schedule(job, placement, state)
    spec = state.spec
    if grid is None:
        grid = rank_grid(job, placement.gpus)
    leaf = np.ascontiguousarray(state.leaf_of_gpu(grid), dtype=np.int64)  # (pp, dp, tp)
    times = class_times_s(job)
    return flow_pair_codes(
        leaf,
        ep,
        job.pp > 1 and times["pp"] > 0.0,
        job.dp > 1 and times["dp"] > 0.0,
        job.ep > job.tp and times["ep"] > 0.0,
        spec.leaves_per_pod,
        spec.leaves,
    )


def _cover_flows(
    job: Job,
    placement: Placement,
    state: ClusterState,
    r: IntArray,
    c: IntArray,
    val: IntArray,
    cost: IntArray,
    grid: IntArray | None = None,
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Add one link (connectivity) for every cross-pod leaf pair the job's flows use that the
    rule's entries ``(r < c, val, cost)`` leave out, with the costliest class's sharing cost."""
    n = state.spec.leaves
    have = r * n + c  # ascending and distinct (the rule's entries, in row-major order)
    flows = _flow_pairs(job, placement, state, grid)
    if len(have) > 1 and (np.diff(have) <= 0).any():
        have = unique(have)
    miss = sorted_difference(np.ascontiguousarray(flows, dtype=np.int64), have)
    if not miss.size:
        return r, c, val, cost
    c_pp, c_dp = class_costs(job)
    c_ep = max(1, round(1e4 * job.effective_shares.ep))
    return (
        np.concatenate([r, miss // n]),
        np.concatenate([c, miss % n]),
        np.concatenate([val, np.ones(miss.size, np.int64)]),
        np.concatenate([cost, np.full(miss.size, max(c_pp, c_dp, c_ep), np.int64)]),
    )


def job_demand(
    job: Job, placement: Placement, state: ClusterState, *, method: str = "research"
) -> DemandPart:
    """The placed job's demand part ``L1`` (both orientations) with per-entry sharing costs."""
    if method not in DEMAND_METHODS:
        raise ConfigError(f"method: unknown {method!r}; allowed: {', '.join(DEMAND_METHODS)}")
    spec = state.spec
    n, per = spec.leaves, spec.leaves_per_pod
    grid = rank_grid(job, placement.gpus)
    c_pp, c_dp = class_costs(job)
    if state.rail_optimized:
        leaf = state.leaf_of_gpu(grid)  # (pp, dp, tp): one leaf per rail
        codes, vals, costs = [], [], []
        # one link per flow: a rail's pipeline send or data-parallel ring hop between two
        # rail leaves of different pods (each a GPU flow, as +tp per server pair counts them)
        if job.pp > 1:
            u = _pair_codes(leaf[:-1].reshape(-1), leaf[1:].reshape(-1), per, n)
            codes.append(u), vals.append(np.ones(u.size, np.int64)), costs.append(c_pp)
        if job.dp > 1:
            u = _pair_codes(leaf.reshape(-1), np.roll(leaf, -1, axis=1).reshape(-1), per, n)
            codes.append(u), vals.append(np.ones(u.size, np.int64)), costs.append(c_dp)
        if not codes:
            z = np.zeros(0, np.int64)
            return DemandPart(z, z, z, z)
        code = np.concatenate(codes)
        val = np.concatenate(vals)
        cst = np.concatenate([np.full(c.size, k) for c, k in zip(codes, costs, strict=True)])
        u, inv = np.unique(code, return_inverse=True)
        val = np.bincount(inv.reshape(-1), weights=val, minlength=u.size).astype(np.int64)
        cost = np.full(u.size, np.iinfo(np.int64).max)
        np.minimum.at(cost, inv.reshape(-1), cst)
        r, c = u // n, u % n
    else:
        if method == "research":  # the rule's upper-triangle entries, without a matrix
            code, val, is_pp = research_pairs(job, grid, spec)
            r, c = code // n, code % n
        else:
            L1 = leaf_demand(job, placement.gpus, spec, arranged=False, method=method, sparse=True)
            m = L1.tocoo()
            up = m.row < m.col
            r = m.row[up].astype(np.int64)
            c = m.col[up].astype(np.int64)
            val = np.asarray(m.data[up], dtype=np.int64)
            leaf = grid[:, :, 0] // spec.k_leaf
            pp_pairs = (
                _pairs(leaf[:-1].reshape(-1), leaf[1:].reshape(-1), per, n)
                if job.pp > 1
                else np.zeros(0, np.int64)
            )
            is_pp = np.isin(r * n + c, pp_pairs)
        cost = np.where(is_pp, c_pp, c_dp).astype(np.int64)
    keep = val > 0
    r, c, val, cost = r[keep], c[keep], val[keep], cost[keep]
    if len(placement.pods) > 1:
        r, c, val, cost = _cover_flows(job, placement, state, r, c, val, cost, grid)
    return DemandPart(
        rows=np.concatenate([r, c]),
        cols=np.concatenate([c, r]),
        values=np.concatenate([val, val]),
        cost=np.concatenate([cost, cost]),
    )


def share_paths(
    state: ClusterState, part: DemandPart, limit: int | None = None
) -> DemandPart | None:
    """Shed the new job's links so that no leaf needs more than ``limit`` (default ``K_leaf``).

    Returns the reduced part (``shared`` = links given up), the part itself when nothing
    exceeds the limit, or ``None`` when even sharing cannot fit (a leaf joins more distinct
    partners than it has ports). ``state.L`` must not contain ``part`` yet, and its rows must
    fit ``limit`` on the leaves the part does not touch (as admissions keep them).

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec
    >>> from lumoscore.placement.state import ClusterState, DemandPart
    >>> st = ClusterState.empty(ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1,
    ...                                     gpus_per_server=1))
    >>> old = DemandPart(np.array([0, 2]), np.array([2, 0]), np.array([3, 3]), np.ones(2, int))
    >>> st.add_demand(1, old)                             # old jobs: 3 links leaf 0 - leaf 2
    >>> new = DemandPart(np.array([0, 2, 0, 3]), np.array([2, 0, 3, 0]), np.array([2, 2, 1, 1]),
    ...                  np.array([5, 5, 1, 1]))
    >>> out = share_paths(st, new)                        # leaf 0 would need 6 > 4 links
    >>> out.rows.tolist(), out.values.tolist(), out.shared      # the pair 0-2 shares
    ([0, 3], [1, 1], 2)
    """
    k = state.spec.k_leaf if limit is None else limit
    n = state.spec.leaves
    # the part's leaves only: elsewhere L's rows fit (every admission keeps them within)
    mine = unique(np.concatenate([part.rows, part.cols]))
    rows_now = np.zeros(n, np.int64)
    rows_now[mine] = state.row_sums(mine)
    new_rows = np.bincount(part.rows, weights=part.values, minlength=n).astype(np.int64)
    excess = np.maximum(rows_now + new_rows - k, 0)
    if not excess.any():
        return part
    # upper bound of shedding per directed entry: the job's links, keeping one link per pair
    total = state.L[part.rows, part.cols] + part.values
    ub = np.minimum(part.values, total - 1)
    nodes = 2 * n + 2
    S, T = 2 * n, 2 * n + 1
    leaves = np.arange(n)
    row_cap = np.bincount(part.rows, weights=ub, minlength=n).astype(np.int64)
    col_cap = np.bincount(part.cols, weights=ub, minlength=n).astype(np.int64)
    big = int(ub.sum()) + 1
    tails = np.concatenate([np.full(n, S), part.rows, n + leaves, [T]])
    heads = np.concatenate([leaves, n + part.cols, np.full(n, T), [S]])
    lower = np.concatenate([excess, np.zeros(part.rows.size, np.int64), excess, [0]])
    upper = np.concatenate([row_cap, ub, col_cap, [big]])
    if (lower > upper).any():
        return None
    costs = np.concatenate([np.zeros(n, np.int64), part.cost, np.zeros(n + 1, np.int64)])
    try:
        flow = solve_bounded_flow(
            nodes, tails, heads, lower, upper, costs, np.zeros(nodes, np.int64)
        )
    except SolverError:
        return None
    shed = flow[n : n + part.rows.size]
    # symmetric: the larger of the two directions of every pair
    key = np.minimum(part.rows, part.cols) * n + np.maximum(part.rows, part.cols)
    u, inv = np.unique(key, return_inverse=True)
    sym = np.zeros(u.size, np.int64)
    np.maximum.at(sym, inv.reshape(-1), shed)
    cut = sym[inv.reshape(-1)]
    values = part.values - cut
    keep = values > 0
    return replace(
        part,
        rows=part.rows[keep],
        cols=part.cols[keep],
        values=values[keep],
        cost=part.cost[keep],
        shared=part.shared + int(sym.sum()),
        leaning=(
            np.concatenate([part.leaning[0], part.rows[~keep]]),
            np.concatenate([part.leaning[1], part.cols[~keep]]),
        ),
    )
