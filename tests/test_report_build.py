"""Report pipeline on synthetic sweeps: which figures appear, what their lines hold."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from lumoscore.report import RunSet, build_report
from lumoscore.report.metrics import aggregate


def _synthetic_sweep() -> RunSet:
    """Runs over arch x gpus x failure rate x routing x seed with known mean JCT."""
    rng = np.random.default_rng(7)
    rows, jobs, queues = [], {}, {}
    grid = itertools.product(
        ("best", "clos", "lumos"), (2048, 4096), (0.0, 0.01), ("ecmp", "planned"), (1, 2, 3)
    )
    for arch, gpus, rate, routing, seed in grid:
        if arch == "best" and routing != "ecmp":
            continue  # routing does not apply to Best: one run per trace
        key = f"{arch}-{gpus}-{rate}-{routing}-{seed}"
        n = 12
        arrival = np.sort(rng.uniform(0, 100, n))
        wait = rng.uniform(0, 10, n)
        run = rng.uniform(10, 50, n) * (1.0 if arch == "best" else 1.2)
        t = pd.DataFrame(
            {
                "job_id": np.arange(n),
                "arrival_s": arrival,
                "start_s": arrival + wait,
                "finish_s": arrival + wait + run,
                "jrt_s": run,
                "jwt_s": wait,
                "jct_s": wait + run,
                "gpus": 8,
                "model": "m",
                "jrt_slowdown": 0.0,
                "contention_level": rng.uniform(1, 2, n),
                "rejected": False,
            }
        )
        jobs[key] = t
        queues[key] = pd.DataFrame({"time_s": [0.0, 50.0, 100.0], "waiting": [1, 2, 0]})
        rows.append(
            {
                "key": key,
                "arch": arch,
                "gpus": gpus,
                "failures.rate_per_gpu_day": rate,
                "routing": None if arch == "best" else routing,
                "seed": seed,
                "mean_jct_s": float(t["jct_s"].mean()),
                "mean_jrt_s": float(run.mean()),
                "mean_jwt_s": float(wait.mean()),
            }
        )
    index = pd.DataFrame(rows)
    return RunSet(index, jobs, queues, {}, name="sweep")


def test_sweep_figures_follow_the_varying_parameters() -> None:
    runs = _synthetic_sweep()
    rep = build_report(runs)
    stems = [f.stem for f in rep.figures]
    for stem in (
        "jrt_slowdown_cdf",
        "jwt_slowdown_cdf",
        "contention_cdf",
        "contention_bins",
        "jct_bars",
        "jct_vs_gpus",
        "jrt_vs_gpus",
        "jct_vs_failures_rate_per_gpu_day",
        "jct_vs_routing",
        "queue_depth",
    ):
        assert stem in stems
    assert set(rep.varying) == {"gpus", "failures.rate_per_gpu_day", "routing"}
    # The JCT-against-size lines are the seed means at the reference slice
    # (no failures; routing: Best unset, the others ecmp, the first in sorted order).
    fig = next(f.figure for f in rep.figures if f.stem == "jct_vs_gpus")
    ax = fig.axes[0]
    idx = runs.index
    for container in ax.containers:
        label = container.get_label()
        sel = idx[
            (idx["arch"] == label)
            & (idx["failures.rate_per_gpu_day"] == 0.0)
            & ((idx["routing"] == "ecmp") | idx["routing"].isna())
        ]
        expect = sel.groupby("gpus")["mean_jct_s"].mean().sort_index().to_numpy()
        np.testing.assert_allclose(container.lines[0].get_ydata(), expect)
    # Every slow-down CDF is over the jobs of non-Best runs at the reference slice.
    agg = aggregate(rep.runs)
    assert len(agg) == len(rep.summary)


def test_without_best_and_without_summary_columns() -> None:
    runs = _synthetic_sweep()
    keep = runs.index[runs.index["arch"] != "best"].drop(columns=["mean_jrt_s", "mean_jwt_s"])
    rep = build_report(RunSet(keep, runs.jobs, runs.queues, {}, name="no-best"))
    stems = {f.stem for f in rep.figures}
    # Fig. 8(a)(b) fall back to the ideal run time and raw JWT; bars show what is there.
    assert {"jrt_slowdown_cdf", "jwt_cdf", "jct_bars", "jct_vs_gpus"} <= stems
    assert "jwt_slowdown_cdf" not in stems
    assert rep.vs_best.empty
    assert "mean JRT (s)" not in rep.summary.columns and "mean JCT (s)" in rep.summary.columns
    bars = next(f.figure for f in rep.figures if f.stem == "jct_bars")
    assert [t.get_text() for t in bars.axes[0].get_xticklabels()] == ["mean JCT (s)"]
