"""Report metrics against hand-computed values and closed forms on small synthetic tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from lumoscore.errors import ConfigError
from lumoscore.report.metrics import (
    aggregate,
    compare_to_baseline,
    parameter_columns,
    queue_stats,
    reference_values,
    run_extras,
    run_table,
    stability,
    varying_parameters,
)


def jobs_table(
    start: list[float],
    finish: list[float],
    *,
    arrival: list[float] | None = None,
    job_id: list[int] | None = None,
    rejected: list[bool] | None = None,
    model: list[str] | None = None,
    gpus: list[int] | None = None,
) -> pd.DataFrame:
    n = len(start)
    arr = np.asarray(arrival if arrival is not None else [0.0] * n, dtype=float)
    s = np.asarray(start, dtype=float)
    f = np.asarray(finish, dtype=float)
    return pd.DataFrame(
        {
            "job_id": job_id if job_id is not None else list(range(n)),
            "arrival_s": arr,
            "start_s": s,
            "finish_s": f,
            "jrt_s": f - s,
            "jwt_s": s - arr,
            "jct_s": f - arr,
            "gpus": gpus if gpus is not None else [8] * n,
            "model": model if model is not None else ["m"] * n,
            "contention_level": [1.0] * n,
            "rejected": rejected if rejected is not None else [False] * n,
        }
    )


def test_parameters_and_summary_columns() -> None:
    idx = pd.DataFrame(
        {
            "key": ["a"],
            "arch": ["best"],
            "gpus": [8],
            "trace.load": [0.5],
            "eps": [0.0],
            "fabric.port_gbps": [1600.0],
            "mean_jct_s": [1.0],
            "p99_jrt_s": [2.0],
            "jobs": [3],
            "wall_s": [0.1],
        }
    )
    assert parameter_columns(idx) == ["arch", "gpus", "trace.load", "eps"]


def test_compare_to_baseline_hand_values() -> None:
    # Best: job 0 runs 0..10, job 1 waits 5 then runs 5..25 (arrival 0).
    best = jobs_table([0.0, 5.0], [10.0, 25.0])
    # Lumos: job 0 runs 0..12, job 1 waits 12 then runs 12..40; an extra job 2 has no partner.
    lumos = jobs_table([0.0, 12.0, 1.0], [12.0, 40.0, 2.0])
    idx = pd.DataFrame(
        {"key": ["b", "l"], "arch": ["best", "lumos"], "gpus": [8, 8], "seed": [1, 1]}
    )
    out = compare_to_baseline(idx, {"b": best, "l": lumos}).sort_values("job_id")
    assert out["key"].tolist() == ["l", "l"]
    assert out["job_id"].tolist() == [0, 1]
    np.testing.assert_allclose(out["jrt_vs_best"], [12 / 10, 28 / 20])
    np.testing.assert_allclose(out["jct_vs_best"], [12 / 10, 40 / 25])
    np.testing.assert_allclose(out["jrt_slowdown_vs_best"], [0.2, 0.4])
    np.testing.assert_allclose(out["jwt_delta_vs_best_s"], [0.0, 7.0])


def test_compare_to_baseline_matches_trace_and_skips_unfinished() -> None:
    b1 = jobs_table([0.0, 0.0], [10.0, 4.0])
    b2 = jobs_table([0.0], [20.0])
    l1 = jobs_table([0.0, 0.0], [15.0, 3.0], rejected=[False, True])  # job 1 rejected: no row
    l2 = jobs_table([0.0, 0.0], [30.0, 5.0])  # Best (b2) has no job 1: no row
    idx = pd.DataFrame(
        {
            "key": ["b1", "b2", "l1", "l2"],
            "arch": ["best", "best", "x", "x"],
            "seed": [1, 2, 1, 2],
            "routing": [None, None, "ecmp", "ecmp"],  # Best leaves routing unset
        }
    )
    out = compare_to_baseline(idx, {"b1": b1, "b2": b2, "l1": l1, "l2": l2})
    assert len(out) == 2
    got = dict(zip(out["key"], out["jct_vs_best"], strict=True))
    assert got == {"l1": 1.5, "l2": 1.5}  # l1 pairs with b1 (seed 1), l2 with b2 (seed 2)


def test_compare_to_baseline_no_best() -> None:
    idx = pd.DataFrame({"key": ["a"], "arch": ["x"], "seed": [1]})
    assert compare_to_baseline(idx, {"a": jobs_table([0.0], [1.0])}).empty


@pytest.mark.parametrize("values", [[10.0, 14.0], [10.0, 14.0, 19.0]])
def test_aggregate_ci_matches_scipy(values: list[float]) -> None:
    n = len(values)
    runs = pd.DataFrame(
        {
            "key": [f"k{i}" for i in range(n)],
            "arch": ["a"] * n,
            "seed": list(range(n)),
            "mean_jct_s": values,
        }
    )
    row = aggregate(runs).iloc[0]
    x = np.asarray(values)
    lo, hi = sps.t.interval(0.95, n - 1, loc=x.mean(), scale=sps.sem(x))
    assert row["seeds"] == n
    assert row["mean_jct_s"] == pytest.approx(x.mean())
    assert row["mean_jct_s_ci95"] == pytest.approx((hi - lo) / 2)
    if n == 2:
        # Closed form for two seeds: t_{0.975,1} = tan(pi * 0.475) and s/sqrt(2) = |a-b|/2.
        assert row["mean_jct_s_ci95"] == pytest.approx(math.tan(math.pi * 0.475) * 2.0)


def test_aggregate_groups_one_seed_nan_ci_and_nan_parameters() -> None:
    runs = pd.DataFrame(
        {
            "key": list("abcd"),
            "arch": ["x", "x", "x", "y"],
            "trace.load": [np.nan, np.nan, 0.5, np.nan],
            "seed": [1, 2, 1, 1],
            "mean_jct_s": [1.0, 3.0, 5.0, 7.0],
        }
    )
    agg = aggregate(runs)
    assert len(agg) == 3
    by = {(r.arch, None if math.isnan(r._2) else r._2): r for r in agg.itertuples()}
    assert by[("x", None)].seeds == 2 and by[("x", None)].mean_jct_s == 2.0
    assert math.isnan(by[("x", 0.5)].mean_jct_s_ci95)
    assert math.isnan(by[("y", None)].mean_jct_s_ci95)
    with pytest.raises(ConfigError, match="unknown group column"):
        aggregate(runs, by=["nope"])


def test_stability_hand_values() -> None:
    t = jobs_table(
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [2.0, 4.0, 9.0, 1.0, 3.0, 100.0],
        model=["a", "a", "a", "b", "b", "c"],
        gpus=[8, 8, 8, 8, 8, 8],
        rejected=[False, False, False, False, False, False],
    )
    got = stability(t)
    # group a: JCT {2, 4, 9}, group b: {1, 3}; c has one job and is skipped.
    sd_a = float(np.std([2.0, 4.0, 9.0], ddof=1))
    sd_b = float(np.std([1.0, 3.0], ddof=1))
    assert got["stability_groups"] == 2
    assert got["jct_std_s"] == pytest.approx((sd_a + sd_b) / 2)
    assert got["jrt_std_s"] == pytest.approx((sd_a + sd_b) / 2)  # start = arrival = 0
    # Different GPU counts split a group.
    t2 = t.assign(gpus=[8, 16, 8, 8, 8, 8])
    assert stability(t2)["jct_std_s"] == pytest.approx(
        (float(np.std([2.0, 9.0], ddof=1)) + sd_b) / 2
    )
    assert math.isnan(stability(t.iloc[[0, 3, 5]])["jct_std_s"])


def test_queue_stats_hand_values() -> None:
    q = pd.DataFrame({"time_s": [0.0, 0.0, 2.0, 6.0, 10.0], "waiting": [5, 1, 3, 0, 0]})
    got = queue_stats(q)
    # 1 for 2 s, 3 for 4 s, 0 for 4 s -> 14 / 10; the record "5" takes no time.
    assert got["queue_mean_waiting"] == pytest.approx(1.4)
    assert got["queue_max_waiting"] == 5.0
    assert math.isnan(queue_stats(q.iloc[:0])["queue_mean_waiting"])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 100.0), st.integers(0, 20)),
        min_size=2,
        max_size=30,
    )
)
@example([(100.0, 0), (99.99999999999999, 1)])  # adjacent floats: a midpoint rounds onto one
def test_queue_mean_equals_sampled_average(points: list[tuple[float, int]]) -> None:
    t = np.sort(np.array([p[0] for p in points]))
    w = np.array([p[1] for p in points])
    got = queue_stats(pd.DataFrame({"time_s": t, "waiting": w}))
    span = t[-1] - t[0]
    if span <= 0:
        assert got["queue_mean_waiting"] == pytest.approx(w.mean())
        return
    # Independent check: the step function's value on each piece [grid[i], grid[i+1]) between
    # distinct breakpoints is the last record at or before grid[i] (exact; sampling at the
    # pieces' midpoints is not: between adjacent floats a midpoint rounds onto an end).
    grid = np.unique(t)
    idx = np.searchsorted(t, grid[:-1], side="right") - 1
    expect = float(np.sum(w[idx] * np.diff(grid)) / span)
    assert got["queue_mean_waiting"] == pytest.approx(expect)
    assert w.min() <= got["queue_mean_waiting"] + 1e-9 <= w.max() + 2e-9


def test_run_extras_and_run_table() -> None:
    info = {
        "stats": {"reconfigurations": 4, "events": 10, "eps": 0.0},
        "fabric": {"rewired_circuits": 12, "reconfig_delay_s": 0.1, "routing": "planned"},
    }
    assert run_extras(info) == {"stats.reconfigurations": 4.0, "fabric.rewired_circuits": 12.0}
    assert run_extras(None) == {} and run_extras({"stats": None}) == {}
    idx = pd.DataFrame({"key": ["b", "l"], "arch": ["best", "x"], "seed": [1, 1]})
    jobs = {"b": jobs_table([0.0], [10.0]), "l": jobs_table([0.0], [15.0])}
    queues = {"l": pd.DataFrame({"time_s": [0.0, 4.0], "waiting": [2, 0]})}
    vs = compare_to_baseline(idx, jobs)
    table = run_table(idx, jobs, queues, {"l": info}, vs_best=vs)
    row = table.set_index("key").loc["l"]
    assert row["mean_jct_vs_best"] == 1.5
    assert row["queue_mean_waiting"] == 2.0
    assert row["stats.reconfigurations"] == 4.0
    assert math.isnan(table.set_index("key").loc["b", "mean_jct_vs_best"])


def test_varying_and_reference_values() -> None:
    idx = pd.DataFrame(
        {
            "key": list("abcd"),
            "arch": ["x"] * 4,
            "gpus": [2048, 4096, 2048, 4096],
            "failures.rate_per_gpu_day": [0.0, 0.0, 0.01, 0.01],
            "routing": [None, None, None, None],
            "seed": [1, 1, 1, 1],
        }
    )
    assert varying_parameters(idx) == ["gpus", "failures.rate_per_gpu_day"]
    ref = reference_values(idx, ["gpus", "failures.rate_per_gpu_day", "routing"])
    assert ref["gpus"] == 4096 and ref["failures.rate_per_gpu_day"] == 0.0
    assert ref["routing"] is None


def test_jct_over_best_is_the_ratio_of_means_and_named_apart_from_the_per_job_mean() -> None:
    """Two jobs: Best JCTs 10 and 100, the run's 30 and 110. The ratio of means is
    140 / 110; the mean of per-job ratios (3 + 1.1) / 2 = 2.05 is a different figure with its
    own name and definition."""
    from lumoscore.report.metrics import compare_to_baseline, run_table
    from lumoscore.report.tables import SUMMARY_METRICS, column_definitions

    idx = pd.DataFrame({"key": ["b", "c"], "arch": ["best", "clos"], "seed": [1, 1]})

    def jobs(jct: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"job_id": [0, 1], "arrival_s": [0.0, 0.0], "start_s": [0.0, 0.0],
                             "finish_s": jct, "jrt_s": jct, "jwt_s": [0.0, 0.0], "jct_s": jct,
                             "rejected": [False, False]})  # fmt: skip

    runs = {"b": jobs([10.0, 100.0]), "c": jobs([30.0, 110.0])}
    table = run_table(idx, runs, vs_best=compare_to_baseline(idx, runs))
    row = table.set_index("arch")
    assert row.loc["clos", "jct_over_best"] == pytest.approx(140.0 / 110.0)
    assert row.loc["clos", "mean_jct_vs_best"] == pytest.approx(2.05)
    assert row.loc["best", "jct_over_best"] == 1.0
    headers = [h for _, h, _ in SUMMARY_METRICS]
    # one name, one meaning: only the alternative sources of one figure share a header
    assert {h for h in headers if headers.count(h) > 1} == {"rewired share"}
    defs = column_definitions(["JCT / Best", "per-job JCT ratio", "trace.load"])
    assert "ratio of means" in defs["JCT / Best"] and "job by job" in defs["per-job JCT ratio"]
    assert defs["trace.load"] == "the swept parameter trace.load"


def test_unfinished_jobs_are_counted_and_shown_only_when_there_are_some() -> None:
    from lumoscore.report.tables import summary_view
    from lumoscore.sim.results import summarize

    jobs = pd.DataFrame(
        {
            "arrival_s": [0.0, 1.0, 2.0],
            "start_s": [0.0, 1.0, np.nan],
            "finish_s": [5.0, 6.0, np.nan],
            "jrt_s": [5.0, 5.0, np.nan],
            "jwt_s": [0.0, 0.0, np.nan],
            "jct_s": [5.0, 5.0, np.nan],
            "jrt_slowdown": [0.0, 0.0, np.nan],
            "contention_level": [1.0, 1.0, np.nan],
            "rejected": [False, False, False],
        }
    )
    s = summarize(jobs)
    assert (s["jobs"], s["rejected"], s["unfinished"]) == (2, 0, 1)
    agg = pd.DataFrame({"arch": ["a", "b"], "jobs": [2, 3], "unfinished": [1, 0]})
    assert "unfinished" in summary_view(agg, ["arch"]).columns
    agg["unfinished"] = 0
    assert "unfinished" not in summary_view(agg, ["arch"]).columns
