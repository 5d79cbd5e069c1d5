"""Importers and exporters for foreign formats (``docs/workload.md``).

* :func:`import_helios` - a Helios/Acme-style ``cluster_log.csv`` (``job_id, gpu_num,
  submit_time, duration, state, ...``), filtered and mapped to LumosCore jobs.
* :func:`parse_joblist` / :func:`read_joblist` / :func:`format_joblist` - the research code's
  job list, a Python literal ``[(arrival_s, duration_s, model_name, gpus, iterations, TP, PP,
  DP, EP), ...]`` (parsed with :func:`ast.literal_eval`, never ``eval``).
* :func:`format_results_log` / :func:`write_results_log` / :func:`read_results_log` - the
  research code's results log, lines ``task_id,<id>,arriving_time,<t>``,
  ``taskid,<id>,start_time,<t>`` and ``taskid,<id>,finish_time,<t>``.

Examples
--------
>>> t = parse_joblist("[(0.0, 700.0, 'Pangu', 16, 10, 8, 1, 2, 8)]")
>>> t.gpus.tolist(), t.dp.tolist(), t.model.tolist()
([16], [2], ['Pangu'])
>>> print(format_results_log([7], [0.0], [1.5], [10.0]), end="")
task_id,7,arriving_time,0.0
taskid,7,start_time,1.5
taskid,7,finish_time,10.0
"""

from __future__ import annotations

import ast
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lumoscore.errors import ConfigError
from lumoscore.fileio import read_text
from lumoscore.limits import MAX_GPUS
from lumoscore.npsets import unique
from lumoscore.workload.distributions import PAPER_SIZE_MIX, round_down_pow2
from lumoscore.workload.errors import TraceFormatError
from lumoscore.workload.presets import MODELS, draw_parallelism
from lumoscore.workload.trace import Trace, TraceMeta
from lumoscore.workload.tracefile import atomic_write

__all__ = [
    "HELIOS_COLUMNS",
    "JOBLIST_FIELDS",
    "LOG_EVENTS",
    "SIZE_MAPPINGS",
    "ResultsLog",
    "format_joblist",
    "format_results_log",
    "import_helios",
    "parse_joblist",
    "read_joblist",
    "read_results_log",
    "write_joblist",
    "write_results_log",
]

#: Columns a Helios/Acme ``cluster_log.csv`` must have (``state`` only when filtering on it).
HELIOS_COLUMNS: tuple[str, ...] = ("job_id", "gpu_num", "submit_time", "duration")
#: GPU-count mappings of :func:`import_helios`.
SIZE_MAPPINGS: tuple[str, ...] = ("pow2", "tpuv4")
#: Fields of one job-list tuple, in order.
JOBLIST_FIELDS: tuple[str, ...] = (
    "arrival_s",
    "duration_s",
    "model",
    "gpus",
    "iterations",
    "tp",
    "pp",
    "dp",
    "ep",
)
#: Results-log line kinds: (first field, event name) per event.
LOG_EVENTS: tuple[tuple[str, str], ...] = (
    ("task_id", "arriving_time"),
    ("taskid", "start_time"),
    ("taskid", "finish_time"),
)


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else None


# ---- Helios / Acme ------------------------------------------------------------------------


def _numbers(raw: pd.Series, col: str, source: str, place: Callable[[int], str]) -> np.ndarray:
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = _first(~np.isfinite(values))
    if bad is not None:
        raise TraceFormatError(
            f"{source}: {place(bad)}, column {col}: not a finite number: {raw.iloc[bad]!r}",
            place(bad),
            col,
        )
    return values


def _times_s(raw: pd.Series, source: str, place: Callable[[int], str]) -> np.ndarray:
    """Submit times as seconds: numbers as they are, date-times as seconds since the epoch."""
    numeric = pd.to_numeric(raw, errors="coerce")
    if not numeric.isna().any():
        return numeric.to_numpy(dtype=np.float64)
    stamps = pd.to_datetime(raw, errors="coerce", format="mixed")
    bad = _first(stamps.isna().to_numpy())
    if bad is not None:
        raise TraceFormatError(
            f"{source}: {place(bad)}, column submit_time: neither seconds nor a date-time: "
            f"{raw.iloc[bad]!r}",
            place(bad),
            "submit_time",
        )
    if stamps.dt.tz is not None:
        stamps = stamps.dt.tz_convert(None)
    return (stamps - pd.Timestamp(0)).dt.total_seconds().to_numpy(dtype=np.float64)


