"""Cluster sizing against the LumosCore paper's Table 1 and closed forms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.hardware import (
    clos_max_gpus,
    lumoscore_max_gpus,
    max_gpus,
    radix,
    reach,
    sizing_table,
)

# Table 1 cells as printed in the paper (thousands of GPUs), keyed by (row, chip, port).
TABLE1 = {
    ("clos-2tier", 12.8, 200): 2.05,
    ("clos-2tier", 12.8, 1600): 0.03,
    ("clos-2tier", 25.6, 800): 0.51,
    ("clos-2tier", 51.2, 200): 32.77,
    ("clos-2tier", 51.2, 1600): 0.51,
    ("clos-3tier", 12.8, 200): 65.54,
    ("clos-3tier", 12.8, 1600): 0.13,
    ("clos-3tier", 25.6, 400): 65.54,
    ("clos-3tier", 51.2, 200): 4194.3,
    ("clos-3tier", 51.2, 1600): 8.19,
    ("clos-3tier-15:1", 12.8, 200): 122.88,
    ("clos-3tier-15:1", 12.8, 1600): 0.22,
    ("clos-3tier-15:1", 25.6, 800): 15.36,
    ("clos-3tier-15:1", 51.2, 200): 7864.32,
    ("clos-3tier-15:1", 51.2, 1600): 15.36,
    ("lumoscore-tau1", 12.8, 200): 524.29,
    ("lumoscore-tau1", 12.8, 1600): 8.19,
    ("lumoscore-tau1", 25.6, 400): 524.29,
    ("lumoscore-tau1", 51.2, 200): 8388.61,
    ("lumoscore-tau1", 51.2, 1600): 131.07,
}
# The paper truncates the LumosCore tau=2 row to whole thousands ("262.0k" for 262,144).
TABLE1_TAU2_TRUNCATED = {
    (12.8, 200): 262.0,
    (12.8, 1600): 4.0,
    (25.6, 200): 1048.0,
    (25.6, 800): 65.0,
    (25.6, 1600): 16.0,
    (51.2, 200): 4194.0,
    (51.2, 1600): 65.0,
}


@pytest.mark.parametrize(("key", "thousands"), sorted(TABLE1.items()))
def test_table1_cells(key: tuple[str, float, int], thousands: float) -> None:
    arch, chip, port = key
    assert round(max_gpus(arch, chip, port) / 1000, 2) == pytest.approx(thousands)


@pytest.mark.parametrize(("key", "thousands"), sorted(TABLE1_TAU2_TRUNCATED.items()))
def test_table1_tau2_row(key: tuple[float, int], thousands: float) -> None:
    chip, port = key
    assert max_gpus("lumoscore-tau2", chip, port) // 1000 == int(thousands)


def test_headline_ratio_lumoscore_vs_oversubscribed_clos() -> None:
    # §2.2: at 51.2T / 1.6T the 3-tier LumosCore is ~8.5x the 3-tier 15:1 Clos.
    ratio = max_gpus("lumoscore-tau1", 51.2, 1600) / max_gpus("clos-3tier-15:1", 51.2, 1600)
    assert ratio == pytest.approx(8.53, abs=0.01)


def test_sizing_table_shape_and_order() -> None:
    rows = sizing_table()
    assert len(rows) == 5 * 3 * 4
    assert rows[0].architecture == "clos-2tier"
    assert (rows[0].chip_tbps, rows[0].port_gbps) == (12.8, 200)


@given(half=st.integers(1, 256), tiers=st.integers(1, 5))
def test_nonblocking_clos_closed_form(half: int, tiers: int) -> None:
    r = 2 * half
    expected = r if tiers == 1 else 2 * half**tiers
    assert clos_max_gpus(r, tiers) == expected


@given(half=st.integers(1, 128), over=st.integers(1, 31), tiers=st.integers(2, 4))
def test_oversubscription_never_shrinks_and_splits_ports(half: int, over: int, tiers: int) -> None:
    r = 2 * half
    base = clos_max_gpus(r, tiers)
    big = clos_max_gpus(r, tiers, over)
    assert big >= base
    leaves = 2 * half ** (tiers - 1)
    down = big // leaves
    up = r - down
    assert big % leaves == 0 and up >= 1
    assert down <= over * up  # the ratio is never exceeded


@given(half=st.integers(1, 128), ocs=st.integers(1, 1100))
def test_lumoscore_formula(half: int, ocs: int) -> None:
    r = 2 * half
    assert lumoscore_max_gpus(r, 1, ocs) == ocs * half * half
    if half % 2 == 0:
        assert lumoscore_max_gpus(r, 2, ocs) == ocs * half * half // 2
        assert lumoscore_max_gpus(r, 2, ocs, psi=2) == (ocs // 2) * half * half // 2


def test_reach_matches_issue_example() -> None:
    # At 4k GPUs a 3-tier Clos of 25.6T chips must drop to 800G; LumosCore keeps 1.6T.
    by = {r.architecture: r for r in reach(4096, 25.6)}
    assert by["clos-3tier"].port_gbps == 800
    assert by["lumoscore-tau1"].port_gbps == 1600
    assert by["lumoscore-tau2"].port_gbps == 1600
    assert (by["clos-ntier"].port_gbps, by["clos-ntier"].tiers) == (1600, 4)
    for r in by.values():
        assert r.max_gpus is not None and r.max_gpus >= 4096


def test_reach_unreachable() -> None:
    by = {r.architecture: r for r in reach(10**9, 12.8, max_tiers=2)}
    assert by["clos-2tier"].port_gbps is None and by["clos-ntier"].tiers is None


def test_switches_an_architecture_cannot_be_built_from_give_zero() -> None:
    """A 2-port chip (0.4T at 200G) has K = 1, which tau = 2 does not divide; a 3-port chip
    (0.6T at 200G) has no even down/up split. Their cells are 0, the rest of the table is as
    usual, and the inverse question finds no speed for them."""
    rows = sizing_table([0.4, 0.6, 12.8], [200])
    by = {(r.architecture, r.chip_tbps): r.max_gpus for r in rows}
    assert by["lumoscore-tau2", 0.4] == 0 and by["lumoscore-tau1", 0.4] == 512
    assert by["clos-2tier", 0.4] == clos_max_gpus(2, 2)
    assert all(by[a, 0.6] == 0 for a in ("clos-2tier", "clos-3tier", "lumoscore-tau1"))
    assert by["lumoscore-tau2", 12.8] == max_gpus("lumoscore-tau2", 12.8, 200)
    found = {r.architecture: r for r in reach(8, 0.4, port_speeds_gbps=[200])}
    assert found["lumoscore-tau2"].port_gbps is None
    assert found["lumoscore-tau1"].port_gbps == 200
    with pytest.raises(ConfigError, match="tau"):
        max_gpus("lumoscore-tau2", 0.4, 200)  # the single question stays an error


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: radix(12.3, 200), "does not split"),
        (lambda: radix(-1, 200), "chip_tbps"),
        (lambda: radix(12.8, 0), "port_gbps"),
        (lambda: max_gpus("torus", 12.8, 200), "unknown architecture"),
        (lambda: clos_max_gpus(64, 0), "tiers"),
        (lambda: clos_max_gpus(64, 3, 0.5), "oversubscription"),
        (lambda: lumoscore_max_gpus(64, 3, 512), "tau"),
        (lambda: reach(0, 12.8), "target_gpus"),
    ],
)
def test_bad_input_names_the_field(call, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        call()
