"""vClos benchmark: 5000-job traces on the vClos paper's clusters, every architecture.

For CLUSTER512 (32 leaves x 16 spines) and CLUSTER2048 (64 x 32), one simulation of a
5000-job trace (seed 1) per architecture: Best, vClos, OCS-vClos, OCS-Relax and the shared
leaf-spine with ECMP, Balanced and source routing. The trace is the ``vclos-helios`` workload
(the paper's §9.2 job set) with a mean gap of 120 s on 512 GPUs and as many arrivals per GPU on
2048 (30 s); ``--preset`` and ``--beta`` change them. Traffic: the literal exposure, as in the
``vclos-table5`` preset. The script prints the
wall time and mean JCT of every run, and for the vClos allocators the median and largest time
of an allocation that built a virtual Clos (stages 2-3) and of any allocation attempt.

Targets (2-core machine, vClos issue): 5000 jobs on 512 GPUs <= 60 s per architecture, on
2048 GPUs <= 120 s; median allocation time at 2048 GPUs <= 10 ms (the paper's ILP: about 1 s
for vClos and 2 s for OCS-vClos).

Usage: ``python benchmarks/vclos.py [--jobs N] [--gpus G,H] [--preset P] [--beta S]
[--quick]``; the last line is one JSON object ``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import argparse
import json
import time

from lumoscore.fabric.presets import make_fabric
from lumoscore.placement.vclos import VClosAllocator
from lumoscore.sim import Simulator, frozen_gc
from lumoscore.workload import generate_trace

#: Wall-time target per cluster size (s).
TARGET_S = {512: 60.0, 2048: 120.0}
#: Median allocation time target at 2048 GPUs (ms).
TARGET_ALLOC_MS = 10.0
#: (label, architecture, routing)
CASES = (
    ("best", "best", None),
    ("vclos", "vclos", None),
    ("ocs-vclos", "ocs-vclos", None),
    ("ocs-relax", "ocs-relax", None),
    ("sr", "vclos-leaf-spine", "source"),
    ("balanced", "vclos-leaf-spine", "balanced"),
    ("ecmp", "vclos-leaf-spine", "ecmp"),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--gpus", default="512,2048")
    ap.add_argument("--preset", default="vclos-helios")
    ap.add_argument(
        "--beta", type=float, default=None, help="mean gap (s); default 120 x 512 / GPUs"
    )
    ap.add_argument("--quick", action="store_true", help="500 jobs, 512 GPUs")
    args = ap.parse_args()
    sizes = [512] if args.quick else [int(g) for g in args.gpus.split(",")]
    n_jobs = 500 if args.quick else args.jobs
    warm = VClosAllocator(4, 4, 2)  # compile the allocator's kernel outside the timings
    warm.allocate(0, 6)
    figures: dict[str, float] = {}
    targets: dict[str, float] = {}
    met = True
    for gpus in sizes:
        beta = args.beta if args.beta is not None else 120.0 * 512 / gpus
        trace = generate_trace(args.preset, n_jobs, seed=1, cluster_gpus=gpus, beta_s=beta)
        for label, arch, routing in CASES:
            fab = make_fabric(arch, gpus, routing=routing)
            placer = "vclos" if arch == "best" else None
            sim = Simulator(fab, trace.jobs, exposure="literal", placer=placer)
            t0 = time.perf_counter()
            with frozen_gc():
                res = sim.run()
            wall = time.perf_counter() - t0
            key = f"{gpus}/{label}"
            figures[f"{key}/wall_s"] = round(wall, 2)
            figures[f"{key}/mean_jct_s"] = round(float(res.summary["mean_jct_s"]), 1)
            jct = res.summary["mean_jct_s"]
            line = f"{gpus:5d} GPUs {label:10s} {wall:7.2f} s  mean JCT {jct:12.1f} s"
            if "virtual_clos_ms_median" in res.fabric:
                f = res.fabric
                figures[f"{key}/virtual_clos_ms_median"] = round(f["virtual_clos_ms_median"], 3)
                figures[f"{key}/virtual_clos_ms_max"] = round(f["virtual_clos_ms_max"], 3)
                figures[f"{key}/allocation_ms_median"] = round(f["allocation_ms_median"], 4)
                line += (
                    f"  virtual Clos median {f['virtual_clos_ms_median']:.3f} ms "
                    f"(max {f['virtual_clos_ms_max']:.2f} ms), refused for network "
                    f"{f['refusals_network']}"
                )
                if gpus == 2048:
                    targets[f"{key}/virtual_clos_ms_median"] = TARGET_ALLOC_MS
                    met &= f["virtual_clos_ms_median"] <= TARGET_ALLOC_MS
            print(line, flush=True)
            if gpus in TARGET_S and n_jobs >= 5000:
                targets[f"{key}/wall_s"] = TARGET_S[gpus]
                met &= wall <= TARGET_S[gpus]
    print(json.dumps({"figures": figures, "targets": targets, "met": bool(met)}))


if __name__ == "__main__":
    main()
