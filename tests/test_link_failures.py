"""Leaf-spine cable failures: capacities, routing around failed links, the run's events."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.fabric import make_fabric
from lumoscore.fabric.base import NoRouteError, _flows_over
from lumoscore.sim import Simulator
from lumoscore.sim.link_failures import LINK_EVENT_COLUMNS, LinkFailureModel
from lumoscore.sim.placers import PLACERS
from lumoscore.sim.plan import build_plan
from lumoscore.workload import generate_trace

#: (architecture, routing) pairs with leaf-spine cables, at 512 GPUs.
FABRICS = [
    ("clos-51.2T-3tier", "ecmp"),
    ("clos-51.2T-3tier", "probing"),
    ("vclos-leaf-spine", "ecmp"),
    ("lumoscore-51.2T-tau2", "planned"),
    ("lumoscore-51.2T-tau2", "ecmp"),
    ("lumoscore-25.6T-tau1", "planned"),
]


def test_failing_and_repairing_cables_moves_exactly_their_capacity() -> None:
    fab = make_fabric("lumoscore-51.2T-tau2", 512)
    up, down, bps = fab.cables()
    before = fab.capacity_bps.copy()
    # the two parallel cables of the first leaf and spine 0, and one more
    change = fab.fail_cables([0, 1, 2])
    fab.apply(change)
    assert fab.capacity_bps[up[0]] == 0 and fab.capacity_bps[down[0]] == 0
    assert fab.capacity_bps[up[2]] == before[up[2]] - bps
    assert fab.dead_links is not None and int(fab.dead_links.sum()) == 2
    assert (fab.state.failed_links[0, :2] == [2, 1]).all()
    fab.apply(fab.repair_cables([0, 1, 2]))
    leaf = slice(2 * fab.gpus, fab.off_ocs)
    assert np.array_equal(fab.capacity_bps[leaf], before[leaf])
    assert not fab.dead_links.any() and not fab.state.failed_links.any()
    assert fab.fail_cables([]).empty  # nothing new


@pytest.mark.parametrize(("arch", "routing"), FABRICS)
@settings(max_examples=8, deadline=None)
@given(fraction=st.floats(0.0, 0.3), seed=st.integers(0, 2**16))
def test_no_flow_is_ever_routed_over_a_failed_link(
    arch: str, routing: str, fraction: float, seed: int
) -> None:
    """Random cables fail, then jobs are placed and routed: no flow crosses a link the
    failures took down; a flow without any route exists only where the fabric is truly cut
    (checked on the leaf-spine fabric: no spine with working links at both leaves)."""
    fab = make_fabric(arch, 512, routing=routing)
    up, _, _ = fab.cables()
    rng = np.random.default_rng(seed)
    fab.apply(fab.fail_cables(rng.choice(up.size, int(fraction * up.size), replace=False)))
    placer = PLACERS[fab.default_placer](fab)
    for job in generate_trace("lumoscore-published", 6, seed=seed, cluster_gpus=512).jobs:
        gpus = placer.place(job)
        if gpus is None:
            continue
        fab.apply(fab.admit(job.job_id, gpus))
        try:
            plan = build_plan(job, gpus, fab, exposure="research")
        except NoRouteError:
            if arch == "vclos-leaf-spine":  # truly cut: no spine alive at both leaves
                dead = fab.dead_links[fab.up_link(np.arange(fab.L * fab.S))].reshape(fab.L, -1)
                leaves = np.unique(gpus // fab.d)
                assert any(not (~dead[a] & ~dead[b]).any() for a in leaves for b in leaves if a < b)
            continue
        for rp in plan.rounds:
            assert not _flows_over(fab.dead_links, rp.indptr, rp.indices).any()


@pytest.mark.parametrize("arch", ["clos-51.2T-3tier", "lumoscore-51.2T-tau2"])
def test_failures_with_repairs_every_job_finishes_and_jrt_rises(arch: str) -> None:
    jobs = generate_trace("lumoscore-published", 60, seed=4, cluster_gpus=512).jobs
    base = Simulator(make_fabric(arch, 512), jobs, exposure="research", seed=4).run()
    lf = LinkFailureModel(fraction=0.2, rate_per_cable_day=0.5, repair_s=1800.0)
    res = Simulator(make_fabric(arch, 512), jobs, exposure="research", seed=4,
                    link_failures=lf).run()  # fmt: skip
    assert res.summary["jobs"] == base.summary["jobs"] == 60
    assert res.summary["mean_jrt_s"] >= base.summary["mean_jrt_s"] * (1 - 1e-9)
    ev = res.link_events
    assert list(ev.columns) == list(LINK_EVENT_COLUMNS)
    assert int(ev.loc[ev["kind"] == "fail", "cables"].sum()) == res.summary["link_failures"]
    assert int(ev.loc[ev["kind"] == "repair", "cables"].sum()) == res.summary["link_repairs"]
    assert ev["time_s"].is_monotonic_increasing
    # same seed, same failures, same results
    again = Simulator(make_fabric(arch, 512), jobs, exposure="research", seed=4,
                      link_failures=lf).run()  # fmt: skip
    assert again.jobs.equals(res.jobs) and again.link_events.equals(ev)


def test_a_scripted_failure_reroutes_the_job_on_the_cable() -> None:
    """A job runs alone; every cable its routes use fails mid-run: it is routed around them
    and finishes later than without the failure."""
    jobs = generate_trace("lumoscore-published", 1, seed=2, cluster_gpus=512).jobs
    fab = make_fabric("clos-51.2T-3tier", 512, routing="ecmp")
    placer = PLACERS["locality"](fab)
    job = jobs[0]
    gpus = placer.place(job)
    plan = build_plan(job, gpus, fab, exposure="research")
    up, down, _ = fab.cables()
    used = np.flatnonzero(np.isin(up, plan.links) | np.isin(down, plan.links))
    assert used.size
    t = job.arrival_s + job.duration_s / 2
    lf = LinkFailureModel(script=[(t, int(c), "fail") for c in used])
    res = Simulator(make_fabric("clos-51.2T-3tier", 512, routing="ecmp"), jobs,
                    exposure="research", link_failures=lf, placer="locality").run()  # fmt: skip
    assert res.summary["jobs"] == 1 and res.summary["link_reroutes"] >= 1
    assert res.summary["link_failures"] == used.size


def test_link_failures_need_cables_and_valid_parameters() -> None:
    jobs = generate_trace("lumoscore-published", 2, seed=1, cluster_gpus=512).jobs
    with pytest.raises(ConfigError, match="no leaf-spine links"):
        Simulator(make_fabric("best", 512), jobs, link_failures=LinkFailureModel(fraction=0.1))
    with pytest.raises(ConfigError, match="vClos fabrics"):
        Simulator(make_fabric("vclos", 512), jobs, link_failures=LinkFailureModel(fraction=0.1))
    for bad in ({"fraction": -0.1}, {"rate_per_cable_day": float("inf")}, {"repair_s": 0.0},
                {"script": [(1.0, 0, "explode")]}):  # fmt: skip
        with pytest.raises(ConfigError, match="link failures"):
            LinkFailureModel(**bad)  # type: ignore[arg-type]


def test_fig6c_sweep_throughput_falls_with_failures(tmp_path) -> None:
    from lumoscore.experiments.robustness import run_link_failure_sweep

    out = run_link_failure_sweep(tmp_path, fractions=(0.0, 0.1, 0.25), seeds=(1, 2))
    by = {(r["architecture"], r["failed_share"]): r for r in out.rows}
    for arch in ("cross", "leaf-spine"):
        assert by[(arch, 0.0)]["throughput"] == pytest.approx(1.0)
        assert by[(arch, 0.25)]["throughput"] <= 1.0 + 1e-9
        assert by[(arch, 0.25)]["mean_jrt_s"] >= by[(arch, 0.0)]["mean_jrt_s"] - 1e-6
    assert (tmp_path / "fig6c.png").stat().st_size > 0


def test_ocs_port_failures_cost_cross_wiring_two_ports_each(tmp_path) -> None:
    """The OCS-side sweep: Cross and Uniform only (the leaf-spine has no OCS); on Cross, a
    share of OCS ports down costs more than the same share of spine-OCS fibers (two spine
    ports per OCS port against one)."""
    from lumoscore.experiments.robustness import run_link_failure_sweep

    out = run_link_failure_sweep(
        tmp_path, fractions=(0.0, 0.25), seeds=(1, 2, 3), elements=("spine-ocs", "ocs-port"),
        name="ocs",
    )  # fmt: skip
    by = {(r["element"], r["architecture"], r["failed_share"]): r for r in out.rows}
    assert {a for _, a, _ in by} == {"cross", "uniform"}
    assert (
        by[("ocs-port", "cross", 0.25)]["mean_jrt_s"]
        > by[("spine-ocs", "cross", 0.25)]["mean_jrt_s"]
        > by[("spine-ocs", "cross", 0.0)]["mean_jrt_s"]
    )
    assert (tmp_path / "ocs.png").stat().st_size > 0


def test_a_job_cut_off_by_failures_stalls_until_the_repair() -> None:
    """Every uplink of a leaf the job uses fails mid-run: no route is left, the job stalls
    on the dead links and finishes after the repair."""
    from lumoscore.workload import Job

    job = Job(job_id=0, arrival_s=0.0, gpus=32, model="llama_7b", tp=8, pp=1, dp=4, ep=8,
              iterations=10, duration_s=1000.0)  # fmt: skip

    def run(script: list[tuple[float, int, str]]) -> object:
        fab = make_fabric("vclos-leaf-spine", 512)
        lf = LinkFailureModel(script=script)
        return Simulator(fab, [job], exposure="literal", link_failures=lf).run()

    base = run([])
    assert base.summary["jobs"] == 1
    fab = make_fabric("vclos-leaf-spine", 512)
    leaf = int(PLACERS["vclos"](fab).place(job)[0] // fab.d)
    cables = range(leaf * fab.S, (leaf + 1) * fab.S)
    cut = [(300.0, c, "fail") for c in cables] + [(800.0, c, "repair") for c in cables]
    res = run(cut)
    assert res.summary["jobs"] == 1 and res.stats["stalled_reroutes"] >= 1
    assert res.summary["mean_jrt_s"] > base.summary["mean_jrt_s"] + 100.0


def test_periodic_ocs_switching_costs_less_the_rarer_it_is(tmp_path) -> None:
    """No switching gives exactly the run without the option; a switch every 30 s costs
    more per step than every 90 s (LumosCore Table 5's direction); the preset writes its
    table beside the papers'."""
    from lumoscore.experiments.robustness import RECONFIG_PAPER_MS, run_reconfig_interval
    from lumoscore.fabric.lumos import LumosCoreFabric
    from lumoscore.topology import ClusterSpec
    from lumoscore.workload import Job

    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=8, ocs_ports=4)
    job = Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=8,
              iterations=200, duration_s=220.0)  # fmt: skip
    plain = Simulator(LumosCoreFabric(spec, reconfig_delay_s=0.0), [job]).run()
    off = Simulator(LumosCoreFabric(spec, reconfig_delay_s=0.0, switch_interval_s=0.0),
                    [job]).run()  # fmt: skip
    assert off.jobs.equals(plain.jobs)
    out = run_reconfig_interval(tmp_path, intervals=(30.0, 90.0, 0.0), steps=300)
    ms = {r["interval"]: r["ms_per_step"] for r in out.rows}
    assert ms["30 s"] > ms["90 s"] > ms["never"]
    assert out.rows[0]["paper_ms_per_step"] == RECONFIG_PAPER_MS[30.0]
    with pytest.raises(ConfigError, match="switch_s"):
        LumosCoreFabric(spec, switch_interval_s=2.0, switch_s=3.0)


