"""Logical topology: Theorems 4.1 and 4.2 as property tests, the CP-SAT reference of
(5)(6)(8) (Fig. 12-style infeasibility), contention reports, backup mesh, input errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, InfeasibleError, PreconditionError
from lumoscore.topology import ClusterSpec
from lumoscore.topology.logical import (  # _build: the from-scratch reference
    _build,
    apply_split,
    backup_mesh,
    check_logical_topology,
    design_logical_topology,
    extend_logical_topology,
    free_link_split,
    greedy_spine_assignment,
    heuristic_decomposition,
    ilp_logical_topology,
    shrink_logical_topology,
    theorem_42_condition,
)


def random_L(spec: ClusterSpec, rng: np.random.Generator, row_max: int, fill: float) -> np.ndarray:
    """Random symmetric cross-pod demand with row sums <= row_max (about ``fill`` full)."""
    n, per = spec.leaves, spec.leaves_per_pod
    L = np.zeros((n, n), np.int64)
    rows = np.zeros(n, np.int64)
    for _ in range(int(fill * n * row_max)):
        a, b = rng.integers(0, n, 2)
        if a // per == b // per or rows[a] >= row_max or rows[b] >= row_max:
            continue
        k = int(rng.integers(1, 1 + min(row_max - rows[a], row_max - rows[b])))
        L[a, b] += k
        L[b, a] += k
        rows[a] += k
        rows[b] += k
    return L


SPECS = st.builds(
    ClusterSpec,
    pods=st.integers(2, 6),
    k_leaf=st.sampled_from([2, 4, 8]),
    k_spine=st.sampled_from([2, 4, 8]),
    tau=st.just(2),
    gpus_per_server=st.just(1),
    ocs_ports=st.just(8),
)


@settings(max_examples=60, deadline=None)
@given(SPECS, st.integers(0, 2**32 - 1), st.floats(0.2, 3.0))
def test_theorem_41_tau2(spec: ClusterSpec, seed: int, fill: float) -> None:
    L = random_L(spec, np.random.default_rng(seed), spec.k_leaf, fill)
    topo = heuristic_decomposition(L, spec)
    assert check_logical_topology(L, topo, spec) == []
    assert topo.contention_free
    assert topo.C.sum() == L.sum()
    assert (topo.C.transpose(0, 2, 1) == topo.C).all()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6),
    st.sampled_from([2, 4, 8]),
    st.sampled_from([2, 4]),
    st.integers(0, 2**32 - 1),
    st.floats(0.2, 3.0),
)
def test_tau1_heuristic_contention_at_most_2_and_theorem_42(
    pods: int, k_leaf: int, k_spine: int, seed: int, fill: float
) -> None:
    spec = ClusterSpec(pods=pods, k_leaf=k_leaf, k_spine=k_spine, tau=1, gpus_per_server=1)
    rng = np.random.default_rng(seed)
    L = random_L(spec, rng, spec.k_leaf, fill)
    hd = heuristic_decomposition(L, spec)
    msgs = check_logical_topology(L, hd, spec)
    assert not [m for m in msgs if m.startswith(("(5)", "(8)"))]
    assert hd.leaf_contention.max(initial=0) <= 2
    # Theorem 4.2: row sums <= K_leaf / 2 -> the greedy is contention-free
    L2 = random_L(spec, rng, spec.k_leaf // 2, fill)
    assert theorem_42_condition(L2, spec)
    g = greedy_spine_assignment(L2, spec)
    assert check_logical_topology(L2, g, spec) == []
    auto = design_logical_topology(L2, spec)
    assert auto.method == "greedy" and auto.contention_free


def test_fig12_triangle_ilp_infeasible_tau1() -> None:
    # three pods, one active leaf each, every leaf talks to the other two; K_leaf = 2, tau = 1:
    # each leaf must use both spines once, i.e. 2-edge-colour a triangle -> impossible.
    spec = ClusterSpec(pods=3, k_leaf=2, k_spine=2, tau=1, gpus_per_server=1)
    L = np.zeros((6, 6), np.int64)
    for x, y in [(0, 2), (2, 4), (0, 4)]:
        L[x, y] = L[y, x] = 1
    assert not theorem_42_condition(L, spec)
    with pytest.raises(InfeasibleError):
        ilp_logical_topology(L, spec)
    best = design_logical_topology(L, spec)
    assert best.max_contention == 2 and check_logical_topology(L, best, spec)[0].startswith("(6)")
    # with tau = 2 (one spine reached over 2 links per leaf) the same demand is feasible
    spec2 = ClusterSpec(pods=3, k_leaf=2, k_spine=2, tau=2, gpus_per_server=1)
    L2 = np.zeros((3, 3), np.int64) + 1 - np.eye(3, dtype=np.int64)
    assert check_logical_topology(L2, ilp_logical_topology(L2, spec2), spec2) == []
    assert check_logical_topology(L2, heuristic_decomposition(L2, spec2), spec2) == []


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2]))
def test_ilp_agrees_with_algorithms(seed: int, tau: int) -> None:
    spec = ClusterSpec(pods=3, k_leaf=2 * tau, k_spine=2 * tau, tau=tau, gpus_per_server=1)
    rng = np.random.default_rng(seed)
    L = random_L(spec, rng, spec.k_leaf, 1.0)
    algo = design_logical_topology(L, spec)
    try:
        ilp = ilp_logical_topology(L, spec)
    except InfeasibleError:
        assert tau == 1 and not algo.contention_free  # an algorithm never beats a proof
        return
    assert check_logical_topology(L, ilp, spec) == []
    if tau == 2:
        assert algo.contention_free


def test_failed_links_respected_by_greedy() -> None:
    spec = ClusterSpec(pods=2, k_leaf=4, k_spine=2, tau=1, gpus_per_server=1)
    L = np.zeros((4, 4), np.int64)
    L[0, 2] = L[2, 0] = 2
    cap = np.ones((4, 4), np.int64)
    cap[0, :2] = 0  # leaf 0 lost its links to spines 0 and 1
    t = design_logical_topology(L, spec, capacity=cap)
    assert t.method == "greedy" and t.contention_free
    assert set(t.h[t.a == 0].tolist()) == {2, 3}


def test_backup_mesh() -> None:
    spec = ClusterSpec(pods=6, k_leaf=2, k_spine=8, tau=2, gpus_per_server=1)
    C = np.zeros((1, 6, 6), np.int64)
    C[0, 0, 1] = C[0, 1, 0] = 8  # pods 0, 1 full
    B = backup_mesh(C, spec)
    assert (B.transpose(0, 2, 1) == B).all()
    assert ((C + B).sum(axis=2) <= spec.k_spine).all()
    others = np.ix_([0], range(2, 6), range(2, 6))
    assert (B[others] == 1 - np.eye(4, dtype=np.int64)).all()  # full mesh among pods 2..5
    assert B[0, :2].sum() == 0


def test_input_errors() -> None:
    spec = ClusterSpec(pods=2, k_leaf=2, k_spine=4, tau=2, gpus_per_server=1)
    L = np.zeros((4, 4), np.int64)
    L[0, 1] = L[1, 0] = 1  # leaves 0, 1 share pod 0
    with pytest.raises(ConfigError, match="inside a pod"):
        heuristic_decomposition(L, spec)
    L = np.zeros((4, 4), np.int64)
    L[0, 2] = 1
    with pytest.raises(ConfigError, match="symmetric"):
        heuristic_decomposition(L, spec)
    with pytest.raises(ConfigError, match="shape"):
        heuristic_decomposition(np.zeros((3, 3)), spec)
    with pytest.raises(ConfigError, match="method"):
        design_logical_topology(np.zeros((4, 4)), spec, method="magic")


@settings(max_examples=40, deadline=None)
@given(SPECS, st.integers(0, 2**32 - 1), st.floats(0.2, 2.0))
def test_extend_and_shrink_keep_constraints(spec: ClusterSpec, seed: int, fill: float) -> None:
    rng = np.random.default_rng(seed)
    base = random_L(spec, rng, spec.k_leaf, fill)
    topo = heuristic_decomposition(base, spec)
    # add demand within the leaves' remaining ports
    rows = base.sum(axis=1)
    add = random_L(spec, rng, spec.k_leaf, fill)
    ok = rows + add.sum(axis=1) <= spec.k_leaf
    add = add * (ok[:, None] & ok[None, :])
    ext = extend_logical_topology(topo, add, spec)
    msgs = check_logical_topology(base + add, ext, spec)
    assert not [m for m in msgs if m.startswith(("(5)", "(8)"))]
    assert (msgs == []) == ext.contention_free
    kept = topo.dense()  # the old split is untouched
    assert (ext.dense() >= kept).all()
    split = free_link_split(topo, add, spec)  # the same entries, removable exactly
    assert np.array_equal(apply_split(topo, split, spec).dense(), ext.dense())
    assert np.array_equal(apply_split(ext, split, spec, sign=-1).dense(), kept)
    # what apply_split says changed: its row sums are C's, C differs from its origin only at
    # the keys it lists, by the differences it lists, both ways; its entries are those of a
    # topology built afresh from both (entries merged, not re-sorted)
    for t0, sign in ((topo, 1), (ext, -1)):
        t1 = apply_split(t0, split, spec, sign=sign)
        assert t1.derived_from is t0.token and t1.token is not t0.token
        assert np.array_equal(t1.spine_row_sums(), t1.C.sum(axis=2))
        outside = np.ones(t1.C.size, bool)
        outside[t1.changed_keys] = False
        assert np.array_equal(t1.C.reshape(-1)[outside], t0.C.reshape(-1)[outside])
        at = t1.changed_keys
        assert np.array_equal(t1.C.reshape(-1)[at], t0.C.reshape(-1)[at] + t1.changed_delta)
        ours = (t0.a, t0.b, t0.h, t0.value)
        theirs = (*split[:3], sign * np.asarray(split[3]))
        both = [np.concatenate([x, y]) for x, y in zip(ours, theirs, strict=True)]
        fresh = _build(*both, spec, t0.capacity, "fresh")
        for name in ("a", "b", "h", "value", "leaf_up", "leaf_down", "C"):
            assert np.array_equal(getattr(t1, name), getattr(fresh, name)), name
    if split[3].size:  # nothing to remove from an empty split
        with pytest.raises(PreconditionError):
            apply_split(heuristic_decomposition(0 * base, spec), split, spec, sign=-1)
    # remove part of the base demand again
    rem = np.minimum(base, rng.integers(0, 3, base.shape))
    rem = np.triu(rem, 1) + np.triu(rem, 1).T
    sh = shrink_logical_topology(ext, rem, spec)
    msgs = check_logical_topology(base + add - rem, sh, spec)
    assert not [m for m in msgs if m.startswith(("(5)", "(8)"))]
    assert (sh.leaf_up <= ext.leaf_up).all()
    # what the shrink says changed, as for apply_split: C differs only at its keys, by its
    # differences; its row sums are C's
    assert sh.derived_from is ext.token
    assert np.array_equal(sh.spine_row_sums(), sh.C.sum(axis=2))
    diff = sh.C.reshape(-1) - ext.C.reshape(-1)
    assert np.array_equal(np.flatnonzero(diff), sh.changed_keys[sh.changed_delta != 0])
    assert np.array_equal(diff[sh.changed_keys], sh.changed_delta)
    # its entries and loads are those of a topology built afresh from them (sorted, no zeros)
    fresh = _build(sh.a, sh.b, sh.h, sh.value, spec, sh.capacity, "fresh")
    for name in ("a", "b", "h", "value", "leaf_up", "leaf_down", "C"):
        assert np.array_equal(getattr(sh, name), getattr(fresh, name)), name
    assert (sh.value > 0).all() and np.array_equal(sh.dense().sum(axis=0), base + add - rem)
    # held entries (another job's split) stay when the rest of the pair covers the removal
    held = shrink_logical_topology(ext, rem, spec, keep=split)
    assert np.array_equal(held.C.sum(axis=0), sh.C.sum(axis=0))
    back = apply_split(held, split, spec, sign=-1)
    assert np.array_equal(back.dense(), shrink_logical_topology(topo, rem, spec).dense())


@settings(max_examples=40, deadline=None)
@given(SPECS, st.integers(0, 2**32 - 1), st.floats(0.2, 3.0))
def test_greedy_half_ports_any_tau(spec: ClusterSpec, seed: int, fill: float) -> None:
    # the greedy's argument needs only row sums <= K_leaf / 2, for any tau (here tau = 2)
    L = random_L(spec, np.random.default_rng(seed), spec.k_leaf // 2, fill)
    assert check_logical_topology(L, greedy_spine_assignment(L, spec), spec) == []


def _greedy_reference(r, c, v, cap, load, concentrate):  # type: ignore[no-untyped-def]
    """The NumPy formulation of the greedy spine assignment (one pair at a time), kept as an
    independent reference for the compiled kernel."""
    H = cap.shape[1]
    hs = np.arange(H)
    touched = np.zeros(H, bool)
    out: list[tuple[int, int, int, int]] = []
    for a, b, m in zip(r.tolist(), c.tolist(), v.tolist(), strict=True):
        common = np.maximum(np.minimum(cap[a] - load[a], cap[b] - load[b]), 0)
        take = np.zeros(H, np.int64)
        left = m
        if concentrate:
            order = np.lexsort((hs, ~touched))
            fill = np.minimum(
                common[order], np.maximum(0, left - np.cumsum(common[order]) + common[order])
            )
            take[order] = fill
            left -= int(fill.sum())
        else:
            order = np.lexsort((hs, -common))
            while left > 0:
                avail = order[(common - take)[order] > 0][:left]
                if avail.size == 0:
                    break
                take[avail] += 1
                left -= avail.size
        while left > 0:
            worse = np.maximum(load[a] + take, load[b] + take) - np.minimum(cap[a], cap[b])
            worse = worse + np.where((cap[a] == 0) | (cap[b] == 0), 1 << 40, 0)  # failed links
            k = int(np.lexsort((hs, worse))[0])
            take[k] += 1
            left -= 1
        load[a] += take
        load[b] += take
        touched[take > 0] = True
        out += [(a, b, int(k), int(take[k])) for k in np.flatnonzero(take)]
    return [np.array([o[i] for o in out], np.int64) for i in range(4)]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.integers(1, 6), st.integers(1, 3))
def test_greedy_kernel_matches_reference(seed: int, concentrate: bool, H: int, tau: int) -> None:
    """The compiled greedy gives exactly the NumPy formulation's split and loads (free links,
    pairs beyond them, partly loaded and failed links alike)."""
    from lumoscore.topology.kernels import greedy_assign

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    cap = rng.integers(0, tau + 1, size=(n, H)).astype(np.int64)
    load = rng.integers(0, tau + 1, size=(n, H)).astype(np.int64)
    k = int(rng.integers(0, 15))
    r = rng.integers(0, n, k).astype(np.int64)
    c = (r + rng.integers(1, n, k)) % n
    v = rng.integers(1, 2 * H * tau + 2, k).astype(np.int64)
    want_load = load.copy()
    want = _greedy_reference(r, c, v, cap, want_load, concentrate)
    got = greedy_assign(r, c, v, cap, load, concentrate)
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.tolist()
    assert (load == want_load).all()


def test_coo_triple_equals_matrix() -> None:
    """A demand given as COO entries (duplicates summed) splits exactly like the matrix."""
    spec = ClusterSpec(pods=3, k_leaf=4, k_spine=4, tau=2, gpus_per_server=2)
    L = random_L(spec, np.random.default_rng(5), 4, 1.0)
    r, c = np.nonzero(L)
    v = L[r, c]
    triple = (np.r_[r, r[:2]], np.r_[c, c[:2]], np.r_[v - np.r_[v[:2], 0 * v[2:]], v[:2]])
    base = heuristic_decomposition(np.zeros_like(L), spec)
    want = free_link_split(base, L, spec)
    for x, y in zip(free_link_split(base, triple, spec), want, strict=True):
        assert x.tolist() == y.tolist()


def test_auto_design_keeps_demand_off_failed_leaf_spine_pairs() -> None:
    """With failed links (capacity 0 at a leaf and spine), the design puts no requirement
    there while another spine has working links at both leaves."""
    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=2)
    rng = np.random.default_rng(3)
    for _ in range(20):
        L = random_L(spec, rng, 6, 1.0)
        cap = np.full((spec.leaves, spec.ocs_groups), spec.tau, np.int64)
        cap[rng.random(cap.shape) < 0.3] = 0
        t = design_logical_topology(L, spec, capacity=cap)
        r, c = np.nonzero(np.triu(L))
        for a, b in zip(r, c, strict=True):
            if ((cap[a] > 0) & (cap[b] > 0)).any():
                w = t.split_of(np.array([a]), np.array([b]))[0]
                assert not w[(cap[a] == 0) | (cap[b] == 0)].any()


def test_contention_free_is_max_contention_at_most_one() -> None:
    """The division-free check agrees with the contention levels it stands for, with and
    without failed links and over-full leaves (random demand, heuristic and greedy designs)."""
    spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=2)
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(60):
        L = random_L(spec, rng, int(rng.integers(2, 12)), float(rng.uniform(0.5, 2.0)))
        cap = np.full((spec.leaves, spec.ocs_groups), spec.tau, np.int64)
        cap[rng.random(cap.shape) < 0.2] = 0
        for t in (heuristic_decomposition(L, spec), design_logical_topology(L, spec, capacity=cap)):
            assert t.contention_free == (t.max_contention <= 1)
            seen.add(t.contention_free)
    assert seen == {True, False}


@given(st.data())
def test_merge_split_equals_a_sum_over_a_dictionary(data) -> None:
    from lumoscore.topology.kernels import merge_split

    n, H = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
    key = st.integers(0, n * n * H - 1)
    old = {k: data.draw(st.integers(1, 5)) for k in sorted(data.draw(st.sets(key, max_size=12)))}
    add = data.draw(st.lists(st.tuples(key, st.integers(-6, 6)), max_size=12))
    total = dict(old)
    for k, v in add:
        total[k] = total.get(k, 0) + v

    def cols(keys: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = np.array(keys, np.int64)
        return k // H // n, k // H % n, k % H

    a0, b0, h0 = cols(list(old))
    a, b, h = cols([k for k, _ in add])
    v = np.array([x for _, x in add], np.int64)
    up0 = np.arange(n * H, dtype=np.int64).reshape(n, H)
    down0 = up0[::-1].copy()
    ea, eb, eh, ev, up, down, ok = merge_split(
        a0, b0, h0, np.array(list(old.values()), np.int64), a, b, h, v, up0, down0, n, H
    )
    want = sorted((k, x) for k, x in total.items() if x != 0)
    assert ((ea * n + eb) * H + eh).tolist() == [k for k, _ in want]
    assert ev.tolist() == [x for _, x in want]
    assert ok == all(x >= 0 for x in total.values())
    up_ref, down_ref = up0.copy(), down0.copy()
    np.add.at(up_ref, (a, h), v)
    np.add.at(down_ref, (b, h), v)
    assert (up == up_ref).all() and (down == down_ref).all()
    assert (up0 == np.arange(n * H).reshape(n, H)).all()  # inputs untouched
