"""Report tables: the readable summary (Markdown, HTML, terminal) and CSV text.

:func:`summary_view` turns a seed aggregate (:func:`lumoscore.report.metrics.aggregate`) into
a table of formatted strings with one row per architecture and swept-parameter combination;
:func:`markdown_table` renders any table as GitHub Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "SUMMARY_METRICS",
    "column_definitions",
    "format_number",
    "markdown_table",
    "summary_view",
    "to_csv",
]

#: Columns of the readable summary: (aggregate column, header, definition). Absent columns are
#: skipped; JRT/JWT/JCT means carry their 95% confidence interval across seeds as "mean ± ci".
#: Every value is a mean over seeds of a per-run figure.
SUMMARY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("jobs", "jobs", "jobs that finished"),
    ("rejected", "rejected", "jobs larger than the cluster, never started"),
    (
        "unfinished",
        "unfinished",
        "jobs the run ended without finishing (waiting for what never came back, e.g. a route)",
    ),
    ("mean_jrt_s", "mean JRT (s)", "job run time: finish - start (with failures: JCT - JWT)"),
    ("mean_jwt_s", "mean JWT (s)", "job waiting time: start - arrival (and waits after restarts)"),
    ("mean_jct_s", "mean JCT (s)", "job completion time: finish - arrival = JWT + JRT"),
    ("p50_jct_s", "p50 JCT (s)", "median JCT over the run's jobs"),
    ("p99_jct_s", "p99 JCT (s)", "99th percentile of JCT over the run's jobs"),
    (
        "jct_over_best",
        "JCT / Best",
        "mean JCT over the mean JCT of Best on the same trace (ratio of means, over the jobs "
        "finished in both runs); the paper's comparison",
    ),
    ("jrt_over_best", "JRT / Best", "mean JRT over Best's mean JRT on the same trace"),
    ("jwt_over_best", "JWT / Best", "mean JWT over Best's mean JWT on the same trace"),
    (
        "mean_jrt_slowdown_vs_best",
        "per-job JRT slow-down",
        "mean over jobs of JRT / JRT_best - 1, job by job against Best (Fig. 8(a))",
    ),
    (
        "mean_jct_vs_best",
        "per-job JCT ratio",
        "mean over jobs of JCT / JCT_best, job by job against Best (dominated by the jobs "
        "that waited longest relative to their Best JCT)",
    ),
    (
        "mean_jwt_delta_vs_best_s",
        "JWT - JWT_best (s)",
        "mean over jobs of the extra waiting against Best (Fig. 8(b))",
    ),
    ("mean_jrt_slowdown", "JRT / ideal - 1", "mean over jobs of JRT over the trace's run time"),
    (
        "mean_contention_level",
        "contention level",
        "mean over jobs of communication time over contention-free communication time "
        "(Eq. 10; 1 = no contention)",
    ),
    ("jct_std_s", "JCT std, equal jobs (s)", "spread of JCT among jobs of the same model and size"),
    ("queue_mean_waiting", "mean queue", "time-weighted mean number of waiting jobs"),
    ("queue_max_waiting", "max queue", "most jobs waiting at once"),
    ("stats.reconfigurations", "reconfigurations", "OCS reconfigurations applied"),
    ("fabric.rewired_circuits", "rewired circuits", "OCS circuits changed over the run"),
    ("fabric.rewired_share", "rewired share", "rewired circuits over circuits configured"),
    ("stats.rewired_share", "rewired share", "rewired circuits over circuits configured"),
    ("fabric.refusals", "placement refusals", "placement attempts refused while jobs waited"),
    (
        "fabric.refusals_gpus",
        "refusals: GPUs",
        "placement attempts refused for want of idle GPUs (waiting, not fragmentation)",
    ),
    (
        "fabric.refusals_tp_slots",
        "refusals: TP slots",
        "placement attempts refused with enough idle GPUs, but not in whole TP slots of a server",
    ),
    (
        "fabric.refusals_locality",
        "refusals: locality",
        "placement attempts refused with enough idle slots, but not in whole EP groups per pod "
        "(only with the EP-split fallback off)",
    ),
    (
        "fabric.refusals_network",
        "refusals: network",
        "placement attempts refused with enough idle GPUs because the leaves' cross-pod ports "
        "(even with path sharing) or the OCS layer cannot carry the job",
    ),
    (
        "fabric.relaxed_admissions",
        "EP-split placements",
        "jobs placed by the EP-split fallback (EP groups across pods) instead of waiting",
    ),
    (
        "fragmentation_blocks",
        "fragmentation blocks",
        "times the queue's head was refused while enough GPUs were free in total",
    ),
    ("makespan_s", "makespan (s)", "last finish - first arrival"),
)

_WITH_CI = ("mean_jrt_s", "mean_jwt_s", "mean_jct_s")
#: Metrics the summary shows only when some row has one (a warning, not a figure).
_ONLY_NONZERO = frozenset({"unfinished"})


def format_number(x: Any) -> str:
    """A compact, locale-free rendering: thousands separators for large values, 4 significant
    digits for small ones, ``0`` below 1e-9 in magnitude, ``-`` for NaN/None.

    Examples
    --------
    >>> [format_number(v) for v in (123456.7, 0.012345, 3, float("nan"), -1e-16)]
    ['123,457', '0.01235', '3', '-', '0']
    """
    if x is None:
        return "-"
    if isinstance(x, bool | np.bool_):
        return str(bool(x))
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    if isinstance(x, float | np.floating):
        v = float(x)
        if not math.isfinite(v):
            return "-"
        if abs(v) < 1e-9:
            return "0"  # rounding noise such as -1.1e-16
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):,}"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(x)


def summary_view(
    agg: pd.DataFrame, group_cols: Sequence[str], *, ci_suffix: str = "_ci95"
) -> pd.DataFrame:
    """The readable summary table: ``group_cols``, seeds and the :data:`SUMMARY_METRICS`.

    Examples
    --------
    >>> agg = pd.DataFrame({"arch": ["best"], "seeds": [2], "mean_jct_s": [1500.0],
    ...                     "mean_jct_s_ci95": [12.5]})
    >>> summary_view(agg, ["arch"]).values.tolist()
    [['best', '2', '1,500 ± 12.5']]
    """
    out: dict[str, list[str]] = {}
    for c in group_cols:
        out[c] = [_param_text(v) for v in agg[c]]
    if "seeds" in agg.columns:
        out["seeds"] = [format_number(v) for v in agg["seeds"]]
    seen: set[str] = set()
    for col, header, _ in SUMMARY_METRICS:
        if col not in agg.columns or header in seen or agg[col].isna().all():
            continue
        if col in _ONLY_NONZERO and not agg[col].fillna(0).astype(bool).any():
            continue
        seen.add(header)
        ci = agg.get(col + ci_suffix) if col in _WITH_CI else None
        cells = []
        for i, v in enumerate(agg[col]):
            text = format_number(v)
            if ci is not None and math.isfinite(float(ci.iloc[i])) and text != "-":
                text += f" ± {format_number(float(ci.iloc[i]))}"
            cells.append(text)
        out[header] = cells
    return pd.DataFrame(out)


#: Definitions of the columns a summary may have besides the metrics.
_OTHER_COLUMNS = {
    "arch": "architecture (fabric preset)",
    "seeds": "seeds (runs) averaged in the row",
}


def column_definitions(columns: Sequence[str]) -> dict[str, str]:
    """What each column of a :func:`summary_view` table means (swept parameters are named
    by their configuration path).

    Examples
    --------
    >>> column_definitions(["arch", "JCT / Best"])["JCT / Best"][:40]
    'mean JCT over the mean JCT of Best on th'
    """
    metric = {header: text for _, header, text in SUMMARY_METRICS}
    out = {}
    for c in columns:
        out[c] = _OTHER_COLUMNS.get(c) or metric.get(c) or f"the swept parameter {c}"
    return out


def _param_text(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float | np.floating):
        return f"{float(v):g}"
    return str(v)


def markdown_table(table: pd.DataFrame) -> str:
    """GitHub Markdown of a table of strings (``|`` escaped), numbers right-aligned.

    Examples
    --------
    >>> print(markdown_table(pd.DataFrame({"a": ["x"], "b": ["1"]})))
    | a | b |
    |---|--:|
    | x | 1 |
    """

    def esc(s: Any) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    cols = [str(c) for c in table.columns]
    numeric = [
        all(_looks_numeric(str(v)) for v in table[c]) and len(table) > 0 for c in table.columns
    ]
    lines = [
        "| " + " | ".join(esc(c) for c in cols) + " |",
        "|" + "|".join("--:" if n else "---" for n in numeric) + "|",
    ]
    for row in table.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(esc(v) for v in row) + " |")
    return "\n".join(lines)


def _looks_numeric(s: str) -> bool:
    head = s.split(" ± ")[0].replace(",", "")
    if head == "-":
        return True
    try:
        float(head)
    except ValueError:
        return False
    return True


def to_csv(table: pd.DataFrame) -> str:
    """CSV text of a table with full-precision floats (``repr``), stable across runs.

    Examples
    --------
    >>> to_csv(pd.DataFrame({"a": [0.1], "b": ["x"]}))
    'a,b\\n0.1,x\\n'
    """
    return table.to_csv(index=False, lineterminator="\n")
