"""The whole LumosCore paper in one command (``lumos run --preset all``).

:func:`run_paper` runs every simulation and task preset of the LumosCore paper
(:data:`LUMOSCORE_PRESETS`) at the paper's scale with several seeds. The simulation presets
share many runs (the seven architectures at 4096 GPUs and the default workload level are
in Fig. 8(a)(b), 8(c), 8(d), 8(e), 23, 24 and 25), so their runs
are pooled: each distinct simulation runs once, in one sweep (:func:`~lumoscore.experiments.
runner.run_sweep`, on the local process pool or Dask), longest first. Runs that differ only
in writing a default out (``routing = "probing"`` on Clos, ``rail_optimized = false``) are
one simulation (:meth:`RunConfig.canonical
<lumoscore.experiments.config.RunConfig.canonical>`). Each preset's folder then receives
its own runs, hard-linked from the pool, with the index, summary and report that
``lumos run --preset NAME`` writes. The task presets run afterwards on the local pool, one
per worker.

Layout under the output folder::

    store/                 every distinct simulation once (a result store)
    <simulation preset>/   its runs (linked from store/), index, summary.csv, report/
    <task preset>/         its tables and figures; preset.json, written last, marks it done
    paper.json             what ran: options, every preset's folder, runs or files, time
    summary.csv, summary.md  one row per preset

Everything resumes: stored runs are not run again, and a task preset whose ``preset.json``
exists is skipped, so running the same command after an interruption finishes the rest.

Examples
--------
>>> [p for p in LUMOSCORE_PRESETS if p.startswith("fig8")]
['fig8ab', 'fig8c', 'fig8d', 'fig8e']
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from rich.console import Console

from lumoscore.errors import ConfigError, LumosError
from lumoscore.experiments.config import ExperimentConfig, RunConfig
from lumoscore.experiments.presets import (
    PaperPreset,
    _write_table,
    get_preset,
    preset_document,
    preset_experiments,
    preset_runs,
    run_task,
)
from lumoscore.experiments.runner import run_sweep
from lumoscore.experiments.store import ResultStore, run_key
from lumoscore.experiments.summary import write_summary
from lumoscore.fileio import atomic_write_text
from lumoscore.pools import worker_pool

__all__ = [
    "ALL_PRESET",
    "DEFAULT_PAPER_SEEDS",
    "LUMOSCORE_PRESETS",
    "STORE_FOLDER",
    "PaperPlan",
    "PaperRunError",
    "PresetRecord",
    "paper_plan",
    "paper_status",
    "run_paper",
]

#: The name ``lumos run --preset`` takes for the whole paper.
ALL_PRESET = "all"
#: The presets of the LumosCore paper, in the order they run: simulations, then tasks.
LUMOSCORE_PRESETS: tuple[str, ...] = (
    "fig8ab",
    "fig8c",
    "fig8d",
    "fig8e",
    "fig23",
    "fig24",
    "fig25",
    "fig7",
    "table6",
    "sec6.6",
    "fig6c",
    "fig6c-ocs",
    "fig10",
    "testbed-dynamic",
    "testbed-minrewiring",
    "reconfig-interval",
)
#: Seeds of every simulation run (1..n) unless told otherwise.
DEFAULT_PAPER_SEEDS = 3
#: Folder of the pooled simulation runs under the output folder.
STORE_FOLDER = "store"


class PaperRunError(LumosError):
    """Some task presets failed; the message names them (everything else is written)."""


@dataclass(frozen=True)
class PresetRecord:
    """What :func:`run_paper` did for one preset.

    Attributes
    ----------
    name, paper, kind : str
        The preset, the figure or table it reproduces, ``simulation`` or ``task``.
    folder : str
        Its output folder.
    items : int
        Simulation: its runs; task: the files it wrote.
    status : str
        ``ran`` (run now), ``stored`` (everything was there already).
    wall_s : float
        Simulation: the summed wall time of its runs (shared runs count in every preset
        that uses them); task: its wall time when it ran.
    """

    name: str
    paper: str
    kind: str
    folder: str
    items: int
    status: str
    wall_s: float


@dataclass(frozen=True)
class PaperPlan:
    """What :func:`run_paper` runs (:func:`paper_plan`).

    Attributes
    ----------
    parts : dict
        Each simulation preset's parts (:func:`~lumoscore.experiments.presets.
        preset_experiments`, overrides applied), by name.
    runs : dict
        Each simulation preset's runs, by name.
    pooled : dict
        The distinct simulations among them: the :meth:`~RunConfig.canonical` form of the
        runs, by its key.
    tasks : list of str
        The task presets.
    """

    parts: dict[str, list[ExperimentConfig]]
    runs: dict[str, list[RunConfig]]
    pooled: dict[str, RunConfig]
    tasks: list[str]


def paper_plan(
    names: Sequence[str] = LUMOSCORE_PRESETS,
    *,
    out: str | Path,
    seeds: int | Sequence[int] = DEFAULT_PAPER_SEEDS,
    jobs: int | None = None,
    eps: float | None = None,
    exposure: str | None = None,
) -> PaperPlan:
    """What :func:`run_paper` runs for the presets ``names`` into ``out``.

    Raises :class:`~lumoscore.errors.ConfigError` for an unknown preset or an override
    that makes a run invalid.

    Examples
    --------
    >>> plan = paper_plan(out="results/all", seeds=1)
    >>> sum(map(len, plan.runs.values())) > len(plan.pooled), plan.tasks[0]
    (True, 'fig7')
    """
    if not names:
        raise ConfigError("presets: an empty list; give at least one")
    presets = [get_preset(n) for n in names]
    parts: dict[str, list[ExperimentConfig]] = {}
    runs: dict[str, list[RunConfig]] = {}
    pooled: dict[str, RunConfig] = {}
    for p in presets:
        if p.kind != "simulation":
            continue
        parts[p.name] = preset_experiments(
            p, jobs=jobs, eps=eps, exposure=exposure, seeds=seeds, out=Path(out) / p.name
        )
        runs[p.name] = preset_runs(parts[p.name])
        for r in runs[p.name]:
            canon = r.canonical()
            pooled.setdefault(run_key(canon), canon)
    tasks = [p.name for p in presets if p.kind == "task"]
    return PaperPlan(parts, runs, pooled, tasks)


def paper_status(plan: PaperPlan, out: str | Path, *, quick: bool = False) -> dict[str, Any]:
    """What of ``plan`` the folder ``out`` holds already (``lumos run --preset all
    --dry-run``): ``distinct_simulations``, ``to_simulate`` (not in its pool) and, per
    preset, ``kind``, ``items`` (runs, or 1 for a task) and ``stored`` (those in the pool, or
    1 for a task done with the same ``quick`` setting).

    Examples
    --------
    >>> import tempfile
    >>> plan = paper_plan(("fig8ab", "fig7"), out="x", seeds=1)
    >>> st = paper_status(plan, tempfile.mkdtemp())
    >>> st["to_simulate"], [(r["preset"], r["stored"]) for r in st["presets"]]
    (7, [('fig8ab', 0), ('fig7', 0)])
    """
    root = Path(out)
    pool = ResultStore(root / STORE_FOLDER)
    rows: list[dict[str, Any]] = []
    for name, runs in plan.runs.items():
        stored = sum(pool.has(run_key(r.canonical())) for r in runs)
        rows.append({"preset": name, "kind": "simulation", "items": len(runs), "stored": stored})
    for name in plan.tasks:
        done = _task_done(root / name, quick) is not None
        rows.append({"preset": name, "kind": "task", "items": 1, "stored": int(done)})
    return {
        "distinct_simulations": len(plan.pooled),
        "to_simulate": sum(not pool.has(k) for k in plan.pooled),
        "presets": rows,
    }


def run_paper(
    out: str | Path,
    *,
    names: Sequence[str] = LUMOSCORE_PRESETS,
    seeds: int | Sequence[int] = DEFAULT_PAPER_SEEDS,
    jobs: int | None = None,
    eps: float | None = None,
    exposure: str | None = None,
    quick: bool = False,
    executor: Literal["local", "dask"] = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    report: bool = True,
    progress: bool = True,
    console: Console | None = None,
    on_preset: Callable[[PresetRecord], None] | None = None,
) -> list[PresetRecord]:
    """Run the presets ``names`` (default: the whole LumosCore paper) into ``out``.

    Parameters
    ----------
    out : str or Path
        Output folder (layout in the module docstring).
    names : sequence of str
        Paper presets (:data:`~lumoscore.experiments.presets.PAPER_PRESETS` names).
    seeds : int or sequence of int
        Seeds of every simulation run (a count ``n``: seeds ``1..n``).
    jobs, eps, exposure : optional
        Overrides of the simulation presets (:func:`~lumoscore.experiments.presets.
        preset_experiments`).
    quick : bool
        Task presets with their seconds-long options (tests, smoke runs).
    executor, workers, scheduler, dask_local
        Where the simulations run (:func:`~lumoscore.experiments.runner.run_sweep`); the
        task presets run on a local pool of ``workers`` processes (default: one per core).
    report : bool
        Write each simulation preset's HTML report.
    progress : bool
        Show the sweep's progress bar and a line per finished preset on ``console``.
    on_preset : callable, optional
        Called with each :class:`PresetRecord` as it is done.

    Returns
    -------
    list of PresetRecord
        One per preset, in the order of ``names``; also written to ``paper.json`` and
        ``summary.csv``/``summary.md``.

    Raises
    ------
    SweepError
        Simulations failed (the others are stored; nothing else ran).
    PaperRunError
        Task presets failed (the others are written).
    """
    root = Path(out)
    plan = paper_plan(names, out=root, seeds=seeds, jobs=jobs, eps=eps, exposure=exposure)
    console = console or Console(stderr=True)
    started = time.perf_counter()
    pool = ResultStore(root / STORE_FOLDER)
    fresh = {k for k in plan.pooled if not pool.has(k)}
    if plan.pooled:
        run_sweep(
            list(plan.pooled.values()),
            pool,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            dask_local=dask_local,
            progress=progress,
            console=console,
        )
    sim_s = time.perf_counter() - started
    records: dict[str, PresetRecord] = {}

    def done(rec: PresetRecord) -> None:
        records[rec.name] = rec
        if progress:
            verb = "done" if rec.status == "ran" else "already stored"
            console.print(f"{rec.name}: {verb} ({rec.items} {_unit(rec.kind)})", highlight=False)
        if on_preset is not None:
            on_preset(rec)

    for name, runs in plan.runs.items():
        preset = get_preset(name)
        done(_fill_preset(root, preset, plan.parts[name], runs, pool, fresh, report=report))
    task_started = time.perf_counter()
    tasks = [get_preset(name) for name in plan.tasks]
    failed = _run_tasks(root, tasks, quick=quick, workers=workers, done=done)
    ordered = [records[n.strip().lower()] for n in names if n.strip().lower() in records]
    _write_overview(
        root,
        ordered,
        options={
            "presets": list(names),
            "seeds": seeds if isinstance(seeds, int) else list(seeds),
            "jobs": jobs,
            "eps": eps,
            "exposure": exposure,
            "quick": quick,
            "distinct_simulations": len(plan.pooled),
            "simulated_now": len(fresh),
        },
        times={
            "simulations_s": sim_s,
            "tasks_s": time.perf_counter() - task_started,
            "total_s": time.perf_counter() - started,
        },
    )
    if failed:
        shown = "; ".join(f"{name}: {type(exc).__name__}: {exc}" for name, exc in failed)
        raise PaperRunError(
            f"{len(failed)} task preset(s) failed ({shown}); the rest is written in {root}"
        ) from failed[0][1]
    return ordered


def _unit(kind: str) -> str:
    return "runs" if kind == "simulation" else "files"


def _fill_preset(
    root: Path,
    preset: PaperPreset,
    parts: list[ExperimentConfig],
    runs: list[RunConfig],
    pool: ResultStore,
    fresh: set[str],
    *,
    report: bool,
) -> PresetRecord:
    """Give a simulation preset's folder its runs from the pool, its index, summary.csv,
    experiment.json and report."""
    folder = root / preset.name
    store = ResultStore(folder)
    pairs = [(run_key(r.canonical()), run_key(r), r) for r in runs]
    added = store.adopt(pool, pairs)
    atomic_write_text(
        folder / "experiment.json",
        json.dumps(preset_document(preset, parts), indent=2, allow_nan=True) + "\n",
    )
    keys = [key for _, key, _ in pairs]
    index = store.index()
    index = index[index["key"].isin(keys)]
    write_summary(store, index)
    if report and (added or not (folder / "report" / "report.html").is_file()):
        from lumoscore.report import write_report

        write_report(folder)
    ran = added > 0 and any(src in fresh for src, _, _ in pairs)
    return PresetRecord(
        name=preset.name,
        paper=preset.paper,
        kind="simulation",
        folder=str(folder),
        items=len(runs),
        status="ran" if ran else "stored",
        wall_s=float(pd.to_numeric(index["wall_s"], errors="coerce").sum()),
    )


def _task_done(folder: Path, quick: bool) -> int | None:
    """Files a finished task preset wrote, or ``None`` when it has to run (no
    ``preset.json``, or one written with other options)."""
    try:
        doc = json.loads((folder / "preset.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if bool(doc.get("options")) != quick:
        return None
    return len(doc.get("files", [])) + 1


def _one_task(name: str, folder: str, quick: bool) -> tuple[int, float]:
    """Run task preset ``name`` into ``folder`` (in a pool worker); return its file count
    and wall time."""
    t0 = time.perf_counter()
    result = run_task(get_preset(name), folder, quick=quick)
    return len(result.files), time.perf_counter() - t0


def _run_tasks(
    root: Path,
    tasks: list[PaperPreset],
    *,
    quick: bool,
    workers: int | None,
    done: Callable[[PresetRecord], None],
) -> list[tuple[str, BaseException]]:
    """Run the task presets not yet done, ``workers`` at a time; return the failures."""

    def record(p: PaperPreset, items: int, status: str, wall_s: float) -> PresetRecord:
        return PresetRecord(p.name, p.paper, "task", str(root / p.name), items, status, wall_s)

    todo = []
    for p in tasks:
        stored = _task_done(root / p.name, quick)
        if stored is None:
            todo.append(p)
        else:
            done(record(p, stored, "stored", 0.0))
    failed: list[tuple[str, BaseException]] = []
    if not todo:
        return failed
    n = min(len(todo), workers if workers is not None else os.cpu_count() or 1)
    if n <= 1:
        for p in todo:
            try:
                files, wall = _one_task(p.name, str(root / p.name), quick)
            except Exception as exc:  # reported with the others by run_paper
                failed.append((p.name, exc))
                continue
            done(record(p, files, "ran", wall))
        return failed
    with worker_pool(n) as pool:
        futures = {pool.submit(_one_task, p.name, str(root / p.name), quick): p for p in todo}
        for fut in cf.as_completed(futures):
            p = futures[fut]
            exc = fut.exception()
            if exc is not None:
                failed.append((p.name, exc))
                continue
            files, wall = fut.result()
            done(record(p, files, "ran", wall))
    return failed


def _write_overview(
    root: Path, records: list[PresetRecord], *, options: dict[str, Any], times: dict[str, float]
) -> None:
    """``paper.json`` and ``summary.csv``/``summary.md`` (one row per preset)."""
    rows = [asdict(r) | {"folder": Path(r.folder).name} for r in records]
    doc = {"preset": ALL_PRESET, **options, **times, "presets": rows}
    atomic_write_text(root / "paper.json", json.dumps(doc, indent=2, allow_nan=True) + "\n")
    _write_table(root, "summary", rows)