def test_failure_elements_say_what_can_fail() -> None:
    """Experiments leave link failures out of the architectures that cannot have them
    (``Fabric.failure_elements``): it agrees with :meth:`Fabric.failure_units` on every
    architecture and element."""
    from lumoscore.fabric.base import FAILURE_ELEMENTS
    from lumoscore.fabric.presets import PRESETS

    for name in PRESETS:
        fab = make_fabric(name, 512)
        for element in FAILURE_ELEMENTS:
            if element in fab.failure_elements:
                n, bps = fab.failure_units(element)
                assert n > 0 and bps > 0
            else:
                with pytest.raises(ConfigError, match=f"{element}|vClos"):
                    fab.failure_units(element)


def test_a_failure_reconfiguration_is_staged_in_time() -> None:
    """With ``stage_delay_s`` a failure's reconfiguration takes the rewired circuits down
    now and brings each stage's new circuits up when the stage ends: in between no link is
    above both its old and its new capacity, afterwards every link is at its configured
    capacity; in a run the stages settle, every job finishes and no job is faster."""
    from lumoscore.fabric.lumos import LumosCoreFabric
    from lumoscore.topology import ClusterSpec

    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=8, ocs_ports=8)
    jobs = generate_trace("lumoscore-published", 6, seed=1, cluster_gpus=spec.gpus).jobs
    fab = LumosCoreFabric(spec, stage_delay_s=5.0)
    for job in jobs:
        gpus = fab.place(job)
        if gpus is not None:
            fab.apply(fab.admit(job.job_id, gpus))
    off = fab.off_ocs
    before = fab.capacity_bps[off:].copy()
    change = fab.fail_cables(np.arange(0, fab.cables()[0].size, 8))
    assert change.later  # the failure moved circuits: staged
    ocs = change.links >= off
    new = fab.settle(change.links[ocs])  # what the circuits give, before applying
    goal = dict(zip(new.links.tolist(), new.capacity_bps.tolist(), strict=True))
    for link, cap in zip(change.links[ocs], change.capacity_bps[ocs], strict=True):
        low = min(before[link - off], goal[int(link)])
        assert cap == low or (low == 0 and 0 < cap <= goal[int(link)] * 1e-6)
    fab.apply(change)
    staged = np.concatenate([links for _, links in change.later])
    assert sorted(staged.tolist()) == sorted(change.links[ocs].tolist())
    for _, links in change.later:
        fab.apply(fab.settle(links))
    assert fab.settle(np.arange(off, fab.n_links)).empty  # every OCS link at its circuits'

    trace = generate_trace(
        "lumoscore-published", 12, seed=5, cluster_gpus=spec.gpus, beta_s=300.0
    ).jobs
    lf = LinkFailureModel(rate_per_cable_day=8.0, repair_s=3600.0)

    def run(delay: float) -> object:
        fab = LumosCoreFabric(spec, stage_delay_s=delay)
        return Simulator(fab, trace, exposure="research", link_failures=lf, seed=3).run()

    plain, staged = run(0.0), run(60.0)
    assert staged.summary["jobs"] == plain.summary["jobs"] == 12
    assert staged.stats.get("settled_stages", 0) >= 1 and "settled_stages" not in plain.stats
    assert staged.summary["mean_jrt_s"] >= plain.summary["mean_jrt_s"] - 1e-6


