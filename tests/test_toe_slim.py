"""Topology engineering on Slim Dual-link Uniform Wiring: the transceiver view, the solvers that
fit it (mdmcf, mcf, ilp) and the ones refused (bvn, helios), reconfiguration, and ``lumos toe``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from helpers_cli import run
from lumoscore.cli import build_app
from lumoscore.te.realize import DEFAULT_SOLVERS
from lumoscore.toe import configure, evaluate, random_demand, verify_configuration
from lumoscore.toe.errors import CurrentConfigError, WiringMismatchError
from lumoscore.toe.slim import (
    coupling_problems,
    to_lane_circuits,
    to_transceiver_circuits,
    transceiver_model,
)
from lumoscore.toe.solve import COUPLED_SOLVERS, check_solver
from lumoscore.topology import ClusterSpec, build_wiring, verify_circuits
from lumoscore.topology.realize import coarse_ltcr, coarse_part

SLIM = "slim-dual-link"


def slim(pods: int, k_spine: int, groups: int = 1):
    spec = ClusterSpec(
        pods=pods, k_leaf=groups, k_spine=k_spine, tau=1, gpus_per_server=1, ocs_ports=2 * pods
    )
    return build_wiring(spec, SLIM, circulators=True)


def demands(rng: np.random.Generator, H: int, P: int, K: int, even: bool) -> np.ndarray:
    out = []
    for _ in range(H):
        if even:
            out.append(2 * random_demand(P, K // 2, rng, fill=rng.uniform(0.3, 1.0)))
        else:
            out.append(random_demand(P, K, rng, fill=rng.uniform(0.3, 1.0)))
    return np.stack(out)


def check_valid(w, circuits: np.ndarray, C: np.ndarray) -> None:
    part = coarse_part(C, w)
    assert verify_circuits(w, circuits, part) == []
    assert verify_configuration(w, circuits, part) == []
    assert evaluate(circuits, C).ltcr == pytest.approx(coarse_ltcr(C, w))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    P=st.sampled_from([2, 3, 5, 7]),
    quarter=st.integers(1, 3),
    H=st.integers(1, 2),
    solver=st.sampled_from(COUPLED_SOLVERS),
    even=st.booleans(),
)
def test_solvers_realize_the_coarse_part_and_reconfigure(seed, P, quarter, H, solver, even):
    rng = np.random.default_rng(seed)
    K = 4 * quarter
    w = slim(P, K, H)
    C = demands(rng, H, P, K, even)
    res = configure(C, w, solver=solver, time_limit_s=20)
    check_valid(w, res.circuits, C)
    if even:
        assert evaluate(res.circuits, C).ltcr == 1.0
    odd = np.count_nonzero(np.triu(C % 2, 1))
    assert any("realized one link short" in n for n in res.notes) == bool(odd)
    # the same demand again from the configuration: nothing to rewire
    same = configure(C, w, solver=solver, current=res.circuits, time_limit_s=20)
    assert evaluate(same.circuits, C, current=res.circuits).rewired_circuits == 0
    # a new demand, reconfigured from the first configuration
    C2 = demands(rng, H, P, K, not even)
    res2 = configure(C2, w, solver=solver, current=res.circuits, time_limit_s=20)
    check_valid(w, res2.circuits, C2)


def test_ilp_is_exact_and_not_worse_than_mdmcf_at_rewiring() -> None:
    rng = np.random.default_rng(3)
    w = slim(6, 8, 2)
    C1, C2 = demands(rng, 2, 6, 8, False), demands(rng, 2, 6, 8, False)
    first = configure(C1, w, solver="mdmcf")
    m = configure(C2, w, solver="mdmcf", current=first.circuits)
    i = configure(C2, w, solver="ilp", current=first.circuits, time_limit_s=30)
    assert i.status == "optimal"
    for r in (m, i):
        check_valid(w, r.circuits, C2)
    rew = [evaluate(r.circuits, C2, current=first.circuits).rewired_circuits for r in (m, i)]
    assert rew[1] <= rew[0]


def test_solvers_that_do_not_fit_are_refused() -> None:
    w = slim(3, 4)
    for solver in COUPLED_SOLVERS:
        check_solver(w, solver)
    C = 2 * (np.ones((3, 3), dtype=np.int64) - np.eye(3, dtype=np.int64))
    for solver in ("bvn", "helios"):
        for call in (
            lambda s=solver: check_solver(w, s),
            lambda s=solver: configure(C, w, solver=s),
        ):
            with pytest.raises(WiringMismatchError) as exc:
                call()
            msg = str(exc.value)
            assert f"solver {solver!r} is a Uniform-Wiring heuristic" in msg
            assert msg.endswith("allowed solvers for this wiring: mdmcf, mcf, ilp")
    assert DEFAULT_SOLVERS[SLIM] == "mdmcf"


def test_transceiver_view_round_trip() -> None:
    w = slim(4, 8, 2)
    tm = transceiver_model(w)
    assert tm.paired and tm.ports == 4 and tm.channels == 2
    assert (tm.cap == 1).all()  # one A and one B transceiver per pod per OCS
    C = demands(np.random.default_rng(1), 2, 4, 8, True)
    res = configure(C, w)
    t = to_transceiver_circuits(w, res.circuits)
    assert len(t) == len(res.circuits) // 2
    assert (to_lane_circuits(w, t) == res.circuits).all()
    assert coupling_problems(w, res.circuits) == []


def test_current_configuration_must_be_coupled() -> None:
    w = slim(3, 4)
    C = 2 * (np.ones((3, 3), dtype=np.int64) - np.eye(3, dtype=np.int64))
    C[0, 1] = C[1, 0] = 0
    x = configure(C, w).circuits
    r = x[0]  # one link (a circuit and its mirror) without the other lanes' link
    mirror = x[(x[:, 2] == r[4]) & (x[:, 3] == r[5]) & (x[:, 4] == r[2]) & (x[:, 5] == r[3])]
    alone = np.concatenate([x[:1], mirror])
    assert len(alone) == 2
    with pytest.raises(CurrentConfigError, match=r"no twin .* \(coupling\)"):
        configure(C, w, current=alone)
    with pytest.raises(CurrentConfigError, match="ocs 1 out of range"):
        configure(C, w, current=[[0, 1, 0, 0, 1, 3]])


def test_even_even_pairs_of_a_current_configuration_are_replaced() -> None:
    """A coupled pair of two even transceivers is valid (realize_exact may build one) but
    outside the solvers' even-odd view: the new configuration replaces it and says so."""
    w = slim(2, 4)
    # transceiver 0 of pod 0 <-> transceiver 0 of pod 1 on OCS 0 (both even)
    cur = to_lane_circuits(w, [[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0]])
    assert verify_circuits(w, cur) == []
    C = np.array([[0, 2], [2, 0]])
    res = configure(C, w, current=cur)
    check_valid(w, res.circuits, C)
    assert any("not kept" in n for n in res.notes)


