"""Run a configuration: draw or read the jobs, deploy, hill-climb, compare with non-TDM, sweep.

Examples
--------
>>> from lumoscore.tdm.config import preset
>>> res = run(preset("small"))
>>> s = res.summary
>>> s.round_tdm_s <= s.round_non_tdm_s, s.ilp is not None
(True, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lumoscore.figures import figure_format, save_figure
from lumoscore.tdm.config import TdmConfig
from lumoscore.tdm.grouping import HillClimbResult, hill_climb
from lumoscore.tdm.models import Job
from lumoscore.tdm.schedule import (
    Instance,
    Schedule,
    StageCache,
    build_instance,
    non_tdm_baseline,
    stage_kt,
)
from lumoscore.tdm.workload import random_jobs

__all__ = ["RunResult", "Summary", "build_jobs", "plot_sweep", "run", "run_sweep"]


def build_jobs(
    config: TdmConfig,
    rng: np.random.Generator,
    *,
    n_jobs: int | None = None,
    context_tokens: int | None = None,
) -> list[Job]:
    """Jobs of a configuration: the explicit ``[[jobs]]`` or a random ``[workload]`` draw.

    ``n_jobs`` / ``context_tokens`` override the workload (sweeps); with explicit jobs,
    ``n_jobs`` keeps the first ``n_jobs`` of them and ``context_tokens`` replaces theirs.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.tdm.config import TdmConfig
    >>> cfg = TdmConfig.model_validate({"jobs": [{"kind": "ps", "model": "1B", "degree": 2,
    ...                                            "count": 2}]})
    >>> [j.name for j in build_jobs(cfg, np.random.default_rng(0))]
    ['job0', 'job1']
    """
    catalog = config.catalog()
    compute = config.compute.build()
    wl = config.effective_workload
    if wl is None:
        jobs = []
        for spec in config.jobs:
            for _ in range(spec.count):
                jobs.append(
                    Job(
                        kind=spec.kind,
                        model=catalog[spec.model],
                        degree=spec.degree,
                        tokens=context_tokens or spec.context_tokens or 8192,
                        gpus_per_unit=spec.gpus_per_unit,
                        compute=compute,
                        name=f"job{len(jobs)}",
                    )
                )
        return jobs if n_jobs is None else jobs[:n_jobs]
    return random_jobs(
        wl.n_jobs if n_jobs is None else n_jobs,
        rng,
        models=wl.models,
        kinds=wl.kinds,
        degree_min=wl.degree_min,
        degree_max=wl.degree_max,
        tokens=context_tokens or wl.context_tokens,
        catalog=catalog,
        compute=compute,
    )


@dataclass(frozen=True)
class Summary:
    """JSON-ready result of one run (times in seconds; improvement as a fraction)."""

    n_jobs: int
    context_tokens: int | None
    round_tdm_s: float
    round_non_tdm_s: float
    improvement: float
    groups: dict[str, list[int]]
    stages: list[dict[str, Any]]
    iterations: int
    evaluations: int
    solve_s: float
    ilp: dict[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class RunResult:
    """Everything one run produced."""

    instance: Instance
    hill_climb: HillClimbResult
    baseline: Schedule
    summary: Summary
    sweep: list[dict[str, Any]] = field(default_factory=list)


def _stage_rows(sch: Schedule) -> list[dict[str, Any]]:
    rows = []
    for s in range(4):
        k, t = stage_kt(s)
        rows.append(
            {
                "stage": s + 1,
                "communicating_group": k,
                "phase": "push" if t == 0 else "pull",
                "comm_s": float(sch.comm_s[s]),
                "compute_s": float(sch.train_s[s]),
                "stage_s": float(sch.stage_s[s]),
                "reconfig_after": bool(sch.reconfig[s]),
                "oxc_links": int(sch.links[s].sum()),
            }
        )
    return rows


def run(
    config: TdmConfig,
    *,
    seed: int | None = None,
    n_jobs: int | None = None,
    context_tokens: int | None = None,
    ilp: bool | None = None,
) -> RunResult:
    """Solve one instance: Alg. 1 from the non-TDM grouping, plus the optional exact ILP.

    Parameters
    ----------
    config : TdmConfig
        The configuration.
    seed : int or None
        Overrides ``config.seed`` (the only source of randomness).
    n_jobs, context_tokens : int or None
        Override the workload (used by sweeps).
    ilp : bool or None
        Overrides ``config.solver.ilp``.

    Examples
    --------
    >>> from lumoscore.tdm.config import preset
    >>> s = run(preset("paper"), n_jobs=10, context_tokens=1024).summary
    >>> s.n_jobs, bool(s.round_tdm_s <= s.round_non_tdm_s), len(s.stages)
    (10, True, 4)
    """
    rng = np.random.default_rng(config.seed if seed is None else seed)
    jobs = build_jobs(config, rng, n_jobs=n_jobs, context_tokens=context_tokens)
    start = time.perf_counter()
    instance = build_instance(config.network.build(), jobs)
    cache = StageCache(instance)
    hc = hill_climb(instance, max_iters=config.solver.max_iters, cache=cache)
    base = non_tdm_baseline(instance, cache)
    solve_s = time.perf_counter() - start
    sch = hc.schedule
    ilp_info = None
    if config.solver.ilp if ilp is None else ilp:
        from lumoscore.tdm.ilp import solve_ilp

        opt = solve_ilp(instance, time_limit_s=config.solver.ilp_time_limit_s)
        ilp_info = {
            "round_s": opt.round_s,
            "status": opt.status,
            "mip_gap": opt.mip_gap,
            "heuristic_gap": sch.round_s / opt.round_s - 1.0 if opt.round_s > 0 else 0.0,
            "groups": {
                "0": np.flatnonzero(opt.grouping == 0).tolist(),
                "1": np.flatnonzero(opt.grouping == 1).tolist(),
            },
            "solve_s": opt.solve_s,
        }
    improvement = 1.0 - sch.round_s / base.round_s if base.round_s > 0 else 0.0
    tokens = {j.tokens for j in jobs}
    summary = Summary(
        n_jobs=len(jobs),
        context_tokens=tokens.pop() if len(tokens) == 1 else None,
        round_tdm_s=sch.round_s,
        round_non_tdm_s=base.round_s,
        improvement=improvement,
        groups={
            "0": np.flatnonzero(sch.grouping == 0).tolist(),
            "1": np.flatnonzero(sch.grouping == 1).tolist(),
        },
        stages=_stage_rows(sch),
        iterations=hc.iterations,
        evaluations=hc.evaluations,
        solve_s=solve_s,
        ilp=ilp_info,
    )
    return RunResult(instance=instance, hill_climb=hc, baseline=base, summary=summary)


def run_sweep(config: TdmConfig, *, seed: int | None = None) -> list[dict[str, Any]]:
    """Round time of TDM and non-TDM over ``[sweep]`` values (one instance per value).

    Every point redraws its jobs from the same seed, so points differ only in the swept value.

    Examples
    --------
    >>> from lumoscore.tdm.config import preset
    >>> rows = run_sweep(preset("small"))
    >>> sorted({r["sweep"] for r in rows}), all(r["round_tdm_s"] <= r["round_non_tdm_s"]
    ...                                         for r in rows)
    (['context_tokens', 'n_jobs'], True)
    """
    rows = []
    for name, values in (
        ("n_jobs", config.sweep.n_jobs),
        ("context_tokens", config.sweep.context_tokens),
    ):
        for v in values:
            kw = {name: v}
            s = run(config, seed=seed, ilp=False, **kw).summary
            rows.append(
                {
                    "sweep": name,
                    "value": v,
                    "round_tdm_s": s.round_tdm_s,
                    "round_non_tdm_s": s.round_non_tdm_s,
                    "improvement": s.improvement,
                    "solve_s": s.solve_s,
                }
            )
    return rows


#: Resolution of the PNG round-time charts (matplotlib's default figure dpi).
_PLOT_DPI = 100


def plot_sweep(rows: list[dict[str, Any]], path: Path | str) -> Path:
    """Write the round-time charts (TDM vs non-TDM against jobs and context length).

    The suffix of ``path`` picks the format (PNG, SVG or PDF); the file is written atomically
    and byte-for-byte reproducibly (:func:`lumoscore.figures.save_figure`) into an existing
    folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> rows = [{"sweep": "n_jobs", "value": 1, "round_tdm_s": 1.0, "round_non_tdm_s": 2.0}]
    >>> out = plot_sweep(rows, pathlib.Path(tempfile.mkdtemp()) / "tdm.png")
    >>> out.exists()
    True
    """
    from matplotlib.figure import Figure

    path = Path(path)
    figure_format(path)  # a bad suffix fails before any work
    panels = [
        (name, label)
        for name, label in (("n_jobs", "number of jobs"), ("context_tokens", "context length"))
        if any(r["sweep"] == name for r in rows)
    ]
    fig = Figure(figsize=(5.5 * max(len(panels), 1), 4))
    axes = np.atleast_1d(fig.subplots(1, max(len(panels), 1)))
    for ax, (name, label) in zip(axes, panels, strict=False):
        pts = sorted((r for r in rows if r["sweep"] == name), key=lambda r: r["value"])
        xs = [r["value"] for r in pts]
        ax.plot(xs, [r["round_non_tdm_s"] for r in pts], "s--", label="non-TDM")
        ax.plot(xs, [r["round_tdm_s"] for r in pts], "o-", label="TDM (Alg. 1)")
        ax.set_xlabel(label)
        ax.set_ylabel("round time (s)")
        if name == "context_tokens":
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Round time, TDM multi-stage vs non-TDM")
    fig.tight_layout()
    return save_figure(fig, path, dpi=_PLOT_DPI)
