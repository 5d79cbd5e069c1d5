"""Paper presets: the LumosCore paper's figures and tables as named, runnable experiments.

:data:`PAPER_PRESETS` maps a preset name (``lumos run --preset NAME``; ``lumos presets``
lists them) to a :class:`PaperPreset` of one of two kinds:

* ``simulation``: one or more :class:`~lumoscore.experiments.config.ExperimentConfig` parts
  whose runs go into one result store (the sweep machinery of ``lumos run`` and the report of
  :mod:`lumoscore.report`, which detects the swept parameter and draws the paper's plot).
  Presets with several parts sweep a parameter whose values differ between architectures
  (Fig. 25: ``probing`` for Clos, ``planned`` for LumosCore; Fig. 24: rail-optimized wiring
  exists for Clos only). Defaults are scaled down (fewer jobs; exact max-min rates) so that
  each preset runs in minutes on two cores; ``--jobs 1000`` gives the paper's scale.
* ``task``: a function that computes a table and a figure outside the simulator and writes
  CSV, Markdown, PNG and SVG files (each atomically) into an output folder:
  :func:`run_fig7` (maximum cluster size, Fig. 7), :func:`run_table6` (rewired OCS links per
  reconfiguration, Table 6) and :func:`run_sec66` (OCS configuration solve time against
  scale, §6.6); the Cross Wiring paper's micro benchmark (``cw-fig5``/``cw-fig6``/
  ``cw-fig7``, ``cw-fig3c``) is in :mod:`lumoscore.experiments.cross_wiring`.

Examples
--------
>>> get_preset("fig8c").paper
'Fig. 8(c)'
>>> sorted({p.kind for p in PAPER_PRESETS.values()})
['simulation', 'task']
>>> [len(expand(part)) for part in preset_experiments(get_preset("fig8ab"), jobs=5)]
[7]
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pydantic

from lumoscore.errors import ConfigError
from lumoscore.experiments.architectures import PAPER_ARCHITECTURES, PAPER_CLOS, PAPER_LUMOSCORE
from lumoscore.experiments.config import (
    ExperimentConfig,
    RunConfig,
    expand,
    format_validation_error,
)
from lumoscore.experiments.cross_wiring import (
    run_cw_fig3c,
    run_cw_fig5,
    run_cw_fig6,
    run_cw_fig7,
)
from lumoscore.experiments.dcn_te import run_cw_fig9a, run_cw_fig9b
from lumoscore.experiments.robustness import run_link_failure_sweep, run_reconfig_interval
from lumoscore.experiments.testbed import (
    run_testbed_dynamic,
    run_testbed_minrewiring,
    run_testbed_static,
)
from lumoscore.experiments.topology_snapshots import run_fig10
from lumoscore.experiments.vclos import (
    run_vclos_fig2,
    run_vclos_fig13,
    run_vclos_table4,
    run_vclos_table5,
    run_vclos_table6,
    run_vclos_table7,
)
from lumoscore.fileio import atomic_write_files, atomic_write_text

__all__ = [
    "PAPER_PRESETS",
    "PaperPreset",
    "TaskOutput",
    "experiment_runs",
    "get_preset",
    "preset_document",
    "preset_experiments",
    "preset_runs",
    "run_fig7",
    "run_sec66",
    "run_table6",
    "run_table6_simulation",
    "run_table6_synthetic",
    "run_task",
    "takes_sizes",
]

PresetKind = Literal["simulation", "task"]

#: Default scale of the simulation presets: the paper's, 1000 jobs with exact max-min rates
#: (``--jobs`` runs a smaller trace).
DEFAULT_JOBS = 1000
DEFAULT_EPS = 0.0
#: Workload level of the paper's runs (LumosCore §6.2, Eq. 9, from the Helios trace): the
#: arrival rate of every run is set so that the sampled trace has this level on the run's
#: cluster, so clusters of every size are equally loaded (a fixed ``beta_s`` would overload
#: 2k GPUs and leave 16k GPUs mostly idle). The published 1000-job set at beta 2000 s is
#: about as loaded: ``lumoscore-published`` traces at beta 2000 s on 4096 GPUs have levels
#: 0.60-0.83 (seeds 1-5, mean 0.67).
PAPER_LOAD = 0.655
#: LumosCore preset whose cluster shape the OCS task presets use (pods of 128 GPUs,
#: 8 OCS groups of 16-port spines).
TOE_ARCH = "lumoscore-51.2T-tau2"


@dataclass(frozen=True)
class TaskOutput:
    """What a task preset wrote: the files and the table rows."""

    files: tuple[Path, ...]
    rows: tuple[dict[str, Any], ...]


TaskFn = Callable[..., TaskOutput]


@dataclass(frozen=True)
class PaperPreset:
    """One paper figure or table.

    Attributes
    ----------
    name : str
        Preset name (``lumos run --preset NAME``).
    title : str
        One-line description.
    paper : str
        Figure/table/section of the LumosCore paper.
    description : str
        What it runs, its default scale and the full-scale command; deviations from the paper.
    kind : {"simulation", "task"}
        A sweep of simulations or a task function.
    experiments : tuple of ExperimentConfig
        ``simulation``: the parts whose runs share one result store.
    task : callable, optional
        ``task``: ``task(out_dir, **options) -> TaskOutput``.
    tiny : dict
        ``task``: options of a seconds-long smoke run (tests, ``--quick``).
    full_command : str
        The command that runs it at the paper's scale.
    """

    name: str
    title: str
    paper: str
    description: str
    kind: PresetKind
    experiments: tuple[ExperimentConfig, ...] = ()
    task: TaskFn | None = None
    tiny: Mapping[str, Any] = field(default_factory=dict)
    full_command: str = ""

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description (``lumos presets --json``).

        Examples
        --------
        >>> get_preset("fig7").summary()["kind"]
        'task'
        """
        out: dict[str, Any] = {
            "name": self.name,
            "paper": self.paper,
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "full_command": self.full_command,
        }
        if self.kind == "simulation":
            runs = [r for part in self.experiments for r in expand(part)]
            out["runs"] = len(runs)
            out["jobs"] = sorted({r.trace.jobs for r in runs})
            out["eps"] = sorted({r.eps for r in runs})
            out["gpus"] = sorted({r.gpus for r in runs})
        return out


# -- simulation presets ------------------------------------------------------------------------


def _experiment(
    name: str, description: str, *, jobs: int = DEFAULT_JOBS, **fields: Any
) -> ExperimentConfig:
    doc: dict[str, Any] = {
        "name": name,
        "description": description,
        "gpus": 4096,
        "architectures": list(PAPER_ARCHITECTURES),
        "trace": {"preset": "lumoscore-published", "jobs": jobs, "load": PAPER_LOAD},
        "eps": DEFAULT_EPS,
        "seeds": [1],
    }
    doc.update(fields)
    return ExperimentConfig.model_validate(doc)


_FULL = "lumos run --preset {name}"


def _scale_text(jobs: int, *, load: bool = True) -> str:
    level = f" at workload level {PAPER_LOAD:g} (Eq. 9, the paper's)" if load else ""
    return (
        f"Default: the paper's scale, {jobs} jobs of the lumoscore-published workload{level}, "
        "research exposure, probing on Clos, exact max-min rates, seed 1 (`--jobs N` for a "
        "smaller trace)."
    )


def _sim(
    name: str, paper: str, title: str, text: str, parts: Sequence[ExperimentConfig]
) -> PaperPreset:
    jobs = parts[0].trace.jobs
    scale = _scale_text(
        jobs if isinstance(jobs, int) else jobs[0], load="trace.load" not in parts[0].sweep
    )
    return PaperPreset(
        name=name,
        title=title,
        paper=paper,
        description=f"{text} {scale}",
        kind="simulation",
        experiments=tuple(parts),
        full_command=_FULL.format(name=name),
    )


