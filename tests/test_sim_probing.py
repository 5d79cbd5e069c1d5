"""Probing in the simulator: every round is routed when it starts, against the flows in flight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_sim import job
from lumoscore.fabric import Fabric, Routes, geometry_spec
from lumoscore.fabric.clos import ClosFabric
from lumoscore.sim.engine import Simulator
from lumoscore.sim.link_failures import LinkFailureModel
from lumoscore.sim.plan import build_plan
from lumoscore.sim.probing import InFlight, reroute
from lumoscore.sim.rounds import RoundModel
from lumoscore.sim.state import RunState
from lumoscore.workload import generate_trace


def clos(routing: str, candidates: float = 1.0) -> ClosFabric:
    return ClosFabric(
        256, 1600, radix=16, tiers=3, gpus_per_server=8, routing=routing,
        probe_candidates=candidates,
    )  # fmt: skip


def trace() -> list:
    return generate_trace("lumoscore-paper", 40, seed=3, cluster_gpus=256, beta_s=200).jobs


def test_one_candidate_reproduces_ecmp_round_by_round() -> None:
    """With one candidate probing routes every round exactly as ECMP: the same run, with the
    same jobs on isolated timelines (a flow with one candidate reads no load, so no round's
    routing demotes a job), although its rounds are not claimed ahead."""
    jobs = trace()
    ecmp = Simulator(clos("ecmp"), jobs).run().jobs
    probing = Simulator(clos("probing", 1.0), jobs).run()
    assert probing.stats["reserved_rounds"] == 0
    assert probing.jobs["isolated"].any()
    assert np.array_equal(probing.jobs["isolated"], ecmp["isolated"])
    np.testing.assert_allclose(probing.jobs["finish_s"], ecmp["finish_s"], rtol=1e-9)


@pytest.mark.parametrize("candidates", [1.0 + 2.0 / 7.0, 4.0])
def test_every_round_is_counted_in_flight_and_released(candidates: float) -> None:
    fab = clos("probing", candidates)
    sim = Simulator(fab, trace())
    state = RunState.new(fab, sim.jobs, eps=0.0, isolation=True)
    model, _, handlers, _ = sim._build(state)
    from lumoscore.sim.engine import loop

    loop(state, model, handlers)
    assert model.in_flight is not None and not model.in_flight.count.any()
    assert state.records.finish.size and np.isfinite(state.records.finish).all()


def test_reroute_scores_against_the_flows_in_flight() -> None:
    """A round re-routed against heavy traffic on its ECMP links moves off them (with enough
    candidates) and gets a new solo timeline; with nothing in flight it keeps its plan."""
    fab = clos("probing", 8.0)
    gpus = np.r_[0:8, 128:136]  # two servers in two pods: a DP ring over the core
    plan = build_plan(job(0, 0.0, 16), gpus, fab)
    rp = next(r for r in plan.rounds if r.n_flows)
    assert reroute(rp, fab, np.zeros(fab.n_links), 0) is rp
    busy = np.zeros(fab.n_links)
    core = rp.links[rp.links >= 2 * fab.gpus]
    busy[core] = 50.0
    moved = reroute(rp, fab, busy, 0)
    assert moved is not rp and moved.solo_s > 0
    assert np.isin(moved.links, core).sum() < core.size


def test_in_flight_counts_rows_with_their_weights() -> None:
    fab = clos("probing")
    rp = build_plan(job(0, 0.0, 32), np.arange(32), fab).rounds[0]
    flows = InFlight(fab.n_links)
    flows.add(rp)
    per_link = np.bincount(
        rp.indices, weights=np.repeat(rp.weight, np.diff(rp.indptr)), minlength=fab.n_links
    )
    assert np.array_equal(flows.count, per_link)
    flows.remove(rp)
    assert not flows.count.any()


def test_probing_model_claims_nothing_ahead() -> None:
    fab = clos("probing")
    state = RunState.new(fab, trace(), eps=0.0, isolation=True)
    assert not RoundModel(state, reserve=True).reserve


def test_lumoscore_probing_with_one_candidate_is_ecmp() -> None:
    """LumosCore probing scores candidates over its OCS groups and spines; with one candidate
    it routes exactly as ECMP, round by round."""
    from lumoscore.fabric import make_fabric

    jobs = generate_trace("lumoscore-published", 30, seed=4, cluster_gpus=1024).jobs

    def run(routing: str, **kw: float) -> np.ndarray:
        fab = make_fabric("lumoscore-25.6T-tau1", 1024, routing=routing, seed=4, **kw)
        return Simulator(fab, jobs, exposure="research").run().jobs["finish_s"].to_numpy()

    np.testing.assert_allclose(run("probing", probe_candidates=1.0), run("ecmp"), rtol=1e-9)
    fab = make_fabric("lumoscore-25.6T-tau1", 1024, routing="probing", seed=4)
    assert fab.load_aware and fab.describe()["routing"] == "probing"


def _random_candidates(rng: np.random.Generator, F: int, K: int, links: int) -> tuple:
    """Random candidate routes of ``F`` flows (CSR per candidate, ``K`` of them, over
    ``links`` links), with two link capacities and small weights, so that ties between
    candidates are common: ``(indptrs, indices, offsets, n_cand, cap, weight)``."""
    ptrs, parts = [], []
    for _ in range(K):
        lengths = rng.integers(1, 6, F)
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ptrs.append(ptr)
        parts.append(rng.integers(0, links, ptr[-1]).astype(np.int64))
    offsets = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
    n_cand = rng.integers(1, K + 1, F).astype(np.int64)
    cap = rng.choice([100.0, 200.0], links)
    weight = rng.integers(1, 3, F).astype(float)
    return np.stack(ptrs), np.concatenate(parts), offsets, n_cand, cap, weight


def test_choose_paths_matches_a_python_reference() -> None:
    from lumoscore.fabric.routing import choose_paths

    rng = np.random.default_rng(5)
    F, links = 40, 30
    ptrs, parts, offsets, n_cand, cap, weight = _random_candidates(rng, F, 3, links)
    load0 = rng.integers(0, 4, links).astype(float)
    load = load0.copy()
    ptr, idx = choose_paths(ptrs, parts, offsets, n_cand, load, cap, weight)
    assert np.array_equal(load, load0)  # given back unchanged
    ref = load0.copy()
    for i in range(F):
        paths = [parts[offsets[c] + ptrs[c, i] : offsets[c] + ptrs[c, i + 1]]
                 for c in range(n_cand[i])]  # fmt: skip
        scores = [(cap[p] / np.maximum(ref[p], 1.0)).min() for p in paths]
        best = paths[int(np.argmax(scores))]  # (argmax: the first of the best)
        assert np.array_equal(idx[ptr[i] : ptr[i + 1]], best)
        np.add.at(ref, best, weight[i])


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=80, deadline=None)
def test_choose_paths_keeps_the_idle_choice_on_unloaded_links(seed: int) -> None:
    """The property behind ``ClosFabric.keeps_idle_routes``: routing again against flows in
    flight that leave every link of the idle choice empty gives the idle choice (load only
    lowers scores, the chosen paths' scores stay, the first best wins ties)."""
    from lumoscore.fabric.routing import choose_paths

    rng = np.random.default_rng(seed)
    F, K, links = int(rng.integers(1, 30)), int(rng.integers(1, 5)), int(rng.integers(4, 40))
    ptrs, parts, offsets, n_cand, cap, weight = _random_candidates(rng, F, K, links)
    ptr0, idx0 = choose_paths(ptrs, parts, offsets, n_cand, np.zeros(links), cap, weight)
    load = rng.integers(0, 5, links).astype(float)
    load[idx0] = 0.0
    ptr1, idx1 = choose_paths(ptrs, parts, offsets, n_cand, load, cap, weight)
    assert np.array_equal(ptr0, ptr1) and np.array_equal(idx0, idx1)


@pytest.mark.parametrize("failures", [False, True])
def test_rounds_on_unloaded_links_start_on_their_plan(
    monkeypatch: pytest.MonkeyPatch, failures: bool
) -> None:
    """A round whose planned links carry no flow in flight starts on its plan without being
    routed again: the same run as routing every round, with fewer routing calls; with link
    failures (capacities change, plans were routed at the old ones) every round is routed."""
    import lumoscore.sim.rounds as rounds_mod

    # (busy enough that some rounds meet others' flows and move)
    jobs = generate_trace("lumoscore-paper", 60, seed=3, cluster_gpus=256, beta_s=20).jobs
    real = rounds_mod.reroute
    calls: list[bool] = []

    def counted(rp, *a, **k):
        out = real(rp, *a, **k)
        calls.append(out is not rp)
        return out

    monkeypatch.setattr(rounds_mod, "reroute", counted)

    def run() -> tuple[pd.DataFrame, int, int]:
        calls.clear()
        lf = LinkFailureModel(fraction=0.2, rate_per_cable_day=0.5, repair_s=1800.0)
        lf = lf if failures else None
        res = Simulator(clos("probing", 3.0), jobs, link_failures=lf, seed=2).run()
        return res.jobs, len(calls), sum(calls)

    fast, n_fast, _ = run()
    monkeypatch.setattr(ClosFabric, "keeps_idle_routes", False)
    full, n_full, moved = run()
    # (while idle routes hold, jobs alone on their links run on their timelines)
    assert not full["isolated"].any() and (failures or fast["isolated"].any())
    pd.testing.assert_frame_equal(
        fast.drop(columns="isolated"), full.drop(columns="isolated"), rtol=1e-9
    )
    assert moved > 0  # some rounds do move: the runs compare routing that matters
    if failures:
        assert n_fast > 0.5 * n_full
    else:
        assert n_fast < 0.5 * n_full


@pytest.mark.parametrize("probe_hash", ["murmur", "least-loaded"])
def test_isolated_timelines_equal_round_by_round(probe_hash: str) -> None:
    """Jobs alone on their links run on their precomputed timelines until a round routed
    against the load may read one of their links (then they go round by round, their
    rounds counted in flight): the same times as simulating every job round by round."""
    jobs = generate_trace("lumoscore-paper", 60, seed=3, cluster_gpus=256, beta_s=20).jobs
    fab = ClosFabric(
        256, 1600, radix=16, tiers=3, gpus_per_server=8, routing="probing",
        probe_candidates=3.0, probe_hash=probe_hash,
    )  # fmt: skip
    fast = Simulator(fab, jobs).run()
    slow = Simulator(fab, jobs, isolation=False).run()
    assert fast.jobs["isolated"].any() and not slow.jobs["isolated"].any()
    assert fast.stats["materialized"] > 0  # some were demoted on the way
    assert fast.stats["events"] < 0.8 * slow.stats["events"]
    for col in ("start_s", "finish_s", "jrt_s", "contention_level"):
        np.testing.assert_allclose(fast.jobs[col], slow.jobs[col], rtol=1e-9, atol=1e-6)


class ChoiceFabric(Fabric):
    """Six servers of 8 GPUs in three pairs, NICs plus two core links ``A`` and ``B``: a flow
    between the servers of a pair crosses one core link, the least loaded of its candidates
    by the flows in flight (the first on ties). Pair 0 has ``[A]``, pair 1 ``[B]``, pair 2
    ``[B, A]``."""

    routing = "probing"
    name = "choice"

    def __init__(self) -> None:
        self.spec = geometry_spec(48, 16, 8, 100.0)
        self.capacity_bps = np.full(2 * 48 + 2, 100e9)
        A, B = 96, 97
        self.candidates = {0: [A], 1: [B], 2: [B, A]}

    @property
    def keeps_idle_routes(self) -> bool:
        return True

    def probed_links(self, src, dst, flow_key):
        read = [c for s in np.asarray(src) // 16 for c in self.candidates[s] if s == 2]
        return np.unique(np.array(read, dtype=np.int64))

    def routes(self, src, dst, flow_key, *, job_id=0, link_load=None, flow_weight=None):
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        self._check_endpoints(src, dst)
        load = np.zeros(self.n_links) if link_load is None else link_load
        rows = []
        for i in range(src.size):
            if src[i] // 8 == dst[i] // 8:
                rows.append([src[i], 48 + dst[i]])
                continue
            cands = self.candidates[int(src[i]) // 16]
            core = min(cands, key=lambda c: load[c])  # (the first of the least loaded)
            rows.append([src[i], core, 48 + dst[i]])
        indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
        return Routes(indptr, np.array([x for r in rows for x in r], dtype=np.int64))


def test_a_round_routed_against_the_load_counts_isolated_jobs_it_may_read() -> None:
    """Job X (pair 0) is alone on core link A; W (pair 1) and Y (pair 2) both plan on B. A
    round of Y that starts while W sends on B is routed again and reads A: X's round in
    flight there must count (X goes round by round first), or Y would take A as if it were
    idle. Checked against simulating every job round by round."""
    jobs = [job(0, 0.0, 16, iterations=30), job(1, 0.37, 16, iterations=30),
            job(2, 0.81, 16, iterations=30)]  # fmt: skip
    fast = Simulator(ChoiceFabric(), jobs).run()
    slow = Simulator(ChoiceFabric(), jobs, isolation=False).run()
    assert fast.jobs["isolated"].tolist() == [True, True, False]  # (W until Y comes)
    assert fast.stats["materialized"] >= 1
    for col in ("start_s", "finish_s", "jrt_s", "contention_level"):
        np.testing.assert_allclose(fast.jobs[col], slow.jobs[col], rtol=1e-9, atol=1e-6)


def test_a_capacity_change_ends_every_isolated_timeline() -> None:
    """Plans were routed at the old capacities: after a change every round is routed again,
    so a job on its timeline goes round by round, even one whose links did not change."""
    from lumoscore.fabric.base import FabricChange
    from lumoscore.sim.changes import FabricChanges
    from lumoscore.sim.state import JobRun

    fab = ChoiceFabric()
    j = job(0, 0.0, 16, iterations=30)
    st = RunState.new(fab, [j], eps=0.0, isolation=True)
    model = RoundModel(st, reserve=True)
    gpus = np.arange(16)
    plan = build_plan(j, gpus, fab)
    assert model.occupy(plan, 0.0) and model.isolated_on is not None
    assert model.isolated_on[plan.links].all() and model.isolated_jobs == {0}
    run = JobRun(j, gpus, plan, 0.0, isolated=True)
    st.running[0] = run
    model.begin(run, 0.0)
    change = FabricChange(links=np.array([97]), capacity_bps=np.array([50e9]))  # B, not X's
    FabricChanges(st, model).apply(change, 1.0)
    assert not run.isolated and not model.idle_routes_hold
    assert not model.isolated_on.any() and not model.isolated_jobs
    assert st.stats["materialized"] == 1
