"""``lumos scale``: how big can a cluster get (LumosCore Table 1 / Fig. 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console
from lumoscore.errors import ConfigError
from lumoscore.hardware import (
    ARCHITECTURES,
    DEFAULT_CHIPS_TBPS,
    DEFAULT_OCS_PORTS,
    DEFAULT_PORT_SPEEDS_GBPS,
    STANDARD_PORT_SPEEDS_GBPS,
    SizingRow,
    reach,
    sizing_table,
)

__all__ = ["register"]


def _fmt_k(n: int) -> str:
    """A GPU count for the table: exact below 10,000, else thousands with a ``k``; ``""`` for 0.

    Examples
    --------
    >>> [_fmt_k(n) for n in (32, 8192, 65536, 4194304, 0)]
    ['32', '8,192', '65.5k', '4,194k', '']
    """
    if n == 0:
        return ""
    if n < 10_000:
        return f"{n:,}"
    return f"{n / 1000:.1f}k" if n < 1_000_000 else f"{n / 1000:,.0f}k"


def scale(
    chip: Annotated[
        list[float] | None,
        typer.Option("--chip", help="Switch chip capacity in Tb/s (repeat for several)."),
    ] = None,
    port: Annotated[
        list[float] | None,
        typer.Option("--port", help="Per-port speed in Gb/s (repeat for several)."),
    ] = None,
    ocs_ports: Annotated[
        int, typer.Option("--ocs-ports", min=1, help="Ports per OCS (LumosCore pods).")
    ] = DEFAULT_OCS_PORTS,
    oversubscription: Annotated[
        float,
        typer.Option("--oversubscription", min=1.0, help="Ratio o of the oversubscribed Clos row."),
    ] = 15.0,
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            min=1,
            help="Inverse question: for this GPU count, the highest port speed and tier "
            "count each architecture reaches with each chip.",
        ),
    ] = None,
    max_tiers: Annotated[
        int | None,
        typer.Option("--max-tiers", min=1, help="Most Clos tiers for --gpus [default: 4]."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write the Fig. 7 chart (PNG/SVG/PDF); with --gpus a dashed line marks it.",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Maximum cluster size of Clos and LumosCore (the paper's Table 1 for any chips/speeds)."""
    chips = chip or list(DEFAULT_CHIPS_TBPS)
    over = f"clos-3tier-{oversubscription:g}:1"
    archs = [a if a != "clos-3tier-15:1" else over for a in ARCHITECTURES]
    console = out_console()
    if max_tiers is not None and gpus is None:
        raise ConfigError("--max-tiers applies to --gpus only (the most Clos tiers it may use)")
    if gpus is not None:
        speeds = port or list(STANDARD_PORT_SPEEDS_GBPS)
        rows = [
            r
            for c in chips
            for r in reach(
                gpus,
                c,
                port_speeds_gbps=speeds,
                architectures=(*archs, "clos-ntier"),
                max_tiers=4 if max_tiers is None else max_tiers,
                ocs_ports=ocs_ports,
            )
        ]
        if plot is not None:
            sizing = sizing_table(chips, speeds, architectures=archs, ocs_ports=ocs_ports)
            _write_plot(sizing, plot, gpus, quiet=json_out)
        if json_out:
            emit_json(rows)
            return
        table = Table(title=f"Fastest port speed that reaches {gpus} GPUs")
        for col in ("architecture", "chip (Tb/s)", "port (Gb/s)", "tiers", "max GPUs"):
            table.add_column(col, justify="left" if col == "architecture" else "right")
        for r in rows:
            table.add_row(
                r.architecture,
                f"{r.chip_tbps:g}",
                "-" if r.port_gbps is None else f"{r.port_gbps:g}",
                "-" if r.tiers is None else str(r.tiers),
                "unreachable" if r.max_gpus is None else f"{r.max_gpus:,}",
            )
        console.print(table)
        return

    speeds = port or list(DEFAULT_PORT_SPEEDS_GBPS)
    rows = sizing_table(chips, speeds, architectures=archs, ocs_ports=ocs_ports)
    if plot is not None:
        _write_plot(rows, plot, None, quiet=json_out)
    if json_out:
        emit_json(rows)
        return
    table = Table(title=f"Maximum GPUs (LumosCore OCS with {ocs_ports} ports)")
    table.add_column("chip", justify="right")
    table.add_column("port", justify="right")
    for arch in archs:
        table.add_column(arch.replace("-", "\n", 1), justify="right")
    by = {(r.architecture, r.chip_tbps, r.port_gbps): r.max_gpus for r in rows}
    for c in chips:
        for s in speeds:
            table.add_row(f"{c:g}T", f"{s:g}G", *[_fmt_k(by[a, c, s]) or "-" for a in archs])
    if not all(r.max_gpus for r in rows):
        table.caption = (
            "-: not buildable from such switches (an odd port count; LumosCore: ports / 2 "
            "not a multiple of tau)"
        )
    console.print(table)


def _write_plot(rows: list[SizingRow], plot: Path, gpus: int | None, *, quiet: bool) -> None:
    from lumoscore.hardware.plot import plot_scalability

    written = plot_scalability(rows, plot, target_gpus=gpus)
    if not quiet:
        out_console().print(f"wrote {written}")


def register(app: typer.Typer) -> None:
    """Add ``lumos scale`` to the app."""
    app.command("scale")(scale)
