"""Sweeps: resume after a kill, failed runs, identical results on every executor, the CLI."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from lumoscore.cli import build_app, main
from lumoscore.errors import ConfigError
from lumoscore.experiments.architectures import PAPER_ARCHITECTURES
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.runner import (
    SweepError,
    _local_cluster,
    _local_results,
    run_one,
    run_sweep,
)
from lumoscore.experiments.store import ResultStore
from lumoscore.sim.results import SimResult


def tiny_runs(n: int = 4) -> list[RunConfig]:
    return [
        RunConfig(arch="best", gpus=256, trace={"jobs": 8, "load": 0.7}, seed=s)
        for s in range(1, n + 1)
    ]


def fail_on_seed_3(cfg: RunConfig) -> SimResult:
    """A run function that fails for one config (module level: picklable)."""
    if cfg.seed == 3:
        raise RuntimeError("boom")
    return run_one(cfg)


def without_wall(index: pd.DataFrame) -> pd.DataFrame:
    return index.drop(columns=["wall_s"]).reset_index(drop=True)


def test_killed_sweep_resumes_with_only_the_missing_runs(tmp_path: Path) -> None:
    runs = tiny_runs(5)
    calls: list[int] = []

    def killed_after_two(cfg: RunConfig) -> SimResult:
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C during the third run
        calls.append(cfg.seed)
        return run_one(cfg)

    store = ResultStore(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(runs, store, workers=1, progress=False, run_fn=killed_after_two)
    done = {store.key(r) for r in runs[:2]}
    assert set(store.keys()) == done
    stamps = {k: (store.run_dir(k) / "run.json").stat().st_mtime_ns for k in done}

    rerun: list[int] = []

    def counting(cfg: RunConfig) -> SimResult:
        rerun.append(cfg.seed)
        return run_one(cfg)

    index = run_sweep(runs, ResultStore(tmp_path), workers=1, progress=False, run_fn=counting)
    assert rerun == [3, 4, 5]
    assert index["seed"].tolist() == [1, 2, 3, 4, 5]
    assert all((store.run_dir(k) / "run.json").stat().st_mtime_ns == t for k, t in stamps.items())
    # a third run has nothing left to do
    run_sweep(runs, ResultStore(tmp_path), workers=1, progress=False, run_fn=counting)
    assert rerun == [3, 4, 5]


def test_failed_run_keeps_the_others_in_a_process_pool(tmp_path: Path) -> None:
    runs = tiny_runs(4)
    store = ResultStore(tmp_path)
    with pytest.raises(SweepError, match=r"1 of 4 runs failed.*seed 3.*RuntimeError: boom"):
        run_sweep(runs, store, workers=2, progress=False, run_fn=fail_on_seed_3)
    assert set(store.keys()) == {store.key(r) for r in runs if r.seed != 3}
    index = run_sweep(runs, store, workers=2, progress=False)
    assert index["seed"].tolist() == [1, 2, 3, 4]


def test_process_pool_equals_in_process(tmp_path: Path) -> None:
    runs = [
        RunConfig(arch=a, gpus=512, trace={"jobs": 12}, seed=s)
        for a in ("lumoscore-51.2T-tau2", "lumoscore-25.6T-tau1")
        for s in (1, 2)
    ]
    a = run_sweep(runs, ResultStore(tmp_path / "a"), workers=1, progress=False)
    b = run_sweep(runs, ResultStore(tmp_path / "b"), workers=2, progress=False)
    pd.testing.assert_frame_equal(without_wall(a), without_wall(b))
    for key in a["key"]:
        for name in ("jobs.parquet", "queue.parquet"):
            assert (tmp_path / "a" / "runs" / key / name).read_bytes() == (
                tmp_path / "b" / "runs" / key / name
            ).read_bytes()


@pytest.mark.slow
def test_dask_local_cluster_equals_local_pool(tmp_path: Path) -> None:
    runs = [
        RunConfig(arch="lumoscore-51.2T-tau2", gpus=512, trace={"jobs": 15, "load": 0.8}, seed=1),
        RunConfig(arch="clos-51.2T-3tier", gpus=512, trace={"jobs": 15, "load": 0.8}, seed=1),
    ]
    local = run_sweep(runs, ResultStore(tmp_path / "local"), workers=2, progress=False)
    dask = run_sweep(
        runs, ResultStore(tmp_path / "dask"), executor="dask", dask_local=2, progress=False
    )
    pd.testing.assert_frame_equal(without_wall(local), without_wall(dask))
    assert local["arch"].tolist() == ["lumoscore-51.2T-tau2", "clos-51.2T-3tier"]
    for key in local["key"]:
        sa, sb = ResultStore(tmp_path / "local"), ResultStore(tmp_path / "dask")
        pd.testing.assert_frame_equal(sa.jobs(key), sb.jobs(key))
        assert (sa.run_dir(key) / "jobs.parquet").read_bytes() == (
            sb.run_dir(key) / "jobs.parquet"
        ).read_bytes()


@pytest.mark.slow
def test_dask_local_workers_leave_ctrl_c_to_the_parent() -> None:
    """The sweep's local cluster: its workers ignore SIGINT (a terminal's Ctrl-C reaches the
    whole process group; the parent closes the cluster), and the parent's signal mask is
    as it was once the cluster has started."""
    from distributed import Client

    def ignores_sigint() -> bool:
        return signal.getsignal(signal.SIGINT) == signal.SIG_IGN

    with _local_cluster(1) as cluster, Client(cluster) as client:
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
        assert list(client.run(ignores_sigint).values()) == [True]
    assert not ignores_sigint()


TINY_TOML = """
name = "tiny"
gpus = 256
architectures = ["best", "lumoscore-51.2T-tau2"]
seeds = 2

