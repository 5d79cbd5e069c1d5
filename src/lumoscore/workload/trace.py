"""The :class:`Trace` container: an immutable, columnar list of training jobs.

A trace keeps one read-only NumPy array per column of :data:`TRACE_COLUMNS` (the same schema
as trace files, see ``docs/workload.md``) plus :class:`TraceMeta`. Rows are in arrival order.
:attr:`Trace.jobs` materializes :class:`~lumoscore.workload.job.Job` objects on first use;
array code should read the columns instead.

Every way into a trace (generator, file reader, importers, :meth:`Trace.from_frame`) runs the
same vectorized validation, :func:`columns_from_frame`, whose errors name the row and column.

Examples
--------
>>> import pandas as pd
>>> t = Trace.from_frame(pd.DataFrame({
...     "job_id": [0, 1], "arrival_s": [0.0, 5.0], "gpus": [8, 32], "model": ["Pangu", "llama_7b"],
...     "tp": [8, 8], "pp": [1, 2], "dp": [1, 2], "ep": [8, 16], "iterations": [10, 10],
...     "duration_s": [700.0, 900.0]}))
>>> len(t), t.gpus.tolist(), t.jobs[1].shares.ep
(2, [8, 32], 0.255)
>>> t.collective.tolist()
['ring', 'ring']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from lumoscore.errors import ConfigError
from lumoscore.limits import MAX_TIME_S
from lumoscore.workload.errors import TraceFormatError
from lumoscore.workload.job import COLLECTIVES, KNOWN_MODEL_SHARES, ExposedShares, Job

__all__ = [
    "FLOAT_COLUMNS",
    "INT_COLUMNS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "STR_COLUMNS",
    "TRACE_COLUMNS",
    "Trace",
    "TraceMeta",
    "columns_from_frame",
    "fitting_jobs",
]

#: Columns every trace file must have, in file order.
REQUIRED_COLUMNS: tuple[str, ...] = (
    "job_id",
    "arrival_s",
    "gpus",
    "model",
    "tp",
    "pp",
    "dp",
    "ep",
    "iterations",
    "duration_s",
)
#: Columns that may be absent or empty (defaults: ``ring``, no deadline, the model's shares).
OPTIONAL_COLUMNS: tuple[str, ...] = (
    "collective",
    "deadline_s",
    "share_dp",
    "share_ep",
    "share_pp",
)
#: All columns, in the order files are written.
TRACE_COLUMNS: tuple[str, ...] = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
#: Integer columns (``int64``).
INT_COLUMNS: tuple[str, ...] = ("job_id", "gpus", "tp", "pp", "dp", "ep", "iterations")
#: Floating-point columns (``float64``; ``deadline_s`` is NaN for "no deadline").
FLOAT_COLUMNS: tuple[str, ...] = (
    "arrival_s",
    "duration_s",
    "deadline_s",
    "share_dp",
    "share_ep",
    "share_pp",
)
#: String columns (object arrays of ``str``).
STR_COLUMNS: tuple[str, ...] = ("model", "collective")

_SHARE_COLUMNS = ("share_dp", "share_ep", "share_pp")


@dataclass(frozen=True)
class TraceMeta:
    """Provenance of a trace.

    Parameters
    ----------
    preset : str, optional
        Generator preset (``None`` for imported traces).
    seed : int, optional
        Seed of the generator's ``numpy.random.Generator``.
    beta_s : float, optional
        Mean inter-arrival time used to place the arrivals.
    load : float, optional
        Target workload level (LumosCore Eq. 9) the arrivals were calibrated to.
    cluster_gpus : int, optional
        GPU count the trace was generated or calibrated for.
    source : str, optional
        Where the jobs came from (file name, importer).
    """

    preset: str | None = None
    seed: int | None = None
    beta_s: float | None = None
    load: float | None = None
    cluster_gpus: int | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, as a JSON-ready dict."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceMeta:
        """Inverse of :meth:`to_dict`; unknown keys are ignored, a value of the wrong type
        or range is a ValueError naming its key."""
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in names}
        for key, least in (("seed", 0), ("cluster_gpus", 1)):
            v = kept.get(key)
            if v is not None and (type(v) is not int or not least <= v <= 2**62):
                raise ValueError(f"{key} must be an integer >= {least}, got {v!r}")
        for key in ("beta_s", "load"):
            v = kept.get(key)
            if v is not None and (type(v) not in (int, float) or not math.isfinite(v) or v < 0):
                raise ValueError(f"{key} must be a finite number >= 0, got {v!r}")
        for key in ("preset", "source"):
            v = kept.get(key)
            if v is not None and not isinstance(v, str):
                raise ValueError(f"{key} must be a string, got {v!r}")
        return cls(**kept)


def _fail(source: str, where: str | None, column: str | None, problem: str) -> TraceFormatError:
    loc = ", ".join(p for p in (where, None if column is None else f"column {column}") if p)
    message = f"{source}: {loc}: {problem}" if loc else f"{source}: {problem}"
    return TraceFormatError(message, where, column)


def _show(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else None


def _empty_mask(raw: pd.Series) -> np.ndarray:
    if raw.dtype.kind in "biuf":
        return np.zeros(len(raw), dtype=bool)
    isna = raw.isna().to_numpy()
    text = raw.astype(str).str.strip().to_numpy()
    return isna | (text == "")


def _numeric_column(
    raw: pd.Series,
    col: str,
    place: Callable[[int], str],
    source: str,
    *,
    allow_empty: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Parse one column to float64; returns ``(values, empty_mask)``."""
    if raw.dtype.kind in "biuf":
        values = raw.to_numpy(dtype=np.float64, na_value=np.nan)
        empty = np.isnan(values)
    else:
        empty = _empty_mask(raw)
        values = pd.to_numeric(raw.where(~empty, None), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        bad = _first(~empty & np.isnan(values))
        if bad is not None:
            raise _fail(source, place(bad), col, f"not a number: {_show(raw.iloc[bad])}")
    if not allow_empty:
        bad = _first(empty)
        if bad is not None:
            raise _fail(source, place(bad), col, "missing value")
    bad = _first(~empty & ~np.isfinite(values))
    if bad is not None:
        raise _fail(source, place(bad), col, f"must be finite, got {_show(values[bad])}")
    return values, empty


def _str_column(raw: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    empty = _empty_mask(raw)
    text = raw.astype(str).str.strip().to_numpy(dtype=object)
    text[empty] = ""
    return text, empty


#: Largest value of an integer column (every integer up to it is exact in a float).
MAX_INT = 2**53


def columns_from_frame(
    frame: pd.DataFrame,
    *,
    source: str = "trace",
    place: Callable[[int], str] | None = None,
) -> dict[str, np.ndarray]:
    """Validate a table of jobs and return typed columns.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per job with the columns of :data:`TRACE_COLUMNS` (strings, as read from a
        CSV file, or already numeric). Optional columns may be missing or hold empty values.
    source : str
        Name used at the start of error messages (usually the file name).
    place : callable, optional
        Maps a 0-based row index to its place in the source (``"line 7"``);
        default ``"row <i+1>"``.

    Returns
    -------
    dict of str to numpy.ndarray
        One array per column of :data:`TRACE_COLUMNS`.

    Raises
    ------
    TraceFormatError
        Naming the row and column of the first problem found: a missing or unknown column, an
        empty or non-numeric value, a non-integer count, a negative time, a non-positive
        duration, an arrival or a duration above :data:`~lumoscore.limits.MAX_TIME_S`,
        ``gpus != tp * pp * dp``, ``ep`` not dividing ``gpus``, an unknown model without
        shares, an unknown collective, shares outside ``[0, 1)`` or summing to 1 or more, a
        deadline before arrival, a repeated ``job_id`` or arrivals out of order.

    Examples
    --------
    >>> df = pd.DataFrame({"job_id": ["0"], "arrival_s": ["-1"], "gpus": ["8"], "model": ["Pangu"],
    ...     "tp": ["8"], "pp": ["1"], "dp": ["1"], "ep": ["8"], "iterations": ["10"],
    ...     "duration_s": ["700"]})
    >>> try:
    ...     columns_from_frame(df, source="t.csv", place=lambda i: f"line {i + 2}")
    ... except TraceFormatError as err:
    ...     print(err)
    t.csv: line 2, column arrival_s: must be >= 0, got -1.0
    """
    if place is None:

        def place(i: int) -> str:
            return f"row {i + 1}"

    names = [str(c) for c in frame.columns]
    for col in REQUIRED_COLUMNS:
        if col not in names:
            raise _fail(
                source, None, col, f"missing column (required: {', '.join(REQUIRED_COLUMNS)})"
            )
    unknown = [c for c in names if c not in TRACE_COLUMNS]
    if unknown:
        raise _fail(
            source, None, unknown[0], f"unknown column (allowed: {', '.join(TRACE_COLUMNS)})"
        )
    dup = [c for c in names if names.count(c) > 1]
    if dup:
        raise _fail(source, None, dup[0], "column appears more than once")
    n = len(frame)
    out: dict[str, np.ndarray] = {}

    for col in INT_COLUMNS:
        values, _ = _numeric_column(frame[col], col, place, source, allow_empty=False)
        bad = _first(values != np.round(values))
        if bad is not None:
            raise _fail(source, place(bad), col, f"must be an integer, got {_show(values[bad])}")
        low = 0 if col == "job_id" else 1
        bad = _first(values < low)
        if bad is not None:
            raise _fail(source, place(bad), col, f"must be >= {low}, got {_show(values[bad])}")
        bad = _first(values > MAX_INT)
        if bad is not None:  # (beyond it a float no longer holds every integer exactly)
            raise _fail(
                source,
                place(bad),
                col,
                f"must be at most {MAX_INT} (2^53), got {_show(values[bad])}",
            )
        out[col] = values.astype(np.int64)

    for col in ("arrival_s", "duration_s"):
        values, _ = _numeric_column(frame[col], col, place, source, allow_empty=False)
        bad = _first(values > MAX_TIME_S)
        if bad is not None:
            raise _fail(
                source,
                place(bad),
                col,
                f"must be at most {MAX_TIME_S:.0e} s (MAX_TIME_S), got {_show(values[bad])}",
            )
        out[col] = values
    bad = _first(out["arrival_s"] < 0)
    if bad is not None:
        raise _fail(
            source, place(bad), "arrival_s", f"must be >= 0, got {_show(out['arrival_s'][bad])}"
        )
    bad = _first(out["duration_s"] <= 0)
    if bad is not None:
        raise _fail(
            source, place(bad), "duration_s", f"must be > 0, got {_show(out['duration_s'][bad])}"
        )
    bad = _first(np.diff(out["arrival_s"]) < 0)
    if bad is not None:
        raise _fail(
            source,
            place(bad + 1),
            "arrival_s",
            f"arrivals must be in non-decreasing order, got "
            f"{_show(out['arrival_s'][bad + 1])} after {_show(out['arrival_s'][bad])}",
        )

    # in float64: exact up to 2**53 (the columns' cap), and never wrapping as int64 would
    product = out["tp"].astype(np.float64) * out["pp"] * out["dp"]
    bad = _first(product != out["gpus"])
    if bad is not None:
        raise _fail(
            source,
            place(bad),
            "gpus",
            f"gpus={out['gpus'][bad]} must equal tp*pp*dp="
            f"{out['tp'][bad]}*{out['pp'][bad]}*{out['dp'][bad]}={_show_count(product[bad])}",
        )
    bad = _first((out["ep"] > out["gpus"]) | (out["gpus"] % out["ep"] != 0))
    if bad is not None:
        raise _fail(
            source,
            place(bad),
            "ep",
            f"ep={out['ep'][bad]} must divide gpus={out['gpus'][bad]} (expert groups are "
            f"blocks of ep GPUs)",
        )
    _, first_index = np.unique(out["job_id"], return_index=True)
    if first_index.size != n:
        seen = np.zeros(n, dtype=bool)
        seen[first_index] = True
        bad = _first(~seen)
        assert bad is not None
        raise _fail(source, place(bad), "job_id", f"repeated job_id {out['job_id'][bad]}")

    model, empty = _str_column(frame["model"])
    bad = _first(empty)
    if bad is not None:
        raise _fail(source, place(bad), "model", "missing value")
    out["model"] = model

    if "collective" in names:
        coll, empty = _str_column(frame["collective"])
        coll[empty] = "ring"
    else:
        coll = np.full(n, "ring", dtype=object)
    bad = _first(~np.isin(coll, np.array(COLLECTIVES, dtype=object)))
    if bad is not None:
        raise _fail(
            source,
            place(bad),
            "collective",
            f"unknown collective {_show(coll[bad])} (allowed: {', '.join(COLLECTIVES)})",
        )
    out["collective"] = coll

    if "deadline_s" in names:
        deadline, _ = _numeric_column(
            frame["deadline_s"], "deadline_s", place, source, allow_empty=True
        )
    else:
        deadline = np.full(n, np.nan)
    bad = _first(deadline < out["arrival_s"])
    if bad is not None:
        raise _fail(
            source,
            place(bad),
            "deadline_s",
            f"deadline {_show(deadline[bad])} is before the arrival {_show(out['arrival_s'][bad])}",
        )
    out["deadline_s"] = deadline

    known = np.isin(model, np.array(list(KNOWN_MODEL_SHARES), dtype=object))
    for col in _SHARE_COLUMNS:
        cls = col.removeprefix("share_")
        default = (
            pd.Series(model, dtype=object)
            .map({m: getattr(sh, cls) for m, sh in KNOWN_MODEL_SHARES.items()})
            .to_numpy(dtype=np.float64, na_value=np.nan)
        )
        if col in names:
            values, empty = _numeric_column(frame[col], col, place, source, allow_empty=True)
        else:
            values, empty = np.full(n, np.nan), np.ones(n, dtype=bool)
        bad = _first(empty & ~known)
        if bad is not None:
            raise _fail(
                source,
                place(bad),
                col,
                f"unknown model {_show(model[bad])} needs explicit shares "
                f"(known models: {', '.join(KNOWN_MODEL_SHARES)})",
            )
        values = np.where(empty, default, values)
        bad = _first((values < 0) | (values >= 1))
        if bad is not None:
            raise _fail(source, place(bad), col, f"must be in [0, 1), got {_show(values[bad])}")
        out[col] = values
    total = out["share_dp"] + out["share_ep"] + out["share_pp"]
    bad = _first(total >= 1)
    if bad is not None:
        raise _fail(
            source,
            place(bad),
            "share_dp",
            f"share_dp+share_ep+share_pp={total[bad]:.4f} must be below 1",
        )
    return {col: out[col] for col in TRACE_COLUMNS}


def _freeze(columns: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    frozen = {}
    for col in TRACE_COLUMNS:
        arr = np.array(columns[col], copy=True)
        arr.flags.writeable = False
        frozen[col] = arr
    return MappingProxyType(frozen)


@dataclass(frozen=True, eq=False)
class Trace:
    """An immutable, columnar list of jobs in arrival order.

    Build one with :meth:`from_frame`, :meth:`from_jobs`, the generator
    (:func:`~lumoscore.workload.presets.generate_trace`) or a reader; the constructor takes
    already validated columns.

    Parameters
    ----------
    columns : mapping of str to numpy.ndarray
        One array per column of :data:`TRACE_COLUMNS` (copied and made read-only).
    meta : TraceMeta
        Provenance.

    Examples
    --------
    >>> job = Job(job_id=3, arrival_s=1.0, gpus=16, model="GPT2_13b", tp=8, pp=1, dp=2, ep=8,
    ...           iterations=10, duration_s=800.0, collective="halving-doubling")
    >>> t = Trace.from_jobs([job], TraceMeta(source="doc"))
    >>> t.jobs[0] == job, t.meta.source
    (True, 'doc')
    """

    columns: Mapping[str, np.ndarray]
    meta: TraceMeta = field(default_factory=TraceMeta)

    def __post_init__(self) -> None:
        missing = [c for c in TRACE_COLUMNS if c not in self.columns]
        if missing:
            raise TraceFormatError(f"trace: missing columns {missing}", None, missing[0])
        n = {len(self.columns[c]) for c in TRACE_COLUMNS}
        if len(n) != 1:
            raise TraceFormatError("trace: columns differ in length")
        object.__setattr__(self, "columns", _freeze(self.columns))

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        meta: TraceMeta | None = None,
        *,
        source: str = "trace",
        place: Callable[[int], str] | None = None,
    ) -> Trace:
        """Validate a DataFrame (see :func:`columns_from_frame`) and wrap it.

        Examples
        --------
        >>> t = Trace.from_frame(pd.DataFrame({"job_id": [0], "arrival_s": [0.0], "gpus": [8],
        ...     "model": ["Pangu"], "tp": [8], "pp": [1], "dp": [1], "ep": [8],
        ...     "iterations": [10], "duration_s": [1e3]}))
        >>> t.share_ep.tolist()
        [0.258]
        """
        return cls(columns_from_frame(frame, source=source, place=place), meta or TraceMeta())

    @classmethod
    def from_jobs(cls, jobs: Iterable[Job], meta: TraceMeta | None = None) -> Trace:
        """Build a trace from :class:`Job` objects (must be in arrival order).

        Examples
        --------
        >>> Trace.from_jobs([]).to_frame().shape
        (0, 15)
        """
        rows = [
            {
                "job_id": j.job_id,
                "arrival_s": j.arrival_s,
                "gpus": j.gpus,
                "model": j.model,
                "tp": j.tp,
                "pp": j.pp,
                "dp": j.dp,
                "ep": j.ep,
                "iterations": j.iterations,
                "duration_s": j.duration_s,
                "collective": j.collective,
                "deadline_s": np.nan if j.deadline_s is None else j.deadline_s,
                "share_dp": j.shares.dp,
                "share_ep": j.shares.ep,
                "share_pp": j.shares.pp,
            }
            for j in jobs
        ]
        frame = pd.DataFrame(rows, columns=list(TRACE_COLUMNS))
        return cls.from_frame(frame, meta, source="jobs", place=lambda i: f"job {i}")

    # ---- access ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        if self.meta != other.meta or len(self) != len(other):
            return False
        for col in TRACE_COLUMNS:
            a, b = self.columns[col], other.columns[col]
            if a.dtype.kind == "f":
                if not np.array_equal(a, b, equal_nan=True):
                    return False
            elif not np.array_equal(a, b):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[Trace], tuple[dict[str, np.ndarray], TraceMeta]]:
        # The column mapping is a read-only proxy, which pickle cannot copy directly.
        return (Trace, (dict(self.columns), self.meta))

    def __repr__(self) -> str:
        return f"Trace({len(self)} jobs, meta={self.meta!r})"

    def same_jobs(self, other: Trace) -> bool:
        """Whether both traces hold the same jobs, ignoring :attr:`meta`."""
        return Trace(self.columns) == Trace(other.columns)

    def to_frame(self) -> pd.DataFrame:
        """A fresh (writable) DataFrame with the columns of :data:`TRACE_COLUMNS`.

        Examples
        --------
        >>> list(Trace.from_jobs([]).to_frame().columns)[:3]
        ['job_id', 'arrival_s', 'gpus']
        """
        return pd.DataFrame({col: np.array(self.columns[col]) for col in TRACE_COLUMNS})

    @cached_property
    def jobs(self) -> tuple[Job, ...]:
        """The jobs as :class:`Job` objects (built once, on first access)."""
        c = self.columns
        out = []
        for i in range(len(self)):
            model = str(c["model"][i])
            shares = ExposedShares(
                dp=float(c["share_dp"][i]), ep=float(c["share_ep"][i]), pp=float(c["share_pp"][i])
            )
            deadline = float(c["deadline_s"][i])
            out.append(
                Job(
                    job_id=int(c["job_id"][i]),
                    arrival_s=float(c["arrival_s"][i]),
                    gpus=int(c["gpus"][i]),
                    model=model,
                    tp=int(c["tp"][i]),
                    pp=int(c["pp"][i]),
                    dp=int(c["dp"][i]),
                    ep=int(c["ep"][i]),
                    iterations=int(c["iterations"][i]),
                    duration_s=float(c["duration_s"][i]),
                    shares=shares,
                    collective=str(c["collective"][i]),
                    deadline_s=None if math.isnan(deadline) else deadline,
                )
            )
        return tuple(out)

    def replace_columns(self, meta: TraceMeta | None = None, **columns: np.ndarray) -> Trace:
        """A new trace with some columns replaced (validated again).

        Examples
        --------
        >>> t = Trace.from_jobs([Job(0, 0.0, 8, "Pangu", 8, 1, 1, 8, 10, 700.0)])
        >>> t.replace_columns(arrival_s=np.array([5.0])).arrival_s.tolist()
        [5.0]
        """
        frame = self.to_frame()
        for name, values in columns.items():
            if name not in TRACE_COLUMNS:
                raise TraceFormatError(
                    f"trace: unknown column {name!r} (allowed: {', '.join(TRACE_COLUMNS)})",
                    None,
                    name,
                )
            frame[name] = values
        return Trace.from_frame(frame, self.meta if meta is None else meta)

    # One read-only property per column.
    @property
    def job_id(self) -> np.ndarray:
        """Job identifiers (``int64``)."""
        return self.columns["job_id"]

    @property
    def arrival_s(self) -> np.ndarray:
        """Arrival times in seconds, non-decreasing."""
        return self.columns["arrival_s"]

    @property
    def gpus(self) -> np.ndarray:
        """GPUs per job."""
        return self.columns["gpus"]

    @property
    def model(self) -> np.ndarray:
        """Model names (object array of ``str``)."""
        return self.columns["model"]

    @property
    def tp(self) -> np.ndarray:
        """Tensor-parallel degrees."""
        return self.columns["tp"]

    @property
    def pp(self) -> np.ndarray:
        """Pipeline-parallel degrees."""
        return self.columns["pp"]

    @property
    def dp(self) -> np.ndarray:
        """Data-parallel degrees."""
        return self.columns["dp"]

    @property
    def ep(self) -> np.ndarray:
        """Expert-parallel group sizes in GPUs."""
        return self.columns["ep"]

    @property
    def iterations(self) -> np.ndarray:
        """Iterations per job."""
        return self.columns["iterations"]

    @property
    def duration_s(self) -> np.ndarray:
        """Run times on an ideal network, seconds."""
        return self.columns["duration_s"]

    @property
    def collective(self) -> np.ndarray:
        """Data-parallel collective algorithm per job."""
        return self.columns["collective"]

    @property
    def deadline_s(self) -> np.ndarray:
        """Absolute deadlines (NaN: none)."""
        return self.columns["deadline_s"]

    @property
    def share_dp(self) -> np.ndarray:
        """Exposed data-parallel share of an iteration (the model's, before zeroing)."""
        return self.columns["share_dp"]

    @property
    def share_ep(self) -> np.ndarray:
        """Exposed expert all-to-all share of an iteration."""
        return self.columns["share_ep"]

    @property
    def share_pp(self) -> np.ndarray:
        """Exposed pipeline share of an iteration."""
        return self.columns["share_pp"]


def _show_count(x: float) -> str:
    """A float64 count: exact digits up to 2**53, else 6 significant digits."""
    return f"{x:.0f}" if x <= 2**53 else f"{x:.6g}"


def fitting_jobs(
    trace: Trace, cluster_gpus: int, *, skip: bool = False
) -> tuple[tuple[Job, ...], tuple[int, ...]]:
    """The trace's jobs that fit a cluster of ``cluster_gpus`` GPUs, and the ids of those
    that never can (larger than the cluster).

    A job that can never fit is an input error unless ``skip``: a
    :class:`~lumoscore.errors.ConfigError` naming up to five of them.

    Examples
    --------
    >>> import pandas as pd
    >>> t = Trace.from_frame(pd.DataFrame({
    ...     "job_id": [0, 1], "arrival_s": [0.0, 1.0], "gpus": [8, 64], "model": "llama_7b",
    ...     "tp": 8, "pp": 1, "dp": [1, 8], "ep": 8, "iterations": 1, "duration_s": 10.0}))
    >>> [j.job_id for j in fitting_jobs(t, 32, skip=True)[0]], fitting_jobs(t, 32, skip=True)[1]
    ([0], (1,))
    >>> fitting_jobs(t, 32)
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: 1 job needs more GPUs than the cluster's 32: job 1 (64 GPUs)
    """
    jobs = trace.jobs
    big = [j for j in jobs if j.gpus > cluster_gpus]
    if big and not skip:
        shown = ", ".join(f"job {j.job_id} ({j.gpus} GPUs)" for j in big[:5])
        more = f" and {len(big) - 5} more" if len(big) > 5 else ""
        noun = "job needs" if len(big) == 1 else "jobs need"
        raise ConfigError(
            f"{len(big)} {noun} more GPUs than the cluster's {cluster_gpus}: {shown}{more}"
        )
    return tuple(j for j in jobs if j.gpus <= cluster_gpus), tuple(j.job_id for j in big)
