"""``lumos trace``: generate, import, export and inspect job traces (``docs/workload.md``).

Examples
--------
``lumos trace generate --preset lumoscore-paper --jobs 1000 --seed 1 --out jobs.csv``
``lumos trace import cluster_log.csv --format helios --size-mapping tpuv4 --out jobs.parquet``
``lumos trace stats jobs.csv --gpus 4096 --plot jobs.png --json``
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from lumoscore.cli._common import JsonOption, emit_json, to_jsonable
from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.limits import MAX_GPUS
from lumoscore.workload.importers import (
    SIZE_MAPPINGS,
    import_helios,
    read_joblist,
    write_joblist,
)
from lumoscore.workload.load import with_level, workload_level
from lumoscore.workload.presets import LOAD_BASES, PRESETS, generate_trace
from lumoscore.workload.stats import plot_trace, trace_stats
from lumoscore.workload.trace import Trace, TraceMeta
from lumoscore.workload.tracefile import read_trace, trace_format, write_trace

__all__ = ["IMPORT_FORMATS", "register", "trace_app"]

#: Input formats of ``lumos trace import``.
IMPORT_FORMATS: tuple[str, ...] = ("helios", "joblist", "alibaba-2020", "alibaba-2023", "philly")
#: Output formats of ``lumos trace export`` (besides .csv/.parquet trace files).
EXPORT_FORMATS: tuple[str, ...] = ("joblist",)

trace_app = typer.Typer(
    name="trace",
    help="Generate, import, export and inspect job traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def register(app: typer.Typer) -> None:
    """Add the ``trace`` command group to ``app``."""
    app.add_typer(trace_app, name="trace")


def _choice(name: str, value: str, allowed: tuple[str, ...] | list[str]) -> str:
    if value not in allowed:
        raise ConfigError(f"{name}: unknown value {value!r} (allowed: {', '.join(allowed)})")
    return value


def _level_or_none(trace: Trace) -> float | None:
    try:
        return workload_level(trace)
    except (PreconditionError, ConfigError):  # < 2 arrivals or no cluster size: no level
        return None


def _summary(trace: Trace, out: Path) -> dict[str, object]:
    return {
        "out": str(out),
        "jobs": len(trace),
        "meta": trace.meta.to_dict(),
        "workload_level": _level_or_none(trace),
    }


def _print_summary(summary: dict[str, object]) -> None:
    level = summary["workload_level"]
    level_text = "n/a" if level is None else f"{level:.4f}"
    meta = summary["meta"]
    assert isinstance(meta, dict)
    beta = meta.get("beta_s")
    beta_text = "" if beta is None else f", beta {beta:.1f} s"
    typer.echo(
        f"wrote {summary['jobs']} jobs to {summary['out']} (workload level {level_text}{beta_text})"
    )


def _write_and_report(trace: Trace, out: Path, json_output: bool) -> None:
    """Write ``trace`` to ``out`` atomically and print its summary (JSON or text)."""
    write_trace(trace, out)
    summary = _summary(trace, out)
    if json_output:
        emit_json(summary)
    else:
        _print_summary(summary)


@trace_app.command("generate")
def generate(
    preset: Annotated[
        str, typer.Option("--preset", help=f"Preset: {', '.join(PRESETS)}.")
    ] = "lumoscore-paper",
    jobs: Annotated[int, typer.Option("--jobs", help="Number of jobs.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    beta: Annotated[
        float | None, typer.Option("--beta", help="Mean inter-arrival time (s).")
    ] = None,
    load: Annotated[
        float | None, typer.Option("--load", help="Target workload level (LumosCore Eq. 9).")
    ] = None,
    load_basis: Annotated[
        str,
        typer.Option("--load-basis", help=f"How --load sets arrivals: {', '.join(LOAD_BASES)}."),
    ] = "sample",
    gpus: Annotated[int, typer.Option("--gpus", help="Cluster GPUs (size cap, load).")] = 4096,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output file (.csv or .parquet); required.")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Generate a synthetic trace from a preset."""
    _choice("--preset", preset, list(PRESETS))
    if out is None:
        raise ConfigError("--out is required (a .csv or .parquet file)")
    if beta is not None and load is not None:
        raise ConfigError("--beta and --load are exclusive: give one of them")
    trace_format(out)  # reject a bad suffix before doing any work
    trace = generate_trace(
        preset,
        jobs,
        seed=seed,
        cluster_gpus=gpus,
        beta_s=beta,
        load=load,
        load_basis=_choice("--load-basis", load_basis, LOAD_BASES),
        names={"beta_s": "--beta", "load": "--load"},
    )
    _write_and_report(trace, out, json_output)