[trace]
jobs = 6
load = 0.6
"""


def test_cli_run_file(tmp_path: Path) -> None:
    exp = tmp_path / "tiny.toml"
    exp.write_text(TINY_TOML)
    out = tmp_path / "out"
    runner = CliRunner()
    args = ["run", str(exp), "--out", str(out), "--workers", "1", "--no-report"]
    res = runner.invoke(build_app(), [*args, "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.stdout)["runs"]
    assert [(r["arch"], r["seed"], r["stored"]) for r in listed] == [
        ("best", 1, False),
        ("best", 2, False),
        ("lumoscore-51.2T-tau2", 1, False),
        ("lumoscore-51.2T-tau2", 2, False),
    ]
    assert not out.exists()  # a dry run writes nothing
    res = runner.invoke(build_app(), args)
    assert res.exit_code == 0, res.output
    assert "best" in res.output and "lumoscore-51.2T-tau2" in res.output
    assert "JCT" in res.output
    index = pd.read_csv(out / "index.csv")
    assert len(index) == 4 and set(index["seed"]) == {1, 2}
    summary = pd.read_csv(out / "summary.csv")
    assert summary["arch"].tolist() == ["best", "lumoscore-51.2T-tau2"]
    assert summary["slowdown_vs_best"].iloc[0] == 1.0
    assert summary["slowdown_vs_best"].iloc[1] >= 1.0 - 1e-9
    # --json, and nothing is simulated again
    before = {p: p.stat().st_mtime_ns for p in out.rglob("run.json")}
    res = runner.invoke(build_app(), [*args, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["experiment"] == "tiny" and len(doc["runs"]) == 4
    assert {r["arch"] for r in doc["runs"]} == {"best", "lumoscore-51.2T-tau2"}
    assert {p: p.stat().st_mtime_ns for p in out.rglob("run.json")} == before
    res = runner.invoke(build_app(), ["sweep", *args[1:], "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    assert all(r["stored"] for r in json.loads(res.stdout)["runs"])


def test_cli_invalid_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "bad.toml"
    exp.write_text('gpus = 256\narchitectures = ["best", "torus"]\n')
    with pytest.raises(SystemExit) as info:
        main(["run", str(exp), "--out", os.fspath(tmp_path / "o")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("lumos: error: ") and err.count("\n") == 1
    assert "'torus'" in err and "lumoscore-51.2T-tau2" in err


def test_default_experiment_without_file(tmp_path: Path) -> None:
    out = tmp_path / "default"
    res = CliRunner().invoke(
        build_app(), ["run", "--jobs", "2", "--out", str(out), "--workers", "1", "--no-report"]
    )
    assert res.exit_code == 0, res.output
    index = pd.read_csv(out / "index.csv")
    assert sorted(index["arch"]) == sorted(PAPER_ARCHITECTURES)
    assert set(index["gpus"]) == {4096} and set(index["trace.jobs"]) == {2}
    assert set(index["trace.beta_s"]) == {2000.0} and set(index["seed"]) == {1}
    summary = pd.read_csv(out / "summary.csv").set_index("arch")
    assert summary.loc["best", "slowdown_vs_best"] == 1.0


SIGKILL_TOML = """
name = "killme"
gpus = 512
architectures = ["lumoscore-51.2T-tau2"]
seeds = 16

