"""Simulation results: a per-job table, a run summary, and atomic files.

Per job: arrival, start, finish, JRT = finish - start, JWT = start - arrival,
JCT = finish - arrival, the ideal run time (``duration_s`` of the trace, on the ideal network),
the JRT slowdown ``jrt / duration - 1`` and the contention level (LumosCore Eq. 10, per round:
actual communication time over contention-free communication time at the fabric's port
speed; 1 means no contention).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from lumoscore.fileio import atomic_write_files, json_text
from lumoscore.workload.job import Job

__all__ = [
    "STABILITY_COLUMNS",
    "TIMING_STATS",
    "SimResult",
    "finished_jobs",
    "queue_stats",
    "stability",
    "summarize",
]

PER_JOB_COLUMNS = (
    "job_id",
    "arrival_s",
    "start_s",
    "finish_s",
    "jrt_s",
    "jwt_s",
    "jct_s",
    "gpus",
    "model",
    "ideal_jrt_s",
    "jrt_slowdown",
    "contention_level",
    "isolated",
    "rejected",
    "restarts",
    "lost_s",
    "fragmented",
)


def _pct(x: NDArray[np.float64], q: float) -> float:
    return float(np.percentile(x, q)) if x.size else math.nan


def summarize(jobs: pd.DataFrame) -> dict[str, float]:
    """Means and percentiles of JRT, JWT and JCT over the finished jobs."""
    ok = finished_jobs(jobs)
    rejected = int(jobs["rejected"].sum())
    # never finished: the run ran out of events with them waiting (e.g. no route left)
    out: dict[str, float] = {
        "jobs": len(ok),
        "rejected": rejected,
        "unfinished": len(jobs) - len(ok) - rejected,
    }
    for col in ("jrt_s", "jwt_s", "jct_s"):
        x = ok[col].to_numpy(dtype=float)
        name = col[:-2]
        out[f"mean_{name}_s"] = float(x.mean()) if x.size else math.nan
        out[f"p50_{name}_s"] = _pct(x, 50)
        out[f"p99_{name}_s"] = _pct(x, 99)
    sd = ok["jrt_slowdown"].to_numpy(dtype=float)
    out["mean_jrt_slowdown"] = float(sd.mean()) if sd.size else math.nan
    cl = ok["contention_level"].to_numpy(dtype=float)
    cl = cl[np.isfinite(cl)]
    out["mean_contention_level"] = float(cl.mean()) if cl.size else math.nan
    if len(ok):
        out["makespan_s"] = float(ok["finish_s"].max() - jobs["arrival_s"].min())
    out.update(stability(ok))
    for col in ("restarts", "fragmented"):
        if col in jobs:
            out[f"{col}_jobs" if col == "fragmented" else col] = int(jobs[col].sum())
    if "lost_s" in jobs:
        out["lost_s"] = float(jobs["lost_s"].sum())
    return out


#: The run's wall-clock times among its stats and summary (seconds; they differ run to run).
TIMING_STATS = ("wall_s", "plans_s")
_COUNTED = (
    "reconfigurations",
    "failures",
    "hard_failures",
    "fragmentation_blocks",
    "link_failures",
    "link_repairs",
    "link_reroutes",
)

#: Per-job columns that, when present, identify "jobs with equal parameters" for stability.
STABILITY_COLUMNS: tuple[str, ...] = ("model", "gpus", "tp", "pp", "dp", "ep", "iterations")


def finished_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """The jobs that ran to completion (not rejected, with a finite finish time).

    Examples
    --------
    >>> t = pd.DataFrame({"finish_s": [1.0, float("nan"), 2.0], "rejected": [False, False, True]})
    >>> len(finished_jobs(t))
    1
    """
    ok = np.isfinite(jobs["finish_s"].to_numpy(dtype=float))
    if "rejected" in jobs.columns:
        ok &= ~jobs["rejected"].to_numpy(dtype=bool)
    return jobs[ok]


def stability(jobs: pd.DataFrame, by: Sequence[str] | None = None) -> dict[str, float]:
    """Stability of a run: the std of JCT and JRT over jobs with equal parameters.

    Finished jobs are grouped by ``by`` (default: those of :data:`STABILITY_COLUMNS` present in
    the table: model, GPU count, tp/pp/dp/ep, iterations); the sample standard deviation
    (``ddof=1``) of ``jct_s`` and ``jrt_s`` is taken in every group of at least two jobs and
    averaged over those groups. Returns ``jct_std_s``, ``jrt_std_s`` (NaN when no group has two
    jobs) and ``stability_groups`` (the number of such groups).

    Examples
    --------
    >>> t = pd.DataFrame({"model": ["a", "a", "b"], "gpus": [8, 8, 8], "jct_s": [1.0, 3.0, 9.0],
    ...                   "jrt_s": [1.0, 2.0, 5.0], "finish_s": [1.0, 3.0, 9.0]})
    >>> stability(t)
    {'jct_std_s': 1.4142135623730951, 'jrt_std_s': 0.7071067811865476, 'stability_groups': 1}
    """
    cols = [c for c in STABILITY_COLUMNS if c in jobs.columns] if by is None else list(by)
    ok = finished_jobs(jobs)
    nan = {"jct_std_s": math.nan, "jrt_std_s": math.nan, "stability_groups": 0}
    if ok.empty:
        return nan
    if not cols:
        groups = ok[["jct_s", "jrt_s"]].assign(_g=0).groupby("_g")
    else:
        groups = ok.groupby(cols, dropna=False, sort=True)[["jct_s", "jrt_s"]]
    std = groups.std(ddof=1)
    size = groups.size()
    std = std[size.to_numpy() >= 2]
    if std.empty:
        return nan
    return {
        "jct_std_s": float(std["jct_s"].mean()),
        "jrt_std_s": float(std["jrt_s"].mean()),
        "stability_groups": len(std),
    }


def queue_stats(queue: pd.DataFrame) -> dict[str, float]:
    """Time-weighted mean and maximum of the queue depth (``waiting``) over time.

    The queue table is a step function: ``waiting[i]`` holds from ``time_s[i]`` to
    ``time_s[i+1]``. Records sharing a time stamp take no time. With a zero time span the mean
    is the plain mean of the records. An empty table gives NaN.

    Examples
    --------
    >>> q = pd.DataFrame({"time_s": [0.0, 1.0, 3.0, 4.0], "waiting": [2, 0, 1, 0]})
    >>> queue_stats(q)
    {'queue_mean_waiting': 0.75, 'queue_max_waiting': 2.0}
    """
    if queue is None or queue.empty:
        return {"queue_mean_waiting": math.nan, "queue_max_waiting": math.nan}
    q = queue.sort_values("time_s", kind="stable")
    t = q["time_s"].to_numpy(dtype=float)
    w = q["waiting"].to_numpy(dtype=float)
    span = t[-1] - t[0]
    mean = float(np.dot(w[:-1], np.diff(t)) / span) if span > 0 else float(w.mean())
    return {"queue_mean_waiting": mean, "queue_max_waiting": float(w.max())}


@dataclass(frozen=True)
class SimResult:
    """Per-job table (:attr:`jobs`), run summary and run statistics of one simulation;
    :attr:`link_events` records every cable failure and repair (empty without link
    failures; :data:`~lumoscore.sim.link_failures.LINK_EVENT_COLUMNS`); :attr:`topology`
    the pod-level circuits over time (``record_topology``; :mod:`lumoscore.sim.topology_log`)."""

    jobs: pd.DataFrame
    summary: dict[str, Any]
    queue: pd.DataFrame
    fabric: dict[str, Any]
    stats: dict[str, Any]
    link_events: pd.DataFrame = field(default_factory=pd.DataFrame)
    topology: pd.DataFrame = field(default_factory=pd.DataFrame)

    @classmethod
    def build(
        cls,
        *,
        fabric: dict[str, Any],
        jobs: Sequence[Job],
        arrival_s: NDArray[np.float64],
        start_s: NDArray[np.float64],
        finish_s: NDArray[np.float64],
        comm_actual_s: NDArray[np.float64],
        comm_ideal_s: NDArray[np.float64],
        solo_iteration_s: NDArray[np.float64],
        isolated: NDArray[np.bool_],
        rejected: NDArray[np.bool_],
        queue_t: NDArray[np.float64],
        restarts: NDArray[np.int64] | None = None,
        lost_s: NDArray[np.float64] | None = None,
        requeue_wait_s: NDArray[np.float64] | None = None,
        fragmented: NDArray[np.bool_] | None = None,
        queue_len: NDArray[np.int64],
        stats: dict[str, Any],
        link_events: pd.DataFrame | None = None,
    ) -> SimResult:
        """Assemble the tables from the engine's arrays.

        With failures, JWT also counts the time a restarted job waited in the queue again,
        and JRT = JCT - JWT (it includes the work lost to failures, ``lost_s``).
        """
        n = len(jobs)
        ideal = np.array([j.duration_s for j in jobs], dtype=float)
        rewait = np.zeros(n) if requeue_wait_s is None else requeue_wait_s
        jwt = start_s - arrival_s + rewait
        jrt = finish_s - arrival_s - jwt
        with np.errstate(invalid="ignore", divide="ignore"):
            contention = np.where(comm_ideal_s > 0, comm_actual_s / comm_ideal_s, 1.0)
        table = pd.DataFrame(
            {
                "job_id": np.array([j.job_id for j in jobs], dtype=np.int64),
                "arrival_s": arrival_s,
                "start_s": start_s,
                "finish_s": finish_s,
                "jrt_s": jrt,
                "jwt_s": jwt,
                "jct_s": finish_s - arrival_s,
                "gpus": np.array([j.gpus for j in jobs], dtype=np.int64),
                "model": [j.model for j in jobs],
                "tp": np.array([j.tp for j in jobs], dtype=np.int64),
                "pp": np.array([j.pp for j in jobs], dtype=np.int64),
                "dp": np.array([j.dp for j in jobs], dtype=np.int64),
                "ep": np.array([j.ep for j in jobs], dtype=np.int64),
                "iterations": np.array([j.iterations for j in jobs], dtype=np.int64),
                "ideal_jrt_s": ideal,
                "jrt_slowdown": jrt / ideal - 1.0,
                "contention_level": contention,
                "solo_iteration_s": solo_iteration_s,
                "isolated": isolated,
                "rejected": rejected,
                "restarts": np.zeros(n, np.int64) if restarts is None else restarts,
                "lost_s": np.zeros(n) if lost_s is None else lost_s,
                "fragmented": np.zeros(n, bool) if fragmented is None else fragmented,
            }
        )
        summary = {
            **summarize(table),
            "eps": float(stats.get("eps", 0.0)),
            "exposure": str(stats.get("exposure", "literal")),
            "wall_s": float(stats.get("wall_s", math.nan)),
            **{k: int(stats[k]) for k in _COUNTED if k in stats},
        }
        queue = pd.DataFrame({"time_s": queue_t, "waiting": queue_len})
        summary.update(queue_stats(queue))
        events = pd.DataFrame() if link_events is None else link_events
        return cls(table, summary, queue, fabric, stats, events)

    def write(self, out_dir: str | Path, *, manifest: dict[str, Any] | None = None) -> Path:
        """Write ``jobs.parquet``, ``jobs.csv``, ``queue.csv``, ``link_events.csv`` (with link
        failures), ``summary.json`` and ``timings.json`` (the wall-clock times,
        :data:`TIMING_STATS`: all other files are the same bytes for the same input), together
        (:func:`~lumoscore.fileio.atomic_write_files`: all of them or none)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        import io

        buf = io.BytesIO()
        self.jobs.to_parquet(buf, index=False)
        files: dict[Path, str | bytes] = {
            out / "jobs.parquet": buf.getvalue(),
            out / "jobs.csv": self.jobs.to_csv(index=False),
            out / "queue.csv": self.queue.to_csv(index=False),
        }
        if not self.link_events.empty:
            files[out / "link_events.csv"] = self.link_events.to_csv(index=False)
        # wall-clock times apart: the other files are the same bytes for the same input
        timings = {k: self.stats[k] for k in TIMING_STATS if k in self.stats}
        doc = {
            "summary": {k: v for k, v in self.summary.items() if k not in TIMING_STATS},
            "fabric": self.fabric,
            "stats": {k: v for k, v in self.stats.items() if k not in TIMING_STATS},
            **({"manifest": manifest} if manifest else {}),
        }
        files[out / "summary.json"] = json_text(doc)
        files[out / "timings.json"] = json_text(timings)
        atomic_write_files(files)
        return out