def _simulation_presets() -> list[PaperPreset]:
    fig8ab = _sim(
        "fig8ab",
        "Fig. 8(a)(b)",
        "CDFs of per-job JRT slowdown and JWT slowdown against Best, 4096 GPUs",
        "The seven architectures (Best, three Clos, three LumosCore) at 4096 GPUs; the report "
        "draws the CDF of (JRT - JRT_Best) / JRT_Best and of JWT - JWT_Best per job.",
        [_experiment("fig8ab", "LumosCore Fig. 8(a)(b): seven architectures at 4096 GPUs")],
    )
    fig8c = _sim(
        "fig8c",
        "Fig. 8(c)",
        "Mean JCT against cluster size (2k-16k GPUs)",
        "The seven architectures at 2048, 4096, 8192 and 16384 GPUs (Clos port speeds fall "
        "with size, LumosCore keeps 1.6 Tb/s); the report draws mean JRT (the paper's caption) "
        "and mean JCT against GPUs. `--gpus 2048 --gpus 4096` runs a subset.",
        [
            _experiment(
                "fig8c",
                "LumosCore Fig. 8(c): mean JCT against cluster size",
                gpus=[2048, 4096, 8192, 16384],
            )
        ],
    )
    fig8d = _sim(
        "fig8d",
        "Fig. 8(d)",
        "GPU-failure tolerance: mean JCT against the failure rate, 4096 GPUs",
        "GPU failures (soft/hard, 30% hard, repair 10 min / 4 h, hourly checkpoints, 5 min "
        "restart) at 0, 0.0005, 0.001 and 0.002 failures per GPU-day. The paper does not give "
        "its rates; 0.0005 is about the interruption rate reported for Llama 3 training (419 "
        "in 54 days on 16k GPUs), the others 2x and 4x it. At 0.002 mean JCT already grows "
        "2-4x; at 0.005 it grows ~20x and restarts, not the network, decide the ranking. One "
        "seed: failures make runs noisy, add `seeds` (e.g. a copy of the preset as a file) "
        "for confidence intervals.",
        [
            _experiment(
                "fig8d",
                "LumosCore Fig. 8(d): GPU failure rates at 4096 GPUs",
                sweep={"failures.rate_per_gpu_day": [0.0, 0.0005, 0.001, 0.002]},
            )
        ],
    )
    fig8e = _sim(
        "fig8e",
        "Fig. 8(e)",
        "Distribution of the per-job contention level (Eq. 10), 4096 GPUs",
        "The runs of fig8ab (same keys: `--out` pointing at a fig8ab store reuses them); the "
        "report draws the CDF over jobs of the contention level, actual over contention-free "
        "communication time, and the share of jobs per contention-level bin (the paper's "
        "figure; its bin edges are not published, ours are in the caption).",
        [_experiment("fig8e", "LumosCore Fig. 8(e): contention levels at 4096 GPUs")],
    )
    fig23 = _sim(
        "fig23",
        "Fig. 23",
        "Mean JCT against the workload level (Eq. 9), 4096 GPUs",
        "Workload levels 0.4, 0.55, 0.655 (the paper's default), 0.8 and 1.0 set through "
        "trace.load (arrival rate from Eq. 9 on the sampled trace).",
        [
            _experiment(
                "fig23",
                "LumosCore Fig. 23: workload levels at 4096 GPUs",
                trace={"preset": "lumoscore-published", "jobs": DEFAULT_JOBS},
                sweep={"trace.load": [0.4, 0.55, 0.655, 0.8, 1.0]},
            )
        ],
    )
    fig24 = _sim(
        "fig24",
        "Fig. 24",
        "Rail-optimized intra-pod wiring against plain pods, Clos and LumosCore, 4096 GPUs",
        "The three Clos and the three LumosCore architectures with and without rail-optimized "
        "pods (GPU i of every server on rail leaf i of its rail group); Best once, as the "
        "reference.",
        [
            _experiment(
                "fig24",
                "LumosCore Fig. 24: rail-optimized pods at 4096 GPUs",
                architectures=[*PAPER_CLOS, *PAPER_LUMOSCORE],
                sweep={"rail_optimized": [False, True]},
            ),
            _experiment(
                "fig24",
                "LumosCore Fig. 24: reference",
                architectures=["best"],
            ),
        ],
    )
    fig25 = _sim(
        "fig25",
        "Fig. 25",
        "Routing algorithms (ECMP, probing, planned, contention-free), 4096 GPUs",
        "Clos with ecmp, probing (the paper's default: the best of a few hashed paths at every "
        "round) and ideal (contention-free); LumosCore with ecmp, probing over its OCS groups "
        "and spines, planned (routes of the logical topology, its default) and ideal; Best "
        "once.",
        [
            _experiment(
                "fig25",
                "LumosCore Fig. 25: Clos routing",
                architectures=list(PAPER_CLOS),
                sweep={"routing": ["ecmp", "probing", "ideal"]},
            ),
            _experiment(
                "fig25",
                "LumosCore Fig. 25: LumosCore routing",
                architectures=list(PAPER_LUMOSCORE),
                sweep={"routing": ["ecmp", "probing", "planned", "ideal"]},
            ),
            _experiment("fig25", "LumosCore Fig. 25: Best", architectures=["best"]),
        ],
    )
    links = _sim(
        "link-failures",
        "§5 robustness at cluster scale (ours)",
        "Leaf-spine link failures: mean JCT against the failure rate, 4096 GPUs",
        "Every leaf-spine cable (Clos leaf uplinks, LumosCore's tau cables of a leaf-spine "
        "pair) fails at 0, 0.01, 0.02 and 0.05 per cable-day (Poisson) and is repaired 24 h "
        "later: at 0.05 about 5 % of the cables are down at a time. Clos routes around a "
        "dead link by ECMP re-hashing; LumosCore also recomputes its logical topology and OCS "
        "configuration after each failure. Best (no cables) once, as the reference. The "
        "papers measure link failures on their testbed only (fig6c).",
        [
            _experiment(
                "link-failures",
                "Link failures at 4096 GPUs",
                architectures=[*PAPER_CLOS, *PAPER_LUMOSCORE],
                link_failures={"repair_s": 86400.0},
                sweep={"link_failures.rate_per_cable_day": [0.0, 0.01, 0.02, 0.05]},
            ),
            _experiment("link-failures", "Link failures: reference", architectures=["best"]),
        ],
    )
    return [fig8ab, fig8c, fig8d, fig8e, fig23, fig24, fig25, links]


