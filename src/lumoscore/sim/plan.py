"""A started job's network plan: its iteration's rounds routed on a fabric.

Built once when a job starts (its placement and the fabric's routing fix every route), then
reused for all iterations. A round's flows are GPU-level weighted rows (identical flows between
the same two GPUs merged), so the NIC of every GPU is modelled exactly.

:func:`solo_progress` runs the fluid model of one round alone on the fabric: all flows start
together, rates are max-min fair, a flow leaves when its bytes are sent and the others speed up.
The round ends with its slowest flow (barrier). Alone, a job's iteration time is therefore
``sum(compute_s + solo_s)`` over its rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from lumoscore.fabric.base import Fabric
from lumoscore.jit import cached_jit
from lumoscore.npsets import unique
from lumoscore.sim.kernels import fluid_run, solo_run
from lumoscore.traffic.exposure import EXPOSURES
from lumoscore.workload.job import REFERENCE_PORT_GBPS, Job

__all__ = [
    "JobPlan",
    "RoundPlan",
    "build_plan",
    "resolo",
    "solo_progress",
    "solo_state",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: A flow is done when less than this share of its bytes is left (float round-off guard).
DONE_RTOL = 1e-9


@dataclass(frozen=True)
class RoundPlan:
    """One routed round: compute, then flows (CSR routes), then a barrier.

    ``bits`` is the size of one flow of each row (capacities are in bit/s). ``peak_bps`` is
    the highest load the round alone puts on each of its ``links`` (``None``: unknown, taken
    as the full capacity), ``idle_s`` the time from the round's start after which, alone, it
    sends nothing more on each of them (``None``: taken as ``solo_s``). ``links`` are sorted,
    each once. ``start_state`` caches, for the capacities the plan was made for, the rows'
    rates and bottleneck links when the round starts alone and when its first flow finishes
    (see :func:`solo_state`; a warm start for the shared fluid set), the round's
    independent parts (see :mod:`lumoscore.sim.components`) and the links its routing
    against the load may read (``"probed_links"``, see
    :meth:`~lumoscore.sim.rounds.RoundModel.demote_probed`). ``endpoints`` keeps the rows'
    ``(src, dst, flow_key)`` on fabrics whose routing is load-aware: such a round is routed
    again when it starts (:func:`lumoscore.sim.probing.reroute`).
    """

    indptr: IntArray
    indices: IntArray
    weight: FloatArray
    bits: FloatArray
    compute_s: float
    tag: str
    solo_s: float
    ideal_s: float
    links: IntArray
    peak_bps: FloatArray | None = None
    idle_s: FloatArray | None = None
    start_state: dict[str, NDArray] = field(default_factory=dict, compare=False, repr=False)
    endpoints: tuple[IntArray, IntArray, IntArray] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def n_flows(self) -> int:
        """Rows (weighted flows) of the round."""
        return int(self.weight.size)


@dataclass(frozen=True)
class JobPlan:
    """All rounds of one iteration of a placed job, and the links they use."""

    job_id: int
    rounds: tuple[RoundPlan, ...]
    links: IntArray
    iteration_s: float

    @property
    def ideal_comm_s(self) -> float:
        """Communication time of one iteration on the ideal network."""
        return float(sum(r.ideal_s for r in self.rounds))

    @property
    def solo_comm_s(self) -> float:
        """Communication time of one iteration alone on this fabric."""
        return float(sum(r.solo_s for r in self.rounds))


def solo_progress(
    rp: RoundPlan | tuple[IntArray, IntArray, FloatArray, FloatArray],
    capacity: FloatArray,
    until_s: float = math.inf,
    remaining: FloatArray | None = None,
    eps: float = 0.0,
) -> tuple[float, FloatArray]:
    """Run a round's flows alone until they finish or ``until_s`` seconds have passed.

    ``eps > 0`` uses the (1+eps)-approximate max-min allocation.

    Returns ``(elapsed_s, remaining_bits)``: the time the flows took (``<= until_s``) and the
    bits each flow of a row still has to send (all zero when the round finished).
    """
    if isinstance(rp, RoundPlan):
        indptr, indices, weight, size = rp.indptr, rp.indices, rp.weight, rp.bits
    else:
        indptr, indices, weight, size = rp
    rem = size if remaining is None else remaining
    t, out, *_ = fluid_run(
        indptr,
        indices,
        weight,
        size.astype(float),
        rem.astype(float),
        capacity,
        float(until_s),
        DONE_RTOL,
        1.0 + eps,
    )
    return float(t), out


def solo_state(
    rp: RoundPlan, capacity: FloatArray, until_s: float, eps: float = 0.0
) -> tuple[FloatArray, FloatArray, IntArray]:
    """A round alone after ``until_s`` seconds: the bits each flow of a row still has to send,
    and each row's rate and bottleneck link then (-1 if none; 0 and -1 for finished rows).
    ``eps > 0`` uses the (1+eps)-approximate allocation.

    Exact states before the first flow finishes come from the round's starting rates (cached
    in ``rp.start_state`` with the time of that first finish): rates are constant until then.

    Examples
    --------
    >>> import numpy as np
    >>> rp = RoundPlan(np.array([0, 1, 2]), np.array([0, 0]), np.ones(2), np.array([10.0, 20.0]),
    ...                0.0, "x", 0.0, 0.0, np.array([0]))
    >>> rem, rate, bott = solo_state(rp, np.array([10.0]), 2.0)
    >>> rem.tolist(), rate.tolist(), bott.tolist()
    ([0.0, 10.0], [0.0, 10.0], [-1, 0])
    """
    bits = np.asarray(rp.bits, dtype=float)  # (no copy: only read)
    if eps == 0.0:
        cache = rp.start_state
        if "rate" not in cache:
            _, _, _, _, cache["rate"], cache["bott"], _ = fluid_run(
                rp.indptr, rp.indices, rp.weight, bits, bits, capacity, 0.0, DONE_RTOL, 1.0
            )
        if "first_s" not in cache:
            cache["first_s"] = np.array(_first_end(bits, cache["rate"]))
        if until_s < cache["first_s"]:
            rate, bott = cache["rate"], cache["bott"]
            return _rem_before_first_end(bits, rate, bott, float(until_s)), rate, bott
    _, rem, _, _, rate, bott, _ = fluid_run(
        rp.indptr,
        rp.indices,
        rp.weight,
        bits,
        bits,
        capacity,
        float(until_s),
        DONE_RTOL,
        1.0 + eps,
    )
    return rem, rate, bott


def _first_end(bits: FloatArray, rate: FloatArray) -> float:
    """When the first of flows of ``bits`` sending at ``rate`` ends (``inf`` if none sends)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.where(rate > 0.0, bits / rate, np.inf).min(initial=np.inf))


