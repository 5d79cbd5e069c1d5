"""The simulator against closed forms, its own slow path, and the queue policies."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_sim import BottleneckFabric, job
from lumoscore.errors import ConfigError
from lumoscore.fabric import BestFabric, FabricChange
from lumoscore.sim.engine import SimulationError, Simulator, frozen_gc
from lumoscore.sim.fluid import FluidSet
from lumoscore.sim.plan import build_plan, solo_progress
from lumoscore.traffic.collectives import ring_allreduce
from lumoscore.workload import generate_trace


class ReconfiguringFabric(BottleneckFabric):
    """A bottleneck fabric whose core link is re-provisioned at every admission (like an OCS
    reconfiguration), with a start delay."""

    def __init__(self, gpus: int, speeds: list[float], delay_s: float) -> None:
        super().__init__(gpus, port_gbps=100, core_gbps=speeds[0])
        self.speeds = speeds
        self.delay_s = delay_s
        self.n = 0

    def admit(self, job_id, gpus):
        self.n += 1
        new = self.speeds[self.n % len(self.speeds)] * 1e9
        return FabricChange(self.delay_s, np.array([2 * self.gpus]), np.array([new]))


def test_one_job_on_best_runs_its_ideal_time() -> None:
    j = job(0, 5.0, 64, pp=2, ep=16, duration=1234.5)
    res = Simulator(BestFabric(gpus=64), [j]).run()
    row = res.jobs.iloc[0]
    assert row.start_s == 5.0 and row.jwt_s == 0.0
    assert row.jrt_s == pytest.approx(1234.5, rel=1e-12)
    assert row.contention_level == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 24), size=st.floats(1e3, 1e9))
def test_ring_allreduce_closed_form(n: int, size: float) -> None:
    # 2(N-1) steps of S/N on a non-blocking fabric: 2(N-1)/N * S/B (GPUs on distinct servers)
    fab = BestFabric(gpus=8 * n, port_gbps=400)
    ranks = np.arange(n) * 8
    total = 0.0
    for rnd in ring_allreduce(ranks, size):
        f = rnd.flows
        routes = fab.routes(f.src, f.dst, np.arange(len(f.src)))
        t, _ = solo_progress(
            (routes.indptr, routes.indices, np.asarray(f.weight, float), np.asarray(f.bytes) * 8.0),
            fab.capacity_bps,
        )
        total += t
    assert total == pytest.approx(2 * (n - 1) / n * size * 8 / 400e9, rel=1e-9)


def test_two_flows_on_one_link_get_half_each() -> None:
    fab = BottleneckFabric(gpus=32, port_gbps=100, core_gbps=100)
    fs = FluidSet(fab.capacity_bps)
    r = fab.routes(np.array([0, 8]), np.array([16, 24]), np.array([0, 1]))
    from lumoscore.sim.plan import RoundPlan

    rp = RoundPlan(
        r.indptr,
        r.indices,
        np.ones(2),
        np.array([8e9, 8e9]),
        0.0,
        "x",
        0.0,
        0.0,
        np.unique(r.indices),
    )
    fs.add(0, rp)
    assert not fs.run_until(0.0)  # rates solved, nothing sent yet
    assert np.allclose(fs.rates, 50e9)
    assert fs.run_until(np.inf)
    assert fs.clock_s == pytest.approx(8e9 / 50e9)
    assert fs.pop_finished() == [0] and len(fs) == 0


def test_contending_identical_jobs_double_their_communication() -> None:
    # Two identical DP-only jobs spanning two leaves start together: every round's flows
    # cross the core link together, so each round's communication takes twice as long.
    fab = BottleneckFabric(gpus=64, port_gbps=100, core_gbps=100)
    a, b = job(0, 0.0, 32), job(1, 0.0, 32)
    solo = Simulator(fab, [a]).run().jobs.iloc[0]
    both = Simulator(fab, [a, b]).run().jobs
    plan = build_plan(a, np.arange(32), fab)
    comm = a.iterations * plan.solo_comm_s
    assert comm > 0
    # job b is placed on GPUs 32..63: its ring crosses the core link like job a's
    for _, row in both.iterrows():
        assert row.jrt_s == pytest.approx(solo.jrt_s + comm, rel=1e-9)
        assert row.contention_level == pytest.approx(2.0 * plan.solo_comm_s / plan.ideal_comm_s)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), beta=st.sampled_from([5.0, 40.0, 300.0]))
def test_isolation_fast_path_equals_round_by_round(seed: int, beta: float) -> None:
    rng = np.random.default_rng(seed)
    jobs = []
    t = 0.0
    for i in range(8):
        t += float(rng.exponential(beta))
        g = int(rng.choice([8, 16, 32, 48]))
        jobs.append(job(i, t, g, duration=float(rng.uniform(50, 400))))
    fab = BottleneckFabric(gpus=96, port_gbps=100, core_gbps=float(rng.choice([50, 100, 400])))
    fast = Simulator(fab, jobs).run().jobs
    slow = Simulator(fab, jobs, isolation=False).run().jobs
    for col in ("start_s", "finish_s", "jrt_s", "contention_level"):
        assert np.allclose(fast[col], slow[col], rtol=1e-9, atol=1e-6), col


def test_rounds_claimed_ahead_equal_round_by_round() -> None:
    """A contended ECMP Clos trace: rounds whose links are claimed when their compute starts
    (and handed back when another round needs the links first), and rounds running solo on
    links that solo rounds still in flight have left for good, give the same times as
    simulating every round in the shared fluid set."""
    from lumoscore.fabric.presets import make_fabric

    jobs = generate_trace("lumoscore-paper", 30, seed=3, cluster_gpus=1024, beta_s=300.0).jobs
    fast = Simulator(make_fabric("clos-51.2T-3tier", 1024, routing="ecmp"), jobs).run()
    slow = Simulator(
        make_fabric("clos-51.2T-3tier", 1024, routing="ecmp"), jobs, isolation=False
    ).run()
    assert fast.stats["reserved_rounds"] > 100 and fast.stats["unreserved_rounds"] > 10
    assert fast.stats["solo_rounds_on_left_links"] > 0
    assert slow.stats["reserved_rounds"] == 0
    assert slow.stats["max_min_solves"] > 0 and slow.stats["refilled_rows"] > 0
    for col in ("start_s", "finish_s", "jrt_s", "contention_level"):
        np.testing.assert_allclose(fast.jobs[col], slow.jobs[col], rtol=1e-9, atol=1e-6)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_reconfiguration_is_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = 0.0
    jobs = []
    for i in range(7):
        t += float(rng.exponential(30.0))
        jobs.append(job(i, t, int(rng.choice([8, 16, 32])), duration=float(rng.uniform(50, 300))))
    runs = []
    delay = float(rng.uniform(0, 5))
    for iso in (True, False):
        fab = ReconfiguringFabric(96, speeds=[30.0, 120.0, 60.0], delay_s=delay)
        runs.append(Simulator(fab, jobs, isolation=iso).run())
    fast, slow = runs[0].jobs, runs[1].jobs
    for col in ("start_s", "finish_s", "jrt_s"):
        assert np.allclose(fast[col], slow[col], rtol=1e-9, atol=1e-6), col
    assert runs[0].stats["reconfigurations"] == len(jobs)


def test_fifo_blocks_and_backfill_does_not() -> None:
    jobs = [job(0, 0.0, 48), job(1, 1.0, 32), job(2, 2.0, 16)]
    fifo = Simulator(BestFabric(gpus=64), jobs, queue="fifo").run().jobs.set_index("job_id")
    back = Simulator(BestFabric(gpus=64), jobs, queue="backfill").run().jobs.set_index("job_id")
    assert fifo.loc[2, "start_s"] == fifo.loc[1, "start_s"] > 2.0  # 2 waits behind 1
    assert back.loc[2, "start_s"] == 2.0  # 2 fits beside 0 and backfills
    smallest = Simulator(BestFabric(gpus=64), jobs, queue="smallest-first").run().jobs
    assert smallest.set_index("job_id").loc[2, "start_s"] == 2.0


def test_results_are_deterministic_and_complete(tmp_path) -> None:
    tr = generate_trace("lumoscore-paper", 60, seed=3, cluster_gpus=512, beta_s=500)
    fab = BottleneckFabric(gpus=512, port_gbps=200, core_gbps=800)
    a = Simulator(fab, tr.jobs).run()
    b = Simulator(fab, tr.jobs).run()
    assert a.jobs.equals(b.jobs)
    j = a.jobs
    assert j["finish_s"].notna().all()
    assert (j["jwt_s"] >= 0).all() and (j["jrt_s"] >= j["ideal_jrt_s"] * (1 - 1e-9)).all()
    assert np.allclose(j["jct_s"], j["jwt_s"] + j["jrt_s"])
    out = a.write(tmp_path / "run")
    again = b.write(tmp_path / "again")
    for name in ("jobs.parquet", "jobs.csv", "queue.csv", "summary.json"):
        # the same bytes for the same input: the wall-clock times go to timings.json
        assert (out / name).read_bytes() == (again / name).read_bytes(), name
    assert set(json.loads((out / "timings.json").read_text())) == {"wall_s", "plans_s"}
    assert "wall_s" not in (out / "summary.json").read_text()


def test_a_run_leaves_the_garbage_collector_alone_unless_asked() -> None:
    """``run()`` has no process-wide side effect; ``frozen_gc()`` freezes the objects made
    before the block only when the caller asks, and restores the collector after it."""
    jobs = [job(0, 0.0, 8), job(1, 1.0, 8)]
    assert gc.get_freeze_count() == 0
    seen: list[int] = []
    fab = BestFabric(gpus=16)
    real = fab.routes

    def routes(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    fab.routes = routes  # type: ignore[method-assign]
    plain = Simulator(fab, jobs).run()
    assert seen == [0, 0]  # a plain run freezes nothing
    seen.clear()
    with frozen_gc():
        frozen = Simulator(fab, jobs).run()
    assert seen and min(seen) > 0  # the objects made before the block were frozen meanwhile
    assert gc.get_freeze_count() == 0  # and are back in the collector's passes
    assert plain.jobs.equals(frozen.jobs)
    gc.freeze()  # a process that froze objects itself keeps them frozen
    try:
        with frozen_gc():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_too_big_jobs_are_rejected_and_bad_policy_named() -> None:
    res = Simulator(BestFabric(gpus=16), [job(0, 0.0, 32)]).run()
    assert bool(res.jobs["rejected"].iloc[0]) and res.summary["rejected"] == 1
    with pytest.raises(ConfigError, match="allowed: fifo"):
        Simulator(BestFabric(gpus=16), [], queue="lifo")
    with pytest.raises(ConfigError, match="seed must be an integer >= 0, got -1"):
        Simulator(BestFabric(gpus=16), [], seed=-1)
    assert Simulator(BestFabric(gpus=16), [], seed=np.int64(2)).seed == 2


def test_cli_simulate_json(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from lumoscore.cli import build_app

    out = tmp_path / "run"
    res = CliRunner().invoke(
        build_app(),
        [
            "simulate",
            "--arch",
            "best",
            "--gpus",
            "256",
            "--preset",
            "lumoscore-paper",
            "--jobs",
            "30",
            "--seed",
            "2",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    for key in (
        "jobs",
        "mean_jrt_s",
        "mean_jwt_s",
        "mean_jct_s",
        "p50_jct_s",
        "p99_jct_s",
        "wall_s",
    ):
        assert key in summary
    assert summary["jobs"] == 30
    import pandas as pd

    table = pd.read_parquet(out / "jobs.parquet")
    for col in ("job_id", "arrival_s", "start_s", "finish_s", "jrt_s", "jwt_s", "jct_s"):
        assert col in table.columns
    # on Best every job runs exactly its ideal time
    assert (table["jrt_s"] - table["ideal_jrt_s"]).abs().max() < 1e-6


def test_cli_simulate_writes_standard_json(tmp_path: Path) -> None:
    """A statistic without a value (the spread of groups of one job) is null in --json and
    summary.json, never Python's NaN, which jq and JSON.parse refuse."""
    import json

    from typer.testing import CliRunner

    from lumoscore.cli import build_app

    def strict(text: str) -> dict:
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard {c}"))

    out = tmp_path / "run"
    argv = ["simulate", "--gpus", "256", "--preset", "lumoscore-published", "--jobs", "3",
            "--out", str(out), "--json"]  # fmt: skip
    res = CliRunner().invoke(build_app(), argv)
    assert res.exit_code == 0, res.output
    doc = strict(res.output)
    assert doc["jobs"] == 3 and doc["jct_std_s"] is None
    assert strict((out / "summary.json").read_text())["summary"]["jct_std_s"] is None
    strict((out / "timings.json").read_text())


