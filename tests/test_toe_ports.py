"""ToE around dead ports (lumoscore.toe.ports, PortModel.without_ports)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers_wiring import symmetric_topologies
from lumoscore.toe import configure
from lumoscore.toe.metrics import realized
from lumoscore.toe.model import PortModel
from lumoscore.toe.ports import fit_counts
from lumoscore.topology import ClusterSpec, build_wiring, verify_circuits


def _wiring(P: int, K: int, kind: str):
    spec = ClusterSpec(pods=P, k_leaf=1, k_spine=K, tau=1, gpus_per_server=1, ocs_ports=P)
    return build_wiring(spec, kind)


def _on_dead(circuits: np.ndarray, dead: np.ndarray) -> bool:
    c = circuits
    return bool((dead[c[:, 0], c[:, 2], c[:, 3]] | dead[c[:, 0], c[:, 4], c[:, 5]]).any())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topo=symmetric_topologies(6, 6),
    kind=st.sampled_from(["cross", "uniform"]),
    data=st.data(),
)
def test_configurations_avoid_dead_ports_and_ilp_keeps_at_least_as_many(topo, kind, data):
    C, K = topo
    P = C.shape[0]
    w = _wiring(P, K, kind)
    dead = np.array(data.draw(st.lists(st.booleans(), min_size=P * K, max_size=P * K)))
    dead = dead.reshape(1, P, K)
    fast = "mdmcf" if kind == "cross" else "helios"
    before = configure(C, w, solver=fast).circuits
    got = {}
    for solver in (fast, "ilp"):
        pm = PortModel.from_wiring(w, mirror=solver == "mdmcf").without_ports(dead)
        res = configure(C, pm, solver=solver, current=before)
        c = res.circuits
        assert not _on_dead(c, dead)
        assert verify_circuits(w, c, None) == []
        real = realized(c, (1, P, P))[0]
        assert (real <= C).all()  # links stay on the demand's pod pairs
        got[solver] = (int(real.sum()), res.status)
    if got["ilp"][1] == "optimal":
        assert got["ilp"][0] >= got[fast][0]


def test_without_dead_ports_nothing_changes():
    w = _wiring(4, 4, "cross")
    C = np.array([[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 2], [1, 1, 2, 0]])
    pm = PortModel.from_wiring(w)
    a = configure(C, w).circuits
    b = configure(C, pm.without_ports(np.zeros((1, 4, 4), bool))).circuits
    assert np.array_equal(a, b)
    assert pm.without_ports(None).dead is None


def test_fit_moves_a_link_to_a_channel_with_working_ports_or_loses_it():
    w = _wiring(3, 4, "cross")
    pm = PortModel.from_wiring(w)
    x = np.zeros((1, pm.channels, 3, 3), dtype=np.int64)
    x[0, 0, 0, 1] = 1  # pod 0 forward -> pod 1 backward in channel 0
    dead = np.zeros((1, 3, 4), bool)
    dead[0, 0, pm.channel[0, 0] == 0] = True  # pod 0 loses both ports of channel 0
    y, lost = fit_counts(x, pm.without_ports(dead))
    assert lost == 0 and y[0, 0].sum() == 0 and y[0, 1, [0, 1], [1, 0]].sum() == 1
    dead[0, 0] = True  # every port of pod 0
    y, lost = fit_counts(x, pm.without_ports(dead))
    assert lost == 1 and y.sum() == 0
