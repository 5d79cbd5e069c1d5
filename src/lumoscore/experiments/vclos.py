"""The vClos paper's evaluation as task presets: Table 5 (mean JCT against the arrival rate)
and Table 2 (fragmentation by cause), each beside the paper's numbers, and Fig. 2 (how often
ECMP's hash makes flows share a link, against cluster size).

:func:`run_vclos_table5` runs the seven strategies of vClos Table 5 on CLUSTER512 (32 leaves x
16 spines) with the ``vclos-helios`` workload at every mean inter-arrival time ``lambda``
(the paper's notation for the Poisson mean, 100-140 s), through the experiment runner into a
result store inside the output folder (an interrupted run resumes; ``workers`` processes).
Strategies (:data:`VCLOS_CASES`): Best (one ideal switch; the vClos scheduler's placement),
OCS-vClos, vClos, SR, Balanced and ECMP on the shared leaf-spine, and OCS-Relax. Traffic:
the ``literal`` exposure (each job's uncoverable share at the port speed), so that a job's
run time grows by its share times its contention.

It also draws Fig. 12(c) (queue depth over time, ``fig12c``) and writes Fig. 12(d)
(stability per job size, ``fig12d``) for lambda = 120 s.

Writes ``table5.csv``/``.md`` (mean JCT per strategy and lambda, ours and the paper's, and
whether ours is ordered as the paper's, to within :data:`ORDER_TOLERANCE`),
``table2.csv``/``.md`` (refused allocation attempts of vClos and OCS-vClos by cause beside
the paper's "GPU" and "Network" counts: ours, every attempt, ``servers`` and ``network``;
``research_gpu`` and ``research_network``, counted and classified as the research scheduler
counts them, :attr:`~lumoscore.placement.vclos.VClosAllocator.research_refusals`; and the
jobs refused at least once for GPU-side reasons, ``jobs_gpu_side`` = for want of GPUs or of
idle servers, and for network reasons), and
``table5.png``/``.svg``.

Examples
--------
>>> import tempfile
>>> out = run_vclos_table5(tempfile.mkdtemp(), lambdas=(120.0,), jobs=40, seeds=(1,),
...                        workers=1, progress=False)
>>> sorted(out.rows[0])[:3], out.rows[0]["lambda_s"]
(['balanced_jct_s', 'balanced_paper_jct_s', 'best_jct_s'], 120.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lumoscore.errors import ConfigError
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.store import ResultStore
from lumoscore.limits import check_gpus

__all__ = [
    "FIG2_SIZES_GPUS",
    "FIG13_CLUSTERS",
    "FIG13_PAPER",
    "TABLE2_PAPER",
    "TABLE4_CASES",
    "TABLE4_PAPER",
    "TABLE5_PAPER",
    "TABLE6_PAPER",
    "TABLE7_PAPER",
    "VCLOS_CASES",
    "VCLOS_LAMBDAS_S",
    "fig2_shape",
    "hash_collisions",
    "run_vclos_fig2",
    "run_vclos_fig13",
    "run_vclos_table4",
    "run_vclos_table5",
    "run_vclos_table6",
    "run_vclos_table7",
    "stability",
]

#: The strategies of vClos Table 5 in the paper's order of expected mean JCT:
#: ``(label, architecture, routing, placer)``.
VCLOS_CASES: tuple[tuple[str, str, str | None, str | None], ...] = (
    ("best", "best", None, "vclos"),
    ("ocs-vclos", "ocs-vclos", None, None),
    ("vclos", "vclos", None, None),
    ("sr", "vclos-leaf-spine", "source", None),
    ("balanced", "vclos-leaf-spine", "balanced", None),
    ("ecmp", "vclos-leaf-spine", "ecmp", None),
    ("ocs-relax", "ocs-relax", None, None),
)
#: The ordering Table 5 shows at every lambda (OCS-Relax is not part of it).
PAPER_ORDER: tuple[str, ...] = ("best", "ocs-vclos", "vclos", "sr", "balanced", "ecmp")
#: Relative slack of the ordering check (a 50 ms OCS switching delay or a tie is not a
#: reversal).
ORDER_TOLERANCE = 1e-3
#: Mean inter-arrival times of Table 5 (s, on 512 GPUs).
VCLOS_LAMBDAS_S: tuple[float, ...] = (100.0, 110.0, 120.0, 130.0, 140.0)
#: vClos Table 5: mean JCT (s) on CLUSTER512 per lambda and strategy.
TABLE5_PAPER: Mapping[float, Mapping[str, float]] = {
    100.0: {"ocs-vclos": 7800.5, "vclos": 9799.6, "best": 7514.3, "sr": 10083.5,
            "balanced": 12267.1, "ecmp": 35032.9, "ocs-relax": 24313.3},
    110.0: {"ocs-vclos": 6368.0, "vclos": 6981.5, "best": 6131.8, "sr": 7449.6,
            "balanced": 8622.5, "ecmp": 25055.6, "ocs-relax": 13768.4},
    120.0: {"ocs-vclos": 5229.9, "vclos": 5550.6, "best": 5053.0, "sr": 6228.6,
            "balanced": 7105.4, "ecmp": 23545.4, "ocs-relax": 11291.4},
    130.0: {"ocs-vclos": 4491.5, "vclos": 4710.4, "best": 4340.7, "sr": 4955.6,
            "balanced": 5436.9, "ecmp": 13118.7, "ocs-relax": 7586.6},
    140.0: {"ocs-vclos": 4025.4, "vclos": 4105.1, "best": 3986.5, "sr": 4209.3,
            "balanced": 4764.5, "ecmp": 11395.6, "ocs-relax": 5917.9},
}  # fmt: skip
#: vClos Table 2: fragmentation counts by cause, ``(vClos GPU, vClos network, OCS-vClos GPU,
#: OCS-vClos network)`` per lambda.
TABLE2_PAPER: Mapping[float, tuple[int, int, int, int]] = {
    100.0: (1311, 264, 1180, 172),
    110.0: (988, 250, 1047, 161),
    120.0: (878, 218, 920, 129),
    130.0: (726, 145, 705, 98),
}


#: One row of a comparison: ``(row value, trace fields, queue policy)``.
Row = tuple[Any, dict[str, Any], str]


def _run_strategies(
    store: ResultStore,
    rows: Sequence[Row],
    *,
    gpus: int,
    seeds: Sequence[int],
    exposure: str,
    workers: int | None,
    progress: bool,
    cases: Sequence[tuple[Any, ...]] = VCLOS_CASES,
    fabric_options: Mapping[str, Any] | None = None,
) -> dict[tuple[Any, str], list[dict[str, Any]]]:
    """Run every strategy of ``cases`` (``(label, arch, routing, placer[, options])``,
    default :data:`VCLOS_CASES`) for every row and seed (skipping runs the store has), every
    fabric with ``fabric_options`` and the case's own options; the ``run.json`` documents by
    ``(row value, strategy label)``."""
    from lumoscore.experiments.runner import run_sweep

    runs = []
    for value, trace, queue in rows:
        for seed in seeds:
            for label, arch, routing, placer, *own in cases:
                cfg = RunConfig(
                    arch=arch,
                    gpus=gpus,
                    routing=routing,
                    placer=placer,
                    fabric_options={**(fabric_options or {}), **(own[0] if own else {})},
                    trace=trace,
                    queue=queue,
                    exposure=exposure,
                    seed=seed,
                )
                runs.append((value, label, cfg))
    run_sweep([cfg for *_, cfg in runs], store, workers=workers, progress=progress)
    got: dict[tuple[Any, str], list[dict[str, Any]]] = {}
    for value, label, cfg in runs:
        got.setdefault((value, label), []).append(store.info(store.key(cfg)))
    return got


def _mean(docs: Sequence[dict[str, Any]], field: str, part: str = "summary") -> float:
    """Mean of ``field`` of the runs' ``part`` (NaN if a run lacks it)."""
    return float(np.mean([d[part].get(field, np.nan) for d in docs]))