@pytest.mark.parametrize(("wiring", "per_ocs_port"), [("cross", 2), ("uniform", 1)])
def test_spine_ocs_and_ocs_port_failures_route_circuits_around_dead_ports(
    wiring: str, per_ocs_port: int
) -> None:
    """A spine-OCS fiber takes one spine port out of service; an OCS port two on Cross Wiring
    (the Tx of one port, the Rx of its mirror) and one on Uniform. After every failure the
    configuration is valid, uses no dead port, and keeps every pod pair of the logical
    topology connected; the repair gives every port back."""
    from lumoscore.fabric.lumos import LumosCoreFabric
    from lumoscore.topology import ClusterSpec, verify_circuits

    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=8, ocs_ports=8)
    jobs = generate_trace("lumoscore-published", 40, seed=2, cluster_gpus=spec.gpus).jobs
    jobs = [j for j in jobs if j.gpus >= 64][:4]  # cross-pod jobs: circuits to fail
    solver = "mdmcf" if wiring == "cross" else "helios"
    fab = LumosCoreFabric(spec, wiring=wiring, solver=solver)
    for job in jobs:
        gpus = fab.place(job)
        if gpus is not None:
            fab.apply(fab.admit(job.job_id, gpus))
    assert len(fab.state.circuits)
    fab.apply(fab.fail_units("ocs-port", [0], True))
    assert fab.dead_ports().sum() == per_ocs_port
    rng = np.random.default_rng(0)
    n, _ = fab.failure_units("spine-ocs")
    for units in np.split(rng.permutation(n)[:24], 3):
        fab.apply(fab.fail_units("spine-ocs", units, True))
        dead = fab.dead_ports()
        c = fab.state.circuits
        assert not (dead[c[:, 0], c[:, 2], c[:, 3]] | dead[c[:, 0], c[:, 4], c[:, 5]]).any()
        assert verify_circuits(fab.wiring, c, None) == []
        need = fab.state.logical.C.sum(axis=0) > 0
        got = np.zeros_like(need)
        got[c[:, 2], c[:, 4]] = True
        assert (got | ~need).all()  # every pod pair the jobs need keeps a circuit
    fab.apply(fab.fail_units("ocs-port", [0], False))
    fab.apply(fab.fail_units("spine-ocs", np.arange(n), False))
    assert not fab.dead_ports().any() and fab.state.spine_ports is None


