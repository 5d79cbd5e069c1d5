"""Trace files: CSV and Parquet with one schema (``docs/workload.md``), atomic writes.

Schema: the columns of :data:`~lumoscore.workload.trace.TRACE_COLUMNS`, one row per job in
arrival order. ``job_id, arrival_s, gpus, model, tp, pp, dp, ep, iterations, duration_s`` are
required; ``collective`` (default ``ring``), ``deadline_s`` (empty: none) and
``share_dp, share_ep, share_pp`` (empty: the model's shares) are optional.

A CSV trace is plain CSV (``pandas.read_csv(path)`` and ``polars.read_csv(path)`` read it with
default arguments); its :class:`~lumoscore.workload.trace.TraceMeta` goes to a JSON sidecar,
``<name>.csv.meta.json`` (:func:`meta_path`). Files written before the sidecar existed start
with the comment line ``# lumoscore-trace {...}`` and still load (any ``#`` lines before the
header are skipped). Parquet files keep the same JSON under the schema metadata key
``lumoscore.trace``.

Reading validates everything (:func:`~lumoscore.workload.trace.columns_from_frame`); errors
are :class:`~lumoscore.workload.errors.TraceFormatError` naming the CSV line number (the
header is line 1 unless comments precede it) or the Parquet row, and the column.

Writing goes to a temporary file in the target's directory that replaces the target with
``os.replace`` only when complete: on any error the target is untouched and no temporary file
is left behind.

Examples
--------
>>> import tempfile, pathlib
>>> from lumoscore.workload.presets import generate_trace
>>> t = generate_trace("lumoscore-paper", 20, seed=5)
>>> with tempfile.TemporaryDirectory() as d:
...     p = write_trace(t, pathlib.Path(d) / "t.csv")
...     read_trace(p) == t
True
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from lumoscore.fileio import atomic_write as _atomic_write
from lumoscore.fileio import atomic_write_files, read_text
from lumoscore.workload.errors import TraceFormatError
from lumoscore.workload.trace import TRACE_COLUMNS, Trace, TraceMeta

__all__ = [
    "CSV_META_PREFIX",
    "PARQUET_META_KEY",
    "TRACE_FORMATS",
    "atomic_write",
    "read_trace",
    "trace_format",
    "write_trace",
]

#: File formats by suffix.
TRACE_FORMATS: dict[str, str] = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
#: Start of the CSV comment line holding the metadata JSON.
CSV_META_PREFIX = "# lumoscore-trace "
#: Suffix of a CSV trace's metadata sidecar: ``trace.csv`` -> ``trace.csv.meta.json``.
CSV_META_SUFFIX = ".meta.json"
#: Parquet schema-metadata key holding the metadata JSON.
PARQUET_META_KEY = b"lumoscore.trace"


def trace_format(path: str | os.PathLike[str]) -> str:
    """``"csv"`` or ``"parquet"`` from the file suffix.

    Examples
    --------
    >>> trace_format("jobs.parquet"), trace_format("x/JOBS.CSV")
    ('parquet', 'csv')
    """
    suffix = Path(path).suffix.lower()
    if suffix not in TRACE_FORMATS:
        raise TraceFormatError(
            f"{path}: unknown trace file suffix {suffix!r} (allowed: {', '.join(TRACE_FORMATS)})"
        )
    return TRACE_FORMATS[suffix]


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """:func:`lumoscore.fileio.atomic_write` for trace files: a missing folder raises
    :class:`TraceFormatError`.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = atomic_write(Path(d) / "a.txt", lambda tmp: tmp.write_text("hi"))
    ...     p.read_text()
    'hi'
    """
    return _atomic_write(path, write, error=TraceFormatError)


def write_trace(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write ``trace`` to ``path`` (``.csv``, ``.parquet`` or ``.pq``) atomically.

    Returns
    -------
    pathlib.Path
        The written path.
    """
    fmt = trace_format(path)
    frame = trace.to_frame()
    meta_json = json.dumps(trace.meta.to_dict(), sort_keys=True)

    def write_parquet(tmp: Path) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        metadata = dict(table.schema.metadata or {})
        metadata[PARQUET_META_KEY] = meta_json.encode()
        pq.write_table(table.replace_schema_metadata(metadata), tmp)

    if fmt != "csv":
        return atomic_write(path, write_parquet)
    # plain CSV and its metadata sidecar: both written, or neither
    text = frame.to_csv(None, index=False, na_rep="", lineterminator="\n")
    atomic_write_files(
        {Path(path): text, meta_path(path): meta_json + "\n"}, error=TraceFormatError
    )
    return Path(path)


def meta_path(path: str | os.PathLike[str]) -> Path:
    """The metadata sidecar of a CSV trace file.

    Examples
    --------
    >>> meta_path("runs/trace.csv").as_posix()
    'runs/trace.csv.meta.json'
    """
    p = Path(path)
    return p.with_name(p.name + CSV_META_SUFFIX)


def _parse_meta(text: str, source: str, where: str) -> TraceMeta:
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return TraceMeta.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise TraceFormatError(f"{source}: {where}: bad trace metadata: {exc}", where) from None


def _read_csv(path: Path) -> Trace:
    try:
        return _read_csv_text(path)
    except UnicodeDecodeError:
        raise TraceFormatError(
            f"{path}: not a UTF-8 text file (a trace CSV expected)", "encoding"
        ) from None


def _read_csv_text(path: Path) -> Trace:
    source = str(path)
    comments = 0
    meta = TraceMeta()
    sidecar = meta_path(path)
    if sidecar.is_file():
        meta = _parse_meta(read_text(sidecar, what="trace metadata JSON"), str(sidecar), "file")
    with path.open(encoding="utf-8", newline="") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            comments += 1
            if line.startswith(CSV_META_PREFIX):
                meta = _parse_meta(line[len(CSV_META_PREFIX) :], source, f"line {comments}")
    try:
        frame = pd.read_csv(
            path,
            skiprows=comments,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            encoding="utf-8",
        )
    except pd.errors.EmptyDataError:
        raise TraceFormatError(
            f"{source}: no header line (expected columns {', '.join(TRACE_COLUMNS)})"
        ) from None
    except pd.errors.ParserError as exc:
        match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if match is None:
            raise TraceFormatError(f"{source}: cannot parse CSV: {exc}") from None
        line = int(match.group(2))  # pandas counts the skipped comment lines too
        raise TraceFormatError(
            f"{source}: line {line}: expected {match.group(1)} fields, saw {match.group(3)}",
            f"line {line}",
        ) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"{source}: not UTF-8 text: {exc}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    header_line = comments + 1
    trace = Trace.from_frame(
        frame, meta, source=source, place=lambda i: f"line {header_line + 1 + i}"
    )
    return trace


def _read_parquet(path: Path) -> Trace:
    source = str(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise TraceFormatError(f"{source}: cannot read Parquet: {exc}") from None
    raw = (table.schema.metadata or {}).get(PARQUET_META_KEY)
    meta = TraceMeta() if raw is None else _parse_meta(raw.decode(), source, "metadata")
    frame = table.to_pandas()
    return Trace.from_frame(frame, meta, source=source, place=lambda i: f"row {i + 1}")


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and validate a trace file.

    Raises
    ------
    TraceFormatError
        Unknown suffix or malformed content; the message names line/row and column.
    OSError
        The file cannot be opened.
    """
    p = Path(path)
    fmt = trace_format(p)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such trace file")
    trace = _read_csv(p) if fmt == "csv" else _read_parquet(p)
    if not len(trace):
        raise TraceFormatError(f"{p}: no jobs (the file has the header only)", "rows")
    return trace