def _ordered(
    row: Mapping[str, Any], suffix: str = "_jct_s", order: Sequence[str] = PAPER_ORDER
) -> bool:
    """Whether the strategies of ``order`` (default :data:`PAPER_ORDER`) are ordered as in
    the paper (non-decreasing)."""
    ours = [row[f"{k}{suffix}"] for k in order]
    return bool(all(a <= b * (1 + ORDER_TOLERANCE) for a, b in itertools.pairwise(ours)))


def _jct_row(
    row: dict[str, Any],
    got: Mapping[tuple[Any, str], list[dict[str, Any]]],
    value: Any,
    paper: Mapping[str, float],
) -> dict[str, Any]:
    """``row`` with every strategy's mean JCT at ``value`` beside the paper's, and the
    ordering check."""
    for label, *_ in VCLOS_CASES:
        row[f"{label}_jct_s"] = _mean(got[(value, label)], "mean_jct_s")
        row[f"{label}_paper_jct_s"] = paper.get(label, float("nan"))
    row["ordered_as_paper"] = _ordered(row)
    return row


def _criteria_rows(
    got: Mapping[tuple[Any, str], list[dict[str, Any]]],
    value: Any,
    cases: Sequence[tuple[Any, ...]],
    paper: Mapping[str, Mapping[str, float]],
    order: Sequence[str],
) -> list[dict[str, Any]]:
    """One row per criterion (mean JRT, JWT, JCT): every strategy's mean at ``value`` beside
    the paper's, and whether ours is ordered as ``order``."""
    rows: list[dict[str, Any]] = []
    for crit in ("jrt", "jwt", "jct"):
        row: dict[str, Any] = {"criterion": crit}
        for label, *_ in cases:
            row[f"{label}_s"] = _mean(got[(value, label)], f"mean_{crit}_s")
            row[f"{label}_paper_s"] = paper.get(crit, {}).get(label, float("nan"))
        row["ordered_as_paper"] = _ordered(row, "_s", order)
        rows.append(row)
    return rows


