"""Importers: Helios/Acme cluster logs, research-code job lists and results logs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.workload import (
    PAPER_SIZE_MIX,
    TraceFormatError,
    format_joblist,
    format_results_log,
    generate_trace,
    import_helios,
    parse_joblist,
    read_joblist,
    read_results_log,
    write_joblist,
    write_results_log,
)
from lumoscore.workload.importers import ResultsLog

# ---- Helios / Acme -------------------------------------------------------------------------


def _helios_log(path: Path) -> Path:
    frame = pd.DataFrame(
        {
            "job_id": ["j1", "j2", "j3", "j4", "j5", "j6", "j7"],
            "user": ["u"] * 7,
            "vc": ["vc1"] * 7,
            "gpu_num": [1, 12, 0, 4096, 64, 3, 32],
            "cpu_num": [4] * 7,
            "node_num": [1] * 7,
            "state": ["COMPLETED", "COMPLETED", "COMPLETED", "completed", "FAILED", "COMPLETED",
                      "COMPLETED"],
            "submit_time": ["2020-04-01 00:10:00", "2020-04-01 00:00:00", "2020-04-01 00:01:00",
                            "2020-04-01 01:00:00", "2020-04-01 00:02:00", "2020-04-01 00:03:00",
                            "2020-04-01 00:05:00"],
            "start_time": [""] * 7,
            "end_time": [""] * 7,
            "duration": [601, 7200, 9000, 86400, 5000, 600, 1000],
        }
    )  # fmt: skip
    out = path / "cluster_log.csv"
    frame.to_csv(out, index=False)
    return out


def test_helios_filters_and_pow2_mapping(tmp_path: Path) -> None:
    t = import_helios(_helios_log(tmp_path))
    # Kept: j2 (00:00, 12 GPUs), j7 (00:05, 32), j1 (00:10, 1), j4 (01:00, 4096 -> cap 2048).
    # Dropped: j3 (no GPU), j5 (FAILED), j6 (600 s is not longer than 600 s).
    assert t.arrival_s.tolist() == [0.0, 300.0, 600.0, 3600.0]
    assert t.gpus.tolist() == [8, 32, 8, 2048]
    assert t.duration_s.tolist() == [7200.0, 1000.0, 601.0, 86400.0]
    assert t.job_id.tolist() == [0, 1, 2, 3]
    assert np.all(t.gpus == t.tp * t.pp * t.dp)
    assert t.meta.source == "helios:cluster_log.csv"


def test_helios_options(tmp_path: Path) -> None:
    log = _helios_log(tmp_path)
    t = import_helios(log, states=None, min_duration_s=0.0, max_gpus=100)
    assert len(t) == 6  # only the CPU job is dropped
    assert t.gpus.max() == 64
    t2 = import_helios(log, states=["failed"])
    assert t2.gpus.tolist() == [64]
    # Numeric submit times (Acme style, seconds) work too.
    frame = pd.read_csv(log)
    frame["submit_time"] = np.arange(len(frame)) * 10.0 + 100
    t3 = import_helios(frame)
    assert t3.arrival_s[0] == 0.0 and np.all(np.diff(t3.arrival_s) > 0)


def test_helios_tpuv4_quantile_mapping() -> None:
    rng = np.random.default_rng(0)
    n = 5000
    gpu_num = np.minimum(rng.geometric(0.3, n) ** 2, 3000)  # Helios-like: mostly tiny jobs
    frame = pd.DataFrame(
        {
            "job_id": np.arange(n),
            "gpu_num": gpu_num,
            "submit_time": np.sort(rng.uniform(0, 1e6, n)),
            "duration": rng.uniform(700, 1e5, n),
            "state": "COMPLETED",
        }
    )
    t = import_helios(frame, size_mapping="tpuv4", seed=1)
    # Quantile mapping: each class gets its share of jobs up to rounding of the boundaries.
    counts = np.array([np.sum(t.gpus == s) for s in PAPER_SIZE_MIX.sizes])
    assert np.all(np.abs(counts - np.asarray(PAPER_SIZE_MIX.probs) * n) <= 1)
    # And it preserves order: a job with more GPUs never gets a smaller size.
    # (Submit times are sorted, so trace order is frame order; ties are broken at random.)
    levels = np.unique(gpu_num)
    smallest = np.array([t.gpus[gpu_num == g].min() for g in levels])
    largest = np.array([t.gpus[gpu_num == g].max() for g in levels])
    assert np.all(largest[:-1] <= smallest[1:])


def test_helios_errors(tmp_path: Path) -> None:
    log = _helios_log(tmp_path)
    frame = pd.read_csv(log)
    frame.drop(columns=["gpu_num"]).to_csv(tmp_path / "a.csv", index=False)
    with pytest.raises(TraceFormatError, match="column gpu_num: missing column"):
        import_helios(tmp_path / "a.csv")
    frame = frame.astype({"gpu_num": object})
    frame.loc[3, "gpu_num"] = "many"
    frame.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(TraceFormatError, match=r"line 5, column gpu_num: not a finite number"):
        import_helios(tmp_path / "b.csv")
    frame = pd.read_csv(log)
    frame.loc[2, "submit_time"] = "yesterday"
    frame.to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(TraceFormatError, match=r"line 4, column submit_time"):
        import_helios(tmp_path / "c.csv")
    with pytest.raises(TraceFormatError, match="no job left"):
        import_helios(log, min_duration_s=1e9)
    with pytest.raises(ConfigError, match=r"size_mapping 'x' \(allowed: pow2, tpuv4\)"):
        import_helios(log, size_mapping="x")


@pytest.mark.filterwarnings("error")  # (no cast RuntimeWarning)
@pytest.mark.parametrize("mapping", ["pow2", "tpuv4"])
def test_helios_gpu_count_beyond_max_gpus_is_refused_by_line(tmp_path: Path, mapping: str) -> None:
    frame = pd.read_csv(_helios_log(tmp_path)).astype({"gpu_num": float})
    frame.loc[1, "gpu_num"] = 1e300
    frame.to_csv(tmp_path / "huge.csv", index=False)
    with pytest.raises(TraceFormatError) as info:
        import_helios(tmp_path / "huge.csv", size_mapping=mapping)
    assert str(info.value) == (
        f"{tmp_path / 'huge.csv'}: line 3, column gpu_num: must be at most 1048576 (MAX_GPUS), "
        "got 1e+300"
    )
    frame.loc[1, "gpu_num"] = 1048576  # the limit itself is a count
    frame.to_csv(tmp_path / "huge.csv", index=False)
    trace = import_helios(tmp_path / "huge.csv", size_mapping=mapping)
    assert len(trace) == 4 and trace.gpus.max() == (2048 if mapping == "pow2" else 512)


# ---- job lists -----------------------------------------------------------------------------


def test_joblist_round_trip(tmp_path: Path) -> None:
    t = generate_trace("lumoscore-paper", 40, seed=6)
    path = write_joblist(t, tmp_path / "jobs.py")
    back = read_joblist(path)
    assert back.same_jobs(t)  # ring collective, model shares, no deadline: all preserved
    assert parse_joblist(format_joblist(back)).same_jobs(t)


def test_joblist_sorted_by_arrival_keeps_positions_as_ids() -> None:
    t = parse_joblist(
        "[(30.0, 700, 'Pangu', 8, 10, 8, 1, 1, 8),\n"
        " (10.0, 900, 'llama_7b', 64, 5, 8, 2, 4, 32),\n"
        " (20.0, 800, 'GPT2_13b', 16, 10, 8, 2, 1, 16)]"
    )
    assert t.job_id.tolist() == [1, 2, 0]
    assert t.arrival_s.tolist() == [10.0, 20.0, 30.0]
    assert t.ep.tolist() == [32, 16, 8]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("[(0, 700, 'Pangu', 8, 10, 8, 1, 1)]", r"entry 0: expected a tuple of 9 fields"),
        ("[(0, 700, 'Pangu', 8, 10, 8, 1, 1, 8), 5]", r"entry 1: expected a tuple of 9"),
        ("[(0, 700, 'Pangu', 16, 10, 8, 1, 1, 8)]", r"entry 0, column gpus: gpus=16 must equal"),
        ("[(0, 700, 'Pangu', 8, 10, 8, 1, 1, 8), (1, 7, 'Bert', 8, 10, 8, 1, 1, 8)]",
         r"entry 1, column share_dp: unknown model 'Bert'"),
        ("[(0, '700', 'Pangu', 8, 10, 8, 1, 1, 8)]", r"entry 0, column duration_s: expected a num"),
        ("[(0, 700, 3, 8, 10, 8, 1, 1, 8)]", r"entry 0, column model: expected a string"),
        ("[(5, 700, 'Pangu', 8, 10, 8, 1, 1, 8), (-1, 7, 'Pangu', 8, 10, 8, 1, 1, 8)]",
         r"entry 1, column arrival_s: must be >= 0"),
        ("[(0, 700, 'Pangu', 8, True, 8, 1, 1, 8)]", r"entry 0, column iterations"),
        ("{'a': 1}", "expected a list of tuples"),
        ("[(0, 700,\n 'Pangu', 8, 10, 8, 1, 1, 8)", r"line \d+: not a job list"),
    ],
)  # fmt: skip
def test_joblist_errors(text: str, pattern: str) -> None:
    with pytest.raises(TraceFormatError, match=pattern):
        parse_joblist(text)


def test_joblist_is_never_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = (
        f"[(0, 700, 'Pangu', 8, 10, 8, 1, 1, __import__('pathlib').Path({str(marker)!r}).touch())]"
    )
    with pytest.raises(TraceFormatError, match="not a job list"):
        parse_joblist(text)
    assert not marker.exists()


# ---- results logs ---------------------------------------------------------------------------


def test_results_log_format() -> None:
    text = format_results_log([5, 2], [10.0, 0.0], [10.0, 3.0], [20.5, np.nan])
    assert text.splitlines() == [
        "task_id,2,arriving_time,0.0",
        "taskid,2,start_time,3.0",
        "task_id,5,arriving_time,10.0",
        "taskid,5,start_time,10.0",
        "taskid,5,finish_time,20.5",
    ]


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.floats(0, 1e7, allow_nan=False),
            st.floats(0, 1e5, allow_nan=False),
            st.floats(0, 1e5, allow_nan=False),
            st.integers(0, 2),
        ),
        min_size=0,
        max_size=30,
    ),
    seed=st.integers(0, 1000),
)
def test_results_log_round_trip(data: list, seed: int) -> None:
    n = len(data)
    ids = np.random.default_rng(seed).permutation(10 * n + 1)[:n]
    arrival = np.array([d[0] for d in data])
    start = arrival + np.array([d[1] for d in data])
    finish = start + np.array([d[2] for d in data])
    stage = np.array([d[3] for d in data])
    start = np.where(stage >= 1, start, np.nan)
    finish = np.where(stage >= 2, finish, np.nan)
    text = format_results_log(ids, arrival, start, finish)
    log = ResultsLog.from_text(text)
    order = np.argsort(ids)
    assert np.array_equal(log.job_id, ids[order])
    for got, want in ((log.arrival_s, arrival), (log.start_s, start), (log.finish_s, finish)):
        assert np.array_equal(got, want[order], equal_nan=True)
    times = [float(line.rsplit(",", 1)[1]) for line in text.splitlines()]
    assert times == sorted(times)


def test_results_log_file_round_trip(tmp_path: Path) -> None:
    path = write_results_log(
        tmp_path / "r.log", [0, 1, 2], [0, 1, 2], [0, 5, np.nan], [3, 9, np.nan]
    )
    log = read_results_log(path)
    assert log.finish_s[:2].tolist() == [3.0, 9.0] and np.isnan(log.start_s[2])


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("task_id,1,arriving_time,0\ntaskid,1,start,4\n", r"line 2: unknown record"),
        ("task_id,1,arriving_time,0\n\ntaskid,1,start_time\n", r"line 3: expected 4 comma"),
        ("task_id,1,arriving_time,soon\n", r"line 1, column time: not a time"),
        ("task_id,x,arriving_time,1\n", r"line 1, column id: not a job id"),
        ("task_id,1,arriving_time,5\ntaskid,1,start_time,4\n", r"line 2: job 1: start_time bef"),
        ("task_id,1,arriving_time,0\ntaskid,1,start_time,4\ntaskid,1,finish_time,3\n",
         r"line 3: job 1: finish_time before start_time"),
        ("task_id,1,arriving_time,0\ntask_id,1,arriving_time,0\n", r"line 2: repeated arriving"),
        ("taskid,4,start_time,1\n", r"line 1: job 4: start_time without arriving_time"),
    ],
)  # fmt: skip
def test_results_log_errors(text: str, pattern: str) -> None:
    with pytest.raises(TraceFormatError, match=pattern):
        ResultsLog.from_text(text)


def test_results_log_export_errors() -> None:
    with pytest.raises(ConfigError, match="equal length"):
        format_results_log([1, 2], [0.0], [0.0], [0.0])
    with pytest.raises(ConfigError, match="arrival_s <= start_s <= finish_s"):
        format_results_log([1], [5.0], [4.0], [6.0])
    with pytest.raises(ConfigError, match="unique"):
        format_results_log([1, 1], [0, 0], [0, 0], [0, 0])


def test_example_files_parse() -> None:
    from lumoscore.workload import read_trace

    d = Path(__file__).resolve().parents[1] / "examples" / "traces"
    t = read_trace(d / "lumoscore-paper-50.csv")
    assert t == generate_trace("lumoscore-paper", 50, seed=1)
    assert len(read_joblist(d / "joblist-8.txt")) == 8
    h = import_helios(d / "helios-style-cluster_log.csv")
    assert len(h) == 11 and h.gpus.min() == 8
    log = read_results_log(d / "results-log-example.txt")
    assert log.job_id.tolist() == [0, 1, 2] and np.isnan(log.finish_s[2])
