"""The §II.D ILP (HiGHS) as an independent reference for the heuristic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import PreconditionError
from lumoscore.tdm.grouping import hill_climb
from lumoscore.tdm.ilp import solve_ilp
from lumoscore.tdm.models import LLAMA3, Job, Network, Placement
from lumoscore.tdm.ring import is_single_ring
from lumoscore.tdm.schedule import build_instance, evaluate_grouping
from lumoscore.tdm.topology import ports_used
from lumoscore.tdm.workload import random_jobs

#: Largest relative gap heuristic / ILP optimum accepted on the random small instances below
#: (observed: at most about 4 %, from reconfigurations the ILP avoids by choosing topologies
#: that Alg. 2 does not).
GAP_BOUND = 0.25


def _instance(seed: int):
    rng = np.random.default_rng(seed)
    net = Network(
        n_pods=3,
        pods_per_group=3,
        gpus_per_pod=8,
        ports_per_pod=int(rng.integers(4, 6)),
        reconfig_s=float(rng.choice([0.0, 0.01])),
    )
    jobs = random_jobs(
        int(rng.integers(1, 4)),
        rng,
        models=("1B", "3B"),
        degree_min=2,
        degree_max=4,
        tokens=int(rng.choice([32, 128, 512])),
    )
    return build_instance(net, jobs)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_heuristic_within_reported_gap_of_ilp_optimum(seed: int) -> None:
    inst = _instance(seed)
    heur = hill_climb(inst).schedule
    opt = solve_ilp(inst, time_limit_s=60)
    assert opt.status == "optimal"
    gap = heur.round_s / opt.round_s - 1.0
    assert gap >= -1e-6  # the ILP is a lower bound on every feasible schedule
    assert gap <= GAP_BOUND
    # The heuristic's schedule, fixed in the ILP, is feasible there and costs the same:
    # the two models agree on Eqs. (2)(3)(6)(7) and the reconfiguration rule.
    fixed = solve_ilp(inst, fix_schedule=heur)
    assert fixed.round_s == pytest.approx(heur.round_s, rel=1e-6)
    # The ILP's own solution obeys Eq. 6 and Eq. 7.
    assert (ports_used(opt.links) <= inst.network.ports_per_pod).all()
    for (job, _t), edges in opt.rings.items():
        assert is_single_ring(edges, inst.ring_pods[job])
    # For the ILP's grouping, Alg. 2/3 topologies are feasible ILP points: never below optimum.
    assert evaluate_grouping(inst, opt.grouping).round_s >= opt.round_s * (1 - 1e-6)


@pytest.mark.parametrize(
    "jobs",
    [
        [Job("ps", LLAMA3["3B"], 4, tokens=64)],
        [Job("rar", LLAMA3["1B"], 3, tokens=256)],
        [Job("alltoall", LLAMA3["1B"], 2, tokens=64)],
        [Job("ps", LLAMA3["1B"], 2, tokens=64), Job("rar", LLAMA3["1B"], 2, tokens=64)],
    ],
    ids=["one-ps", "one-rar", "one-a2a-two-pods", "two-pods-each"],
)
def test_trivial_instances_heuristic_equals_ilp(jobs: list[Job]) -> None:
    net = Network(n_pods=3, pods_per_group=3, gpus_per_pod=8, ports_per_pod=5, reconfig_s=0.01)
    inst = build_instance(net, jobs)
    heur = hill_climb(inst).schedule
    opt = solve_ilp(inst)
    assert heur.round_s == pytest.approx(opt.round_s, rel=1e-6)


def test_no_oxc_traffic_round_is_compute_plus_tor() -> None:
    net = Network(n_pods=3, pods_per_group=3, gpus_per_pod=8, ports_per_pod=4)
    jobs = [Job("ps", LLAMA3["1B"], 2, tokens=16), Job("alltoall", LLAMA3["1B"], 2, tokens=16)]
    placements = [Placement(0, np.array([2, 0, 0]), ps_pod=0), Placement(0, np.array([0, 2, 0]))]
    inst = build_instance(net, jobs, placements)
    heur = hill_climb(inst).schedule
    opt = solve_ilp(inst)
    assert heur.round_s == pytest.approx(opt.round_s, rel=1e-6)
    assert not heur.links.any() and heur.reconfig_s == 0.0


def test_ilp_with_fixed_grouping_lower_bounds_that_grouping() -> None:
    inst = _instance(4)
    for bits in range(2**inst.n_jobs):
        g = np.array([(bits >> a) & 1 for a in range(inst.n_jobs)], dtype=np.int8)
        res = solve_ilp(inst, grouping=g)
        np.testing.assert_array_equal(res.grouping, g)
        assert res.round_s <= evaluate_grouping(inst, g).round_s * (1 + 1e-6)


def test_ilp_refuses_large_instances() -> None:
    inst = build_instance(Network(), [Job("ps", LLAMA3["1B"], 2)])
    with pytest.raises(PreconditionError, match="pod pairs"):
        solve_ilp(inst)