def _map_sizes(gpu_num: np.ndarray, mapping: str, cap: int, rng: np.random.Generator) -> np.ndarray:
    if mapping == "pow2":
        return np.minimum(np.maximum(round_down_pow2(gpu_num), 8), cap)
    # Quantile mapping: rank the jobs by GPU count (ties in random order), then give the job
    # at rank r the TPUv4 class whose CDF interval holds (r + 0.5) / n.
    mix = PAPER_SIZE_MIX.capped(cap)
    n = gpu_num.size
    order = np.lexsort((rng.random(n), gpu_num))
    cdf = np.cumsum(mix.probs)
    cdf[-1] = 1.0
    classes = np.searchsorted(cdf, (np.arange(n) + 0.5) / n, side="right")
    sizes = np.empty(n, dtype=np.int64)
    sizes[order] = np.asarray(mix.sizes, dtype=np.int64)[np.minimum(classes, len(cdf) - 1)]
    return sizes


def import_helios(
    source: str | os.PathLike[str] | pd.DataFrame,
    *,
    states: Sequence[str] | None = ("COMPLETED",),
    min_duration_s: float = 600.0,
    size_mapping: str = "pow2",
    max_gpus: int = 2048,
    seed: int = 0,
    iterations: int = 10,
) -> Trace:
    """Import a Helios/Acme-style cluster log as a LumosCore trace.

    Parameters
    ----------
    source : path or pandas.DataFrame
        ``cluster_log.csv`` (or its table) with at least ``job_id, gpu_num, submit_time,
        duration`` and, when ``states`` is given, ``state``. ``submit_time`` may be seconds or
        date-times; ``duration`` is in seconds.
    states : sequence of str, optional
        Keep jobs whose ``state`` is one of these (case-insensitive); ``None`` keeps all.
    min_duration_s : float
        Keep jobs that ran longer than this (the LumosCore paper: 600 s).
    size_mapping : {"pow2", "tpuv4"}
        ``"pow2"``: round ``gpu_num`` down to a power of two, at least 8 (one server).
        ``"tpuv4"``: quantile mapping onto the TPUv4 mix: jobs ranked by ``gpu_num`` (ties in
        random order) receive the TPUv4 classes in increasing order, so the imported sizes
        follow the TPUv4 mix while larger jobs stay larger.
    max_gpus : int
        Size cap (rounded down to a power of two, >= 8).
    seed : int
        Seed for the model, PP and EP draws (the ``lumoscore-paper`` rule) and tie-breaking.
    iterations : int
        Iterations per job.

    Returns
    -------
    Trace
        Jobs (CPU-only jobs with ``gpu_num < 1`` dropped) in submission order, renumbered
        ``0..n-1``, arrivals relative to the first kept submission.

    Raises
    ------
    TraceFormatError
        Missing columns or bad values (naming CSV line and column), or no job left.

    Examples
    --------
    >>> log = pd.DataFrame({"job_id": ["a", "b", "c"], "gpu_num": [1, 12, 64],
    ...     "submit_time": ["2020-04-01 00:00:00", "2020-04-01 00:10:00", "2020-04-01 00:20:00"],
    ...     "duration": [700, 30, 5000], "state": ["COMPLETED", "COMPLETED", "COMPLETED"]})
    >>> t = import_helios(log)
    >>> t.gpus.tolist(), t.arrival_s.tolist()
    ([8, 64], [0.0, 1200.0])
    """
    if size_mapping not in SIZE_MAPPINGS:
        raise ConfigError(f"size_mapping {size_mapping!r} (allowed: {', '.join(SIZE_MAPPINGS)})")
    if max_gpus < 8:
        raise ConfigError(f"max_gpus must be >= 8, got {max_gpus}")
    if isinstance(source, pd.DataFrame):
        frame, name = source.reset_index(drop=True), "cluster log"

        def place(i: int) -> str:
            return f"row {i + 1}"
    else:
        name = str(source)
        try:
            frame = pd.read_csv(source, skip_blank_lines=True)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise TraceFormatError(f"{name}: cannot parse CSV: {exc}") from None

        def place(i: int) -> str:
            return f"line {i + 2}"

    frame.columns = [str(c).strip() for c in frame.columns]
    needed = HELIOS_COLUMNS + (("state",) if states is not None else ())
    for col in needed:
        if col not in frame.columns:
            raise TraceFormatError(
                f"{name}: column {col}: missing column (required: {', '.join(needed)})",
                None,
                col,
            )
    gpu_num = _numbers(frame["gpu_num"], "gpu_num", name, place)
    bad = _first(gpu_num > MAX_GPUS)
    if bad is not None:  # (a count no cluster has, nor int64 holds)
        raise TraceFormatError(
            f"{name}: {place(bad)}, column gpu_num: must be at most {MAX_GPUS} (MAX_GPUS), got "
            f"{gpu_num[bad]:g}",
            place(bad),
            "gpu_num",
        )
    duration = _numbers(frame["duration"], "duration", name, place)
    submit = _times_s(frame["submit_time"], name, place)
    keep = (gpu_num >= 1) & (duration > min_duration_s)
    if states is not None:
        wanted = {s.upper() for s in states}
        keep &= frame["state"].astype(str).str.strip().str.upper().isin(wanted).to_numpy()
    if not keep.any():
        raise TraceFormatError(
            f"{name}: no job left after filtering (states={list(states or [])}, "
            f"duration > {min_duration_s} s, gpu_num >= 1)"
        )
    gpu_num, duration, submit = gpu_num[keep], duration[keep], submit[keep]
    order = np.argsort(submit, kind="stable")
    gpu_num, duration, submit = gpu_num[order], duration[order], submit[order]

    rng = np.random.default_rng(seed)
    cap = int(round_down_pow2(max_gpus))
    gpus = _map_sizes(gpu_num.astype(np.int64), size_mapping, cap, rng)
    n = gpus.size
    model = np.asarray(MODELS, dtype=object)[rng.integers(0, len(MODELS), size=n)]
    tp, pp, dp, ep = draw_parallelism(rng, gpus)
    table = pd.DataFrame(
        {
            "job_id": np.arange(n),
            "arrival_s": submit - submit[0],
            "gpus": gpus,
            "model": model,
            "tp": tp,
            "pp": pp,
            "dp": dp,
            "ep": ep,
            "iterations": np.full(n, iterations),
            "duration_s": duration,
        }
    )
    meta = TraceMeta(seed=seed, source=f"helios:{Path(name).name}")
    return Trace.from_frame(table, meta, source=name)