def _prepare(
    out_dir: str | Path, jobs: int, seeds: Sequence[int], *values: Sequence[Any]
) -> tuple[Path, ResultStore]:
    """Check a task's sizes (``jobs >= 1``, non-empty ``seeds`` and swept ``values``), then
    make its output folder; the folder and its result store."""
    if jobs < 1 or not seeds or not all(values):
        raise ConfigError("jobs >= 1 and non-empty seeds and swept values are needed")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out, ResultStore(out / "store")


def run_vclos_table5(
    out_dir: str | Path,
    *,
    lambdas: Sequence[float] = VCLOS_LAMBDAS_S,
    jobs: int = 5000,
    seeds: Sequence[int] = (1, 2, 3),
    scales_gpus: Sequence[int] = (512,),
    exposure: str = "literal",
    workers: int | None = None,
    progress: bool = True,
) -> Any:
    """vClos Table 5 and Table 2 beside the paper's (module docstring).

    ``lambdas`` are mean inter-arrival times on 512 GPUs; on another cluster size
    (``scales_gpus``, e.g. 2048 for the paper's CLUSTER2048) arrivals come as often per GPU.
    Means are over ``seeds``. Returns a :class:`~lumoscore.experiments.presets.TaskOutput`
    whose rows are the Table 5 rows.
    """
    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table

    out, store = _prepare(out_dir, jobs, seeds, lambdas, scales_gpus)
    files: list[Path] = []
    rows5: list[dict[str, Any]] = []
    rows2: list[dict[str, Any]] = []
    for gpus in scales_gpus:
        rows = [
            (float(lam), {"preset": "vclos-helios", "jobs": jobs, "beta_s": lam * 512 / gpus},
             "fifo")
            for lam in lambdas
        ]  # fmt: skip
        got = _run_strategies(
            store, rows, gpus=int(gpus), seeds=seeds, exposure=exposure, workers=workers,
            progress=progress,
        )  # fmt: skip
        if gpus == scales_gpus[0]:
            got12 = got
        for lam, *_ in rows:
            paper = TABLE5_PAPER.get(lam, {}) if gpus == 512 else {}
            rows5.append(_jct_row({"gpus": int(gpus), "lambda_s": lam}, got, lam, paper))
            frag: dict[str, Any] = {"gpus": int(gpus), "lambda_s": lam}
            p2 = TABLE2_PAPER.get(lam) if gpus == 512 else None
            for i, label in enumerate(("vclos", "ocs-vclos")):
                docs = got[(lam, label)]
                for cause, j in (("servers", 0), ("network", 1)):
                    frag[f"{label}_{cause}"] = _mean(docs, f"refusals_{cause}", "fabric")
                    frag[f"{label}_{cause}_paper"] = float(p2[2 * i + j]) if p2 else float("nan")
                for cause in ("gpu", "network"):
                    key = f"research_refusals_{cause}"
                    frag[f"{label}_research_{cause}"] = _mean(docs, key, "fabric")
                frag[f"{label}_jobs_gpu_side"] = _mean(docs, "refused_jobs_gpu_side", "fabric")
                frag[f"{label}_jobs_network"] = _mean(docs, "refused_jobs_network", "fabric")
            rows2.append(frag)
    files += _write_table(out, "table5", rows5)
    files += _write_table(out, "table2", rows2)
    fig = _new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    for i, (label, *_) in enumerate(VCLOS_CASES):
        sel = [r for r in rows5 if r["gpus"] == scales_gpus[0]]
        xs = [r["lambda_s"] for r in sel]
        ax.plot(xs, [r[f"{label}_jct_s"] for r in sel], marker="o", color=f"C{i}", label=label)
        ax.plot(xs, [r[f"{label}_paper_jct_s"] for r in sel], ls="--", color=f"C{i}", alpha=0.6)
    ax.set_yscale("log")
    ax.set_xlabel("mean inter-arrival time lambda (s)")
    ax.set_ylabel("mean JCT (s)")
    ax.set_title(f"vClos Table 5 on {scales_gpus[0]} GPUs: simulation (solid) and paper (dashed)")
    ax.legend(fontsize=8, ncol=2)
    files += _save_figure(fig, out, "table5")
    lam12 = 120.0 if 120.0 in [float(x) for x in lambdas] else float(lambdas[len(lambdas) // 2])
    files += _fig12(store, got12, lam12, out)
    return TaskOutput(tuple(files), tuple(rows5))


def stability(jobs: Any) -> Any:
    """vClos §9.3 "Stability": the standard deviation of JCT among jobs with the same
    parameters (model and size), averaged over such groups of at least two jobs; per job size
    and over all sizes (``gpus = 0``). A :class:`pandas.DataFrame` ``gpus, stability_s,
    groups``.

    Examples
    --------
    >>> import pandas as pd
    >>> jobs = pd.DataFrame({"model": ["a", "a", "b", "b", "a"], "gpus": [8, 8, 8, 8, 16],
    ...                      "jct_s": [1.0, 3.0, 2.0, 2.0, 5.0]})
    >>> stability(jobs).to_dict("list")
    {'gpus': [0, 8], 'stability_s': [0.7071067811865476, 0.7071067811865476], 'groups': [2, 2]}
    """
    import pandas as pd

    std = jobs.groupby(["model", "gpus"])["jct_s"].agg(["std", "count"]).reset_index()
    std = std[std["count"] >= 2]
    per = std.groupby("gpus")["std"].agg(["mean", "count"]).reset_index()
    per.columns = ["gpus", "stability_s", "groups"]
    every = pd.DataFrame({"gpus": [0], "stability_s": [std["std"].mean()], "groups": [len(std)]})
    return pd.concat([every, per], ignore_index=True)


def _fig12(
    store: ResultStore, got: dict[tuple[Any, str], list[dict[str, Any]]], lam: float, out: Path
) -> list[Path]:
    """Fig. 12(c), queue depth over time, and Fig. 12(d), stability per job size, of every
    strategy at ``lam`` (the first seed's run)."""
    from lumoscore.experiments.presets import _new_figure, _save_figure, _write_table

    fig = _new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    rows: list[dict[str, Any]] = []
    for i, (label, *_) in enumerate(VCLOS_CASES):
        key = got[(lam, label)][0]["key"]
        q = store.queue(key)
        ax.step(q["time_s"] / 3600, q["waiting"], where="post", color=f"C{i}", lw=0.8,
                label=label)  # fmt: skip
        for r in stability(store.jobs(key)).to_dict("records"):
            rows.append({"strategy": label, **r})
    ax.set_xlabel("time (h)")
    ax.set_ylabel("jobs waiting")
    ax.set_title(f"vClos Fig. 12(c): queue depth, lambda = {lam:g} s")
    ax.legend(fontsize=8, ncol=4)
    files = _save_figure(fig, out, "fig12c")
    files += _write_table(out, "fig12d", rows)
    fig = _new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    sizes = sorted({r["gpus"] for r in rows if r["gpus"] >= 16})
    width = 0.8 / len(VCLOS_CASES)
    for i, (label, *_) in enumerate(VCLOS_CASES):
        val = {r["gpus"]: r["stability_s"] for r in rows if r["strategy"] == label}
        ax.bar([k + i * width for k in range(len(sizes))], [val.get(g, np.nan) for g in sizes],
               width, color=f"C{i}", label=label)  # fmt: skip
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(sizes))], [str(g) for g in sizes])
    ax.set_xlabel("GPUs per job")
    ax.set_ylabel("std of JCT among like jobs (s)")
    ax.set_title(f"vClos Fig. 12(d): stability, lambda = {lam:g} s")
    ax.legend(fontsize=8, ncol=4)
    files += _save_figure(fig, out, "fig12d")
    return files


