"""First-run benchmark: ``lumos run`` with an empty kernel cache, then with it filled.

A newcomer's first ``lumos run`` after installing compiles the kernels its runs need
(Numba); later runs load them from the cache. This runs the README's main command,
``lumos run --out <tmp>`` (the default experiment, with its report), twice in fresh
processes with ``NUMBA_CACHE_DIR`` set to a new empty folder: the first run compiles every
kernel into it (cold), the second loads them (warm). Both print the same table. Then the
same for one ``lumos simulate`` of ``lumoscore-25.6T-tau1`` (1000 jobs of the default
workload), figures without a target.

Targets (the scale issue, two cores): ``lumos run`` cold <= 30 s, warm <= 15 s.

Usage: ``python benchmarks/first_run.py [--workers N] [--timeout S]``; the last line is one
JSON object ``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from experiments import run_cli  # benchmarks/experiments.py, beside this script


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None, help="lumos run --workers")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    opts = parser.parse_args()
    figures: dict[str, float] = {}
    codes = []
    simulate = ["simulate", "--arch", "lumoscore-25.6T-tau1", "--preset", "lumoscore-published"]
    simulate += ["--beta", "2000"]
    for name, fixed in (("", ["run"]), ("simulate_", simulate)):
        with tempfile.TemporaryDirectory() as tmp:
            env = {"NUMBA_CACHE_DIR": str(Path(tmp) / "kernels")}
            for case in ("cold", "warm"):
                args = [*fixed, "--out", str(Path(tmp) / case)]
                if opts.workers is not None and not name:
                    args += ["--workers", str(opts.workers)]
                wall, code, err = run_cli(args, opts.timeout, env)
                print(f"lumos {fixed[0]}, kernel cache {case}: {wall:.1f} s, exit code {code}")
                if code != 0:
                    print(err)
                figures[f"{name}{case}_s"] = round(wall, 2)
                codes.append(code)
    targets = {"cold_s": 30.0, "warm_s": 15.0}
    met = all(c == 0 for c in codes) and all(figures[k] <= v for k, v in targets.items())
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
