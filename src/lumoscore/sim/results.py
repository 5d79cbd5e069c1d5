"""Simulation results: a per-job table, a run summary, and atomic files.

Per job: arrival, start, finish, JRT = finish - start, JWT = start - arrival,
JCT = finish - arrival, the ideal run time (``duration_s`` of the trace, on the ideal network),
the JRT slowdown ``jrt / duration - 1`` and the contention level (LumosCore Eq. 10, per round:
actual communication time over contention-free communication time at the fabric's port
speed; 1 means no contention).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from lumoscore.fileio import atomic_write_text
from lumoscore.workload.job import Job

__all__ = ["SimResult", "summarize"]

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
)


def _pct(x: NDArray[np.float64], q: float) -> float:
    return float(np.percentile(x, q)) if x.size else math.nan


def summarize(jobs: pd.DataFrame) -> dict[str, float]:
    """Means and percentiles of JRT, JWT and JCT over the finished jobs."""
    ok = jobs[~jobs["rejected"] & jobs["finish_s"].notna()]
    out: dict[str, float] = {"jobs": len(ok), "rejected": int(jobs["rejected"].sum())}
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
    return out


@dataclass(frozen=True)
class SimResult:
    """Per-job table (:attr:`jobs`), run summary and run statistics of one simulation."""

    jobs: pd.DataFrame
    summary: dict[str, Any]
    queue: pd.DataFrame
    fabric: dict[str, Any]
    stats: dict[str, Any]

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
        queue_len: NDArray[np.int64],
        stats: dict[str, Any],
    ) -> SimResult:
        """Assemble the tables from the engine's arrays."""
        ideal = np.array([j.duration_s for j in jobs], dtype=float)
        jrt = finish_s - start_s
        with np.errstate(invalid="ignore", divide="ignore"):
            contention = np.where(comm_ideal_s > 0, comm_actual_s / comm_ideal_s, 1.0)
        table = pd.DataFrame(
            {
                "job_id": np.array([j.job_id for j in jobs], dtype=np.int64),
                "arrival_s": arrival_s,
                "start_s": start_s,
                "finish_s": finish_s,
                "jrt_s": jrt,
                "jwt_s": start_s - arrival_s,
                "jct_s": finish_s - arrival_s,
                "gpus": np.array([j.gpus for j in jobs], dtype=np.int64),
                "model": [j.model for j in jobs],
                "ideal_jrt_s": ideal,
                "jrt_slowdown": jrt / ideal - 1.0,
                "contention_level": contention,
                "solo_iteration_s": solo_iteration_s,
                "isolated": isolated,
                "rejected": rejected,
            }
        )
        summary = {
            **summarize(table),
            "eps": float(stats.get("eps", 0.0)),
            "wall_s": float(stats.get("wall_s", math.nan)),
        }
        queue = pd.DataFrame({"time_s": queue_t, "waiting": queue_len})
        return cls(table, summary, queue, fabric, stats)

    def write(self, out_dir: str | Path, *, manifest: dict[str, Any] | None = None) -> Path:
        """Write ``jobs.parquet``, ``jobs.csv``, ``queue.csv`` and ``summary.json`` atomically."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        import io

        buf = io.BytesIO()
        self.jobs.to_parquet(buf, index=False)
        atomic_write_text(out / "jobs.parquet", buf.getvalue())
        atomic_write_text(out / "jobs.csv", self.jobs.to_csv(index=False).encode())
        atomic_write_text(out / "queue.csv", self.queue.to_csv(index=False).encode())
        doc = {
            "summary": self.summary,
            "fabric": self.fabric,
            "stats": self.stats,
            **({"manifest": manifest} if manifest else {}),
        }
        atomic_write_text(out / "summary.json", json.dumps(doc, indent=2, default=float).encode())
        return out
