"""Report figures (matplotlib): CDFs, bars with confidence intervals, sweeps, queue depth.

The figures reproduce the LumosCore paper's §6 plots from a set of runs:

- Fig. 8(a): CDF of the per-job JRT slow-down ratio against Best, per architecture;
- Fig. 8(b): CDF of the per-job JWT slow-down against Best (seconds), per architecture;
- Fig. 8(c): mean JCT against cluster size, one line per architecture;
- Fig. 8(d) / Fig. 23: mean JCT against the GPU-failure rate / the workload level (any numeric
  parameter that varies is detected and gets its own sweep plot);
- Fig. 8(e): distribution (CDF) of the per-job contention level (Eq. 10), per architecture;
- Fig. 24 / Fig. 25: mean JCT per architecture for each value of a categorical parameter that
  varies (routing algorithm, rail-optimized wiring, queue policy, ...).

Figures are built on :class:`matplotlib.figure.Figure` objects (no global matplotlib state) and
saved by :func:`save_figure` as PNG and SVG through :mod:`lumoscore.figures`, atomically and
byte-for-byte reproducibly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from numpy.typing import NDArray

from lumoscore import figures
from lumoscore.report.metrics import (
    BASELINE_ARCH,
    finished_jobs,
    reference_values,
    run_signature,
)

__all__ = [
    "CONTENTION_BINS",
    "ReportFigure",
    "arch_order",
    "bar_figure",
    "binned_share_figure",
    "build_figures",
    "category_figure",
    "cdf_figure",
    "figure_bytes",
    "queue_figure",
    "save_figure",
    "sweep_figure",
]

#: Parameters never swept on an axis: the architecture is the hue, seeds are aggregated.
_NOT_AXES = ("arch", "seed", "key")

#: Friendly axis labels of well-known parameters.
_LABELS = {
    "gpus": "cluster size (GPUs)",
    "failures.rate_per_gpu_day": "GPU failure rate (per GPU-day)",
    "trace.load": "workload level (Eq. 9)",
    "trace.beta_s": "mean inter-arrival time (s)",
    "trace.jobs": "jobs in the trace",
    "routing": "routing algorithm",
    "rail_optimized": "rail-optimized pods",
    "queue": "queue policy",
    "eps": "max-min approximation eps",
}

#: Paper figure each swept parameter reproduces.
_PAPER = {
    "gpus": "Fig. 8(c)",
    "failures.rate_per_gpu_day": "Fig. 8(d)",
    "trace.load": "Fig. 23",
    "trace.beta_s": "Fig. 23",
    "routing": "Fig. 25",
    "rail_optimized": "Fig. 24",
}

#: Contention-level bins of the Fig. 8(e) bars: ``(upper edge, label)``, each bin
#: ``(previous edge, edge]`` (the first ``[1, 1.001]``: no contention, the research code rounds
#: ratios within 0.1 % of 1 to 1). The paper's own bin edges are not published.
CONTENTION_BINS: tuple[tuple[float, str], ...] = (
    (1.001, "1 (none)"),
    (1.05, "1-1.05"),
    (1.1, "1.05-1.1"),
    (1.2, "1.1-1.2"),
    (1.5, "1.2-1.5"),
    (math.inf, "> 1.5"),
)

#: What the error bars of the seed-averaged figures are.
_CI_TEXT = "95% confidence intervals with two or more seeds"

#: Resolution of the report's PNG figures.
_REPORT_DPI = 110
#: Formats of the report's figures.
_REPORT_FORMATS = ("png", "svg")


@dataclass(frozen=True)
class ReportFigure:
    """One report figure: file stem, title, caption (with the paper figure) and the figure."""

    stem: str
    title: str
    caption: str
    figure: Figure


def arch_order(archs: Sequence[str]) -> list[str]:
    """Architectures in report order: Best first, then alphabetical.

    Examples
    --------
    >>> arch_order(["clos-51.2T-3tier", "best", "lumoscore-51.2T-tau2"])
    ['best', 'clos-51.2T-3tier', 'lumoscore-51.2T-tau2']
    """
    uniq = sorted({str(a) for a in archs})
    return sorted(uniq, key=lambda a: (a != BASELINE_ARCH, a))


#: The Okabe-Ito palette: eight colours told apart with every common colour-vision deficiency.
OKABE_ITO: tuple[str, ...] = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442",
)  # fmt: skip
#: Line styles and markers cycled with the colours, so overlapping curves stay apart in print.
_LINESTYLES: tuple[str, ...] = ("-", "--", "-.", ":")
_MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")


def _colors(names: Sequence[str], given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Colors of ``names``: ``given`` where it has one, else the Okabe-Ito palette in order."""
    own = {a: OKABE_ITO[i % len(OKABE_ITO)] for i, a in enumerate(names)}
    return {a: (given[a] if given and a in given else own[a]) for a in names}


