"""Fluid kernels: incremental refilling equals a fresh solve; fluid runs equal a step-by-step
reference that re-solves max-min from scratch (checked against the LP reference) at every
flow completion."""

from __future__ import annotations

import numpy as np
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from lumoscore.sim import incidence, maxmin_rates
from lumoscore.sim.fluid import FluidSet
from lumoscore.sim.kernels import (
    BOTT,
    LEVEL_RTOL,
    NB,
    SCAN_LINKS,
    _lowest_links,
    _rebuild_lists,
    fluid_run,
    link_lists,
    link_lists_append,
    solo_run,
)
from lumoscore.sim.plan import DONE_RTOL, RoundPlan, _solo_run, solo_state


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
    _assert_fresh_after_completions(*inst, eps=eps)


def _assert_fresh_after_completions(paths, cap, weight, size, *, eps=0.0, limit=None) -> None:
    """Every flow its own job in one set: after each completion (the first ``limit`` of
    them, default all) the set's rates equal a max-min solve from scratch of the flows left."""
    fs = FluidSet(cap, eps)
    for i in range(len(paths)):
        fs.add(i, _plan(paths, weight, size, [i]))
    done = 0
    while len(fs) and (limit is None or done < limit):
        fs.run_until(fs.clock_s)  # (re)solve without sending
        left = sorted(fs.jobs())
        fresh = maxmin_rates(
            incidence([paths[i] for i in left], cap.size), cap, weight=weight[left], eps=eps
        ).rates
        got = np.array([fs.rates[fs.alive & (fs.slot == fs.slot_of[i])][0] for i in left])
        assert np.allclose(got, fresh, rtol=1e-9, atol=0)
        assert fs.run_until(np.inf)
        fs.pop_finished()
        done += 1