# ---- research-code job list ----------------------------------------------------------------


def parse_joblist(text: str, *, source: str = "job list") -> Trace:
    """Parse a job-list literal ``[(arrival_s, duration_s, model, gpus, iterations, TP, PP,
    DP, EP), ...]`` with :func:`ast.literal_eval`.

    Jobs are numbered by their position in the list and sorted by arrival (stable).
    Errors name the entry (0-based position in the list) and the field.

    Examples
    --------
    >>> parse_joblist("[(5.0, 900.0, 'llama_7b', 8, 10, 8, 1, 1, 8), (1.0, 800.0, 'Pangu', 8,"
    ...               " 10, 8, 1, 1, 8)]").job_id.tolist()
    [1, 0]
    """
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"line {line}" if line else None
        loc = f"{where}: " if where else ""
        if isinstance(exc, SyntaxError):
            why = exc.msg
        elif isinstance(exc, MemoryError | RecursionError):
            why = "too large or too deeply nested"
        else:
            why = "only literals (numbers, strings, lists, tuples) are allowed"
        raise TraceFormatError(
            f"{source}: {loc}not a job list (a Python list of tuples of literals): {why}", where
        ) from None
    if not isinstance(value, list | tuple):
        raise TraceFormatError(f"{source}: expected a list of tuples, got {type(value).__name__}")
    for i, entry in enumerate(value):
        if not isinstance(entry, list | tuple) or len(entry) != len(JOBLIST_FIELDS):
            got = len(entry) if isinstance(entry, list | tuple) else type(entry).__name__
            raise TraceFormatError(
                f"{source}: entry {i}: expected a tuple of {len(JOBLIST_FIELDS)} fields "
                f"({', '.join(JOBLIST_FIELDS)}), got {got}",
                f"entry {i}",
            )
    frame = pd.DataFrame(list(value), columns=list(JOBLIST_FIELDS), dtype=object)
    frame.insert(0, "job_id", np.arange(len(frame)))
    arrival = pd.to_numeric(frame["arrival_s"], errors="coerce").to_numpy(dtype=np.float64)
    order = np.argsort(np.where(np.isnan(arrival), -np.inf, arrival), kind="stable")
    frame = frame.iloc[order].reset_index(drop=True)
    # Bools are ints to Python; reject them explicitly, strings must not pass as numbers.
    for col in JOBLIST_FIELDS:
        cells = frame[col].to_numpy(dtype=object)
        if col == "model":
            bad = _first(np.array([not isinstance(c, str) for c in cells], dtype=bool))
        else:
            bad = _first(
                np.array(
                    [isinstance(c, bool) or not isinstance(c, int | float) for c in cells],
                    dtype=bool,
                )
            )
        if bad is not None:
            kind = "a string" if col == "model" else "a number"
            raise TraceFormatError(
                f"{source}: entry {order[bad]}, column {col}: expected {kind}, got {cells[bad]!r}",
                f"entry {order[bad]}",
                col,
            )
    return Trace.from_frame(
        frame,
        TraceMeta(source=f"joblist:{source}"),
        source=source,
        place=lambda i: f"entry {order[i]}",
    )