@cached_jit
def _rem_before_first_end(
    bits: FloatArray, rate: FloatArray, bott: IntArray, dt: float
) -> FloatArray:  # pragma: no cover - compiled
    """Bits left ``dt`` after a round's start, before its first flow ends: rows sending at
    their start rate, rows that cannot send (rate 0 on a bottleneck of no capacity) and rows
    that ended at the start (rate 0, no bottleneck: they crossed no link of finite
    capacity)."""
    out = np.empty(bits.size)
    for i in range(bits.size):
        if rate[i] > 0.0:
            out[i] = max(bits[i] - rate[i] * dt, 0.0)
        else:
            out[i] = bits[i] if bott[i] >= 0 else 0.0
    return out


def _solo_run(
    indptr: IntArray,
    indices: IntArray,
    weight: FloatArray,
    size: FloatArray,
    capacity: FloatArray,
    eps: float,
) -> tuple[float, IntArray, FloatArray, FloatArray, dict[str, NDArray]]:
    """A round alone from start to end: its time, its links (sorted), their peak loads, when
    its last flow leaves each of them and (exact runs) its start state (see
    :func:`solo_state`)."""
    size = size.astype(float)
    t, _, glob, peak, _, _, idle, rate0, bott0 = solo_run(
        indptr, indices, weight, size, capacity, DONE_RTOL, 1.0 + eps
    )
    order = np.argsort(glob)
    start = {"rate": rate0, "bott": bott0} if eps == 0 else {}
    return float(t), glob[order], peak[order], idle[order], start