def _reference_run(paths, cap, weight, size) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Flows starting together, a fresh max-min solve at every completion: the completion
    time, the highest load each link carried, when its last flow left it and when each flow
    ended."""
    rem = size.copy()
    alive = np.ones(len(paths), dtype=bool)
    peak = np.zeros(cap.size)
    idle = np.zeros(cap.size)
    fin = np.zeros(len(paths))
    t = 0.0
    while alive.any():
        idx = np.flatnonzero(alive)
        A = incidence([paths[i] for i in idx], cap.size)
        r = maxmin_rates(A, cap, weight=weight[idx])
        peak = np.maximum(peak, r.link_load(A, weight[idx]))
        dt = float((rem[idx] / r.rates).min())
        t += dt
        rem[idx] -= r.rates * dt
        done = idx[rem[idx] <= size[idx] * 1e-9]
        alive[done] = False
        fin[done] = t
        for i in idx:
            idle[paths[i]] = t
    return t, peak, idle, fin


def _assert_run_equals_reference(paths, cap, weight, size) -> None:
    """``fluid_run`` of the flows from the start ends when, and leaves each link with the
    peak load and at the time, that :func:`_reference_run` finds."""
    indptr, indices = _csr(paths)
    t, rem, links, peak, _, _, idle = fluid_run(
        indptr, indices, weight, size, size, cap, np.inf, DONE_RTOL
    )
    ref_t, ref_peak, ref_idle, _ = _reference_run(paths, cap, weight, size)
    assert abs(t - ref_t) <= 1e-9 * t
    assert not rem.any()
    assert sorted(links.tolist()) == sorted(set(indices.tolist()))
    assert np.allclose(peak, ref_peak[links], rtol=1e-9, atol=0)
    assert np.allclose(idle, ref_idle[links], rtol=1e-9, atol=0)


@settings(max_examples=80, deadline=None)
@given(fluid_instances())
def test_fluid_run_equals_step_by_step_reference(inst) -> None:
    _assert_run_equals_reference(*inst)


def _wide_instance(seed: int):
    """Random flows over more links than a filling scans (``SCAN_LINKS``): a solve of all of
    them takes the link heap, a refill of a few the scan."""
    rng = np.random.default_rng(seed)
    n_links = SCAN_LINKS + 64 + int(rng.integers(0, 64))
    n_flows = n_links + int(rng.integers(0, n_links // 2))
    paths = [
        sorted(rng.choice(n_links, size=int(rng.integers(1, 4)), replace=False).tolist())
        for _ in range(n_flows)
    ]
    cap = rng.choice([1.0, 2.0, 3.0, 10.0, 0.5], size=n_links)
    weight = rng.integers(1, 5, size=n_flows).astype(float)
    size = rng.choice([1.0, 2.0, 5.0, 7.5, 20.0], size=n_flows)
    return paths, cap, weight, size


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_fillings_over_many_links_equal_the_reference(seed: int) -> None:
    """A fluid run whose fillings cross more than ``SCAN_LINKS`` links (the link heap) and
    fewer (the scan) equals the step-by-step reference, and a set refilled after every
    completion equals a fresh solve."""
    paths, cap, weight, size = _wide_instance(seed)
    assert len({q for p in paths for q in p}) > SCAN_LINKS
    _assert_run_equals_reference(paths, cap, weight, size)
    # the first completions: refills over few links, after a wide solve
    _assert_fresh_after_completions(paths, cap, weight, size, limit=40)


@settings(max_examples=80, deadline=None)
@given(fluid_instances(), st.floats(0.0, 1.0), st.sampled_from([1.0, np.inf, 0.0]))
def test_solo_run_and_start_states_equal_fluid_runs(inst, share: float, cap0: float) -> None:
    """``solo_run`` is ``fluid_run`` to the end plus the state at time 0, which equals
    ``fluid_run`` to time 0; a plan's cached start state gives ``solo_state`` before the
    first flow ends, equal to a run to that time (also with a link of infinite capacity,
    whose flows end at once, or of none, whose flows never send)."""
    paths, cap, weight, size = inst
    cap = cap.copy()
    cap[0] = cap0
    indptr, indices = _csr(paths)
    full = fluid_run(indptr, indices, weight, size, size, cap, np.inf, DONE_RTOL)
    solo = solo_run(indptr, indices, weight, size, cap, DONE_RTOL)
    for a, b in zip(full, solo[:7], strict=True):
        np.testing.assert_array_equal(a, b)
    _, _, _, _, rate0, bott0, _ = fluid_run(
        indptr, indices, weight, size, size, cap, 0.0, DONE_RTOL
    )
    np.testing.assert_array_equal(solo[7], rate0)
    np.testing.assert_array_equal(solo[8], bott0)
    rp = build_plan_for(paths, cap, weight, size)
    solo_state(rp, cap, 0.0)  # (computes the time of the first end once)
    first = float(rp.start_state["first_s"])
    sending = rate0 > 0
    assert first == min(size[sending] / rate0[sending], default=np.inf)
    until = share * first if np.isfinite(first) else share * 10.0
    got = solo_state(rp, cap, until)
    ref = fluid_run(indptr, indices, weight, size, size, cap, until, DONE_RTOL)
    np.testing.assert_allclose(got[0], ref[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[1], ref[4])
    np.testing.assert_array_equal(got[2], ref[5])


@settings(max_examples=60, deadline=None)
@given(fluid_instances(), st.integers(1, 4))
def test_fluid_set_of_several_jobs_equals_one_run(inst, n_jobs: int) -> None:
    """Flows split over jobs in a FluidSet, all starting at 0: each job's round ends once,
    when its last flow ends in a run of the same flows together alone (and so the last round
    when that run ends)."""
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
            assert j not in ends
            ends[j] = fs.clock_s
    # every job ends once, when its last flow ends in the reference run of all the flows
    ref, _, _, fin = _reference_run(paths, cap, weight, size)
    assert ends.keys() == set(owner.tolist())
    for j, end in ends.items():
        ref_end = fin[owner == j].max()
        assert abs(end - ref_end) <= 1e-9 * ref_end, j
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


def test_a_saturated_link_of_joining_rows_alone_is_still_checked() -> None:
    """A round joins a set in flight with rates that fill a link exactly but certify the
    slower flow there (2 and 8 bit/s on a 10 bit/s link): only joining rows cross that link
    and it is saturated, yet the certificate breaks and both get 5 bit/s."""
    paths = [[1], [0], [0, 1]]
    weight, size = np.ones(3), np.array([1000.0, 10.0, 10.0])
    fs = FluidSet(np.array([10.0, 100.0]))
    fs.add(0, _plan(paths, weight, size, [0]))
    fs.run_until(0.0)
    fs.add(1, _plan(paths, weight, size, [1, 2]), rates=np.array([2.0, 8.0]),
           bottleneck=np.array([0, 0]))  # fmt: skip
    fs.run_until(0.0)
    assert fs.rates.tolist() == [95.0, 5.0, 5.0]
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


def build_plan_for(paths, cap, weight, size) -> RoundPlan:
    """A round of all the flows, made as :func:`~lumoscore.sim.plan.build_plan` makes them
    (solo timeline and start state)."""
    indptr, indices = _csr(paths)
    solo_s, links, peak, idle, start = _solo_run(indptr, indices, weight, size, cap, 0.0)
    return RoundPlan(indptr, indices, weight, size, 0.0, "x", solo_s, 0.0, links, peak, idle, start)


def _solo_plan(paths, cap, weight, size, idx) -> RoundPlan:
    """A round of the flows ``idx`` made as the simulator makes them (solo timeline, start
    state)."""
    return build_plan_for([paths[i] for i in idx], cap, weight[idx], size[idx])


@settings(max_examples=120, deadline=None)
@given(
    fluid_instances(max_flows=24, max_links=12),
    st.lists(st.integers(1, 4), min_size=24, max_size=24),
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=24, max_size=24),
    st.lists(st.sampled_from([0.0, 0.0, 0.4, 2.0]), min_size=24, max_size=24),
    st.sampled_from(["none", "remove", "attach"]),
    st.integers(0, 2**31),
)
@example(  # a removal that used to fall exactly on a round's end (a float tie)
    ([[0]], np.array([1.0]), np.array([3.0]), np.array([1.0])),
    [1] * 24,
    [0.0] * 24,
    [2.0] + [0.0] * 23,
    "remove",
    1,
)
def test_detached_parts_follow_the_shared_solve(
    inst, sizes: list[int], starts: list[float], head: list[float], extra: str, seed: int
) -> None:
    """Rounds of several flows join a set after running alone for a while (``started_s``):
    parts meeting no other round stay detached on their solo timeline until a later round
    needs their links. Round completions equal those of a set that solves every row; so do
    the bits a removed round leaves, and the completions after a capacity change whose links
    are attached first (plans made after it see the new capacities, as the simulator's
    do). Detached parts hold their links (``link_rows``)."""
    paths, cap, weight, size = inst
    rng = np.random.default_rng(seed)
    groups, i = [], 0
    for k in sizes:
        if i >= len(paths):
            break
        groups.append(list(range(i, min(i + k, len(paths)))))
        i += k
    order = sorted(range(len(groups)), key=lambda j: (starts[j], j))
    # (irrational instants: a removal exactly at a round's end would be a float tie between
    # the two sets, decided by round-off)
    t_extra = float(rng.choice([np.pi / 10, np.pi / 3, 4 * np.pi / 5]))
    changed = np.flatnonzero(rng.random(cap.size) < 0.5)
    sets = [FluidSet(cap.copy()), FluidSet(cap.copy())]  # detaching, solving every row
    ends: list[dict[int, float]] = [{}, {}]
    removed: list[np.ndarray] = []
    for k, fs in enumerate(sets):
        pending = list(order)
        done_extra = extra == "none"
        while pending or len(fs):
            t_next = starts[pending[0]] if pending else np.inf
            if not done_extra:
                t_next = min(t_next, t_extra)
            if fs.run_until(t_next):
                for j in fs.pop_finished():
                    ends[k][j] = fs.clock_s
                continue
            if not done_extra and fs.clock_s >= t_extra:
                done_extra = True
                jobs = sorted(fs.jobs())
                if extra == "remove" and jobs:
                    removed.append(fs.remove_job(jobs[len(jobs) // 2]))
                elif extra == "attach":
                    fs.attach(changed)
                    fs.capacity[changed] *= 2.0
                    fs.touch()
                continue
            while pending and starts[pending[0]] <= fs.clock_s:
                j = pending.pop(0)
                rp, h = _solo_plan(paths, fs.capacity, weight, size, groups[j]), head[j]
                rem, rate, bott = solo_state(rp, fs.capacity, h)
                fs.add(
                    j, rp, rem, now_s=fs.clock_s, rates=rate, bottleneck=bott,
                    started_s=fs.clock_s - h if k == 0 else None,
                )  # fmt: skip
                if k == 0:
                    for q in np.flatnonzero(fs.link_rows == 0):
                        assert fs._detached_on[q] < 0
    assert ends[0].keys() == ends[1].keys()
    for j in ends[1]:
        assert abs(ends[0][j] - ends[1][j]) <= 1e-9 * max(ends[1][j], 1.0), j
    if len(removed) == 2:
        np.testing.assert_allclose(removed[0], removed[1], rtol=1e-9, atol=1e-9)
    for fs in sets:  # all done: every row and every detached part gave its links back
        assert not fs.link_rows.any() and (fs._detached_on < 0).all()
    c0, c1 = sets[0].counters, sets[1].counters
    assert c1["detached_parts"] == 0  # (the reference set solves every row)
    assert c0["rejoined_parts"] <= c0["detached_parts"]
    event("parts detached" if c0["detached_parts"] else "no part detached")


def test_detached_parts_join_when_a_round_meets_them() -> None:
    """Round A: flow a1 (2 bits) on link 0, a2 (1 bit) on link 1, both of capacity 1.
    Alone in the set, both parts stay on A's solo timeline. B (1 bit on link 1) joins at 0:
    a2 joins the solve and shares link 1 with b, both end at 2. C (1 bit on link 0) joins at
    1: a1 joins with the 1 bit it has left, shares link 0 with c, both end at 3 (and A with
    them). A removed at 0.5 instead leaves 1.5 and 0.5 bits."""
    cap = np.ones(2)
    paths, ones = [[0], [1], [1], [0]], np.ones(4)
    size = np.array([2.0, 1.0, 1.0, 1.0])
    a, b, c = (_solo_plan(paths, cap, ones, size, idx) for idx in ([0, 1], [2], [3]))
    fs = FluidSet(cap)
    fs.add(0, a, started_s=0.0)
    assert fs.counters["detached_parts"] == 2 and fs.link_rows.tolist() == [1, 1]
    assert len(fs) == 1 and fs.alive.sum() == 0
    fs.add(1, b, started_s=0.0)
    assert fs.counters["rejoined_parts"] == 1 and fs.link_rows.tolist() == [1, 2]
    assert not fs.run_until(1.0) and fs.clock_s == 1.0
    fs.add(2, c, started_s=1.0)
    assert fs.counters["rejoined_parts"] == 2 and fs.link_rows.tolist() == [2, 2]
    assert fs.run_until(np.inf) and fs.clock_s == 2.0 and fs.pop_finished() == [1]
    assert fs.run_until(np.inf) and fs.clock_s == 3.0 and sorted(fs.pop_finished()) == [0, 2]
    assert len(fs) == 0 and fs.link_rows.tolist() == [0, 0]
    fs = FluidSet(cap)
    fs.add(0, a, started_s=0.0)
    assert not fs.run_until(0.5) and fs.clock_s == 0.5
    assert fs.remove_job(0).tolist() == [1.5, 0.5] and fs.link_rows.tolist() == [0, 0]
    fs.add(0, a, started_s=0.0, now_s=0.5)  # (its parts end at 2 and 1 alone)
    assert fs.run_until(np.inf) and fs.clock_s == 2.0 and fs.pop_finished() == [0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=3), min_size=1, max_size=12),
        min_size=1,
        max_size=6,
    ),
    st.data(),
)
def test_per_link_rows_stay_the_transpose_of_the_routes(batches, data) -> None:
    """Rows appended in batches, some dying and dropped by walks or by compaction: each
    link's vector holds, oldest first, the rows crossing it (dead ones only until dropped)."""
    n_links = 6
    ptr, idx = [0], []
    ldir, pool = link_lists(np.zeros(1, np.int64), np.zeros(0, np.int64), n_links)
    alive: list[bool] = []
    for batch in batches:
        first = len(alive)
        for links in batch:
            idx += sorted(set(links))
            ptr.append(len(idx))
            alive.append(True)
        f_ptr, c_idx = np.array(ptr), np.array(idx, dtype=np.int64)
        local = np.full(n_links, -1, dtype=np.int64)
        pool = link_lists_append(f_ptr, c_idx, ldir, pool, first, len(alive), local)
        assert (local == -1).all()
        for f in data.draw(st.sets(st.integers(0, len(alive) - 1)), label="finish"):
            alive[f] = False
        if data.draw(st.booleans(), label="compact"):
            keep = [f for f in range(len(alive)) if alive[f]]
            rows = [idx[ptr[f] : ptr[f + 1]] for f in keep]
            ptr, idx = [0], []
            for r in rows:
                idx += r
                ptr.append(len(idx))
            alive = [True] * len(keep)
            ldir[:] = 0  # (compact_rows clears the vectors of every link its rows cross)
            pool = _rebuild_lists(np.array(ptr), np.array(idx, np.int64), len(keep), ldir, pool)
        for q in range(n_links):
            b, k, room = ldir[3 * q], ldir[3 * q + 1], ldir[3 * q + 2]
            assert k <= room and b + room <= ldir[-1] <= pool.size
            held = pool[b : b + k].tolist()
            want = [f for f in range(len(alive)) if q in idx[ptr[f] : ptr[f + 1]]]
            assert [f for f in held if alive[f]] == [f for f in want if alive[f]]
            assert set(want) >= set(held)
    # vectors never overlap
    used = np.zeros(ldir[-1], dtype=np.int64)
    for q in range(n_links):
        used[ldir[3 * q] : ldir[3 * q] + ldir[3 * q + 2]] += 1
    assert used.max(initial=0) <= 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.sampled_from([1.0, 1.01, 1.5]), st.data())