@trace_app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="Input file.")],
    fmt: Annotated[
        str, typer.Option("--format", help=f"Input format: {', '.join(IMPORT_FORMATS)}.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Output file (.csv or .parquet).")],
    states: Annotated[
        str,
        typer.Option(
            "--states", help="Cluster logs: comma-separated states to keep ('' keeps all)."
        ),
    ] = "COMPLETED",
    min_duration: Annotated[
        float, typer.Option("--min-duration", help="Cluster logs: keep jobs longer than this (s).")
    ] = 600.0,
    size_mapping: Annotated[
        str,
        typer.Option(
            "--size-mapping", help=f"Cluster logs: GPU mapping: {', '.join(SIZE_MAPPINGS)}."
        ),
    ] = "pow2",
    max_gpus: Annotated[
        int, typer.Option("--max-gpus", min=8, max=MAX_GPUS, help="Cluster logs: size cap.")
    ] = 2048,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Cluster logs: seed of model/PP/EP draws.")
    ] = 0,
    gpus: Annotated[
        int | None, typer.Option("--gpus", min=8, help="Cluster GPUs recorded in the trace.")
    ] = None,
    load: Annotated[
        float | None,
        typer.Option("--load", help="Rescale arrivals to this workload level (needs --gpus)."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Import a cluster trace: Helios/Acme, a research-code job list, Alibaba PAI 2020
    (pai_task_table.csv), Alibaba GPU 2023 (openb_pod_list_*.csv) or Microsoft Philly
    (cluster_job_log)."""
    _choice("--format", fmt, IMPORT_FORMATS)
    trace_format(out)
    if load is not None and gpus is None:
        raise ConfigError("--load needs --gpus (the cluster size the level refers to)")
    if not file.is_file():
        what = "is a directory; give the log file" if file.is_dir() else "no such file"
        raise FileNotFoundError(f"{file}: {what}")
    if fmt == "joblist":
        trace = read_joblist(file)
    else:
        from lumoscore.workload.public_traces import import_public

        keep = [s.strip() for s in states.split(",") if s.strip()] or None
        load_log = import_helios if fmt == "helios" else partial(import_public, fmt=fmt)
        trace = load_log(
            file,
            states=keep,
            min_duration_s=min_duration,
            size_mapping=_choice("--size-mapping", size_mapping, SIZE_MAPPINGS),
            max_gpus=gpus if gpus is not None and gpus < max_gpus else max_gpus,
            seed=seed,
        )
    if gpus is not None:
        old = trace.meta
        trace = Trace(
            trace.columns,
            TraceMeta(old.preset, old.seed, old.beta_s, old.load, gpus, old.source),
        )
    if load is not None:
        trace = with_level(trace, load, gpus, name="--load")
    _write_and_report(trace, out, json_output)


@trace_app.command("export")
def export(
    file: Annotated[Path, typer.Argument(help="Trace file (.csv or .parquet).")],
    out: Annotated[Path, typer.Option("--out", help="Output file.")],
    fmt: Annotated[
        str, typer.Option("--format", help=f"Output format: {', '.join(EXPORT_FORMATS)}.")
    ] = "joblist",
    json_output: JsonOption = False,
) -> None:
    """Export a trace as a research-code job list."""
    _choice("--format", fmt, EXPORT_FORMATS)
    trace = read_trace(file)
    write_joblist(trace, out)
    if json_output:
        emit_json({"out": str(out), "jobs": len(trace), "format": fmt})
    else:
        typer.echo(f"wrote {len(trace)} jobs to {out} ({fmt})")


@trace_app.command("stats")
def stats(
    file: Annotated[Path, typer.Argument(help="Trace file (.csv or .parquet).")],
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", help="Cluster GPUs for the workload level (default: the trace's)."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write size histogram + run-time CDF (.png, .svg, .pdf)."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Size distribution, run-time quantiles, arrival span and workload level of a trace."""
    trace = read_trace(file)
    result = trace_stats(trace, gpus)
    if plot is not None:
        plot_trace(trace, plot)
    if json_output:
        data = to_jsonable(result)
        data["file"] = str(file)
        data["plot"] = None if plot is None else str(plot)
        emit_json(data)
        return
    level = "n/a" if result.workload_level is None else f"{result.workload_level:.4f}"
    typer.echo(f"{file}: {result.jobs} jobs")
    typer.echo(
        f"arrivals: {result.first_arrival_s:.1f} .. {result.last_arrival_s:.1f} s "
        f"(span {result.arrival_span_s:.1f} s)"
    )
    typer.echo(
        f"workload level (Eq. 9): {level} on {result.cluster_gpus} GPUs "
        f"({result.cluster_gpus_source})"
    )
    typer.echo(f"{'gpus':>6} {'jobs':>7} {'share':>7} {'cum':>7}")
    for row in result.sizes:
        typer.echo(f"{row.gpus:>6} {row.count:>7} {row.share:>7.3f} {row.cumulative:>7.3f}")
    q = result.duration_quantiles_s
    typer.echo(
        "run time (s): "
        + ", ".join(f"{k} {q[k]:.0f}" for k in ("min", "p25", "p50", "p75", "p90", "p99", "max"))
        + f", mean {q['mean']:.0f}"
    )
    if plot is not None:
        typer.echo(f"plot: {plot}")
