"""Probing in the simulator: every round is routed when it starts, against the flows in flight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_sim import job
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
    """With one candidate probing routes every round exactly as ECMP: the same run, although
    it runs every job round by round (no isolated timelines, no claims ahead)."""
    jobs = trace()
    ecmp = Simulator(clos("ecmp"), jobs).run().jobs
    probing = Simulator(clos("probing", 1.0), jobs).run()
    assert probing.stats["materialized"] == 0 and not probing.jobs["isolated"].any()
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
    pd.testing.assert_frame_equal(fast, full)
    assert moved > 0  # some rounds do move: the runs compare routing that matters
    if failures:
        assert n_fast > 0.5 * n_full
    else:
        assert n_fast < 0.5 * n_full
