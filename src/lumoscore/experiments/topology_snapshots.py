"""LumosCore Fig. 10 as a task preset: the pod-level logical topology of a run.

The paper shows the logical topology matrix of LumosCore (51.2T, tau = 2) at 4096 GPUs, 32
pods, when four different jobs arrive (Fig. 10(a)-(d)) and averaged over the whole run (Fig.
10(e)): inter-pod traffic is sparse. :func:`run_fig10` runs the default experiment's trace
(1000 ``lumoscore-published`` jobs at the paper's workload level) on LumosCore with the
topology recorded (:mod:`lumoscore.sim.topology_log`) and draws the circuits between every
pod pair at the arrivals of the jobs at 20, 40, 60 and 80 % of the trace, and their time-weighted
mean. Writes ``fig10.png``/``.svg``, ``fig10-snapshots.csv`` (``time_s, src_pod, dst_pod,
circuits`` of each snapshot) and ``fig10-mean.csv`` (the mean matrix).

Examples
--------
>>> import tempfile
>>> out = run_fig10(tempfile.mkdtemp(), gpus=512, jobs=20)
>>> [r["what"] for r in out.rows][-1], out.rows[0]["pods"]
('mean', 4)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lumoscore.errors import ConfigError

__all__ = ["FIG10_SHARES", "run_fig10"]

#: Snapshots at the arrival of the job at these shares of the trace.
FIG10_SHARES: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)


def run_fig10(
    out_dir: str | Path,
    *,
    arch: str = "lumoscore-51.2T-tau2",
    gpus: int = 4096,
    jobs: int = 1000,
    seed: int = 1,
    exposure: str = "research",
) -> Any:
    """LumosCore Fig. 10 (module docstring). Returns a
    :class:`~lumoscore.experiments.presets.TaskOutput` with one row per snapshot and one for
    the mean: circuits in use, pod pairs joined, largest entry."""
    import pandas as pd

    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table
    from lumoscore.fabric.presets import make_fabric
    from lumoscore.sim import Simulator
    from lumoscore.sim.topology_log import mean_topology, topology_at
    from lumoscore.workload import generate_trace

    if jobs < 5:
        raise ConfigError(f"jobs must be >= 5 (four snapshots and a mean), got {jobs}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fabric: Any = make_fabric(arch, int(gpus), seed=seed)
    if not hasattr(fabric, "ocs_circuits"):
        raise ConfigError(f"arch {arch!r} deploys no OCS circuits; use a LumosCore preset")
    pods = int(fabric.spec.pods)
    trace = generate_trace(
        "lumoscore-published", int(jobs), seed=seed, cluster_gpus=int(gpus), load=0.655
    )
    res = Simulator(fabric, trace.jobs, exposure=exposure, record_topology=True, seed=seed).run()
    log = res.topology
    arrivals = np.sort(trace.arrival_s)
    times = [float(arrivals[min(int(s * len(arrivals)), len(arrivals) - 1)]) for s in FIG10_SHARES]
    end = float(np.nanmax(res.jobs["finish_s"].to_numpy(dtype=float)))
    mats = [topology_at(log, t, pods).astype(float) for t in times]
    mats.append(mean_topology(log, pods, 0.0, end))
    labels = [f"({chr(97 + k)}) t = {t / 3600:.1f} h" for k, t in enumerate(times)]
    labels.append(f"({chr(97 + len(times))}) time-weighted mean")
    rows = [
        {
            "what": "mean" if k == len(times) else f"snapshot {k + 1}",
            "time_s": times[k] if k < len(times) else float("nan"),
            "pods": pods,
            "circuits": float(m.sum()),
            "pod_pairs": int((m > 0).sum()),
            "max_entry": float(m.max()),
        }
        for k, m in enumerate(mats)
    ]
    files = _write_table(out, "fig10", rows)
    snap = pd.concat(
        [
            pd.DataFrame({"time_s": t, "src_pod": i, "dst_pod": j, "circuits": m[i, j]})
            for t, m in zip(times, mats, strict=False)
            for i, j in [np.nonzero(m)]
        ],
        ignore_index=True,
    )
    files += _write_table(out, "fig10-snapshots", snap.to_dict("records"))
    mean = pd.DataFrame(mats[-1], columns=[f"pod{j}" for j in range(pods)])
    files += _write_table(out, "fig10-mean", mean.to_dict("records"))
    fig = _new_figure(3.0 * len(mats), 3.2)
    top = max(float(m.max()) for m in mats[:-1]) or 1.0
    axes = [fig.add_subplot(1, len(mats), k + 1) for k in range(len(mats))]
    for k, (ax, m, label) in enumerate(zip(axes, mats, labels, strict=True)):
        mean = k == len(mats) - 1  # the mean on its own scale
        im = ax.imshow(m, cmap="viridis", vmin=0, vmax=(float(m.max()) or 1.0) if mean else top,
                       interpolation="nearest")  # fmt: skip
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("pod", fontsize=7)
        if k == 0:
            ax.set_ylabel("pod", fontsize=7)
        ax.tick_params(labelsize=6)
        if mean:
            fig.colorbar(im, ax=ax, shrink=0.8, label="mean")
        elif k == len(mats) - 2:
            fig.colorbar(im, ax=axes[:-1], shrink=0.8, label="circuits")
    fig.suptitle(f"LumosCore Fig. 10: logical topology, {arch}, {gpus} GPUs ({pods} pods)")
    files += _save_figure(fig, out, "fig10")
    return TaskOutput(tuple(files), tuple(rows))
