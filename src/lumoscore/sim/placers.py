"""Placers: what chooses a job's GPUs, as a protocol and a registry.

A placer (:class:`Placer`) gives a job GPUs in rank order, or ``None`` when it does not fit
now, and takes them back when the job leaves. Placers that survive GPU failures also
implement :class:`FailurePlacer`. :data:`PLACERS` maps a name to a factory
``factory(fabric) -> Placer``; a fabric names its default placer
(:attr:`Fabric.default_placer <lumoscore.fabric.base.Fabric.default_placer>`):

* ``server``: :class:`ServerPlacer`, whole servers, best-fit runs (electrical fabrics);
* ``fabric``: the fabric places its own jobs (LumosCore: placement, logical topology and OCS
  configuration go together); the fabric must implement the protocol itself.
* ``locality``: :class:`LocalityPlacer`, whole servers, the fewest blocks at every level of
  the fabric's hierarchy (:attr:`Fabric.placement_levels
  <lumoscore.fabric.base.Fabric.placement_levels>`), best fit (the research simulator's rule).
* ``vclos``: :class:`AllocatorPlacer` over a
  :class:`~lumoscore.placement.vclos.VClosAllocator` in ``free`` mode: the GPUs OCS-vClos
  would choose, nothing reserved (the vClos paper's scheduler for its shared baselines and
  Best), on the fabric's leaves, or on the leaf-spine shape of its GPU count.

:class:`ServerPlacer`: jobs take whole servers (TP fills a server); a job smaller than a
server takes GPUs of one server. Among runs of consecutive free servers long enough for the
job, the shortest is used (best fit, least fragmentation); with no such run the
lowest-numbered free servers are taken.
Consecutive servers share leaves and pods, so this is locality-first on any fabric whose GPU
numbering follows its hierarchy.

Examples
--------
>>> from lumoscore.workload import Job
>>> p = ServerPlacer(gpus=64, gpus_per_server=8)
>>> job = Job(job_id=0, arrival_s=0, gpus=16, model="llama_7b", tp=8, pp=1, dp=2, ep=8,
...           iterations=1, duration_s=1.0)
>>> p.place(job).tolist()
[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
>>> p.free_gpus
48
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError
from lumoscore.placement.vclos import VClosAllocator
from lumoscore.registry import Registry
from lumoscore.workload.job import Job

__all__ = [
    "PLACERS",
    "AllocatorPlacer",
    "FailurePlacer",
    "LocalityPlacer",
    "Placer",
    "ServerPlacer",
]

IntArray = NDArray[np.int64]


@runtime_checkable
class Placer(Protocol):
    """What the simulator needs from a placement policy.

    A placer may also have a ``free_gpus`` attribute (GPUs it could place on now); without
    it the simulator counts the GPUs held by no job and not failed.
    """

    def place(self, job: Job) -> IntArray | None:
        """GPUs for the job in rank order, or ``None`` if it does not fit now."""
        ...

    def release(self, job_id: int) -> Any:
        """Free the job's GPUs (a placing fabric frees them in its ``release`` hook)."""
        ...


@runtime_checkable
class FailurePlacer(Placer, Protocol):
    """A placer that takes failed GPUs out of service and back (runs with failures)."""

    def fail_gpus(self, gpus: IntArray) -> None:
        """The GPUs failed: place nothing on them (or their servers) until repaired."""
        ...

    def repair_gpus(self, gpus: IntArray) -> None:
        """The GPUs are back."""
        ...