[trace]
jobs = 15
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_sigkilled_lumos_run_resumes_with_only_the_missing_runs(
    tmp_path: Path, workers: int
) -> None:
    exp = tmp_path / "kill.toml"
    exp.write_text(SIGKILL_TOML)
    out = tmp_path / "out"
    cmd = ["lumos", "run", str(exp), "--out", str(out), "--workers", str(workers), "--no-report"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(list(out.glob("runs/*/run.json"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        with contextlib.suppress(OSError):
            text = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text()
            children = [int(c) for c in text.split()]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    if workers > 1 and sys.platform.startswith("linux"):
        assert len(children) == workers
        deadline = time.monotonic() + 10
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(c) for c in children), "orphaned pool workers kept running"
    done = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/run.json")}
    assert 3 <= len(done) < 16, "the sweep was not killed midway"
    res = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=True)
    assert len(json.loads(res.stdout)["runs"]) == 16
    after = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/run.json")}
    assert len(after) == 16
    assert all(after[p] == t for p, t in done.items())  # finished runs were not run again
    assert len(ResultStore(out).index()) == 16


@pytest.mark.parametrize("workers", [1, 2])
def test_per_run_progress_reaches_the_parent(tmp_path: Path, workers: int) -> None:
    runs = [
        RunConfig(arch=a, gpus=512, trace={"jobs": 10}, seed=1)
        for a in ("lumoscore-51.2T-tau2", "best")
    ]
    seen: list[tuple[str, int, int]] = []
    todo = [(ResultStore(tmp_path).key(r), r) for r in runs]
    with _local_results(todo, run_one, workers, lambda *a: seen.append(a)) as results:
        got = dict(results)
    assert set(got) == {k for k, _ in todo}
    for key, _ in todo:
        ticks = [(d, t) for k, d, t in seen if k == key]
        assert ticks[-1] == (10, 10) and [d for d, _ in ticks] == sorted(d for d, _ in ticks)
    # with a bar on a terminal the sweep gives the same results as without
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    shown = run_sweep(runs, ResultStore(tmp_path / "a"), workers=workers, console=console)
    plain = run_sweep(runs, ResultStore(tmp_path / "b"), workers=workers, progress=False)
    pd.testing.assert_frame_equal(without_wall(shown), without_wall(plain))
    assert "2/2" in console.file.getvalue()  # type: ignore[attr-defined]


def _simulator_has_failures() -> bool:
    import inspect

    from lumoscore.sim.engine import Simulator

    return "failures" in inspect.signature(Simulator).parameters


@pytest.mark.skipif(not _simulator_has_failures(), reason="Simulator without failures")
def test_failure_runs_are_deterministic_on_every_executor(tmp_path: Path) -> None:
    runs = [
        RunConfig(
            arch="lumoscore-51.2T-tau2",
            gpus=256,
            trace={"jobs": 12, "load": 0.7},
            failures={"rate_per_gpu_day": rate},
            seed=seed,
        )
        for rate in (0.0, 0.01)
        for seed in (1, 2)
    ]
    a = run_sweep(runs, ResultStore(tmp_path / "a"), workers=1, progress=False)
    b = run_sweep(runs, ResultStore(tmp_path / "b"), workers=2, progress=False)
    pd.testing.assert_frame_equal(without_wall(a), without_wall(b))
    for key in a["key"]:
        assert (tmp_path / "a" / "runs" / key / "jobs.parquet").read_bytes() == (
            tmp_path / "b" / "runs" / key / "jobs.parquet"
        ).read_bytes()
    failing = a[a["failures.rate_per_gpu_day"] > 0]
    assert (failing["restarts"] > 0).any()  # failures happened and were recorded
    assert (a.loc[a["failures.rate_per_gpu_day"] == 0, "restarts"] == 0).all()


def test_a_scheduler_without_workers_times_out_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    from distributed import LocalCluster

    import lumoscore.experiments.runner as runner_mod

    monkeypatch.setattr(runner_mod, "DASK_WORKER_TIMEOUT_S", 1.0)
    runs = [RunConfig(arch="best", gpus=256, trace={"jobs": 3})]
    with LocalCluster(
        n_workers=0, dashboard_address=None, silence_logs=logging.ERROR, processes=True
    ) as cluster:
        address = cluster.scheduler_address
        with pytest.raises(ConfigError, match="no worker joined the scheduler within 1 s"):
            run_sweep(runs, ResultStore(tmp_path / "s"), executor="dask", scheduler=address,
                      progress=False)  # fmt: skip
    assert not (tmp_path / "s" / "runs").exists()
