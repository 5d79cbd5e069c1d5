"""Algorithm 1: hill climbing over the split of jobs into two TDM groups.

Start from every job in one group (the non-TDM baseline, line 1), evaluate the round (lines 2-4),
then repeatedly evaluate every neighbour -- the grouping with one job moved to the other group
(lines 8-11) -- and move to the best neighbour while it strictly shortens the round (lines 5-7).
The result is never worse than the start.

A neighbour differs from the current grouping in one pod group only, so only that OXC's four
stages are recomputed (memoized per pod group in a :class:`~lumoscore.tdm.schedule.StageCache`);
the round time of all neighbours is then assembled with array operations.

Examples
--------
>>> from lumoscore.tdm.models import LLAMA3, Job, Network
>>> from lumoscore.tdm.schedule import build_instance
>>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
>>> jobs = [Job("ps", LLAMA3["8B"], 4, tokens=64), Job("rar", LLAMA3["8B"], 4, tokens=64)]
>>> res = hill_climb(build_instance(net, jobs))
>>> res.schedule.grouping.tolist(), bool(res.schedule.round_s < res.start.round_s)
([1, 0], True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lumoscore.errors import InfeasibleError, PreconditionError
from lumoscore.tdm.schedule import (
    N_STAGES,
    Instance,
    Schedule,
    StageCache,
    evaluate_grouping,
    stage_kt,
)

__all__ = ["HillClimbResult", "hill_climb", "round_times_of_neighbours"]

_REL_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class HillClimbResult:
    """Outcome of :func:`hill_climb`.

    Attributes
    ----------
    schedule : Schedule
        The final (locally optimal) schedule.
    start : Schedule
        The schedule of the starting grouping.
    iterations : int
        Moves made.
    history_s : tuple of float
        Round time after each move, starting with the start's.
    evaluations : int
        Distinct pod-group configurations evaluated with Alg. 2.
    """

    schedule: Schedule
    start: Schedule
    iterations: int
    history_s: tuple[float, ...] = field(repr=False)
    evaluations: int = 0


def round_times_of_neighbours(
    instance: Instance, grouping: np.ndarray, cache: StageCache
) -> np.ndarray:
    """Round time of every one-job-moved neighbour of ``grouping`` (Alg. 1 lines 8-11).

    Returns
    -------
    numpy.ndarray
        ``(N,)``: entry ``n`` is the round time with job ``n`` in the other group.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> from lumoscore.tdm.schedule import StageCache, build_instance, evaluate_grouping
    >>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
    >>> inst = build_instance(net, [Job("ps", LLAMA3["8B"], 4, tokens=64),
    ...                             Job("rar", LLAMA3["8B"], 4, tokens=64)])
    >>> cache = StageCache(inst)
    >>> nb = round_times_of_neighbours(inst, np.array([0, 0]), cache)
    >>> bool(np.isclose(nb[0], evaluate_grouping(inst, np.array([1, 0])).round_s))
    True
    """
    grouping = np.asarray(grouping, dtype=np.int8)
    net = instance.network
    n = instance.n_jobs
    groups = instance.group_of_job
    base = [cache.get(g, grouping) for g in range(net.n_groups)]
    comm = np.stack([gs.comm_s for gs in base])  # (G, 4)
    reconf = np.stack([gs.reconfig for gs in base])  # (G, 4)
    new_comm = np.empty((n, N_STAGES))
    new_reconf = np.empty((n, N_STAGES), dtype=bool)
    for j in range(n):
        flipped = grouping.copy()
        flipped[j] ^= 1
        gs = cache.get(int(groups[j]), flipped)
        new_comm[j] = gs.comm_s
        new_reconf[j] = gs.reconfig
    rows = np.arange(n)
    comm_nb = np.broadcast_to(comm, (n, *comm.shape)).copy()
    comm_nb[rows, groups] = new_comm
    reconf_nb = np.broadcast_to(reconf, (n, *reconf.shape)).copy()
    reconf_nb[rows, groups] = new_reconf
    flipped_all = grouping[None, :] ^ np.eye(n, dtype=np.int8)  # (N, N)
    train = np.empty((n, N_STAGES))
    for s in range(N_STAGES):
        k, _ = stage_kt(s)
        train[:, s] = np.where(flipped_all != k, instance.train_s[None, :], 0.0).max(
            axis=1, initial=0.0
        )
    stage = np.maximum(comm_nb.max(axis=1), train)
    return stage.sum(axis=1) + reconf_nb.any(axis=1).sum(axis=1) * net.reconfig_s


def hill_climb(
    instance: Instance,
    start: np.ndarray | None = None,
    *,
    max_iters: int | None = None,
    cache: StageCache | None = None,
) -> HillClimbResult:
    """Alg. 1: best-improvement hill climbing over the two-group split.

    Parameters
    ----------
    instance : Instance
        The deployed jobs.
    start : numpy.ndarray or None
        Starting 0/1 grouping; ``None`` puts every job in group 0 (line 1).
    max_iters : int or None
        Cap on moves (default: ``4 * N + 10``; each move strictly improves, so this only guards).
    cache : StageCache or None
        Reuse a cache across calls on the same instance.

    Returns
    -------
    HillClimbResult

    Raises
    ------
    InfeasibleError
        The starting grouping needs more OXC ports than some pod has (Eq. 6).

    Examples
    --------
    >>> from lumoscore.tdm.models import LLAMA3, Job, Network
    >>> from lumoscore.tdm.schedule import build_instance
    >>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
    >>> inst = build_instance(net, [Job("alltoall", LLAMA3["1B"], 4, tokens=16),
    ...                             Job("rar", LLAMA3["3B"], 4, tokens=16)])
    >>> res = hill_climb(inst)
    >>> res.iterations, bool(res.schedule.round_s <= res.start.round_s)
    (1, True)
    """
    n = instance.n_jobs
    grouping = (
        np.zeros(n, dtype=np.int8) if start is None else np.asarray(start, dtype=np.int8).copy()
    )
    if grouping.shape != (n,) or not np.isin(grouping, (0, 1)).all():
        raise PreconditionError(f"start must be {n} values in {{0, 1}}")
    cache = cache or StageCache(instance)
    first = evaluate_grouping(instance, grouping, cache)
    if not first.feasible:
        raise InfeasibleError(
            "the starting grouping needs more OXC ports than a pod has (Eq. 6): raise "
            "network.ports_per_pod or use smaller pod groups"
        )
    current = first.round_s
    history = [current]
    limit = 4 * n + 10 if max_iters is None else max_iters
    iterations = 0
    while n and iterations < limit:
        nb = round_times_of_neighbours(instance, grouping, cache)
        best = int(np.argmin(nb))
        if not nb[best] < current * (1.0 - _REL_TOL):
            break
        grouping[best] ^= 1
        current = float(nb[best])
        history.append(current)
        iterations += 1
    final = evaluate_grouping(instance, grouping, cache)
    return HillClimbResult(
        schedule=final,
        start=first,
        iterations=iterations,
        history_s=tuple(history),
        evaluations=len(cache),
    )
