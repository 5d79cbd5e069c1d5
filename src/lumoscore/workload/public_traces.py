"""Importers of public GPU-cluster traces: Alibaba PAI 2020, Alibaba GPU 2023, Microsoft Philly.

Each reads the trace's documented layout into one table of jobs (``job_id, gpu_num,
submit_time, duration, state``) and hands it to :func:`~lumoscore.workload.importers.import_helios`,
which filters (state, minimum duration), maps the GPU counts to server-sized jobs and draws the
LumosCore job model (models, TP/PP/DP/EP) with one seed. What each mapping assumes:

``alibaba-2020`` (`alibaba/clusterdata`, ``cluster-trace-gpu-v2020``, ``pai_task_table.csv``)
    Columns ``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem,
    plan_gpu, gpu_type`` (the released files have no header line; one is accepted).
    ``plan_gpu`` is the share of one GPU per instance in percent (100 = a whole GPU). A job's
    GPUs are ``ceil(sum over its tasks of inst_num * plan_gpu / 100)``; it arrives at the
    earliest ``start_time`` of its tasks (the table has no separate submission time) and runs
    until the latest ``end_time`` (of all its tasks, with a GPU or not). ``status``
    ``Terminated`` is a completed job, ``Failed`` a failed one, ``Running``/``Waiting``
    unfinished (the state of its last task). Tasks without an end time and jobs without a GPU
    are dropped.
``alibaba-2023`` (`alibaba/clusterdata`, ``cluster-trace-gpu-v2023``, ``openb_pod_list_*.csv``)
    Columns ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
    creation_time, deletion_time, scheduled_time`` (seconds). One pod is one job of ``num_gpu``
    GPUs (pods sharing a fraction of one GPU, ``num_gpu = 1`` and ``gpu_milli < 1000``, count as
    one GPU); it arrives at ``creation_time`` and runs from ``scheduled_time`` to
    ``deletion_time``. ``pod_phase`` ``Succeeded`` is completed, ``Failed`` failed,
    ``Running``/``Pending`` unfinished. Pods never scheduled or never deleted are dropped.
``philly`` (`msr-fiddle/philly-traces`, ``cluster_job_log``)
    A JSON list of jobs ``{"jobid", "status", "submitted_time", "attempts": [{"start_time",
    "end_time", "detail": [{"ip", "gpus": [...]}]}]}``. A job's GPUs are those of its last
    attempt (the sum over its machines of ``len(gpus)``); it arrives at ``submitted_time`` and
    runs from the first attempt's ``start_time`` to the last attempt's ``end_time`` (failed
    attempts and retries count as run time). ``status`` ``Pass`` is completed, ``Killed``
    cancelled, ``Failed`` failed. Jobs without an attempt that started and ended are dropped.

In all three the original job ids are not kept (jobs are renumbered in arrival order) and run
times are taken as the jobs' run times on an ideal network (``duration_s``).

Examples
--------
>>> import io
>>> rows = ("j1,t1,2,Terminated,100,1800,600,29.3,100,V100\\n"
...         "j2,t1,1,Terminated,200,900,600,29.3,50,T4\\n")
>>> table = read_public_jobs(io.StringIO(rows), "alibaba-2020")
>>> table[["job_id", "gpu_num", "submit_time", "duration", "state"]].values.tolist()
[['j1', 2, 100.0, 1700.0, 'COMPLETED'], ['j2', 1, 200.0, 700.0, 'COMPLETED']]
"""

from __future__ import annotations

import io
import json
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from lumoscore.errors import ConfigError
from lumoscore.fileio import read_text
from lumoscore.limits import MAX_GPUS
from lumoscore.workload.errors import TraceFormatError
from lumoscore.workload.trace import Trace

__all__ = ["PUBLIC_FORMATS", "import_public", "read_public_jobs"]

#: Public trace formats by name: their documented columns (``None``: JSON).
PUBLIC_FORMATS: dict[str, tuple[str, ...] | None] = {
    "alibaba-2020": (
        "job_name", "task_name", "inst_num", "status", "start_time", "end_time",
        "plan_cpu", "plan_mem", "plan_gpu", "gpu_type",
    ),
    "alibaba-2023": (
        "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
        "pod_phase", "creation_time", "deletion_time", "scheduled_time",
    ),
    "philly": None,
}  # fmt: skip

_STATES = {
    "alibaba-2020": {"terminated": "COMPLETED", "failed": "FAILED", "running": "RUNNING",
                     "waiting": "PENDING"},
    "alibaba-2023": {"succeeded": "COMPLETED", "failed": "FAILED", "running": "RUNNING",
                     "pending": "PENDING"},
    "philly": {"pass": "COMPLETED", "killed": "CANCELLED", "failed": "FAILED"},
}  # fmt: skip


