"""The engine's units, each on a run state of its own: rate model, admission, fabric
changes, outages, link load, the event loop and the plug-in registries."""

from __future__ import annotations

import ast
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers_sim import BottleneckFabric, job
from lumoscore.errors import ConfigError
from lumoscore.fabric import FABRICS, ROUTINGS, BestFabric, ClosFabric, FabricChange
from lumoscore.fabric.lumos import LumosCoreFabric
from lumoscore.fabric.presets import architecture, make_fabric
from lumoscore.registry import Registry
from lumoscore.sim import PLACERS, QUEUE_POLICIES, FailurePlacer, Placer, ServerPlacer, Simulator
from lumoscore.sim.admission import Admission
from lumoscore.sim.changes import FabricChanges
from lumoscore.sim.engine import loop
from lumoscore.sim.events import Event
from lumoscore.sim.failures import FailureModel
from lumoscore.sim.outages import Outages
from lumoscore.sim.plan import JobPlan, RoundPlan, build_plan
from lumoscore.sim.queueing import QueuePolicy
from lumoscore.sim.rounds import SOLO, RoundModel
from lumoscore.sim.state import JobRun, RunState, SimulationError

ENGINE = Path(__file__).parents[1] / "src" / "lumoscore" / "sim" / "engine.py"


def one_link_round(bits: float, *, compute_s: float = 0.0, cap: float = 10.0) -> RoundPlan:
    """A round of one flow of ``bits`` over link 0 (capacity ``cap``), alone in ``bits/cap``."""
    return RoundPlan(
        np.array([0, 1]),
        np.array([0]),
        np.ones(1),
        np.array([bits]),
        compute_s,
        "x",
        bits / cap,
        bits / cap,
        np.array([0]),
        np.array([cap]),
        np.array([bits / cap]),
    )


class OneLinkFabric(BestFabric):
    """Best's geometry, but every route is link 0 (so rounds can be handed in by hand)."""

    routing = "fixed"
    routings = ("fixed",)


# -- registries -----------------------------------------------------------------------------
def test_registry_names_order_duplicates_and_unknown_names() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("b", 2)

    @reg.register("a")
    def a() -> int:
        return 1

    assert list(reg) == ["b", "a"] and reg.names() == ("b", "a") and len(reg) == 2
    assert reg["a"] is a and "b" in reg and "c" not in reg and reg.check("b") == "b"
    with pytest.raises(ConfigError, match="thing 'b' is already registered"):
        reg.register("b", 3)
    with pytest.raises(ConfigError, match=r"^thing 'c' unknown; allowed: b, a$"):
        reg["c"]
    with pytest.raises(ConfigError, match="non-empty string"):
        reg.register("", 4)


def test_every_registered_plugin_is_reachable_and_unknown_names_list_the_allowed() -> None:
    for name in QUEUE_POLICIES:
        assert isinstance(QUEUE_POLICIES[name], QueuePolicy)
    for cls in (BestFabric, ClosFabric, LumosCoreFabric):
        assert set(cls.routings) <= set(ROUTINGS)
        assert cls.checked_routing(None) == cls.routings[0]
    with pytest.raises(ConfigError, match=r"routing 'spray' unknown; allowed: ecmp, balanced"):
        ClosFabric.checked_routing("spray")
    with pytest.raises(ConfigError, match=r"'planned' does not apply to this fabric"):
        ClosFabric.checked_routing("planned")
    for name in ("lifo", "FIFO"):
        with pytest.raises(ConfigError, match="allowed: fifo, backfill, edf, smallest-first"):
            Simulator(BestFabric(gpus=16), [], queue=name)
    with pytest.raises(ConfigError, match="placer 'nope' unknown; allowed: server, fabric"):
        Simulator(BestFabric(gpus=16), [], placer="nope")
    with pytest.raises(ConfigError, match="placer must be a name"):
        Simulator(BestFabric(gpus=16), [], placer=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="does not place jobs"):
        Simulator(BestFabric(gpus=16), [], placer="fabric")


def test_placers_follow_their_protocols() -> None:
    assert isinstance(ServerPlacer(16), FailurePlacer)
    lumos = make_fabric("lumoscore-51.2T-tau2", 256)
    assert isinstance(lumos, FailurePlacer) and lumos.default_placer == "fabric"
    assert Simulator(lumos, []).placer is lumos
    best = BestFabric(gpus=16)
    sim = Simulator(best, [])
    assert isinstance(sim.placer, ServerPlacer) and best.default_placer == "server"
    assert isinstance(PLACERS["server"](best), Placer)

    class NoFailures:
        def place(self, job):  # type: ignore[no-untyped-def]
            return None

        def release(self, job_id):  # type: ignore[no-untyped-def]
            return None

    fm = FailureModel(rate_per_gpu_day=1.0)
    with pytest.raises(ConfigError, match="fail_gpus"):
        Simulator(best, [], placer=NoFailures(), failures=fm)


