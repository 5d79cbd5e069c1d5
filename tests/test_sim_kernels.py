"""Fluid kernels: incremental refilling equals a fresh solve; fluid runs equal a step-by-step
reference that re-solves max-min from scratch (checked against the LP reference) at every
flow completion."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.sim import incidence, maxmin_rates
from lumoscore.sim.fluid import FluidSet
from lumoscore.sim.kernels import BOTT, NB, fluid_run
from lumoscore.sim.plan import DONE_RTOL, RoundPlan, solo_state


@st.composite
def fluid_instances(draw: st.DrawFn, max_flows: int = 30, max_links: int = 10):
    n_links = draw(st.integers(1, max_links))
    n_flows = draw(st.integers(1, max_flows))
    paths = [
        sorted(draw(st.sets(st.integers(0, n_links - 1), min_size=1, max_size=min(3, n_links))))
        for _ in range(n_flows)
    ]
    cap = np.array(
        draw(
            st.lists(
                st.sampled_from([1.0, 2.0, 3.0, 10.0, 0.5]), min_size=n_links, max_size=n_links
            )
        )
    )
    weight = np.array(draw(st.lists(st.integers(1, 4), min_size=n_flows, max_size=n_flows)), float)
    size = np.array(
        draw(
            st.lists(
                st.sampled_from([1.0, 2.0, 5.0, 7.5, 20.0]), min_size=n_flows, max_size=n_flows
            )
        )
    )
    return paths, cap, weight, size


def _csr(paths: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64)
    return indptr, np.concatenate([np.asarray(p, np.int64) for p in paths])


def _plan(paths, weight, size, idx) -> RoundPlan:
    indptr, indices = _csr([paths[i] for i in idx])
    return RoundPlan(
        indptr, indices, weight[idx], size[idx], 0.0, "x", 0.0, 0.0, np.unique(indices)
    )


@settings(max_examples=100, deadline=None)
@given(fluid_instances(), st.sampled_from([0.0, 0.05]))
def test_rates_after_every_completion_equal_a_fresh_solve(inst, eps: float) -> None:
    """Every flow is its own job, so the set stops at every completion; the incrementally
    refilled rates must equal a max-min solve from scratch over the flows still in flight."""
    paths, cap, weight, size = inst
    fs = FluidSet(cap, eps)
    for i in range(len(paths)):
        fs.add(i, _plan(paths, weight, size, [i]))
    while len(fs):
        fs.run_until(fs.clock_s)  # (re)solve without sending
        left = sorted(fs.jobs())
        fresh = maxmin_rates(
            incidence([paths[i] for i in left], cap.size), cap, weight=weight[left], eps=eps
        ).rates
        got = np.array([fs.rates[fs.alive & (fs.slot == fs.slot_of[i])][0] for i in left])
        assert np.allclose(got, fresh, rtol=1e-9, atol=0)
        assert fs.run_until(np.inf)
        fs.pop_finished()


def _reference_run(paths, cap, weight, size) -> tuple[float, np.ndarray, np.ndarray]:
    """Flows starting together, a fresh max-min solve at every completion: the completion
    time, the highest load each link carried and when its last flow left it."""
    rem = size.copy()
    alive = np.ones(len(paths), dtype=bool)
    peak = np.zeros(cap.size)
    idle = np.zeros(cap.size)
    t = 0.0
    while alive.any():
        idx = np.flatnonzero(alive)
        A = incidence([paths[i] for i in idx], cap.size)
        r = maxmin_rates(A, cap, weight=weight[idx])
        peak = np.maximum(peak, r.link_load(A, weight[idx]))
        dt = float((rem[idx] / r.rates).min())
        t += dt
        rem[idx] -= r.rates * dt
        alive[idx[rem[idx] <= size[idx] * 1e-9]] = False
        for i in idx:
            idle[paths[i]] = t
    return t, peak, idle


@settings(max_examples=80, deadline=None)
@given(fluid_instances())
def test_fluid_run_equals_step_by_step_reference(inst) -> None:
    paths, cap, weight, size = inst
    indptr, indices = _csr(paths)
    t, rem, links, peak, _, _, idle = fluid_run(
        indptr, indices, weight, size, size, cap, np.inf, DONE_RTOL
    )
    ref_t, ref_peak, ref_idle = _reference_run(paths, cap, weight, size)
    assert abs(t - ref_t) <= 1e-9 * t
    assert not rem.any()
    assert sorted(links.tolist()) == sorted(set(indices.tolist()))
    assert np.allclose(peak, ref_peak[links], rtol=1e-9, atol=0)
    assert np.allclose(idle, ref_idle[links], rtol=1e-9, atol=0)


@settings(max_examples=60, deadline=None)
@given(fluid_instances(), st.integers(1, 4))
def test_fluid_set_of_several_jobs_equals_one_run(inst, n_jobs: int) -> None:
    """Flows split over jobs in a FluidSet, all starting at 0: the last round ends when the
    same flows run together alone end."""
    paths, cap, weight, size = inst
    owner = np.arange(len(paths)) % n_jobs
    fs = FluidSet(cap)
    for j in range(n_jobs):
        idx = np.flatnonzero(owner == j)
        if not idx.size:
            continue
        indptr, indices = _csr([paths[i] for i in idx])
        fs.add(
            j,
            RoundPlan(
                indptr, indices, weight[idx], size[idx], 0.0, "x", 0.0, 0.0, np.unique(indices)
            ),
        )
    ends = {}
    while len(fs):
        assert fs.run_until(np.inf)
        for j in fs.pop_finished():
            ends[j] = fs.clock_s
    assert max(ends.values()) == np.float64(max(ends.values()))
    ref, _, _ = _reference_run(paths, cap, weight, size)
    assert abs(max(ends.values()) - ref) <= 1e-9 * ref


@settings(max_examples=150, deadline=None)
@given(
    fluid_instances(),
    st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5, 4.0]), min_size=30, max_size=30),
    st.sampled_from(["cold", "solo", "random", "random"]),
    st.integers(0, 2**31),
)
def test_rates_stay_max_min_as_rounds_join_and_leave(
    inst, starts: list[float], hint: str, seed: int
) -> None:
    """Flows join at staggered times (each its own job): after every join and every
    completion the incrementally maintained rates equal a fresh max-min solve of the flows in
    flight. Joining flows come without a warm start, with their rates alone (``solo``), or
    with arbitrary rates and bottlenecks (``random``): a hint, never a change of result."""
    paths, cap, weight, size = inst
    rng = np.random.default_rng(seed)
    start = np.array(starts[: len(paths)])

    def warm(i: int) -> dict:
        if hint == "cold":
            return {}
        if hint == "solo":
            _, rate, bott = solo_state(_plan(paths, weight, size, [i]), cap, 0.0)
        else:
            rate = rng.choice([0.1, 0.5, 1.0, 3.0, np.inf], size=1)
            bott = rng.choice(paths[i], size=1)
        return {"rates": rate, "bottleneck": bott}

    fs = FluidSet(cap)
    pending = sorted(range(len(paths)), key=lambda i: (start[i], i))
    sent_at: dict[int, float] = {}
    while pending or len(fs):
        t_add = start[pending[0]] if pending else np.inf
        if fs.run_until(t_add):
            for j in fs.pop_finished():
                sent_at[j] = fs.clock_s
        else:
            while pending and start[pending[0]] <= fs.clock_s:
                i = pending.pop(0)
                now = max(fs.clock_s, start[i])
                fs.add(i, _plan(paths, weight, size, [i]), now_s=now, **warm(i))
        fs.run_until(fs.clock_s)  # (re)solve without sending
        left = sorted(fs.jobs())
        if not left:
            continue
        fresh = maxmin_rates(
            incidence([paths[i] for i in left], cap.size), cap, weight=weight[left]
        ).rates
        got = np.array([fs.rates[fs.alive & (fs.slot == fs.slot_of[i])][0] for i in left])
        assert np.allclose(got, fresh, rtol=1e-9, atol=0)
        assert len(fs) == int(fs.alive.sum())
        # the per-link counts of bottlenecked rows and of rows in flight the kernel keeps
        # are exact
        bott = fs._st[BOTT][fs.alive]
        np.testing.assert_array_equal(fs._st[NB], np.bincount(bott[bott >= 0], minlength=cap.size))
        crossing = [paths[i] for i in fs.jobs()]
        assert fs.link_rows.tolist() == [sum(q in p for p in crossing) for q in range(cap.size)]
    assert sorted(sent_at) == list(range(len(paths)))
    assert all(sent_at[i] > start[i] for i in sent_at)


def test_a_wrong_warm_start_is_only_a_hint() -> None:
    """A joining flow that claims an infinite rate still shares its link fairly."""
    rp = RoundPlan(
        np.array([0, 1]),
        np.array([0]),
        np.ones(1),
        np.array([10.0]),
        0.0,
        "x",
        0.0,
        0.0,
        np.array([0]),
    )
    fs = FluidSet(np.array([10.0]))
    fs.add(0, rp)
    assert not fs.run_until(0.5)
    fs.add(1, rp, rates=np.array([np.inf]), bottleneck=np.array([0]))
    assert fs.run_until(np.inf) and fs.clock_s == 1.5 and fs.pop_finished() == [0]
    assert fs.run_until(np.inf) and fs.clock_s == 2.0 and fs.pop_finished() == [1]


def test_flows_on_links_of_no_capacity_never_finish() -> None:
    """A flow crossing a link of zero capacity keeps its bits while the others finish: a
    round alone never ends, and in a shared set its round never completes."""
    paths, cap = [[0], [1]], np.array([0.0, 10.0])
    indptr, indices = _csr(paths)
    size = np.array([10.0, 10.0])
    t, rem, *_ = fluid_run(indptr, indices, np.ones(2), size, size, cap, np.inf, DONE_RTOL)
    assert t == np.inf and rem.tolist() == [10.0, 0.0]
    t, rem, *_ = fluid_run(indptr, indices, np.ones(2), size, size, cap, 5.0, DONE_RTOL)
    assert t == 5.0 and rem.tolist() == [10.0, 0.0]
    fs = FluidSet(cap)
    for i in range(2):
        fs.add(i, _plan(paths, np.ones(2), size, [i]))
    assert fs.run_until(np.inf) and fs.clock_s == 1.0 and fs.pop_finished() == [1]
    assert not fs.run_until(np.inf) and fs.clock_s == 1.0 and len(fs) == 1
    assert not fs.run_until(100.0) and fs.clock_s == 100.0 and fs.remaining.tolist() == [10.0]
