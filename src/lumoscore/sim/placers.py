"""A simple, deterministic placer for electrical fabrics: whole servers, best-fit runs.

Jobs take whole servers (TP fills a server); a job smaller than a server takes GPUs of one
server. Among runs of consecutive free servers long enough for the job, the shortest is used
(best fit, least fragmentation); with no such run the lowest-numbered free servers are taken.
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

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError
from lumoscore.workload.job import Job

__all__ = ["ServerPlacer"]

IntArray = NDArray[np.int64]


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