def test_architectures_are_registry_entries_and_generic_names_parse() -> None:
    from lumoscore.experiments.architectures import PAPER_ARCHITECTURES

    assert set(PAPER_ARCHITECTURES) <= set(FABRICS)
    name, arch = architecture("CLOS-25.6t-3TIER")
    assert name == "clos-25.6T-3tier" and arch.fabric_class is ClosFabric
    name, arch = architecture("leaf-spine-12.8t")
    assert name == "leaf-spine-12.8T" and arch.routings == ClosFabric.routings
    assert architecture("best")[1].relative_cost < architecture("clos-51.2T-3tier")[1].relative_cost
    with pytest.raises(ConfigError, match="unknown fabric preset 'torus'; allowed: best, clos"):
        architecture("torus")
    with pytest.raises(ConfigError, match=r"option.* foo unknown; allowed: polarized"):
        make_fabric("clos-51.2T-3tier", 512, foo=1)
    assert make_fabric("clos-51.2T-3tier", 512, polarized=True).polarized
    lum = make_fabric("lumoscore-51.2T-tau2", 256, reconfig_delay_s=0.5)
    assert lum.reconfig_delay_s == 0.5


def test_the_engine_knows_no_plugin_by_name_and_has_no_long_function() -> None:
    tree = ast.parse(ENGINE.read_text())
    longest = max(
        n.end_lineno - n.lineno + 1  # type: ignore[operator]
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
    )
    assert longest <= 100
    names = set(ROUTINGS) | set(FABRICS) | set(QUEUE_POLICIES) | set(PLACERS)
    defaults = {  # (a parameter's default value names a plug-in; no code tests for it)
        id(d)
        for n in ast.walk(tree)
        if isinstance(n, ast.arguments)
        for d in [*n.defaults, *n.kw_defaults]
    }
    literals = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in defaults
    }
    assert not names & literals


# -- the event loop -------------------------------------------------------------------------
def test_the_loop_dispatches_by_kind_and_names_a_kind_without_handler() -> None:
    st = RunState.new(BestFabric(gpus=16), [], eps=0.0, isolation=True)
    model = RoundModel(st, reserve=True)
    seen: list[tuple[str, float]] = []
    st.queue.schedule(2.0, "b")
    st.queue.schedule(1.0, "a")
    handlers = {k: (lambda ev: seen.append((ev.kind, ev.time_s))) for k in ("a", "b")}
    loop(st, model, handlers)  # type: ignore[arg-type]
    assert seen == [("a", 1.0), ("b", 2.0)] and st.stats["events"] == 2
    st.queue.schedule(3.0, "c")
    with pytest.raises(SimulationError, match="event kind 'c' has no handler; handled: a, b"):
        loop(st, model, handlers)  # type: ignore[arg-type]


# -- the rate model -------------------------------------------------------------------------
def model_on(fab: BestFabric, jobs: list, *, reserve: bool = False) -> tuple[RunState, RoundModel]:
    st = RunState.new(fab, jobs, eps=0.0, isolation=True)
    return st, RoundModel(st, reserve=reserve)


def test_solo_rounds_share_a_link_while_their_peaks_fit() -> None:
    fab = OneLinkFabric(gpus=16)
    fab.capacity_bps[0] = 10.0
    st, model = model_on(fab, [])
    part = replace(one_link_round(40.0), peak_bps=np.array([4.0]))
    assert model.run_solo(1, part, 0.0) and model.run_solo(2, part, 0.0)
    assert not model.run_solo(3, part, 0.0)  # 4 + 4 + 4 > 10
    assert model.solo_count[0] == 2 and model.solo_load[0] == 8.0
    assert st.stats["solo_rounds"] == 2 and st.stats["shared_solo_rounds"] == 1
    model.end_inflight(1)
    model.end_inflight(2)
    assert model.solo_count[0] == 0 and model.solo_load[0] == 0.0
    assert model.solo_until[0] == -math.inf


