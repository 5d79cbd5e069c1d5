"""The report pipeline: runs -> tables and figures -> files.

:func:`build_report` is pure (tables and matplotlib figures from a :class:`RunSet`);
:func:`save_report` writes ``summary.md``, ``summary.csv``, ``runs.csv``, one ``<figure>.png``
and ``<figure>.svg`` per figure and ``report.html``, each atomically; :func:`write_report`
does both for a result directory.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import os
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lumoscore.errors import ConfigError
from lumoscore.fileio import atomic_write_files
from lumoscore.pools import worker_pool
from lumoscore.report.data import RunSet, load_runs
from lumoscore.report.html import HtmlFigure, render_html
from lumoscore.report.metrics import (
    aggregate,
    compare_to_baseline,
    parameter_columns,
    run_table,
    varying_parameters,
)
from lumoscore.report.plots import ReportFigure, arch_order, build_figures, figure_bytes
from lumoscore.report.tables import column_definitions, markdown_table, summary_view, to_csv
from lumoscore.sim.results import TIMING_STATS

__all__ = ["Report", "build_report", "render_figures", "save_report", "write_report"]


@dataclass(frozen=True)
class Report:
    """Everything a report shows, before it is written.

    ``runs``: one row per run (index plus stability, queue, Best comparison and run
    statistics); ``aggregate``: mean and 95% CI over seeds per parameter combination;
    ``summary``: the readable table (strings); ``vs_best``: per-job comparison with Best;
    ``header``: the facts at the top of the page; ``varying``: swept parameters (not seed).
    """

    name: str
    header: dict[str, str]
    runs: pd.DataFrame
    aggregate: pd.DataFrame
    summary: pd.DataFrame
    vs_best: pd.DataFrame
    figures: list[ReportFigure]
    varying: list[str]


def _values_text(values: Sequence[Any]) -> str:
    out = []
    for v in values:
        if isinstance(v, float | np.floating):
            out.append("-" if math.isnan(v) else f"{float(v):g}")
        elif isinstance(v, np.integer):
            out.append(str(int(v)))
        else:
            out.append("-" if v is None else str(v))
    return ", ".join(out)


def _unique(col: pd.Series) -> list[Any]:
    """Distinct values, unset (None/NaN) first, then numbers ascending or strings sorted."""
    vals = list(dict.fromkeys(v.item() if isinstance(v, np.generic) else v for v in col))
    unset = [v for v in vals if not _is_set(v)][:1]
    rest = [v for v in vals if _is_set(v)]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in rest):
        return unset + sorted(rest)
    return unset + sorted(rest, key=str)


def build_report(runs: RunSet, *, reference: Mapping[str, Any] | None = None) -> Report:
    """Tables and figures of a set of runs (pure: nothing is written).

    ``reference`` overrides the value at which non-swept plots fix each swept parameter
    (default: :func:`~lumoscore.report.metrics.reference_values`).
    """
    index = runs.index
    if index.empty:
        raise ConfigError("report: no runs to report")
    if "arch" not in index.columns:
        raise ConfigError(
            f"report: the run index has no 'arch' column; columns: {sorted(index.columns)}"
        )
    params = parameter_columns(index)
    vs_best = compare_to_baseline(index, runs.jobs, params=params)
    table = run_table(index, runs.jobs, runs.queues, runs.infos, vs_best=vs_best)
    group_cols = [c for c in params if c != "seed"]
    agg = aggregate(table, by=group_cols)
    varying = [p for p in varying_parameters(index, params) if p not in ("arch", "seed")]
    shown = ["arch", *varying]
    agg = _arch_first(agg, shown)
    summary = summary_view(agg, shown)
    figures = build_figures(
        table, agg, runs.jobs, vs_best, runs.queues, params=varying, reference=reference
    )
    header = {
        "experiment": runs.name,
        "architectures": ", ".join(arch_order(index["arch"])),
    }
    if "gpus" in index.columns:
        header["cluster sizes (GPUs)"] = _values_text(_unique(index["gpus"]))
    if "seed" in index.columns:
        header["seeds"] = _values_text(_unique(index["seed"]))
    header["runs"] = str(len(index))
    if runs.unstored:
        n = len(runs.unstored)
        header["runs"] += (
            f" (part of the experiment: {n} of its {n + len(index)} runs are not stored, e.g. "
            f"{runs.unstored[0]})"
        )
    for p in varying:
        if p != "gpus":
            header[f"swept: {p}"] = _values_text(_unique(index[p]))
    fixed = [p for p in params if p not in varying and p not in ("arch", "seed", "gpus")]
    fixed_text = [
        f"{p}={_values_text([index[p].iloc[0]])}" for p in fixed if _is_set(index[p].iloc[0])
    ]
    if fixed_text:
        header["fixed parameters"] = "; ".join(fixed_text)
    header["baseline"] = (
        f"Best (jobs compared with Best in {vs_best['key'].nunique()} run(s))"
        if not vs_best.empty
        else "no Best runs on the same traces: slow-downs are against the ideal run time"
    )
    return Report(runs.name, header, table, agg, summary, vs_best, figures, varying)


def _is_set(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _arch_first(agg: pd.DataFrame, shown: Sequence[str]) -> pd.DataFrame:
    """Sort the aggregate rows by the shown parameters, architectures in report order."""
    order = {a: i for i, a in enumerate(arch_order(agg["arch"]))}
    keys = agg[list(shown)].copy()
    keys["arch"] = keys["arch"].astype(str).map(order)
    for c in shown[1:]:
        col = keys[c]
        if not pd.api.types.is_numeric_dtype(col):
            keys[c] = col.map(lambda v: "" if not _is_set(v) else str(v))
    pos = keys.sort_values(list(shown), kind="stable", na_position="first").index
    return agg.loc[pos].reset_index(drop=True)


def _markdown(report: Report, summary: pd.DataFrame, definitions: Mapping[str, str]) -> str:
    lines = [f"# {report.name}", ""]
    lines += [f"- **{k}**: {v}" for k, v in report.header.items()]
    lines += [
        "",
        "## Summary",
        "",
        "Means over jobs, averaged over seeds; `±` is the 95% confidence interval across seeds "
        "(Student t). Full precision: `summary.csv` (per parameter combination) and `runs.csv` "
        "(per run).",
        "",
        markdown_table(summary),
        "",
        "Columns:",
        "",
        *(f"- **{k}**: {v}" for k, v in definitions.items()),
        "",
    ]
    if report.figures:
        lines += ["## Figures", ""]
        for f in report.figures:
            lines += [f"### {f.title}", "", f"![{f.title}]({f.stem}.png)", "", f.caption, ""]
    return "\n".join(lines)


#: Columns holding wall-clock times (``wall_s``, ``stats.plans_s`` and their aggregates).
_TIMING = re.compile(rf"(^|\.)({'|'.join(TIMING_STATS)})(_ci95)?$")


def _is_timing(name: str) -> bool:
    """Whether a column holds a wall-clock time.

    Examples
    --------
    >>> [_is_timing(c) for c in ("wall_s", "wall_s_ci95", "stats.plans_s", "mean_jct_s")]
    [True, True, True, False]
    """
    return bool(_TIMING.search(name))


def _without_timings(table: pd.DataFrame) -> pd.DataFrame:
    return table[[c for c in table.columns if not _is_timing(str(c))]]


def _png_svg(fig: Any) -> tuple[bytes, bytes]:
    """The figure's PNG and SVG bytes (:func:`~lumoscore.report.plots.figure_bytes`)."""
    return figure_bytes(fig, "png"), figure_bytes(fig, "svg")


