"""``lumos te``: traffic engineering on the OCS-realized topology of a cluster."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console
from lumoscore.errors import ConfigError

__all__ = ["LOGICAL_MODES", "register", "te"]

#: Logical topologies ``lumos te`` realizes.
LOGICAL_MODES: tuple[str, ...] = ("full-mesh", "traffic-aware")


def te(
    cluster: Annotated[Path, typer.Argument(help="Cluster TOML file with a \\[cluster] table.")],
    traffic: Annotated[
        Path,
        typer.Argument(help="Traffic: .npy (P, P) or (T, P, P), or .csv with one P x P matrix."),
    ],
    wiring: Annotated[
        str,
        typer.Option(
            "--wiring",
            help="Physical wiring: cross, uniform, dual-link, slim-dual-link (with circulators).",
        ),
    ] = "cross",
    logical: Annotated[
        str,
        typer.Option(
            "--logical",
            help="Logical topology: full-mesh (one circuit per pod pair and OCS group) or "
            "traffic-aware (COUDER-style: topology and routing optimized together over the "
            "busiest snapshots, see --matrices).",
        ),
    ] = "full-mesh",
    matrices: Annotated[
        int,
        typer.Option(
            "--matrices",
            min=1,
            help="traffic-aware: design over at most this many snapshots (the busiest).",
        ),
    ] = 12,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="TE solver: auto, full or columns (the exact LP), or certified (a "
            "first-order routing within --eps of the optimum, proved by an LP-duality bound; "
            "milliseconds a snapshot).",
        ),
    ] = "auto",
    eps: Annotated[
        float, typer.Option("--eps", help="certified: relative gap to reach, in (0, 1).")
    ] = 1e-3,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write the MLU per snapshot (.png or .svg).")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Realize a logical topology on the wiring, then route every traffic snapshot over its
    direct and two-hop paths to minimize the MLU (LP, HiGHS, or certified within --eps);
    print the MLU per snapshot, its mean and maximum, the LTCR of the realization, the
    largest certified gap and the solve times."""
    from lumoscore.te import full_mesh, min_mlu_series, read_traffic, realize, robust_topology
    from lumoscore.te.lp import TE_METHODS
    from lumoscore.topology import load_cluster

    if method not in TE_METHODS:
        raise ConfigError(f"--method {method!r} unknown; allowed: {', '.join(TE_METHODS)}")
    if not 0 < eps < 1:
        raise ConfigError(f"--eps must be in (0, 1), got {eps}")
    if logical not in LOGICAL_MODES:
        raise ConfigError(f"--logical {logical!r} unknown; allowed: {', '.join(LOGICAL_MODES)}")
    spec = load_cluster(cluster)
    tm = read_traffic(traffic)
    snaps = tm if tm.ndim == 3 else tm[None]
    if snaps.shape[-1] != spec.pods:
        raise ConfigError(
            f"{traffic}: {snaps.shape[-1]} pods, the cluster {cluster} has {spec.pods}"
        )
    H = spec.ocs_groups
    if logical == "full-mesh":
        if spec.pods - 1 > spec.k_spine:
            raise ConfigError(
                f"a full mesh of {spec.pods} pods needs k_spine >= {spec.pods - 1} OCS ports "
                f"per spine; {cluster} has k_spine = {spec.k_spine}"
            )
        C = full_mesh(spec.pods, H)
    else:
        C = robust_topology(
            snaps, H, spec.k_spine, port_gbps=spec.port_gbps, max_matrices=matrices
        ).circuits
    real = realize(spec, C, wiring)
    cap = real.circuits * spec.port_gbps
    mlu, solve, gap = [], [], []
    t0 = time.perf_counter()
    for res in min_mlu_series(cap, snaps, method=method, eps=eps):  # type: ignore[arg-type]
        mlu.append(res.mlu)
        gap.append(res.gap)
        solve.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
    doc = {
        "mlu": mlu,
        "mean_mlu": float(np.mean(mlu)),
        "max_mlu": float(np.max(mlu)),
        "ltcr": real.ltcr,
        "wiring": wiring,
        "logical": logical,
        "method": method,
        "max_gap": float(np.max(gap)),
        "snapshots": len(mlu),
        "toe_solve_s": real.solve_s,
        "te_solve_s": float(np.sum(solve)),
    }
    if plot is not None:
        _plot(plot, mlu, f"{wiring}, {logical} (LTCR {real.ltcr:.3f})")
    if json_out:
        emit_json(doc)
        return
    table = Table(title=f"MLU on {wiring} wiring, {logical} logical topology")
    table.add_column("snapshot", justify="right")
    table.add_column("MLU", justify="right")
    for k, v in enumerate(mlu):
        table.add_row(str(k), _mlu(v))
    out_console().print(table)
    out_console().print(
        f"mean MLU {_mlu(doc['mean_mlu'])}, max {_mlu(doc['max_mlu'])}, LTCR {real.ltcr:.4f}, "
        f"largest gap {doc['max_gap']:.1e} ({method}), TE {doc['te_solve_s']:.2f} s"
    )


def _plot(path: Path, mlu: list[float], title: str) -> None:
    from matplotlib.figure import Figure

    from lumoscore.figures import save_figures

    if path.suffix.lower() not in (".png", ".svg"):
        raise ConfigError(f"--plot {path}: use a .png or .svg file name")
    fig = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(range(len(mlu)), mlu, marker="o")
    ax.set_xlabel("snapshot")
    ax.set_ylabel("MLU")
    ax.set_title(title, fontsize=9)
    save_figures(fig, path.parent, path.stem, formats=(path.suffix.lower()[1:],), dpi=150)


def _mlu(value: float) -> str:
    """An MLU for the terminal: 4 decimals, or 4 significant digits far from 1.

    Examples
    --------
    >>> [_mlu(v) for v in (0.14835, 0.0, 6.25e16, 3e-9)]
    ['0.1484', '0.0000', '6.25e+16', '3e-09']
    """
    return f"{value:.4f}" if value == 0 or 1e-3 <= abs(value) < 1e6 else f"{value:.4g}"


def register(app: typer.Typer) -> None:
    """Add ``lumos te`` to the app."""
    app.command("te")(te)
