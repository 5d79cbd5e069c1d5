"""``lumos run``: run an experiment file (or the built-in default experiment) into a store."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lumoscore.cli._common import (
    JsonOption,
    emit_json,
    folder_path,
    out_console,
    table_console,
    to_jsonable,
    varying_columns,
)
from lumoscore.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from lumoscore.experiments.config import ExperimentConfig

__all__ = ["register", "summary_rows_table"]


def summary_rows_table(title: str, summary: pd.DataFrame) -> Table:
    """A rich table of :func:`~lumoscore.experiments.summary.summarize_index` rows."""
    from lumoscore.experiments.summary import STAT_COLUMNS

    table = Table(title=title)
    extra = [
        c for c in summary.columns if c not in ("arch", "runs", *STAT_COLUMNS, "slowdown_vs_best")
    ]
    longest = max((len(str(a)) for a in summary["arch"]), default=12)
    table.add_column("architecture", no_wrap=True, min_width=longest)
    short = [c.rsplit(".", 1)[-1] for c in extra]
    for c, name in zip(extra, short, strict=True):
        table.add_column(name if short.count(name) == 1 else c, justify="right")
    table.add_column("runs", justify="right")
    for col in STAT_COLUMNS:
        stat, metric, _ = col.split("_")
        table.add_column(f"{metric.upper()}\n{stat}", justify="right")
    table.add_column("JCT /\nBest", justify="right")

    def fmt(x: Any) -> str:
        return "-" if x is None or not math.isfinite(float(x)) else f"{float(x):,.0f}"

    for _, r in summary.iterrows():
        slow = r["slowdown_vs_best"]
        table.add_row(
            str(r["arch"]),
            *(str(r[c]) for c in extra),
            str(r["runs"]),
            *(fmt(r[c]) for c in STAT_COLUMNS),
            "-" if not math.isfinite(float(slow)) else f"{float(slow):.3f}",
        )
    table.caption = (
        "times in s, mean over seeds; JCT / Best: mean JCT over Best's on the same trace"
    )
    return table


def _override(
    config: ExperimentConfig,
    *,
    out: Path | None,
    jobs: int | None,
    eps: float | None,
    gpus: list[int] | None = None,
    exposure: str | None = None,
    seeds: int | None = None,
) -> ExperimentConfig:
    from lumoscore.experiments.config import ExperimentConfig, format_validation_error

    doc = config.model_dump(exclude_none=True)
    sweep = dict(doc.get("sweep", {}))
    if out is not None:
        doc["output"] = str(out)
    if jobs is not None:
        if config.trace.file is not None or "trace.file" in sweep:
            raise ConfigError("--jobs: only with preset traces (a trace file runs its own jobs)")
        doc["trace"]["jobs"] = jobs
        sweep.pop("trace.jobs", None)
    if eps is not None:
        doc["eps"] = eps
        sweep.pop("eps", None)
    if exposure is not None:
        doc["exposure"] = exposure
        sweep.pop("exposure", None)
    if gpus:
        doc["gpus"] = list(gpus)
    if seeds is not None:
        doc["seeds"] = seeds
    doc["sweep"] = sweep
    import pydantic

    try:
        return ExperimentConfig.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None


def run(
    file: Annotated[
        Path | None,
        typer.Argument(help="Experiment TOML file; without it, the built-in default experiment."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", parser=folder_path, help="Result store folder (default: the file's output)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Local worker processes (default: one per core)."),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="Run on a Dask distributed scheduler (tcp://HOST:PORT)."),
    ] = None,
    dask_local: Annotated[
        int | None,
        typer.Option(
            "--dask-local", min=1, help="Run on a Dask LocalCluster of N worker processes."
        ),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", min=1, help="Override the trace's job count.")
    ] = None,
    seeds: Annotated[
        int | None,
        typer.Option(
            "--seeds",
            min=1,
            help="Override the seeds: 1..N (`--preset all`: default 3).",
        ),
    ] = None,
    eps: Annotated[
        float | None,
        typer.Option(
            "--eps",
            min=0.0,
            help="Override eps (0 = exact max-min rates, the fast mode; e.g. 0.01 = "
            "(1+eps)-approximate, several times slower on contended fabrics).",
        ),
    ] = None,
    exposure: Annotated[
        str | None,
        typer.Option(
            "--exposure",
            help="Override the traffic model: research (the traffic of the paper's published "
            "runs, the default) or literal (each class takes exactly its exposed share at "
            "1.6 Tb/s).",
        ),
    ] = None,
    report: Annotated[
        bool, typer.Option("--report/--no-report", help="Write the HTML report when available.")
    ] = True,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="List the runs (key, fields, stored or not); run nothing."),
    ] = False,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="Run a paper preset (`lumos presets` lists them) instead of an experiment file.",
        ),
    ] = None,
    gpus: Annotated[
        list[int] | None,
        typer.Option(
            "--gpus",
            min=8,
            help="Override the cluster sizes (repeat for several; task presets: their scales).",
        ),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Task presets: a seconds-long smoke run at tiny scale."),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Run an experiment (every architecture x size x sweep value x seed) into a result store.

    `--preset NAME` runs a paper preset instead (`lumos presets` lists them).
    Simulation presets run at the paper's scale and setup (`--jobs N` for a
    smaller trace); task presets (fig7, table6, sec6.6) write their tables
    and figures into `--out` (default results/NAME). `--preset all` runs every
    preset of the LumosCore paper with 3 seeds into results/all (one folder per
    preset; shared simulations run once).

    Finished runs are kept: running the same command again (for example after Ctrl-C) runs
    only the missing ones. Prints a summary table (mean/p50/p99 of JRT, JWT, JCT and the JCT
    slowdown against Best) and writes index.csv/index.parquet and a report into the store.
    """
    from lumoscore.experiments.config import (
        DEFAULT_EXPERIMENT,
        check_trace_files,
        expand,
        load_experiment,
    )
    from lumoscore.experiments.runner import run_sweep
    from lumoscore.experiments.store import ResultStore
    from lumoscore.experiments.summary import write_summary
    from lumoscore.fileio import atomic_write_text

    if scheduler is not None and dask_local is not None:
        raise ConfigError("give at most one of --scheduler and --dask-local")
    if scheduler is not None:
        from lumoscore.experiments.runner import check_scheduler_address

        check_scheduler_address(scheduler)
    if preset is not None and preset.strip().lower() == "all":
        if file is not None:
            raise ConfigError("give either an experiment FILE or --preset, not both")
        if gpus:
            raise ConfigError("--gpus: not used by --preset all (every preset keeps its sizes)")
        _run_all(
            out=out if out is not None else Path("results") / "all",
            seeds=seeds,
            jobs=jobs,
            eps=eps,
            exposure=exposure,
            quick=quick,
            workers=workers,
            scheduler=scheduler,
            dask_local=dask_local,
            report=report,
            dry_run=dry_run,
            json_out=json_out,
        )
        return
    if preset is not None:
        from lumoscore.experiments.presets import (
            get_preset,
            preset_document,
            preset_experiments,
            preset_runs,
        )

        if file is not None:
            raise ConfigError("give either an experiment FILE or --preset, not both")
        paper = get_preset(preset)
        if paper.kind == "task":
            _run_task_preset(
                paper,
                out=out,
                gpus=gpus,
                quick=quick,
                json_out=json_out,
                ignored={
                    "--jobs": jobs,
                    "--eps": eps,
                    "--exposure": exposure,
                    "--seeds": seeds,
                    "--dry-run": dry_run or None,
                    "--scheduler": scheduler,
                    "--dask-local": dask_local,
                    "--workers": workers,
                },
            )
            return
        if quick:
            raise ConfigError("--quick applies to task presets only; use --jobs and --gpus")
        parts = preset_experiments(
            paper, jobs=jobs, eps=eps, gpus=gpus, out=out, exposure=exposure, seeds=seeds
        )
        runs = preset_runs(parts)
        name = paper.name
        out_dir = parts[0].output_dir()
        doc = preset_document(paper, parts)
    else:
        if quick:
            raise ConfigError("--quick applies to task presets (--preset) only")
        config = DEFAULT_EXPERIMENT if file is None else load_experiment(file)
        config = _override(
            config, out=out, jobs=jobs, eps=eps, gpus=gpus, exposure=exposure, seeds=seeds
        )
        runs = expand(config)
        try:
            check_trace_files(runs)
        except ConfigError as exc:
            raise ConfigError(f"{file}: {exc}" if file is not None else str(exc)) from None
        name = config.name
        out_dir = config.output_dir()
        doc = config.model_dump(mode="json")
    store = ResultStore(out_dir)
    if dry_run:
        _list_runs(name, runs, store, json_out=json_out)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    _check_outputs(out_dir, report=report)
    atomic_write_text(out_dir / "experiment.json", json.dumps(doc, indent=2, allow_nan=True) + "\n")
    err = Console(stderr=True)
    try:
        index = run_sweep(
            runs,
            store,
            **_where(workers, scheduler, dask_local),
            progress=not json_out,
            console=err,
        )
    except KeyboardInterrupt:
        done = sum(store.has(store.key(r)) for r in runs)
        err.print(
            f"interrupted: {done} of {len(runs)} runs are stored in {out_dir}; "
            "run the same command again to resume",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    summary = write_summary(store, index)
    report_path = _write_report(out_dir) if report else None
    if json_out:
        emit_json(
            {
                "experiment": name,
                "output": str(out_dir),
                "report": None if report_path is None else str(report_path),
                "runs": index.to_dict(orient="records"),  # (emit_json: NaN as null)
            }
        )
        return
    title = f"{name}: {len(runs)} runs"
    console = table_console()
    console.print(summary_rows_table(title, summary))
    console.print(f"results in {out_dir}/ (index.csv, summary.csv, runs/<key>/)")
    if report_path is not None:
        console.print(f"report: {report_path}")


def _where(workers: int | None, scheduler: str | None, dask_local: int | None) -> dict[str, Any]:
    """The executor options of :func:`~lumoscore.experiments.runner.run_sweep`: Dask when a
    scheduler or a local Dask cluster is asked for, else the local process pool."""
    return {
        "executor": "dask" if (scheduler or dask_local) else "local",
        "workers": workers,
        "scheduler": scheduler,
        "dask_local": dask_local,
    }


def _list_runs(name: str, runs: list[Any], store: Any, *, json_out: bool) -> None:
    """Print the runs of an experiment and whether the store has them (``--dry-run``)."""
    from lumoscore.experiments.store import flatten

    rows = [
        {"key": store.key(r), "stored": _intact(store, store.key(r)), **flatten(r.model_dump())}
        for r in runs
    ]
    if json_out:
        emit_json({"experiment": name, "output": str(store.root), "runs": rows})
        return
    shown = varying_columns(rows, skip=("key", "stored"))
    table = Table(title=f"{name}: {len(rows)} runs in {store.root}")
    for col in ("key", *shown, "seed", "stored"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["key"], *(str(r[c]) for c in shown), str(r["seed"]), "yes" if r["stored"] else "-"
        )
    console = table_console()
    console.print(table)
    missing = sum(not r["stored"] for r in rows)
    console.print(f"{missing} of {len(rows)} runs to simulate")


def _run_all(
    *,
    out: Path,
    seeds: int | None,
    jobs: int | None,
    eps: float | None,
    exposure: str | None,
    quick: bool,
    workers: int | None,
    scheduler: str | None,
    dask_local: int | None,
    report: bool,
    dry_run: bool,
    json_out: bool,
) -> None:
    """``lumos run --preset all``: every preset of the LumosCore paper into ``out``."""
    from lumoscore.experiments.paper import (
        DEFAULT_PAPER_SEEDS,
        paper_plan,
        paper_status,
        run_paper,
    )

    n_seeds = seeds if seeds is not None else DEFAULT_PAPER_SEEDS
    options = {"seeds": n_seeds, "jobs": jobs, "eps": eps, "exposure": exposure}
    if dry_run:
        status = paper_status(paper_plan(out=out, **options), out, quick=quick)
        _list_paper(status, out, json_out=json_out)
        return
    err = Console(stderr=True)
    try:
        records = run_paper(
            out,
            **options,
            **_where(workers, scheduler, dask_local),
            quick=quick,
            report=report,
            progress=not json_out,
            console=err,
        )
    except KeyboardInterrupt:
        err.print(
            f"interrupted: what finished is stored in {out}; run the same command again to resume",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    if json_out:
        emit_json({"preset": "all", "output": str(out), "presets": [vars(r) for r in records]})
        return
    table = Table(title=f"The LumosCore paper: {len(records)} presets, seeds 1-{n_seeds}")
    for col in ("preset", "paper", "kind", "runs / files", "status", "wall (s)", "folder"):
        table.add_column(col, justify="right" if col in ("runs / files", "wall (s)") else "left")
    for r in records:
        table.add_row(
            r.name, r.paper, r.kind, str(r.items), r.status, f"{r.wall_s:,.1f}", f"{r.folder}/"
        )
    table.caption = (
        "wall: a task's time; a simulation preset's summed run times (shared runs count in "
        "every preset that uses them)"
    )
    console = table_console()
    console.print(table)
    console.print(f"results in {out}/ (paper.json, summary.md, one folder per preset)")


def _list_paper(status: dict[str, Any], out: Path, *, json_out: bool) -> None:
    """Print what ``--preset all`` would run and what is already there (``--dry-run``)."""
    if json_out:
        emit_json({"preset": "all", "output": str(out), **status})
        return
    rows = status["presets"]
    table = Table(title=f"--preset all: {len(rows)} presets into {out}")
    for col in ("preset", "kind", "runs", "stored"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["preset"], r["kind"], str(r["items"]), str(r["stored"]))
    console = out_console()
    console.print(table)
    console.print(
        f"{status['to_simulate']} of {status['distinct_simulations']} distinct simulations to "
        f"run; {sum(r['kind'] == 'task' and not r['stored'] for r in rows)} task presets to run"
    )


def _run_task_preset(
    paper: Any,
    *,
    out: Path | None,
    gpus: list[int] | None,
    quick: bool,
    json_out: bool,
    ignored: dict[str, Any],
) -> None:
    """Run a task preset (``lumos run --preset fig7|table6|sec6.6``) and list its files."""
    from lumoscore.experiments.presets import run_task, takes_sizes

    given = [flag for flag, value in ignored.items() if value is not None]
    if given:
        sizes = "--gpus, " if takes_sizes(paper) else ""
        raise ConfigError(
            f"{', '.join(given)}: not used by task preset {paper.name!r}; "
            f"allowed: --out, {sizes}--quick, --json"
        )
    out_dir = out if out is not None else Path("results") / paper.name
    result = run_task(paper, out_dir, gpus=gpus or None, quick=quick)
    if json_out:
        emit_json(
            {
                "preset": paper.name,
                "paper": paper.paper,
                "output": str(out_dir),
                "files": [str(p) for p in result.files],
                "rows": to_jsonable(list(result.rows)),
            }
        )
        return
    console = out_console()
    if result.rows and paper.name != "fig7":
        table = Table(title=f"{paper.name} ({paper.paper}): {paper.title}")
        cols = list(result.rows[0])
        for col in cols:
            table.add_column(
                col, justify="left" if col in ("strategy", "solver", "status") else "right"
            )
        for row in result.rows:
            table.add_row(*(_fmt_cell(row[c]) for c in cols))
        console.print(table)
    console.print(f"{paper.name} ({paper.paper}): wrote {len(result.files)} files in {out_dir}/")
    for p in result.files:
        console.print(f"  {p.name}")


def _fmt_cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if not math.isfinite(value) else f"{value:.4g}"
    return str(value)


def _check_outputs(out_dir: Path, *, report: bool) -> None:
    """Refuse, before any run, the files written at the end that cannot be (a folder in the
    way of ``summary.csv``, a file named ``report``): not after an hour of simulation."""
    from lumoscore.fileio import check_targets

    names = ["experiment.json", "summary.csv", "index.csv", "index.parquet"]
    folder = out_dir / "report"
    if report and folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: is a file; the report is written into a folder of that name")
    if report and folder.is_dir():
        names += [f"report/{n}" for n in ("report.html", "summary.md", "summary.csv", "runs.csv")]
    check_targets(out_dir / n for n in names)


def _write_report(out_dir: Path) -> Path | None:
    """``lumoscore.report.write_report(out_dir)`` when that package exists."""
    try:
        from lumoscore.report import write_report  # type: ignore[attr-defined]
    except ImportError:
        return None
    return Path(write_report(out_dir))


def _intact(store: Any, key: str) -> bool:
    """Whether the store holds run ``key`` complete and undamaged (else it runs again)."""
    return bool(store.has(key)) and store.damage(key) is None


def register(app: typer.Typer) -> None:
    """Add ``lumos run`` (and its alias ``lumos sweep``) to the app."""
    app.command("run")(run)
    app.command(
        "sweep",
        help="Alias of `lumos run`: a sweep is an experiment file with lists or a sweep table.",
    )(run)