def test_a_scan_closes_the_links_that_saturate_next(m: int, grow: float, data) -> None:
    """Scans of a filling's open links, level after level, return the open links whose fill
    level is within the tolerance (times ``grow``) of the lowest, in order, and close them
    and the links left without active rows, exactly as a scan over every link would."""
    cap = np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, 4.0, np.inf]), min_size=m,
                                      max_size=m)))  # fmt: skip
    load = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=m,
                                       max_size=m)))  # fmt: skip
    n_act = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0]), min_size=m,
                                        max_size=m)))  # fmt: skip
    floor = n_act * 1e-12
    opened = np.flatnonzero(cap < np.inf).astype(np.int64)
    n_open = opened.size
    lv, sat = np.empty(m), np.empty(m, dtype=np.int64)
    closed = np.zeros(m, dtype=bool)
    while True:
        act = ~closed & (n_act > floor) & (cap < np.inf)
        n_sat, t, n_open = _lowest_links(cap, load, n_act, floor, grow, opened, n_open, lv, sat)
        if not act.any():
            assert n_sat == 0
            break
        level = np.where(act, (cap - load) / np.where(act, n_act, 1.0), np.inf)
        low = max(level.min(), 0.0)
        want = np.flatnonzero(act & (level <= low * grow * (1.0 + LEVEL_RTOL)))
        assert t == low
        assert sat[:n_sat].tolist() == want.tolist()
        closed[want] = True
        closed[~act] = True
        assert opened[:n_open].tolist() == np.flatnonzero(~closed & (cap < np.inf)).tolist()
        n_act[want] = 0.0  # (their rows froze)