def test_port_failure_runs_finish_every_job() -> None:
    """Poisson spine-OCS and OCS-port failures with repairs during a run on LumosCore, and
    tier-2 uplink failures on a 3-tier Clos: every job finishes and every failure is
    recorded. (A job can end up faster: LumosCore's reconfiguration after a failure designs
    the whole logical topology again, which can beat the incremental one it replaces.)"""
    jobs = generate_trace("lumoscore-published", 12, seed=3, cluster_gpus=512).jobs
    for arch, element in (
        ("lumoscore-25.6T-tau1", "spine-ocs"),
        ("lumoscore-25.6T-tau1", "ocs-port"),
        ("clos-25.6T-3tier", "spine-ocs"),
    ):
        lf = LinkFailureModel(rate_per_cable_day=2.0, repair_s=1800.0, element=element)
        res = Simulator(make_fabric(arch, 512), jobs, link_failures=lf).run()
        assert res.summary["jobs"] == len(jobs)
        assert res.summary["link_failures"] > 0 and res.summary["link_repairs"] > 0
    with pytest.raises(ConfigError, match="ocs-port"):
        Simulator(make_fabric("clos-25.6T-3tier", 512), jobs,
                  link_failures=LinkFailureModel(fraction=0.1, element="ocs-port"))  # fmt: skip
    with pytest.raises(ConfigError, match="element must be one of"):
        LinkFailureModel(element="spine")


