"""Cross Wiring §8.1 as presets: traffic engineering on OCS-realized DCN topologies (Fig. 9).

The paper routes Facebook-Hadoop traffic of 9 pods over the logical topology an OCS layer
realizes, on Uniform Wiring and on Cross Wiring (ILW), minimizing the maximum link
utilization (MLU) by LP, and reports the MLU normalized:

* **Fig. 9(a)** (:func:`run_cw_fig9a`): a full-mesh logical topology. Uniform-ILP realizes
  only 8/9 of it (LTCR 0.889), which raises the MLU by 8.56 % on average; Cross Wiring
  realizes all of it and improves the MLU by up to 12.36 %.
* **Fig. 9(b)** (:func:`run_cw_fig9b`): traffic-aware logical topologies co-designed with
  the routing (COUDER): Uniform degrades the MLU by up to 14.9 %.

Our set-up (stated in every table): the 9-pod cluster of :func:`dcn_spec` (8 OCS groups,
8 OCS-facing ports per spine, 9-port OCSes: a full mesh takes every port, and Uniform-ILP's
LTCR on it is the paper's 0.889); :func:`~lumoscore.te.facebook_traffic` Hadoop-like
snapshots (the pod-level Facebook matrices are not public; the generator's assumptions are
in its module) scaled to ``load`` of the core's capacity; realization by
:func:`~lumoscore.te.realize` (Uniform-ILP with the losses spread over the pods, mdmcf on
Cross); TE by :func:`~lumoscore.te.min_mlu`. The MLU of each snapshot is normalized by
Cross Wiring's on the same snapshot. In Fig. 9(b) each window of ``window`` snapshots uses
the topology :func:`~lumoscore.te.robust_topology` designs from the window before it (the
first window from itself): a design from history, as a deployed COUDER would run.

Examples
--------
>>> import tempfile
>>> out = run_cw_fig9a(tempfile.mkdtemp(), snapshots=3)
>>> sorted(p.name for p in out.files)[:2]
['cw-fig9a-snapshots.csv', 'cw-fig9a-snapshots.md']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lumoscore.errors import ConfigError

__all__ = ["PAPER_FIG9", "dcn_spec", "run_cw_fig9a", "run_cw_fig9b", "te_ratios"]

#: Cross Wiring §8.1's figures: Uniform's MLU above Cross's, in percent.
PAPER_FIG9: dict[str, float] = {
    "fig9a_mean_pct": 8.56,
    "fig9a_max_pct": 12.36,
    "fig9b_max_pct": 14.9,
    "fig9a_uniform_ltcr": 0.889,
}


def dcn_spec(pods: int = 9) -> Any:
    """The DCN cluster of the Fig. 9 presets: ``pods`` pods of one 8-port leaf and one spine
    with ``pods - 1`` OCS-facing ports per OCS group (so a full mesh uses every port), 8
    OCS groups, ``pods``-port OCSes.

    Examples
    --------
    >>> s = dcn_spec()
    >>> s.pods, s.ocs_groups, s.k_spine
    (9, 8, 8)
    """
    from lumoscore.topology import ClusterSpec

    if pods < 3:
        raise ConfigError(f"pods must be >= 3, got {pods}")
    return ClusterSpec(
        pods=pods, k_leaf=8, k_spine=pods - 1, tau=1, gpus_per_server=1, ocs_ports=pods
    )


def _traffic(spec: Any, kind: str, snapshots: int, load: float, seed: int) -> np.ndarray:
    from lumoscore.te import facebook_traffic

    if not 0 < load <= 1:
        raise ConfigError(f"load must be in (0, 1], got {load}")
    capacity = spec.pods * spec.k_spine * spec.ocs_groups * spec.port_gbps
    return facebook_traffic(kind, spec.pods, snapshots=snapshots, total=load * capacity, seed=seed)


def te_ratios(
    spec: Any, logical: np.ndarray, traffic: np.ndarray, *, label: str = ""
) -> tuple[list[dict[str, Any]], float]:
    """Realize ``logical`` on Cross and Uniform Wiring and route every snapshot of
    ``traffic`` on both: one row per snapshot (MLU on each, Uniform over Cross), and
    Uniform's LTCR."""
    from lumoscore.te import min_mlu, realize

    cross = realize(spec, logical, "cross")
    uniform = realize(spec, logical, "uniform")
    cap_c = cross.circuits * spec.port_gbps
    cap_u = uniform.circuits * spec.port_gbps
    rows = []
    for d in traffic:
        a, b = min_mlu(cap_c, d).mlu, min_mlu(cap_u, d).mlu
        rows.append(
            {
                "window": label,
                "mlu_cross": a,
                "mlu_uniform": b,
                "uniform_over_cross": b / a,
                "uniform_ltcr": uniform.ltcr,
            }
        )
    return rows, uniform.ltcr


