"""Placement policies: locality first (LumosCore §4.2.1, A.4), relaxed locality, first fit.

Every policy places a job on whole **TP slots** (``tp`` consecutive GPUs of one server, so TP
never leaves a server; ``tp`` must divide ``gpus_per_server``) and returns the GPUs in rank
order after the A.6 communication-domain arrangement
(:func:`lumoscore.traffic.arrange_job`).

``locality`` (default, LumosCore): the first tier that fits wins --

1. one **server**; 2. one **leaf** (a rail group with rail-optimized wiring); 3. one **pod**;
4. the **fewest pods** (:mod:`lumoscore.placement.podselect`, Eqs. 37-41), every pod getting
   whole EP groups (a multiple of ``ep / tp`` slots), so an EP group never crosses a pod.

When tier 4 finds no pod set (enough idle slots, but not in whole EP groups per pod: refusal
``locality`` / ``ep-confinement``), ``propose(..., split_ep=True)`` relaxes the EP rule as
LumosCore §4.2 (Principle 2) allows for a fragmented cluster: the fewest pods that hold the
job's slots at all, every pod getting a multiple of the largest divisor ``d`` of the EP group
(in slots) with which those pods still hold it, chosen by the same A.4 selection with units of
``d`` slots; tier ``pods-ep-split``. An EP group then crosses pods in pieces of multiples of
``d`` slots (``d = 1``: single TP groups). It never refuses a job whose TP slots are idle.
:func:`lumoscore.placement.admit` uses it as its fallback.

Among candidates of a tier the one with the fewest idle GPUs wins (less fragmentation), ties by
the idle GPUs of its leaf, then of its pod, then by index. Inside a pod the fewest leaves are
used (the largest leaves, then the best-fitting one for the rest), and inside a leaf partly
used servers are filled first.

``relaxed`` (the papers' relaxed-locality baselines, e.g. vClos' OCS-Relax): tiers 1-2 as
above, then the lowest-indexed idle slots anywhere, EP groups may cross pods (any number of
pods: not the EP-split fallback above, which keeps the fewest pods and the largest pieces).

``first-fit`` (electrical baselines): the lowest-indexed idle slots.

Examples
--------
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.workload import Job
>>> from lumoscore.placement.state import ClusterState
>>> spec = ClusterSpec(pods=4, k_leaf=16, k_spine=16, tau=2, gpus_per_server=8)
>>> st = ClusterState.empty(spec)
>>> job = Job(job_id=1, arrival_s=0.0, gpus=256, model="Pangu", tp=8, pp=4, dp=8, ep=16,
...           iterations=1, duration_s=1.0)
>>> p = get_policy("locality").place(st, job)
>>> p.tier, p.pods, len(p.gpus)
('pods', (0, 1), 256)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.npsets import unique
from lumoscore.placement.kernels import block_all, block_counts, pod_slots
from lumoscore.placement.podselect import select_pods_exact, select_pods_greedy
from lumoscore.placement.state import ClusterState, Placement, Refusal
from lumoscore.traffic.arrangement import arrange_job
from lumoscore.workload.job import Job

__all__ = [
    "EP_SPLIT_TIER",
    "POD_SELECTION",
    "POLICIES",
    "PlacementPolicy",
    "get_policy",
    "place",
    "release",
]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

POLICIES: tuple[str, ...] = ("locality", "relaxed", "first-fit")
"""Policy names accepted by :func:`get_policy`."""

POD_SELECTION: tuple[str, ...] = ("auto", "greedy", "exact")
"""Pod-selection methods: ``auto`` = exact CP-SAT with few candidate pods, else greedy."""

EP_SPLIT_TIER = "pods-ep-split"
"""``Placement.tier`` of the EP-split fallback (``propose(..., split_ep=True)``)."""


def _split_unit(pod_free: IntArray, n: int, u: int) -> int:
    """Piece (in slots) of the EP-split fallback: the largest divisor ``d < u`` of the EP group
    ``u`` with which the fewest pods that can hold ``n`` slots at all (``d = 1``) hold them in
    multiples of ``d``.

    Examples
    --------
    >>> _split_unit(np.array([6, 6, 6, 6]), 16, 8)   # 3 pods needed: 6 + 6 + 4 (d = 2)
    2
    >>> _split_unit(np.array([4, 4, 4, 4]), 16, 8)
    4
    """
    by_size = np.sort(pod_free)[::-1]
    k = int(np.searchsorted(np.cumsum(by_size), n) + 1)  # fewest pods (n idle slots checked)
    return next(
        d for d in range(u - 1, 0, -1) if u % d == 0 and int((by_size[:k] // d).sum()) * d >= n
    )


def _slot_order(free: BoolArray, server_free: IntArray, sps: int, base: int) -> IntArray:
    """Free slot indices of a block, partly used servers first, then by index."""
    idx = np.flatnonzero(free)
    return base + idx[np.lexsort((idx, server_free[idx // sps]))]


@dataclass(frozen=True)
class PlacementPolicy:
    """A placement policy the simulator calls for every architecture.

    Parameters
    ----------
    name : str
        One of :data:`POLICIES`.
    pod_selection : str
        One of :data:`POD_SELECTION` (``locality`` only).
    exact_max_pods : int
        ``auto`` solves the pod selection exactly when at most this many pods can take part.
    """

    name: str = "locality"
    pod_selection: str = "auto"
    exact_max_pods: int = 8

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise ConfigError(f"policy: unknown {self.name!r}; allowed: {', '.join(POLICIES)}")
        if self.pod_selection not in POD_SELECTION:
            raise ConfigError(
                f"pod_selection: unknown {self.pod_selection!r}; allowed: "
                f"{', '.join(POD_SELECTION)}"
            )

    # ---- public -------------------------------------------------------------------------
    def propose(
        self,
        state: ClusterState,
        job: Job,
        *,
        avoid_leaves: BoolArray | None = None,
        split_ep: bool = False,
    ) -> Placement | Refusal:
        """Where the job would go now (the state is not changed), or why it does not fit.

        Parameters
        ----------
        state : ClusterState
            The cluster (read only).
        job : Job
            The job to place.
        avoid_leaves : ndarray of bool, optional
            One flag per leaf: treat those leaves' GPUs as busy (used to re-place a job away
            from leaves whose cross-pod ports are full).
        split_ep : bool
            ``locality`` only: when no pod set takes the job in whole EP groups, split the EP
            groups over the fewest pods in the largest pieces that fit (tier
            ``pods-ep-split``, see the module docstring) instead of refusing it.

        Returns
        -------
        Placement or Refusal
            The placement, or the refusal (not recorded in ``state.refusals``).
        """
        spec = state.spec
        tp = job.tp
        if tp > spec.gpus_per_server or spec.gpus_per_server % tp:
            raise PreconditionError(
                f"job {job.job_id}: tp={tp} must divide gpus_per_server="
                f"{spec.gpus_per_server} (TP stays inside a server)"
            )
        idle = state.idle
        if avoid_leaves is not None:
            idle = idle & ~np.asarray(avoid_leaves, bool)[state.gpu_leaves]
        free_gpus = int(np.count_nonzero(idle))
        n = job.gpus // tp
        slot_free = block_all(idle, tp)
        if free_gpus < job.gpus:
            return Refusal(
                job.job_id, "gpus", "gpus", job.gpus, free_gpus,
                f"{free_gpus} idle GPUs, job needs {job.gpus}",
            )  # fmt: skip
        free_slots = int(np.count_nonzero(slot_free))
        if free_slots < n:
            return Refusal(
                job.job_id, "gpus", "tp-slots", job.gpus, free_gpus,
                f"{free_slots} idle whole TP slots of {tp} GPUs, job needs {n}",
            )  # fmt: skip
        if self.name == "first-fit":
            slots = np.flatnonzero(slot_free)[:n]
            return self._finish(state, job, slots, "any")
        got = self._local(state, job, n, slot_free, idle)
        if got is not None:
            return got
        if self.name == "relaxed":
            return self._finish(state, job, np.flatnonzero(slot_free)[:n], "any")
        return self._pods(state, job, n, slot_free, idle, free_gpus, split_ep)

    def place(self, state: ClusterState, job: Job) -> Placement | None:
        """Place the job and allocate its GPUs; ``None`` (refusal recorded) if it does not fit.

        Only GPUs are allocated; :func:`lumoscore.placement.admit` also updates ``L``.
        """
        got = self.propose(state, job)
        if isinstance(got, Refusal):
            state.refusals.append(got)
            return None
        state.allocate(got)
        return got

    def release(self, state: ClusterState, job_id: int) -> Placement:
        """Free a finished job's GPUs and demand (see :meth:`ClusterState.release`)."""
        return state.release(job_id)

    # ---- tiers --------------------------------------------------------------------------
    def _finish(self, state: ClusterState, job: Job, slots: IntArray, tier: str) -> Placement:
        tp = job.tp
        gpus = (np.sort(slots)[:, None] * tp + np.arange(tp)).reshape(-1)
        ranks = arrange_job(job, gpus, state.spec)
        pods = unique(gpus // state.spec.gpus_per_pod)
        leaves = unique(state.leaf_of_gpu(gpus))
        return Placement(
            job_id=job.job_id,
            gpus=ranks,
            pods=tuple(int(p) for p in pods),
            leaves=tuple(int(x) for x in leaves),
            policy=self.name,
            tier=tier,
        )

    def _local(
        self, state: ClusterState, job: Job, n: int, slot_free: BoolArray, idle: BoolArray
    ) -> Placement | None:
        """Tiers 1-2 (server, leaf) and, for ``locality``, tier 3 (pod)."""
        spec = state.spec
        tp = job.tp
        sps = spec.gpus_per_server // tp
        server_free = block_counts(slot_free, sps)
        levels = [("server", spec.gpus_per_server), ("leaf", state.leaf_block)]
        if self.name == "locality":
            levels.append(("pod", spec.gpus_per_pod))
        idle_in: dict[int, IntArray] = {}  # idle GPUs per block, by block size (each once)

        def idle_counts(size: int) -> IntArray:
            if size not in idle_in:
                idle_in[size] = block_counts(idle, size)
            return idle_in[size]

        for tier, block in levels:
            per = block // tp
            if n > per:
                continue
            free_b = block_counts(slot_free, per)
            cand = np.flatnonzero(free_b >= n)
            if cand.size == 0:
                continue
            # fewest idle GPUs; ties by the idle GPUs of the enclosing leaf, pod, then index
            start = cand * block
            idle_b = idle_counts(block)[cand]
            idle_leaf = idle_counts(state.leaf_block)[start // state.leaf_block]
            idle_pod = idle_counts(spec.gpus_per_pod)[start // spec.gpus_per_pod]
            b = int(cand[np.lexsort((cand, idle_pod, idle_leaf, idle_b))[0]])
            if tier == "pod":
                slots = self._in_pod(state, job, b, n, slot_free, idle, server_free)
            else:
                blk = slot_free[b * per : (b + 1) * per]
                slots = _slot_order(blk, server_free[b * per // sps :], sps, b * per)[:n]
            return self._finish(state, job, slots, tier)
        return None

    def _in_pod(
        self,
        state: ClusterState,
        job: Job,
        pod: int,
        m: int,
        slot_free: BoolArray,
        idle: BoolArray,
        server_free: IntArray,
    ) -> IntArray:
        """``m`` free slots of ``pod`` on the fewest leaves (largest first, best fit last)."""
        spec = state.spec
        tp = job.tp
        return pod_slots(
            slot_free, idle, server_free, pod, m, spec.gpus_per_server // tp,
            state.leaf_block // tp, spec.gpus_per_pod // tp, spec.gpus_per_pod,
        )  # fmt: skip

    def _pods(
        self,
        state: ClusterState,
        job: Job,
        n: int,
        slot_free: BoolArray,
        idle: BoolArray,
        free_gpus: int,
        split_ep: bool = False,
    ) -> Placement | Refusal:
        """Tier 4: the fewest pods, whole EP groups per pod (A.4); with ``split_ep``, pieces
        of the largest divisor of the EP group that fits when whole groups do not."""
        spec = state.spec
        tp = job.tp
        u = math.gcd(n, max(1, job.ep // tp))  # slots per EP group
        per_pod = spec.gpus_per_pod // tp
        pod_free = block_counts(slot_free, per_pod)
        cap = pod_free // u
        need = n // u
        tier = "pods"
        if int(cap.sum()) < need:
            if not split_ep:
                return Refusal(
                    job.job_id, "locality", "ep-confinement", job.gpus, free_gpus,
                    f"EP groups of {u * tp} GPUs fit {int(cap.sum()) * u * tp} GPUs in whole "
                    f"groups per pod, job needs {job.gpus}",
                )  # fmt: skip
            u = _split_unit(pod_free, n, u)
            cap, need, tier = pod_free // u, n // u, EP_SPLIT_TIER
        method = self.pod_selection
        if method == "auto":
            method = "exact" if int((cap > 0).sum()) <= self.exact_max_pods else "greedy"
        sel = (select_pods_exact if method == "exact" else select_pods_greedy)(cap, need)
        sps = spec.gpus_per_server // tp
        server_free = block_counts(slot_free, sps)
        slots = np.concatenate(
            [
                self._in_pod(state, job, p, k * u, slot_free, idle, server_free)
                for p, k in zip(sel.pods, sel.units, strict=True)
            ]
        )
        return self._finish(state, job, slots, tier)


def get_policy(name: str = "locality", **options: object) -> PlacementPolicy:
    """The policy called ``name`` (one of :data:`POLICIES`), with options.

    Examples
    --------
    >>> get_policy("first-fit").name
    'first-fit'
    """
    return PlacementPolicy(name=name, **options)  # type: ignore[arg-type]


def place(state: ClusterState, job: Job, policy: str = "locality") -> Placement | None:
    """Shortcut for ``get_policy(policy).place(state, job)``.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec
    >>> from lumoscore.workload import Job
    >>> st = ClusterState.empty(ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2))
    >>> job = Job(job_id=3, arrival_s=0.0, gpus=16, model="Pangu", tp=8, pp=2, dp=1, ep=8,
    ...           iterations=1, duration_s=1.0)
    >>> place(st, job).tier
    'leaf'
    """
    return get_policy(policy).place(state, job)


def release(state: ClusterState, job_id: int) -> Placement:
    """Free a finished job (see :meth:`ClusterState.release`)."""
    return state.release(job_id)
