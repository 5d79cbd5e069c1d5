"""Placers: what chooses a job's GPUs, as a protocol and a registry.

A placer (:class:`Placer`) gives a job GPUs in rank order, or ``None`` when it does not fit
now, and takes them back when the job leaves. Placers that survive GPU failures also
implement :class:`FailurePlacer`. :data:`PLACERS` maps a name to a factory
``factory(fabric) -> Placer``; a fabric names its default placer
(:attr:`Fabric.default_placer <lumoscore.fabric.base.Fabric.default_placer>`):

* ``server``: :class:`ServerPlacer`, whole servers, best-fit runs (electrical fabrics);
* ``fabric``: the fabric places its own jobs (LumosCore: placement, logical topology and OCS
  configuration go together); the fabric must implement the protocol itself.

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
from lumoscore.registry import Registry
from lumoscore.workload.job import Job

__all__ = ["PLACERS", "FailurePlacer", "Placer", "ServerPlacer"]

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