#: Clusters of vClos Fig. 13: ``(GPUs, lambda in s)`` (CLUSTER512 and CLUSTER2048, §9.4-9.5).
FIG13_CLUSTERS: tuple[tuple[int, float], ...] = ((512, 120.0), (2048, 15.0))
#: vClos §9.4-9.5's figures read from Fig. 13: ``(GPUs, name, strategy a, strategy b,
#: metric, relative change of a against b)``.
FIG13_PAPER: tuple[tuple[int, str, str, str, str, float], ...] = (
    (512, "vClos/OCS-vClos JRT vs SR", "ocs-vclos", "sr", "jrt", -0.031),
    (512, "vClos/OCS-vClos JRT vs Balanced", "ocs-vclos", "balanced", "jrt", -0.0617),
    (512, "OCS-vClos JWT vs SR", "ocs-vclos", "sr", "jwt", -0.6565),
    (512, "OCS-vClos JWT vs vClos", "ocs-vclos", "vclos", "jwt", -0.2035),
    (512, "OCS-vClos JCT vs Best", "ocs-vclos", "best", "jct", 0.0338),
    (2048, "OCS-vClos JRT vs SR", "ocs-vclos", "sr", "jrt", -0.0159),
    (2048, "OCS-vClos JWT vs SR", "ocs-vclos", "sr", "jwt", -0.6491),
    (2048, "vClos JWT vs OCS-vClos", "vclos", "ocs-vclos", "jwt", 0.1206),
)