def build_plan(
    job: Job,
    gpus: IntArray,
    fabric: Fabric,
    *,
    eps: float = 0.0,
    exposure: str = "literal",
) -> JobPlan:
    """Route every round of one iteration of ``job`` placed on ``gpus`` (rank order).

    ``exposure`` names the traffic model (:data:`~lumoscore.traffic.exposure.EXPOSURES`).

    On a fabric whose routing is load-aware (:attr:`Fabric.load_aware
    <lumoscore.fabric.base.Fabric.load_aware>`) the rounds are routed here as if nothing else
    were in flight and keep their endpoints: the simulator routes each again when it starts.
    """
    probing = fabric.load_aware
    # A job's bytes are fixed by its model: its ideal iteration time is at the reference port
    # speed. A fabric with slower ports takes longer; the contention level compares with
    # the contention-free time at the fabric's own port speed.
    schedule = EXPOSURES[exposure](job, gpus, fabric.spec, aggregate=True, key="gpu")
    slower = REFERENCE_PORT_GBPS / fabric.port_gbps
    cap = fabric.capacity_bps
    rounds = []
    all_links = []
    base_key = int(job.job_id) << 32
    for r, rnd in enumerate(schedule):
        f = rnd.flows
        src = np.asarray(f.src, dtype=np.int64)
        dst = np.asarray(f.dst, dtype=np.int64)
        keys = base_key + (r << 20) + np.arange(src.size, dtype=np.int64)
        weight = np.asarray(f.weight, dtype=float)
        if probing:
            routes = fabric.live_routes(src, dst, keys, job_id=job.job_id, flow_weight=weight)
        else:
            routes = fabric.live_routes(src, dst, keys, job_id=job.job_id)
        size = np.asarray(f.bytes, dtype=float) * 8.0
        solo_s, links, peak, idle, start = _solo_run(
            routes.indptr, routes.indices, weight, size, cap, eps
        )
        ideal = rnd.ideal_s * slower if rnd.ideal_s is not None else solo_s
        rounds.append(
            RoundPlan(
                routes.indptr,
                routes.indices,
                weight,
                size,
                float(rnd.compute_s),
                rnd.tag,
                float(solo_s),
                float(ideal),
                links,
                peak,
                idle,
                start,
                (src, dst, keys) if probing else None,
            )
        )
        all_links.append(links)  # (sorted, each once)
    links = _union(all_links, cap.size)
    iteration_s = float(sum(r.compute_s + r.solo_s for r in rounds))
    return JobPlan(int(job.job_id), tuple(rounds), links, iteration_s)


def _union(parts: list[IntArray], n: int) -> IntArray:
    """The distinct entries of ``parts`` (link ids below ``n``, each part sorted), sorted:
    through a mask of the ``n`` links when the parts cover a good share of them, else by
    sorting the parts (a cluster's many links, a job's few)."""
    total = sum(p.size for p in parts)
    if 16 * total < n:
        return unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    used = np.zeros(n, dtype=bool)
    for p in parts:
        used[p] = True
    return np.flatnonzero(used)


def resolo(
    plan: JobPlan, capacity: FloatArray, changed: NDArray[np.bool_], *, eps: float = 0.0
) -> JobPlan:
    """The plan with the solo times of rounds crossing ``changed`` links recomputed."""
    rounds = []
    for rp in plan.rounds:
        if rp.solo_s > 0 and changed[rp.links].any():
            solo_s, _, peak, idle, start = _solo_run(
                rp.indptr, rp.indices, rp.weight, rp.bits, capacity, eps
            )
            rp = replace(rp, solo_s=solo_s, peak_bps=peak, idle_s=idle, start_state=start)
        rounds.append(rp)
    iteration_s = float(sum(r.compute_s + r.solo_s for r in rounds))
    return replace(plan, rounds=tuple(rounds), iteration_s=iteration_s)
