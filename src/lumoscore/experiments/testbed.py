"""The LumosCore and Cross Wiring testbed scenarios in the simulator, as task presets.

Both papers run their experiments on one 128-NPU testbed (LumosCore §5 and A.9, Cross Wiring
§7 and E.1): 4 pods, each of 4 leaves and 4 spines with two links per leaf-spine pair
(``tau = 2``), 8 NPUs a server and 8 a leaf, 4 OCS groups of 8 four-port OCSes; and, as the
optimal baseline, a leaf-spine cluster (8 leaves of 16 NPUs; its 8 spines with two links a
leaf are 16 one-link spines here), all at 100 Gb/s. Three architectures are compared
(:func:`testbed_cases`):
``cross`` (Cross/Interleaved Wiring, mdmcf), ``uniform`` (Uniform Wiring, the ToE ILP; the
LumosCore paper's "MinRewiring"), ``helios`` (Uniform Wiring configured by the Helios
heuristic) and ``leaf-spine``. LumosCore routes by its plan
(``planned``: the flows of a leaf pair spread over the spines of its split, as the testbed's
UDP-port hashing spreads them evenly), the leaf-spine by ``balanced`` ECMP.

* :func:`run_testbed_static` (Cross Wiring §7 "Static Scenario"): 3 pods, 96 NPUs, one
  Pangu-alpha or GPT2 job with TP 8, PP 2, DP 6, EP 2 on the whole cluster, over a *static*
  logical topology: every spine's 8 OCS ports spread over the two other pods, 4 links a pair
  and group (``static_mesh``, :func:`lumoscore.topology.logical.port_mesh`; our reading of
  the paper's "static topology"); the job's own logical topology only plans its routes
  over the realized circuits. Reported: the LTCR of each wiring's realization of that mesh,
  each job's contention level and throughput (the paper: Uniform's LTCR 0.667 causes 2-flow
  contention, Cross up to 28.3 % more throughput).
* :func:`run_testbed_dynamic` (both papers, "Dynamic Scenario"): the 48-hour trace of 50 jobs
  (:func:`testbed_trace`): mean JRT and circuits rewired per architecture, and Cross against
  Uniform (the papers: -3.9 % mean, up to -22.1 % for one job; LumosCore Fig. 6(b) says
  -28.3 %) and against the leaf-spine (within 1 %).
* :func:`run_testbed_minrewiring` (LumosCore §5, A.9): both scenarios on LumosCore against
  MinRewiring (Uniform Wiring with the ToE ILP) and Helios, in the LumosCore paper's terms
  (+39.5 % throughput static; -3.9 % mean and up to -28.3 % JRT dynamic).

Examples
--------
>>> jobs = testbed_trace(1, jobs=5)
>>> {j.gpus for j in jobs} <= set(TESTBED_SIZES), jobs[0].collective
(True, 'hierarchical-ring')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError

__all__ = [
    "TESTBED_DYNAMIC_PAPER",
    "TESTBED_MODELS",
    "TESTBED_PORT_GBPS",
    "TESTBED_SIZES",
    "run_testbed_dynamic",
    "run_testbed_minrewiring",
    "run_testbed_static",
    "testbed_cases",
    "testbed_spec",
    "testbed_trace",
]

#: Job sizes of the dynamic scenario (NPUs), drawn uniformly.
TESTBED_SIZES: tuple[int, ...] = (16, 32, 64, 96, 128)
#: Its models, drawn uniformly (LumosCore §5: Llama-7B, Llama2-7B, Llama2-13B, PanguAlpha,
#: GPT2-13B), with the EP (in GPUs: 2 x TP) of the two with experts.
TESTBED_MODELS: tuple[str, ...] = ("llama_7b", "llama2_7b", "llama2_13b", "Pangu", "GPT2_13b")
_EP_MODELS = frozenset({"Pangu", "GPT2_13b"})
#: The papers' dynamic-scenario figures: Cross against Uniform (mean and best job) and the
#: gap to the leaf-spine.
TESTBED_DYNAMIC_PAPER: dict[str, float] = {
    "cross_vs_uniform_mean": -0.039,
    "cross_vs_uniform_best_job": -0.221,
    "cross_vs_leaf_spine_max_gap": 0.01,
}
#: Run time of a dynamic-scenario job on the ideal network: ``max(lo, N(mu, sigma))`` (s). The
#: papers give only the trace's span (48 h) and job count; these make the testbed about 70 %
#: busy.
_DURATION_S = (4500.0, 1800.0, 1800.0)


#: The testbeds' NIC speed (Gb/s): 100 Gb/s RoCE. Job run times are given on the ideal
#: network at the reference 1.6 Tb/s, so communication takes 16 times longer here.
TESTBED_PORT_GBPS = 100.0


def testbed_spec(pods: int = 4, port_gbps: float = TESTBED_PORT_GBPS) -> Any:
    """The LumosCore testbed's :class:`~lumoscore.topology.ClusterSpec`: ``pods`` pods of 4
    leaves and 4 spines, 8 NPUs a leaf and a server, ``tau = 2``, 4 OCS groups of four-port
    OCSes.

    Examples
    --------
    >>> s = testbed_spec()
    >>> s.gpus, s.leaves_per_pod, s.ocs_groups, s.port_gbps
    (128, 4, 4, 100.0)
    """
    from lumoscore.topology import ClusterSpec

    return ClusterSpec(pods=pods, k_leaf=8, k_spine=8, tau=2, gpus_per_server=8, ocs_ports=4,
                       port_gbps=port_gbps)  # fmt: skip


def testbed_cases(
    pods: int = 4, seed: int = 0, *, ecmp: bool = False, **lumos: Any
) -> dict[str, Callable[[], Any]]:
    """Builders of the testbed's three architectures by name, for ``pods`` pods of 32 NPUs at
    :data:`TESTBED_PORT_GBPS` (module docstring). ``ecmp``: every architecture routes by
    ECMP hashing (the robustness test's BGP routing) instead of LumosCore's plan and the
    leaf-spine's balanced ECMP; ``lumos``: further LumosCore options."""
    from lumoscore.fabric.leafspine import LeafSpineFabric
    from lumoscore.fabric.lumos import LumosCoreFabric

    spec = testbed_spec(pods)
    leaves = spec.gpus // 16
    lumos = {"routing": "ecmp" if ecmp else "planned", "seed": seed, **lumos}
    return {
        "cross": lambda: LumosCoreFabric(spec, wiring="cross", name="cross", **lumos),
        "uniform": lambda: LumosCoreFabric(
            spec, wiring="uniform", solver="ilp", name="uniform", **lumos
        ),
        "helios": lambda: LumosCoreFabric(
            spec, wiring="uniform", solver="helios", name="helios", **lumos
        ),
        "leaf-spine": lambda: LeafSpineFabric(
            leaves,
            16,
            8,
            gpus_per_leaf=16,
            routing="ecmp" if ecmp else "balanced",
            port_gbps=TESTBED_PORT_GBPS,
            seed=seed,
            name="leaf-spine",
        ),
    }


def testbed_trace(seed: int, *, jobs: int = 50, span_h: float = 48.0) -> list[Any]:
    """The dynamic scenario's jobs: Poisson arrivals over ``span_h`` hours, sizes from
    :data:`TESTBED_SIZES`, models from :data:`TESTBED_MODELS`, TP 8, PP uniform among the
    divisors of ``N / 8`` (``DP = N / (8 PP)``), EP 2 (16 GPUs) for PanguAlpha and GPT2,
    hierarchical ring, run times ``max(1800, N(4500, 1800))`` s; one generator seeded with
    ``seed``."""
    from lumoscore.workload import Job

    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(span_h * 3600.0 / jobs, jobs))
    arrival -= arrival[0]
    sizes = rng.choice(np.asarray(TESTBED_SIZES), jobs)
    models = rng.choice(np.asarray(TESTBED_MODELS, dtype=object), jobs)
    mu, sigma, lo = _DURATION_S
    duration = np.maximum(lo, rng.normal(mu, sigma, jobs))
    out = []
    for i in range(jobs):
        servers = int(sizes[i]) // 8
        divisors = [d for d in range(1, servers + 1) if servers % d == 0]
        pp = int(rng.choice(divisors))
        out.append(Job(
            job_id=i, arrival_s=float(arrival[i]), gpus=int(sizes[i]), model=str(models[i]),
            tp=8, pp=pp, dp=servers // pp, ep=16 if models[i] in _EP_MODELS else 8,
            iterations=10, duration_s=float(duration[i]), collective="hierarchical-ring",
        ))  # fmt: skip
    return out