def _png_svg_of(data: bytes) -> tuple[bytes, bytes]:
    """:func:`_png_svg` of a pickled figure."""
    return _png_svg(pickle.loads(data))


def _pickled(fig: Any) -> bytes | None:
    """The figure pickled, or None (a figure drawn before keeps its renderer, which does not
    pickle)."""
    try:
        return pickle.dumps(fig)
    except (AttributeError, TypeError, pickle.PicklingError):
        return None


def render_figures(figs: Sequence[ReportFigure]) -> list[tuple[bytes, bytes]]:
    """Every figure's ``(png, svg)`` bytes, in order: with several figures and cores, a
    second process renders every other figure meanwhile (the same bytes:
    :func:`~lumoscore.figures.figure_bytes` is reproducible across processes).

    Examples
    --------
    >>> from lumoscore.report.plots import cdf_figure
    >>> figs = [ReportFigure(s, s, "", cdf_figure({"x": np.array([1.0])}, xlabel="x", title=s))
    ...         for s in ("a", "b")]
    >>> png, svg = render_figures(figs)[1]
    >>> png[:4], svg.startswith(b"<?xml")
    (b'\x89PNG', True)
    """
    if len(figs) < 2 or (os.cpu_count() or 1) < 2:
        return [_png_svg(f.figure) for f in figs]
    # (pickled before any is drawn here; one that does not pickle is drawn here too)
    sent = {i: _pickled(f.figure) for i, f in enumerate(figs) if i % 2}
    try:
        with worker_pool(1) as pool:  # (Ctrl-C: the drawing process is stopped)
            away = {i: pool.submit(_png_svg_of, b) for i, b in sent.items() if b is not None}
            here = {i: _png_svg(f.figure) for i, f in enumerate(figs) if i not in away}
            return [here[i] if i in here else away[i].result() for i in range(len(figs))]
    except (OSError, cf.process.BrokenProcessPool):  # no second process here: draw them all
        return [_png_svg(f.figure) for f in figs]


