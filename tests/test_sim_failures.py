"""GPU failures: checkpoint-restart accounting in closed form, exactness of the fast path,
reproducibility, and validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_sim import BottleneckFabric, job
from lumoscore.errors import ConfigError
from lumoscore.fabric import BestFabric
from lumoscore.sim.engine import Simulator
from lumoscore.sim.failures import FailureModel


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    ckpt=st.sampled_from([50.0, 333.0, np.inf]),
    restart=st.sampled_from([0.0, 30.0]),
)
def test_one_job_alone_pays_exactly_its_lost_work_and_restarts(
    seed: int, ckpt: float, restart: float
) -> None:
    # Repairs are instant, so after a failure the job restarts at once on other servers: its
    # run time is its ideal time plus the time lost (work redone and restart overheads).
    fm = FailureModel(
        rate_per_gpu_day=5.0,
        checkpoint_interval_s=ckpt,
        restart_s=restart,
        hard_fraction=0.5,
        soft_repair_s=0.0,
        hard_repair_s=0.0,
    )
    j = job(0, 0.0, 16, iterations=50, duration=2000.0)
    res = Simulator(BestFabric(gpus=1024), [j], failures=fm, seed=seed).run()
    row = res.jobs.iloc[0]
    assert row.jwt_s == pytest.approx(0.0, abs=1e-9)
    assert row.jrt_s == pytest.approx(j.duration_s + row.lost_s, rel=1e-9)
    assert row.jct_s == pytest.approx(row.jwt_s + row.jrt_s, rel=1e-12)
    assert row.lost_s >= 0
    if row.restarts == 0:
        assert row.lost_s == 0


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_failures_keep_the_fast_path_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(8):
        t += float(rng.exponential(40.0))
        g = int(rng.choice([8, 16, 32]))
        jobs.append(job(i, t, g, iterations=6, duration=float(rng.uniform(50, 300))))
    fm = FailureModel(
        rate_per_gpu_day=30.0,
        checkpoint_interval_s=60.0,
        restart_s=10.0,
        soft_repair_s=20.0,
        hard_repair_s=200.0,
    )
    fab = BottleneckFabric(gpus=96, port_gbps=1600, core_gbps=800)
    fast = Simulator(fab, jobs, failures=fm, seed=seed).run()
    slow = Simulator(fab, jobs, failures=fm, seed=seed, isolation=False).run()
    for col in ("start_s", "finish_s", "jrt_s", "jwt_s", "lost_s", "restarts"):
        assert np.allclose(fast.jobs[col], slow.jobs[col], rtol=1e-9, atol=1e-6), col
    assert fast.stats["failures"] == slow.stats["failures"]


def test_failures_are_reproducible_and_counted() -> None:
    jobs = [job(i, 30.0 * i, 16, iterations=20, duration=1500.0) for i in range(10)]
    fm = FailureModel(rate_per_gpu_day=4.0, checkpoint_interval_s=200.0)
    a = Simulator(BestFabric(gpus=64), jobs, failures=fm, seed=3).run()
    b = Simulator(BestFabric(gpus=64), jobs, failures=fm, seed=3).run()
    assert a.jobs.equals(b.jobs)
    assert a.summary["failures"] > 0
    assert a.summary["restarts"] == int(a.jobs["restarts"].sum()) > 0
    assert a.stats["failures_hitting_jobs"] == a.summary["restarts"]
    assert a.jobs["finish_s"].notna().all()
    none = Simulator(BestFabric(gpus=64), jobs).run()
    assert none.summary["mean_jct_s"] < a.summary["mean_jct_s"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"rate_per_gpu_day": -1.0}, "rate_per_gpu_day"),
        ({"hard_fraction": 1.5}, "hard_fraction"),
        ({"checkpoint_interval_s": 0.0}, "checkpoint_interval_s"),
        ({"restart_s": float("nan")}, "restart_s"),
    ],
)
def test_bad_failure_parameters_are_named(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        FailureModel(**kwargs)


@pytest.mark.parametrize("routing", ["ecmp", "probing"])
def test_failures_keep_the_fast_path_exact_on_clos(routing: str) -> None:
    """GPU failures on a Clos: jobs killed on their isolated timelines (probing included)
    give the same times as simulating every job round by round."""
    from lumoscore.fabric.clos import ClosFabric
    from lumoscore.workload import generate_trace

    jobs = generate_trace("lumoscore-paper", 40, seed=5, cluster_gpus=256, beta_s=60).jobs
    fm = FailureModel(rate_per_gpu_day=0.05, checkpoint_interval_s=600.0, restart_s=30.0,
                      soft_repair_s=60.0, hard_repair_s=600.0)  # fmt: skip

    def clos() -> ClosFabric:
        return ClosFabric(256, 1600, radix=16, tiers=3, gpus_per_server=8, routing=routing,
                          probe_candidates=3.0)  # fmt: skip

    fast = Simulator(clos(), jobs, failures=fm, seed=2).run()
    slow = Simulator(clos(), jobs, failures=fm, seed=2, isolation=False).run()
    assert fast.summary["restarts"] > 0 and fast.jobs["isolated"].any()
    for col in ("start_s", "finish_s", "jrt_s", "lost_s", "restarts"):
        np.testing.assert_allclose(fast.jobs[col], slow.jobs[col], rtol=1e-9, atol=1e-6)