def test_cli_simulate_takes_fabric_options_and_a_placer() -> None:
    import json

    from typer.testing import CliRunner

    from lumoscore.cli import build_app

    argv = ["simulate", "--arch", "vclos-leaf-spine", "--gpus", "32", "--preset",
            "vclos-testbed", "--jobs", "20", "--exposure", "literal", "--json",
            "--option", "gpus_per_server=4", "--option", "spines=6",
            "--option", "gpus_per_leaf=4", "--placer", "server"]  # fmt: skip
    res = CliRunner().invoke(build_app(), argv)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["fabric"]["spines"], doc["fabric"]["gpus_per_leaf"], doc["jobs"]) == (6, 4, 20)


def test_cli_simulate_bad_input_exit_2() -> None:
    from lumoscore.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--arch", "nosuch", "--gpus", "256", "--preset", "lumoscore-paper"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--arch", "best", "--gpus", "256"])
    assert exc.value.code == 2


class TwoCoreFabric(BottleneckFabric):
    """Two parallel core links A and B. With ``move``, jobs start on A (job 3 on B) and the
    admission of job 1 takes A away and lists the jobs on it for re-routing onto B (jobs
    admitted later use B); without, every job uses B."""

    def __init__(self, gpus: int, move: bool) -> None:
        super().__init__(gpus)
        self.capacity_bps = np.concatenate([self.capacity_bps, [100e9]])  # link B = 2G + 1
        self.move = move
        self.on_b: set[int] = set()
        self.admitted: set[int] = set()

    def admit(self, job_id, gpus):
        self.admitted.add(job_id)
        if not self.move or job_id in (1, 3) or 1 in self.admitted:
            self.on_b.add(job_id)
        if self.move and job_id == 1:
            on_a = tuple(sorted(self.admitted - self.on_b))
            return FabricChange(0.0, np.array([2 * self.gpus]), np.array([0.0]), reroute=on_a)
        return FabricChange()

    def forget_routes(self, job_id):
        self.on_b.add(job_id)

    def routes(self, src, dst, flow_key, *, job_id=0):
        r = super().routes(src, dst, flow_key, job_id=job_id)
        if not self.move or job_id in self.on_b:
            r.indices[r.indices == 2 * self.gpus] = 2 * self.gpus + 1
        return r