def test_a_solo_round_moves_to_the_fluid_set_at_its_exact_progress() -> None:
    """Round A (100 bits alone on a 10 bit/s link) starts at 0 on its solo timeline. At 4 s
    round B (20 bits) starts on the same link: A joins the fluid set with 60 bits left, both
    get 5 bit/s; B ends at 8 s, then A ends at 8 + 40 / 10 = 12 s."""
    fab = OneLinkFabric(gpus=16)
    fab.capacity_bps[0] = 10.0
    jobs = [job(0, 0.0, 8), job(1, 0.0, 8)]
    st, model = model_on(fab, jobs)
    runs = {}
    for j, bits in ((0, 100.0), (1, 20.0)):
        rp = one_link_round(bits)
        plan = JobPlan(j, (rp,), np.array([0]), rp.solo_s)
        runs[j] = JobRun(jobs[j], np.arange(8 * j, 8 * j + 8), plan, 0.0, isolated=False)
        st.running[j] = runs[j]
    ends: list[tuple[int, float]] = []
    model.on_done = lambda run, now: ends.append((run.job.job_id, now))
    for r in runs.values():
        r.iteration = r.job.iterations - 1  # the last iteration: the round ends the job
    model.start_round(runs[0], runs[0].plan.rounds[0], 0.0)
    assert model.inflight[0][2] == SOLO
    st.queue.pop()  # (A's roundend at 10 s: superseded below)
    st.queue.now_s = 4.0
    model.start_round(runs[1], runs[1].plan.rounds[0], 4.0)
    assert set(model.inflight) == {0, 1} and st.stats["fluid_rounds"] == 1
    assert not st.queue.pending(("roundend", 0))
    handlers = {"roundend": model.on_roundend}
    loop(st, model, handlers)  # type: ignore[arg-type]
    assert ends == [(1, pytest.approx(8.0)), (0, pytest.approx(12.0))]


def test_a_started_job_demotes_the_isolated_job_it_meets_at_its_exact_position() -> None:
    """Two one-iteration jobs on the dumbbell: the first runs isolated; the second starts
    while the first is in its compute phase, so the first goes round by round and its next
    event is the end of that compute phase."""
    fab = BottleneckFabric(32)
    jobs = [job(0, 0.0, 16, iterations=1), job(1, 0.0, 16, iterations=1)]
    st, model = model_on(fab, jobs)
    g0, g1 = np.arange(0, 16), np.arange(16, 32)
    # cross-leaf placements: both jobs cross the core link
    g0 = np.concatenate([np.arange(0, 8), np.arange(16, 24)])
    g1 = np.concatenate([np.arange(8, 16), np.arange(24, 32)])
    p0, p1 = build_plan(jobs[0], g0, fab), build_plan(jobs[1], g1, fab)
    assert model.occupy(p0, 0.0)
    r0 = JobRun(jobs[0], g0, p0, 0.0, isolated=True)
    st.running[0] = r0
    model.begin(r0, 0.0)
    assert st.queue.pending(("finish", 0))
    t = 0.25 * p0.rounds[0].compute_s
    st.queue.now_s = t
    assert not model.occupy(p1, t)  # shares the core link: not isolated ...
    assert not r0.isolated and st.stats["materialized"] == 1  # ... and demotes job 0
    assert not st.queue.pending(("finish", 0))
    ev = st.queue.pop()
    assert (ev.kind, ev.data) == ("round", 0)
    assert ev.time_s == pytest.approx(p0.rounds[0].compute_s)
    model.vacate(p1)
    model.vacate(p0)
    assert not model.link_users.any()


# -- admission ------------------------------------------------------------------------------
class ListPlacer:
    """Places a job only if its id is in ``fits``; records releases."""

    def __init__(self, fits: set[int]) -> None:
        self.fits = fits
        self.released: list[int] = []
        self.free_gpus = 64

    def place(self, job):  # type: ignore[no-untyped-def]
        return np.arange(job.gpus) if job.job_id in self.fits else None

    def release(self, job_id):  # type: ignore[no-untyped-def]
        self.released.append(job_id)


def admission_on(jobs: list, placer: ListPlacer, policy: str) -> Admission:
    fab = BestFabric(gpus=64)
    st = RunState.new(fab, jobs, eps=0.0, isolation=True)
    model = RoundModel(st, reserve=True)
    adm = Admission(st, model, FabricChanges(st, model), placer, QUEUE_POLICIES[policy])
    model.on_done = adm.finish
    return adm