def _static_runs(exposure: str, names: Sequence[str]) -> list[dict[str, Any]]:
    """The static scenario's runs (module docstring): one row per model and architecture of
    ``names`` with the job's JRT, contention level and the LTCR of its OCS configuration."""
    from lumoscore.sim import Simulator
    from lumoscore.sim.plan import build_plan
    from lumoscore.toe.metrics import ltcr
    from lumoscore.topology.logical import port_mesh
    from lumoscore.workload import Job

    rows: list[dict[str, Any]] = []
    cases = testbed_cases(pods=3, static_mesh=True)
    for model in ("Pangu", "GPT2_13b"):
        job = Job(job_id=0, arrival_s=0.0, gpus=96, model=model, tp=8, pp=2, dp=6, ep=16,
                  iterations=20, duration_s=1000.0, collective="hierarchical-ring")  # fmt: skip
        for name in names:
            build = cases[name]
            res = Simulator(build(), [job], exposure=exposure).run()
            row: dict[str, Any] = {
                "model": model,
                "architecture": name,
                "jrt_s": float(res.jobs["jrt_s"].iloc[0]),
                "contention_level": float(res.jobs["contention_level"].iloc[0]),
                "ltcr": float("nan"),
                "flows_per_circuit": float("nan"),
            }
            if name != "leaf-spine":  # the static mesh, its realization, the job's routes
                probe = build()
                gpus = probe.place(job)
                assert gpus is not None
                probe.apply(probe.admit(0, gpus))
                row["ltcr"] = float(ltcr(port_mesh(probe.spec), probe.state.circuits))
                plan = build_plan(job, gpus, probe, exposure=exposure)
                row["flows_per_circuit"] = _flows_per_circuit(probe, plan)
            rows.append(row)
    return rows