def read_public_jobs(source: str | os.PathLike[str] | IO[str], fmt: str) -> pd.DataFrame:
    """The jobs of a public trace as ``job_id, gpu_num, submit_time, duration, state`` (the
    input of :func:`~lumoscore.workload.importers.import_helios`), in the layout ``fmt``
    (one of :data:`PUBLIC_FORMATS`; see the module docstring for each mapping).

    Raises
    ------
    TraceFormatError
        Missing columns or bad values, naming the file, the line (or JSON entry) and column.
    """
    if fmt not in PUBLIC_FORMATS:
        raise ConfigError(f"format {fmt!r} unknown; allowed: {', '.join(PUBLIC_FORMATS)}")
    name = getattr(source, "name", None) or str(source)
    text = source.read() if hasattr(source, "read") else read_text(source, what=f"a {fmt} trace")
    if fmt == "philly":
        return _philly(text, str(name))
    frame = _csv(text, PUBLIC_FORMATS[fmt] or (), str(name))
    return (
        _alibaba_2020(frame, str(name))
        if fmt == "alibaba-2020"
        else _alibaba_2023(frame, str(name))
    )


def _csv(text: str, columns: tuple[str, ...], name: str) -> pd.DataFrame:
    """The table of a CSV with or without its header line (the released files have none)."""
    first = text.split("\n", 1)[0].strip().split(",")
    named = {c.strip() for c in first} & set(columns)
    header = [c.strip() for c in first] if named else None  # (a header names some column)
    try:
        frame = pd.read_csv(
            io.StringIO(text), header=0 if header else None, names=None if header else columns,
            dtype=str, keep_default_na=False, skip_blank_lines=True,
        )  # fmt: skip
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise TraceFormatError(f"{name}: cannot parse CSV: {' '.join(str(exc).split())}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TraceFormatError(
            f"{name}: missing column(s) {', '.join(missing)} (expected: {', '.join(columns)})"
        )
    frame.attrs["first_line"] = 2 if header else 1
    return frame


def _line(frame: pd.DataFrame, i: int) -> str:
    """The file line of row ``i`` of a table read by :func:`_csv`."""
    return f"line {i + frame.attrs.get('first_line', 1)}"