def test_rerouted_round_in_flight_moves_its_remaining_bits(monkeypatch) -> None:
    """Job 0's core link goes away when job 1 is admitted: job 0 (and job 2, when it shares
    the link) is routed again onto the other, equal link, a round in flight or claimed ahead
    included. Finish times equal those of the same trace where every job used that link from
    the start; some arrival times hit a round in flight. When job 3 runs on the other link
    from the start, the moved rounds meet its rounds there, which were alone on it: finish
    times equal those of simulating every round in the shared fluid set."""
    moved = []
    remove = FluidSet.remove_job

    def spy(self, job_id):
        moved.append(job_id)
        return remove(self, job_id)

    monkeypatch.setattr(FluidSet, "remove_job", spy)
    first = job(0, 0.0, 32, ep=1)
    plan = build_plan(first, np.arange(32), TwoCoreFabric(96, False))
    ends = np.cumsum([x for rp in plan.rounds for x in (rp.compute_s, rp.solo_s)])
    mid = [e - rp.solo_s / 2 for e, rp in zip(ends[1::2], plan.rounds, strict=True) if rp.solo_s]
    mid_round = [k * plan.iteration_s + t for k in range(3) for t in mid]
    handed_back = 0
    for arrival in [*mid_round, *ends[::2]]:  # in rounds, and at compute ends
        for other in ("", "pair", "on B"):  # job 0 alone, sharing A with job 2, or job 3 on B
            pair = other == "pair"
            jobs = [first, job(1, float(arrival), 32, ep=1)]
            jobs += [job(2, 0.0, 32, ep=1)] if pair else []
            jobs += [job(3, 0.0, 32, ep=1, duration=5000.0)] if other == "on B" else []
            runs = []
            for move, iso in ((True, True), (other == "on B", other != "on B")):
                res = Simulator(TwoCoreFabric(96, move), jobs, isolation=iso).run()
                assert res.stats["reroutes"] == move * (1 + pair)
                runs.append(res.jobs["finish_s"].to_numpy())
                handed_back += res.stats["unreserved_rounds"] * move
            np.testing.assert_allclose(runs[0], runs[1], rtol=1e-9)
    assert moved.count(0) >= 3  # rounds in flight were moved
    assert handed_back >= 1  # and rounds claimed ahead went back to start on the new routes


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_rerouting_equals_round_by_round(seed: int) -> None:
    """Random arrivals and sizes on the two-core fabric (the admission of job 1 moves the jobs
    on link A onto link B, where job 3 may already run): the fast paths give the same finish
    times as simulating every round in the shared fluid set."""
    rng = np.random.default_rng(seed)
    arrival = rng.uniform(0, 400, size=4)
    arrival[1] = np.sort(arrival)[1] + rng.uniform(0, 300)  # jobs are running on A by then
    jobs = [
        job(
            i,
            float(arrival[i]),
            32,
            ep=int(rng.choice([1, 8])),
            duration=float(rng.uniform(100, 3000)),
        )
        for i in range(4)
    ]
    runs = [Simulator(TwoCoreFabric(96, True), jobs, isolation=iso).run() for iso in (True, False)]
    assert runs[0].stats["reroutes"] == runs[1].stats["reroutes"]
    np.testing.assert_allclose(
        runs[0].jobs["finish_s"].to_numpy(), runs[1].jobs["finish_s"].to_numpy(), rtol=1e-9
    )


def test_routes_over_links_of_no_capacity_are_an_error() -> None:
    """A fabric that routes a job over a link it has taken away (here: jobs admitted after
    job 1 stay on link A) gets a clear error naming the job, its round and the link."""

    class Stale(TwoCoreFabric):
        def admit(self, job_id, gpus):
            change = super().admit(job_id, gpus)
            if job_id != 1:
                self.on_b.discard(job_id)
            return change

    jobs = [job(1, 0.0, 32, ep=1), job(0, 10.0, 32, ep=1)]
    with pytest.raises(SimulationError, match=r"job 0: round 0 .* links of no capacity \[192\]"):
        Simulator(Stale(96, True), jobs).run()
