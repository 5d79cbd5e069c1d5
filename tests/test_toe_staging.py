"""Staged reconfiguration (LumosCore App. A.8) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import InfeasibleError
from lumoscore.toe import configure, random_demands
from lumoscore.toe.staging import circuit_loss, staged_plan
from lumoscore.topology import ClusterSpec, build_wiring


def _fewest_stages(loss: np.ndarray, cap: np.ndarray) -> int:
    """Brute force: fewest stages (from 2) of the groups with loss."""
    groups = np.flatnonzero(loss.sum(axis=0))
    n = len(groups)
    for theta in range(min(2, n), n + 1):
        for where in itertools.product(range(theta), repeat=n):
            loads = np.zeros((theta, loss.shape[0]))
            for k, w in enumerate(where):
                loads[w] += loss[:, groups[k]]
            if (loads <= cap + 1e-9).all():
                return theta
    raise AssertionError("unreachable")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), H=st.integers(1, 6), A=st.integers(1, 4))
def test_plan_is_admissible_and_fewest(seed: int, H: int, A: int) -> None:
    rng = np.random.default_rng(seed)
    loss = rng.integers(0, 4, size=(A, H))
    total = loss.sum(axis=1) + rng.integers(1, 6, size=A)
    iota = float(rng.uniform(0.3, 1.0))
    cap = iota * total
    if (loss > cap[:, None]).any():
        with pytest.raises(InfeasibleError, match="raise iota"):
            staged_plan(loss, total, iota)
        return
    plan = staged_plan(loss, total, iota)
    staged = sorted(h for s in plan.stages for h in s)
    assert staged == np.flatnonzero(loss.sum(axis=0)).tolist()
    for s in plan.stages:
        assert (loss[:, list(s)].sum(axis=1) <= cap + 1e-9).all()
    assert plan.max_loss_share <= iota + 1e-12
    if staged:
        assert len(plan.stages) == _fewest_stages(loss, cap)


def test_circuit_loss_of_a_reconfiguration() -> None:
    spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
    w = build_wiring(spec, "cross")
    rng = np.random.default_rng(1)
    C1, C2 = random_demands(4, 4, 4, rng), random_demands(4, 4, 4, rng)
    C2[0] = C1[0]  # group 0 unchanged
    cur = configure(C1, w).circuits
    new = configure(C2, w, current=cur).circuits
    loss, total = circuit_loss(cur, new, groups=4, pods=4)
    assert (loss[:, 0] == 0).all() and (total == C1.sum(axis=(0, 2))).all()
    plan = staged_plan(loss, total, iota=0.5)
    assert 0 not in {h for s in plan.stages for h in s}