def _change(a: float, b: float) -> float:
    """Relative change of ``a`` against ``b`` (NaN when ``b`` is 0)."""
    return a / b - 1 if b else float("nan")


def run_vclos_fig13(
    out_dir: str | Path,
    *,
    clusters: Sequence[tuple[int, float]] = FIG13_CLUSTERS,
    jobs: int = 5000,
    seeds: Sequence[int] = (1, 2, 3),
    exposure: str = "literal",
    workers: int | None = None,
    progress: bool = True,
) -> Any:
    """vClos Fig. 13: mean JRT, JWT and JCT of every strategy on CLUSTER512 (lambda = 120 s)
    and CLUSTER2048 (lambda = 15 s), ``vclos-helios`` jobs, means over ``seeds``. Writes
    ``fig13.csv``/``.md`` (one row per cluster and strategy), ``fig13-claims`` (the relative
    changes §9.4-9.5 state, :data:`FIG13_PAPER`, ours beside the paper's) and
    ``fig13.png``/``.svg``. With the output folder of ``vclos-table5`` the CLUSTER512 runs are
    shared."""
    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table

    out, store = _prepare(out_dir, jobs, seeds, clusters)
    rows: list[dict[str, Any]] = []
    for gpus, lam in clusters:
        trace = {"preset": "vclos-helios", "jobs": jobs, "beta_s": float(lam)}
        got = _run_strategies(
            store, [(float(lam), trace, "fifo")], gpus=int(gpus), seeds=seeds,
            exposure=exposure, workers=workers, progress=progress,
        )  # fmt: skip
        for label, *_ in VCLOS_CASES:
            docs = got[(float(lam), label)]
            rows.append(
                {"gpus": int(gpus), "lambda_s": float(lam), "strategy": label}
                | {f"{m}_s": _mean(docs, f"mean_{m}_s") for m in ("jrt", "jwt", "jct")}
            )
    files = _write_table(out, "fig13", rows)
    value = {
        (r["gpus"], r["strategy"], m): r[f"{m}_s"] for r in rows for m in ("jrt", "jwt", "jct")
    }
    claims = [
        {"gpus": g, "claim": name, "ours": _change(value[g, a, m], value[g, b, m]), "paper": p}
        for g, name, a, b, m, p in FIG13_PAPER
        if (g, a, m) in value and (g, b, m) in value
    ]
    files += _write_table(out, "fig13-claims", claims)
    fig = _new_figure(4.2 * len(clusters), 3.8)
    width = 0.8 / len(VCLOS_CASES)
    for k, (gpus, lam) in enumerate(clusters):
        ax = fig.add_subplot(1, len(clusters), k + 1)
        for i, (label, *_) in enumerate(VCLOS_CASES):
            r = next(x for x in rows if x["gpus"] == gpus and x["strategy"] == label)
            ax.bar([j + i * width for j in range(3)], [r["jrt_s"], r["jwt_s"], r["jct_s"]],
                   width, color=f"C{i}", label=label)  # fmt: skip
        ax.set_xticks([j + 0.4 - width / 2 for j in range(3)], ["JRT", "JWT", "JCT"])
        ax.set_ylabel("mean (s)")
        ax.set_title(f"{gpus} GPUs, lambda = {lam:g} s", fontsize=9)
        if k == 0:
            ax.legend(fontsize=7, ncol=2)
    fig.suptitle("vClos Fig. 13: key indicators per strategy")
    files += _save_figure(fig, out, "fig13")
    return TaskOutput(tuple(files), tuple(rows))


