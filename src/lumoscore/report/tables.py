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

__all__ = ["SUMMARY_METRICS", "format_number", "markdown_table", "summary_view", "to_csv"]

#: Columns of the readable summary: (aggregate column, header). Absent columns are skipped;
#: JRT/JWT/JCT means carry their 95% confidence interval across seeds as "mean ± ci".
SUMMARY_METRICS: tuple[tuple[str, str], ...] = (
    ("jobs", "jobs"),
    ("rejected", "rejected"),
    ("mean_jrt_s", "mean JRT (s)"),
    ("mean_jwt_s", "mean JWT (s)"),
    ("mean_jct_s", "mean JCT (s)"),
    ("p50_jct_s", "p50 JCT (s)"),
    ("p99_jct_s", "p99 JCT (s)"),
    ("mean_jrt_slowdown_vs_best", "JRT slow-down vs Best"),
    ("mean_jwt_delta_vs_best_s", "JWT - JWT_best (s)"),
    ("mean_jct_vs_best", "JCT / JCT_best"),
    ("mean_jrt_slowdown", "JRT / ideal - 1"),
    ("mean_contention_level", "contention level"),
    ("jct_std_s", "JCT std, equal jobs (s)"),
    ("queue_mean_waiting", "mean queue"),
    ("queue_max_waiting", "max queue"),
    ("stats.reconfigurations", "reconfigurations"),
    ("fabric.rewired_circuits", "rewired circuits"),
    ("fabric.rewired_share", "rewired share"),
    ("stats.rewired_share", "rewired share"),
    ("fabric.refusals", "placement refusals"),
    ("stats.fragmentation", "fragmentation"),
    ("fabric.fragmentation", "fragmentation"),
    ("makespan_s", "makespan (s)"),
)

_WITH_CI = ("mean_jrt_s", "mean_jwt_s", "mean_jct_s")


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
    for col, header in SUMMARY_METRICS:
        if col not in agg.columns or header in seen or agg[col].isna().all():
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
