"""``lumos run``: run an experiment file (or the built-in default experiment) into a store."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console, to_jsonable
from lumoscore.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from lumoscore.experiments.config import ExperimentConfig

__all__ = ["register", "summarize_index", "summary_rows_table"]

#: Statistic columns of the summary table, in order.
STAT_COLUMNS: tuple[str, ...] = tuple(
    f"{stat}_{metric}_s" for metric in ("jrt", "jwt", "jct") for stat in ("mean", "p50", "p99")
)
#: Index columns that never define a group of the summary.
_NOT_GROUPS = {"key", "arch", "seed", "fabric.port_gbps"}


def _config_columns(index: pd.DataFrame) -> list[str]:
    """The run-config columns of the index (``key`` included)."""
    from lumoscore.experiments.config import RunConfig
    from lumoscore.experiments.store import flatten

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
    import pandas as pd

    from lumoscore.report.metrics import BASELINE_ARCH

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


def summary_rows_table(title: str, summary: pd.DataFrame) -> Table:
    """A rich table of :func:`summarize_index` rows."""
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
) -> ExperimentConfig:
    from lumoscore.experiments.config import ExperimentConfig, format_validation_error

    doc = config.model_dump(exclude_none=True)
    sweep = dict(doc.get("sweep", {}))
    if out is not None:
        doc["output"] = str(out)
    if jobs is not None:
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
    doc["sweep"] = sweep
    import pydantic

    try:
        return ExperimentConfig.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None


def _records(index: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in index.to_dict(orient="records"):
        out.append(
            {
                k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in rec.items()
            }
        )
    return out


def run(
    file: Annotated[
        Path | None,
        typer.Argument(help="Experiment TOML file; without it, the built-in default experiment."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Result store folder (default: the file's output).")
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
    and figures into `--out` (default results/NAME).

    Finished runs are kept: running the same command again (for example after Ctrl-C) runs
    only the missing ones. Prints a summary table (mean/p50/p99 of JRT, JWT, JCT and the JCT
    slowdown against Best) and writes index.csv/index.parquet and a report into the store.
    """
    from lumoscore.experiments.config import DEFAULT_EXPERIMENT, expand, load_experiment
    from lumoscore.experiments.runner import run_sweep
    from lumoscore.experiments.store import ResultStore
    from lumoscore.fileio import atomic_write_text

    if scheduler is not None and dask_local is not None:
        raise ConfigError("give at most one of --scheduler and --dask-local")
    if scheduler is not None:
        from lumoscore.experiments.runner import check_scheduler_address

        check_scheduler_address(scheduler)
    if preset is not None:
        from lumoscore.experiments.presets import get_preset, preset_experiments, preset_runs

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
                    "--dry-run": dry_run or None,
                    "--scheduler": scheduler,
                    "--dask-local": dask_local,
                    "--workers": workers,
                },
            )
            return
        if quick:
            raise ConfigError("--quick applies to task presets only; use --jobs and --gpus")
        parts = preset_experiments(paper, jobs=jobs, eps=eps, gpus=gpus, out=out, exposure=exposure)
        runs = preset_runs(parts)
        name = paper.name
        out_dir = parts[0].output_dir()
        doc: dict[str, Any] = {
            "name": paper.name,
            "preset": paper.name,
            "paper": paper.paper,
            "description": paper.description,
            "parts": [part.model_dump(mode="json") for part in parts],
        }
    else:
        if quick:
            raise ConfigError("--quick applies to task presets (--preset) only")
        config = DEFAULT_EXPERIMENT if file is None else load_experiment(file)
        config = _override(config, out=out, jobs=jobs, eps=eps, gpus=gpus, exposure=exposure)
        runs = expand(config)
        name = config.name
        out_dir = config.output_dir()
        doc = config.model_dump(mode="json")
    store = ResultStore(out_dir)
    if dry_run:
        _list_runs(name, runs, store, json_out=json_out)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "experiment.json", json.dumps(doc, indent=2, allow_nan=True) + "\n")
    err = Console(stderr=True)
    executor = "dask" if (scheduler or dask_local) else "local"
    try:
        index = run_sweep(
            runs,
            store,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            dask_local=dask_local,
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
    summary = summarize_index(index)
    atomic_write_text(out_dir / "summary.csv", summary.to_csv(index=False))
    report_path = _write_report(out_dir) if report else None
    if json_out:
        emit_json(
            {
                "experiment": name,
                "output": str(out_dir),
                "report": None if report_path is None else str(report_path),
                "runs": _records(index),
            }
        )
        return
    title = f"{name}: {len(runs)} runs"
    console = out_console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    console.print(summary_rows_table(title, summary))
    console.print(f"results in {out_dir}/ (index.csv, summary.csv, runs/<key>/)")
    if report_path is not None:
        console.print(f"report: {report_path}")


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
    fields = [c for c in rows[0] if c not in ("key", "stored")] if rows else []
    shown = ["arch", "gpus"] + [
        c
        for c in fields
        if c not in ("arch", "gpus", "seed") and len({repr(r[c]) for r in rows}) > 1
    ]
    table = Table(title=f"{name}: {len(rows)} runs in {store.root}")
    for col in ("key", *shown, "seed", "stored"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["key"], *(str(r[c]) for c in shown), str(r["seed"]), "yes" if r["stored"] else "-"
        )
    console = out_console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    console.print(table)
    missing = sum(not r["stored"] for r in rows)
    console.print(f"{missing} of {len(rows)} runs to simulate")


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
    from lumoscore.experiments.presets import run_task

    given = [flag for flag, value in ignored.items() if value is not None]
    if given:
        raise ConfigError(
            f"{', '.join(given)}: not used by task preset {paper.name!r}; "
            "allowed: --out, --gpus, --quick, --json"
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