#: Queue policies of vClos Table 6 (FIFO, EDF, fewest GPUs first).
TABLE6_QUEUES: tuple[str, ...] = ("fifo", "edf", "smallest-first")
#: vClos Table 6: mean JCT (s) per queue policy and strategy, CLUSTER512, lambda 120 s.
TABLE6_PAPER: Mapping[str, Mapping[str, float]] = {
    "fifo": TABLE5_PAPER[120.0],
    "edf": {"ocs-vclos": 4198.5, "vclos": 4401.4, "best": 4176.5, "sr": 4685.5,
            "balanced": 5020.9, "ecmp": 7658.6},
    "smallest-first": {"ocs-vclos": 4081.6, "vclos": 4137.2, "best": 4029.9, "sr": 4250.5,
                       "balanced": 4607.8, "ecmp": 6667.6},
}  # fmt: skip
#: vClos Table 7 (TPUv4 job mix): mean JRT, JWT and JCT (s) per strategy.
TABLE7_PAPER: Mapping[str, Mapping[str, float]] = {
    "jrt": {"ocs-vclos": 3856.1, "vclos": 3856.1, "best": 3856.1, "sr": 3858.0,
            "balanced": 3861.6, "ecmp": 4968.8},
    "jwt": {"ocs-vclos": 8101.9, "vclos": 8102.8, "best": 8101.9, "sr": 8115.7,
            "balanced": 8160.2, "ecmp": 17839.8},
    "jct": {"ocs-vclos": 11958.1, "vclos": 11958.9, "best": 11958.1, "sr": 11973.7,
            "balanced": 12021.8, "ecmp": 22808.7},
}  # fmt: skip


def run_vclos_table6(
    out_dir: str | Path,
    *,
    queues: Sequence[str] = TABLE6_QUEUES,
    lambda_s: float = 120.0,
    jobs: int = 5000,
    seeds: Sequence[int] = (1, 2, 3),
    exposure: str = "literal",
    workers: int | None = None,
    progress: bool = True,
) -> Any:
    """vClos Table 6: mean JCT of every strategy under FIFO, EDF and fewest-GPU-first
    queueing (CLUSTER512, ``vclos-helios`` at ``lambda_s``; a job's deadline is its arrival
    plus twice its run time), beside the paper's. Writes ``table6.csv``/``.md``."""
    from lumoscore.experiments.presets import TaskOutput, _write_table

    out, store = _prepare(out_dir, jobs, seeds, queues)
    trace = {"preset": "vclos-helios", "jobs": jobs, "beta_s": float(lambda_s)}
    got = _run_strategies(
        store, [(q, trace, q) for q in queues], gpus=512, seeds=seeds,
        exposure=exposure, workers=workers, progress=progress,
    )  # fmt: skip
    rows: list[dict[str, Any]] = []
    for q in queues:
        paper = TABLE6_PAPER.get(q, {}) if lambda_s == 120.0 else {}
        rows.append(_jct_row({"queue": q, "lambda_s": float(lambda_s)}, got, q, paper))
    files = _write_table(out, "table6", rows)
    return TaskOutput(tuple(files), tuple(rows))


def run_vclos_table7(
    out_dir: str | Path,
    *,
    jobs: int = 5000,
    seeds: Sequence[int] = (1, 2, 3),
    load: float | None = None,
    exposure: str = "literal",
    workers: int | None = None,
    progress: bool = True,
) -> Any:
    """vClos Table 7: mean JRT, JWT and JCT of every strategy with the TPUv4 job mix
    (``vclos-tpuv4`` at ``load``, default its own level
    :data:`~lumoscore.workload.presets.VCLOS_TPUV4_LEVEL`), CLUSTER512, beside the paper's.
    Writes ``table7.csv``/``.md``."""
    from lumoscore.experiments.presets import TaskOutput, _write_table
    from lumoscore.workload.presets import VCLOS_TPUV4_LEVEL

    out, store = _prepare(out_dir, jobs, seeds)
    # the level is in the run config (and so in the store key), not left to the preset
    trace = {"preset": "vclos-tpuv4", "jobs": jobs, "load": float(load or VCLOS_TPUV4_LEVEL)}
    got = _run_strategies(
        store, [("tpuv4", trace, "fifo")], gpus=512, seeds=seeds,
        exposure=exposure, workers=workers, progress=progress,
    )  # fmt: skip
    rows = _criteria_rows(got, "tpuv4", VCLOS_CASES, TABLE7_PAPER, PAPER_ORDER)
    files = _write_table(out, "table7", rows)
    return TaskOutput(tuple(files), tuple(rows))


