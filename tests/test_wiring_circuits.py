"""The circuit verifier catches every kind of violation of Cross-Wiring constraints (1)-(4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.topology import (
    ClusterSpec,
    build_wiring,
    logical_topology,
    ltcr,
    realize,
    verify_circuits,
)
from lumoscore.topology.circuits import (
    MAX_MESSAGES_PER_CHECK,
    as_circuits,
    ltcr_matrix,
    read_circuits,
    write_circuits,
)


def full_fan_out(P: int, K: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    C = np.zeros((P, P), dtype=np.int64)
    for _ in range(K // 2):
        order = rng.permutation(P)
        nxt = np.roll(order, -1)
        np.add.at(C, (order, nxt), 1)
        np.add.at(C, (nxt, order), 1)
    return C


@pytest.fixture(params=[("cross", False), ("cross", True), ("dual-link", False)])
def setup(request: pytest.FixtureRequest) -> tuple:
    kind, circ = request.param
    P, K = 6, 4
    spec = ClusterSpec(pods=P, k_leaf=2, k_spine=K, tau=1, gpus_per_server=1, ocs_ports=2 * P)
    w = build_wiring(spec, kind, circ)
    C = full_fan_out(P, K, seed=3)
    x = realize(C, w)
    assert verify_circuits(w, x, C) == []
    return w, x, C


def test_largest_full_fan_out_instances() -> None:
    P, K = 24, 16
    C = full_fan_out(P, K, seed=11)
    for kind, circ, ocs in (("cross", False, P), ("cross", True, P), ("dual-link", False, 2 * P)):
        spec = ClusterSpec(pods=P, k_leaf=2, k_spine=K, tau=1, gpus_per_server=1, ocs_ports=ocs)
        w = build_wiring(spec, kind, circ)
        x = realize(C, w)
        assert verify_circuits(w, x, C) == [] and ltcr(w, x, C) == 1.0


def test_tx_used_twice(setup: tuple) -> None:
    w, x, _C = setup
    # add a second circuit from an already used Tx, on its own OCS, to a free... any Rx
    row = x[0].copy()
    bad = np.vstack([x, row])
    msgs = verify_circuits(w, bad)
    g, o, tp, tk = row[:4]
    assert any(f"group {g}: Tx of pod {tp} port {tk} is used by 2 circuits" in m for m in msgs)
    assert any(f"OCS {o}, {o}" in m for m in msgs)


def test_rx_used_twice(setup: tuple) -> None:
    w, x, _C = setup
    # redirect a circuit to the Rx of another circuit on the same OCS
    same_ocs = np.flatnonzero((x[:, 0] == x[0, 0]) & (x[:, 1] == x[0, 1]))
    j = same_ocs[1]
    bad = x.copy()
    bad[j, 4:6] = x[0, 4:6]
    msgs = verify_circuits(w, bad)
    assert any(
        f"group {x[0, 0]}: Rx of pod {x[0, 4]} port {x[0, 5]} is used by 2 circuits" in m
        for m in msgs
    )


def test_tx_not_wired_to_the_ocs(setup: tuple) -> None:
    w, x, _C = setup
    bad = x.copy()
    bad[0, 1] = (x[0, 1] + 1) % w.ocs_per_group
    msgs = verify_circuits(w, bad)
    g, o, tp, tk = bad[0, :4]
    assert any(
        f"Tx of pod {tp} port {tk} is wired to OCS {x[0, 1]}, not OCS {o} (constraint (3))" in m
        for m in msgs
    )
    assert any(f"group {g}: circuit OCS {o} Tx pod {tp} port {tk}" in m for m in msgs)


def test_rx_not_wired_to_the_ocs(setup: tuple) -> None:
    w, x, _C = setup
    bad = x.copy()
    # move the Rx end to another port of the same pod whose Rx is on another OCS
    rp, _rk = x[0, 4], x[0, 5]
    other = next(k for k in range(w.ports) if w.rx_ocs[x[0, 0], rp, k] != x[0, 1])
    bad[0, 5] = other
    msgs = verify_circuits(w, bad)
    assert any(
        f"Rx of pod {rp} port {other} is wired to OCS {w.rx_ocs[x[0, 0], rp, other]}, "
        f"not OCS {x[0, 1]} (constraint (3))" in m
        for m in msgs
    )


def test_missing_mirror(setup: tuple) -> None:
    w, x, C = setup
    bad = x[1:]
    msgs = verify_circuits(w, bad)
    g, _o, tp, tk, rp, rk = x[0]
    sym = [m for m in msgs if "constraint (4)" in m]
    assert len(sym) == 1
    assert f"group {g}: circuit OCS" in sym[0]
    assert f"no mirror circuit Tx pod {tp} port {tk} -> Rx pod {rp} port {rk}" in sym[0]
    # without C only the symmetry violation is reported; with C the lost link as well
    assert len(msgs) == 1
    with_c = verify_circuits(w, bad, C)
    assert any(f"pods {tp} -> {rp} have {C[tp, rp] - 1} circuits" in m for m in with_c)


def test_logical_topology_mismatch(setup: tuple) -> None:
    w, x, C = setup
    C2 = C.copy()
    i, j = np.argwhere(C > 0)[0]
    C2[i, j] += 1
    C2[j, i] += 1
    msgs = verify_circuits(w, x, C2)
    assert len(msgs) == 2 * w.groups  # (i, j) and (j, i) in every group
    assert (
        f"group 0: pods {i} -> {j} have {C[i, j]} circuits, the logical topology asks for"
        in (msgs[0])
    )
    # a per-group target: group 1 asks for nothing
    C3 = np.stack([C, np.zeros_like(C)])
    assert all(m.startswith("group 1: pods") for m in verify_circuits(w, x, C3))


def test_out_of_range_rows(setup: tuple) -> None:
    w, x, _C = setup
    bad = np.vstack([x, [[0, 99, 0, 0, 1, 1]], [[0, 0, 0, 0, w.pods, 0]]])
    msgs = verify_circuits(w, bad)
    assert sum("out of range" in m for m in msgs) == 2
    assert (logical_topology(w, bad) == logical_topology(w, x)).all()


def test_circulator_circuit_must_join_n_and_s() -> None:
    spec = ClusterSpec(pods=4, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=4)
    w = build_wiring(spec, "uniform", circulators=True)  # pods 0, 2 on N; 1, 3 on S
    ok = np.array([[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0]])
    assert verify_circuits(w, ok) == []
    bad = np.array([[0, 0, 0, 0, 2, 0], [0, 0, 2, 0, 0, 0]])
    msgs = verify_circuits(w, bad)
    assert len(msgs) == 2 and all("both half-ports are on the N side" in m for m in msgs)


def test_message_count_is_capped(setup: tuple) -> None:
    w, x, _C = setup
    bad = x[x[:, 1] % 2 == 0]  # drop many mirrors at once
    msgs = verify_circuits(w, bad)
    assert len([m for m in msgs if "constraint (4)" in m]) <= MAX_MESSAGES_PER_CHECK


def test_ltcr_closed_form(setup: tuple) -> None:
    w, x, C = setup
    # drop one bidirectional link (both circuits): LTCR = 1 - 2 / sum(C) per group
    g, _o, tp, tk, rp, rk = x[0]
    mirror = np.flatnonzero(
        (x[:, 0] == g) & (x[:, 2] == rp) & (x[:, 3] == rk) & (x[:, 4] == tp) & (x[:, 5] == tk)
    )
    keep = np.ones(len(x), dtype=bool)
    keep[[0, *mirror.tolist()]] = False
    H = w.groups
    assert ltcr(w, x[keep], C) == pytest.approx(1 - 2 / (H * C.sum()))
    assert ltcr(w, as_circuits([]), C) == 0.0
    assert ltcr_matrix(np.zeros((2, 2)), np.zeros((2, 2))) == 1.0
    # over-provisioning does not raise the LTCR above 1
    assert ltcr_matrix([[0, 3], [3, 0]], [[0, 1], [1, 0]]) == 1.0


def test_bad_circuit_arrays() -> None:
    with pytest.raises(PreconditionError, match=r"shape \(n, 6\)"):
        as_circuits(np.zeros((3, 5)))
    with pytest.raises(PreconditionError, match="integers"):
        as_circuits(np.full((1, 6), 0.5))
    assert as_circuits(np.zeros((2, 6))).dtype == np.int64


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_circuit_files_round_trip(suffix: str, setup: tuple, tmp_path: Path) -> None:
    w, x, C = setup
    write_circuits(tmp_path / f"c{suffix}", x)
    back = read_circuits(tmp_path / f"c{suffix}")
    assert (back == x).all() and verify_circuits(w, back, C) == []
    write_circuits(tmp_path / f"empty{suffix}", as_circuits([]))
    assert read_circuits(tmp_path / f"empty{suffix}").shape == (0, 6)
    (tmp_path / "bad.csv").write_text("a,b\n")
    with pytest.raises(ConfigError, match="CSV header"):
        read_circuits(tmp_path / "bad.csv")