def preset_experiments(
    preset: PaperPreset,
    *,
    jobs: int | None = None,
    eps: float | None = None,
    gpus: Sequence[int] | None = None,
    out: str | Path | None = None,
    exposure: str | None = None,
    seeds: int | Sequence[int] | None = None,
) -> list[ExperimentConfig]:
    """The parts of a simulation preset with the overrides applied.

    ``jobs``/``eps``/``exposure`` replace the job count, eps and traffic model, ``gpus`` the
    cluster sizes, ``seeds`` the seeds (a list, or a count ``n``: seeds ``1..n``), ``out``
    the output folder (default ``results/<preset>``) of every part.

    Raises
    ------
    ConfigError
        A task preset, or an override that makes a run invalid (names the field).

    Examples
    --------
    >>> parts = preset_experiments(get_preset("fig8c"), jobs=5, gpus=[512])
    >>> parts[0].gpus, parts[0].trace.jobs, parts[0].output
    ([512], 5, 'results/fig8c')
    """
    if preset.kind != "simulation":
        raise ConfigError(f"preset {preset.name!r} is a task preset, not a simulation")
    output = str(out) if out is not None else str(Path("results") / preset.name)
    parts = []
    for part in preset.experiments:
        doc = part.model_dump(exclude_none=True)
        doc["output"] = output
        if jobs is not None:
            doc["trace"]["jobs"] = jobs
        if eps is not None:
            doc["eps"] = eps
        if exposure is not None:
            doc["exposure"] = exposure
        if seeds is not None:
            doc["seeds"] = seeds if isinstance(seeds, int) else list(seeds)
        if gpus is not None:
            if not gpus:
                raise ConfigError("gpus: an empty list; give at least one cluster size")
            doc["gpus"] = list(gpus)
        try:
            config = ExperimentConfig.model_validate(doc)
            expand(config)
        except pydantic.ValidationError as exc:
            raise ConfigError(f"preset {preset.name}: {format_validation_error(exc)}") from None
        except ConfigError as exc:
            raise ConfigError(f"preset {preset.name}: {exc}") from None
        parts.append(config)
    return parts


def preset_document(preset: PaperPreset, parts: Sequence[ExperimentConfig]) -> dict[str, Any]:
    """What ``experiment.json`` of a simulation preset's store records: the preset's name,
    paper and description, and its parts with the overrides applied.

    Examples
    --------
    >>> doc = preset_document(get_preset("fig8ab"), preset_experiments(get_preset("fig8ab")))
    >>> doc["preset"], len(doc["parts"])
    ('fig8ab', 1)
    """
    return {
        "name": preset.name,
        "preset": preset.name,
        "paper": preset.paper,
        "description": preset.description,
        "parts": [part.model_dump(mode="json") for part in parts],
    }


def preset_runs(parts: Sequence[ExperimentConfig]) -> list[RunConfig]:
    """Every run of the parts, in order, each once.

    Examples
    --------
    >>> runs = preset_runs(preset_experiments(get_preset("fig25"), jobs=5))
    >>> sorted({str(r.routing) for r in runs})
    ['None', 'ecmp', 'ideal', 'planned', 'probing']
    """
    seen: dict[str, RunConfig] = {}
    for part in parts:
        for run in expand(part):
            seen.setdefault(run.model_dump_json(), run)
    return list(seen.values())


def experiment_runs(doc: Mapping[str, Any]) -> list[RunConfig]:
    """The runs an ``experiment.json`` document of a result store describes: an experiment
    (``lumos run FILE``) or a simulation preset's parts (:func:`preset_document`).

    Raises pydantic's ``ValidationError`` for a document that is neither.

    Examples
    --------
    >>> doc = preset_document(get_preset("fig8ab"), preset_experiments(get_preset("fig8ab")))
    >>> len(experiment_runs(doc)) == len(preset_runs(preset_experiments(get_preset("fig8ab"))))
    True
    """
    if "parts" in doc:
        return preset_runs([ExperimentConfig.model_validate(p) for p in doc["parts"]])
    return expand(ExperimentConfig.model_validate(doc))


# -- task presets ------------------------------------------------------------------------------


def _write_table(out_dir: Path, stem: str, rows: Sequence[Mapping[str, Any]]) -> list[Path]:
    """``<stem>.csv`` and ``<stem>.md`` of ``rows`` (both or neither)."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "-" if not np.isfinite(v) else f"{v:.4g}"
        return "-" if v is None else str(v)

    lines = [
        "| " + " | ".join(frame.columns) + " |",
        "| " + " | ".join("---" for _ in frame.columns) + " |",
        *("| " + " | ".join(cell(v) for v in r) + " |" for r in frame.itertuples(index=False)),
    ]
    csv, md = out_dir / f"{stem}.csv", out_dir / f"{stem}.md"
    atomic_write_files({csv: frame.to_csv(index=False), md: "\n".join(lines) + "\n"})
    return [csv, md]


def _save_figure(fig: Any, out_dir: Path, stem: str) -> list[Path]:
    """``<stem>.png`` (150 dpi) and ``<stem>.svg`` of a matplotlib figure, atomically and
    byte-for-byte reproducibly (:func:`lumoscore.figures.save_figures`)."""
    from lumoscore.figures import save_figures

    return list(save_figures(fig, out_dir, stem, formats=("png", "svg"), dpi=150))


def _new_figure(width_in: float = 6.0, height_in: float = 3.8) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), layout="constrained")


def _plain_log_ticks(ax: Any) -> None:
    """Log-scale y ticks as plain numbers (``0.1``, ``2``, ``60``), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def run_fig7(
    out_dir: str | Path,
    *,
    chips_tbps: Sequence[float] | None = None,
    port_speeds_gbps: Sequence[float] | None = None,
) -> TaskOutput:
    """Fig. 7: maximum cluster size of Clos and LumosCore against the per-port speed.

    Writes ``fig7.csv``/``fig7.md`` (the sizing table of
    :func:`lumoscore.hardware.sizing_table`) and ``fig7.png``/``fig7.svg`` (the chart of
    ``lumos scale --plot``).

    Examples
    --------
    >>> import tempfile
    >>> out = run_fig7(tempfile.mkdtemp(), chips_tbps=[51.2], port_speeds_gbps=[400, 800])
    >>> sorted(p.name for p in out.files)
    ['fig7.csv', 'fig7.md', 'fig7.png', 'fig7.svg']
    """
    from dataclasses import asdict

    from lumoscore.hardware import DEFAULT_CHIPS_TBPS, DEFAULT_PORT_SPEEDS_GBPS, sizing_table
    from lumoscore.hardware.plot import plot_scalability

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = sizing_table(
        list(chips_tbps or DEFAULT_CHIPS_TBPS), list(port_speeds_gbps or DEFAULT_PORT_SPEEDS_GBPS)
    )
    records = [asdict(r) for r in rows]
    files = _write_table(out, "fig7", records)
    files += [plot_scalability(rows, out / f"fig7.{fmt}") for fmt in ("png", "svg")]
    return TaskOutput(tuple(files), tuple(records))


def _toe_setup(gpus: int, arch: str) -> tuple[Any, Any]:
    """The cluster spec of LumosCore preset ``arch`` at ``gpus`` and its cross wiring."""
    from lumoscore.fabric.presets import make_fabric
    from lumoscore.topology import build_wiring

    spec = make_fabric(arch, gpus).spec  # type: ignore[attr-defined]
    return spec, build_wiring(spec, "cross")


def _demand_sequence(
    spec: Any, count: int, rng: np.random.Generator, *, fill: float, change: float
) -> list[np.ndarray]:
    """``count`` successive ``(H, P, P)`` logical topologies, each ``change`` away from the
    previous one in every OCS group."""
    from lumoscore.toe import random_demand

    groups = spec.k_leaf // spec.tau
    cur = np.stack([random_demand(spec.pods, spec.k_spine, rng, fill=fill) for _ in range(groups)])
    out = [cur]
    for _ in range(count - 1):
        cur = np.stack(
            [random_demand(spec.pods, spec.k_spine, rng, previous=d, change=change) for d in cur]
        )
        out.append(cur)
    return out


def _toe_task_dir(out_dir: str | Path, reconfigurations: int) -> Path:
    """The output folder of a ToE task preset (created), after checking its arguments."""
    if reconfigurations < 1:
        raise ConfigError(f"reconfigurations: at least 1, got {reconfigurations}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _toe_scales(
    scales_gpus: Sequence[int],
    arch: str,
    reconfigurations: int,
    seed: int,
    *,
    fill: float,
    change: float,
) -> Iterator[tuple[int, Any, Any, list[np.ndarray], np.ndarray]]:
    """Per cluster size: ``(gpus, spec, wiring, demands, first)``, the ``reconfigurations + 1``
    successive logical topologies (one seeded stream across the sizes) and the circuits that
    configure the first of them."""
    from lumoscore.toe import configure

    rng = np.random.default_rng(seed)
    for gpus in scales_gpus:
        spec, wiring = _toe_setup(gpus, arch)
        demands = _demand_sequence(spec, reconfigurations + 1, rng, fill=fill, change=change)
        yield gpus, spec, wiring, demands, configure(demands[0], wiring).circuits


