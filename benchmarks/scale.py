"""Scale benchmark: every preset from 4k to 131k GPUs at the 4k default's workload level.

The default experiment is 1000 ``lumoscore-published`` jobs at beta 2000 s on 4096 GPUs.
Growing the cluster with the same trace leaves it nearly idle; here the job count grows with
the cluster (``1000 * GPUs / 4096`` jobs) and the arrival rate is set so that the workload
level (LumosCore Eq. 9, expected over the preset's draws) stays the 4096-GPU default's. Each
run is one process (research exposure, exact max-min rates; one seed draws the trace, the
fabric's hashes and the simulation) and reports its wall time (the simulation alone) and its
ratio to Best's at the same size on the same trace (``x Best``, when Best runs), its peak
memory (max RSS), the mean JCT, and the time spent
placing and admitting jobs (the run's placer's ``place``, attempts included, and the
fabric's ``admit``), per admission. Sizes a preset cannot build are skipped (a LumosCore
cluster is a whole number of pods and at most the chip's reach: 65k GPUs at tau 2, 131k at
tau 1 with 51.2T chips).

With several seeds (``--seeds 1,2,3``) every size and preset runs once per seed; the targets
hold for every seed, and the figures' keys name the seed (``clos-25.6T-4tier@32768#2_wall_s``).

Last, for every preset, the exponent ``b`` of ``wall ~ GPUs^b`` fitted over the sizes it ran
(the mean wall over the seeds at each size; at a constant level the jobs grow with the GPUs,
so ``b = 1`` is linear in the work).

Targets (the scale issue, two cores): at 32k GPUs every preset <= 30 s and <= 2 GB, and
LumosCore and Clos within 3x of Best on the same trace; at 65k (tau 2) and 131k (tau 1)
GPUs every LumosCore preset <= 300 s and <= 6 GB.

Usage: ``python benchmarks/scale.py [--gpus 4096,16384,32768,65536,131072] [--presets A,B]
[--seeds 1] [--timeout S]``; the last line is one JSON object ``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from lumoscore.experiments.architectures import PAPER_ARCHITECTURES as PRESETS
from sim import TIMED_RUN, run_child  # benchmarks/sim.py, beside this script

BASE_GPUS = 4096
BASE_JOBS = 1000
BASE_BETA_S = 2000.0
TRACE = "lumoscore-published"

CHILD = r"""
import json, resource, sys, time
from lumoscore.errors import ConfigError
from lumoscore.fabric.presets import make_fabric
from lumoscore.sim import Simulator, frozen_gc
from lumoscore.workload import generate_trace
from lumoscore.workload.load import workload_level
arch, gpus, jobs, preset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
base_gpus, base_beta, seed = int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
try:
    fab = make_fabric(arch, gpus, seed=seed)
except ConfigError as exc:
    print(json.dumps({"skipped": str(exc)}))
    sys.exit(0)
level = workload_level(preset, base_gpus, beta_s=base_beta)
trace = generate_trace(preset, jobs, seed=seed, cluster_gpus=gpus, load=level,
                       load_basis="expected")
spent = [0.0, 0]
def timed(fn, count):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[0] += time.perf_counter() - t
            spent[1] += count
    return wrapper
sim = Simulator(fab, trace.jobs, exposure="research", seed=seed)
sim.placer.place = timed(sim.placer.place, 0)
fab.admit = timed(fab.admit, 1)
def extra(res):
    return {"level": level, "admit_ms": 1e3 * spent[0] / max(spent[1], 1)}
