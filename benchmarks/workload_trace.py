"""Benchmark: trace generation and trace-file I/O (workload package).

Target: a 1000-job ``lumoscore-paper`` trace in at most 1 s (the brief: "well under 1 s").
Prints a readable table, then one JSON line ``{"figures", "targets", "met"}``.
Figures are medians of several runs; other engineers share the 2 CPU cores, so they are noisy.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lumoscore.workload import generate_trace, read_trace, write_trace

__all__ = ["main"]


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Run the benchmark and print its figures."""
    figures: dict[str, float] = {}
    figures["generate_1000_s"] = _median_s(
        lambda: generate_trace("lumoscore-paper", 1000, seed=1), 7
    )
    figures["generate_1000_with_job_objects_s"] = _median_s(
        lambda: generate_trace("lumoscore-paper", 1000, seed=1).jobs, 7
    )
    figures["generate_100000_s"] = _median_s(
        lambda: generate_trace("lumoscore-paper", 100_000, seed=1), 3
    )
    trace = generate_trace("lumoscore-paper", 1000, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in ("csv", "parquet"):
            path = Path(tmp) / f"t.{suffix}"
            figures[f"write_1000_{suffix}_s"] = _median_s(lambda p=path: write_trace(trace, p), 5)
            figures[f"read_1000_{suffix}_s"] = _median_s(lambda p=path: read_trace(p), 5)
    targets = {"generate_1000_s": 1.0}
    met = all(figures[k] <= v for k, v in targets.items())
    width = max(len(k) for k in figures)
    print("workload trace benchmark (median wall time; shared 2-core machine, noisy)")
    for key, value in figures.items():
        target = f"  (target <= {targets[key]} s)" if key in targets else ""
        print(f"  {key:<{width}}  {value * 1000:9.2f} ms{target}")
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
