"""The Best fabric: one ideal non-blocking switch with a port per GPU (LumosCore §6.2).

Only the NICs constrain: every flow crosses its source's uplink and its destination's
downlink, each of the port speed.

Examples
--------
>>> import numpy as np
>>> fab = BestFabric(gpus=16, port_gbps=1600)
>>> r = fab.routes(np.array([0]), np.array([9]), np.array([0]))
>>> r.links_of(0).tolist()
[0, 25]
"""

from __future__ import annotations

import numpy as np

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import Fabric, IntArray, Routes, check_positive, geometry_spec
from lumoscore.jit import cached_jit

__all__ = ["BestFabric"]


@cached_jit
def _nic_routes(
    src: IntArray, dst: IntArray, n_gpus: int, gps: int
) -> tuple[int, IntArray, IntArray]:  # pragma: no cover - compiled
    """``(status, indptr, indices)``: each flow crosses its source's uplink and its
    destination's downlink; status 1 (routes empty) when an id is out of range or both ends
    share a server."""
    F = src.size
    indptr = np.empty(F + 1, np.int64)
    indices = np.empty(2 * F, np.int64)
    indptr[0] = 0
    for i in range(F):
        s, d = src[i], dst[i]
        if s < 0 or d < 0 or s >= n_gpus or d >= n_gpus or s // gps == d // gps:
            return 1, indptr[:1], indices[:0]
        indices[2 * i] = s
        indices[2 * i + 1] = n_gpus + d
        indptr[i + 1] = 2 * i + 2
    return 0, indptr, indices


class BestFabric(Fabric):
    """An ideal switch with ``gpus`` ports of ``port_gbps``; jobs never share a link."""

    routings = ("ideal",)
    routing = "ideal"

    def __init__(self, gpus: int, port_gbps: float = 1600.0, gpus_per_server: int = 8) -> None:
        check_positive("port_gbps", port_gbps)
        if gpus < 1 or gpus % gpus_per_server:
            raise ConfigError(
                f"gpus={gpus} must be a positive multiple of gpus_per_server={gpus_per_server}"
            )
        self.name = "best"
        # One switch: all GPUs under one "leaf".
        self.spec = geometry_spec(gpus, gpus, gpus_per_server, port_gbps)
        self.capacity_bps = np.full(2 * gpus, port_gbps * 1e9)

    def routes(
        self, src: IntArray, dst: IntArray, flow_key: IntArray, *, job_id: int = 0
    ) -> Routes:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if src.ndim != 1 or src.shape != dst.shape:
            self._check_endpoints(src, dst)
            return Routes.from_columns(src, self.gpus + dst)
        status, indptr, indices = _nic_routes(
            np.ascontiguousarray(src),
            np.ascontiguousarray(dst),
            self.gpus,
            self.spec.gpus_per_server,
        )
        if status:
            self._check_endpoints(src, dst)  # raises, naming the bad ids
        return Routes(indptr, indices)
