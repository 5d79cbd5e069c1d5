"""Helpers shared by the simulator tests: a small job factory and a dumbbell fabric.

A plain module (not a test module, not a fixture): the tests import it directly, e.g.
``from helpers_sim import BottleneckFabric, job``; ``tests/`` has no ``__init__.py``, so
pytest's default ``prepend`` import mode puts it on ``sys.path``. Test modules subclass
:class:`BottleneckFabric` at import time, which a fixture could not serve.
"""

from __future__ import annotations

import numpy as np

from lumoscore.fabric import Fabric, Routes, geometry_spec
from lumoscore.workload import Job

__all__ = ["BottleneckFabric", "job"]


class BottleneckFabric(Fabric):
    """NICs plus one shared core link that every inter-leaf flow crosses (a dumbbell)."""

    def __init__(self, gpus: int, port_gbps: float = 100.0, core_gbps: float = 100.0) -> None:
        self.name = "bottleneck"
        self.spec = geometry_spec(gpus, 16, 8, port_gbps)
        self.capacity_bps = np.concatenate([np.full(2 * gpus, port_gbps * 1e9), [core_gbps * 1e9]])

    def routes(self, src, dst, flow_key, *, job_id=0):
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        self._check_endpoints(src, dst)
        cross = src // 16 != dst // 16
        lens = np.where(cross, 3, 2)
        indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        idx = np.empty(int(indptr[-1]), dtype=np.int64)
        idx[indptr[:-1]] = src
        idx[indptr[1:] - 1] = self.gpus + dst
        idx[indptr[:-1][cross] + 1] = 2 * self.gpus
        return Routes(indptr, idx)


def job(
    i: int,
    arrival: float,
    gpus: int,
    *,
    pp: int = 1,
    ep: int = 8,
    duration: float = 100.0,
    iterations: int = 4,
    deadline: float | None = None,
) -> Job:
    """A ``llama_7b`` job with ``tp=8`` (``gpus`` a multiple of ``8 * pp``)."""
    return Job(
        job_id=i,
        arrival_s=arrival,
        gpus=gpus,
        model="llama_7b",
        tp=8,
        pp=pp,
        dp=gpus // 8 // pp,
        ep=ep,
        iterations=iterations,
        duration_s=duration,
        deadline_s=deadline,
    )
