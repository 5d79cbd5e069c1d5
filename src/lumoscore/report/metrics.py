"""Metrics of a set of simulation runs: comparison with Best, seed aggregates, stability, queues.

Everything here is a pure function over plain pandas tables:

- the *index*: one row per finished run, a ``key`` column, parameter columns (the flattened
  run config: ``arch``, ``gpus``, ``seed``, ``trace.load``, ...) and summary columns
  (``mean_jct_s``, ``p99_jrt_s``, ...; see :func:`is_summary_column`);
- per-job tables (``lumoscore.sim.results``: ``job_id, arrival_s, start_s, finish_s, jrt_s,
  jwt_s, jct_s, gpus, model, ..., rejected``) by run key;
- queue tables (``time_s, waiting``) by run key.

Definitions follow the LumosCore paper, §6.2: JRT = finish - start, JWT = start - arrival,
JCT = finish - arrival; the JRT slow-down ratio against Best is ``(JRT - JRT_best) / JRT_best``
(Fig. 8(a)) and the JWT slow-down is ``JWT - JWT_best`` in seconds (Fig. 8(b)), both for the
same job of the same trace run on the Best architecture.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from lumoscore.errors import ConfigError
from lumoscore.sim.results import STABILITY_COLUMNS, finished_jobs, queue_stats, stability

__all__ = [
    "BASELINE_ARCH",
    "STABILITY_COLUMNS",
    "aggregate",
    "compare_to_baseline",
    "finished_jobs",
    "is_summary_column",
    "parameter_columns",
    "queue_stats",
    "reference_values",
    "run_extras",
    "run_signature",
    "run_table",
    "stability",
    "varying_parameters",
]

#: Architecture name of the ideal reference network (LumosCore §6.2).
BASELINE_ARCH = "best"


_SUMMARY_NAMES = frozenset(
    {
        "jobs",
        "rejected",
        "unfinished",
        "makespan_s",
        "wall_s",
        "jct_std_s",
        "jrt_std_s",
        "stability_groups",
        "queue_mean_waiting",
        "queue_max_waiting",
        "jct_over_best",
        "jrt_over_best",
        "jwt_over_best",
        # run counters and per-run metrics of lumoscore.sim.results.summarize
        "reconfigurations",
        "failures",
        "hard_failures",
        "fragmentation_blocks",
        "fragmented_jobs",
        "restarts",
        "lost_s",
    }
)
_SUMMARY_PATTERN = re.compile(r"^(mean|p\d+|max|min|std)_")
#: Run statistics worth a column when the simulator or fabric reports them.
_STAT_PATTERN = re.compile(r"fragment|reconfig|rewired|refusal|reroute|admission")


def is_summary_column(name: str) -> bool:
    """Whether an index column holds a run result rather than a run parameter.

    Results are ``jobs``, ``rejected``, ``makespan_s``, ``wall_s``, the columns this module
    adds (stability, queue, run statistics) and every ``mean_*``, ``pNN_*``, ``max_*``,
    ``min_*``, ``std_*`` column. ``eps`` is a parameter (it is set in the config).

    Examples
    --------
    >>> [is_summary_column(c) for c in ("mean_jct_s", "p99_jrt_s", "gpus", "trace.load")]
    [True, True, False, False]
    """
    return (
        name in _SUMMARY_NAMES
        or bool(_SUMMARY_PATTERN.match(name))
        or name.startswith(("stats.", "fabric."))
    )


def parameter_columns(index: pd.DataFrame) -> list[str]:
    """The parameter columns of an index: every column except ``key`` and summary columns.

    Examples
    --------
    >>> idx = pd.DataFrame({"key": ["a"], "arch": ["best"], "seed": [0], "mean_jct_s": [1.0]})
    >>> parameter_columns(idx)
    ['arch', 'seed']
    """
    return [c for c in index.columns if c != "key" and not is_summary_column(str(c))]


def _canonical(value: Any) -> Any:
    """A JSON-able, hashable stand-in for a parameter value (NaN and None are the same)."""
    if value is None:
        return None
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, list | tuple | np.ndarray):
        return [_canonical(v) for v in value]
    return str(value)


def run_signature(index: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """One string per run identifying its values of ``columns`` (NaN and None compare equal).

    Examples
    --------
    >>> idx = pd.DataFrame({"gpus": [256, 256], "load": [None, float("nan")]})
    >>> sig = run_signature(idx, ["gpus", "load"])
    >>> bool(sig.iloc[0] == sig.iloc[1])
    True
    """
    cols = list(columns)
    rows = index[cols].itertuples(index=False, name=None) if cols else [()] * len(index)
    return pd.Series(
        [json.dumps([_canonical(v) for v in row]) for row in rows],
        index=index.index,
        dtype=object,
    )


def varying_parameters(index: pd.DataFrame, params: Sequence[str] | None = None) -> list[str]:
    """The parameters that take more than one value in the index (NaN counts as a value).

    Examples
    --------
    >>> idx = pd.DataFrame({"arch": ["best", "clos"], "gpus": [8, 8], "seed": [0, 1]})
    >>> varying_parameters(idx)
    ['arch', 'seed']
    """
    cols = parameter_columns(index) if params is None else list(params)
    return [c for c in cols if run_signature(index, [c]).nunique() > 1]


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def reference_values(index: pd.DataFrame, params: Sequence[str]) -> dict[str, Any]:
    """The reference value of each parameter, used to slice a multi-parameter sweep.

    ``gpus`` takes 4096 when present (the paper's 4k-GPU cluster); every other parameter takes
    its most frequent value, ties broken by the smallest (numbers) or the first in sorted order
    (NaN/None first, so "no failures" / "default" wins).

    Examples
    --------
    >>> idx = pd.DataFrame({"gpus": [2048, 4096, 8192], "load": [0.5, 0.5, 0.8]})
    >>> reference_values(idx, ["gpus", "load"])
    {'gpus': 4096, 'load': 0.5}
    """
    out: dict[str, Any] = {}
    for p in params:
        col = index[p]
        if p == "gpus" and (col == 4096).any():
            out[p] = 4096
            continue
        sig = run_signature(index, [p])
        counts = sig.value_counts()
        best = counts[counts == counts.max()].index
        chosen = sorted(best, key=lambda s: (json.loads(s)[0] is not None, _sort_key(s)))[0]
        out[p] = col[sig == chosen].iloc[0]
        if isinstance(out[p], np.generic):
            out[p] = out[p].item()
    return out


def _sort_key(sig: str) -> tuple[int, float, str]:
    v = json.loads(sig)[0]
    if isinstance(v, bool) or not isinstance(v, int | float):
        return (1, 0.0, str(v))
    return (0, float(v), "")


def compare_to_baseline(
    index: pd.DataFrame,
    jobs: Mapping[str, pd.DataFrame],
    baseline: str = BASELINE_ARCH,
    *,
    params: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per-job comparison of every run with the Best run on the same trace.

    A run matches the ``baseline`` run whose parameters are equal on every parameter except
    ``arch`` (NaN/None compare equal). When there is no such run, parameters the baseline run
    leaves unset (NaN/None, e.g. ``routing`` for Best) are ignored. Jobs pair up by ``job_id``;
    only jobs finished in both runs appear. Runs of the baseline itself are left out.

    Returns one row per job with ``key``, ``arch``, ``job_id``, the run's ``jrt_s``, ``jwt_s``,
    ``jct_s``, ``contention_level`` (when present), Best's ``jrt_best_s``, ``jwt_best_s``,
    ``jct_best_s``, and the ratios ``jrt_vs_best = jrt / jrt_best``,
    ``jct_vs_best = jct / jct_best``, the paper's slow-down ratio
    ``jrt_slowdown_vs_best = jrt_vs_best - 1`` (Fig. 8(a)) and JWT slow-down
    ``jwt_delta_vs_best_s = jwt - jwt_best`` (Fig. 8(b)).

    Examples
    --------
    >>> idx = pd.DataFrame({"key": ["b", "l"], "arch": ["best", "lumos"], "seed": [0, 0]})
    >>> t = lambda jrt: pd.DataFrame({"job_id": [0], "arrival_s": [0.0], "start_s": [1.0],
    ...     "finish_s": [1.0 + jrt], "jrt_s": [jrt], "jwt_s": [1.0], "jct_s": [1.0 + jrt],
    ...     "rejected": [False]})
    >>> out = compare_to_baseline(idx, {"b": t(10.0), "l": t(12.0)})
    >>> out[["key", "jrt_vs_best", "jct_vs_best", "jrt_slowdown_vs_best"]].round(3).values.tolist()
    [['l', 1.2, 1.182, 0.2]]
    """
    columns = [
        "key",
        "arch",
        "job_id",
        "jrt_s",
        "jwt_s",
        "jct_s",
        "contention_level",
        "jrt_best_s",
        "jwt_best_s",
        "jct_best_s",
        "jrt_vs_best",
        "jct_vs_best",
        "jrt_slowdown_vs_best",
        "jwt_delta_vs_best_s",
    ]
    empty = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    if "arch" not in index.columns or index.empty:
        return empty
    cols = [c for c in (parameter_columns(index) if params is None else params) if c != "arch"]
    is_base = index["arch"].astype(str) == baseline
    base = index[is_base]
    others = index[~is_base]
    if base.empty or others.empty:
        return empty
    base_sig = run_signature(base, cols)
    base_by_sig: dict[str, str] = {}
    for sig, key in sorted(zip(base_sig, base["key"].astype(str), strict=True)):
        base_by_sig.setdefault(sig, key)
    pairs: list[tuple[str, str]] = []
    other_sig = run_signature(others, cols)
    for (_, row), sig in zip(others.iterrows(), other_sig, strict=True):
        match = base_by_sig.get(sig)
        if match is None:
            match = _loose_match(row, base, cols)
        if match is not None:
            pairs.append((str(row["key"]), match))
    frames = []
    arch_of = dict(zip(index["key"].astype(str), index["arch"].astype(str), strict=True))
    for key, bkey in pairs:
        if key not in jobs or bkey not in jobs:
            continue
        run = finished_jobs(jobs[key])
        ref = finished_jobs(jobs[bkey])
        keep = ["job_id", "jrt_s", "jwt_s", "jct_s"]
        if "contention_level" in run.columns:
            keep.append("contention_level")
        merged = run[keep].merge(
            ref[["job_id", "jrt_s", "jwt_s", "jct_s"]].rename(
                columns={"jrt_s": "jrt_best_s", "jwt_s": "jwt_best_s", "jct_s": "jct_best_s"}
            ),
            on="job_id",
            how="inner",
        )
        merged.insert(0, "arch", arch_of[key])
        merged.insert(0, "key", key)
        frames.append(merged)
    if not frames:
        return empty
    out = pd.concat(frames, ignore_index=True)
    if "contention_level" not in out.columns:
        out["contention_level"] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        out["jrt_vs_best"] = out["jrt_s"] / out["jrt_best_s"]
        out["jct_vs_best"] = out["jct_s"] / out["jct_best_s"]
    out["jrt_slowdown_vs_best"] = out["jrt_vs_best"] - 1.0
    out["jwt_delta_vs_best_s"] = out["jwt_s"] - out["jwt_best_s"]
    return out[columns]


def _loose_match(row: pd.Series, base: pd.DataFrame, cols: Sequence[str]) -> str | None:
    """The first (by key) baseline run equal to ``row`` on the parameters it sets."""
    for _, b in base.sort_values("key").iterrows():
        set_cols = [c for c in cols if _canonical(b[c]) is not None]
        if all(_canonical(b[c]) == _canonical(row[c]) for c in set_cols):
            return str(b["key"])
    return None


def run_extras(info: Mapping[str, Any] | None) -> dict[str, float]:
    """Fragmentation, reconfiguration and rewiring figures of a run, when reported.

    Numeric entries of ``info["stats"]`` (simulator) and ``info["fabric"]`` (fabric
    description) whose name mentions fragmentation, reconfiguration, rewiring, refusals,
    re-routes or admissions become ``stats.<name>`` / ``fabric.<name>`` columns; anything
    absent is simply left out.

    Examples
    --------
    >>> run_extras({"stats": {"reconfigurations": 3, "events": 9},
    ...             "fabric": {"rewired_circuits": 12, "routing": "planned"}})
    {'stats.reconfigurations': 3.0, 'fabric.rewired_circuits': 12.0}
    """
    out: dict[str, float] = {}
    if not info:
        return out
    for section in ("stats", "fabric"):
        block = info.get(section) or {}
        if not isinstance(block, Mapping):
            continue
        for name in sorted(block):
            value = block[name]
            if (
                _STAT_PATTERN.search(str(name))
                and not str(name).endswith("delay_s")
                and isinstance(value, int | float | np.integer | np.floating)
                and not isinstance(value, bool | np.bool_)
            ):
                out[f"{section}.{name}"] = float(value)
    return out


def _job_extras(jobs: pd.DataFrame) -> dict[str, float]:
    """Per-job fragmentation/rewiring columns, summed (counts) or averaged (shares)."""
    out: dict[str, float] = {}
    for col in sorted(c for c in jobs.columns if _STAT_PATTERN.search(str(c))):
        x = jobs[col]
        if pd.api.types.is_bool_dtype(x):
            out[f"sum_{col}"] = float(x.sum())
        elif pd.api.types.is_numeric_dtype(x):
            out[f"mean_{col}"] = float(np.nanmean(x.to_numpy(dtype=float))) if len(x) else math.nan
    return out


def run_table(
    index: pd.DataFrame,
    jobs: Mapping[str, pd.DataFrame],
    queues: Mapping[str, pd.DataFrame] | None = None,
    infos: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    vs_best: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The index with per-run extras: stability, queue depth, Best comparison, run statistics.

    Adds ``jct_std_s``, ``jrt_std_s``, ``stability_groups`` (:func:`stability`),
    ``queue_mean_waiting``, ``queue_max_waiting`` (:func:`queue_stats`), the means over jobs of
    ``jrt_vs_best``, ``jct_vs_best``, ``jrt_slowdown_vs_best`` and ``jwt_delta_vs_best_s``
    (per-job comparisons), the ratios of means ``jct_over_best``, ``jrt_over_best`` and
    ``jwt_over_best`` (the run's mean over Best's mean on the same trace, over the jobs
    finished in both: the "JCT / Best" of the summary tables and of ``lumos run``), all from
    ``vs_best`` (a :func:`compare_to_baseline` table; NaN for Best itself and unmatched runs),
    and the :func:`run_extras` columns. Rows keep the index order.

    Examples
    --------
    >>> idx = pd.DataFrame({"key": ["r"], "arch": ["best"], "mean_jct_s": [2.0]})
    >>> t = pd.DataFrame({"model": ["a", "a"], "gpus": [8, 8], "jct_s": [1.0, 3.0],
    ...                   "jrt_s": [1.0, 1.0], "finish_s": [1.0, 3.0]})
    >>> run_table(idx, {"r": t})[["key", "jct_std_s", "jrt_std_s"]].values.tolist()
    [['r', 1.4142135623730951, 0.0]]
    """
    queues = queues or {}
    infos = infos or {}
    rows = []
    for key in index["key"].astype(str):
        row: dict[str, Any] = {"key": key}
        if key in jobs:
            row.update(stability(jobs[key]))
            row.update(_job_extras(jobs[key]))
        if key in queues:
            row.update(queue_stats(queues[key]))
        row.update(run_extras(infos.get(key)))
        rows.append(row)
    extra = pd.DataFrame(rows, columns=_ordered_columns(rows))
    if vs_best is not None and not vs_best.empty:
        by_run = vs_best.groupby("key")
        means = (
            by_run[["jrt_vs_best", "jct_vs_best", "jrt_slowdown_vs_best", "jwt_delta_vs_best_s"]]
            .mean()
            .add_prefix("mean_")
        )
        sums = by_run[["jrt_s", "jwt_s", "jct_s", "jrt_best_s", "jwt_best_s", "jct_best_s"]].sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            for m in ("jrt", "jwt", "jct"):
                means[f"{m}_over_best"] = sums[f"{m}_s"] / sums[f"{m}_best_s"]
        extra = extra.merge(means.reset_index(), on="key", how="left")
    extra = extra.drop(columns=[c for c in extra.columns if c != "key" and c in index.columns])
    out = index.assign(key=index["key"].astype(str)).merge(extra, on="key", how="left")
    out.index = index.index
    if "jct_over_best" in out.columns and "arch" in out.columns:
        base = out["arch"].astype(str) == BASELINE_ARCH
        out.loc[base, ["jct_over_best", "jrt_over_best", "jwt_over_best"]] = 1.0
    return out


def _ordered_columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for k in row:
            seen.setdefault(k, None)
    return list(seen)


def aggregate(
    runs: pd.DataFrame,
    by: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    *,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Average run metrics over seeds, with a Student-t confidence interval across seeds.

    Runs are grouped by ``by`` (default: every parameter column except ``seed``). For every
    metric (default: every numeric non-parameter column) the result holds the mean over the
    group's runs with a finite value, ``<metric>_ci95``: the half-width
    ``t_{(1+confidence)/2, n-1} * s / sqrt(n)`` (``s`` the sample std, ``n`` the number of
    seeds; NaN when ``n < 2``), and one ``seeds`` column (runs in the group).

    Examples
    --------
    >>> runs = pd.DataFrame({"key": list("abc"), "arch": ["x"] * 3, "seed": [0, 1, 2],
    ...                      "mean_jct_s": [1.0, 2.0, 3.0]})
    >>> row = aggregate(runs).iloc[0]
    >>> int(row["seeds"]), float(row["mean_jct_s"]), round(float(row["mean_jct_s_ci95"]), 4)
    (3, 2.0, 2.4841)
    """
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}")
    params = parameter_columns(runs)
    group_cols = [c for c in params if c != "seed"] if by is None else list(by)
    missing = [c for c in group_cols if c not in runs.columns]
    if missing:
        raise ConfigError(
            f"aggregate: unknown group column(s) {missing}; allowed: {sorted(runs.columns)}"
        )
    if metrics is None:
        metrics = [
            c
            for c in runs.columns
            if c not in params and c != "key" and _is_numeric(runs[c]) and c not in group_cols
        ]
    label = "ci" + f"{confidence * 100:g}".replace(".", "_")
    data = runs[list(group_cols) + list(metrics)].copy()
    for m in metrics:
        data[m] = pd.to_numeric(data[m], errors="coerce").astype(float)
    # Group on canonical signatures so NaN/None parameter values form their own group.
    sig = run_signature(runs, group_cols) if group_cols else pd.Series("", index=runs.index)
    data["_sig"] = sig.to_numpy()
    grouped = data.groupby("_sig", sort=False)
    # The parameter values of the first run of each group (GroupBy.first would skip NaN).
    first = data.drop_duplicates("_sig").set_index("_sig")[list(group_cols)] if group_cols else None
    mean = grouped[list(metrics)].mean()
    std = grouped[list(metrics)].std(ddof=1)
    count = grouped[list(metrics)].count()
    size = grouped.size().rename("seeds")
    n = count.to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Student's t quantile (scipy.stats.t.ppf computes it so; scipy.stats takes longer to load)
        q = special.stdtrit(np.maximum(n - 1.0, 1.0), 0.5 + confidence / 2.0)
        tq = np.where(n >= 2, q, np.nan)
        half = tq * std.to_numpy(dtype=float) / np.sqrt(n)
    ci = pd.DataFrame(half, index=mean.index, columns=[f"{m}_{label}" for m in metrics])
    parts: list[pd.DataFrame | pd.Series] = [size]
    if first is not None:
        parts.insert(0, first)
    out = pd.concat([*parts, mean, ci], axis=1)
    ordered = [*group_cols, "seeds"]
    for m in metrics:
        ordered += [m, f"{m}_{label}"]
    out = out[ordered]
    if group_cols:
        out = out.sort_values(
            list(group_cols), kind="stable", na_position="first", key=_sortable
        ).reset_index(drop=True)
    else:
        out = out.reset_index(drop=True)
    return out


def _sortable(col: pd.Series) -> pd.Series:
    """Sort key that copes with columns mixing numbers, strings and None."""
    if _is_numeric(col):
        return col
    return col.map(lambda v: "" if _canonical(v) is None else str(v))