def _flows_per_circuit(fab: Any, plan: Any) -> float:
    """The most flows of one round of ``plan`` on one OCS circuit of ``fab`` (a pod pair's
    flows in a group over its circuits there; 1: no two flows share a circuit)."""
    off = fab.off_ocs
    circuits = fab.capacity_bps[off:] / fab.spec.port_bps
    worst = 0.0
    for r in plan.rounds:
        rows = np.repeat(np.arange(r.indptr.size - 1), np.diff(r.indptr))
        flows = np.bincount(r.indices, weights=r.weight[rows], minlength=fab.n_links)[off:]
        on = (circuits > 0) & (flows > 0)
        if on.any():
            worst = max(worst, float((flows[on] / circuits[on]).max()))
    return worst


def _relative(rows: list[dict[str, Any]], base: str, out: str) -> None:
    """``row[out] = JRT(base) / row's JRT`` among the rows of the same model."""
    ref = {r["model"]: r["jrt_s"] for r in rows if r["architecture"] == base}
    for row in rows:
        row[out] = ref[row["model"]] / row["jrt_s"]


def run_testbed_static(out_dir: str | Path, *, exposure: str = "research") -> Any:
    """Cross Wiring §7 "Static Scenario" (module docstring). Writes
    ``testbed-static.csv``/``.md``: per model and architecture the job's JRT, contention
    level, throughput relative to Cross, the LTCR of the static mesh's realization and the
    most flows of one round on one OCS circuit."""
    from lumoscore.experiments.presets import TaskOutput, _write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = _static_runs(exposure, list(testbed_cases()))
    _relative(rows, "cross", "throughput_vs_cross")
    files = _write_table(out, "testbed-static", rows)
    return TaskOutput(tuple(files), tuple(rows))


def _dynamic_runs(
    seeds: Sequence[int], jobs: int, exposure: str, names: Sequence[str]
) -> tuple[list[dict[str, Any]], dict[str, NDArray[np.float64]]]:
    """The dynamic scenario's runs: one row per seed and architecture of ``names`` (mean JRT
    and JCT, contention level, circuits rewired, reconfigurations), then one row of means per
    architecture; and every job's JRT per architecture, seeds concatenated."""
    from lumoscore.sim import Simulator

    if not seeds or jobs < 1:
        raise ConfigError("seeds must be non-empty and jobs >= 1")
    rows: list[dict[str, Any]] = []
    per_job: dict[str, list[Any]] = {}
    for seed in seeds:
        trace = testbed_trace(int(seed), jobs=jobs)
        cases = testbed_cases(seed=int(seed))
        for name in names:
            res = Simulator(cases[name](), trace, exposure=exposure, seed=int(seed)).run()
            rows.append({
                "seed": int(seed), "architecture": name,
                "mean_jrt_s": res.summary["mean_jrt_s"], "mean_jct_s": res.summary["mean_jct_s"],
                "mean_contention_level": res.summary["mean_contention_level"],
                "rewired_circuits": float(res.fabric.get("rewired_circuits", 0)),
                "reconfigurations": float(res.fabric.get("reconfigurations", 0)),
            })  # fmt: skip
            per_job.setdefault(name, []).append(res.jobs["jrt_s"].to_numpy(dtype=float))
    for name in names:
        sel = [r for r in rows if r["architecture"] == name]
        rows.append({
            "seed": "mean", "architecture": name,
            **{k: float(np.mean([r[k] for r in sel]))
               for k in ("mean_jrt_s", "mean_jct_s", "mean_contention_level",
                         "rewired_circuits", "reconfigurations")},
        })  # fmt: skip
    return rows, {k: np.concatenate(v) for k, v in per_job.items()}


