"""``lumos tdm``: TDM multi-stage scheduling of PS / RAR / all-to-all jobs (Tang et al.)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console
from lumoscore.errors import ConfigError

__all__ = ["register"]


def tdm(
    file: Annotated[
        Path | None,
        typer.Argument(help="TOML configuration (see docs/tdm.md). Omit with --preset."),
    ] = None,
    preset_name: Annotated[
        str | None,
        typer.Option("--preset", help="Built-in configuration: paper (§IV) or small."),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="Override the seed.")] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", min=0, help="Override workload.n_jobs.")
    ] = None,
    context: Annotated[
        int | None, typer.Option("--context", min=1, help="Override the context length.")
    ] = None,
    ilp: Annotated[
        bool | None,
        typer.Option("--ilp/--no-ilp", help="Also solve the exact ILP (small instances)."),
    ] = None,
    sweep: Annotated[
        bool, typer.Option("--sweep", help="Run the \\[sweep] values (implied by --plot).")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write round time vs jobs and vs context length (PNG/SVG)."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Group jobs into two TDM groups (Alg. 1-3) and compare the round time with non-TDM."""
    from lumoscore.figures import figure_format
    from lumoscore.fileio import check_targets
    from lumoscore.tdm.config import load_config, preset
    from lumoscore.tdm.runner import plot_sweep, run, run_sweep

    if file is None and preset_name is None:
        raise ConfigError("give a configuration FILE or --preset NAME (paper, small)")
    if file is not None and preset_name is not None:
        raise ConfigError("give a configuration FILE or --preset NAME (paper, small), not both")
    config = load_config(file) if file is not None else preset(str(preset_name))
    if jobs is not None and config.jobs:
        raise ConfigError("--jobs applies to a [workload] configuration, not explicit [[jobs]]")
    if plot is not None:  # a bad chart path fails before the solves, not after them
        figure_format(plot)
        check_targets([plot])
    result = run(config, seed=seed, n_jobs=jobs, context_tokens=context, ilp=ilp)
    rows = run_sweep(config, seed=seed) if (sweep or plot is not None) else []
    if plot is not None:
        if not rows:
            raise ConfigError("--plot needs [sweep] n_jobs or context_tokens values")
        plot_sweep(rows, plot)
    s = result.summary
    if json_out:
        out = {
            "round_time_tdm_s": s.round_tdm_s,
            "round_time_non_tdm_s": s.round_non_tdm_s,
            "improvement": s.improvement,
            "n_jobs": s.n_jobs,
            "context_tokens": s.context_tokens,
            "groups": s.groups,
            "stages": s.stages,
            "iterations": s.iterations,
            "evaluations": s.evaluations,
            "solve_s": s.solve_s,
            "ilp": s.ilp,
            "sweep": rows,
            "plot": str(plot) if plot is not None else None,
        }
        emit_json(out)
        return
    console = out_console()
    table = Table(title=f"TDM round ({s.n_jobs} jobs, context {s.context_tokens or 'mixed'})")
    for col in ("stage", "comm. group", "phase", "comm (s)", "compute (s)", "stage (s)", "reconf"):
        table.add_column(col, justify="right")
    for r in s.stages:
        table.add_row(
            str(r["stage"]),
            str(r["communicating_group"]),
            r["phase"],
            f"{r['comm_s']:.4g}",
            f"{r['compute_s']:.4g}",
            f"{r['stage_s']:.4g}",
            "yes" if r["reconfig_after"] else "",
        )
    console.print(table)
    console.print(
        f"round time: TDM {s.round_tdm_s:.4g} s, non-TDM {s.round_non_tdm_s:.4g} s, "
        f"improvement {100 * s.improvement:.2f} %  "
        f"(groups {len(s.groups['0'])}/{len(s.groups['1'])} jobs, {s.iterations} moves, "
        f"solved in {s.solve_s:.3f} s)"
    )
    if s.ilp is not None:
        console.print(
            f"ILP optimum {s.ilp['round_s']:.4g} s ({s.ilp['status']}), heuristic gap "
            f"{100 * s.ilp['heuristic_gap']:.2f} %, solved in {s.ilp['solve_s']:.2f} s"
        )
    if rows:
        sw = Table(title="sweep")
        for col in ("sweep", "value", "TDM (s)", "non-TDM (s)", "improvement"):
            sw.add_column(col, justify="right")
        for r in rows:
            sw.add_row(
                r["sweep"],
                str(r["value"]),
                f"{r['round_tdm_s']:.4g}",
                f"{r['round_non_tdm_s']:.4g}",
                f"{100 * r['improvement']:.2f} %",
            )
        console.print(sw)
    if plot is not None:
        console.print(f"chart written to {plot}")


def register(app: typer.Typer) -> None:
    """Add ``lumos tdm`` to the app."""
    app.command("tdm")(tdm)