def _reconfigurations(
    wiring: Any, demands: list[np.ndarray], first: np.ndarray, solver: str, time_limit_s: float
) -> Iterator[tuple[np.ndarray, np.ndarray, Any, float]]:
    """Each reconfiguration after the first with ``solver``, from its own previous circuits:
    ``(demand, circuits before, ToeResult, solve seconds)``."""
    from lumoscore.toe import configure

    cur = first
    for d in demands[1:]:
        t0 = time.perf_counter()
        res = configure(d, wiring, current=cur, solver=solver, time_limit_s=time_limit_s)
        yield d, cur, res, time.perf_counter() - t0
        cur = res.circuits


def _scale_axes(ax: Any, scales_gpus: Sequence[int], ylabel: str, title: str) -> None:
    """Log-log axes against cluster size with the sizes as ticks, a title and a legend."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(list(scales_gpus), [f"{g / 1024:g}k" for g in scales_gpus])
    ax.set_xlabel("cluster size (GPUs)")
    ax.set_ylabel(ylabel)
    _plain_log_ticks(ax)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


#: Strategies of Table 6: LumosCore's min-rewiring merge-decomposition, the exact
#: MinRewiring ILP (CP-SAT), and a decomposition that ignores the current configuration.
TABLE6_SOLVERS: tuple[tuple[str, str], ...] = (
    ("LumosCore (mdmcf)", "mdmcf"),
    ("MinRewiring ILP (CP-SAT)", "ilp"),
    ("not rewiring-aware (mcf)", "mcf"),
)


#: Table 6 of the paper: average share of OCS links reallocated per reconfiguration (%).
TABLE6_PAPER_PCT: dict[int, float] = {2048: 0.319, 4096: 0.282, 8192: 0.441, 16384: 0.445}

#: Sources of Table 6's reconfigurations.
TABLE6_SOURCES: tuple[str, ...] = ("simulation", "synthetic")


def run_table6(
    out_dir: str | Path,
    *,
    source: str = "simulation",
    scales_gpus: Sequence[int] = (2048, 4096, 8192, 16384),
    **options: Any,
) -> TaskOutput:
    """Table 6: share of OCS links rewired per reconfiguration, against cluster size.

    ``source="simulation"`` (default): the reconfigurations of job simulations
    (:func:`run_table6_simulation`); ``"synthetic"``: successive random logical topologies,
    comparing rewiring strategies (:func:`run_table6_synthetic`). ``options`` go to that
    function.
    """
    if source not in TABLE6_SOURCES:
        raise ConfigError(f"source {source!r} unknown; allowed: {', '.join(TABLE6_SOURCES)}")
    task = run_table6_simulation if source == "simulation" else run_table6_synthetic
    return task(out_dir, scales_gpus=scales_gpus, **options)


def run_table6_simulation(
    out_dir: str | Path,
    *,
    scales_gpus: Sequence[int] = (2048, 4096, 8192, 16384),
    jobs: int = DEFAULT_JOBS,
    arch: str = TOE_ARCH,
    trace_preset: str = "lumoscore-published",
    beta_s_at_4096: float = 2000.0,
    exposure: str = "research",
    seed: int = 1,
) -> TaskOutput:
    """Table 6 from the simulation's own reconfigurations.

    At each scale a ``jobs``-job ``trace_preset`` trace (arrival rate per GPU that of
    ``beta_s_at_4096`` at 4096 GPUs) runs on LumosCore preset ``arch``; every admission or
    release that changes the logical topology is a reconfiguration, configured by the
    fabric's min-rewiring ToE from the circuits in place. The table gives the circuits rewired
    per reconfiguration, as a share of the circuits the OCS core can hold (every OCS has
    ``ocs_ports`` ports, one per pod in use: ``ocs x ocs_ports / 2`` circuits; the
    denominator we take for the paper's "links") and of the circuits of the pods in use,
    next to the paper's value. Writes ``table6.csv``/``table6.md`` and
    ``table6.png``/``table6.svg``.

    Examples
    --------
    >>> import tempfile
    >>> out = run_table6_simulation(tempfile.mkdtemp(), scales_gpus=[512], jobs=20)
    >>> r = out.rows[0]
    >>> r["gpus"], r["reconfigurations"] > 0, 0 < r["rewired_of_capacity_pct"] < 100
    (512, True, True)
    """
    from lumoscore.fabric.presets import make_fabric
    from lumoscore.sim.engine import Simulator
    from lumoscore.workload import generate_trace

    if jobs < 1:
        raise ConfigError(f"jobs: at least 1, got {jobs}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for gpus in scales_gpus:
        fab: Any = make_fabric(arch, int(gpus), seed=seed)
        beta = beta_s_at_4096 * 4096 / int(gpus)
        trace = generate_trace(trace_preset, jobs, seed=seed, cluster_gpus=int(gpus), beta_s=beta)
        Simulator(fab, trace.jobs, exposure=exposure, seed=seed).run()
        d = fab.describe()
        spec = fab.spec
        reconf = int(d["reconfigurations"])
        per = float(d["rewired_circuits"]) / reconf if reconf else 0.0
        ocses = int(d["total_circuits"]) // max(spec.pods // 2, 1)
        capacity = ocses * spec.ocs_ports // 2
        rows.append(
            {
                "gpus": int(gpus),
                "arch": arch,
                "pods": int(spec.pods),
                "jobs": int(jobs),
                "beta_s": beta,
                "reconfigurations": reconf,
                "rewired_per_reconfiguration": per,
                "rewired_of_capacity_pct": 100 * per / capacity,
                "rewired_of_used_pct": 100 * float(d["rewired_share"]),
                "paper_pct": TABLE6_PAPER_PCT.get(int(gpus), float("nan")),
            }
        )
    files = _write_table(out, "table6", rows)
    fig = _new_figure()
    ax = fig.add_subplot()
    xs = [r["gpus"] for r in rows]
    ax.plot(xs, [r["rewired_of_capacity_pct"] for r in rows], marker="o", color="C0",
            label="simulation, of the OCS core's circuits")  # fmt: skip
    ax.plot(xs, [r["rewired_of_used_pct"] for r in rows], marker="s", color="C1",
            label="simulation, of the circuits of the pods in use")  # fmt: skip
    paper = [(g, v) for g, v in TABLE6_PAPER_PCT.items() if g in xs]
    if paper:
        px, py = zip(*paper, strict=True)
        ax.plot(px, py, ls="--", marker="x", color="grey", label="paper (Table 6)")
    _scale_axes(
        ax,
        scales_gpus,
        "circuits rewired per reconfiguration (%)",
        f"Table 6: rewired OCS circuits in simulation ({arch}, {jobs} jobs)",
    )
    files += _save_figure(fig, out, "table6")
    return TaskOutput(tuple(files), tuple(rows))


def run_table6_synthetic(
    out_dir: str | Path,
    *,
    scales_gpus: Sequence[int] = (2048, 4096, 8192, 16384),
    reconfigurations: int = 3,
    change: float = 0.02,
    fill: float = 0.8,
    iota: float = 0.25,
    ilp_max_gpus: int = 4096,
    ilp_time_limit_s: float = 10.0,
    arch: str = TOE_ARCH,
    seed: int = 1,
) -> TaskOutput:
    """Table 6 on synthetic logical topologies: rewiring strategies compared.

    For each scale, the cluster of LumosCore preset ``arch`` (cross wiring) goes through
    ``reconfigurations`` successive logical topologies, each with about ``change`` of the
    links of every OCS group moved (:func:`lumoscore.toe.random_demand`, degree-preserving
    swaps), starting from ``fill`` of the ports in use. Each strategy reconfigures from its
    own previous configuration; the table gives the mean share of circuits rewired, the mean
    share of demand links that changed (a floor for any strategy), the mean MRAR and, for
    LumosCore, the mean number of stages of the staged reconfiguration (Appendix A.8, at most
    ``iota`` of a pod's paths down per stage). The ILP runs only up to ``ilp_max_gpus``.
    Writes ``table6.csv``/``table6.md`` and ``table6.png``/``table6.svg``.

    Examples
    --------
    >>> import tempfile
    >>> out = run_table6_synthetic(tempfile.mkdtemp(), scales_gpus=[512], reconfigurations=1,
    ...                            ilp_max_gpus=0)
    >>> [r["strategy"] for r in out.rows]
    ['LumosCore (mdmcf)', 'not rewiring-aware (mcf)']
    """
    from lumoscore.toe import circuit_loss, evaluate, staged_plan

    out = _toe_task_dir(out_dir, reconfigurations)
    rows: list[dict[str, Any]] = []
    scales = _toe_scales(scales_gpus, arch, reconfigurations, seed, fill=fill, change=change)
    for gpus, spec, wiring, demands, first in scales:
        groups = spec.k_leaf // spec.tau
        moved = [
            float(np.maximum(b - a, 0).sum() / max(b.sum(), 1))
            for a, b in itertools.pairwise(demands)
        ]
        for label, solver in TABLE6_SOLVERS:
            if solver == "ilp" and gpus > ilp_max_gpus:
                continue
            shares, mrars, stages, statuses = [], [], [], []
            for d, cur, res, _ in _reconfigurations(
                wiring, demands, first, solver, ilp_time_limit_s
            ):
                m = evaluate(res.circuits, d, current=cur)
                shares.append(m.rewired_share)
                mrars.append(m.mrar)
                statuses.append(res.status)
                if solver == "mdmcf":
                    loss, total = circuit_loss(cur, res.circuits, groups, spec.pods)
                    if loss.any():
                        stages.append(len(staged_plan(loss, total, iota).stages))
                    else:
                        stages.append(0)
            rows.append(
                {
                    "gpus": int(gpus),
                    "strategy": label,
                    "solver": solver,
                    "reconfigurations": reconfigurations,
                    "demand_changed_pct": 100 * float(np.mean(moved)),
                    "rewired_links_pct": 100 * float(np.mean(shares)),
                    "mrar": float(np.mean(mrars)),
                    "stages": float(np.mean(stages)) if stages else float("nan"),
                    "status": ",".join(sorted(set(statuses))),
                }
            )
    files = _write_table(out, "table6", rows)
    fig = _new_figure()
    ax = fig.add_subplot()
    for i, (label, solver) in enumerate(TABLE6_SOLVERS):
        pts = [(r["gpus"], r["rewired_links_pct"]) for r in rows if r["solver"] == solver]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", color=f"C{i}", label=label)
    floor = sorted({(r["gpus"], r["demand_changed_pct"]) for r in rows})
    if floor:
        xs, ys = zip(*floor, strict=True)
        ax.plot(xs, ys, ls="--", color="grey", label="demand links changed")
    _scale_axes(
        ax,
        scales_gpus,
        "circuits rewired per reconfiguration (%)",
        f"Table 6: rewired OCS circuits ({arch})",
    )
    files += _save_figure(fig, out, "table6")
    return TaskOutput(tuple(files), tuple(rows))


def run_sec66(
    out_dir: str | Path,
    *,
    scales_gpus: Sequence[int] = (2048, 4096, 8192, 16384, 32768),
    reconfigurations: int = 2,
    change: float = 0.05,
    fill: float = 0.8,
    ilp_max_gpus: int = 16384,
    ilp_time_limit_s: float = 15.0,
    arch: str = TOE_ARCH,
    seed: int = 1,
) -> TaskOutput:
    """§6.6: OCS configuration solve time against scale, LumosCore (mdmcf) vs the ILP.

    At each scale the cluster of ``arch`` is reconfigured ``reconfigurations`` times
    (logical topologies as in :func:`run_table6_synthetic`); the table gives the median and largest
    wall-clock time of a whole-cluster reconfiguration for ``mdmcf`` and for the CP-SAT
    MinRewiring ILP (up to ``ilp_max_gpus``, under ``ilp_time_limit_s`` per call; status
    ``timeout`` when the limit was hit, ``fallback`` when CP-SAT found no solution and mdmcf
    answered, ``notes`` says why), and the MRAR each achieves. Times are wall clock
    on a possibly shared machine. Writes ``sec6.6.csv``/``.md`` and ``sec6.6.png``/``.svg``.

    Examples
    --------
    >>> import tempfile
    >>> out = run_sec66(tempfile.mkdtemp(), scales_gpus=[512], reconfigurations=1,
    ...                 ilp_time_limit_s=5)
    >>> [r["solver"] for r in out.rows]
    ['mdmcf', 'ilp']
    """
    from lumoscore.toe import evaluate

    out = _toe_task_dir(out_dir, reconfigurations)
    rows: list[dict[str, Any]] = []
    scales = _toe_scales(scales_gpus, arch, reconfigurations, seed, fill=fill, change=change)
    for gpus, spec, wiring, demands, first in scales:
        for solver in ("mdmcf", "ilp"):
            if solver == "ilp" and gpus > ilp_max_gpus:
                continue
            times, mrars, statuses, notes = [], [], [], []
            for d, cur, res, seconds in _reconfigurations(
                wiring, demands, first, solver, ilp_time_limit_s
            ):
                times.append(seconds)
                mrars.append(evaluate(res.circuits, d, current=cur).mrar)
                statuses.append(res.status)
                notes.extend(res.notes)
            rows.append(
                {
                    "gpus": int(gpus),
                    "pods": int(spec.pods),
                    "solver": solver,
                    "reconfigurations": reconfigurations,
                    "time_median_s": float(np.median(times)),
                    "time_max_s": float(np.max(times)),
                    "mrar": float(np.mean(mrars)),
                    "status": ",".join(sorted(set(statuses))),
                    "time_limit_s": ilp_time_limit_s if solver == "ilp" else float("nan"),
                    "notes": "; ".join(dict.fromkeys(notes))[:200],
                }
            )
    files = _write_table(out, "sec6.6", rows)
    fig = _new_figure()
    ax = fig.add_subplot()
    names = {"mdmcf": "LumosCore (mdmcf)", "ilp": "MinRewiring ILP (CP-SAT)"}
    for solver, label in names.items():
        pts = [r for r in rows if r["solver"] == solver]
        if not pts:
            continue
        xs = [r["gpus"] for r in pts]
        ax.plot(xs, [r["time_median_s"] for r in pts], marker="o", label=label)
        hit = [r for r in pts if "timeout" in r["status"] or "fallback" in r["status"]]
        if hit:
            ax.scatter(
                [r["gpus"] for r in hit],
                [r["time_median_s"] for r in hit],
                marker="x",
                s=60,
                color="black",
                zorder=3,
                label=f"ILP not solved within {ilp_time_limit_s:g} s (timeout or mdmcf fallback)",
            )
    _scale_axes(
        ax,
        scales_gpus,
        "solve time per reconfiguration (s)",
        f"§6.6: OCS configuration time ({arch})",
    )
    files += _save_figure(fig, out, "sec6.6")
    return TaskOutput(tuple(files), tuple(rows))


#: Tiny options of the Cross Wiring Figs. 5-7 presets: 4 and 8 pods of 16 ports.
_CW_MICRO_TINY: dict[str, Any] = {
    "scales_gpus": [64, 128],
    "pod_ports": 16,
    "topologies": 4,
    "ilp_reconfigurations": 2,
    "ilp_max_gpus": 128,
    "ilp_time_limit_s": 5.0,
}
_CW_MICRO_TEXT = (
    "Cross Wiring §6.3: successive heavy-load logical topologies (10 % of the links moved per "
    "step), pods of 256 OCS-facing ports, 2k-32k GPUs; ILW-MDMCF, ILW-MCF, ILW-ILP, "
    "Uniform-ILP, Uniform-Heuristic (BvN) and Helios, each from its own previous "
    "configuration. Default: 20 topologies per size, the two CP-SAT ILPs on the first 3 "
    "reconfigurations at 2k GPUs only (20 s limit per call, a hit limit is marked), seed 0; "
    "about 3 min for the first of cw-fig5/6/7, which share one cached computation "
    "(cw-micro-<key>.json in --out: the others then take seconds). `--gpus` sets the sizes. "
    "The paper's scale is 100 topologies per size with the ILPs on every one: "
    "run_cw_fig5(out, topologies=100, ilp_reconfigurations=99, ilp_max_gpus=16384) from "
    "Python (hours; CP-SAT finds no solution above 2k GPUs within a minute); "
    "python benchmarks/toe.py runs 100 topologies with the ILPs on 10 (~45 min)."
)


def _cross_wiring_presets() -> list[PaperPreset]:
    """The Cross Wiring micro-benchmark presets (:mod:`lumoscore.experiments.cross_wiring`)."""
    return [
        PaperPreset(
            name="cw-fig5",
            title="Cross Wiring: LTCR of six ToE strategies against cluster size",
            paper="Cross Wiring Fig. 5 (§6.3)",
            description=(
                f"{_CW_MICRO_TEXT} Writes the LTCR per size and strategy (mean, min, max) "
                "beside the paper's (ILW always 1, Uniform as low as 0.903 even with the ILP)."
            ),
            kind="task",
            task=run_cw_fig5,
            tiny=_CW_MICRO_TINY,
            full_command="lumos run --preset cw-fig5",
        ),
        PaperPreset(
            name="cw-fig6",
            title="Cross Wiring: ToE solve time of six strategies against cluster size",
            paper="Cross Wiring Fig. 6 (§6.3)",
            description=(
                f"{_CW_MICRO_TEXT} Writes the wall-clock seconds per reconfiguration (median, "
                "mean, max), the ratio to ILW-MDMCF beside the paper's (ILW-ILP up to 27.96x; "
                "Uniform-ILP too slow to measure at 32k). Timings are noisy on a shared machine."
            ),
            kind="task",
            task=run_cw_fig6,
            tiny=_CW_MICRO_TINY,
            full_command="lumos run --preset cw-fig6",
        ),
        PaperPreset(
            name="cw-fig7",
            title="Cross Wiring: MRAR of the ILW strategies against cluster size",
            paper="Cross Wiring Fig. 7 (§6.3)",
            description=(
                f"{_CW_MICRO_TEXT} Writes the MRAR of ILW-MDMCF, ILW-MCF and ILW-ILP and the "
                "gap MRAR(ILP) - MRAR(MDMCF) from the same state (the paper: MDMCF close to "
                "the ILP, better than MCF)."
            ),
            kind="task",
            task=run_cw_fig7,
            tiny=_CW_MICRO_TINY,
            full_command="lumos run --preset cw-fig7",
        ),
        PaperPreset(
            name="cw-fig3c",
            title="Cross Wiring: Uniform-Wiring ILP solve time against cluster size",
            paper="Cross Wiring Fig. 3(c) (§2.3)",
            description=(
                "Uniform Wiring, pods of 256 OCS-facing ports, heavy load, 1k-8k GPUs: the "
                "CP-SAT ToE ILP (most links, then least rewiring) on the first topology from "
                "scratch and one reconfiguration (10 % of the links moved) per size, 30 s "
                "limit per solve; marks solves that hit the limit (best solution kept) or "
                "found no solution (gave up, Helios answered). Seed 0. About 3 min. The paper "
                "(Gurobi, no limit): up to 5621.18 s at 8k; a larger limit needs "
                "run_cw_fig3c(out, time_limit_s=...) from Python."
            ),
            kind="task",
            task=run_cw_fig3c,
            tiny={"scales_gpus": [64, 128], "pod_ports": 16, "time_limit_s": 5.0},
            full_command="lumos run --preset cw-fig3c",
        ),
    ]


def _task_presets() -> list[PaperPreset]:
    return [
        PaperPreset(
            name="fig7",
            title="Maximum cluster size against per-port speed (Clos vs LumosCore)",
            paper="Fig. 7",
            description=(
                "The sizing formulas of lumoscore.hardware (as `lumos scale --plot`) for "
                "12.8T, 25.6T and 51.2T chips at 200-1600 Gb/s ports: 2- and 3-tier Clos, "
                "3-tier Clos 15:1, LumosCore tau=1/2 with 512-port OCSes (the paper's panel is "
                "the 51.2T one). Closed forms, about 5 s (mostly importing matplotlib); the "
                "default scale is the paper's."
            ),
            kind="task",
            task=run_fig7,
            tiny={"chips_tbps": [51.2], "port_speeds_gbps": [400.0, 800.0]},
            full_command="lumos run --preset fig7",
        ),
        PaperPreset(
            name="table6",
            title="Share of OCS links rewired per reconfiguration against cluster size",
            paper="Table 6",
            description=(
                f"{TOE_ARCH} clusters of 2k-16k GPUs, each running 1000 jobs of the "
                "lumoscore-published workload (the arrival rate per GPU of beta 2000 s at 4k) "
                "with the research exposure: OCS circuits rewired per reconfiguration of the "
                "simulation, as a share of the OCS core's circuits and of those of the pods in "
                "use, beside the paper's values (`--gpus` sets the scales). About 30 s. "
                "`run_table6(source='synthetic')` compares rewiring strategies on synthetic "
                "topologies instead."
            ),
            kind="task",
            task=run_table6,
            tiny={"scales_gpus": [512], "jobs": 20},
            full_command="lumos run --preset table6 --gpus 2048 --gpus 4096 --gpus 8192 "
            "--gpus 16384",
        ),
        PaperPreset(
            name="sec6.6",
            title="OCS configuration solve time against scale, mdmcf vs the ILP",
            paper="§6.6 (Fig. 3)",
            description=(
                f"{TOE_ARCH} clusters of 2k-32k GPUs, 2 reconfigurations (5% of the links "
                "moved) per scale: wall-clock time of mdmcf and of the CP-SAT MinRewiring ILP "
                "(up to 16k GPUs, 15 s limit per call; a hit limit is marked). About 1 min; "
                "timings are noisy on a shared machine."
            ),
            kind="task",
            task=run_sec66,
            tiny={"scales_gpus": [512], "reconfigurations": 1, "ilp_time_limit_s": 5.0},
            full_command="lumos run --preset sec6.6",
        ),
        *_cross_wiring_presets(),
        PaperPreset(
            name="fig6c",
            title="Throughput of one job under leaf-spine link failures, LumosCore vs leaf-spine",
            paper="LumosCore Fig. 6(c), Cross Wiring Fig. 8(b)",
            description=(
                "The 128-GPU testbed at 100 Gb/s (4 pods of 4 leaves and 4 spines, tau = 2; "
                "Cross and Uniform Wiring) and a 128-GPU leaf-spine, ECMP, one 96-GPU "
                "llama2-13B job "
                "(TP 8, PP 2, DP 6) with 0-30 % of the leaf-spine cables down, seeds 1-10: its "
                "throughput relative to no failure. Seconds."
            ),
            kind="task",
            task=run_link_failure_sweep,
            tiny={"fractions": (0.0, 0.2), "seeds": (1,)},
            full_command="lumos run --preset fig6c",
        ),
        PaperPreset(
            name="fig6c-ocs",
            title="Throughput of one job under spine-OCS fiber and OCS-port failures",
            paper="LumosCore Fig. 6(c), Cross Wiring Fig. 8(b) (the OCS side)",
            description=(
                "fig6c's testbed and job with 0-30 % of the spine-OCS fibers or of the OCS "
                "ports down (Cross and Uniform Wiring; the leaf-spine has neither), seeds "
                "1-10: throughput relative to no failure. On Cross Wiring an OCS port "
                "carries the Tx of one spine port and the Rx of its mirror, so it takes two "
                "spine ports down. Seconds."
            ),
            kind="task",
            task=functools.partial(
                run_link_failure_sweep, elements=("spine-ocs", "ocs-port"), name="fig6c-ocs"
            ),
            tiny={"fractions": (0.0, 0.2), "seeds": (1,)},
            full_command="lumos run --preset fig6c-ocs",
        ),
        PaperPreset(
            name="fig10",
            title="Logical topology matrices of a LumosCore run: snapshots and the mean",
            paper="LumosCore Fig. 10",
            description=(
                "LumosCore (51.2T, tau = 2) at 4096 GPUs (32 pods), the default trace (1000 "
                "lumoscore-published jobs at the paper's workload level), the pod-level "
                "circuits recorded over the run: heat maps at the arrivals of the jobs at "
                "20/40/60/80 % of the trace and the time-weighted mean. About 10 s."
            ),
            kind="task",
            task=run_fig10,
            tiny={"gpus": 512, "jobs": 20},
            full_command="lumos run --preset fig10",
        ),
        PaperPreset(
            name="testbed-static",
            title="Testbed static scenario: one 96-GPU job on Cross, Uniform and leaf-spine",
            paper="Cross Wiring §7 (static scenario)",
            description=(
                "3 pods of the 128-GPU testbed (96 GPUs, 100 Gb/s), one Pangu-alpha or GPT2 "
                "job (TP 8, PP 2, DP 6, EP 2): JRT, contention level, throughput against Cross "
                "and the LTCR of the OCS configuration (the paper: Uniform's LTCR 0.667, Cross "
                "up to 28.3 % more throughput). Seconds."
            ),
            kind="task",
            task=run_testbed_static,
            tiny={},
            full_command="lumos run --preset testbed-static",
        ),
        PaperPreset(
            name="testbed-dynamic",
            title="Testbed dynamic scenario: the 48-hour 50-job trace",
            paper="LumosCore §5 (Fig. 6(b), A.9), Cross Wiring §7 (Fig. 8(a))",
            description=(
                "The 128-GPU testbed (100 Gb/s), 50 jobs over 48 h (16-128 GPUs, Llama, "
                "Llama2, PanguAlpha, GPT2; hierarchical ring), seeds 1-5: Cross, Uniform+ILP "
                "(MinRewiring), Helios and leaf-spine; mean JRT, circuits rewired, and Cross "
                "against Uniform and leaf-spine beside the papers'. Seconds."
            ),
            kind="task",
            task=run_testbed_dynamic,
            tiny={"seeds": (1,), "jobs": 8},
            full_command="lumos run --preset testbed-dynamic",
        ),
        PaperPreset(
            name="testbed-minrewiring",
            title="Testbed: LumosCore against MinRewiring (Uniform + ILP) and Helios",
            paper="LumosCore §5 (Fig. 6(a)-(b), A.9 Figs 20-21)",
            description=(
                "The 128-GPU testbed (100 Gb/s): the static scenario's 96-GPU Pangu-alpha and "
                "GPT2 jobs and the 50-job 48-hour trace (seeds 1-5) on LumosCore (Interleaved "
                "Wiring, mdmcf), MinRewiring (Uniform Wiring, the ToE ILP) and Helios (Uniform "
                "Wiring, the Helios heuristic): JRT, LTCR, circuits rewired, and LumosCore "
                "against MinRewiring beside the paper's (+39.5 % throughput static; -3.9 % "
                "mean and up to -28.3 % JRT dynamic). Seconds."
            ),
            kind="task",
            task=run_testbed_minrewiring,
            tiny={"seeds": (1,), "jobs": 8},
            full_command="lumos run --preset testbed-minrewiring",
        ),
        PaperPreset(
            name="reconfig-interval",
            title="A job's time per step under periodic OCS switching",
            paper="LumosCore Table 5, Cross Wiring Table 4",
            description=(
                "The 128-GPU testbed (Cross Wiring), one llama2-7B job (TP 8, PP 2, DP 8) "
                "while half of the OCS links are switched every 30, 60 or 90 s or never, each "
                "switch stalling the cross-pod traffic for 2.38 s (the testbed's BGP "
                "convergence): mean time per step beside the papers'. Seconds."
            ),
            kind="task",
            task=run_reconfig_interval,
            tiny={"intervals": (30.0, 0.0), "steps": 100},
            full_command="lumos run --preset reconfig-interval",
        ),
        PaperPreset(
            name="vclos-fig2",
            title="vClos: how often ECMP makes flows share a link, against cluster size",
            paper="vClos Fig. 2",
            description=(
                "Leaf-spine clusters of 128-8192 GPUs (32 leaves x 16 spines at 512), 20 "
                "permutation rounds each (every GPU sends one flow to a GPU on another leaf, "
                "its own 5-tuple, MurmurHash3 ECMP with a new seed per round): the share of "
                "flows whose busiest link carries k flows, k = 1..6+. Seconds."
            ),
            kind="task",
            task=run_vclos_fig2,
            tiny={"scales_gpus": [128], "trials": 2},
            full_command="lumos run --preset vclos-fig2",
        ),
        PaperPreset(
            name="vclos-table4",
            title="vClos: the testbed's strategies on 32 GPUs, mean JRT and JWT",
            paper="vClos Table 4 and §8.2",
            description=(
                "The testbed's 32 GPUs (8 servers of 4, one leaf each, 4 spines; rECMP with 6 "
                "spines), 100 vclos-testbed jobs of 2-16 GPUs, seeds 1-10, literal exposure: "
                "OCS-vClos, vClos, SR, rECMP and ECMP; table4 gives mean JRT, JWT and JCT "
                "beside the paper's Table 4 and whether ours is ordered as it, table4-sizes "
                "the mean JRT per job size (ECMP's rise over vClos beside §8.2's). Seconds."
            ),
            kind="task",
            task=run_vclos_table4,
            tiny={"jobs": 30, "seeds": (1,)},
            full_command="lumos run --preset vclos-table4",
        ),
        PaperPreset(
            name="vclos-table5",
            title="vClos: mean JCT of seven strategies against the arrival rate, fragmentation",
            paper="vClos Tables 5 and 2",
            description=(
                "CLUSTER512 (32 leaves x 16 spines), 5000 jobs of the vclos-helios workload at "
                "lambda = 100-140 s, seeds 1-3, literal exposure: Best (ideal switch, the vClos "
                "scheduler's placement), OCS-vClos, vClos, SR, Balanced, ECMP and OCS-Relax; "
                "table5 gives mean JCT beside the paper's Table 5 and whether ours is ordered "
                "as the paper's, table2 the refusals of vClos and OCS-vClos by cause beside "
                "Table 2 (`--gpus 2048` runs CLUSTER2048 with as many arrivals per GPU). Runs "
                "go into a result store in the output folder (an interrupted run resumes); "
                "about 10 min on two cores."
            ),
            kind="task",
            task=run_vclos_table5,
            tiny={"lambdas": (120.0,), "jobs": 60, "seeds": (1,)},
            full_command="lumos run --preset vclos-table5",
        ),
        PaperPreset(
            name="vclos-fig13",
            title="vClos: mean JRT, JWT and JCT per strategy on 512 and 2048 GPUs",
            paper="vClos Fig. 13 and §9.4-9.5",
            description=(
                "CLUSTER512 at lambda = 120 s and CLUSTER2048 (64 leaves x 32 spines) at the "
                "paper's lambda = 15 s, 5000 vclos-helios jobs, seeds 1-3, literal exposure: "
                "the strategies of vclos-table5; fig13 gives every mean, fig13-claims the "
                "relative changes §9.4-9.5 state beside ours. With vclos-table5's output "
                "folder the 512-GPU runs are reused. About 15 min on two cores (ECMP on 2048 "
                "GPUs takes about 2 min a run)."
            ),
            kind="task",
            task=run_vclos_fig13,
            tiny={"clusters": ((512, 120.0),), "jobs": 40, "seeds": (1,)},
            full_command="lumos run --preset vclos-fig13",
        ),
        PaperPreset(
            name="vclos-table6",
            title="vClos: mean JCT of six strategies under FIFO, EDF and fewest-GPU-first",
            paper="vClos Table 6",
            description=(
                "CLUSTER512, 5000 vclos-helios jobs at lambda = 120 s, seeds 1-3, literal "
                "exposure: the strategies of vclos-table5 under FIFO, EDF (deadline = arrival "
                "+ 2 x run time; the paper defines none) and fewest GPUs first, mean JCT beside "
                "the paper's Table 6. About 5 min on two cores."
            ),
            kind="task",
            task=run_vclos_table6,
            tiny={"queues": ("fifo", "edf"), "jobs": 60, "seeds": (1,)},
            full_command="lumos run --preset vclos-table6",
        ),
        PaperPreset(
            name="vclos-table7",
            title="vClos: mean JRT, JWT and JCT of six strategies with the TPUv4 job mix",
            paper="vClos Table 7",
            description=(
                "CLUSTER512, 5000 vclos-tpuv4 jobs (TPUv4 slice sizes, 8-512 GPUs) at workload "
                "level 0.52 (the paper gives no rate; at 0.52 Best's mean JWT is within 3 % of "
                "Table 7's), seeds 1-3, literal exposure: mean JRT, JWT and JCT beside the "
                "paper's Table 7. About 10 min on two cores."
            ),
            kind="task",
            task=run_vclos_table7,
            tiny={"jobs": 40, "seeds": (1,)},
            full_command="lumos run --preset vclos-table7",
        ),
        PaperPreset(
            name="cw-fig9a",
            title="TE on a full mesh realized by Uniform vs Cross Wiring: normalized MLU",
            paper="Cross Wiring Fig. 9(a)",
            description=(
                "9 pods (8 OCS groups, 8 OCS ports a spine: Uniform-ILP's LTCR on the full "
                "mesh is the paper's 0.889), 96 Facebook-like Hadoop snapshots at 30 % load, "
                "min-MLU LP over direct and two-hop paths on the realized circuits: MLU on "
                "Uniform over MLU on Cross per snapshot, mean and max beside the paper's "
                "8.56 % / 12.36 %. About 30 s."
            ),
            kind="task",
            task=run_cw_fig9a,
            tiny={"snapshots": 4},
            full_command="lumos run --preset cw-fig9a",
        ),
        PaperPreset(
            name="cw-fig9b",
            title="TE on traffic-aware (COUDER-style) topologies, Uniform vs Cross Wiring",
            paper="Cross Wiring Fig. 9(b)",
            description=(
                "As cw-fig9a, but every window of 12 snapshots uses the logical topology a "
                "COUDER-style LP (topology and routing together) designs from the window "
                "before; MLU on Uniform over MLU on Cross, beside the paper's up to 14.9 %. "
                "About 5 min (the Uniform ILP dominates)."
            ),
            kind="task",
            task=run_cw_fig9b,
            tiny={"snapshots": 4, "window": 4},
            full_command="lumos run --preset cw-fig9b",
        ),
    ]


#: Every paper preset by name.
PAPER_PRESETS: dict[str, PaperPreset] = {
    p.name: p for p in (*_simulation_presets(), *_task_presets())
}


def get_preset(name: str) -> PaperPreset:
    """The preset ``name`` (case-insensitive).

    Raises
    ------
    ConfigError
        Unknown name; the message lists the allowed ones.

    Examples
    --------
    >>> get_preset("FIG25").name
    'fig25'
    >>> get_preset("fig9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: preset: unknown 'fig9'; allowed: fig8ab, fig8c, ...
    """
    key = name.strip().lower()
    if key not in PAPER_PRESETS:
        raise ConfigError(f"preset: unknown {name!r}; allowed: {', '.join(PAPER_PRESETS)}")
    return PAPER_PRESETS[key]


def takes_sizes(preset: PaperPreset) -> bool:
    """Whether a task preset runs at cluster sizes that ``--gpus`` replaces (its task takes
    ``scales_gpus``).

    Examples
    --------
    >>> takes_sizes(get_preset("table6")), takes_sizes(get_preset("fig7"))
    (True, False)
    """
    if preset.kind != "task" or preset.task is None:
        return False
    params = inspect.signature(preset.task).parameters.values()
    return any(p.name == "scales_gpus" or p.kind is p.VAR_KEYWORD for p in params)


def run_task(
    preset: PaperPreset,
    out_dir: str | Path,
    *,
    gpus: Sequence[int] | None = None,
    quick: bool = False,
) -> TaskOutput:
    """Run a task preset into ``out_dir``; ``gpus`` replaces its scales (``table6``,
    ``sec6.6``, ``cw-fig5``, ...), ``quick`` uses its tiny options. Also writes ``preset.json``.

    Examples
    --------
    >>> import tempfile
    >>> out = run_task(get_preset("fig7"), tempfile.mkdtemp(), quick=True)
    >>> any(p.name == "fig7.svg" for p in out.files)
    True
    """
    if preset.kind != "task" or preset.task is None:
        raise ConfigError(f"preset {preset.name!r} is a simulation preset, not a task")
    options: dict[str, Any] = dict(preset.tiny) if quick else {}
    if gpus is not None:
        if not takes_sizes(preset):
            sized = ", ".join(p.name for p in PAPER_PRESETS.values() if takes_sizes(p))
            raise ConfigError(
                f"--gpus: task preset {preset.name!r} has no cluster sizes to replace; "
                f"task presets that take --gpus: {sized}"
            )
        if not gpus or any(g < 8 for g in gpus):
            raise ConfigError(f"--gpus: cluster sizes >= 8, got {list(gpus)}")
        options["scales_gpus"] = list(gpus)
    folder = Path(out_dir)
    new = not folder.exists()
    try:
        result = preset.task(out_dir, **options)
    except BaseException:
        if new:  # a task refused before writing anything leaves no empty folder behind
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    doc = {**preset.summary(), "options": options, "files": [p.name for p in result.files]}
    info = atomic_write_text(
        Path(out_dir) / "preset.json", json.dumps(doc, indent=2, default=str) + "\n"
    )
    return TaskOutput((*result.files, info), result.rows)
