"""The certified first-order TE (lumoscore.te.fast, min_mlu(method="certified")): its bound
never above the exact LP's optimum, its routing's MLU never below, the gap reached, and
both numbers recomputed independently of the solver."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, InfeasibleError
from lumoscore.te import facebook_traffic, min_mlu
from lumoscore.te.fast import certified_mlu, lower_bound, path_loads


@settings(max_examples=60, deadline=None)
@given(
    pods=st.integers(2, 8),
    seed=st.integers(0, 2**16),
    density=st.floats(0.3, 1.0),
    eps=st.sampled_from([1e-2, 1e-3, 1e-5]),
)
def test_bound_and_routing_bracket_the_exact_optimum(pods, seed, density, eps) -> None:
    rng = np.random.default_rng(seed)
    cap = rng.choice([0.0, 1.0, 2.0, 4.0, 8.0], size=(pods, pods))
    cap[rng.random((pods, pods)) > density] = 0.0
    cap = np.triu(cap, 1) + np.triu(cap, 1).T
    tm = rng.exponential(1.0, (pods, pods)) * (rng.random((pods, pods)) < 0.7)
    np.fill_diagonal(tm, 0.0)
    try:
        exact = min_mlu(cap, tm).mlu
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            min_mlu(cap, tm, method="certified")
        return
    res = min_mlu(cap, tm, method="certified", eps=eps)
    assert res.lower_bound <= exact * (1 + 1e-9) + 1e-12
    assert res.mlu >= exact * (1 - 1e-9) - 1e-12
    if exact > 0:
        assert res.gap <= eps
        assert (res.load <= res.mlu * cap + 1e-9).all()
    # the certificate and the routing, checked without the solver's own bookkeeping
    r = certified_mlu(cap, tm, eps=eps)
    if exact > 0:
        assert lower_bound(cap, tm, r.weights) == pytest.approx(r.lower_bound, rel=1e-9)
        load = path_loads(cap, tm, r.split)
        on = cap > 0
        assert (load[on] / cap[on]).max() == pytest.approx(r.mlu, rel=1e-9)
        live = tm > 0
        assert np.allclose(r.split.sum(axis=2)[live], 1.0) and (r.split >= 0).all()


def test_the_benchmark_snapshots_match_the_lp() -> None:
    """Two snapshots of ``benchmarks/te.py``'s set-up at 16 pods (the LP is quick there)."""
    P = 16
    cap = 8 * (np.ones((P, P)) - np.eye(P))
    seq = facebook_traffic("hadoop", P, snapshots=2, seed=1, total=0.3 * cap.sum())
    for tm in seq:
        exact = min_mlu(cap, tm).mlu
        res = min_mlu(cap, tm, method="certified", eps=1e-6)
        assert res.lower_bound <= exact * (1 + 1e-9) and res.mlu >= exact * (1 - 1e-9)
        assert res.mlu == pytest.approx(exact, rel=1e-6)


def test_eps_is_checked() -> None:
    cap = np.array([[0, 1.0], [1.0, 0]])
    for bad in (0.0, 1.0, -1e-3):
        with pytest.raises(ConfigError, match="eps"):
            min_mlu(cap, cap, method="certified", eps=bad)
    res = min_mlu(cap, np.zeros((2, 2)), method="certified")
    assert res.mlu == 0.0 and res.gap == 0.0
