"""The pod-level logical topology of a run over time (LumosCore Fig. 10).

:class:`TopologyLog` records, after every capacity change of a fabric that deploys OCS
circuits (:meth:`~lumoscore.fabric.lumos.LumosCoreFabric.ocs_circuits`), the circuits between
every ordered pod pair summed over the OCS groups, when they changed. :func:`topology_at` and
:func:`mean_topology` read snapshots and the time-weighted mean off the table.

Examples
--------
>>> import pandas as pd
>>> log = pd.DataFrame({"time_s": [0.0, 10.0, 10.0], "src_pod": [0, 0, 1],
...                     "dst_pod": [1, 1, 0], "circuits": [2, 4, 4]})
>>> topology_at(log, 5.0, 2).tolist(), mean_topology(log, 2, 0.0, 20.0).tolist()
([[0, 2], [0, 0]], [[0.0, 3.0], [2.0, 0.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["TopologyLog", "mean_topology", "topology_at"]

IntArray = NDArray[np.int64]


class TopologyLog:
    """Timestamped pod-level circuit matrices of one run (changes only)."""

    def __init__(self, fabric: Any) -> None:
        self.fabric = fabric
        self._last: NDArray[np.int64] | None = None
        self._rows: list[tuple[float, IntArray, IntArray, IntArray]] = []

    def record(self, now: float) -> None:
        """Note the circuits in effect from ``now`` on, if they changed."""
        C = np.asarray(self.fabric.ocs_circuits()).sum(axis=0)
        if self._last is not None and np.array_equal(C, self._last):
            return
        self._last = C
        i, j = np.nonzero(C)
        self._rows.append((float(now), i, j, C[i, j]))

    def frame(self) -> pd.DataFrame:
        """``time_s, src_pod, dst_pod, circuits`` (non-zero entries; a time with no rows is
        an empty topology)."""
        if not self._rows:
            return pd.DataFrame(columns=["time_s", "src_pod", "dst_pod", "circuits"])
        times = np.concatenate([np.full(r[1].size, r[0]) for r in self._rows])
        marks = [t for t, i, *_ in self._rows if i.size == 0]  # an empty topology
        out = pd.DataFrame({
            "time_s": np.concatenate([times, marks]),
            "src_pod": np.concatenate([*(r[1] for r in self._rows), np.full(len(marks), -1)]),
            "dst_pod": np.concatenate([*(r[2] for r in self._rows), np.full(len(marks), -1)]),
            "circuits": np.concatenate([*(r[3] for r in self._rows), np.zeros(len(marks))]),
        })  # fmt: skip
        out = out.astype({"src_pod": np.int64, "dst_pod": np.int64, "circuits": np.int64})
        return out.sort_values("time_s", kind="stable").reset_index(drop=True)


def _matrices(log: pd.DataFrame, pods: int) -> tuple[NDArray[np.float64], list[NDArray[np.int64]]]:
    times = np.unique(log["time_s"].to_numpy(dtype=float))
    mats = []
    for t in times:
        rows = log[(log["time_s"] == t) & (log["src_pod"] >= 0)]
        m = np.zeros((pods, pods), np.int64)
        m[rows["src_pod"].to_numpy(), rows["dst_pod"].to_numpy()] = rows["circuits"].to_numpy()
        mats.append(m)
    return times, mats


def topology_at(log: pd.DataFrame, time_s: float, pods: int) -> NDArray[np.int64]:
    """The ``(pods, pods)`` circuits in effect at ``time_s`` (zeros before the first
    record)."""
    times, mats = _matrices(log, pods)
    k = int(np.searchsorted(times, time_s, side="right")) - 1
    return mats[k] if k >= 0 else np.zeros((pods, pods), np.int64)


def mean_topology(log: pd.DataFrame, pods: int, t0: float, t1: float) -> NDArray[np.float64]:
    """The time-weighted mean circuits over ``[t0, t1]``."""
    times, mats = _matrices(log, pods)
    out = np.zeros((pods, pods))
    if t1 <= t0:
        return out
    edges = np.clip(np.append(times, np.inf), t0, t1)
    for k, m in enumerate(mats):
        out += m * (edges[k + 1] - edges[k])
    return out / (t1 - t0)
