"""Named fabric presets of the LumosCore paper's evaluation (§6.2–§6.5).

The electrical architectures compared at a given cluster size are named by switch chip and
tier count; the port speed follows from the sizing formulas
(:mod:`lumoscore.hardware.sizing`): the **highest standard port speed** whose maximum cluster
size still holds the requested GPUs. At 4096 GPUs a 3-tier Clos of 25.6T chips runs at
800 Gb/s, of 51.2T chips at 1600 Gb/s, and a 4-tier Clos of 25.6T chips at 1600 Gb/s.

Names:

* ``best``: the ideal single switch at 1.6 Tb/s (:class:`~lumoscore.fabric.best.BestFabric`);
* ``clos-51.2T-3tier``, ``clos-25.6T-3tier``, ``clos-25.6T-4tier`` (the paper's Clos rows);
* generic ``clos-<chip>T-<n>tier`` and ``clos-<chip>T-<n>tier-<o>:1`` (oversubscribed
  leaves), ``leaf-spine-<chip>T`` (= ``clos-<chip>T-2tier``);
* ``lumoscore-51.2T-tau2``, ``lumoscore-51.2T-tau1``, ``lumoscore-25.6T-tau1``: LumosCore
  clusters (:class:`~lumoscore.fabric.lumos.LumosCoreFabric`) of that chip and ``tau`` at
  1.6 Tb/s (LumosCore keeps 1.6 Tb/s ports: the OCS core does not limit the cluster size, see
  :func:`lumoscore.hardware.sizing.reach`), 512-port OCSes; the GPU count must be a whole
  number of pods (128, 256 and 64 GPUs a pod). Routing ``planned`` (default), ``ecmp`` or
  ``ideal``.

Examples
--------
>>> fab = make_fabric("clos-25.6T-3tier", 4096)
>>> fab.port_gbps, fab.tiers, fab.radix
(800.0, 3, 32)
"""

from __future__ import annotations

import re

import numpy as np

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import Fabric
from lumoscore.fabric.best import BestFabric
from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.lumos import LUMOS_ROUTING_MODES, LumosCoreFabric
from lumoscore.fabric.routing import ROUTING_MODES
from lumoscore.hardware.sizing import STANDARD_PORT_SPEEDS_GBPS, clos_max_gpus, radix
from lumoscore.topology.cluster import ClusterSpec

__all__ = ["LUMOSCORE_PRESETS", "PRESETS", "clos_port_speed", "make_fabric", "make_lumoscore"]

#: LumosCore presets (:func:`make_lumoscore`).
LUMOSCORE_PRESETS: tuple[str, ...] = (
    "lumoscore-51.2T-tau2",
    "lumoscore-51.2T-tau1",
    "lumoscore-25.6T-tau1",
)
#: Every named preset of the paper's evaluation.
PRESETS: tuple[str, ...] = (
    "best",
    "clos-51.2T-3tier",
    "clos-25.6T-3tier",
    "clos-25.6T-4tier",
    *LUMOSCORE_PRESETS,
)
_GENERIC = "clos-<chip>T-<n>tier, clos-<chip>T-<n>tier-<o>:1, leaf-spine-<chip>T"
_CLOS_RE = re.compile(
    r"^clos-(?P<chip>\d+(?:\.\d+)?)t-(?P<tiers>\d+)tier(?:-(?P<num>\d+(?:\.\d+)?):(?P<den>\d+))?$"
)
_LEAF_SPINE_RE = re.compile(r"^leaf-spine-(?P<chip>\d+(?:\.\d+)?)t$")
#: Port speed of the Best fabric (LumosCore §6.2).
BEST_PORT_GBPS = 1600.0
#: Port speed and OCS ports of the LumosCore presets (LumosCore §6.2: 1.6 Tb/s, 512-port OCS).
LUMOSCORE_PORT_GBPS = 1600.0
LUMOSCORE_OCS_PORTS = 512
#: Chip (Tb/s) and tau of each LumosCore preset.
_LUMOS_PARAMS: dict[str, tuple[float, int]] = {
    "lumoscore-51.2t-tau2": (51.2, 2),
    "lumoscore-51.2t-tau1": (51.2, 1),
    "lumoscore-25.6t-tau1": (25.6, 1),
}


