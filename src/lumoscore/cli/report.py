"""``lumos report DIR``: tables, figures and an HTML page of an experiment's result directory."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from lumoscore.cli._common import (
    JsonOption,
    emit_json,
    folder_path,
    table_console,
    varying_columns,
)
from lumoscore.errors import LumosError

if TYPE_CHECKING:
    from lumoscore.experiments.config import RunConfig

__all__ = ["register", "report"]

#: Summary columns printed on the terminal (the files hold them all).
_TERMINAL = (
    "seeds",
    "mean JRT (s)",
    "mean JWT (s)",
    "mean JCT (s)",
    "p99 JCT (s)",
    "JRT slow-down vs Best",
    "contention level",
)


def report(
    directory: Annotated[
        Path, typer.Argument(help="Result directory written by `lumos run` (index.parquet, runs/).")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            parser=folder_path,
            help="Directory for the report files (default: DIR/report).",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Write summary tables (Markdown, CSV), figures (PNG, SVG) and report.html for DIR."""
    from lumoscore.report import build_report, load_runs, save_report

    runs = load_runs(directory)
    expected, unstored = _unstored(directory)
    if unstored:
        runs = dataclasses.replace(runs, unstored=_describe(unstored, expected))
        Console(stderr=True).print(
            f"lumos: warning: {directory}: {len(unstored)} run(s) of its experiment.json are "
            f"not stored (e.g. {runs.unstored[0]}); the report covers the {len(runs.keys)} "
            "stored. `lumos run` with the same experiment and --out runs the rest",
            highlight=False,
            soft_wrap=True,
        )
    rep = build_report(runs)
    out_dir = out if out is not None else directory / "report"
    paths = save_report(rep, out_dir)
    if json_out:
        emit_json(
            {
                "experiment": rep.name,
                "header": rep.header,
                "rows": rep.aggregate.astype(object)
                .where(rep.aggregate.notna(), None)
                .to_dict(orient="records"),
                "paths": {name: str(p) for name, p in paths.items()},
                "html": str(paths["report.html"]),
            }
        )
        return
    table = Table(title=f"{rep.name}: mean over seeds ± 95% CI")
    shown = [c for c in rep.summary.columns if c in ("arch", *rep.varying) or c in _TERMINAL]
    for col in shown:
        table.add_column(str(col), justify="left" if col == "arch" else "right")
    for row in rep.summary[shown].itertuples(index=False, name=None):
        table.add_row(*[str(v) for v in row])
    console = table_console()
    console.print(table)
    console.print(f"wrote {len(paths)} files to {out_dir}: {', '.join(sorted(paths))}")
    console.print(f"report: {paths['report.html']}")


def _unstored(directory: Path) -> tuple[list[RunConfig], list[RunConfig]]:
    """The runs ``directory/experiment.json`` describes, and those of them that have no stored
    result; none when there is no readable experiment document (a store made otherwise)."""
    from lumoscore.experiments.presets import experiment_runs
    from lumoscore.experiments.store import ResultStore

    try:
        doc = json.loads((directory / "experiment.json").read_text(encoding="utf-8"))
        expected = experiment_runs(doc)
    except (OSError, ValueError, TypeError, LumosError):
        return [], []
    return expected, ResultStore(directory).unstored(expected)


def _describe(runs: list[RunConfig], among: list[RunConfig]) -> tuple[str, ...]:
    """Each of ``runs`` as ``arch=..., gpus=..., <fields that vary in among>, seed=...``."""
    from lumoscore.experiments.store import flatten

    shown = varying_columns([flatten(r.model_dump()) for r in among])
    rows = [flatten(r.model_dump()) for r in runs]
    return tuple(", ".join(f"{c}={r[c]}" for c in (*shown, "seed")) for r in rows)


def register(app: typer.Typer) -> None:
    """Add ``lumos report`` to the app."""
    app.command("report")(report)
