"""Experiments benchmark: the default experiment of ``lumos run`` end to end.

Runs ``lumos run --out <tmp> --no-report`` (the LumosCore paper's 4096-GPU comparison of the
seven presets on the ``lumoscore-published`` workload, 1000 jobs, exact max-min rates) in a fresh
process, as a user would, and reports the command's wall time and each run's simulation wall
time (from the store's index). Then reruns the command on the same store: every run is already
stored, so the rerun measures the resume path (load, validate, skip, summarize).

Then runs ``lumos run --preset all`` (every preset of the LumosCore paper at its scale, 1000
jobs, seeds 1-3, with reports) into a fresh folder and reports its wall time, the time of its
simulations and of its task presets (from ``paper.json``), and the resume path of that too.

Targets (2-core machine): the default experiment completes in <= 120 s; the whole paper in
<= 15 min.

Usage: ``python benchmarks/experiments.py [--workers N] [--jobs N] [--timeout S]
[--skip-paper]``; the last line is one JSON object ``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd


def run_cli(
    args: list[str], timeout_s: float, env: dict[str, str] | None = None
) -> tuple[float, int, str]:
    """Run ``lumos`` with ``args`` (and ``env`` added to this process's environment); return
    (wall time, exit code, stderr tail). On timeout the command gets Ctrl-C (it stores what
    finished and stops its workers); exit code -1."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["lumos", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        return time.perf_counter() - t0, -1, f"timed out after {timeout_s:.0f} s"
    return time.perf_counter() - t0, proc.returncode, err.strip()[-500:]


def paper_all(opts: argparse.Namespace, figures: dict[str, float | str], target_s: float) -> bool:
    """``lumos run --preset all`` into a fresh folder, then again (the resume path); add its
    figures; whether it finished within ``target_s``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "all"
        args = ["run", "--preset", "all", "--out", str(out)]
        if opts.workers is not None:
            args += ["--workers", str(opts.workers)]
        if opts.jobs is not None:
            args += ["--jobs", str(opts.jobs)]
        wall, code, err = run_cli(args, max(opts.timeout, 2 * target_s))
        print(f"lumos run --preset all: {wall:.1f} s, exit code {code}")
        if code != 0:
            print(err)
        figures["paper_all_s"] = round(wall, 2)
        if (out / "paper.json").is_file():
            doc = json.loads((out / "paper.json").read_text())
            for part in ("simulations_s", "tasks_s"):
                figures[f"paper_{part}"] = round(float(doc[part]), 2)
            figures["paper_distinct_simulations"] = doc["distinct_simulations"]
            print(
                f"  {doc['distinct_simulations']} distinct simulations "
                f"{doc['simulations_s']:.1f} s, task presets {doc['tasks_s']:.1f} s"
            )
        if code == 0:
            rerun, _, _ = run_cli(args, opts.timeout)
            print(f"rerun on the complete folder (resume path): {rerun:.1f} s")
            figures["paper_resume_noop_s"] = round(rerun, 2)
    return code == 0 and wall <= target_s


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None, help="lumos run --workers")
    parser.add_argument("--jobs", type=int, default=None, help="lumos run --jobs (default 1000)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before giving up")
    parser.add_argument(
        "--skip-paper", action="store_true", help="leave out `lumos run --preset all` (15 min)"
    )
    opts = parser.parse_args()
    figures: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "default"
        args = ["run", "--out", str(out), "--no-report"]
        if opts.workers is not None:
            args += ["--workers", str(opts.workers)]
        if opts.jobs is not None:
            args += ["--jobs", str(opts.jobs)]
        wall, code, err = run_cli(args, opts.timeout)
        print(f"lumos run (default experiment): {wall:.1f} s, exit code {code}")
        if code != 0:
            print(err)
        figures["default_experiment_s"] = round(wall, 2)
        if (out / "index.parquet").is_file():
            index = pd.read_parquet(out / "index.parquet")
            for arch, w in zip(index["arch"], index["wall_s"], strict=True):
                print(f"  {arch:24s} simulation {w:8.2f} s")
                figures[f"{arch}_sim_s"] = round(float(w), 2)
            figures["runs_stored"] = len(index)
        if code == 0:
            rerun, code2, _ = run_cli(args, opts.timeout)
            print(f"rerun on the complete store (resume path): {rerun:.1f} s, exit code {code2}")
            figures["resume_noop_s"] = round(rerun, 2)
    targets = {"default_experiment_s": 120.0}
    met = code == 0 and float(figures["default_experiment_s"]) <= targets["default_experiment_s"]
    if not opts.skip_paper:
        targets["paper_all_s"] = 900.0
        met = bool(met) & paper_all(opts, figures, targets["paper_all_s"])
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