def test_a_job_with_no_route_waits_for_the_repair_not_for_the_next_event() -> None:
    """Every uplink of the leaf the job is placed on is down when it arrives: its flows find
    no route, it waits, and it starts when the cables are repaired (no other event comes)."""
    from lumoscore.workload import Job

    job = Job(job_id=0, arrival_s=10.0, gpus=32, model="llama_7b", tp=8, pp=1, dp=4, ep=8,
              iterations=10, duration_s=1000.0)  # fmt: skip
    fab = make_fabric("vclos-leaf-spine", 512)
    leaf = int(PLACERS["vclos"](fab).place(job)[0] // fab.d)
    cables = range(leaf * fab.S, (leaf + 1) * fab.S)
    script = [(0.0, c, "fail") for c in cables] + [(500.0, c, "repair") for c in cables]
    res = Simulator(
        make_fabric("vclos-leaf-spine", 512), [job], exposure="literal",
        link_failures=LinkFailureModel(script=script),
    ).run()  # fmt: skip
    assert res.summary["jobs"] == 1 and res.stats["unroutable_placements"] >= 1
    assert res.jobs.jwt_s.iloc[0] == pytest.approx(490.0)


def _clos_256(routing: str) -> object:
    from lumoscore.fabric.clos import ClosFabric

    return ClosFabric(256, 1600, radix=16, tiers=3, gpus_per_server=8, routing=routing,
                      probe_candidates=3.0)  # fmt: skip


@pytest.mark.parametrize("routing", ["ecmp", "probing"])
def test_link_failures_keep_the_fast_path_exact(routing: str) -> None:
    """Poisson failures and repairs on a busy Clos: isolated timelines, solo rounds and
    rounds claimed ahead give the same times as simulating every round in the shared set.
    (A job routed again moves its round in flight with the progress it made at the old
    capacities.)"""
    jobs = generate_trace("lumoscore-paper", 60, seed=3, cluster_gpus=256, beta_s=20).jobs
    lf = LinkFailureModel(rate_per_cable_day=0.05, repair_s=1800.0)
    fast = Simulator(_clos_256(routing), jobs, link_failures=lf, seed=2).run()
    slow = Simulator(_clos_256(routing), jobs, link_failures=lf, seed=2, isolation=False).run()
    assert fast.stats["link_failures"] > 100 and fast.stats["link_reroutes"] > 10
    assert fast.jobs["isolated"].any()
    for col in ("start_s", "finish_s", "jrt_s", "contention_level"):
        np.testing.assert_allclose(fast.jobs[col], slow.jobs[col], rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("routing", ["ecmp", "probing"])
def test_a_round_with_no_way_around_failed_links_stalls_until_the_repair(routing: str) -> None:
    """Every uplink of a leaf fails while jobs use it: rounds routed again when they start
    (probing) find no route and stall on the dead links as the job's rerouting does, until
    the repair; the same times as simulating every round in the shared set."""
    from helpers_sim import job

    fab = _clos_256(routing)
    up, _, _ = fab.cables("leaf-spine")
    first = fab.link_offsets()["up"][0]
    leaf0 = np.flatnonzero((up >= first) & (up < first + fab.uplinks)).tolist()
    script = [(50.0, c, "fail") for c in leaf0] + [(900.0, c, "repair") for c in leaf0]
    jobs = [job(0, 0.0, 16, iterations=20, duration=2000.0),
            job(1, 10.0, 32, iterations=20, duration=2000.0)]  # fmt: skip
    lf = LinkFailureModel(script=script)
    fast = Simulator(_clos_256(routing), jobs, link_failures=lf).run()
    slow = Simulator(_clos_256(routing), jobs, link_failures=lf, isolation=False).run()
    assert fast.stats["stalled_reroutes"] >= 1 and fast.summary["jobs"] == 2
    assert np.isfinite(fast.jobs["finish_s"]).all() and fast.jobs["finish_s"].max() > 2100.0
    np.testing.assert_allclose(fast.jobs["finish_s"], slow.jobs["finish_s"], rtol=1e-9)


def test_failures_resume_after_every_unit_was_down() -> None:
    """With every unit down at once no Poisson failure can be drawn; the first repair starts
    them again (they stopped for good, so a higher rate gave fewer failures)."""
    fab = make_fabric("clos-51.2T-3tier", 256)
    n, _ = fab.failure_units("leaf-spine")
    script = [(0.0, u, "fail") for u in range(n)] + [(60.0, u, "repair") for u in range(n)]
    lf = LinkFailureModel(rate_per_cable_day=20.0, repair_s=3600.0, script=script)
    jobs = generate_trace("lumoscore-published", 5, seed=2, cluster_gpus=256).jobs
    res = Simulator(fab, jobs, link_failures=lf).run()
    assert res.summary["jobs"] == len(jobs)
    assert res.summary["link_failures"] > n  # Poisson failures after the repairs at 60 s


def test_a_unit_down_most_of_the_time_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"each down 81 % of the time\); at most 1"):
        LinkFailureModel(rate_per_cable_day=100.0, repair_s=3600.0)
    LinkFailureModel(rate_per_cable_day=24.0, repair_s=3600.0)  # half the time: allowed
