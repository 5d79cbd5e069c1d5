"""Robustness as task presets: link failures (LumosCore Fig. 6(c), Cross Wiring Fig. 8(b))
and periodic OCS switching (LumosCore Table 5, Cross Wiring Table 4, :func:`run_reconfig_interval`).

Both papers run one 96-NPU llama2 (13B) job on their 128-NPU testbed while a share of the
leaves' ports is shut down, and compare its training throughput on LumosCore (Cross Wiring)
with a leaf-spine cluster's; the routing spreads flows evenly over the surviving links at
every hop (BGP ECMP). :func:`run_link_failure_sweep` does the same in the simulator:

* the testbed's three architectures (:func:`lumoscore.experiments.testbed.testbed_cases`,
  100 Gb/s): LumosCore with Cross Wiring (``cross``) and Uniform Wiring (``uniform``) and
  the leaf-spine, all routing by ECMP (the testbed's BGP);
* the job: llama2_13b, TP 8, PP 2, DP 6 (``EP = TP``), on an otherwise idle cluster;
* failures: a share of the leaf-spine cables down before the job starts
  (:class:`~lumoscore.sim.link_failures.LinkFailureModel`, ``fraction``), a new draw per seed.

Writes ``fig6c.csv``/``.md`` (per architecture and failure share: mean JRT, throughput
relative to the same architecture without failures, runs whose job found no route) and
``fig6c.png``/``.svg``.

Examples
--------
>>> import tempfile
>>> out = run_link_failure_sweep(tempfile.mkdtemp(), fractions=(0.0, 0.2), seeds=(1,))
>>> sorted({r["architecture"] for r in out.rows})
['cross', 'leaf-spine', 'uniform']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lumoscore.errors import ConfigError
from lumoscore.experiments.testbed import testbed_cases, testbed_spec

__all__ = [
    "FIG6C_FRACTIONS",
    "RECONFIG_INTERVALS_S",
    "RECONFIG_PAPER_MS",
    "TESTBED_JOB",
    "run_link_failure_sweep",
    "run_reconfig_interval",
]

#: Shares of the leaf-spine cables down (the papers do not give their x-axis values).
FIG6C_FRACTIONS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
#: The job of the papers' robustness test: ``(model, gpus, tp, pp, dp)``.
TESTBED_JOB: tuple[str, int, int, int, int] = ("llama2_13b", 96, 8, 2, 6)


def run_link_failure_sweep(
    out_dir: str | Path,
    *,
    fractions: Sequence[float] = FIG6C_FRACTIONS,
    seeds: Sequence[int] = tuple(range(1, 11)),
    exposure: str = "research",
    elements: Sequence[str] = ("leaf-spine",),
    name: str = "fig6c",
) -> Any:
    """LumosCore Fig. 6(c) / Cross Wiring Fig. 8(b): the testbed job's throughput against
    the share of failed units of each of ``elements`` (module docstring; an architecture
    without units of an element, e.g. the leaf-spine's OCS ports, is left out of its
    sweep). Writes ``<name>.csv``/``.md``/``.png``/``.svg``; returns a
    :class:`~lumoscore.experiments.presets.TaskOutput` with one row per element,
    architecture and share."""
    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table
    from lumoscore.sim import Simulator
    from lumoscore.sim.link_failures import LinkFailureModel
    from lumoscore.workload import Job

    if not fractions or not seeds or not elements:
        raise ConfigError("fractions, seeds and elements must be non-empty")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model, gpus, tp, pp, dp = TESTBED_JOB
    job = Job(job_id=0, arrival_s=0.0, gpus=gpus, model=model, tp=tp, pp=pp, dp=dp, ep=tp,
              iterations=20, duration_s=3600.0)  # fmt: skip
    jrt: dict[tuple[str, str, float], list[float]] = {}
    for seed in seeds:
        cases = testbed_cases(seed=int(seed), ecmp=True, reconfig_delay_s=0.0)
        for arch, build in cases.items():
            if arch == "helios":  # same wiring as uniform: the failures see no difference
                continue
            supported = build().failure_elements
            for element in elements:
                if element not in supported:
                    continue
                for f in fractions:
                    lf = LinkFailureModel(fraction=float(f), element=element)
                    res = Simulator(
                        build(), [job], exposure=exposure, seed=int(seed), link_failures=lf
                    ).run()
                    jrt.setdefault((element, arch, float(f)), []).append(
                        float(res.jobs["jrt_s"].iloc[0])
                    )
    rows: list[dict[str, Any]] = []
    for element, arch in dict.fromkeys((e, a) for e, a, _ in jrt):
        base = np.array(jrt[(element, arch, float(fractions[0]))])
        for f in fractions:
            x = np.array(jrt[(element, arch, float(f))])
            ok = np.isfinite(x) & np.isfinite(base)
            rows.append({
                "element": element,
                "architecture": arch,
                "failed_share": float(f),
                "mean_jrt_s": float(np.nanmean(x)) if np.isfinite(x).any() else float("nan"),
                "throughput": float(np.mean(base[ok] / x[ok])) if ok.any() else float("nan"),
                "unroutable_runs": int((~np.isfinite(x)).sum()),
                "runs": int(x.size),
            })  # fmt: skip
    files = _write_table(out, name, rows)
    fig = _new_figure()
    axes = fig.subplots(1, len(elements), squeeze=False)[0]
    for ax, element in zip(axes, elements, strict=True):
        arches = list(dict.fromkeys(r["architecture"] for r in rows if r["element"] == element))
        for i, arch in enumerate(arches):
            sel = [r for r in rows if r["architecture"] == arch and r["element"] == element]
            ax.plot([100 * r["failed_share"] for r in sel], [r["throughput"] for r in sel],
                    marker="o", color=f"C{i}", label=arch)  # fmt: skip
        ax.set_xlabel(f"{_ELEMENT_LABEL.get(element, element)} down (%)")
        ax.set_ylabel(f"throughput vs no failure (share of {fractions[0]:g})")
        ax.legend(fontsize=8)
    fig.suptitle("96-GPU llama2-13B job on the 128-GPU testbed under link failures")
    files += _save_figure(fig, out, name)
    return TaskOutput(tuple(files), tuple(rows))


_ELEMENT_LABEL = {
    "leaf-spine": "leaf-spine cables",
    "spine-ocs": "spine-OCS fibers",
    "ocs-port": "OCS ports",
}


#: Periodic OCS switching intervals of LumosCore Table 5 / Cross Wiring Table 4 (s; ``0``:
#: none, the papers' "Nan"/"infinity" column).
RECONFIG_INTERVALS_S: tuple[float, ...] = (30.0, 60.0, 90.0, 0.0)
#: The papers' mean time per step (ms) of the llama2-7B job at those intervals.
RECONFIG_PAPER_MS: dict[float, float] = {30.0: 1175.4, 60.0: 1112.8, 90.0: 1103.2, 0.0: 1103.0}


def run_reconfig_interval(
    out_dir: str | Path,
    *,
    intervals: Sequence[float] = RECONFIG_INTERVALS_S,
    steps: int = 1000,
    switch_s: float = 2.38,
    exposure: str = "research",
) -> Any:
    """LumosCore Table 5 / Cross Wiring Table 4: a llama2-7B job on the whole testbed (128
    GPUs, TP 8, PP 2, DP 8, Cross Wiring) while half of the OCS links are switched every
    ``interval`` seconds, each switch stalling the cross-pod traffic for ``switch_s``
    (:meth:`~lumoscore.fabric.lumos.LumosCoreFabric.ocs_switch`); mean time per step beside
    the papers'. A step takes the papers' 1103.0 ms on the ideal network. Writes
    ``reconfig-interval.csv``/``.md``."""
    from lumoscore.experiments.presets import TaskOutput, _write_table
    from lumoscore.fabric.lumos import LumosCoreFabric
    from lumoscore.sim import Simulator
    from lumoscore.workload import Job
    from lumoscore.workload.job import REFERENCE_PORT_GBPS

    if not intervals or steps < 1:
        raise ConfigError("intervals must be non-empty and steps >= 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = testbed_spec(port_gbps=REFERENCE_PORT_GBPS)  # the step time is given at it
    step_s = RECONFIG_PAPER_MS[0.0] / 1000
    job = Job(job_id=0, arrival_s=0.0, gpus=128, model="llama2_7b", tp=8, pp=2, dp=8, ep=8,
              iterations=int(steps), duration_s=steps * step_s)  # fmt: skip
    per_step: dict[float, float] = {}
    for iv in intervals:
        fab = LumosCoreFabric(spec, switch_interval_s=float(iv), switch_s=switch_s,
                              reconfig_delay_s=0.0)  # fmt: skip
        res = Simulator(fab, [job], exposure=exposure).run()
        per_step[float(iv)] = 1000 * float(res.jobs["jrt_s"].iloc[0]) / steps
    base = per_step.get(0.0, float("nan"))
    rows = [
        {
            "interval": f"{iv:g} s" if iv else "never",
            "ms_per_step": ms,
            "paper_ms_per_step": RECONFIG_PAPER_MS.get(iv, float("nan")),
            "overhead": ms / base - 1,
            "paper_overhead": RECONFIG_PAPER_MS.get(iv, float("nan")) / RECONFIG_PAPER_MS[0.0] - 1,
        }
        for iv, ms in per_step.items()
    ]
    files = _write_table(out, "reconfig-interval", rows)
    return TaskOutput(tuple(files), tuple(rows))