def _allowed() -> str:
    return f"{', '.join(PRESETS)} or {_GENERIC}"


def clos_port_speed(
    chip_tbps: float, tiers: int, gpus: int, oversubscription: float = 1.0
) -> tuple[float, int]:
    """Highest standard port speed at which an n-tier Clos of the chip holds ``gpus``.

    Returns ``(port_gbps, radix)``; raises :class:`~lumoscore.errors.ConfigError` when no
    standard speed (:data:`~lumoscore.hardware.sizing.STANDARD_PORT_SPEEDS_GBPS`) reaches it.

    Examples
    --------
    >>> clos_port_speed(25.6, 3, 4096), clos_port_speed(25.6, 4, 4096)
    ((800.0, 32), (1600.0, 16))
    """
    for speed in sorted(STANDARD_PORT_SPEEDS_GBPS, reverse=True):
        try:
            r = radix(chip_tbps, speed)
        except ConfigError:
            continue
        if r % 2 or r < 4:
            continue
        if clos_max_gpus(r, tiers, oversubscription) >= gpus:
            return float(speed), r
    raise ConfigError(
        f"a {tiers}-tier Clos of {chip_tbps:g}T chips (oversubscription {oversubscription:g}:1) "
        f"cannot hold gpus={gpus} at any standard port speed "
        f"({', '.join(str(s) for s in STANDARD_PORT_SPEEDS_GBPS)} Gb/s)"
    )


def make_lumoscore(
    name: str,
    gpus: int,
    *,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    **options: object,
) -> LumosCoreFabric:
    """Build the LumosCore preset ``name`` (one of :data:`LUMOSCORE_PRESETS`) for ``gpus``.

    ``options`` go to :class:`~lumoscore.fabric.lumos.LumosCoreFabric` (``reconfig_delay_s``,
    ``demand_method``, ``wiring``, ``solver``, ``policy``, ``admit_options``).

    Examples
    --------
    >>> fab = make_lumoscore("lumoscore-51.2T-tau2", 512)
    >>> d = fab.describe()
    >>> d["pods"], d["gpus_per_pod"], d["spines_per_pod"], d["routing"]
    (4, 128, 8, 'planned')
    """
    key = name.strip().lower()
    if key not in _LUMOS_PARAMS:
        raise ConfigError(
            f"unknown LumosCore preset {name!r}; allowed: {', '.join(LUMOSCORE_PRESETS)}"
        )
    chip, tau = _LUMOS_PARAMS[key]
    canonical = LUMOSCORE_PRESETS[list(_LUMOS_PARAMS).index(key)]
    if routing is not None and routing not in LUMOS_ROUTING_MODES:
        raise ConfigError(
            f"fabric {canonical!r}: routing={routing!r} unknown; allowed: "
            f"{', '.join(LUMOS_ROUTING_MODES)}"
        )
    k = radix(chip, LUMOSCORE_PORT_GBPS) // 2
    per_pod = k * k // tau
    max_pods = LUMOSCORE_OCS_PORTS
    if not (isinstance(gpus, int | np.integer) and gpus >= 1 and gpus % per_pod == 0):
        raise ConfigError(
            f"fabric {canonical!r}: gpus={gpus!r} must be a whole number of pods of {per_pod} "
            f"GPUs: {per_pod}, {2 * per_pod}, {3 * per_pod}, ... up to {max_pods * per_pod}"
        )
    if gpus // per_pod > max_pods:
        raise ConfigError(
            f"fabric {canonical!r}: gpus={gpus} needs {gpus // per_pod} pods, more than the "
            f"{max_pods} ports of an OCS; valid sizes: multiples of {per_pod} up to "
            f"{max_pods * per_pod}"
        )
    spec = ClusterSpec.from_chip(
        chip,
        LUMOSCORE_PORT_GBPS,
        tau=tau,
        gpus=int(gpus),
        gpus_per_server=gpus_per_server,
        ocs_ports=LUMOSCORE_OCS_PORTS,
    )
    return LumosCoreFabric(
        spec,
        routing=routing or "planned",
        seed=seed,
        name=canonical,
        chip_tbps=chip,
        **options,  # type: ignore[arg-type]
    )


