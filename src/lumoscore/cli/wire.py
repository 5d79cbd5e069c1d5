"""``lumos wire``: port-level physical wiring of a cluster, its limits and its power budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console, to_jsonable
from lumoscore.errors import ConfigError
from lumoscore.hardware.optics import check_power_budget, get_transceiver
from lumoscore.topology import build_wiring, load_cluster
from lumoscore.topology.wiring import WIRING_KINDS, Wiring, wiring_kind

__all__ = ["CIRCULATORS_HELP", "WIRING_HELP", "register", "wire"]

#: ``--wiring`` help of ``lumos wire`` and ``lumos toe``.
WIRING_HELP = (
    f"Physical wiring: {', '.join(WIRING_KINDS)} (aliases: interleaved = cross, slim = "
    f"slim-dual-link; slim-dual-link needs --circulators and couples a transceiver's two "
    f"lanes, so links come in pairs)."
)

#: ``--circulators`` help of ``lumos wire`` and ``lumos toe``.
CIRCULATORS_HELP = "Tx and Rx of each port share one fibre (required by slim-dual-link)."


def compatibility_text(w: Wiring) -> str:
    """The "full compatibility" cell of the summary table."""
    if not w.fully_compatible:
        return "no (ToE NP-complete)"
    if w.granularity > 1:
        return f"yes, in units of {w.granularity} links (odd pod-pair counts: one link short)"
    return "yes"


def wire(
    cluster: Annotated[Path, typer.Argument(help="Cluster TOML file with a \\[cluster] table.")],
    wiring: Annotated[
        str,
        typer.Option("--wiring", help=WIRING_HELP),
    ] = "cross",
    circulators: Annotated[
        bool,
        typer.Option("--circulators", help=CIRCULATORS_HELP),
    ] = False,
    transceiver: Annotated[
        str,
        typer.Option("--transceiver", help="Module for the power budget (2xLR4, 8xFR, ...)."),
    ] = "2xFR4",
    ocs_loss_db: Annotated[
        float | None,
        typer.Option("--ocs-loss-db", help="Measured OCS insertion loss (default: model)."),
    ] = None,
    margin_db: Annotated[
        float, typer.Option("--margin-db", help="Extra power margin to keep, dB.")
    ] = 0.0,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the port map (.json list of objects or .csv)."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Build the port-level map of CLUSTER under a wiring and check sizes and power budget."""
    kind = wiring_kind(wiring)
    module = get_transceiver(transceiver)
    if out is not None and out.suffix.lower() not in (".json", ".csv"):
        raise ConfigError(f"--out: unknown format {out.suffix!r}; allowed: .json, .csv")
    spec = load_cluster(cluster)
    w = build_wiring(spec, kind, circulators)
    budget = check_power_budget(
        module, spec.ocs_ports, circulators, ocs_loss_db=ocs_loss_db, margin_db=margin_db
    )
    summary: dict[str, Any] = {"cluster": str(cluster), **w.summary()}
    summary["transceiver"] = module.name
    if out is not None:
        if out.suffix.lower() == ".json":
            w.to_json(out)
        else:
            w.to_csv(out)
        summary["out"] = str(out)
    if json_out:
        emit_json(
            {"summary": summary, "power_budget": to_jsonable(budget), "ports": w.to_records()}
        )
        return
    console = out_console()
    circ = "with" if circulators else "without"
    table = Table(title=f"{kind} wiring {circ} circulators: {cluster}", show_header=False)
    table.add_column("item")
    table.add_column("value")
    rows = [
        ("pods", f"{w.pods} (max {w.max_pods} with {spec.ocs_ports}-port OCSes)"),
        ("GPUs", f"{spec.gpus:,} (max {w.max_gpus:,} under this wiring)"),
        ("OCS groups x OCSes per group", f"{w.groups} x {w.ocs_per_group} = {w.ocs_count}"),
        ("OCS ports used per OCS", f"{w.ocs_ports_used} of {spec.ocs_ports} (psi = {w.psi})"),
        ("spine OCS-facing ports", f"{w.groups * w.pods * w.ports:,} ({w.ports} per spine)"),
        ("full compatibility", compatibility_text(w)),
        (
            "power budget",
            f"{budget.status}: {module.name} {budget.budget_db:.1f} dB vs loss "
            f"{budget.loss_db:.1f} dB"
            + (f" + margin {budget.margin_db:.1f} dB" if budget.margin_db else "")
            + f", headroom {budget.headroom_db:.2f} dB",
        ),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    if budget.warning:
        console.print(f"[bold yellow]warning:[/] {budget.warning}", soft_wrap=True)
    if out is not None:
        console.print(f"wrote {out}")


def register(app: typer.Typer) -> None:
    """Add ``lumos wire`` to the app."""
    app.command("wire")(wire)
