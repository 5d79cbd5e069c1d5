"""``lumos toe``: logical topology -> OCS configuration (circuits) with minimal rewiring."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console
from lumoscore.cli.wire import CIRCULATORS_HELP, WIRING_HELP
from lumoscore.errors import ConfigError
from lumoscore.toe import (
    SOLVERS,
    CurrentConfigError,
    circuit_loss,
    configure,
    evaluate,
    staged_plan,
)
from lumoscore.toe.io import load_demand, read_config, write_config
from lumoscore.toe.solve import COUPLED_SOLVERS
from lumoscore.topology import build_wiring, load_cluster
from lumoscore.topology.wiring import wiring_kind

__all__ = ["register", "toe"]


def toe(
    cluster: Annotated[Path, typer.Argument(help="Cluster TOML file with a \\[cluster] table.")],
    demand: Annotated[
        Path,
        typer.Argument(
            help="Logical topology: CSV or .npy pod x pod matrix (one group, see --group) "
            "or .npy array (H, P, P) (every group)."
        ),
    ],
    current: Annotated[
        Path | None,
        typer.Option("--current", help="Current configuration JSON (as written by --out)."),
    ] = None,
    solver: Annotated[
        str,
        typer.Option(
            "--solver",
            help=f"Solver: {', '.join(SOLVERS)} (slim-dual-link: {', '.join(COUPLED_SOLVERS)}).",
        ),
    ] = "mdmcf",
    wiring: Annotated[str, typer.Option("--wiring", help=WIRING_HELP)] = "cross",
    circulators: Annotated[bool, typer.Option("--circulators", help=CIRCULATORS_HELP)] = False,
    group: Annotated[
        int, typer.Option("--group", min=0, help="OCS group of a pod x pod demand matrix.")
    ] = 0,
    time_limit_s: Annotated[
        float, typer.Option("--time-limit", min=0.01, help="CP-SAT time limit (ilp), seconds.")
    ] = 60.0,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the new configuration (JSON).")
    ] = None,
    iota: Annotated[
        float | None,
        typer.Option(
            "--iota",
            help="With --current: plan the staged reconfiguration (LumosCore App. A.8) so "
            "that no pod loses more than this share of its paths per stage (0 < iota <= 1).",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Compute the OCS configuration that realizes DEMAND on CLUSTER's wiring."""
    if solver not in SOLVERS:
        raise ConfigError(f"--solver: unknown {solver!r}; allowed: {', '.join(SOLVERS)}")
    if iota is not None and not 0.0 < iota <= 1.0:  # (nan fails too)
        raise ConfigError(
            f"--iota: {iota:g} is not in 0 < iota <= 1 (the largest share of a pod's paths "
            "one stage may interrupt)"
        )
    kind = wiring_kind(wiring)
    spec = load_cluster(cluster)
    w = build_wiring(spec, kind, circulators)
    C = load_demand(demand)
    if C.ndim == 2:
        if group >= w.groups:
            raise ConfigError(f"--group: {group} out of range; allowed 0..{w.groups - 1}")
        groups: list[int] = [group]
        C3 = C[None]
    else:
        groups = list(range(w.groups))
        C3 = C
    cur = read_config(current) if current is not None else None
    try:
        res = configure(C3, w, current=cur, solver=solver, groups=groups, time_limit_s=time_limit_s)
    except CurrentConfigError as exc:  # (name the file)
        raise ConfigError(f"{current}: {exc}") from None
    cur_g = None if cur is None else cur[np.isin(cur[:, 0], groups)]
    m = evaluate(res.circuits, C3, current=cur_g, groups=groups)
    summary: dict[str, Any] = {
        "cluster": str(cluster),
        "demand": str(demand),
        "wiring": kind,
        "circulators": circulators,
        "solver": res.solver,
        "status": res.status,
        "fallback": res.fallback,
        "groups": list(res.groups),
        "solve_time_s": res.solve_time_s,
        "ltcr": m.ltcr,
        "mrar": m.mrar if cur is not None else None,
        "circuits": m.circuits,
        "rewired_circuits": m.rewired_circuits if cur is not None else m.circuits,
        "rewired_share": m.rewired_share if cur is not None else 1.0,
        "removed_circuits": m.removed_circuits,
        "notes": list(res.notes),
    }
    if iota is not None:
        if cur is None:
            raise ConfigError("--iota needs --current (the configuration being replaced)")
        loss, total = circuit_loss(cur, res.circuits, w.groups, w.pods)
        plan = staged_plan(loss, total, iota)
        summary["stages"] = [list(s) for s in plan.stages]
        summary["stage_max_loss_share"] = plan.max_loss_share
    if out is not None:
        meta = {k: summary[k] for k in ("wiring", "circulators", "solver", "status", "groups")}
        meta["solve_time_s"] = res.solve_time_s
        meta["metrics"] = {k: summary[k] for k in ("ltcr", "mrar", "rewired_circuits")}
        write_config(out, res.circuits, **meta)
        summary["out"] = str(out)
    if json_out:
        emit_json(summary)
        return
    table = Table(title=f"OCS configuration ({kind} wiring, solver {solver})", show_header=False)
    table.add_column("item")
    table.add_column("value")
    rows = [
        ("groups", ", ".join(map(str, res.groups))),
        ("status", res.status + (f" (fallback: {res.fallback})" if res.fallback else "")),
        ("solve time", f"{res.solve_time_s:.3f} s"),
        ("circuits", f"{m.circuits:,}"),
        ("LTCR", f"{m.ltcr:.4f}"),
    ]
    if cur is not None:
        rows += [
            ("MRAR", f"{m.mrar:.4f}"),
            ("rewired circuits", f"{m.rewired_circuits:,} ({100 * m.rewired_share:.1f} %)"),
        ]
    if "stages" in summary:
        rows.append(
            ("stages (groups)", " | ".join(",".join(map(str, s)) for s in summary["stages"]))
        )
    if out is not None:
        rows.append(("written", str(out)))
    for k, v in rows:
        table.add_row(k, v)
    for note in res.notes:
        table.add_row("note", note)
    out_console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``lumos toe`` to the app."""
    app.command("toe")(toe)