@pytest.mark.parametrize(("policy", "started"), [("fifo", []), ("backfill", [1])])
def test_a_job_that_does_not_fit_blocks_or_is_passed_by_policy(
    policy: str, started: list[int]
) -> None:
    jobs = [job(0, 0.0, 16), job(1, 0.0, 16)]
    adm = admission_on(jobs, ListPlacer({1}), policy)
    for i in (0, 1):
        adm.on_arrive(Event(0.0, 4, i, "arrive", None, i))
    assert sorted(adm.s.running) == started
    assert [j.job_id for j in adm.waiting] == [j for j in (0, 1) if j not in started]
    # the placer refused job 0 while 64 GPUs were free: fragmentation, counted each try
    assert adm.s.records.fragmented[0] and adm.s.stats["fragmentation_blocks"] == 2
    assert adm.queue_len == [1, 2] + ([1] if started else [])


def test_a_too_big_job_is_rejected_and_a_finished_job_gives_everything_back() -> None:
    jobs = [job(0, 0.0, 128), job(1, 0.0, 16)]
    placer = ListPlacer({1})
    adm = admission_on(jobs, placer, "fifo")
    adm.on_arrive(Event(0.0, 4, 0, "arrive", None, 0))
    assert adm.s.records.rejected[0] and adm.s.done == 1 and not adm.waiting
    adm.on_arrive(Event(0.0, 4, 1, "arrive", None, 1))
    run = adm.s.running[1]
    assert run.isolated and (adm.gpu_owner[:16] == 1).all()
    ev = adm.s.queue.pop()
    assert ev.kind == "finish" and ev.time_s == pytest.approx(jobs[1].duration_s)
    adm.on_finish(ev)
    assert adm.s.done == 2 and placer.released == [1] and not adm.s.running
    assert (adm.gpu_owner == -1).all() and adm.s.records.finish[1] == ev.time_s


# -- fabric changes -------------------------------------------------------------------------
def test_a_change_is_applied_and_a_plan_over_a_dead_link_is_refused() -> None:
    fab = BottleneckFabric(32)
    st = RunState.new(fab, [], eps=0.0, isolation=True)
    changes = FabricChanges(st, RoundModel(st, reserve=True))
    changes.apply(FabricChange(), 0.0)
    assert st.stats["reconfigurations"] == 0  # an empty change is no reconfiguration
    core = np.array([fab.n_links - 1])
    changes.apply(FabricChange(links=core, capacity_bps=np.zeros(1)), 0.0)
    assert st.stats["reconfigurations"] == 1 and fab.capacity_bps[-1] == 0.0
    gpus = np.concatenate([np.arange(0, 8), np.arange(16, 24)])
    with pytest.raises(SimulationError, match="routed over links of no capacity"):
        changes.routed(job(0, 0.0, 16), gpus)


# -- outages --------------------------------------------------------------------------------
def test_a_kill_keeps_the_checkpointed_iterations_and_requeues_the_rest() -> None:
    """A 10-iteration job of 100 s iterations, checkpoints every 250 s, killed at 620 s after
    it began: it keeps the 5 iterations of its checkpoint at 500 s (whole iterations done by
    then) and 5 are left, at the head of the queue."""
    fab = BestFabric(gpus=16)
    j = job(0, 0.0, 8, iterations=10, duration=1000.0)
    st = RunState.new(fab, [j], eps=0.0, isolation=True)
    model = RoundModel(st, reserve=False)
    placer = ServerPlacer(16)
    adm = Admission(st, model, FabricChanges(st, model), placer, QUEUE_POLICIES["fifo"])
    fm = FailureModel(rate_per_gpu_day=1.0, checkpoint_interval_s=250.0, restart_s=30.0)
    out = Outages(st, model, adm, placer, fm, np.random.default_rng(0))
    adm.waiting.append(j)
    adm.try_start(0.0)
    run = st.running[0]
    assert run.isolated and run.plan.iteration_s == pytest.approx(100.0)
    out.kill(run, 620.0)
    rec = st.records
    assert rec.restarts[0] == 1 and rec.failed_at[0] == 620.0
    assert rec.lost_s[0] == pytest.approx(620.0 - 500.0)
    (rest,) = adm.waiting
    assert (rest.iterations, rest.duration_s) == (5, pytest.approx(500.0))
    assert not st.running and not st.queue.pending(("finish", 0))
    # checkpoint bookkeeping of a job going round by round at 620 s
    run.begin_s, run.iteration = 0.0, 6
    out.resume(run, 620.0)
    assert (run.ckpt_k, run.ckpt_iters) == (2, 5)
    out.iteration_done(run, 700.0)  # no new checkpoint due (the next is at 750 s)
    assert (run.ckpt_k, run.ckpt_iters) == (2, 5)
    run.iteration = 8
    out.iteration_done(run, 800.0)  # the one at 750 s came due during iteration 8
    assert (run.ckpt_k, run.ckpt_iters) == (3, 7)
