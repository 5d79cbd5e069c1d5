"""Optical power budget: Cross-Wiring §2.1 and Table 2."""

from __future__ import annotations

import numpy as np
import pytest

from lumoscore.errors import ConfigError
from lumoscore.hardware.optics import (
    OCS_LOSS_POINTS,
    TRANSCEIVERS,
    Transceiver,
    check_power_budget,
    get_transceiver,
    ocs_insertion_loss_db,
)


def test_table2_transceivers() -> None:
    budgets = {name: t.power_budget_db for name, t in TRANSCEIVERS.items()}
    assert budgets == {"2xLR4": 6.3, "8xFR": 4.0, "2xFR4": 4.0, "DR8": 3.0, "SR8": 1.8}
    assert get_transceiver("sr8").fiber_mode == "multi"
    assert get_transceiver("2×FR4").max_distance_m == 2000
    with pytest.raises(ConfigError, match="unknown module 'QSFP'; allowed: 2xLR4"):
        get_transceiver("QSFP")


def test_ocs_loss_model_hits_the_reported_points_and_is_monotone() -> None:
    for ports, loss in OCS_LOSS_POINTS:
        assert ocs_insertion_loss_db(ports) == (loss, False)
    losses = np.array([ocs_insertion_loss_db(n)[0] for n in range(1, 5000, 7)])
    assert (np.diff(losses) >= 0).all()
    assert ocs_insertion_loss_db(4400) == (6.0, True)
    with pytest.raises(ConfigError):
        ocs_insertion_loss_db(0)


def test_sr8_fails_with_a_320_port_ocs() -> None:
    r = check_power_budget("SR8", 320)
    assert not r.ok and r.status == "over"
    assert r.loss_db == 3.0 and r.headroom_db == pytest.approx(-1.2)
    assert r.warning is not None and "SR8" in r.warning and "exceeds the budget" in r.warning


def test_2xfr4_passes_without_circulators() -> None:
    r = check_power_budget("2xFR4", 320)
    assert r.ok and r.status == "ok" and r.warning is None
    assert r.headroom_db == pytest.approx(1.0) and r.circulator_loss_db == 0.0


def test_worked_example_of_section_2_1_is_at_the_budget() -> None:
    """CALIENT 320x320 (3 dB) + 2 circulator passes of 0.5 dB ~ 4 dB = the 2xFR4 budget."""
    r = check_power_budget("2xFR4", 320, circulators=True)
    assert r.loss_db == pytest.approx(4.0) and r.budget_db == 4.0
    assert r.status == "at-limit" and r.headroom_db == pytest.approx(0.0)
    assert r.warning is not None and "at the limit" in r.warning
    assert r.worst_loss_db == pytest.approx(4.4)
    worst = check_power_budget("2xFR4", 320, circulators=True, circulator_loss_db=0.7)
    assert not worst.ok and worst.status == "over"


def test_given_loss_margin_and_custom_module() -> None:
    r = check_power_budget("DR8", 1100, ocs_loss_db=1.5, margin_db=0.5)
    assert r.ocs_loss_source == "given" and r.loss_db == 1.5 and r.headroom_db == 1.0
    assert r.status == "ok"
    custom = Transceiver("lab", "single", 10.0, 0.0, 100.0)
    assert check_power_budget(custom, 2200).ocs_loss_source == "model-extrapolated"
    assert "extrapolated" in (check_power_budget(custom, 2200).warning or "")
    over = check_power_budget("DR8", 1100, ocs_loss_db=1.5, margin_db=2.0)  # 1.5 + 2 > 3
    assert over.status == "over" and over.headroom_db == -0.5
    assert over.warning is not None
    assert "< path loss 1.5 dB (OCS 1.5 dB) + margin 2.0 dB: " in over.warning
    with pytest.raises(ConfigError, match="ocs_loss_db must be"):
        check_power_budget("DR8", 320, ocs_loss_db=-1)
    with pytest.raises(ConfigError, match="margin_db must be"):
        check_power_budget("DR8", 320, margin_db=float("nan"))
