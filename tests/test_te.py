"""Traffic engineering on realized topologies: the LP against an independent formulation and
closed forms, Cross against Uniform Wiring, traffic-matrix validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, InfeasibleError
from lumoscore.te import (
    check_traffic,
    full_mesh,
    gravity_traffic,
    min_mlu,
    min_mlu_edge_flows,
    realize,
)
from lumoscore.topology import ClusterSpec


@settings(max_examples=40, deadline=None)
@given(pods=st.integers(2, 6), seed=st.integers(0, 2**16), density=st.floats(0.3, 1.0))
def test_path_lp_equals_edge_flow_lp(pods: int, seed: int, density: float) -> None:
    rng = np.random.default_rng(seed)
    cap = rng.integers(0, 4, size=(pods, pods)).astype(float)
    cap[rng.random((pods, pods)) > density] = 0.0
    np.fill_diagonal(cap, 0.0)
    tm = rng.random((pods, pods)) * (rng.random((pods, pods)) < 0.6)
    np.fill_diagonal(tm, 0.0)
    try:
        res = min_mlu(cap, tm)
    except InfeasibleError:  # a pair without any path: both formulations must say so
        with pytest.raises(InfeasibleError):
            min_mlu_edge_flows(cap, tm)
        return
    assert res.mlu == pytest.approx(min_mlu_edge_flows(cap, tm), abs=1e-6, rel=1e-6)
    # the loads are feasible for the reported MLU and carry the demand
    assert (res.load <= res.mlu * cap + 1e-6).all()
    assert res.load.sum() >= tm.sum() - 1e-6  # two-hop traffic loads two links


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    traffic_exp=st.integers(-250, 250),
    cap_exp=st.integers(-5, 5),
    method=st.sampled_from(["full", "columns"]),
)
def test_the_mlu_scales_with_the_traffic(
    seed: int, traffic_exp: int, cap_exp: int, method: str
) -> None:
    """MLU(s D, c C) = (s / c) MLU(D, C) for any units: HiGHS's absolute tolerances gave 0 at
    1e-10 of the traffic, a third too much at 1e9 (columns), 'model error' from 1e20."""
    rng = np.random.default_rng(seed)
    cap = full_mesh(9, 4).sum(axis=0) * 400.0
    tm = gravity_traffic(9, seed=int(rng.integers(1000)), total=9 * 1200.0)[0]
    base = min_mlu(cap, tm, method=method).mlu  # type: ignore[arg-type]
    s, c = 10.0**traffic_exp, 10.0**cap_exp
    res = min_mlu(cap * c, tm * s, method=method)  # type: ignore[arg-type]
    assert res.mlu == pytest.approx(base * s / c, rel=1e-7)
    assert (res.load <= res.mlu * cap * c * (1 + 1e-6)).all()  # loads within the MLU
    assert res.load.sum() >= tm.sum() * s * (1 - 1e-9)  # and carrying the demand


def test_closed_forms() -> None:
    # one pair, direct link only (two pods): MLU = demand / capacity
    assert min_mlu([[0, 4.0], [4.0, 0]], [[0, 3.0], [0, 0]]).mlu == pytest.approx(0.75)
    # a triangle of unit links, demand 2 between two pods: half direct, half around
    tri = np.ones((3, 3)) - np.eye(3)
    res = min_mlu(tri, [[0, 2.0, 0], [0, 0, 0], [0, 0, 0]])
    assert res.mlu == pytest.approx(1.0) and res.direct_share == pytest.approx(0.5)
    # no demand, no load
    assert min_mlu(tri, np.zeros((3, 3))).mlu == 0.0
    with pytest.raises(InfeasibleError, match="pods 0 -> 1"):
        min_mlu(np.zeros((3, 3)), [[0, 1.0, 0], [0, 0, 0], [0, 0, 0]])


def test_cross_wiring_never_loses_mlu_to_uniform() -> None:
    """On the 9-pod full mesh of the paper's shape (8 OCS uplinks a spine), Uniform-ILP
    realizes 8/9 of the circuits (LTCR 0.889, the paper's); Cross realizes all, and its MLU
    is never above Uniform's on any snapshot."""
    spec = ClusterSpec(pods=9, k_leaf=8, k_spine=8, tau=1, gpus_per_server=1, ocs_ports=9)
    C = full_mesh(9, spec.ocs_groups)
    cross, uniform = realize(spec, C, "cross"), realize(spec, C, "uniform")
    assert cross.ltcr == 1.0 and uniform.ltcr == pytest.approx(8 / 9)
    assert (uniform.circuits <= cross.circuits).all()
    worse = 0
    for tm in gravity_traffic(9, snapshots=8, seed=3, total=40.0):
        a, b = min_mlu(cross.circuits, tm).mlu, min_mlu(uniform.circuits, tm).mlu
        assert a <= b + 1e-9
        worse += b > a + 1e-9
    assert worse > 0  # the lost circuits show


def test_equal_where_uniform_realizes_everything() -> None:
    """A logical topology Uniform Wiring realizes whole (LTCR 1) gives the same MLU."""
    spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
    C = np.zeros((spec.ocs_groups, 4, 4), np.int64)
    C[:, 0, 1] = C[:, 1, 0] = C[:, 2, 3] = C[:, 3, 2] = 1  # a matching per group
    cross, uniform = realize(spec, C, "cross"), realize(spec, C, "uniform")
    assert uniform.ltcr == 1.0
    tm = np.zeros((4, 4))
    tm[0, 1] = tm[3, 2] = 1.0
    assert min_mlu(cross.circuits, tm).mlu == pytest.approx(min_mlu(uniform.circuits, tm).mlu)


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        (np.ones(3), "shape"),
        (np.array([[0, -1.0], [0, 0]]), ">= 0"),
        (np.array([[0, np.inf], [0, 0]]), "finite"),
        (np.array([[1.0, 0], [0, 0]]), "diagonal"),
        ([["a", "b"], ["c", "d"]], "not numeric"),
    ],
)
def test_bad_traffic_matrices_name_the_problem(bad: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        check_traffic(bad)


def test_demand_topology_follows_the_traffic_within_the_ports() -> None:
    from lumoscore.te import demand_topology

    rng = np.random.default_rng(4)
    d = rng.random((6, 6))
    np.fill_diagonal(d, 0.0)
    d[0, 5] = d[5, 0] = 0.0  # a pair without demand gets no circuit
    C = demand_topology(d, groups=3, ports=4)
    assert C.shape == (3, 6, 6) and (np.transpose(C, (0, 2, 1)) == C).all()
    assert (C.sum(axis=2) <= 4).all()  # ports per pod and group
    total = C.sum(axis=0)
    assert total[0, 5] == 0 and (total[d + d.T > 0] >= 1).all()
    sym = np.triu(d + d.T, 1)
    heavy = np.unravel_index(np.argmax(sym), d.shape)
    light = np.unravel_index(np.argmin(np.where(sym > 0, sym, np.inf)), d.shape)
    assert total[heavy] > total[light]  # more demand, more circuits (ports permitting)


def test_read_traffic_and_the_cli(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from lumoscore.cli import build_app
    from lumoscore.te import read_traffic

    (tmp_path / "c.toml").write_text(
        "[cluster]\npods = 9\nk_leaf = 8\nk_spine = 8\ntau = 1\ngpus_per_server = 1\n"
        "ocs_ports = 9\n"
    )
    tms = gravity_traffic(9, snapshots=3, seed=5, total=100.0)
    np.save(tmp_path / "t.npy", tms)
    np.savetxt(tmp_path / "t.csv", tms[0], delimiter=",")
    assert np.allclose(read_traffic(tmp_path / "t.csv"), tms[0])
    runner = CliRunner()
    got = {}
    for wiring in ("cross", "uniform"):
        args = ["te", str(tmp_path / "c.toml"), str(tmp_path / "t.npy"), "--wiring", wiring,
                "--json"]  # fmt: skip
        res = runner.invoke(build_app(), args)
        assert res.exit_code == 0, res.output
        got[wiring] = json.loads(res.output)
    assert len(got["cross"]["mlu"]) == 3 and got["cross"]["ltcr"] == 1.0
    assert got["uniform"]["ltcr"] == pytest.approx(8 / 9)
    assert all(a <= b + 1e-9 for a, b in zip(got["cross"]["mlu"], got["uniform"]["mlu"],
                                              strict=True))  # fmt: skip
    bad = runner.invoke(build_app(), ["te", str(tmp_path / "c.toml"), str(tmp_path / "x.txt")])
    assert isinstance(bad.exception, ConfigError) and "must be .npy or .csv" in str(bad.exception)


@pytest.mark.filterwarnings("error")  # (no ComplexWarning)
def test_complex_traffic_is_refused_by_name(tmp_path, capsys) -> None:
    from helpers_cli import run

    (tmp_path / "c.toml").write_text(
        "[cluster]\npods = 4\nk_leaf = 8\nk_spine = 8\ntau = 1\ngpus_per_server = 1\n"
        "ocs_ports = 4\n"
    )
    tm = np.zeros((4, 4), dtype=complex)
    tm[0, 1] = 1 + 2j
    np.save(tmp_path / "t.npy", tm)
    code, out, err = run(["te", str(tmp_path / "c.toml"), str(tmp_path / "t.npy")], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"lumos: error: {tmp_path / 't.npy'}: complex entries (dtype complex128); allowed: "
        "real numbers >= 0\n"
    )
    with pytest.raises(ConfigError, match="complex entries"):
        check_traffic(tm.real + 0j)  # (even with no imaginary part)
