"""Trace files: CSV/Parquet round trips, validation errors naming line and column, atomic writes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.workload import (
    Job,
    Trace,
    TraceFormatError,
    TraceMeta,
    generate_trace,
    read_trace,
    write_trace,
)
from lumoscore.workload.job import ExposedShares
from lumoscore.workload.trace import REQUIRED_COLUMNS, TRACE_COLUMNS
from lumoscore.workload.tracefile import CSV_META_PREFIX, meta_path


@pytest.fixture(scope="module")
def trace() -> Trace:
    return generate_trace("vclos", 50, seed=3, cluster_gpus=1024)


def _mixed_trace() -> Trace:
    jobs = [
        Job(0, 0.0, 8, "Pangu", 8, 1, 1, 8, 10, 700.5),
        Job(1, 0.1 + 0.2, 64, "custom-moe", 8, 2, 4, 32, 3, 1e6 / 3,
            shares=ExposedShares(0.1, 0.2, 0.05), collective="hierarchical-ring",
            deadline_s=5e5),
        Job(7, 12.0, 16, "GPT2_13b", 8, 1, 2, 16, 10, 1234.0, collective="all-to-all"),
    ]  # fmt: skip
    return Trace.from_jobs(jobs, TraceMeta(source="handmade", cluster_gpus=64, load=0.5))


# ---- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".pq"])
def test_round_trip_generated(tmp_path: Path, trace: Trace, suffix: str) -> None:
    path = write_trace(trace, tmp_path / f"t{suffix}")
    back = read_trace(path)
    assert back == trace  # bit-exact floats, strings, metadata
    assert back.jobs == trace.jobs


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip_deadlines_custom_shares_unknown_model(tmp_path: Path, suffix: str) -> None:
    t = _mixed_trace()
    back = read_trace(write_trace(t, tmp_path / f"m{suffix}"))
    assert back == t
    assert back.jobs[1].shares == ExposedShares(0.1, 0.2, 0.05)
    assert back.jobs[1].deadline_s == 5e5 and back.jobs[0].deadline_s is None
    assert back.meta.load == 0.5


def test_csv_is_plain_and_documented(tmp_path: Path, trace: Trace) -> None:
    import polars as pl

    path = write_trace(trace, tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    assert lines[0].split(",") == list(TRACE_COLUMNS)
    # Plain pandas and polars read it with default arguments into the documented columns.
    frame = pd.read_csv(path)
    assert list(frame.columns) == list(TRACE_COLUMNS) and len(frame) == len(trace)
    assert frame["job_id"].tolist() == [j.job_id for j in trace.jobs]
    pframe = pl.read_csv(path)
    assert pframe.columns == list(TRACE_COLUMNS) and pframe.height == len(trace)
    # The metadata is in the sidecar and comes back on reading.
    assert meta_path(path).is_file() and read_trace(path).meta == trace.meta


def test_csv_with_the_old_comment_line_still_loads() -> None:
    old = Path(__file__).parents[1] / "examples" / "traces" / "lumoscore-paper-50.csv"
    assert old.read_text().startswith(CSV_META_PREFIX)
    t = read_trace(old)
    assert len(t) == 50 and t.meta.preset == "lumoscore-paper" and t.meta.seed == 1


def test_minimal_csv_defaults(tmp_path: Path) -> None:
    path = tmp_path / "min.csv"
    path.write_text(
        ",".join(REQUIRED_COLUMNS) + "\n0,0,16,llama2_13b,8,2,1,8,10,1000\n"
        "1,3.5,8,Pangu,8,1,1,8,10,600.5\n"
    )
    t = read_trace(path)
    assert t.collective.tolist() == ["ring", "ring"]
    assert np.isnan(t.deadline_s).all()
    assert t.share_ep.tolist() == [0.058, 0.258]
    assert t.meta == TraceMeta()


# ---- malformed files --------------------------------------------------------------------------


def _csv(tmp_path: Path, trace: Trace, edit) -> Path:  # type: ignore[no-untyped-def]
    frame = trace.to_frame().astype(object)
    frame = edit(frame)
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return path


def test_missing_column(tmp_path: Path, trace: Trace) -> None:
    path = _csv(tmp_path, trace, lambda f: f.drop(columns=["duration_s"]))
    with pytest.raises(TraceFormatError, match=r"column duration_s: missing column") as err:
        read_trace(path)
    assert err.value.column == "duration_s"
    assert isinstance(err.value, ConfigError)


def test_unknown_column(tmp_path: Path, trace: Trace) -> None:
    path = _csv(tmp_path, trace, lambda f: f.assign(colour="red"))
    with pytest.raises(TraceFormatError, match=r"column colour: unknown column \(allowed: job_id"):
        read_trace(path)


# Data row i (0-based) of a file written without comment lines is on line i + 2.
@pytest.mark.parametrize(
    ("row", "column", "value", "pattern"),
    [
        (4, "arrival_s", "-3", r"line 6, column arrival_s: must be >= 0"),
        (0, "duration_s", "-1.5", r"line 2, column duration_s: must be > 0"),
        (9, "gpus", "abc", r"line 11, column gpus: not a number: 'abc'"),
        (2, "tp", "8.5", r"line 4, column tp: must be an integer"),
        (3, "duration_s", "", r"line 5, column duration_s: missing value"),
        (7, "collective", "tree", r"line 9, column collective: unknown collective 'tree'"),
        (1, "share_ep", "1.5", r"line 3, column share_ep: must be in \[0, 1\)"),
        (5, "model", "gpt9", r"line 7, column share_dp: unknown model 'gpt9' needs explicit"),
        (6, "arrival_s", "inf", r"line 8, column arrival_s: must be finite"),
        (0, "deadline_s", "-1", r"line 2, column deadline_s: deadline -1.0 is before"),
        (0, "ep", "100000", r"line 2, column ep: ep=100000 must divide gpus"),
        (0, "ep", "3", r"line 2, column ep: ep=3 must divide gpus"),
    ],
)
def test_bad_value_names_line_and_column(
    tmp_path: Path, trace: Trace, row: int, column: str, value: str, pattern: str
) -> None:
    def edit(f: pd.DataFrame) -> pd.DataFrame:
        f.loc[row, column] = value
        if column == "model":
            f.loc[row, ["share_dp", "share_ep", "share_pp"]] = ""
        return f

    with pytest.raises(TraceFormatError, match=pattern) as err:
        read_trace(_csv(tmp_path, trace, edit))
    assert err.value.where == pattern.split(",")[0]


def test_bad_gpu_product(tmp_path: Path, trace: Trace) -> None:
    def edit(f: pd.DataFrame) -> pd.DataFrame:
        f.loc[3, "gpus"] = int(f.loc[3, "gpus"]) * 2
        return f

    with pytest.raises(TraceFormatError, match=r"line 5, column gpus: gpus=\d+ must equal tp\*pp"):
        read_trace(_csv(tmp_path, trace, edit))


def test_a_gpu_product_beyond_int64_does_not_wrap(tmp_path: Path, trace: Trace) -> None:
    """5581 * 6610551540480040 is 8 modulo 2**64: int64 arithmetic took it for 8 GPUs."""

    def edit(f: pd.DataFrame) -> pd.DataFrame:
        f.loc[3, ["gpus", "tp", "pp", "dp", "ep"]] = [8, 5581, 1, 6610551540480040, 1]
        return f

    with pytest.raises(TraceFormatError, match=r"line 5, column gpus: gpus=8 .*=3\.68935e\+19"):
        read_trace(_csv(tmp_path, trace, edit))
    with pytest.raises(ConfigError, match="must equal tp"):
        Job(0, 0.0, 8, "llama_7b", tp=5581, pp=1, dp=np.int64(6610551540480040), ep=1,
            iterations=1, duration_s=1.0)  # fmt: skip


def test_duplicate_id_and_order(tmp_path: Path, trace: Trace) -> None:
    def dup(f: pd.DataFrame) -> pd.DataFrame:
        f.loc[8, "job_id"] = f.loc[2, "job_id"]
        return f

    with pytest.raises(TraceFormatError, match=r"line 10, column job_id: repeated job_id 2"):
        read_trace(_csv(tmp_path, trace, dup))

    def swap(f: pd.DataFrame) -> pd.DataFrame:
        f.loc[4, "arrival_s"] = float(f.loc[6, "arrival_s"]) + 1
        return f

    with pytest.raises(TraceFormatError, match=r"line 7, column arrival_s: arrivals must be"):
        read_trace(_csv(tmp_path, trace, swap))


def test_comment_lines_shift_line_numbers(tmp_path: Path, trace: Trace) -> None:
    path = write_trace(trace, tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    lines.insert(0, "# a comment")
    fields = lines[10].split(",")
    fields[1] = "-7"  # lines[10] is file line 11: header on line 2, so data row 9
    lines[10] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 11, column arrival_s"):
        read_trace(path)


def test_ragged_line_and_empty_file(tmp_path: Path, trace: Trace) -> None:
    path = write_trace(trace, tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    lines[5] += ",extra"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=r"line 6: expected 15 fields, saw 16"):
        read_trace(path)
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(TraceFormatError, match="no header"):
        read_trace(empty)
    bad_meta = tmp_path / "m.csv"
    bad_meta.write_text(CSV_META_PREFIX + "{oops\n" + ",".join(REQUIRED_COLUMNS) + "\n")
    with pytest.raises(TraceFormatError, match="line 1: bad trace metadata"):
        read_trace(bad_meta)
    for meta, needle in [
        ('{"cluster_gpus": "abc"}', "cluster_gpus must be an integer >= 1, got 'abc'"),
        ('{"cluster_gpus": 1e400}', "cluster_gpus must be an integer >= 1, got inf"),
        ('{"seed": true}', "seed must be an integer >= 0, got True"),
        ('{"beta_s": -1}', "beta_s must be a finite number >= 0, got -1"),
    ]:
        bad_meta.write_text(CSV_META_PREFIX + meta + "\n" + ",".join(REQUIRED_COLUMNS) + "\n")
        with pytest.raises(TraceFormatError, match=f"bad trace metadata: {re.escape(needle)}"):
            read_trace(bad_meta)


def test_parquet_errors_name_row(tmp_path: Path, trace: Trace) -> None:
    frame = trace.to_frame()
    frame.loc[12, "pp"] = frame.loc[12, "pp"] * 3
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    with pytest.raises(TraceFormatError, match=r"row 13, column gpus: gpus=\d+ must equal"):
        read_trace(path)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet")
    with pytest.raises(TraceFormatError, match="cannot read Parquet"):
        read_trace(junk)


def test_unknown_suffix_and_missing_file(tmp_path: Path, trace: Trace) -> None:
    with pytest.raises(TraceFormatError, match=r"suffix '.json' \(allowed: .csv, .parquet"):
        write_trace(trace, tmp_path / "t.json")
    with pytest.raises(FileNotFoundError):
        read_trace(tmp_path / "none.csv")


@settings(max_examples=20, deadline=None)
@given(row=st.integers(0, 49), column=st.sampled_from(["arrival_s", "duration_s", "iterations"]))
def test_any_negative_cell_is_located(row: int, column: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    t = generate_trace("vclos", 50, seed=3, cluster_gpus=1024)
    frame = t.to_frame().astype(object)
    frame.loc[row, column] = -1
    path = tmp_path_factory.mktemp("neg") / "t.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(TraceFormatError) as err:
        read_trace(path)
    # A negative arrival can also first show up as an order violation on the same line.
    assert err.value.where == f"line {row + 2}"
    assert err.value.column == column


# ---- atomic writes -----------------------------------------------------------------------------


def _dir_listing(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def test_failed_csv_write_leaves_old_file(
    tmp_path: Path, trace: Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = write_trace(trace, tmp_path / "t.csv")
    before = target.read_bytes()
    meta_before = meta_path(target).read_bytes()

    real = Path.write_bytes
    for failing in ("t.csv", "t.csv.meta.json"):

        def broken(self: Path, data: bytes, failing: str = failing) -> int:
            if self.name.startswith(f".{failing}."):
                real(self, data[:20])  # part of the data, then the disk "fails"
                raise OSError("disk full")
            return real(self, data)

        monkeypatch.setattr(Path, "write_bytes", broken)
        with pytest.raises(OSError, match="disk full"):
            write_trace(generate_trace("tpuv4", 10, seed=1), target)
        assert target.read_bytes() == before and meta_path(target).read_bytes() == meta_before
        assert _dir_listing(tmp_path) == ["t.csv", "t.csv.meta.json"]


def test_failed_parquet_write_leaves_no_file(
    tmp_path: Path, trace: Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_write_table(table, where, *args, **kwargs):  # type: ignore[no-untyped-def]
        Path(where).write_bytes(b"PAR1 partial")
        raise OSError("interrupted")

    monkeypatch.setattr(pq, "write_table", broken_write_table)
    with pytest.raises(OSError, match="interrupted"):
        write_trace(trace, tmp_path / "t.parquet")
    assert _dir_listing(tmp_path) == []


def test_write_into_missing_directory(tmp_path: Path, trace: Trace) -> None:
    with pytest.raises(TraceFormatError, match="does not exist"):
        write_trace(trace, tmp_path / "nope" / "t.csv")


def test_trace_is_immutable(trace: Trace) -> None:
    with pytest.raises(ValueError, match="read-only"):
        trace.gpus[0] = 1
    with pytest.raises(AttributeError):
        trace.meta = TraceMeta()  # type: ignore[misc]
    with pytest.raises(TypeError):
        trace.columns["gpus"] = np.zeros(3)  # type: ignore[index]
    before = int(trace.gpus[0])
    frame = trace.to_frame()
    frame.loc[0, "gpus"] = 1  # a copy: the trace is unaffected
    assert int(trace.gpus[0]) == before != 1


def test_written_files_follow_umask_and_keep_mode(tmp_path: Path, trace: Trace) -> None:
    umask = os.umask(0o022)
    try:
        path = write_trace(trace, tmp_path / "t.csv")
        assert path.stat().st_mode & 0o777 == 0o644
        path.chmod(0o600)
        write_trace(trace, path)
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(umask)


def test_trace_pickles_and_accepts_nullable_columns(trace: Trace) -> None:
    import pickle

    back = pickle.loads(pickle.dumps(trace))
    assert back == trace and not back.gpus.flags.writeable
    frame = trace.to_frame().astype({"gpus": "Int64", "deadline_s": "Float64"})
    assert Trace.from_frame(frame, trace.meta) == trace
    frame.loc[3, "gpus"] = pd.NA
    with pytest.raises(TraceFormatError, match="row 4, column gpus: missing value"):
        Trace.from_frame(frame)
