"""The Cross Wiring micro benchmark (§6.3, Figs. 5-7) and Fig. 3(c), as library functions and
task presets.

Set-up (Cross Wiring §6.3): temporally successive logical topologies per cluster size, pods
(EGroups) of 256 OCS-facing ports, heavy load (every port used), clusters of 2k-32k GPUs; six
configuration strategies (§6.2), each reconfiguring from its own previous configuration:

===================  ========  =======================================================
strategy             wiring    solver (:func:`lumoscore.toe.configure`)
===================  ========  =======================================================
ILW-MDMCF            cross     ``mdmcf`` (merge-decomposition MCF, §5)
ILW-MCF              cross     ``mcf`` (the MinRewiring-style decomposition)
ILW-ILP              cross     ``ilp`` (CP-SAT, exact MinRewiring)
Uniform-ILP          uniform   ``ilp`` (CP-SAT: most links, then least rewiring)
Uniform-Heuristic    uniform   ``bvn`` (Birkhoff-von Neumann)
Helios               uniform   ``helios``
===================  ========  =======================================================

Mapping to :class:`~lumoscore.topology.ClusterSpec` (:func:`spec_for`): one pod = 256 GPUs
whose single spine has ``k_spine = 256`` OCS-facing ports (``k_leaf = 8, tau = 8``: 32
leaves of 8 GPUs, one spine, so one OCS group of 256 OCSes); ``pods = GPUs / 256``. Topology
``t + 1`` is topology ``t`` with 10 % of its links moved by degree-preserving double-edge swaps
(:func:`successive_topologies`). Metrics per strategy (:func:`run_strategy`): LTCR of every
topology, MRAR and wall-clock solve time of every reconfiguration (the first topology is
configured from scratch and not timed), and for ILW-ILP the MRAR gap to MDMCF run from the
same state wherever CP-SAT proved optimality.

Task presets (``lumos run --preset NAME``), all with one seed for every random choice (the
topologies and the CP-SAT search):

* ``cw-fig5`` (:func:`run_cw_fig5`), ``cw-fig6`` (:func:`run_cw_fig6`), ``cw-fig7``
  (:func:`run_cw_fig7`): LTCR, solve time and MRAR of the six strategies. They share one
  computation (:func:`micro_benchmark`), cached as ``cw-micro-<key>.json`` in the output folder
  (the key hashes the options), so the three presets with one ``--out`` compute it once.
* ``cw-fig3c`` (:func:`run_cw_fig3c`): Uniform-ILP solve time against cluster size up to 8k
  GPUs under a time limit, marking the solves that hit it (``timeout``: best solution kept)
  or found no solution (``fallback``: the solver gave up, Helios answered).

``benchmarks/toe.py`` runs the same computation at the paper's scale with its own targets.

Examples
--------
>>> spec = spec_for(2048)
>>> spec.pods, spec.k_spine, spec.ocs_groups, spec.ocs_per_group
(8, 256, 1, 256)
>>> res = micro_benchmark([64], topologies=3, pod_ports=16, ilp_max_gpus=0)
>>> res["64"]["ILW-MDMCF"]["ltcr"], "skipped" in res["64"]["ILW-ILP"]
([1.0, 1.0, 1.0], True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError
from lumoscore.topology import ClusterSpec

if TYPE_CHECKING:
    from lumoscore.experiments.presets import TaskOutput

__all__ = [
    "FIG3C_SCALES_GPUS",
    "ILW_STRATEGIES",
    "MICRO_DEFAULTS",
    "PAPER_FIG3C_TIME_S",
    "PAPER_FIG5_LTCR",
    "PAPER_FIG6_ILP_OVER_MDMCF",
    "PAPER_HEURISTIC_LTCR",
    "POD_PORTS",
    "SCALES_GPUS",
    "STRATEGIES",
    "micro_benchmark",
    "plot_ltcr",
    "plot_mrar",
    "plot_solve_time",
    "run_cw_fig3c",
    "run_cw_fig5",
    "run_cw_fig6",
    "run_cw_fig7",
    "run_scale",
    "run_strategy",
    "spec_for",
    "strategy_line",
    "successive_topologies",
    "uniform_ilp_solves",
]

IntArray = NDArray[np.int64]
Log = Callable[[str], None]

#: OCS-facing ports of a pod (EGroup) in §6.3.
POD_PORTS = 256
#: Cluster sizes of Figs. 5-7 (GPUs).
SCALES_GPUS: tuple[int, ...] = (2048, 4096, 8192, 16384, 32768)
#: Cluster sizes of Fig. 3(c) (GPUs): up to 8k, the paper's largest.
FIG3C_SCALES_GPUS: tuple[int, ...] = (1024, 2048, 4096, 8192)
#: The six strategies of §6.2: ``(name, wiring, solver)``.
STRATEGIES: tuple[tuple[str, str, str], ...] = (
    ("ILW-MDMCF", "cross", "mdmcf"),
    ("ILW-MCF", "cross", "mcf"),
    ("ILW-ILP", "cross", "ilp"),
    ("Uniform-ILP", "uniform", "ilp"),
    ("Uniform-Heuristic", "uniform", "bvn"),
    ("Helios", "uniform", "helios"),
)
#: The strategies on Cross Wiring (Interleaved Wiring, ILW): the only ones Fig. 7 shows.
ILW_STRATEGIES: tuple[str, ...] = tuple(n for n, k, _ in STRATEGIES if k == "cross")

#: Fig. 5: the lowest LTCR the paper reports per strategy (ILW: always 1; Uniform: "as low as
#: 0.903 even with the ILP").
PAPER_FIG5_LTCR: dict[str, float] = {
    "ILW-MDMCF": 1.0,
    "ILW-MCF": 1.0,
    "ILW-ILP": 1.0,
    "Uniform-ILP": 0.903,
}
#: §2.3 on the heuristics of [6, 21] (Uniform-Heuristic, Helios): "Simulations in §6 indicate
#: these approaches ... result in a 0.759 LTCR".
PAPER_HEURISTIC_LTCR = 0.759
#: Fig. 6: ILW-ILP takes "up to 27.96 times" the time of ILW-MDMCF.
PAPER_FIG6_ILP_OVER_MDMCF = 27.96
#: Fig. 3(c): the Gurobi ILP of Uniform Wiring takes up to 5621.18 s at 8k nodes.
PAPER_FIG3C_TIME_S: dict[int, float] = {8192: 5621.18}

#: Defaults of the Figs. 5-7 presets (a few minutes on two cores; the paper: 100 topologies,
#: CP-SAT on all of them, ILPs up to 32k / 16k GPUs).
MICRO_DEFAULTS: dict[str, Any] = {
    "scales_gpus": list(SCALES_GPUS),
    "topologies": 20,
    "ilp_reconfigurations": 3,
    "ilp_max_gpus": 2048,
    "ilp_time_limit_s": 20.0,
    "change": 0.1,
    "pod_ports": POD_PORTS,
    "seed": 0,
}
_CACHE_VERSION = 1


# -- the computation ---------------------------------------------------------------------------


def spec_for(gpus: int, pod_ports: int = POD_PORTS) -> ClusterSpec:
    """The §6.3 cluster of ``gpus`` GPUs: pods of ``pod_ports`` GPUs and OCS-facing ports.

    One spine per pod (``k_leaf = tau = 8``), so one OCS group of ``pod_ports`` OCSes, each
    with one port per pod.

    Parameters
    ----------
    gpus : int
        Cluster size; a multiple of ``pod_ports`` with at least two pods.
    pod_ports : int
        OCS-facing ports of a pod (the paper: 256); a multiple of 8.

    Returns
    -------
    ClusterSpec

    Raises
    ------
    ConfigError
        ``pod_ports`` not a positive multiple of 8, or ``gpus`` not at least two whole pods.

    Examples
    --------
    >>> spec_for(32768).pods, spec_for(128, pod_ports=16).pods
    (128, 8)
    """
    if pod_ports < 8 or pod_ports % 8:
        raise ConfigError(f"pod_ports: a positive multiple of 8, got {pod_ports}")
    if gpus < 2 * pod_ports or gpus % pod_ports:
        raise ConfigError(
            f"gpus: a multiple of the pod size {pod_ports} with at least two pods, got {gpus}"
        )
    pods = gpus // pod_ports
    return ClusterSpec(
        pods=pods,
        k_leaf=8,
        k_spine=pod_ports,
        tau=8,
        gpus_per_server=8,
        ocs_ports=max(pod_ports, pods),
    )


def successive_topologies(
    pods: int, ports: int, count: int, rng: np.random.Generator, *, change: float = 0.1
) -> list[IntArray]:
    """``count`` temporally successive heavy-load logical topologies (``(P, P)`` each).

    The first uses every port (``ports / 2`` random Hamiltonian cycles); each next one moves
    about ``change`` of the links of the previous one by degree-preserving double-edge swaps
    (:func:`lumoscore.toe.random_demand`).

    Examples
    --------
    >>> ts = successive_topologies(8, 16, 3, np.random.default_rng(0))
    >>> len(ts), [int(t.sum(axis=1).max()) for t in ts]
    (3, [16, 16, 16])
    """
    from lumoscore.toe import random_demand

    if count < 1:
        raise ConfigError(f"topologies: at least 1, got {count}")
    out = [random_demand(pods, ports, rng)]
    for _ in range(count - 1):
        out.append(random_demand(pods, ports, rng, previous=out[-1], change=change))
    return out


def _stats(values: Sequence[float], stat: Callable[[Any], Any]) -> float | None:
    return float(stat(values)) if len(values) else None


def run_strategy(
    wiring: Any,
    demands: Sequence[IntArray],
    solver: str,
    *,
    time_limit_s: float = 60.0,
    seed: int = 0,
    compare_mdmcf: bool = False,
) -> tuple[dict[str, Any], list[float]]:
    """One strategy over successive topologies, each solve from its own previous circuits.

    Parameters
    ----------
    wiring : Wiring
        The physical topology (:func:`lumoscore.topology.build_wiring`).
    demands : sequence of ndarray
        The logical topologies, in order; the first is configured from scratch.
    solver : str
        A solver of :func:`lumoscore.toe.configure`.
    time_limit_s : float
        CP-SAT limit per call (``ilp``).
    seed : int
        CP-SAT random seed.
    compare_mdmcf : bool
        After every reconfiguration the ILP proved optimal, also run ``mdmcf`` from the same
        state and record ``MRAR(ilp) - MRAR(mdmcf)``.

    Returns
    -------
    record : dict
        ``topologies``; per topology ``ltcr`` and ``status``; per reconfiguration (topology
        1 on) ``time_s``, ``mrar`` and ``optimal``; their summaries ``ltcr_mean``,
        ``ltcr_min``, ``mrar_mean``, ``time_median_s``, ``time_max_s``; ``statuses`` (the
        distinct ones) and ``time_limit_s`` (``ilp`` only).
    gaps : list of float
        The MRAR gaps (``compare_mdmcf``).

    Examples
    --------
    >>> from lumoscore.topology import build_wiring
    >>> ts = successive_topologies(8, 16, 3, np.random.default_rng(0))
    >>> rec, _ = run_strategy(build_wiring(spec_for(128, 16), "cross"), ts, "mdmcf")
    >>> rec["topologies"], rec["ltcr_min"], len(rec["time_s"]), 0 <= rec["mrar_mean"] <= 1
    (3, 1.0, 2, True)
    """
    from lumoscore.toe import configure, evaluate

    cur = None
    ltcrs: list[float] = []
    statuses: list[str] = []
    times: list[float] = []
    mrars: list[float] = []
    gaps: list[float] = []
    for t, d in enumerate(demands):
        res = configure(d, wiring, current=cur, solver=solver, time_limit_s=time_limit_s, seed=seed)
        m = evaluate(res.circuits, d, current=cur)
        if compare_mdmcf and t > 0 and res.status == "optimal":
            md = configure(d, wiring, current=cur, solver="mdmcf")
            gaps.append(m.mrar - evaluate(md.circuits, d, current=cur).mrar)
        ltcrs.append(float(m.ltcr))
        statuses.append(res.status)
        if t > 0:  # the first topology is configured from scratch
            times.append(float(res.solve_time_s))
            mrars.append(float(m.mrar))
        cur = res.circuits
    record: dict[str, Any] = {
        "topologies": len(demands),
        "ltcr": ltcrs,
        "status": statuses,
        "time_s": times,
        "mrar": mrars,
        "optimal": [s == "optimal" for s in statuses[1:]],
        "ltcr_mean": float(np.mean(ltcrs)),
        "ltcr_min": float(np.min(ltcrs)),
        "mrar_mean": _stats(mrars, np.mean),
        "time_median_s": _stats(times, np.median),
        "time_max_s": _stats(times, np.max),
        "statuses": sorted(set(statuses)),
    }
    if solver == "ilp":
        record["time_limit_s"] = float(time_limit_s)
    return record, gaps


def strategy_line(name: str, kind: str, record: Mapping[str, Any]) -> str:
    """One progress line of a strategy's record (as ``benchmarks/toe.py`` prints it).

    Examples
    --------
    >>> strategy_line("Helios", "uniform", {"topologies": 2, "ltcr": [1.0, 0.9],
    ...     "time_s": [0.5], "mrar": [], "status": ["feasible", "feasible"]})
    '  Helios             n=  2  LTCR mean 0.9500 min 0.9000  time median 0.500 s max 0.500 s  status feasible'
    """  # noqa: E501
    ltcrs, times, mrars = record["ltcr"], record["time_s"], record["mrar"]
    return (
        f"  {name:18s} n={record['topologies']:3d}  "
        f"LTCR mean {np.mean(ltcrs):.4f} min {np.min(ltcrs):.4f}  "
        + (f"MRAR {np.mean(mrars):.4f}  " if kind == "cross" and mrars else "")
        + (f"time median {np.median(times):.3f} s max {np.max(times):.3f} s  " if times else "")
        + f"status {','.join(sorted(set(record['status'])))}"
    )


def run_scale(
    gpus: int,
    rng: np.random.Generator,
    *,
    topologies: int = 100,
    ilp_reconfigurations: int = 10,
    ilp_max_gpus: int = 4096,
    ilp_time_limit_s: float = 60.0,
    change: float = 0.1,
    pod_ports: int = POD_PORTS,
    seed: int = 0,
    log: Log | None = None,
) -> dict[str, Any]:
    """The six strategies of :data:`STRATEGIES` on one cluster size.

    Draws ``topologies`` successive topologies from ``rng`` (:func:`successive_topologies`)
    and runs every strategy over them (:func:`run_strategy`); the two ILP strategies run only
    up to ``ilp_max_gpus`` GPUs and on the first ``ilp_reconfigurations + 1`` topologies,
    under ``ilp_time_limit_s`` per call (CP-SAT seed ``seed``).

    Returns
    -------
    dict
        Per strategy name its record (or ``{"skipped": reason}``), and ``"mrar_gap_vs_ilp"``:
        ``{"values": [...], "max": ...}``, ``MRAR(ilp) - MRAR(mdmcf)`` from the ILW-ILP's
        state on every reconfiguration CP-SAT proved optimal.
    """
    from lumoscore.topology import build_wiring

    spec = spec_for(gpus, pod_ports)
    demands = successive_topologies(spec.pods, pod_ports, topologies, rng, change=change)
    wirings = {k: build_wiring(spec, k) for k in ("cross", "uniform")}
    out: dict[str, Any] = {}
    gaps: list[float] = []
    for name, kind, solver in STRATEGIES:
        use = demands
        if solver == "ilp":
            if gpus > ilp_max_gpus:
                out[name] = {"skipped": f"CP-SAT not run above {ilp_max_gpus} GPUs"}
                continue
            use = demands[: ilp_reconfigurations + 1]
        record, g = run_strategy(
            wirings[kind],
            use,
            solver,
            time_limit_s=ilp_time_limit_s,
            seed=seed,
            compare_mdmcf=solver == "ilp" and kind == "cross",
        )
        gaps += g
        out[name] = record
        if log is not None:
            log(strategy_line(name, kind, record))
    out["mrar_gap_vs_ilp"] = {"values": gaps, "max": max(gaps) if gaps else None}
    if gaps and log is not None:
        log(
            f"  MRAR(ilp) - MRAR(mdmcf) from the same state: max {max(gaps):.4f} "
            f"mean {np.mean(gaps):.4f} over {len(gaps)} optimal ILP solves"
        )
    return out


def micro_benchmark(
    scales_gpus: Sequence[int] = SCALES_GPUS,
    *,
    topologies: int = 100,
    ilp_reconfigurations: int = 10,
    ilp_max_gpus: int = 4096,
    ilp_time_limit_s: float = 60.0,
    change: float = 0.1,
    pod_ports: int = POD_PORTS,
    seed: int = 0,
    log: Log | None = None,
) -> dict[str, dict[str, Any]]:
    """The §6.3 micro benchmark: :func:`run_scale` at every size, keyed by ``str(gpus)``.

    One generator seeded with ``seed`` draws the topologies of every size in order; ``seed``
    is also the CP-SAT seed. ``log`` receives a header per size and a line per strategy.
    """
    if topologies < 2:
        raise ConfigError(f"topologies: at least 2 (one reconfiguration), got {topologies}")
    if ilp_reconfigurations < 1:
        raise ConfigError(f"ilp_reconfigurations: at least 1, got {ilp_reconfigurations}")
    if not scales_gpus:
        raise ConfigError("scales_gpus: give at least one cluster size")
    rng = np.random.default_rng(seed)
    results: dict[str, dict[str, Any]] = {}
    for gpus in scales_gpus:
        spec = spec_for(int(gpus), pod_ports)
        if log is not None:
            log(
                f"{gpus} GPUs: {spec.pods} pods x {pod_ports} OCS-facing ports, "
                f"{spec.ocs_groups} group of {spec.ocs_per_group} OCSes"
            )
        results[str(int(gpus))] = run_scale(
            int(gpus),
            rng,
            topologies=topologies,
            ilp_reconfigurations=ilp_reconfigurations,
            ilp_max_gpus=ilp_max_gpus,
            ilp_time_limit_s=ilp_time_limit_s,
            change=change,
            pod_ports=pod_ports,
            seed=seed,
            log=log,
        )
    return results


def uniform_ilp_solves(
    scales_gpus: Sequence[int] = FIG3C_SCALES_GPUS,
    *,
    reconfigurations: int = 1,
    time_limit_s: float = 30.0,
    change: float = 0.1,
    pod_ports: int = POD_PORTS,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Every Uniform-ILP solve of Fig. 3(c): per size, the first heavy-load topology from
    scratch and ``reconfigurations`` successive ones from the previous solution.

    Returns
    -------
    list of dict
        Per solve: ``gpus``, ``pods``, ``step`` (0 = from scratch), ``time_s`` (wall clock of
        the whole call), ``status`` (``optimal``, ``timeout`` = limit hit with a solution,
        ``fallback`` = no solution in time, Helios answered), ``hit_time_limit``, ``gave_up``,
        ``ltcr``, ``time_limit_s``.

    Examples
    --------
    >>> rows = uniform_ilp_solves([64], pod_ports=16, time_limit_s=5)
    >>> [(r["step"], r["status"], r["hit_time_limit"]) for r in rows]
    [(0, 'optimal', False), (1, 'optimal', False)]
    """
    from lumoscore.toe import configure, evaluate
    from lumoscore.topology import build_wiring

    if reconfigurations < 0:
        raise ConfigError(f"reconfigurations: at least 0, got {reconfigurations}")
    if time_limit_s <= 0:
        raise ConfigError(f"time_limit_s: positive, got {time_limit_s}")
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for gpus in scales_gpus:
        spec = spec_for(int(gpus), pod_ports)
        wiring = build_wiring(spec, "uniform")
        demands = successive_topologies(
            spec.pods, pod_ports, reconfigurations + 1, rng, change=change
        )
        cur = None
        for step, d in enumerate(demands):
            res = configure(
                d, wiring, current=cur, solver="ilp", time_limit_s=time_limit_s, seed=seed
            )
            rows.append(
                {
                    "gpus": int(gpus),
                    "pods": int(spec.pods),
                    "step": step,
                    "time_s": float(res.solve_time_s),
                    "status": res.status,
                    "hit_time_limit": res.status in ("timeout", "fallback"),
                    "gave_up": res.status == "fallback",
                    "ltcr": float(evaluate(res.circuits, d).ltcr),
                    "time_limit_s": float(time_limit_s),
                }
            )
            cur = res.circuits
    return rows


