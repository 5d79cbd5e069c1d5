"""Summary statistics and plots of a trace (``lumos trace stats``).

Examples
--------
>>> from lumoscore.workload.presets import generate_trace
>>> s = trace_stats(generate_trace("lumoscore-paper", 200, seed=0))
>>> s.jobs, s.cluster_gpus, sum(row.count for row in s.sizes)
(200, 4096, 200)
>>> sorted(s.duration_quantiles_s)[:3]
['max', 'mean', 'min']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.figures import figure_format, save_figure
from lumoscore.workload.load import workload_level
from lumoscore.workload.trace import Trace

__all__ = [
    "DEFAULT_STATS_GPUS",
    "PLOT_FORMATS",
    "QUANTILES",
    "SizeRow",
    "TraceStats",
    "plot_trace",
    "trace_stats",
]

#: Cluster size assumed for the workload level when neither the caller nor the trace gives one.
DEFAULT_STATS_GPUS = 4096
#: Duration quantiles reported (name -> probability).
QUANTILES: dict[str, float] = {
    "p25": 0.25,
    "p50": 0.5,
    "p75": 0.75,
    "p90": 0.9,
    "p99": 0.99,
}
#: Plot file formats by suffix.
PLOT_FORMATS: tuple[str, ...] = (".png", ".svg", ".pdf")
#: Resolution of the PNG plot (matplotlib's default figure dpi).
_PLOT_DPI = 100


@dataclass(frozen=True)
class SizeRow:
    """One row of the size distribution table."""

    gpus: int
    count: int
    share: float
    cumulative: float


@dataclass(frozen=True)
class TraceStats:
    """Summary of a trace.

    ``workload_level`` is LumosCore Eq. 9 for ``cluster_gpus`` GPUs (``None`` with fewer than
    two distinct arrival times). ``cluster_gpus_source`` says where the GPU count came from
    (``"argument"``, ``"trace"`` or ``"default"``).
    """

    jobs: int
    cluster_gpus: int
    cluster_gpus_source: str
    first_arrival_s: float
    last_arrival_s: float
    arrival_span_s: float
    workload_level: float | None
    sizes: tuple[SizeRow, ...]
    duration_quantiles_s: dict[str, float]
    models: dict[str, int]
    collectives: dict[str, int]
    meta: dict[str, Any]


def _counts(values: np.ndarray) -> dict[str, int]:
    names, counts = np.unique(values.astype(str), return_counts=True)
    return {str(k): int(v) for k, v in zip(names, counts, strict=True)}


def trace_stats(trace: Trace, cluster_gpus: int | None = None) -> TraceStats:
    """Size table, duration quantiles, arrival span and workload level of ``trace``.

    Parameters
    ----------
    trace : Trace
        A non-empty trace.
    cluster_gpus : int, optional
        GPUs for the workload level; default the trace's ``meta.cluster_gpus``, else
        :data:`DEFAULT_STATS_GPUS`.

    Raises
    ------
    PreconditionError
        For an empty trace.
    """
    n = len(trace)
    if n == 0:
        raise PreconditionError("trace stats: the trace has no jobs")
    if cluster_gpus is not None:
        gpus, origin = int(cluster_gpus), "argument"
        if gpus < 1:
            raise ConfigError(f"cluster_gpus must be >= 1, got {cluster_gpus}")
    elif trace.meta.cluster_gpus is not None:
        gpus, origin = int(trace.meta.cluster_gpus), "trace"
    else:
        gpus, origin = DEFAULT_STATS_GPUS, "default"
    sizes, counts = np.unique(trace.gpus, return_counts=True)
    shares = counts / n
    rows = tuple(
        SizeRow(int(s), int(c), float(p), float(cp))
        for s, c, p, cp in zip(sizes, counts, shares, np.cumsum(shares), strict=True)
    )
    d = trace.duration_s
    quant = dict(zip(QUANTILES, np.quantile(d, list(QUANTILES.values())).tolist(), strict=True))
    quant.update(min=float(d.min()), max=float(d.max()), mean=float(d.mean()))
    first, last = float(trace.arrival_s[0]), float(trace.arrival_s[-1])
    try:
        level: float | None = workload_level(trace, gpus)
    except PreconditionError:
        level = None
    return TraceStats(
        jobs=n,
        cluster_gpus=gpus,
        cluster_gpus_source=origin,
        first_arrival_s=first,
        last_arrival_s=last,
        arrival_span_s=last - first,
        workload_level=level,
        sizes=rows,
        duration_quantiles_s=quant,
        models=_counts(trace.model),
        collectives=_counts(trace.collective),
        meta=trace.meta.to_dict(),
    )


def plot_trace(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write a figure with the size histogram and the run-time CDF (PNG, SVG or PDF by
    suffix), atomically and byte-for-byte reproducibly (:func:`lumoscore.figures.save_figure`).

    Examples
    --------
    >>> import tempfile
    >>> from lumoscore.workload.presets import generate_trace
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = plot_trace(generate_trace("tpuv4", 50, seed=1), Path(d) / "t.svg")
    ...     p.read_text().lstrip().startswith("<?xml")
    True
    """
    target = Path(path)
    figure_format(target, [s[1:] for s in PLOT_FORMATS])
    if len(trace) == 0:
        raise PreconditionError("plot: the trace has no jobs")
    from matplotlib.figure import Figure  # the Figure API: no global matplotlib state

    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_size, ax_dur = fig.subplots(1, 2)
    sizes, counts = np.unique(trace.gpus, return_counts=True)
    ax_size.bar([str(s) for s in sizes], counts / len(trace), color="tab:blue")
    ax_size.set_xlabel("GPUs per job")
    ax_size.set_ylabel("share of jobs")
    ax_size.set_title(f"Job sizes ({len(trace)} jobs)")
    d = np.sort(trace.duration_s)
    ax_dur.step(d, np.arange(1, d.size + 1) / d.size, where="post", color="tab:red")
    ax_dur.set_xscale("log")
    ax_dur.set_xlabel("run time on an ideal network (s)")
    ax_dur.set_ylabel("CDF")
    ax_dur.set_title("Run times")
    ax_dur.grid(True, which="both", alpha=0.3)
    return save_figure(fig, target, dpi=_PLOT_DPI)