"""


def run_one(arch: str, gpus: int, seed: int, timeout: float) -> dict:
    """One run in its own process; ``timeout`` / ``error`` / ``skipped`` keys otherwise."""
    jobs = round(BASE_JOBS * gpus / BASE_GPUS)
    args = [arch, gpus, jobs, TRACE, BASE_GPUS, BASE_BETA_S, seed]
    return run_child(CHILD + TIMED_RUN, args, timeout)


def targets_for(arch: str, gpus: int) -> dict[str, float]:
    """The issue's targets of one case (none below 32k GPUs)."""
    if gpus == 32768:
        return {"wall_s": 30.0, "peak_mib": 2048.0}
    if gpus > 32768 and arch.startswith("lumoscore"):
        return {"wall_s": 300.0, "peak_mib": 6144.0}
    return {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="4096,16384,32768,65536,131072")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--seeds", default="1", help="comma-separated seeds, one run each")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    args = ap.parse_args()
    presets = [a for a in args.presets.split(",") if a]
    sizes = sorted(int(g) for g in args.gpus.split(",") if g)
    bad = [a for a in presets if a not in PRESETS]
    if bad or any(g < BASE_GPUS for g in sizes):
        ap.error(f"unknown presets {bad} (allowed: {', '.join(PRESETS)}) or sizes below 4096")
    try:
        seeds = [int(x) for x in args.seeds.split(",") if x]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or len(set(seeds)) < len(seeds):
        ap.error(f"--seeds {args.seeds!r}: expected distinct non-negative integers, e.g. 1,2,3")
    print(f"{TRACE}, {BASE_JOBS} jobs per {BASE_GPUS} GPUs at the level of beta "
          f"{BASE_BETA_S:.0f} s on {BASE_GPUS}; research exposure, "
          f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}")  # fmt: skip
    print(f"{'architecture':<24}{'GPUs':>8}{'seed':>6}{'jobs':>7}{'wall s':>9}{'x Best':>8}"
          f"{'peak MiB':>10}{'admit ms':>10}{'mean JCT s':>13}")  # fmt: skip
    figures: dict[str, float | str] = {}
    targets: dict[str, float] = {}
    # wall times by preset, then (GPUs, seed)
    walls: dict[str, dict[tuple[int, int], float]] = {a: {} for a in presets}
    for gpus in sizes:
        for seed in seeds:
            for arch in presets:
                _case(arch, gpus, seed, len(seeds) > 1, args.timeout, figures, targets, walls)
    best = walls.get("best", {})
    for arch, pts in walls.items():
        by_size = {g: float(np.mean([w for (g2, _), w in pts.items() if g2 == g])) for g, _ in pts}
        if len(by_size) >= 2:
            g, w = np.log(list(by_size)), np.log(list(by_size.values()))
            figures[f"{arch}_exponent"] = round(float(np.polyfit(g, w, 1)[0]), 2)
    print("cost exponent b (wall ~ GPUs^b): " + ", ".join(
        f"{a} {figures[f'{a}_exponent']}" for a in presets if f"{a}_exponent" in figures
    ))  # fmt: skip
    if best and len(seeds) > 1:
        worst = {
            arch: max(w / best[gs] for gs, w in pts.items() if gs[0] == 32768 and gs in best)
            for arch, pts in walls.items()
            if arch != "best" and any(gs[0] == 32768 and gs in best for gs in pts)
        }
        if worst:
            print("x Best at 32768 GPUs, worst seed: " + ", ".join(
                f"{a} {v:.2f}" for a, v in worst.items()
            ))  # fmt: skip
    met = all(
        isinstance(figures.get(k), float | int) and figures[k] <= v and not math.isnan(figures[k])
        for k, v in targets.items()
    )
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


def _case(
    arch: str,
    gpus: int,
    seed: int,
    name_seed: bool,
    timeout: float,
    figures: dict[str, float | str],
    targets: dict[str, float],
    walls: dict[str, dict[tuple[int, int], float]],
) -> None:
    """Run one preset at one size and seed; print its row, file its figures and targets."""
    r = run_one(arch, gpus, seed, timeout)
    key = f"{arch}@{gpus}#{seed}" if name_seed else f"{arch}@{gpus}"
    jobs = round(BASE_JOBS * gpus / BASE_GPUS)
    if "skipped" in r:
        return
    for name, value in targets_for(arch, gpus).items():
        targets[f"{key}_{name}"] = value
    if "timeout" in r or "error" in r:
        why = f">{timeout:.0f} s" if "timeout" in r else f"error: {r['error']}"
        print(f"{arch:<24}{gpus:>8}{seed:>6}{jobs:>7}  {why[:70]}")
        figures[f"{key}_wall_s"] = f">{timeout:.0f}" if "timeout" in r else "error"
        return
    base = walls.get("best", {}).get((gpus, seed))  # (Best runs first at each size and seed)
    ratio = f"{r['wall_s'] / base:.2f}" if base and arch != "best" else "-"
    print(f"{arch:<24}{gpus:>8}{seed:>6}{jobs:>7}{r['wall_s']:>9.1f}{ratio:>8}"
          f"{r['peak_mib']:>10.0f}{r['admit_ms']:>10.2f}{r['mean_jct_s']:>13,.0f}")  # fmt: skip
    figures[f"{key}_wall_s"] = round(r["wall_s"], 2)
    figures[f"{key}_peak_mib"] = round(r["peak_mib"], 1)
    figures[f"{key}_admit_ms"] = round(r["admit_ms"], 3)
    figures[f"{key}_mean_jct_s"] = round(r["mean_jct_s"], 1)
    walls[arch][(gpus, seed)] = r["wall_s"]
    if base and arch != "best" and gpus == 32768:
        figures[f"{key}_over_best"] = round(r["wall_s"] / base, 2)
        targets[f"{key}_over_best"] = 3.0


if __name__ == "__main__":
    main()