def _summary(name: str, ratios: Sequence[float], ltcr: Any, paper: dict[str, Any]) -> dict:
    """The summary row: Uniform's LTCR as given (a value or a range), the excess MLU."""
    r = np.asarray(ratios)
    return {
        "case": name,
        "snapshots": int(r.size),
        "uniform_ltcr": ltcr,
        "mean_excess_pct": round(100 * (r.mean() - 1), 2),
        "max_excess_pct": round(100 * (r.max() - 1), 2),
        "snapshots_equal": int(np.isclose(r, 1.0, rtol=1e-6).sum()),
        **paper,
    }


def _figure(out: Path, stem: str, ratios: Sequence[float], title: str, windows: int = 0) -> list:
    from lumoscore.experiments.presets import _new_figure, _save_figure

    fig = _new_figure(6.4, 3.4)
    ax = fig.add_subplot()
    ax.plot(range(len(ratios)), ratios, marker=".", lw=1, label="Uniform (ILP)")
    ax.axhline(1.0, color="k", lw=1, label="Cross Wiring (ILW)")
    if windows:
        for w in range(windows, len(ratios), windows):
            ax.axvline(w - 0.5, color="0.85", lw=0.8, zorder=0)
    ax.set_xlabel("snapshot")
    ax.set_ylabel("MLU / MLU on Cross Wiring")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return _save_figure(fig, out, stem)


def run_cw_fig9a(
    out_dir: str | Path,
    *,
    snapshots: int = 96,
    kind: str = "hadoop",
    load: float = 0.3,
    seed: int = 1,
) -> Any:
    """Cross Wiring Fig. 9(a): TE on a full mesh realized by Uniform and Cross Wiring
    (module docstring). Writes ``cw-fig9a-snapshots`` (per snapshot), ``cw-fig9a`` (the
    summary beside the paper's figures) and the figure."""
    from lumoscore.experiments.presets import TaskOutput, _write_table
    from lumoscore.te import full_mesh

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = dcn_spec()
    traffic = _traffic(spec, kind, snapshots, load, seed)
    rows, ltcr = te_ratios(spec, full_mesh(spec.pods, spec.ocs_groups), traffic, label="all")
    for i, row in enumerate(rows):
        row["snapshot"] = i
    ratios = [r["uniform_over_cross"] for r in rows]
    paper = {
        "paper_mean_excess_pct": PAPER_FIG9["fig9a_mean_pct"],
        "paper_max_excess_pct": PAPER_FIG9["fig9a_max_pct"],
        "paper_uniform_ltcr": PAPER_FIG9["fig9a_uniform_ltcr"],
    }
    summary = [_summary(f"{kind}, full mesh, 9 pods", ratios, round(ltcr, 4), paper)]
    files = _write_table(out, "cw-fig9a-snapshots", rows)
    files += _write_table(out, "cw-fig9a", summary)
    files += _figure(out, "cw-fig9a", ratios, f"Full mesh, {kind} traffic (LTCR {ltcr:.3f})")
    return TaskOutput(tuple(files), tuple(summary))


def run_cw_fig9b(
    out_dir: str | Path,
    *,
    snapshots: int = 96,
    window: int = 12,
    kind: str = "hadoop",
    load: float = 0.3,
    seed: int = 1,
) -> Any:
    """Cross Wiring Fig. 9(b): TE on COUDER-style traffic-aware topologies realized by
    Uniform and Cross Wiring, one design per window from the window before (module
    docstring). Writes ``cw-fig9b-snapshots``, ``cw-fig9b`` and the figure."""
    from lumoscore.experiments.presets import TaskOutput, _write_table
    from lumoscore.te import robust_topology

    if window < 1 or snapshots < 1:
        raise ConfigError(f"snapshots and window must be >= 1, got {snapshots}, {window}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = dcn_spec()
    traffic = _traffic(spec, kind, snapshots, load, seed)
    rows: list[dict[str, Any]] = []
    ltcrs = []
    for w, start in enumerate(range(0, snapshots, window)):
        history = traffic[start - window : start] if start else traffic[:window]
        design = robust_topology(history, spec.ocs_groups, spec.k_spine, port_gbps=spec.port_gbps)
        got, ltcr = te_ratios(spec, design.circuits, traffic[start : start + window], label=str(w))
        for i, row in enumerate(got):
            row["snapshot"] = start + i
        rows += got
        ltcrs.append(ltcr)
    ratios = [r["uniform_over_cross"] for r in rows]
    paper = {"paper_max_excess_pct": PAPER_FIG9["fig9b_max_pct"]}
    span = f"{min(ltcrs):.3f}-{max(ltcrs):.3f}"
    summary = [_summary(f"{kind}, traffic-aware (COUDER-style), 9 pods", ratios, span, paper)]
    files = _write_table(out, "cw-fig9b-snapshots", rows)
    files += _write_table(out, "cw-fig9b", summary)
    title = f"Traffic-aware topologies, {kind} traffic, windows of {window}"
    files += _figure(out, "cw-fig9b", ratios, title, windows=window)
    return TaskOutput(tuple(files), tuple(summary))