def _num(
    frame: pd.DataFrame,
    col: str,
    name: str,
    *,
    empty_ok: bool = False,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """Column ``col`` as floats (NaN where empty, if ``empty_ok``), each number at least
    ``low`` and at most ``high`` when given; a TraceFormatError naming the file, line and
    column otherwise."""
    raw = frame[col].astype(str).str.strip()
    values = pd.to_numeric(raw.replace("", np.nan), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) & ~(empty_ok & (raw == "").to_numpy())
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = _line(frame, i)
        raise TraceFormatError(
            f"{name}: {where}, column {col}: not a number: {raw.iloc[i]!r}", where, col
        )
    out = np.zeros(values.size, dtype=bool)  # (NaN, an empty value, is never out of range)
    if low is not None:
        out |= values < low
    if high is not None:
        out |= values > high
    if out.any():
        i = int(np.flatnonzero(out)[0])
        where = _line(frame, i)
        limit = " (MAX_GPUS)" if high == MAX_GPUS else ""
        if high is None:
            allowed = f">= {low:g}"
        else:
            allowed = (f"<= {high}" if low is None else f"from {low:g} to {high}") + limit
        raise TraceFormatError(
            f"{name}: {where}, column {col}: must be {allowed}, got {raw.iloc[i]}", where, col
        )
    return values


def _states(raw: pd.Series, fmt: str) -> np.ndarray:
    table = _STATES[fmt]
    return raw.astype(str).str.strip().str.lower().map(lambda s: table.get(s, s.upper())).to_numpy()


def _alibaba_2020(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    inst = _num(frame, "inst_num", name, low=0)
    share = _num(frame, "plan_gpu", name, empty_ok=True, low=0)
    start = _num(frame, "start_time", name, empty_ok=True)
    end = _num(frame, "end_time", name, empty_ok=True)
    with np.errstate(over="ignore"):  # (checked below)
        gpu = np.nan_to_num(inst * share / 100.0)
    big = np.flatnonzero(gpu > MAX_GPUS)
    if big.size:
        i = int(big[0])
        where = _line(frame, i)
        raise TraceFormatError(
            f"{name}: {where}, columns inst_num, plan_gpu: {frame['inst_num'].iloc[i].strip()} "
            f"instances x {frame['plan_gpu'].iloc[i].strip()} % of a GPU; allowed: at most "
            f"{MAX_GPUS} GPUs a task (MAX_GPUS)",
            where,
            "plan_gpu",
        )
    tasks = pd.DataFrame(
        {
            "job": frame["job_name"].astype(str).str.strip(),
            "gpu": gpu,
            "start": start,
            "end": end,
            "state": _states(frame["status"], "alibaba-2020"),
        }
    )
    tasks = tasks[np.isfinite(tasks["start"]) & np.isfinite(tasks["end"])]
    jobs = tasks.groupby("job", sort=False).agg(
        gpu=("gpu", "sum"), start=("start", "min"), end=("end", "max"), state=("state", "last")
    )
    jobs = jobs[jobs["gpu"] > 0]  # (a job's run time spans all its tasks, GPU or not)
    if jobs.empty:
        raise TraceFormatError(f"{name}: no job with a GPU task that started and ended")
    big = np.flatnonzero(jobs["gpu"].to_numpy() > MAX_GPUS)
    if big.size:
        job = jobs.index[int(big[0])]
        raise TraceFormatError(
            f"{name}: job {job!r}: its tasks ask for {jobs['gpu'].iloc[int(big[0])]:.6g} GPUs "
            f"(sum of inst_num x plan_gpu / 100); allowed: at most {MAX_GPUS} (MAX_GPUS)",
            f"job {job}",
            "plan_gpu",
        )
    return pd.DataFrame({
        "job_id": jobs.index.to_numpy(),
        "gpu_num": np.ceil(jobs["gpu"].to_numpy() - 1e-9).astype(np.int64),
        "submit_time": jobs["start"].to_numpy(dtype=float),
        "duration": (jobs["end"] - jobs["start"]).to_numpy(dtype=float),
        "state": jobs["state"].to_numpy(),
    })  # fmt: skip


def _alibaba_2023(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    gpus = _num(frame, "num_gpu", name, low=0, high=MAX_GPUS)
    created = _num(frame, "creation_time", name)
    scheduled = _num(frame, "scheduled_time", name, empty_ok=True)
    deleted = _num(frame, "deletion_time", name, empty_ok=True)
    keep = (gpus > 0) & np.isfinite(scheduled) & np.isfinite(deleted) & (deleted > scheduled)
    if not keep.any():
        raise TraceFormatError(f"{name}: no pod with a GPU that was scheduled and deleted")
    return pd.DataFrame({
        "job_id": frame["name"].astype(str).str.strip().to_numpy()[keep],
        "gpu_num": gpus[keep].astype(np.int64),
        "submit_time": created[keep],
        "duration": (deleted - scheduled)[keep],
        "state": _states(frame["pod_phase"], "alibaba-2023")[keep],
    })  # fmt: skip


def _philly(text: str, name: str) -> pd.DataFrame:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"{name}: not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(doc, list):
        raise TraceFormatError(f"{name}: expected a JSON list of jobs, got {type(doc).__name__}")
    rows: list[dict[str, Any]] = []
    for i, job in enumerate(doc):
        where = f"entry {i}"
        if not isinstance(job, dict) or "jobid" not in job or "submitted_time" not in job:
            raise TraceFormatError(
                f"{name}: {where}: a job needs jobid, status, submitted_time and attempts", where
            )
        attempts = [a for a in job.get("attempts") or [] if isinstance(a, dict)]
        ran = [a for a in attempts if a.get("start_time") not in (None, "None")
               and a.get("end_time") not in (None, "None")]  # fmt: skip
        if not ran:
            continue
        detail = ran[-1].get("detail") or []
        gpus = sum(len(m.get("gpus") or []) for m in detail if isinstance(m, dict))
        try:
            submit = _stamp(job["submitted_time"])
            start, end = _stamp(ran[0]["start_time"]), _stamp(ran[-1]["end_time"])
        except ValueError as exc:
            raise TraceFormatError(f"{name}: {where}: {exc}", where) from None
        status = str(job.get("status", "")).strip().lower()
        rows.append({"job_id": str(job["jobid"]), "gpu_num": gpus, "submit_time": submit,
                     "duration": end - start,
                     "state": _STATES["philly"].get(status, status.upper())})  # fmt: skip
    if not rows:
        raise TraceFormatError(f"{name}: no job with an attempt that started and ended")
    return pd.DataFrame(rows)


def _stamp(value: Any) -> float:
    """Seconds since the epoch of a Philly date-time (``2017-10-03 02:06:43``)."""
    try:
        t = pd.Timestamp(str(value))
    except (ValueError, TypeError):
        raise ValueError(f"not a date-time: {value!r}") from None
    if t is pd.NaT or not math.isfinite(t.value):
        raise ValueError(f"not a date-time: {value!r}")
    return float((t - pd.Timestamp(0)).total_seconds())


def import_public(
    source: str | os.PathLike[str],
    fmt: str,
    *,
    states: tuple[str, ...] | None = ("COMPLETED",),
    **options: Any,
) -> Trace:
    """A public trace as a LumosCore trace: :func:`read_public_jobs`, then
    :func:`~lumoscore.workload.importers.import_helios` (``states``, ``min_duration_s``,
    ``size_mapping``, ``max_gpus``, ``seed``, ``iterations``) on the table."""
    from lumoscore.workload.importers import import_helios

    trace = import_helios(read_public_jobs(source, fmt), states=states, **options)
    meta = replace(trace.meta, source=f"{fmt}:{Path(source).name}")
    return Trace.from_frame(trace.to_frame(), meta, source=str(source))
