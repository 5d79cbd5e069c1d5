"""Max-min fair rates: textbook cases, theorem-style properties and an LP reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import PreconditionError
from lumoscore.sim import incidence, maxmin_rates
from lumoscore.sim.maxmin_lp import maxmin_rates_lp


def test_two_flows_share_a_link_equally() -> None:
    r = maxmin_rates(flow_links=[[0], [0]], capacity=[100.0])
    assert r.rates.tolist() == [50.0, 50.0]


def test_textbook_parking_lot() -> None:
    # Bertsekas & Gallager: a long flow over links 0..2 plus one short flow per link, C = 1.
    r = maxmin_rates(flow_links=[[0, 1, 2], [0], [1], [2]], capacity=[1.0, 1.0, 1.0])
    assert np.allclose(r.rates, [0.5, 0.5, 0.5, 0.5])


def test_textbook_unequal_capacities() -> None:
    # Flow 0 over links 0 and 1, flows 1,2 on link 0 (C=3), flow 3 on link 1 (C=10).
    r = maxmin_rates(flow_links=[[0, 1], [0], [0], [1]], capacity=[3.0, 10.0])
    assert np.allclose(r.rates, [1.0, 1.0, 1.0, 9.0])
    assert r.levels == 2


def test_rate_caps_release_bandwidth() -> None:
    r = maxmin_rates(flow_links=[[0], [0], [0]], capacity=[9.0], max_rate=[1.0, np.inf, 2.0])
    assert np.allclose(r.rates, [1.0, 6.0, 2.0])
    assert r.bottleneck.tolist()[0] == -1


def test_weighted_flow_counts_as_copies() -> None:
    # one row standing for 3 flows + one single flow on a 8 Gb/s link: 4 flows of 2 each
    r = maxmin_rates(flow_links=[[0], [0]], capacity=[8.0], weight=[3, 1])
    assert np.allclose(r.rates, [2.0, 2.0])


def test_unlimited_links_and_empty_inputs() -> None:
    r = maxmin_rates(flow_links=[[0, 1]], capacity=[np.inf, 5.0])
    assert r.rates.tolist() == [5.0]
    assert maxmin_rates(flow_links=[], capacity=[1.0]).rates.size == 0


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"flow_links": [[0]], "capacity": [0.0]}, "capacities must be > 0"),
        ({"flow_links": [[0]], "capacity": [1.0], "weight": [0]}, "weights"),
        ({"flow_links": [[]], "capacity": [1.0]}, "crosses no link"),
        ({"flow_links": [[0]], "capacity": [1.0], "eps": -1}, "eps"),
        ({"A": np.ones((1, 2)), "capacity": [1.0]}, "link columns"),
        ({"capacity": [1.0]}, "exactly one"),
    ],
)
def test_bad_input(kwargs: dict, needle: str) -> None:
    with pytest.raises(PreconditionError, match=needle):
        maxmin_rates(**kwargs)


@st.composite
def instances(draw: st.DrawFn, max_flows: int = 12, max_links: int = 8):
    n_links = draw(st.integers(1, max_links))
    n_flows = draw(st.integers(1, max_flows))
    paths = [
        sorted(draw(st.sets(st.integers(0, n_links - 1), min_size=1, max_size=min(4, n_links))))
        for _ in range(n_flows)
    ]
    cap = draw(
        st.lists(
            st.sampled_from([1.0, 2.0, 3.0, 10.0, 0.5, 7.25]), min_size=n_links, max_size=n_links
        )
    )
    weight = draw(st.lists(st.integers(1, 4), min_size=n_flows, max_size=n_flows))
    caps = draw(
        st.lists(
            st.sampled_from([np.inf, np.inf, 0.3, 1.0, 4.0]), min_size=n_flows, max_size=n_flows
        )
    )
    return paths, np.array(cap), np.array(weight, dtype=float), np.array(caps)


@settings(max_examples=60, deadline=None)
@given(instances())
def test_matches_lp_reference(inst) -> None:
    paths, cap, weight, caps = inst
    fast = maxmin_rates(flow_links=paths, capacity=cap, weight=weight, max_rate=caps).rates
    ref = maxmin_rates_lp(flow_links=paths, capacity=cap, weight=weight, max_rate=caps)
    assert np.allclose(fast, ref, rtol=0, atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(instances(max_flows=40, max_links=15))
def test_feasible_and_every_flow_bottlenecked(inst) -> None:
    paths, cap, weight, caps = inst
    res = maxmin_rates(flow_links=paths, capacity=cap, weight=weight, max_rate=caps)
    A = incidence(paths, cap.size)
    load = res.link_load(A, weight)
    assert np.all(load <= cap * (1 + 1e-12) + 1e-12)
    # Max-min optimality: each flow is at its cap, or crosses a saturated link on which no
    # flow has a larger rate (the bottleneck characterisation).
    for f, links in enumerate(paths):
        if res.rates[f] >= caps[f] - 1e-12:
            continue
        ok = any(
            load[l] >= cap[l] * (1 - 1e-9)
            and all(res.rates[g] <= res.rates[f] + 1e-9 for g, p in enumerate(paths) if l in p)
            for l in links
        )
        assert ok, f"flow {f} has no bottleneck link"


@settings(max_examples=60, deadline=None)
@given(instances(max_flows=30, max_links=10))
def test_weights_equal_replicated_flows(inst) -> None:
    paths, cap, weight, caps = inst
    res = maxmin_rates(flow_links=paths, capacity=cap, weight=weight, max_rate=caps).rates
    rep = np.repeat(np.arange(len(paths)), weight.astype(int))
    flat = maxmin_rates(flow_links=[paths[i] for i in rep], capacity=cap, max_rate=caps[rep]).rates
    assert np.allclose(res[rep], flat, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(instances(max_flows=40, max_links=15), st.sampled_from([0.01, 0.1, 0.5]))
def test_approximate_mode_is_feasible_and_close(inst, eps: float) -> None:
    paths, cap, weight, caps = inst
    exact = maxmin_rates(flow_links=paths, capacity=cap, weight=weight, max_rate=caps)
    approx = maxmin_rates(flow_links=paths, capacity=cap, weight=weight, max_rate=caps, eps=eps)
    A = incidence(paths, cap.size)
    assert approx.eps == eps
    assert np.all(approx.link_load(A, weight) <= cap * (1 + 1e-12) + 1e-12)
    assert approx.levels <= exact.levels
    # the smallest rate (the max-min objective) is within a factor 1+eps of the exact one
    assert approx.rates.min() * (1 + eps) >= exact.rates.min() * (1 - 1e-12)
    # every flow is within 1+eps of its cap, or crosses a link loaded to within 1+eps of its
    # capacity on which no flow is faster (the grouped bottleneck characterisation)
    load = approx.link_load(A, weight)
    r = approx.rates
    for f, links in enumerate(paths):
        if r[f] * (1 + eps) >= caps[f] * (1 - 1e-12):
            continue
        ok = any(
            load[l] * (1 + eps) >= cap[l] * (1 - 1e-9)
            and all(r[g] <= r[f] * (1 + 1e-9) for g, p in enumerate(paths) if l in p)
            for l in links
        )
        assert ok, f"flow {f} has no bottleneck link within 1+eps"


def test_dense_and_sparse_incidence_agree() -> None:
    rng = np.random.default_rng(7)
    A = (rng.random((50, 20)) < 0.2).astype(float)
    A[A.sum(1) == 0, 0] = 1.0
    cap = rng.uniform(1, 10, 20)
    a = maxmin_rates(A, cap).rates
    b = maxmin_rates(sp.csr_array(A), cap).rates
    assert np.array_equal(a, b)