def read_joblist(path: str | os.PathLike[str]) -> Trace:
    """Read a job-list file (see :func:`parse_joblist`)."""
    p = Path(path)
    try:
        text = read_text(p, what="a job list")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"{p}: not UTF-8 text: {exc}") from None
    return parse_joblist(text, source=str(p))


def format_joblist(trace: Trace) -> str:
    """The trace as a job-list literal (one tuple per line); drops collectives, deadlines and
    custom shares, which the format cannot hold.

    Examples
    --------
    >>> print(format_joblist(parse_joblist("[(1.0, 800.0, 'Pangu', 8, 10, 8, 1, 1, 8)]")))
    [
        (1.0, 800.0, 'Pangu', 8, 10, 8, 1, 1, 8),
    ]
    """
    c = trace.columns
    rows = zip(
        c["arrival_s"].tolist(),
        c["duration_s"].tolist(),
        c["model"].tolist(),
        c["gpus"].tolist(),
        c["iterations"].tolist(),
        c["tp"].tolist(),
        c["pp"].tolist(),
        c["dp"].tolist(),
        c["ep"].tolist(),
        strict=True,
    )
    body = "".join(f"    {row!r},\n" for row in rows)
    return f"[\n{body}]"


def write_joblist(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write :func:`format_joblist` of ``trace`` atomically."""
    text = format_joblist(trace) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


# ---- research-code results log -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ResultsLog:
    """Per-job times of a results log (NaN where the log has no such event).

    Examples
    --------
    >>> log = ResultsLog.from_text("task_id,3,arriving_time,2.0\\ntaskid,3,start_time,4.0\\n")
    >>> log.job_id.tolist(), log.start_s.tolist(), bool(np.isnan(log.finish_s[0]))
    ([3], [4.0], True)
    """

    job_id: np.ndarray
    arrival_s: np.ndarray
    start_s: np.ndarray
    finish_s: np.ndarray

    def __post_init__(self) -> None:
        for name in ("job_id", "arrival_s", "start_s", "finish_s"):
            arr = np.array(getattr(self, name), dtype=np.int64 if name == "job_id" else float)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.job_id)

    @classmethod
    def from_text(cls, text: str, *, source: str = "results log") -> ResultsLog:
        """Parse results-log text; errors name the line."""
        lines = pd.Series(text.splitlines(), dtype=object)
        blank = lines.str.strip() == ""
        lineno = np.flatnonzero(~blank.to_numpy()) + 1
        parts = lines[~blank].str.strip().str.split(",", expand=False)
        nfields = parts.str.len().to_numpy()
        bad = _first(nfields != 4)
        if bad is not None:
            raise TraceFormatError(
                f"{source}: line {lineno[bad]}: expected 4 comma-separated fields "
                f"(key,<id>,<event>,<time>), got {nfields[bad]}",
                f"line {lineno[bad]}",
            )
        if len(parts) == 0:
            empty = np.zeros(0)
            return cls(np.zeros(0, dtype=np.int64), empty, empty, empty)
        table = pd.DataFrame(parts.tolist(), columns=["key", "id", "event", "time"])
        table = table.apply(lambda s: s.str.strip())

        def where(i: int) -> str:
            return f"line {lineno[i]}"

        kinds = {f"{k},{e}": j for j, (k, e) in enumerate(LOG_EVENTS)}
        kind = (table["key"] + "," + table["event"]).map(kinds)
        bad = _first(kind.isna().to_numpy())
        if bad is not None:
            allowed = "; ".join(f"{k},<id>,{e},<t>" for k, e in LOG_EVENTS)
            raise TraceFormatError(
                f"{source}: {where(bad)}: unknown record "
                f"{table['key'][bad]!r},{table['event'][bad]!r} (allowed: {allowed})",
                where(bad),
            )
        ids = pd.to_numeric(table["id"], errors="coerce").to_numpy(dtype=np.float64)
        bad = _first(~np.isfinite(ids) | (ids != np.round(ids)) | (ids < 0))
        if bad is not None:
            raise TraceFormatError(
                f"{source}: {where(bad)}, column id: not a job id: {table['id'][bad]!r}",
                where(bad),
                "id",
            )
        times = pd.to_numeric(table["time"], errors="coerce").to_numpy(dtype=np.float64)
        bad = _first(~np.isfinite(times) | (times < 0))
        if bad is not None:
            raise TraceFormatError(
                f"{source}: {where(bad)}, column time: not a time >= 0: {table['time'][bad]!r}",
                where(bad),
                "time",
            )
        kind_arr = kind.to_numpy(dtype=np.int64)
        key = ids.astype(np.int64)
        pair = pd.DataFrame({"id": key, "kind": kind_arr})
        dup = _first(pair.duplicated().to_numpy())
        if dup is not None:
            raise TraceFormatError(
                f"{source}: {where(dup)}: repeated {LOG_EVENTS[kind_arr[dup]][1]} "
                f"of job {key[dup]}",
                where(dup),
            )
        uniq, inverse = np.unique(key, return_inverse=True)
        grid = np.full((uniq.size, 3), np.nan)
        grid[inverse, kind_arr] = times
        arrival, start, finish = grid[:, 0], grid[:, 1], grid[:, 2]
        row_of = np.full((uniq.size, 3), -1)
        row_of[inverse, kind_arr] = np.arange(len(table))
        checks = (
            (np.isnan(arrival) & ~np.isnan(start), 1, "start_time without arriving_time"),
            (np.isnan(start) & ~np.isnan(finish), 2, "finish_time without start_time"),
            (start < arrival, 1, "start_time before arriving_time"),
            (finish < start, 2, "finish_time before start_time"),
        )
        for mask, col, problem in checks:
            bad = _first(mask)
            if bad is not None:
                row = int(row_of[bad, col])
                raise TraceFormatError(
                    f"{source}: {where(row)}: job {uniq[bad]}: {problem}", where(row)
                )
        return cls(uniq, arrival, start, finish)


def format_results_log(
    job_id: Sequence[int] | np.ndarray,
    arrival_s: Sequence[float] | np.ndarray,
    start_s: Sequence[float] | np.ndarray,
    finish_s: Sequence[float] | np.ndarray,
) -> str:
    """Results-log text: one line per event, in time order (arrival before start before
    finish at equal times). NaN start/finish times (job never started/finished) are omitted.

    Raises
    ------
    ConfigError
        Arrays of different length, repeated ids, negative or missing arrival times, or a
        start before its arrival / finish before its start.
    """
    ids = np.asarray(job_id, dtype=np.int64)
    times = [np.asarray(a, dtype=np.float64) for a in (arrival_s, start_s, finish_s)]
    if any(t.shape != ids.shape for t in times) or ids.ndim != 1:
        raise ConfigError("results log: job_id, arrival_s, start_s, finish_s need equal length")
    if unique(ids).size != ids.size:
        raise ConfigError("results log: job ids must be unique")
    arrival, start, finish = times
    if np.any(~np.isfinite(arrival) | (arrival < 0)):
        raise ConfigError("results log: arrival_s must be finite and >= 0")
    if (
        np.any(start < arrival)
        or np.any(finish < start)
        or np.any(np.isnan(start) & ~np.isnan(finish))
    ):
        raise ConfigError("results log: need arrival_s <= start_s <= finish_s per job")
    kind = np.repeat(np.arange(3), ids.size)
    t = np.concatenate(times)
    jid = np.tile(ids, 3)
    keep = ~np.isnan(t)
    kind, t, jid = kind[keep], t[keep], jid[keep]
    order = np.lexsort((kind, t))
    keys = np.array([k for k, _ in LOG_EVENTS], dtype=object)[kind[order]]
    events = np.array([e for _, e in LOG_EVENTS], dtype=object)[kind[order]]
    out = io.StringIO()
    pd.DataFrame({"k": keys, "id": jid[order], "e": events, "t": t[order]}).to_csv(
        out, header=False, index=False, lineterminator="\n"
    )
    return out.getvalue()


def write_results_log(
    path: str | os.PathLike[str],
    job_id: Sequence[int] | np.ndarray,
    arrival_s: Sequence[float] | np.ndarray,
    start_s: Sequence[float] | np.ndarray,
    finish_s: Sequence[float] | np.ndarray,
) -> Path:
    """Write :func:`format_results_log` atomically to ``path``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_results_log(Path(d) / "log.txt", [0, 1], [0, 5], [1, 5], [9, np.nan])
    ...     read_results_log(p).finish_s.tolist()
    [9.0, nan]
    """
    text = format_results_log(job_id, arrival_s, start_s, finish_s)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_results_log(path: str | os.PathLike[str]) -> ResultsLog:
    """Read a results log (see :meth:`ResultsLog.from_text`)."""
    p = Path(path)
    return ResultsLog.from_text(read_text(p, what="a result log"), source=str(p))
