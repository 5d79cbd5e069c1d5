"""Fabric presets: port speeds from the sizing formulas, names and errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lumoscore.errors import ConfigError
from lumoscore.fabric import PRESETS, BestFabric, ClosFabric, make_fabric
from lumoscore.fabric.presets import LUMOSCORE_PRESETS, clos_port_speed
from lumoscore.hardware.sizing import clos_max_gpus, reach


@pytest.mark.parametrize(
    ("name", "port_gbps", "tiers", "radix"),
    [
        ("clos-25.6T-3tier", 800.0, 3, 32),
        ("clos-51.2T-3tier", 1600.0, 3, 32),
        ("clos-25.6T-4tier", 1600.0, 4, 16),
    ],
)
def test_paper_presets_at_4096(name: str, port_gbps: float, tiers: int, radix: int) -> None:
    fab = make_fabric(name, 4096)
    assert isinstance(fab, ClosFabric)
    assert (fab.port_gbps, fab.tiers, fab.radix) == (port_gbps, tiers, radix)
    assert fab.name == name and fab.gpus == 4096
    assert np.all(fab.capacity_bps == port_gbps * 1e9)
    assert fab.routing == "probing" and not fab.isolating  # (the paper's §6.2 default)


@pytest.mark.parametrize("gpus", [512, 2048, 4096, 8192, 16384])
@pytest.mark.parametrize("chip", [25.6, 51.2])
def test_port_speed_agrees_with_sizing_reach(gpus: int, chip: float) -> None:
    for r in reach(gpus, chip, architectures=("clos-2tier", "clos-3tier")):
        tiers = int(r.architecture[5])
        if r.port_gbps is None:
            with pytest.raises(ConfigError):
                clos_port_speed(chip, tiers, gpus)
        else:
            speed, rad = clos_port_speed(chip, tiers, gpus)
            assert speed == r.port_gbps and clos_max_gpus(rad, tiers) == r.max_gpus


def test_best_and_generic_names() -> None:
    best = make_fabric("best", 64)
    assert isinstance(best, BestFabric) and best.port_gbps == 1600.0 and best.isolating
    ls = make_fabric("leaf-spine-51.2T", 512, routing="source", seed=4)
    assert isinstance(ls, ClosFabric)
    assert (ls.tiers, ls.port_gbps, ls.routing, ls.seed) == (2, 1600.0, "source", 4)
    o = make_fabric("CLOS-51.2t-3tier-2:1", 4608)
    assert isinstance(o, ClosFabric)
    assert o.name == "clos-51.2T-3tier-2:1" and o.uplinks == 11 and o.oversubscription == 2.0
    rail = make_fabric("clos-51.2T-3tier", 4096, rail_optimized=True)
    assert isinstance(rail, ClosFabric) and rail.rail_optimized


def test_errors_name_the_preset_and_list_known_names() -> None:
    with pytest.raises(ConfigError, match="unknown fabric preset 'nope'") as exc:
        make_fabric("nope", 4096)
    for name in PRESETS:
        assert name in str(exc.value)
    for name in LUMOSCORE_PRESETS:  # built by the LumosCore fabric (tests/test_fabric_lumos.py)
        assert make_fabric(name, 4096).gpus == 4096
    with pytest.raises(ConfigError, match=r"clos-25\.6T-2tier.*cannot hold gpus=100000"):
        make_fabric("clos-25.6T-2tier", 100000)
    with pytest.raises(ConfigError, match="tiers must be 2, 3 or 4"):
        make_fabric("clos-51.2T-5tier", 4096)
    for seed in (-1, 1.5, True):  # (NumPy's SeedSequence: "expected non-negative integer")
        with pytest.raises(ConfigError, match=f"seed must be an integer >= 0, got {seed}"):
            make_fabric("clos-51.2T-3tier", 512, seed=seed)
    for name in ("clos-0T-3tier", "leaf-spine-0.1T"):  # a chip too small for any Clos
        with pytest.raises(ConfigError, match="fewer than 4 ports at every standard port speed"):
            make_fabric(name, 512)
    with pytest.raises(ConfigError, match="routing"):
        make_fabric("clos-51.2T-3tier", 4096, routing="spray")
    with pytest.raises(ConfigError, match="best"):
        make_fabric("best", 4096, routing="ecmp")
    with pytest.raises(ConfigError, match=re.escape("clos-25.6T-3tier-15:1")):
        make_fabric("clos-25.6T-3tier-15:1", 4096)  # 30-port leaves hold 24 GPUs


@pytest.mark.parametrize(
    ("arch", "option", "message"),
    [
        ("best", {"gpus_per_server": 0}, "gpus_per_server=0: must be >= 1"),
        ("clos-51.2T-3tier", {"gpus_per_server": 1.5}, "gpus_per_server=1.5: expected int"),
        ("clos-51.2T-3tier", {"gpus_per_server": "abc"}, "expected int"),
        ("lumoscore-51.2T-tau2", {"backup": "maybe"}, "backup='maybe': expected bool"),
        ("lumoscore-51.2T-tau2", {"reconfig_delay_s": "abc"}, "expected float"),
        ("lumoscore-51.2T-tau2", {"reconfig_delay_s": -1.0}, "seconds, >= 0"),
        ("lumoscore-51.2T-tau2", {"switch_s": float("nan")}, "must be finite"),
        ("vclos", {"spines": "abc"}, "spines='abc': expected int"),
        ("vclos", {"spines": 0}, "spines=0: must be >= 1"),
        ("vclos", {"port_gbps": 0}, "port_gbps=0: must be > 0"),
        ("vclos-leaf-spine", {"gpus_per_leaf": 0}, "gpus_per_leaf=0: must be >= 1"),
    ],
)
def test_option_values_of_the_wrong_type_or_range_are_refused(arch, option, message) -> None:
    """A fabric option is checked against its declared type (strictly: 1.5 is no count, a
    string no flag; an integer is a float) and its range before any fabric is built."""
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        make_fabric(arch, 512, **option)
    assert f"fabric {arch!r}" in str(info.value)


def test_option_values_of_the_declared_types_are_taken() -> None:
    fab = make_fabric("lumoscore-51.2T-tau2", 512, reconfig_delay_s=0, backup=np.bool_(True))
    assert fab.reconfig_delay_s == 0.0
    assert make_fabric("best", 512, gpus_per_server=np.int64(4)).gpus == 512
    assert make_fabric("vclos", 512, spines=8, port_gbps=100).gpus == 512
