"""Time the traffic generator: one iteration of a 2048-GPU job, and a 1000-job trace.

Instance: a cluster of 8 pods x 16 leaves x 32 GPUs (4096 GPUs, ``k_leaf = k_spine = 32``,
``tau = 2``); the job (Pangu, ``tp 8, pp 8, dp 32, ep 32``, ring DP) is placed on GPUs
1024..3071 (pods 2-5), put in rank order by the A.6 arrangement.

Timed (median of ``REPEATS`` calls after one warm-up):

* ``iteration_ms`` -- ``iteration_flows(job, ranks, spec)``: all rounds of one iteration
  expanded and aggregated to leaf-level weighted flows (target <= 50 ms);
* ``iteration_raw_ms`` -- the same without aggregation (GPU-level flows), reported only;
* ``arrange_ms`` / ``leaf_demand_ms`` -- ``arrange_job`` and ``leaf_demand`` (research rule),
  reported only;
* ``trace_1000_s`` -- ``lumoscore.workload.generate_trace("lumoscore-paper", 1000, seed=0,
  cluster_gpus=4096)`` (target <= 1 s), or "not available" when that function is missing.

The machine has 2 cores shared with other engineers: figures are noisy. Prints the figures and,
last, one JSON line ``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic import arrange_job, iteration_flows, leaf_demand
from lumoscore.workload import Job

REPEATS = 15
TARGET_ITERATION_MS = 50.0
TARGET_TRACE_S = 1.0


def median_s(fn: Callable[[], Any], repeats: int = REPEATS) -> tuple[float, Any]:
    """Median wall time of ``fn`` over ``repeats`` calls after one warm-up, and its result."""
    out = fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    spec = ClusterSpec(pods=8, k_leaf=32, k_spine=32, tau=2, gpus_per_server=8)
    job = Job(
        job_id=0,
        arrival_s=0.0,
        gpus=2048,
        model="Pangu",
        tp=8,
        pp=8,
        dp=32,
        ep=32,
        iterations=10,
        duration_s=36000.0,
    )
    gpus = np.arange(1024, 1024 + 2048)
    t_arr, ranks = median_s(lambda: arrange_job(job, gpus, spec))
    t_it, sched = median_s(lambda: iteration_flows(job, ranks, spec))
    t_raw, raw = median_s(lambda: iteration_flows(job, ranks, spec, aggregate=False))
    t_dem, L = median_s(lambda: leaf_demand(job, gpus, spec))
    rows = sum(len(r.flows) for r in sched)
    flows = sum(len(r.flows) for r in raw)
    figures: dict[str, Any] = {
        "iteration_ms": round(t_it * 1e3, 3),
        "iteration_raw_ms": round(t_raw * 1e3, 3),
        "arrange_ms": round(t_arr * 1e3, 3),
        "leaf_demand_ms": round(t_dem * 1e3, 3),
        "rounds": len(sched),
        "gpu_flows": flows,
        "aggregated_rows": rows,
        "leaf_demand_links": int(L.sum()) // 2,
    }
    print("one iteration, 2048-GPU job (tp 8, pp 8, dp 32, ep 32) on 4096 GPUs")
    print(f"  rounds                      {len(sched)}")
    print(f"  GPU-level flows             {flows}")
    print(f"  leaf-aggregated rows        {rows}")
    print(
        f"  iteration_flows (leaf agg)  {t_it * 1e3:8.2f} ms   (target <= {TARGET_ITERATION_MS} ms)"
    )
    print(f"  iteration_flows (raw)       {t_raw * 1e3:8.2f} ms")
    print(f"  arrange_job                 {t_arr * 1e3:8.2f} ms")
    print(f"  leaf_demand                 {t_dem * 1e3:8.2f} ms   ({int(L.sum()) // 2} links)")

    met = t_it * 1e3 <= TARGET_ITERATION_MS
    try:
        from lumoscore.workload import generate_trace
    except ImportError:
        generate_trace = None
    if generate_trace is None:
        figures["trace_1000_s"] = "not available"
        print("  1000-job lumoscore-paper trace: not available (generate_trace missing)")
    else:
        t_tr, trace = median_s(
            lambda: generate_trace("lumoscore-paper", 1000, seed=0, cluster_gpus=4096), repeats=3
        )
        figures["trace_1000_s"] = round(t_tr, 4)
        print(
            f"  1000-job lumoscore-paper trace {t_tr:8.4f} s   (target <= {TARGET_TRACE_S} s, "
            f"{len(trace.jobs)} jobs)"
        )
        met = met and t_tr <= TARGET_TRACE_S
    print("(2-core machine shared with other engineers: figures are noisy)")
    targets = {"iteration_ms": TARGET_ITERATION_MS, "trace_1000_s": TARGET_TRACE_S}
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