class ServerPlacer:
    """Whole-server best-fit placement over ``gpus`` GPUs."""

    def __init__(self, gpus: int, gpus_per_server: int = 8) -> None:
        if gpus < 1 or gpus % gpus_per_server:
            raise ConfigError(f"gpus={gpus} must be a positive multiple of {gpus_per_server}")
        self.gps = gpus_per_server
        self.gpus = gpus
        self.free_slots = np.full(gpus // gpus_per_server, gpus_per_server, dtype=np.int64)
        self.failed = np.zeros(gpus // gpus_per_server, dtype=np.int64)  # failed GPUs per server
        self.owned: dict[int, IntArray] = {}

    @property
    def free_gpus(self) -> int:
        """GPUs not held by any job, on servers without a failed GPU."""
        return int(self._available().sum())

    def _available(self) -> IntArray:
        # a server with a failed GPU is drained until the GPU is repaired
        return np.where(self.failed > 0, 0, self.free_slots)

    def fail_gpus(self, gpus: IntArray) -> None:
        """GPUs failed: their servers take no new job until :meth:`repair_gpus`."""
        np.add.at(self.failed, np.asarray(gpus, dtype=np.int64) // self.gps, 1)

    def repair_gpus(self, gpus: IntArray) -> None:
        """Failed GPUs are back."""
        np.subtract.at(self.failed, np.asarray(gpus, dtype=np.int64) // self.gps, 1)

    def place(self, job: Job) -> IntArray | None:
        """GPU ids for the job (ascending), or ``None`` when it does not fit now."""
        job_id, n_gpus = job.job_id, job.gpus
        avail = self._available()
        if n_gpus > int(avail.sum()):
            return None
        gps = self.gps
        if n_gpus < gps:
            # fullest server that still has room (best fit)
            ok = np.flatnonzero(avail >= n_gpus)
            if not ok.size:
                return None
            s = int(ok[np.argmin(avail[ok])])
            first = gps - int(self.free_slots[s])
            gpus = s * gps + first + np.arange(n_gpus, dtype=np.int64)
            self.free_slots[s] -= n_gpus
        else:
            need = -(-n_gpus // gps)
            empty = avail == gps
            if int(empty.sum()) < need:
                return None
            servers = self._best_run(empty, need)
            self.free_slots[servers] = 0
            gpus = (servers[:, None] * gps + np.arange(gps)).ravel()[:n_gpus]
        self.owned[job_id] = gpus
        return gpus

    @staticmethod
    def _best_run(empty: NDArray[np.bool_], need: int) -> IntArray:
        padded = np.concatenate([[False], empty, [False]])
        edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
        starts, ends = edges[0::2], edges[1::2]
        lengths = ends - starts
        fit = np.flatnonzero(lengths >= need)
        if fit.size:
            best = fit[np.argmin(lengths[fit])]
            return np.arange(starts[best], starts[best] + need, dtype=np.int64)
        return np.flatnonzero(empty)[:need].astype(np.int64)

    def release(self, job_id: int) -> None:
        """Give the job's GPUs back."""
        gpus = self.owned.pop(job_id)
        np.add.at(self.free_slots, gpus // self.gps, 1)


class LocalityPlacer(ServerPlacer):
    """Whole servers, hierarchical best fit: a job goes into as few blocks as possible at
    every level of the fabric (pods, then leaves), preferring the fullest block that holds it.

    ``levels`` are the GPUs of a block at each level below the whole cluster, ascending
    (e.g. ``(16, 256)``: leaves of 16 GPUs, pods of 256), each a multiple of the previous and
    of ``gpus_per_server``. At each level, from the top: if some block has enough free
    servers, the one with the fewest (best fit); otherwise the fewest blocks: the freest
    ones, the last being the fullest block that covers the rest. Inside a leaf the
    lowest-numbered free servers. This is the research simulator's ELEExpander rule (fewest
    pods, then the fullest; the same inside the pods), by greedy choice instead of an ILP.
    A job smaller than a server goes to the fullest server with room, as in
    :class:`ServerPlacer`; like it, a job waits only when too few servers are free.

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> p = LocalityPlacer(64, 8, levels=(16, 32))  # leaves of 2 servers, pods of 2 leaves
    >>> def job(i, n):
    ...     return Job(job_id=i, arrival_s=0, gpus=n, model="llama_7b", tp=8, pp=1,
    ...                dp=n // 8, ep=8, iterations=1, duration_s=1.0)
    >>> p.place(job(0, 8)).tolist()[0]  # server 0
    0
    >>> p.place(job(1, 16)).tolist()[0]  # the fullest pod that holds it (0), its free leaf
    16
    >>> p.place(job(2, 8)).tolist()[0]  # pod 0's last free server
    8
    >>> p.place(job(3, 48)) is None, p.place(job(3, 32)).tolist()[::8]  # pod 1, whole
    (True, [32, 40, 48, 56])
    """

    def __init__(self, gpus: int, gpus_per_server: int = 8, *, levels: tuple[int, ...] = ()):
        super().__init__(gpus, gpus_per_server)
        sizes = []
        for lv in levels:
            if lv % gpus_per_server or (sizes and lv % (sizes[-1] * gpus_per_server)):
                raise ConfigError(
                    f"levels {levels}: each must be a multiple of the previous and of "
                    f"gpus_per_server={gpus_per_server}"
                )
            if lv < gpus and (not sizes or lv // gpus_per_server != sizes[-1]):
                sizes.append(lv // gpus_per_server)
        self.block_servers: tuple[int, ...] = tuple(sizes)  # servers per block, ascending

    def place(self, job: Job) -> IntArray | None:
        """GPU ids for the job (rank order), or ``None`` when too few servers are free."""
        if job.gpus < self.gps:
            return super().place(job)
        need = -(-job.gpus // self.gps)
        empty = self._available() == self.gps
        if int(empty.sum()) < need:
            return None
        servers = np.sort(self._pick(empty, 0, empty.size, need, len(self.block_servers)))
        self.free_slots[servers] = 0
        gpus = (servers[:, None] * self.gps + np.arange(self.gps)).ravel()[: job.gpus]
        self.owned[job.job_id] = gpus
        return gpus

    def _pick(self, empty: NDArray[np.bool_], lo: int, hi: int, need: int, level: int) -> IntArray:
        """``need`` empty servers of ``[lo, hi)``, choosing blocks of level ``level - 1``."""
        if level == 0:
            return lo + np.flatnonzero(empty[lo:hi])[:need].astype(np.int64)
        size = self.block_servers[level - 1]
        starts = np.arange(lo, hi, size)
        free = np.add.reduceat(empty[lo:hi].astype(np.int64), starts - lo)
        fits = np.flatnonzero(free >= need)
        if fits.size:  # one block: the fullest that holds the job
            b = int(fits[np.argmin(free[fits])])
            return self._pick(
                empty, int(starts[b]), min(int(starts[b]) + size, hi), need, level - 1
            )
        order = np.argsort(-free, kind="stable")
        parts, left = [], need
        for i, b in enumerate(order):
            rest = order[i:]
            cover = rest[free[rest] >= left]
            if cover.size:  # the last block: the fullest of those covering what is left
                b = int(cover[np.argmin(free[cover])])
                take = left
            else:
                take = int(free[b])
            s0 = int(starts[b])
            parts.append(self._pick(empty, s0, min(s0 + size, hi), take, level - 1))
            left -= take
            if left == 0:
                break
        return np.concatenate(parts)


class AllocatorPlacer:
    """A placer over a :class:`~lumoscore.placement.vclos.VClosAllocator`.

    Examples
    --------
    >>> from lumoscore.workload import Job
    >>> p = AllocatorPlacer(VClosAllocator(4, 4, 2, mode="free"))
    >>> job = Job(job_id=0, arrival_s=0, gpus=6, model="VGG16", tp=2, pp=1, dp=3, ep=2,
    ...           iterations=1, duration_s=1.0)
    >>> p.place(job).tolist(), p.free_gpus
    ([0, 1, 2, 3, 4, 5], 10)
    """

    def __init__(self, allocator: VClosAllocator) -> None:
        self.allocator = allocator

    @property
    def free_gpus(self) -> int:
        """GPUs held by no job."""
        return self.allocator.free_gpus

    def place(self, job: Job) -> IntArray | None:
        """The job's GPUs in rank order, or ``None``."""
        alloc = self.allocator.allocate(job.job_id, int(job.gpus))
        return None if alloc is None else alloc.gpus

    def release(self, job_id: int) -> None:
        """Give the job's GPUs back."""
        self.allocator.release(job_id)


def _vclos_placer(fabric: Any) -> Placer:
    """The vClos scheduler on the fabric's leaves and spines, or (a fabric without them, such
    as Best) on the leaf-spine shape of its GPU count."""
    from lumoscore.fabric.leafspine import leaf_spine_shape

    gps = fabric.spec.gpus_per_server
    if all(hasattr(fabric, a) for a in ("L", "S", "d")):
        L, S, d = fabric.L, fabric.S, fabric.d
    else:
        L, S = leaf_spine_shape(fabric.gpus, gps)
        d = S
    return AllocatorPlacer(VClosAllocator(L, S, gps, d, mode="free"))


def _fabric_places(fabric: Any) -> Placer:
    if not isinstance(fabric, Placer):
        raise ConfigError(
            f"placer 'fabric': fabric {getattr(fabric, 'name', fabric)!r} does not place jobs "
            "(it has no place() and release())"
        )
    return fabric


#: Placers by name: ``factory(fabric) -> Placer``.
PLACERS: Registry[Callable[[Any], Placer]] = Registry("placer")
PLACERS.register("server", lambda fabric: ServerPlacer(fabric.gpus, fabric.spec.gpus_per_server))
PLACERS.register("fabric", _fabric_places)
PLACERS.register("vclos", _vclos_placer)
PLACERS.register(
    "locality",
    lambda fabric: LocalityPlacer(
        fabric.gpus, fabric.spec.gpus_per_server, levels=fabric.placement_levels
    ),
)