#: The testbed of vClos §8.1 (Table 4): 8 servers of 4 GPUs at 100 Gb/s. Four switches
#: virtualized by VRF, one spine split into four logical spines: 8 leaves of one server each
#: and 4 spines (:func:`~lumoscore.fabric.leafspine.leaf_spine_shape` of 32 GPUs, 4 a
#: server); rECMP adds 50 % leaf-spine links (6 spines).
TESTBED_GPUS = 32
TESTBED_FABRIC: Mapping[str, Any] = {"gpus_per_server": 4}
#: The strategies of vClos Table 4: ``(label, architecture, routing, placer, options)``.
TABLE4_CASES: tuple[tuple[str, str, str | None, str | None, dict[str, Any]], ...] = (
    ("ocs-vclos", "ocs-vclos", None, None, {}),
    ("vclos", "vclos", None, None, {}),
    ("sr", "vclos-leaf-spine", "source", None, {}),
    ("recmp", "vclos-leaf-spine", "ecmp", None, {"spines": 6, "gpus_per_leaf": 4}),
    ("ecmp", "vclos-leaf-spine", "ecmp", None, {}),
)
#: The ordering of Table 4 (mean JRT and JWT, non-decreasing).
TABLE4_ORDER: tuple[str, ...] = ("vclos", "sr", "recmp", "ecmp")
#: vClos Table 4: mean JRT and JWT (s) on the testbed ("Redundance" is rECMP).
TABLE4_PAPER: Mapping[str, Mapping[str, float]] = {
    "jrt": {"ecmp": 95.12, "recmp": 86.23, "sr": 76.92, "vclos": 74.72},
    "jwt": {"ecmp": 72.64, "recmp": 60.73, "sr": 50.19, "vclos": 45.56},
}
#: vClos §8.2: ECMP's mean JRT above vClos's for jobs of 8 and 16 GPUs.
TABLE4_PAPER_ECMP_BY_SIZE: Mapping[int, float] = {8: 0.081, 16: 0.179}


def run_vclos_table4(
    out_dir: str | Path,
    *,
    jobs: int = 100,
    seeds: Sequence[int] = tuple(range(1, 11)),
    exposure: str = "literal",
    workers: int | None = None,
    progress: bool = True,
) -> Any:
    """vClos Table 4: the testbed's strategies (OCS-vClos, vClos, SR, rECMP and ECMP) on its
    32 GPUs (:data:`TESTBED_FABRIC`, :data:`TABLE4_CASES`) with the ``vclos-testbed`` jobs,
    mean JRT, JWT and JCT over ``seeds`` beside the paper's, and whether ours is ordered as
    Table 4 (:data:`TABLE4_ORDER`). Writes ``table4.csv``/``.md`` and ``table4-sizes``
    (mean JRT per job size and strategy, and ECMP's increase over vClos beside §8.2's 8.1 %
    and 17.9 % for 8 and 16 GPUs)."""
    import pandas as pd

    from lumoscore.experiments.presets import TaskOutput, _write_table

    out, store = _prepare(out_dir, jobs, seeds)
    trace = {"preset": "vclos-testbed", "jobs": jobs}
    got = _run_strategies(
        store, [("testbed", trace, "fifo")], gpus=TESTBED_GPUS, seeds=seeds,
        exposure=exposure, workers=workers, progress=progress, cases=TABLE4_CASES,
        fabric_options=TESTBED_FABRIC,
    )  # fmt: skip
    rows = _criteria_rows(got, "testbed", TABLE4_CASES, TABLE4_PAPER, TABLE4_ORDER)
    files = _write_table(out, "table4", rows)
    per: dict[str, Any] = {}
    for label, *_ in TABLE4_CASES:
        frame = pd.concat([store.jobs(d["key"]) for d in got[("testbed", label)]])
        per[label] = frame.groupby("gpus")["jrt_s"].mean()
    sizes: list[dict[str, Any]] = []
    for g in sorted(per["vclos"].index):
        r: dict[str, Any] = {"gpus": int(g)}
        r.update({f"{label}_jrt_s": float(per[label].get(g, np.nan)) for label in per})
        r["ecmp_over_vclos"] = _change(r["ecmp_jrt_s"], r["vclos_jrt_s"])
        r["ecmp_over_vclos_paper"] = TABLE4_PAPER_ECMP_BY_SIZE.get(int(g), float("nan"))
        sizes.append(r)
    files += _write_table(out, "table4-sizes", sizes)
    return TaskOutput(tuple(files), tuple(rows))


#: Cluster sizes of the Fig. 2 study (GPUs; leaf-spine shapes of :func:`leaf_spine_shape`).
FIG2_SIZES_GPUS: tuple[int, ...] = (128, 512, 2048, 8192)