def make_fabric(
    name: str,
    gpus: int,
    *,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    rail_optimized: bool = False,
) -> Fabric:
    """Build the preset fabric ``name`` for ``gpus`` GPUs.

    Parameters
    ----------
    name : str
        One of :data:`PRESETS` or a generic ``clos-<chip>T-<n>tier[-<o>:1]`` /
        ``leaf-spine-<chip>T`` name (case-insensitive).
    gpus : int
        Cluster size.
    routing : str, optional
        Routing policy (:data:`~lumoscore.fabric.routing.ROUTING_MODES`); default ``ecmp``
        for Clos fabrics. ``best`` accepts only ``None`` or ``ideal``; LumosCore presets
        :data:`~lumoscore.fabric.lumos.LUMOS_ROUTING_MODES` (default ``planned``).
    seed : int
        Seed of the ECMP hash seeds.
    gpus_per_server : int
        GPUs per server.
    rail_optimized : bool
        Rail-optimized intra-pod wiring (Clos only).

    Examples
    --------
    >>> make_fabric("clos-51.2T-3tier", 4096).port_gbps
    1600.0
    >>> make_fabric("leaf-spine-51.2T", 512, routing="source").describe()["tiers"]
    2
    """
    key = name.strip().lower()
    if key in _LUMOS_PARAMS:
        if rail_optimized:
            raise ConfigError(
                f"fabric {name!r}: rail_optimized is not supported by the LumosCore fabric"
            )
        return make_lumoscore(
            name, gpus, routing=routing, seed=seed, gpus_per_server=gpus_per_server
        )
    if routing is not None and routing not in ROUTING_MODES:
        raise ConfigError(f"routing={routing!r} unknown; allowed: {', '.join(ROUTING_MODES)}")
    if key == "best":
        if routing not in (None, "ideal"):
            raise ConfigError(f"fabric 'best' routes ideally; routing={routing!r} not allowed")
        if rail_optimized:
            raise ConfigError("fabric 'best' has no leaves; rail_optimized must be False")
        return BestFabric(gpus, BEST_PORT_GBPS, gpus_per_server)
    m = _CLOS_RE.match(key)
    if m:
        chip, tiers = float(m["chip"]), int(m["tiers"])
        over = float(m["num"]) / float(m["den"]) if m["num"] else 1.0
    else:
        m = _LEAF_SPINE_RE.match(key)
        if not m:
            raise ConfigError(f"unknown fabric preset {name!r}; allowed: {_allowed()}")
        chip, tiers, over = float(m["chip"]), 2, 1.0
    if tiers not in (2, 3, 4):
        raise ConfigError(f"fabric {name!r}: tiers must be 2, 3 or 4, got {tiers}")
    if over < 1:
        raise ConfigError(f"fabric {name!r}: oversubscription must be >= 1:1, got {over:g}:1")
    canonical = (
        f"clos-{chip:g}T-{tiers}tier" + (f"-{over:g}:1" if over != 1 else "")
        if _CLOS_RE.match(key)
        else f"leaf-spine-{chip:g}T"
    )
    try:
        port_gbps, r = clos_port_speed(chip, tiers, gpus, over)
    except ConfigError as exc:
        raise ConfigError(f"fabric {name!r}: {exc}") from None
    try:
        return ClosFabric(
            gpus,
            port_gbps,
            r,
            tiers,
            oversubscription=over,
            gpus_per_server=gpus_per_server,
            routing=routing or "ecmp",
            rail_optimized=rail_optimized,
            seed=seed,
            name=canonical,
        )
    except ConfigError as exc:
        raise ConfigError(f"fabric {name!r} at {port_gbps:g} Gb/s (radix {r}): {exc}") from None