# -- caching the shared computation of Figs. 5-7 -------------------------------------------------


def _micro_options(**options: Any) -> dict[str, Any]:
    unknown = set(options) - set(MICRO_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(sorted(unknown))}; allowed: {', '.join(MICRO_DEFAULTS)}"
        )
    opts = {**MICRO_DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    opts["scales_gpus"] = [int(g) for g in opts["scales_gpus"]]
    for key in ("topologies", "ilp_reconfigurations", "ilp_max_gpus", "pod_ports", "seed"):
        opts[key] = int(opts[key])
    for key in ("ilp_time_limit_s", "change"):
        opts[key] = float(opts[key])
    return opts


def _cached_micro(out: Path, options: Mapping[str, Any]) -> tuple[dict[str, Any], Path]:
    """The results of :func:`micro_benchmark` for ``options``: read from
    ``cw-micro-<key>.json`` in ``out`` if a previous run with the same options wrote it, else
    computed and written (atomically)."""
    from lumoscore.fileio import atomic_write_text

    text = json.dumps({"version": _CACHE_VERSION, **options}, sort_keys=True)
    key = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = out / f"cw-micro-{key}.json"
    if path.is_file():
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            doc = None
        if doc and doc.get("version") == _CACHE_VERSION and doc.get("options") == dict(options):
            return doc["results"], path
    results = micro_benchmark(**options)
    doc = {"version": _CACHE_VERSION, "options": dict(options), "results": results}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    return results, path


def _micro_task(out_dir: str | Path, options: Mapping[str, Any]) -> tuple[Path, dict, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    opts = _micro_options(**options)
    results, cache = _cached_micro(out, opts)
    return out, results, cache


def _size(gpus: int) -> str:
    """``2048 -> '2k'``, ``128 -> '128'``."""
    return f"{gpus / 1024:g}k" if gpus >= 1024 else str(gpus)


def _scales(results: Mapping[str, Any]) -> list[int]:
    return sorted(int(g) for g in results)


def _entry(results: Mapping[str, Any], gpus: int, name: str) -> dict[str, Any]:
    return dict(results[str(gpus)].get(name, {}))


# -- figures -------------------------------------------------------------------------------------


def plot_ltcr(ax: Any, results: Mapping[str, Any]) -> None:
    """Fig. 5 on ``ax``: per size and strategy the mean LTCR (bar) and its minimum (whisker)."""
    scales = _scales(results)
    names = [s[0] for s in STRATEGIES]
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        xs, ys, lo = [], [], []
        for i, g in enumerate(scales):
            r = _entry(results, g, name)
            if "ltcr_mean" in r:
                xs.append(i + k * width)
                ys.append(r["ltcr_mean"])
                lo.append(r["ltcr_mean"] - r["ltcr_min"])
        ax.bar(xs, ys, width, yerr=[lo, [0] * len(lo)], label=name, color=f"C{k}")
    ax.set_xticks(np.arange(len(scales)) + 0.4 - width / 2, [_size(g) for g in scales])
    ax.set_ylim(0.5, 1.02)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("LTCR")
    ax.set_title("Fig. 5: LTCR (mean, bar to min)")


def plot_solve_time(ax: Any, results: Mapping[str, Any]) -> None:
    """Fig. 6 on ``ax``: per strategy the median solve time against size, a bar to the
    largest; a black ``x`` where CP-SAT hit its limit or found no solution."""
    scales = _scales(results)
    marked = False
    for k, (name, _, _) in enumerate(STRATEGIES):
        pts = [(g, _entry(results, g, name)) for g in scales]
        pts = [(g, r) for g, r in pts if r.get("time_median_s") is not None]
        if not pts:
            continue
        xs = [g for g, _ in pts]
        med = [r["time_median_s"] for _, r in pts]
        mx = [r["time_max_s"] for _, r in pts]
        ax.errorbar(
            xs,
            med,
            yerr=[[0] * len(med), np.subtract(mx, med)],
            marker="o",
            label=name,
            color=f"C{k}",
            capsize=2,
        )
        hit = [
            (g, r["time_max_s"])
            for g, r in pts
            if {"timeout", "fallback"} & set(r.get("statuses", ()))
        ]
        if hit:
            hx, hy = zip(*hit, strict=True)
            ax.scatter(
                hx,
                hy,
                marker="x",
                s=60,
                color="black",
                zorder=3,
                label=None if marked else "CP-SAT time limit hit",
            )
            marked = True
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(scales, [_size(g) for g in scales])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("seconds per reconfiguration")
    ax.set_title("Fig. 6: solve time (median, bar to max), s")


def plot_mrar(ax: Any, results: Mapping[str, Any]) -> None:
    """Fig. 7 on ``ax``: mean MRAR of the ILW strategies against size, a bar to the lowest."""
    scales = _scales(results)
    for k, (name, kind, _) in enumerate(STRATEGIES):
        if kind != "cross":
            continue
        pts = [(g, _entry(results, g, name)) for g in scales]
        pts = [(g, r) for g, r in pts if r.get("mrar_mean") is not None]
        if not pts:
            continue
        xs = [g for g, _ in pts]
        mean = [r["mrar_mean"] for _, r in pts]
        low = [min(r["mrar"]) for _, r in pts]
        ax.errorbar(
            xs,
            mean,
            yerr=[np.subtract(mean, low), [0] * len(mean)],
            marker="o",
            label=name,
            color=f"C{k}",
            capsize=2,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(scales, [_size(g) for g in scales])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("MRAR")
    ax.set_title("Fig. 7: MRAR (mean, bar to min)")


# -- task presets --------------------------------------------------------------------------------


def _run_text(opts: Mapping[str, Any]) -> str:
    return (
        f"{opts['topologies']} topologies per size (CP-SAT: {opts['ilp_reconfigurations']} "
        f"reconfigurations up to {opts['ilp_max_gpus']} GPUs, {opts['ilp_time_limit_s']:g} s "
        f"limit), pods of {opts['pod_ports']} ports, seed {opts['seed']}"
    )


def _fmt(v: float | None, digits: int = 4) -> str:
    return "not measured" if v is None else f"{v:.{digits}g}"


def run_cw_fig5(out_dir: str | Path, **options: Any) -> TaskOutput:
    """Fig. 5: LTCR of the six strategies against cluster size.

    Options are those of :func:`micro_benchmark` (defaults :data:`MICRO_DEFAULTS`); the
    results are shared with :func:`run_cw_fig6` and :func:`run_cw_fig7` through the cache
    file. Writes ``cw-fig5.csv``/``.md`` (per size and strategy: topologies, mean, lowest and
    highest LTCR, whether every topology was realized, statuses, the paper's lowest LTCR),
    ``cw-fig5-vs.csv``/``.md`` (the paper's statements beside ours) and
    ``cw-fig5.png``/``.svg``.

    Examples
    --------
    >>> import tempfile
    >>> out = run_cw_fig5(tempfile.mkdtemp(), scales_gpus=[64], topologies=3, pod_ports=16,
    ...                   ilp_reconfigurations=1, ilp_time_limit_s=5)
    >>> {r["strategy"]: r["ltcr_min"] for r in out.rows}["ILW-MDMCF"]
    1.0
    """
    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table

    out, results, cache = _micro_task(out_dir, options)
    rows: list[dict[str, Any]] = []
    for g in _scales(results):
        for name, kind, solver in STRATEGIES:
            r = _entry(results, g, name)
            ltcr = r.get("ltcr", [])
            paper = PAPER_FIG5_LTCR.get(name, PAPER_HEURISTIC_LTCR)
            rows.append(
                {
                    "gpus": g,
                    "strategy": name,
                    "wiring": kind,
                    "solver": solver,
                    "topologies": len(ltcr),
                    "ltcr_mean": float(np.mean(ltcr)) if ltcr else float("nan"),
                    "ltcr_min": float(np.min(ltcr)) if ltcr else float("nan"),
                    "ltcr_max": float(np.max(ltcr)) if ltcr else float("nan"),
                    "all_realized": bool(ltcr) and min(ltcr) == 1.0,
                    "status": ",".join(r.get("statuses", [])) or r.get("skipped", ""),
                    "paper_ltcr_min": paper,
                    "paper_source": "Fig. 5" if name in PAPER_FIG5_LTCR else "§2.3 (heuristics)",
                }
            )
    files = _write_table(out, "cw-fig5", rows)

    def low(names: Sequence[str]) -> float | None:
        vals = [r["ltcr_min"] for r in rows if r["strategy"] in names and r["topologies"]]
        return min(vals) if vals else None

    ilw, uilp, heur = (
        low(ILW_STRATEGIES),
        low(["Uniform-ILP"]),
        low(["Uniform-Heuristic", "Helios"]),
    )
    claims = [
        {
            "claim": "ILW strategies: LTCR on every topology",
            "paper": "1 (always)",
            "ours": _fmt(ilw),
            "holds": ilw == 1.0,
        },
        {
            "claim": "Uniform-ILP: lowest LTCR",
            "paper": "0.903",
            "ours": _fmt(uilp),
            "holds": None if uilp is None else uilp < 1.0,
        },
        {
            "claim": "Uniform heuristics (BvN, Helios): lowest LTCR",
            "paper": "0.759 (§2.3)",
            "ours": _fmt(heur),
            "holds": None if heur is None else heur < 1.0,
        },
    ]
    files += _write_table(out, "cw-fig5-vs", claims)
    fig = _new_figure(9.0, 4.2)
    ax = fig.add_subplot()
    plot_ltcr(ax, results)
    ax.axhline(0.903, ls="--", color="grey", lw=1, label="paper: Uniform-ILP as low as 0.903")
    lows = [r["ltcr_min"] for r in rows if r["topologies"]]
    ax.set_ylim(min(0.85, min(lows) - 0.02) if lows else 0.85, 1.01)
    ax.set_title(
        f"Cross Wiring Fig. 5: LTCR (mean, bar to min)\n{_run_text(_micro_options(**options))}",
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    files += _save_figure(fig, out, "cw-fig5")
    return TaskOutput((*files, cache), tuple(rows))


def run_cw_fig6(out_dir: str | Path, **options: Any) -> TaskOutput:
    """Fig. 6: wall-clock solve time of the six strategies against cluster size.

    Options as :func:`run_cw_fig5` (shared cache). Writes ``cw-fig6.csv``/``.md`` (per size
    and strategy: reconfigurations timed, median, mean and largest seconds, the ratio to
    ILW-MDMCF's median and the largest ratio to ILW-MDMCF on the same topology, the CP-SAT
    limit and whether it was hit, the paper's ratio for ILW-ILP), ``cw-fig6-vs.csv``/``.md``
    and ``cw-fig6.png``/``.svg``. Times are wall clock on a possibly shared machine.
    """
    from lumoscore.experiments.presets import (
        TaskOutput,
        _new_figure,
        _plain_log_ticks,
        _save_figure,
        _write_table,
    )

    out, results, cache = _micro_task(out_dir, options)
    opts = _micro_options(**options)
    rows: list[dict[str, Any]] = []
    for g in _scales(results):
        md = _entry(results, g, "ILW-MDMCF").get("time_s", [])
        for name, kind, solver in STRATEGIES:
            r = _entry(results, g, name)
            t = r.get("time_s", [])
            ratios = [a / b for a, b in zip(t, md, strict=False) if b > 0]
            statuses = set(r.get("statuses", ()))
            rows.append(
                {
                    "gpus": g,
                    "strategy": name,
                    "wiring": kind,
                    "solver": solver,
                    "reconfigurations": len(t),
                    "time_median_s": float(np.median(t)) if t else float("nan"),
                    "time_mean_s": float(np.mean(t)) if t else float("nan"),
                    "time_max_s": float(np.max(t)) if t else float("nan"),
                    "x_mdmcf_median": float(np.median(t) / np.median(md))
                    if t and md
                    else float("nan"),
                    "x_mdmcf_max": max(ratios) if ratios else float("nan"),
                    "time_limit_s": r.get("time_limit_s", float("nan")),
                    "hit_time_limit": bool({"timeout", "fallback"} & statuses),
                    "status": ",".join(sorted(statuses)) or r.get("skipped", ""),
                    "paper_x_mdmcf_max": PAPER_FIG6_ILP_OVER_MDMCF
                    if name == "ILW-ILP"
                    else float("nan"),
                    "paper": "too slow to measure" if name == "Uniform-ILP" and g >= 32768 else "",
                }
            )
    files = _write_table(out, "cw-fig6", rows)
    ilp = [r for r in rows if r["strategy"] == "ILW-ILP" and r["reconfigurations"]]
    ilp_x = max((r["x_mdmcf_max"] for r in ilp), default=None)
    uni = {r["gpus"]: r for r in rows if r["strategy"] == "Uniform-ILP"}
    big = max(uni)
    both = [g for g in uni if uni[g]["reconfigurations"] and any(r["gpus"] == g for r in ilp)]
    ilw_faster = (
        all(
            next(r for r in ilp if r["gpus"] == g)["time_median_s"] < uni[g]["time_median_s"]
            for g in both
        )
        if both
        else None
    )
    md_rows = [r for r in rows if r["strategy"] == "ILW-MDMCF"]
    md_big = max(md_rows, key=lambda r: r["gpus"])
    claims = [
        {
            "claim": "ILW-ILP time / ILW-MDMCF time, largest per topology",
            "paper": f"{PAPER_FIG6_ILP_OVER_MDMCF:g}",
            "ours": _fmt(ilp_x),
            "holds": None if ilp_x is None else ilp_x > 1.0,
        },
        {
            "claim": f"Uniform-ILP at {_size(big)} GPUs",
            "paper": "too slow to measure (32k)" if big >= 32768 else "-",
            "ours": uni[big]["status"]
            if uni[big]["reconfigurations"]
            else f"not run ({uni[big]['status']})",
            "holds": None,
        },
        {
            "claim": "ILW-ILP faster than Uniform-ILP (median)",
            "paper": "yes",
            "ours": "not measured" if ilw_faster is None else ("yes" if ilw_faster else "no"),
            "holds": ilw_faster,
        },
        {
            "claim": f"ILW-MDMCF at {_size(md_big['gpus'])} GPUs: median (max) seconds",
            "paper": "polynomial",
            "ours": f"{md_big['time_median_s']:.3g} ({md_big['time_max_s']:.3g})",
            "holds": None,
        },
    ]
    files += _write_table(out, "cw-fig6-vs", claims)
    fig = _new_figure(9.0, 4.4)
    ax = fig.add_subplot()
    plot_solve_time(ax, results)
    _plain_log_ticks(ax)
    if any(
        "time_limit_s" in _entry(results, g, n)
        for g in _scales(results)
        for n in ("ILW-ILP", "Uniform-ILP")
    ):
        ax.axhline(
            opts["ilp_time_limit_s"],
            ls=":",
            color="grey",
            lw=1,
            label=f"CP-SAT limit {opts['ilp_time_limit_s']:g} s",
        )
    skipped = [g for g in uni if not uni[g]["reconfigurations"]]
    note = ""
    if skipped:
        note = (
            f"; ILPs not run above {_size(opts['ilp_max_gpus'])} GPUs (paper: Uniform-ILP "
            "too slow to measure at 32k)"
        )
    ax.set_title(
        f"Cross Wiring Fig. 6: solve time per reconfiguration{note}\n{_run_text(opts)}", fontsize=8
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    files += _save_figure(fig, out, "cw-fig6")
    return TaskOutput((*files, cache), tuple(rows))


def run_cw_fig7(out_dir: str | Path, **options: Any) -> TaskOutput:
    """Fig. 7: MRAR of the ILW strategies against cluster size.

    Options as :func:`run_cw_fig5` (shared cache). Writes ``cw-fig7.csv``/``.md`` (per size
    and ILW strategy: reconfigurations, mean, lowest and highest MRAR, the mean over the
    reconfigurations the ILP ran, the gap ``MRAR(ilp) - MRAR(mdmcf)`` from the same state
    where CP-SAT proved optimality), ``cw-fig7-vs.csv``/``.md`` and ``cw-fig7.png``/``.svg``.
    Uniform strategies are left out, as in the paper (their configurations may not realize the
    topology).
    """
    from lumoscore.experiments.presets import TaskOutput, _new_figure, _save_figure, _write_table

    out, results, cache = _micro_task(out_dir, options)
    opts = _micro_options(**options)
    rows: list[dict[str, Any]] = []
    for g in _scales(results):
        k = len(_entry(results, g, "ILW-ILP").get("mrar", []))
        gaps = results[str(g)].get("mrar_gap_vs_ilp", {}).get("values", [])
        for name, _, solver in STRATEGIES:
            if name not in ILW_STRATEGIES:
                continue
            m = _entry(results, g, name).get("mrar", [])
            rows.append(
                {
                    "gpus": g,
                    "strategy": name,
                    "solver": solver,
                    "reconfigurations": len(m),
                    "mrar_mean": float(np.mean(m)) if m else float("nan"),
                    "mrar_min": float(np.min(m)) if m else float("nan"),
                    "mrar_max": float(np.max(m)) if m else float("nan"),
                    "mrar_mean_ilp_steps": float(np.mean(m[:k])) if m and k else float("nan"),
                    "ilp_gap_mean": float(np.mean(gaps))
                    if gaps and name == "ILW-MDMCF"
                    else float("nan"),
                    "ilp_gap_max": float(np.max(gaps))
                    if gaps and name == "ILW-MDMCF"
                    else float("nan"),
                    "ilp_optimal_compared": len(gaps) if name == "ILW-MDMCF" else 0,
                    "paper": {
                        "ILW-MDMCF": "close to ILP, above MCF",
                        "ILW-MCF": "below MDMCF",
                        "ILW-ILP": "the optimum",
                    }[name],
                }
            )
    files = _write_table(out, "cw-fig7", rows)
    by = {(r["gpus"], r["strategy"]): r for r in rows}
    diffs = [
        by[g, "ILW-MDMCF"]["mrar_mean"] - by[g, "ILW-MCF"]["mrar_mean"] for g in _scales(results)
    ]
    gaps = [v for g in results for v in results[g].get("mrar_gap_vs_ilp", {}).get("values", [])]
    claims = [
        {
            "claim": "MRAR(MDMCF) - MRAR(MCF), smallest over sizes (mean MRAR)",
            "paper": "> 0 (MDMCF better)",
            "ours": _fmt(min(diffs)),
            "holds": min(diffs) > 0,
        },
        {
            "claim": "MRAR(ILP) - MRAR(MDMCF) from the same state, largest",
            "paper": "small (MDMCF close to ILP)",
            "ours": _fmt(max(gaps) if gaps else None) + f" over {len(gaps)} optimal ILP solves",
            "holds": None if not gaps else max(gaps) <= 0.05,
        },
    ]
    files += _write_table(out, "cw-fig7-vs", claims)
    fig = _new_figure(7.0, 4.0)
    ax = fig.add_subplot()
    plot_mrar(ax, results)
    ax.set_title(
        f"Cross Wiring Fig. 7: MRAR of the ILW strategies (mean, bar to min)\n{_run_text(opts)}",
        fontsize=8,
    )
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, loc="center left")
    files += _save_figure(fig, out, "cw-fig7")
    return TaskOutput((*files, cache), tuple(rows))


def run_cw_fig3c(
    out_dir: str | Path,
    *,
    scales_gpus: Sequence[int] = FIG3C_SCALES_GPUS,
    reconfigurations: int = 1,
    time_limit_s: float = 30.0,
    change: float = 0.1,
    pod_ports: int = POD_PORTS,
    seed: int = 0,
) -> TaskOutput:
    """Fig. 3(c): Uniform-ILP solve time against cluster size (:func:`uniform_ilp_solves`).

    Writes ``cw-fig3c-solves.csv``/``.md`` (every solve) and ``cw-fig3c.csv``/``.md`` (per
    size: solves, median and largest seconds, the CP-SAT limit, how many solves were proved
    optimal, hit the limit with a solution (``timeout``) or found none (``gave_up``: Helios
    answered), the lowest LTCR, the paper's time) and ``cw-fig3c.png``/``.svg``.

    Examples
    --------
    >>> import tempfile
    >>> out = run_cw_fig3c(tempfile.mkdtemp(), scales_gpus=[64], pod_ports=16, time_limit_s=5)
    >>> r = out.rows[0]
    >>> r["gpus"], r["solves"], r["optimal"], r["hit_time_limit"]
    (64, 2, 2, False)
    """
    from lumoscore.experiments.presets import (
        TaskOutput,
        _new_figure,
        _plain_log_ticks,
        _save_figure,
        _write_table,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    solves = uniform_ilp_solves(
        scales_gpus,
        reconfigurations=reconfigurations,
        time_limit_s=time_limit_s,
        change=change,
        pod_ports=pod_ports,
        seed=seed,
    )
    files = _write_table(out, "cw-fig3c-solves", solves)
    rows: list[dict[str, Any]] = []
    for g in dict.fromkeys(s["gpus"] for s in solves):
        sel = [s for s in solves if s["gpus"] == g]
        t = [s["time_s"] for s in sel]
        rows.append(
            {
                "gpus": g,
                "pods": sel[0]["pods"],
                "solves": len(sel),
                "time_median_s": float(np.median(t)),
                "time_max_s": float(np.max(t)),
                "time_limit_s": float(time_limit_s),
                "optimal": sum(s["status"] == "optimal" for s in sel),
                "timeout": sum(s["status"] == "timeout" for s in sel),
                "gave_up": sum(s["gave_up"] for s in sel),
                "hit_time_limit": any(s["hit_time_limit"] for s in sel),
                "ltcr_min": float(min(s["ltcr"] for s in sel)),
                "paper_time_max_s": PAPER_FIG3C_TIME_S.get(g, float("nan")),
            }
        )
    files += _write_table(out, "cw-fig3c", rows)
    fig = _new_figure(6.5, 4.0)
    ax = fig.add_subplot()
    xs = [r["gpus"] for r in rows]
    ax.plot(
        xs,
        [r["time_max_s"] for r in rows],
        marker="o",
        color="C3",
        label="Uniform-ILP (CP-SAT), largest solve",
    )
    ax.plot(
        xs,
        [r["time_median_s"] for r in rows],
        marker=".",
        ls="--",
        color="C3",
        alpha=0.6,
        label="median solve",
    )
    for label, key, marker in (
        ("time limit hit, best solution kept", "timeout", "x"),
        ("no solution in time (gave up)", "gave_up", "v"),
    ):
        hit = [(r["gpus"], r["time_max_s"]) for r in rows if r[key]]
        if hit:
            hx, hy = zip(*hit, strict=True)
            ax.scatter(hx, hy, marker=marker, s=70, color="black", zorder=3, label=label)
    ax.axhline(time_limit_s, ls=":", color="grey", lw=1, label=f"limit {time_limit_s:g} s")
    paper = [(g, v) for g, v in PAPER_FIG3C_TIME_S.items() if g in xs]
    if paper:
        px, py = zip(*paper, strict=True)
        ax.scatter(px, py, marker="*", s=120, color="grey", label="paper (Gurobi): 5621.18 s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs, [_size(g) for g in xs])
    _plain_log_ticks(ax)
    ax.set_xlabel("cluster size (GPUs)")
    ax.set_ylabel("seconds per solve")
    ax.set_title(
        f"Cross Wiring Fig. 3(c): Uniform-ILP solve time, pods of {pod_ports} ports, "
        f"{reconfigurations + 1} solves per size",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="upper left")
    files += _save_figure(fig, out, "cw-fig3c")
    return TaskOutput(tuple(files), tuple(rows))