def save_report(report: Report, out_dir: str | Path) -> dict[str, Path]:
    """Write the report files into ``out_dir`` (created if missing); return them by name.

    Names: ``summary.md``, ``summary.csv``, ``runs.csv``, ``<stem>.png`` and ``<stem>.svg`` for
    every figure, ``report.html`` and ``timings.csv`` (the runs' wall-clock times, kept out of
    every other file). The files are written together
    (:func:`~lumoscore.fileio.atomic_write_files`: one that cannot be written leaves every one
    as it was); all but ``timings.csv`` are byte-identical for identical runs.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str | bytes] = {}
    html_figs = []
    for f, (png, svg) in zip(report.figures, render_figures(report.figures), strict=True):
        files[f"{f.stem}.png"] = png
        files[f"{f.stem}.svg"] = svg
        html_figs.append(HtmlFigure(f.stem, f.title, f.caption, png))
    # wall-clock times differ between identical runs: they go to timings.csv only, so that
    # every other file is byte-identical for identical input
    timing = [c for c in report.runs.columns if _is_timing(str(c))]
    ids = [c for c in ("key", "arch", "gpus", "seed") if c in report.runs.columns]
    files["timings.csv"] = to_csv(report.runs[ids + timing])
    summary, runs = _without_timings(report.summary), _without_timings(report.runs)
    definitions = column_definitions(summary.columns)
    files["summary.csv"] = to_csv(_without_timings(report.aggregate))
    files["runs.csv"] = to_csv(runs)
    files["summary.md"] = _markdown(report, summary, definitions) + "\n"
    files["report.html"] = render_html(
        f"LumosCore report: {report.name}",
        report.header,
        summary,
        html_figs,
        extra_tables={"Runs": runs},
        definitions=definitions,
    )
    atomic_write_files({out / name: data for name, data in files.items()})
    return {name: out / name for name in files}


def write_report(store_dir: Path, out_dir: Path | None = None) -> Path:
    """Write the report of the result directory ``store_dir``; return the HTML page's path.

    ``out_dir`` defaults to ``store_dir / "report"``. Raises
    :class:`~lumoscore.errors.ConfigError` naming the path when ``store_dir`` is missing or holds
    no finished run.
    """
    store = Path(store_dir)
    report = build_report(load_runs(store))
    paths = save_report(report, Path(out_dir) if out_dir is not None else store / "report")
    return paths["report.html"]