def run_testbed_dynamic(
    out_dir: str | Path,
    *,
    seeds: Sequence[int] = (1, 2, 3, 4, 5),
    jobs: int = 50,
    exposure: str = "research",
) -> Any:
    """The papers' "Dynamic Scenario" (module docstring), means over ``seeds``. Writes
    ``testbed-dynamic.csv``/``.md`` (mean JRT and JCT, contention level, circuits rewired and
    reconfigurations per architecture and seed, and their mean) and
    ``testbed-dynamic-vs.csv``/``.md`` (Cross against Uniform and leaf-spine beside the
    papers')."""
    from lumoscore.experiments.presets import TaskOutput, _write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows, per_job = _dynamic_runs(seeds, jobs, exposure, list(testbed_cases()))
    files = _write_table(out, "testbed-dynamic", rows)
    mean = {r["architecture"]: r["mean_jrt_s"] for r in rows if r["seed"] == "mean"}
    vs = [
        {"comparison": "cross_vs_uniform_mean", "ours": mean["cross"] / mean["uniform"] - 1},
        {"comparison": "cross_vs_uniform_best_job",
         "ours": float(np.min(per_job["cross"] / per_job["uniform"] - 1))},
        {"comparison": "cross_vs_leaf_spine_max_gap",
         "ours": abs(mean["cross"] / mean["leaf-spine"] - 1)},
    ]  # fmt: skip
    for v in vs:
        v["paper"] = TESTBED_DYNAMIC_PAPER[v["comparison"]]
    files += _write_table(out, "testbed-dynamic-vs", vs)
    return TaskOutput(tuple(files), tuple(vs))


def run_testbed_minrewiring(
    out_dir: str | Path,
    *,
    seeds: Sequence[int] = (1, 2, 3, 4, 5),
    jobs: int = 50,
    exposure: str = "research",
) -> Any:
    """LumosCore §5 and A.9: LumosCore (Interleaved Wiring, mdmcf) against MinRewiring
    (Uniform Wiring configured by the ToE ILP) and Helios (Uniform Wiring, the Helios
    heuristic) on the testbed. Writes ``testbed-minrewiring-static`` (the static scenario's
    96-NPU jobs: JRT, contention, LTCR and throughput over MinRewiring),
    ``testbed-minrewiring-dynamic`` (the 50-job trace per seed: mean JRT, circuits rewired,
    reconfigurations) and ``testbed-minrewiring-vs`` (ours beside the paper's: up to +39.5 %
    throughput static; -3.9 % mean and up to -28.3 % JRT dynamic, Fig. 6(b))."""
    from lumoscore.experiments.presets import TaskOutput, _write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = ["cross", "uniform", "helios"]
    static = _static_runs(exposure, names)
    _relative(static, "uniform", "throughput_vs_minrewiring")
    for row in static:
        row["architecture"] = _MINREWIRING_NAMES[row["architecture"]]
    rows, per_job = _dynamic_runs(seeds, jobs, exposure, names)
    for row in rows:
        row["architecture"] = _MINREWIRING_NAMES[row["architecture"]]
    mean = {r["architecture"]: r["mean_jrt_s"] for r in rows if r["seed"] == "mean"}
    best = max(r["throughput_vs_minrewiring"] for r in static if r["architecture"] == "LumosCore")
    vs = [
        {"comparison": "static: LumosCore throughput over MinRewiring, best model",
         "ours": best - 1, "paper": 0.395},
        {"comparison": "dynamic: LumosCore mean JRT vs MinRewiring",
         "ours": mean["LumosCore"] / mean["MinRewiring"] - 1, "paper": -0.039},
        {"comparison": "dynamic: LumosCore JRT vs MinRewiring, best job",
         "ours": float(np.min(per_job["cross"] / per_job["uniform"] - 1)), "paper": -0.283},
        {"comparison": "dynamic: LumosCore mean JRT vs Helios",
         "ours": mean["LumosCore"] / mean["Helios"] - 1, "paper": float("nan")},
    ]  # fmt: skip
    files = _write_table(out, "testbed-minrewiring-static", static)
    files += _write_table(out, "testbed-minrewiring-dynamic", rows)
    files += _write_table(out, "testbed-minrewiring-vs", vs)
    return TaskOutput(tuple(files), tuple(vs))


#: The LumosCore paper's names of the testbed architectures.
_MINREWIRING_NAMES = {"cross": "LumosCore", "uniform": "MinRewiring", "helios": "Helios"}