# ---- lumos toe ----------------------------------------------------------------------------
CLUSTER = """[cluster]
pods = 4
k_leaf = 4
k_spine = 8
tau = 2
gpus_per_server = 4
ocs_ports = 8
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(CLUSTER)
    C = np.array([[0, 3, 2, 1], [3, 0, 2, 2], [2, 2, 0, 4], [1, 2, 4, 0]])
    np.savetxt(tmp_path / "odd.csv", C, fmt="%d", delimiter=",")
    np.save(tmp_path / "even.npy", 2 * (np.stack([C, C]) // 2))
    return {"cluster": cluster, "odd": tmp_path / "odd.csv", "even": tmp_path / "even.npy"}


def test_cli_toe_happy_path(files, tmp_path, capsys) -> None:
    cfg = tmp_path / "cfg.json"
    base = ["toe", str(files["cluster"])]
    code, out, _ = run(
        [*base, str(files["even"]), "--wiring", SLIM, "--circulators", "--out", str(cfg), "--json"],
        capsys,
    )
    assert code == 0
    s = json.loads(out)
    assert s["wiring"] == SLIM and s["circulators"] is True and s["ltcr"] == 1.0
    assert s["groups"] == [0, 1] and s["notes"] == []
    w = build_wiring(ClusterSpec(**_cluster_fields()), SLIM, circulators=True)
    circuits = np.array(json.loads(cfg.read_text())["circuits"])
    assert verify_circuits(w, circuits, np.load(files["even"])) == []
    # one group, odd counts, alias, reconfigured from the file with the ILP
    odd = [*base, str(files["odd"]), "--wiring", "slim", "--circulators"]
    code, out, _ = run([*odd, "--solver", "ilp", "--json", "--current", str(cfg)], capsys)
    assert code == 0
    s = json.loads(out)
    assert s["ltcr"] == pytest.approx(1 - 4 / 28) and s["mrar"] is not None
    assert any("one link short" in n for n in s["notes"])
    code, out, _ = run(odd, capsys)
    assert code == 0 and "one link short" in " ".join(out.split())


def _cluster_fields() -> dict[str, int]:
    return dict(pods=4, k_leaf=4, k_spine=8, tau=2, gpus_per_server=4, ocs_ports=8)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--wiring", SLIM], "circulators: slim-dual-link wiring must be deployed with circ"),
        (["--wiring", "slim", "--circulators", "--solver", "bvn"], "solver 'bvn' is a Uniform"),
        (["--wiring", "slim", "--circulators", "--solver", "helios"], "allowed solvers for this"),
    ],
)
def test_cli_toe_bad_input_is_one_line(files, args, needle, capsys) -> None:
    code, out, err = run(["toe", str(files["cluster"]), str(files["odd"]), *args], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lumos: error:") and needle in lines[0]
    assert "Traceback" not in err


def test_cli_toe_help_names_the_new_wiring() -> None:
    res = CliRunner().invoke(build_app(), ["toe", "--help"], env={"COLUMNS": "200"})
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "slim = slim-dual-link; slim-dual-link needs" in text
    assert "(required by slim-dual-link)" in text
    assert "(slim-dual-link: mdmcf, mcf, ilp)" in text
