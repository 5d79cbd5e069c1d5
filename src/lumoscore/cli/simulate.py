"""``lumos simulate``: run one job trace on one architecture."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, folder_path, out_console
from lumoscore.errors import ConfigError
from lumoscore.sim.queueing import QUEUE_POLICIES

__all__ = ["parse_options", "register", "summary_table"]


def summary_table(title: str, rows: list[tuple[str, dict[str, float]]]) -> Table:
    """A rich table of run summaries: one row per architecture, JRT/JWT/JCT columns."""
    table = Table(title=title)
    table.add_column("architecture")
    table.add_column("jobs", justify="right")
    for col in ("mean JRT", "mean JWT", "mean JCT", "p50 JCT", "p99 JCT"):
        table.add_column(f"{col} (s)", justify="right")
    table.add_column("wall (s)", justify="right")

    def fmt(x: float) -> str:
        return "-" if not math.isfinite(x) else f"{x:,.0f}"

    for name, s in rows:
        table.add_row(
            name,
            str(s["jobs"]),
            fmt(s["mean_jrt_s"]),
            fmt(s["mean_jwt_s"]),
            fmt(s["mean_jct_s"]),
            fmt(s["p50_jct_s"]),
            fmt(s["p99_jct_s"]),
            f"{s['wall_s']:.2f}",
        )
    return table


def parse_options(items: list[str]) -> dict[str, int | float | bool | str]:
    """``KEY=VALUE`` strings as a dict; values become int, float or bool where they read as
    one (``true``/``false``), else stay strings.

    Examples
    --------
    >>> parse_options(["spines=6", "port_gbps=100.5", "polarized=true", "search=ilp"])
    {'spines': 6, 'port_gbps': 100.5, 'polarized': True, 'search': 'ilp'}
    """
    out: dict[str, int | float | bool | str] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise ConfigError(f"--option {item!r}: expected KEY=VALUE, e.g. spines=6")
        value: int | float | bool | str = raw.strip()
        if raw.strip().lower() in ("true", "false"):
            value = raw.strip().lower() == "true"
        else:
            for cast in (int, float):
                try:
                    value = cast(raw)
                    break
                except ValueError:
                    continue
        out[key.strip()] = value
    return out


def simulate(
    arch: Annotated[
        str,
        typer.Option(
            "--arch",
            help="Architecture: best, clos-51.2T-3tier, clos-25.6T-3tier, clos-25.6T-4tier, "
            "lumoscore-51.2T-tau2, lumoscore-51.2T-tau1, lumoscore-25.6T-tau1, vclos, "
            "ocs-vclos, ocs-relax, vclos-leaf-spine, or a generic "
            "clos-<chip>T-<n>tier[-<o>:1] / leaf-spine-<chip>T.",
        ),
    ] = "best",
    gpus: Annotated[int, typer.Option("--gpus", min=8, help="Cluster size in GPUs.")] = 4096,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Trace file (.csv/.parquet).")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="Trace preset to generate instead of --trace: lumoscore-published, "
            "lumoscore-paper, vclos, tpuv4, vclos-helios, vclos-tpuv4, vclos-testbed.",
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", min=1, help="Jobs to generate (with --preset) [default: 1000]."),
    ] = None,
    beta: Annotated[
        float | None, typer.Option("--beta", help="Mean inter-arrival time, s (with --preset).")
    ] = None,
    load: Annotated[
        float | None, typer.Option("--load", help="Target workload level, Eq. 9 (with --preset).")
    ] = None,
    routing: Annotated[
        str | None,
        typer.Option(
            "--routing",
            help="Routing policy (default: the architecture's). Clos: probing (default), "
            "ecmp, ecmp-polarized, balanced, source, ideal; LumosCore: planned (default), ecmp, "
            "probing, ideal; vclos-leaf-spine: ecmp (default), balanced, source, ideal; vclos, "
            "ocs-vclos, ocs-relax: vclos; Best: ideal.",
        ),
    ] = None,
    placer: Annotated[
        str | None,
        typer.Option(
            "--placer",
            help="Placer (default: the architecture's): server, fabric, vclos, locality.",
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="Fabric option KEY=VALUE, repeatable: gpus_per_server and the "
            "architecture's own (e.g. spines=6, gpus_per_leaf=4 on vclos-leaf-spine; "
            "reconfig_delay_s on LumosCore). An unknown key lists the allowed ones.",
        ),
    ] = None,
    queue: Annotated[
        str, typer.Option("--queue", help=f"Queue policy: {', '.join(QUEUE_POLICIES)}.")
    ] = "fifo",
    link_fraction: Annotated[
        float,
        typer.Option(
            "--link-fraction",
            help="Share of the --link-element units down from the start, never repaired [0, 1).",
        ),
    ] = 0.0,
    link_rate: Annotated[
        float,
        typer.Option(
            "--link-rate",
            help="Poisson failures per unit per day (repaired after --link-repair seconds).",
        ),
    ] = 0.0,
    link_repair: Annotated[
        float, typer.Option("--link-repair", help="Repair time of a failed unit, s.")
    ] = 3600.0,
    link_element: Annotated[
        str,
        typer.Option(
            "--link-element",
            help="What fails: leaf-spine (cables), spine-ocs (LumosCore's spine-OCS fibers; "
            "a Clos's tier-2 uplinks) or ocs-port (LumosCore).",
        ),
    ] = "leaf-spine",
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the trace and of every random choice.")
    ] = 0,
    eps: Annotated[
        float,
        typer.Option(
            "--eps",
            min=0.0,
            help="0 = exact max-min rates (incremental, the fast mode); e.g. 0.01 = "
            "(1+eps)-approximate filling (reported in the summary; several times slower "
            "on contended fabrics).",
        ),
    ] = 0.0,
    exposure: Annotated[
        str,
        typer.Option(
            "--exposure",
            help="Traffic model: research (the traffic of the paper's published runs) or "
            "literal (each class takes exactly its exposed share at 1.6 Tb/s).",
        ),
    ] = "research",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            parser=folder_path,
            help="Directory for jobs.parquet/csv, queue.csv, summary.json, timings.json.",
        ),
    ] = None,
    skip_oversized: Annotated[
        bool,
        typer.Option(
            "--skip-oversized",
            help="Skip jobs larger than the cluster (warning on stderr, count in the summary) "
            "instead of stopping with an error.",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Simulate a job trace on one architecture and print JRT/JWT/JCT statistics."""
    from lumoscore.experiments.runner import compile_ahead
    from lumoscore.fabric.presets import make_fabric
    from lumoscore.sim.engine import Simulator, frozen_gc
    from lumoscore.sim.kernels import solo_run_cached
    from lumoscore.workload import fitting_jobs, generate_trace, read_trace

    if (trace is None) == (preset is None):
        raise ConfigError("give exactly one of --trace FILE or --preset NAME")
    if trace is not None and (beta is not None or load is not None or jobs is not None):
        given = [
            n for n, v in (("--jobs", jobs), ("--beta", beta), ("--load", load)) if v is not None
        ]
        raise ConfigError(
            f"{' and '.join(given)}: only with --preset (a trace file runs its own jobs at "
            "its own arrival times)"
        )
    if beta is not None and load is not None:
        raise ConfigError("give at most one of --beta and --load")
    from lumoscore.sim.link_failures import LinkFailureModel

    options = parse_options(option or [])
    links = LinkFailureModel(
        fraction=link_fraction,
        rate_per_cable_day=link_rate,
        repair_s=link_repair,
        element=link_element,
    )
    fabric = make_fabric(arch, gpus, routing=routing, seed=seed, **options)
    n = 1000 if jobs is None else jobs
    if trace is not None:
        tr = read_trace(trace)
    else:
        assert preset is not None
        tr = generate_trace(
            preset,
            n,
            seed=seed,
            cluster_gpus=gpus,
            beta_s=beta,
            load=load,
            names={"beta_s": "--beta", "load": "--load"},
        )
    try:
        job_list, skipped = fitting_jobs(tr, gpus, skip=skip_oversized)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; use a larger --gpus or skip them (--skip-oversized)") from None
    if skipped:
        shown = ", ".join(map(str, skipped[:10])) + (" ..." if len(skipped) > 10 else "")
        sys.stderr.write(
            f"lumos: warning: skipped {len(skipped)} job(s) larger than the cluster's {gpus} "
            f"GPUs (ids {shown})\n"
        )
    console = Console(stderr=True)
    if not solo_run_cached():  # a first run: compile on the cores first, then simulate
        with console.status("compiling kernels (first run only)"):
            compile_ahead([arch])
    with Progress(
        TextColumn(f"[bold]{arch}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=json_out or not console.is_terminal,
    ) as bar:
        task = bar.add_task("jobs", total=len(job_list))
        sim = Simulator(
            fabric,
            job_list,
            queue=queue,
            eps=eps,
            exposure=exposure,
            placer=placer,
            link_failures=links,
            seed=seed,
            progress=lambda done, total: bar.update(task, completed=done),
        )
        with frozen_gc():  # (this process runs one simulation at a time)
            result = sim.run()
    manifest = {
        "arch": arch,
        "gpus": gpus,
        "trace": str(trace)
        if trace
        else {"preset": preset, "jobs": n, "beta_s": beta, "load": load},
        "routing": routing,
        "placer": placer,
        "fabric_options": options,
        "link_failures": {
            "fraction": link_fraction,
            "rate_per_cable_day": link_rate,
            "repair_s": link_repair,
            **({"element": link_element} if link_element != "leaf-spine" else {}),
        },
        "queue": queue,
        "seed": seed,
        "eps": eps,
        "exposure": exposure,
    }
    if skipped:
        result.summary["skipped_oversized"] = len(skipped)
    unfinished = int(result.summary.get("unfinished", 0))
    if unfinished:
        sys.stderr.write(
            f"lumos: warning: {unfinished} of {len(job_list)} jobs never finished (the run ran "
            "out of events with them waiting, e.g. for routes around failed links); the means "
            "leave them out\n"
        )
    if out is not None:
        result.write(out, manifest=manifest)
    if json_out:
        emit_json({**result.summary, "arch": arch, "gpus": gpus, "fabric": result.fabric})
        return
    out_console().print(
        summary_table(f"{len(job_list)} jobs on {gpus} GPUs", [(arch, result.summary)])
    )
    if out is not None:
        out_console().print(
            f"wrote {out}/jobs.parquet, jobs.csv, queue.csv, summary.json, timings.json"
        )


def register(app: typer.Typer) -> None:
    """Add ``lumos simulate`` to the app."""
    app.command("simulate")(simulate)
