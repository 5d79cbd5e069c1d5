"""The summary of a result store: one row per architecture and swept value, over seeds.

:func:`summarize_index` turns a store's index (:meth:`ResultStore.index
<lumoscore.experiments.store.ResultStore.index>`) into the table ``lumos run`` prints and
writes as ``summary.csv`` (:func:`write_summary`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.store import ResultStore, flatten
from lumoscore.fileio import atomic_write_text

__all__ = ["STAT_COLUMNS", "summarize_index", "write_summary"]

#: Statistic columns of the summary table, in order.
STAT_COLUMNS: tuple[str, ...] = tuple(
    f"{stat}_{metric}_s" for metric in ("jrt", "jwt", "jct") for stat in ("mean", "p50", "p99")
)
#: Index columns that never define a group of the summary.
_NOT_GROUPS = {"key", "arch", "seed", "fabric.port_gbps"}


def _config_columns(index: pd.DataFrame) -> list[str]:
    """The run-config columns of the index (``key`` included)."""
    fields = {"key", *flatten(RunConfig.model_construct().model_dump())}
    return [c for c in index.columns if c in fields]


def _row_labels(frame: pd.DataFrame, cols: list[str]) -> list[str]:
    """One string per row that is equal exactly when the rows agree on ``cols``."""
    return ["|".join(map(repr, row)) for row in frame[cols].itertuples(index=False)]


def summarize_index(index: pd.DataFrame) -> pd.DataFrame:
    """One row per architecture x swept field, averaged over seeds.

    Columns: ``arch``, the config fields that vary between runs (``gpus``, ``trace.load``,
    ...), ``runs``, the mean over seeds of :data:`STAT_COLUMNS`, and ``slowdown_vs_best``: the
    mean over seeds of a run's mean JCT over the mean JCT of Best on the same trace (same
    config but architecture, routing and rail-optimized wiring); NaN when Best is not in the
    index.

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.DataFrame({"key": ["a", "b", "c", "d"], "arch": ["best", "x", "best", "x"],
    ...                     "routing": [None, "ecmp", None, "ecmp"], "gpus": 256,
    ...                     "seed": [1, 1, 2, 2], **{c: 1.0 for c in STAT_COLUMNS}})
    >>> idx["mean_jct_s"] = [10.0, 15.0, 20.0, 20.0]
    >>> summarize_index(idx)[["arch", "runs", "mean_jct_s", "slowdown_vs_best"]]
       arch  runs  mean_jct_s  slowdown_vs_best
    0  best     2        15.0              1.00
    1     x     2        17.5               1.25
    """
    from lumoscore.report.metrics import BASELINE_ARCH  # the report package loads matplotlib

    if index.empty:
        return pd.DataFrame(columns=["arch", "runs", *STAT_COLUMNS, "slowdown_vs_best"])
    frame = index.copy()
    config = _config_columns(frame)
    match_cols = [c for c in config if c not in ("key", "arch", "routing", "rail_optimized")]
    match = _row_labels(frame, match_cols)
    is_best = (frame["arch"] == BASELINE_ARCH).to_numpy()
    jct = frame["mean_jct_s"].to_numpy(dtype=float)
    best = {m: j for m, j, b in zip(match, jct, is_best, strict=True) if b}
    frame["slowdown_vs_best"] = [
        j / best[m] if best.get(m, 0.0) > 0 else math.nan for m, j in zip(match, jct, strict=True)
    ]
    groups = [c for c in config if c not in _NOT_GROUPS and frame[c].map(repr).nunique() > 1]
    keys = ["arch", *groups]
    label = pd.Series(_row_labels(frame, keys), index=frame.index)
    rows: list[dict[str, Any]] = []
    for _, part in frame.groupby(label, sort=False):
        first = part.iloc[0]
        row: dict[str, Any] = {k: first[k] for k in keys}
        row["runs"] = len(part)
        for col in (*STAT_COLUMNS, "slowdown_vs_best"):
            vals = part[col].astype(float)
            row[col] = float(vals.mean()) if vals.notna().any() else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def write_summary(store: ResultStore, index: pd.DataFrame | None = None) -> pd.DataFrame:
    """Write ``summary.csv`` (:func:`summarize_index` of ``index``, default the store's whole
    index) into the store's folder, atomically; return the summary."""
    summary = summarize_index(store.index() if index is None else index)
    atomic_write_text(store.root / "summary.csv", summary.to_csv(index=False))
    return summary