def _style(i: int) -> dict[str, Any]:
    """Line style and marker of the ``i``-th line of a figure."""
    return {"linestyle": _LINESTYLES[i % len(_LINESTYLES)], "marker": _MARKERS[i % len(_MARKERS)]}


def _new_figure(width_in: float = 6.0, height_in: float = 3.8) -> Figure:
    fig = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    return fig


def cdf_figure(
    samples: Mapping[str, NDArray[np.float64]],
    *,
    xlabel: str,
    title: str,
    log_x: bool = False,
    colors: Mapping[str, Any] | None = None,
) -> Figure:
    """Empirical CDFs, one step line per key of ``samples`` (non-finite values dropped).

    Examples
    --------
    >>> fig = cdf_figure({"a": np.array([1.0, 2.0]), "b": np.array([3.0])}, xlabel="x", title="t")
    >>> len(fig.axes[0].lines)
    2
    """
    fig = _new_figure()
    ax = fig.add_subplot()
    names = list(samples)
    colors = _colors(names, colors)
    for i, name in enumerate(names):
        x = np.asarray(samples[name], dtype=float)
        x = np.sort(x[np.isfinite(x)])
        if not x.size:
            continue
        y = np.arange(1, x.size + 1) / x.size
        ax.step(np.r_[x[0], x], np.r_[0.0, y], where="post", label=name, color=colors[name],
                markevery=max(x.size // 6, 1), markersize=4, **_style(i))  # fmt: skip
    if log_x:
        ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of jobs (CDF)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if names:
        ax.legend(fontsize=7, loc="lower right")
    return fig


def _ci(agg: pd.DataFrame, metric: str) -> NDArray[np.float64]:
    col = next((c for c in agg.columns if c.startswith(f"{metric}_ci")), None)
    if col is None:
        return np.full(len(agg), np.nan)
    return agg[col].to_numpy(dtype=float)


def bar_figure(
    agg: pd.DataFrame,
    metrics: Sequence[str] = ("mean_jrt_s", "mean_jwt_s", "mean_jct_s"),
    *,
    title: str,
    by: str = "arch",
    colors: Mapping[str, Any] | None = None,
) -> Figure:
    """Grouped bars: one group per metric, one bar per ``by`` value, CI error bars across seeds.

    ``agg`` is an :func:`~lumoscore.report.metrics.aggregate` table with one row per ``by``
    value; a ``<metric>_ci..`` column gives the error bar half-width (none drawn when NaN).

    Examples
    --------
    >>> agg = pd.DataFrame({"arch": ["a", "b"], "mean_jct_s": [1.0, 2.0],
    ...                     "mean_jct_s_ci95": [0.1, float("nan")]})
    >>> fig = bar_figure(agg, ["mean_jct_s"], title="t")
    >>> len(fig.axes[0].patches)
    2
    """
    fig = _new_figure(max(6.0, 1.2 + 0.5 * len(agg) * len(metrics)), 3.8)
    ax = fig.add_subplot()
    names = arch_order(agg[by]) if by == "arch" else [str(v) for v in agg[by]]
    colors = _colors(names, colors)
    rows = {str(v): i for i, v in enumerate(agg[by])}
    width = 0.8 / max(len(names), 1)
    x0 = np.arange(len(metrics), dtype=float)
    for j, name in enumerate(names):
        i = rows[name]
        vals = np.array([float(agg[m].iloc[i]) for m in metrics])
        err = np.array([_ci(agg, m)[i] for m in metrics])
        err = np.where(np.isfinite(err), err, 0.0)
        pos = x0 - 0.4 + width * (j + 0.5)
        ax.bar(pos, vals, width, label=name, color=colors[name])
        if np.any(err > 0):  # (one seed: no interval to draw)
            ax.errorbar(pos, vals, yerr=err, fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_xticks(x0)
    ax.set_xticklabels([_metric_label(m) for m in metrics], fontsize=8)
    ax.set_ylabel("seconds" if all(m.endswith("_s") for m in metrics) else "value")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def sweep_figure(
    agg: pd.DataFrame,
    x: str,
    metric: str = "mean_jct_s",
    *,
    title: str,
    by: str = "arch",
    colors: Mapping[str, Any] | None = None,
) -> Figure:
    """One line per ``by`` value of ``metric`` against the numeric parameter ``x``, CI bars.

    Lines are dodged sideways by up to a few percent of the axis so error bars stay visible;
    ``gpus`` uses a log2 axis.

    Examples
    --------
    >>> agg = pd.DataFrame({"arch": ["a", "a"], "gpus": [8, 16], "mean_jct_s": [1.0, 2.0]})
    >>> fig = sweep_figure(agg, "gpus", title="t")
    >>> fig.axes[0].get_xlabel()
    'cluster size (GPUs)'
    """
    fig = _new_figure()
    ax = fig.add_subplot()
    names = arch_order(agg[by]) if by == "arch" else sorted({str(v) for v in agg[by]})
    colors = _colors(names, colors)
    values = np.unique(agg[x].to_numpy(dtype=float))
    values = values[np.isfinite(values)]
    log_x = x == "gpus" and values.size > 0 and values.min() > 0
    span = float(values.max() - values.min()) if values.size else 0.0
    for j, name in enumerate(names):
        part = agg[agg[by].astype(str) == name].sort_values(x)
        xs = part[x].to_numpy(dtype=float)
        # Dodge the lines a little so that their error bars do not hide each other.
        shift = 0.02 * (j - (len(names) - 1) / 2)
        xs = xs * 2.0**shift if log_x else xs + shift * span
        ys = part[metric].to_numpy(dtype=float)
        err = _ci(part, metric)
        err = np.where(np.isfinite(err), err, 0.0)
        if np.any(err > 0):
            ax.errorbar(xs, ys, yerr=err, markersize=4, capsize=3, label=name,
                        color=colors[name], **_style(j))  # fmt: skip
        else:  # (one seed: no interval to draw)
            ax.plot(xs, ys, markersize=4, label=name, color=colors[name], **_style(j))
    if log_x:
        ax.set_xscale("log", base=2)
        ax.set_xticks(values)
        ax.set_xticklabels([f"{v:g}" for v in values])
        ax.minorticks_off()
    elif 0 < values.size <= 8:
        ax.set_xticks(values)
        ax.set_xticklabels([f"{v:g}" for v in values])
    ax.set_xlabel(_LABELS.get(x, x))
    ax.set_ylabel(_metric_label(metric))
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def binned_share_figure(
    samples: Mapping[str, NDArray[np.float64]],
    bins: Sequence[tuple[float, str]],
    *,
    title: str,
    legend_title: str,
) -> Figure:
    """Stacked horizontal bars: per key of ``samples``, the share of its (finite) values in
    each bin ``(previous edge, edge]`` of ``bins`` (``(edge, label)``, ascending; values at
    or below the first edge fall in the first bin).

    Examples
    --------
    >>> fig = binned_share_figure({"a": np.array([1.0, 1.3]), "b": np.array([2.0])},
    ...                           ((1.1, "low"), (np.inf, "high")), title="t", legend_title="x")
    >>> [round(float(p.get_width()), 2) for p in fig.axes[0].patches]
    [0.5, 0.0, 0.5, 1.0]
    """
    names = list(samples)
    fig = _new_figure(6.4, 1.6 + 0.3 * max(len(names), 1))
    ax = fig.add_subplot()
    edges = np.array([e for e, _ in bins], dtype=float)
    shares = np.zeros((len(names), len(bins)))
    for i, name in enumerate(names):
        x = np.asarray(samples[name], dtype=float)
        x = x[np.isfinite(x)]
        if x.size:
            k = np.minimum(np.searchsorted(edges, x, side="left"), len(bins) - 1)
            shares[i] = np.bincount(k, minlength=len(bins)) / x.size
    y = np.arange(len(names))[::-1]
    left = np.zeros(len(names))
    cmap = matplotlib.colormaps["YlOrRd"]
    for j, (_, label) in enumerate(bins):
        color = cmap(0.15 + 0.8 * j / max(len(bins) - 1, 1))
        ax.barh(y, shares[:, j], left=left, color=color, label=label, edgecolor="white")
        left += shares[:, j]
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("share of jobs")
    ax.set_title(title, fontsize=10)
    fig.legend(title=legend_title, fontsize=7, title_fontsize=7, ncols=min(len(bins), 6),
               loc="outside lower center")  # fmt: skip
    return fig


def category_figure(
    agg: pd.DataFrame,
    category: str,
    metric: str = "mean_jct_s",
    *,
    title: str,
    by: str = "arch",
    colors: Mapping[str, Any] | None = None,
) -> Figure:
    """Grouped bars of ``metric``: one group per value of ``category``, one bar per ``by``.

    Examples
    --------
    >>> agg = pd.DataFrame({"arch": ["a", "a", "b"], "routing": ["ecmp", "planned", "ecmp"],
    ...                     "mean_jct_s": [1.0, 2.0, 3.0]})
    >>> len(category_figure(agg, "routing", title="t").axes[0].patches)
    3
    """
    cats = sorted({_label_value(v) for v in agg[category]})
    fig = _new_figure(max(6.0, 1.2 + 0.5 * len(cats) * agg[by].nunique()), 3.8)
    ax = fig.add_subplot()
    names = arch_order(agg[by]) if by == "arch" else sorted({str(v) for v in agg[by]})
    colors = _colors(names, colors)
    width = 0.8 / max(len(names), 1)
    x0 = np.arange(len(cats), dtype=float)
    cat_of = agg[category].map(_label_value)
    for j, name in enumerate(names):
        part = agg[agg[by].astype(str) == name]
        vals = np.full(len(cats), np.nan)
        err = np.zeros(len(cats))
        ci = _ci(part, metric)
        for i, c in enumerate(cats):
            hit = np.flatnonzero((cat_of[part.index] == c).to_numpy())
            if hit.size:
                vals[i] = float(part[metric].iloc[hit[0]])
                err[i] = ci[hit[0]] if math.isfinite(ci[hit[0]]) else 0.0
        ok = np.isfinite(vals)
        pos = x0 - 0.4 + width * (j + 0.5)
        ax.bar(pos[ok], vals[ok], width, label=name, color=colors[name])
        if np.any(err[ok] > 0):  # (one seed: no interval to draw)
            ax.errorbar(
                pos[ok], vals[ok], yerr=err[ok], fmt="none", ecolor="black", capsize=3, linewidth=1
            )
    ax.set_xticks(x0)
    ax.set_xticklabels(cats, fontsize=8)
    ax.set_xlabel(_LABELS.get(category, category))
    ax.set_ylabel(_metric_label(metric))
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def queue_figure(
    queues: Mapping[str, pd.DataFrame],
    *,
    title: str,
    colors: Mapping[str, Any] | None = None,
) -> Figure:
    """Queue depth (waiting jobs) over time, one step line per key of ``queues``.

    Examples
    --------
    >>> q = pd.DataFrame({"time_s": [0.0, 5.0], "waiting": [1, 0]})
    >>> len(queue_figure({"a": q}, title="t").axes[0].lines)
    1
    """
    fig = _new_figure()
    ax = fig.add_subplot()
    names = list(queues)
    colors = _colors(names, colors)
    for name in names:
        q = queues[name].sort_values("time_s", kind="stable")
        if q.empty:
            continue
        ax.step(
            q["time_s"].to_numpy(dtype=float) / 3600.0,
            q["waiting"].to_numpy(dtype=float),
            where="post",
            label=name,
            color=colors[name],
            linewidth=1,
        )
    ax.set_xlabel("time (h)")
    ax.set_ylabel("jobs waiting")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if names:
        ax.legend(fontsize=7)
    return fig


def _metric_label(metric: str) -> str:
    m = re.match(r"^(mean|p\d+)_(jrt|jwt|jct)_s$", metric)
    if m:
        stat = "mean" if m.group(1) == "mean" else m.group(1)
        return f"{stat} {m.group(2).upper()} (s)"
    return metric.replace("_", " ")


def _label_value(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "default"
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    return str(value)


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """The figure rendered as ``png`` or ``svg`` bytes at the report's resolution, reproducibly.

    See :func:`lumoscore.figures.figure_bytes` (no dates, fixed ids, frozen layout).

    Examples
    --------
    >>> fig = cdf_figure({"a": np.array([1.0])}, xlabel="x", title="t")
    >>> figure_bytes(fig, "svg") == figure_bytes(fig, "svg")
    True
    """
    if fmt not in _REPORT_FORMATS:
        raise ValueError(f"figure format must be one of {list(_REPORT_FORMATS)}, got {fmt!r}")
    return figures.figure_bytes(fig, fmt, dpi=_REPORT_DPI)


def save_figure(fig: Figure, out_dir: Path, stem: str) -> tuple[Path, Path]:
    """Write ``<stem>.png`` and ``<stem>.svg`` into ``out_dir`` atomically; return both paths."""
    png, svg = figures.save_figures(fig, out_dir, stem, formats=_REPORT_FORMATS, dpi=_REPORT_DPI)
    return png, svg


def _unset(col: pd.Series) -> NDArray[np.bool_]:
    return np.array(
        [v is None or (isinstance(v, float | np.floating) and math.isnan(v)) for v in col],
        dtype=bool,
    )


def _not_applicable(table: pd.DataFrame, param: str) -> set[str]:
    """Architectures that leave ``param`` unset in every run (e.g. ``routing`` for Best)."""
    if "arch" not in table.columns:
        return set()
    unset = pd.Series(_unset(table[param]), index=table.index)
    per_arch = unset.groupby(table["arch"].astype(str)).all()
    return {str(a) for a, v in per_arch.items() if v}


def _slice(table: pd.DataFrame, ref: Mapping[str, Any], free: Sequence[str] = ()) -> pd.DataFrame:
    """Rows of ``table`` at the reference value of every parameter in ``ref`` but ``free``.

    An architecture that leaves a parameter unset in all its runs passes on that parameter.
    """
    fixed = [p for p in ref if p not in free and p in table.columns]
    keep = np.ones(len(table), dtype=bool)
    for p in fixed:
        want = run_signature(pd.DataFrame([{p: ref[p]}]), [p]).iloc[0]
        hit = (run_signature(table, [p]) == want).to_numpy()
        na = _not_applicable(table, p)
        if na:
            hit = hit | table["arch"].astype(str).isin(na).to_numpy()
        keep &= hit
    return table[keep]


def _spread_not_applicable(table: pd.DataFrame, param: str) -> pd.DataFrame:
    """Repeat the rows of architectures without ``param`` for every value the others take."""
    na = _not_applicable(table, param)
    if not na:
        return table
    is_na = table["arch"].astype(str).isin(na)
    rest = table[~is_na]
    values = list(dict.fromkeys(rest[param]))
    copies = [table[is_na].assign(**{param: v}) for v in values]
    return pd.concat([rest, *copies], ignore_index=True)


def _reference(runs: pd.DataFrame, params: Sequence[str]) -> dict[str, Any]:
    """Reference values over the runs of the architectures each parameter applies to."""
    out: dict[str, Any] = {}
    for p in params:
        na = _not_applicable(runs, p)
        rows = runs[~runs["arch"].astype(str).isin(na)] if na else runs
        out.update(reference_values(rows, [p]))
    return out


def _slice_text(ref: Mapping[str, Any], free: Sequence[str] = ()) -> str:
    parts = [f"{_LABELS.get(p, p)} = {_label_value(v)}" for p, v in ref.items() if p not in free]
    return ("; ".join(parts) + ".") if parts else ""


def _samples(
    table: pd.DataFrame, column: str, archs: Sequence[str]
) -> dict[str, NDArray[np.float64]]:
    out = {}
    for a in archs:
        x = table.loc[table["arch"].astype(str) == a, column].to_numpy(dtype=float)
        if x.size:
            out[a] = x
    return out


def build_figures(
    runs: pd.DataFrame,
    agg: pd.DataFrame,
    jobs: Mapping[str, pd.DataFrame],
    vs_best: pd.DataFrame,
    queues: Mapping[str, pd.DataFrame] | None = None,
    *,
    params: Sequence[str],
    reference: Mapping[str, Any] | None = None,
) -> list[ReportFigure]:
    """Every figure the runs support, in report order.

    ``runs`` is the per-run table (:func:`~lumoscore.report.metrics.run_table`), ``agg`` its
    seed aggregate, ``vs_best`` the :func:`~lumoscore.report.metrics.compare_to_baseline`
    table, ``params`` the varying parameters other than ``arch`` and ``seed``. Plots that do not
    sweep a parameter use the runs at the reference value of every varying parameter
    (:func:`~lumoscore.report.metrics.reference_values`, or ``reference``); a sweep plot fixes
    all parameters but its own.
    """
    queues = queues or {}
    axes = [p for p in params if p not in _NOT_AXES]
    ref = _reference(runs, axes)
    ref.update({k: v for k, v in (reference or {}).items() if k in axes})
    where = _slice_text(ref)
    archs = arch_order(runs["arch"]) if "arch" in runs.columns else []
    palette = _colors(archs)
    figs: list[ReportFigure] = []
    ref_runs = _slice(runs, ref)
    ref_keys = set(ref_runs["key"].astype(str))
    seeds = sorted(runs["seed"].unique().tolist()) if "seed" in runs.columns else []
    seed_text = f" Jobs of {len(seeds)} seed(s) pooled." if seeds else ""

    # Fig. 8(a)(b): per-job slow-down against Best (or against the ideal run time).
    vb = vs_best[vs_best["key"].astype(str).isin(ref_keys)] if not vs_best.empty else vs_best
    others = [a for a in archs if a != BASELINE_ARCH]
    if not vb.empty:
        figs.append(
            ReportFigure(
                "jrt_slowdown_cdf",
                "JRT slow-down ratio against Best",
                "Fig. 8(a): CDF over jobs of (JRT - JRT_best) / JRT_best, the same job of the "
                f"same trace on Best. {where}{seed_text}",
                cdf_figure(
                    _samples(vb, "jrt_slowdown_vs_best", others),
                    xlabel="(JRT - JRT_best) / JRT_best",
                    title="JRT slow-down ratio against Best",
                    colors=palette,
                ),
            )
        )
        figs.append(
            ReportFigure(
                "jwt_slowdown_cdf",
                "JWT slow-down against Best",
                "Fig. 8(b): CDF over jobs of JWT - JWT_best (s), the same job of the same "
                f"trace on Best. {where}{seed_text}",
                cdf_figure(
                    _samples(vb, "jwt_delta_vs_best_s", others),
                    xlabel="JWT - JWT_best (s)",
                    title="JWT slow-down against Best",
                    colors=palette,
                ),
            )
        )
    per_job = _pooled_jobs(jobs, ref_runs)
    if not per_job.empty:
        if vb.empty:
            figs.append(
                ReportFigure(
                    "jrt_slowdown_cdf",
                    "JRT slow-down against the ideal run time",
                    "Like Fig. 8(a), without Best runs: CDF over jobs of JRT / ideal JRT - 1 "
                    f"(ideal = the trace's contention-free run time). {where}{seed_text}",
                    cdf_figure(
                        _samples(per_job, "jrt_slowdown", archs),
                        xlabel="JRT / ideal JRT - 1",
                        title="JRT slow-down against the ideal run time",
                        colors=palette,
                    ),
                )
            )
            figs.append(
                ReportFigure(
                    "jwt_cdf",
                    "Job waiting time",
                    f"Like Fig. 8(b), without Best runs: CDF over jobs of JWT (s). {where}"
                    f"{seed_text}",
                    cdf_figure(
                        _samples(per_job, "jwt_s", archs),
                        xlabel="JWT (s)",
                        title="Job waiting time",
                        colors=palette,
                    ),
                )
            )
        if "contention_level" in per_job.columns:
            figs.append(
                ReportFigure(
                    "contention_cdf",
                    "Contention level",
                    "Fig. 8(e): CDF over jobs of the contention level (Eq. 10: actual over "
                    f"contention-free communication time; 1 = no contention). {where}{seed_text}",
                    cdf_figure(
                        _samples(per_job, "contention_level", archs),
                        xlabel="contention level (Eq. 10)",
                        title="Contention level",
                        colors=palette,
                    ),
                )
            )
            figs.append(
                ReportFigure(
                    "contention_bins",
                    "Share of jobs per contention level",
                    "Fig. 8(e) as the paper draws it: per architecture, the share of jobs in "
                    "each contention-level bin (our bins: the paper's edges are not "
                    f"published). {where}{seed_text}",
                    binned_share_figure(
                        _samples(per_job, "contention_level", archs),
                        CONTENTION_BINS,
                        title="Share of jobs per contention level (Eq. 10)",
                        legend_title="contention level",
                    ),
                )
            )
    ref_agg = _slice(agg, ref)
    bar_metrics = [m for m in ("mean_jrt_s", "mean_jwt_s", "mean_jct_s") if m in agg.columns]
    if not ref_agg.empty and "arch" in ref_agg.columns and bar_metrics:
        figs.append(
            ReportFigure(
                "jct_bars",
                "Mean JRT, JWT and JCT per architecture",
                "Mean over jobs, averaged over seeds; error bars (with two or more seeds): 95% "
                f"confidence interval across seeds (Student t). {where}",
                bar_figure(
                    ref_agg,
                    bar_metrics,
                    title="Mean JRT / JWT / JCT per architecture",
                    colors=palette,
                ),
            )
        )
    for p in axes if "mean_jct_s" in agg.columns else ():
        part = _slice(agg, ref, free=[p])
        if part.empty or run_signature(part, [p]).nunique() < 2:
            continue
        paper = _PAPER.get(p)
        lead = f"{paper}: " if paper else ""
        others_text = _slice_text(ref, free=[p])
        stem = "jct_vs_" + re.sub(r"[^0-9A-Za-z]+", "_", p).strip("_")
        if _is_numeric_param(agg[p]):
            fig = sweep_figure(
                part, p, title=f"Mean JCT against {_LABELS.get(p, p)}", colors=palette
            )
            kind = "line"
        else:
            part = _spread_not_applicable(part, p)
            fig = category_figure(
                part, p, title=f"Mean JCT per {_LABELS.get(p, p)}", colors=palette
            )
            kind = "bars"
        figs.append(
            ReportFigure(
                stem,
                f"Mean JCT against {_LABELS.get(p, p)}",
                f"{lead}mean JCT ({kind} per architecture) against {_LABELS.get(p, p)}, "
                f"averaged over seeds ({_CI_TEXT}). {others_text}",
                fig,
            )
        )
        if p == "gpus" and kind == "line" and "mean_jrt_s" in part.columns:
            figs.append(
                ReportFigure(
                    "jrt_vs_gpus",
                    "Mean JRT against cluster size",
                    "Fig. 8(c) (the paper's caption: Avg. JRT under different cluster size): "
                    "mean JRT per architecture against cluster size, averaged over seeds "
                    f"({_CI_TEXT}). {others_text}",
                    sweep_figure(
                        part, p, "mean_jrt_s", title="Mean JRT against cluster size",
                        colors=palette,
                    ),
                )
            )  # fmt: skip
    qs = _reference_queues(queues, ref_runs, archs)
    if qs:
        figs.append(
            ReportFigure(
                "queue_depth",
                "Queue depth over time",
                f"Jobs waiting over time, first seed of each architecture. {where}",
                queue_figure(qs, title="Queue depth over time", colors=palette),
            )
        )
    return figs


def _is_numeric_param(col: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(col):
        return False
    if pd.api.types.is_numeric_dtype(col):
        return True
    vals = [v for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return bool(vals) and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in vals
    )


def _pooled_jobs(jobs: Mapping[str, pd.DataFrame], runs: pd.DataFrame) -> pd.DataFrame:
    frames = []
    for key, arch in zip(runs["key"].astype(str), runs["arch"].astype(str), strict=True):
        if key in jobs:
            frames.append(finished_jobs(jobs[key]).assign(arch=arch, key=key))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _reference_queues(
    queues: Mapping[str, pd.DataFrame], runs: pd.DataFrame, archs: Sequence[str]
) -> dict[str, pd.DataFrame]:
    out: dict[str, pd.DataFrame] = {}
    if not queues or "arch" not in runs.columns:
        return out
    order = runs.sort_values(["seed", "key"] if "seed" in runs.columns else ["key"])
    for a in archs:
        for key in order.loc[order["arch"].astype(str) == a, "key"].astype(str):
            if key in queues and not queues[key].empty:
                out[a] = queues[key]
                break
    return out