def fig2_shape(gpus: int) -> tuple[int, int]:
    """``(leaves, spines)`` of the Fig. 2 leaf-spine cluster of ``gpus`` GPUs (8 a server,
    :func:`~lumoscore.fabric.leafspine.leaf_spine_shape`).

    Raises
    ------
    ConfigError
        Unless ``gpus`` is a multiple of 8 that gives at least two leaves (16 or more, at most
        :data:`~lumoscore.limits.MAX_GPUS`): with one leaf no flow crosses a spine.

    Examples
    --------
    >>> fig2_shape(512)
    (32, 16)
    >>> fig2_shape(8)
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: gpus: a multiple of 8 (GPUs a server) from 16 (two leaves), got 8
    """
    from lumoscore.fabric.leafspine import leaf_spine_shape

    allowed = "a multiple of 8 (GPUs a server) from 16 (two leaves)"
    if isinstance(gpus, bool) or not isinstance(gpus, int | np.integer) or gpus % 8 or gpus < 16:
        raise ConfigError(f"gpus: {allowed}, got {gpus!r}")
    check_gpus(int(gpus))
    return leaf_spine_shape(int(gpus), 8)


def hash_collisions(gpus: int, *, trials: int = 20, seed: int = 0, max_k: int = 6) -> Any:
    """Share of flows that share their busiest link with ``k - 1`` others, ``k = 1 ..
    max_k`` (the last bin is ``>= max_k``), under MurmurHash3 ECMP (vClos §3.1, Fig. 2).

    Each trial is one permutation round on the leaf-spine cluster of ``gpus`` GPUs
    (:func:`~lumoscore.fabric.leafspine.leaf_spine_shape`, 8 GPUs a server): every GPU sends
    one flow to a distinct GPU on another leaf, with its own 5-tuple (flow key) and a new hash
    seed per trial. Returns a float array of ``max_k`` shares summing to 1.

    Examples
    --------
    >>> shares = hash_collisions(128, trials=5)
    >>> round(float(shares.sum()), 6), bool(shares[0] < 1)
    (1.0, True)
    """
    from lumoscore.fabric.leafspine import LeafSpineFabric

    L, S = fig2_shape(gpus)
    rng = np.random.default_rng(seed)
    counts = np.zeros(max_k)
    for trial in range(trials):
        fab = LeafSpineFabric(L, S, 8, routing="ecmp", seed=int(rng.integers(2**31)))
        src = np.arange(fab.gpus, dtype=np.int64)
        # a random permutation whose every flow leaves its leaf: shift a shuffled leaf order
        perm = rng.permutation(fab.gpus)
        dst = np.empty_like(src)
        dst[perm] = np.roll(perm, S)  # S GPUs = one leaf's worth of ranks later
        keep = src // S != dst // S
        src, dst = src[keep], dst[keep]
        key = rng.integers(0, 2**31, src.size).astype(np.int64) + trial
        r = fab.routes(src, dst, key)
        load = np.bincount(r.indices, minlength=fab.n_links)
        per_flow = np.maximum.reduceat(load[r.indices], r.indptr[:-1])
        counts += np.bincount(np.minimum(per_flow, max_k) - 1, minlength=max_k)[:max_k]
    return counts / counts.sum()


def run_vclos_fig2(
    out_dir: str | Path,
    *,
    scales_gpus: Sequence[int] = FIG2_SIZES_GPUS,
    trials: int = 20,
    seed: int = 0,
) -> Any:
    """vClos Fig. 2: share of flows by contention (``k`` flows on their busiest link) under
    MurmurHash3 ECMP, against cluster size (:func:`hash_collisions`). Writes
    ``fig2.csv``/``.md`` and ``fig2.png``/``.svg``."""
    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table

    for gpus in scales_gpus:  # (every size checked before anything is written)
        fig2_shape(gpus)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for gpus in scales_gpus:
        shares = hash_collisions(int(gpus), trials=trials, seed=seed)
        rows.append(
            {"gpus": int(gpus), **{f"k{k + 1}{'+' if k == 5 else ''}": float(v)
                                   for k, v in enumerate(shares)}}
        )  # fmt: skip
    files = _write_table(out, "fig2", rows)
    fig = _new_figure()
    ax = fig.add_subplot()
    bottom = np.zeros(len(rows))
    labels = [k for k in rows[0] if k != "gpus"]
    xs = np.arange(len(rows))
    for i, k in enumerate(labels):
        v = np.array([r[k] for r in rows])
        ax.bar(xs, v, bottom=bottom, color=f"C{i}", label="alone" if k == "k1" else k[1:])
        bottom += v
    ax.set_xticks(xs, [str(r["gpus"]) for r in rows])
    ax.set_xlabel("GPUs (leaf-spine, MurmurHash3 ECMP)")
    ax.set_ylabel("share of flows")
    ax.set_title("vClos Fig. 2: flows on their busiest link (k), ECMP")
    ax.set_ylim(0, 1.22)
    ax.legend(fontsize=8, ncol=6, loc="upper center", title="k", title_fontsize=8)
    files += _save_figure(fig, out, "fig2")
    return TaskOutput(tuple(files), tuple(rows))
