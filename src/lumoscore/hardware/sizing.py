"""Maximum cluster size of Clos and LumosCore fabrics (LumosCore paper, Table 1 and Fig. 7).

A switch chip of capacity ``chip_tbps`` run at ``port_gbps`` per port has radix
``R = chip_tbps * 1000 / port_gbps``. From the radix:

* **n-tier Clos (fat tree)**, every tier built from radix-``R`` switches. Above the leaves the
  fabric is non-blocking, so an n-tier Clos has ``2 (R/2)^(n-1)`` leaves. A leaf with
  oversubscription ``o : 1`` spends ``u = ceil(R / (o + 1))`` ports on uplinks and ``R - u`` on
  GPUs, so the cluster holds ``2 (R/2)^(n-1) (R - u)`` GPUs. With ``o = 1`` this is the
  textbook ``2 (R/2)^n``: ``R^2/2`` for two tiers, ``R^3/4`` for three.
* **LumosCore**: a pod is a leaf-spine of radix-``R`` switches whose leaves have
  ``K_leaf = R/2`` GPU-facing ports and whose spines have ``K_spine = R/2`` OCS-facing ports;
  with ``tau`` links between each leaf and spine a pod holds ``K_leaf K_spine / tau`` GPUs.
  Every OCS has one port (``psi = 1``, Cross / Interleaved Wiring) or two (``psi = 2``,
  Dual-link Uniform Wiring) per pod, so ``K_ocs / psi`` pods fit and the cluster holds
  ``(K_ocs / psi) R^2 / (4 tau)`` GPUs.

Examples
--------
>>> clos_max_gpus(radix(51.2, 1600), tiers=3)
8192
>>> lumoscore_max_gpus(radix(51.2, 1600), tau=1, ocs_ports=512)
131072
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lumoscore.errors import ConfigError

__all__ = [
    "ARCHITECTURES",
    "DEFAULT_CHIPS_TBPS",
    "DEFAULT_OCS_PORTS",
    "DEFAULT_PORT_SPEEDS_GBPS",
    "MAX_RADIX",
    "STANDARD_PORT_SPEEDS_GBPS",
    "Reach",
    "SizingRow",
    "clos_max_gpus",
    "lumoscore_max_gpus",
    "max_gpus",
    "radix",
    "reach",
    "sizing_table",
]

#: Switch chip capacities of the paper's Table 1 (Tb/s).
DEFAULT_CHIPS_TBPS: tuple[float, ...] = (12.8, 25.6, 51.2)
#: Per-port speeds of the paper's Table 1 (Gb/s).
DEFAULT_PORT_SPEEDS_GBPS: tuple[int, ...] = (200, 400, 800, 1600)
#: Port speeds considered when searching for the highest speed that reaches a target size
#: (the paper's range; pass ``port_speeds_gbps`` to consider 3.2 Tb/s and beyond).
STANDARD_PORT_SPEEDS_GBPS: tuple[int, ...] = (100, 200, 400, 800, 1600)
#: OCS port count assumed by the paper's Table 1.
DEFAULT_OCS_PORTS = 512
#: Most ports a switch chip may have (far beyond any chip; a bound on absurd inputs).
MAX_RADIX = 1 << 16

#: Architecture names of Table 1, in the paper's row order.
ARCHITECTURES: tuple[str, ...] = (
    "clos-2tier",
    "clos-3tier",
    "clos-3tier-15:1",
    "lumoscore-tau2",
    "lumoscore-tau1",
)


def radix(chip_tbps: float, port_gbps: float) -> int:
    """Number of ports of a switch chip of ``chip_tbps`` run at ``port_gbps`` per port.

    Raises :class:`~lumoscore.errors.ConfigError` when the speed does not divide the chip
    capacity into a whole number of at least two ports.

    Examples
    --------
    >>> radix(12.8, 200)
    64
    """
    if not (chip_tbps > 0 and math.isfinite(chip_tbps)):
        raise ConfigError(f"chip_tbps must be a positive number, got {chip_tbps!r}")
    if not (port_gbps > 0 and math.isfinite(port_gbps)):
        raise ConfigError(f"port_gbps must be a positive number, got {port_gbps!r}")
    ports = chip_tbps * 1000.0 / port_gbps
    if not ports <= MAX_RADIX:  # (inf too)
        raise ConfigError(
            f"a {chip_tbps:g} Tb/s chip at port_gbps={port_gbps:g} has {ports:g} ports; at "
            f"most {MAX_RADIX} (chip capacity or port speed out of range)"
        )
    r = round(ports)
    if abs(ports - r) > 1e-6 or r < 2:
        raise ConfigError(
            f"port_gbps={port_gbps:g} does not split a {chip_tbps:g} Tb/s chip into a whole "
            f"number (>= 2) of ports ({ports:.3f}); choose a speed that divides "
            f"{chip_tbps * 1000:g} Gb/s"
        )
    return int(r)


def _check_radix(r: int) -> None:
    if r < 2 or r % 2:
        raise ConfigError(f"radix must be an even integer >= 2, got {r}")


def clos_max_gpus(radix: int, tiers: int, oversubscription: float = 1.0) -> int:
    """Maximum GPUs of an n-tier Clos of radix-``radix`` switches.

    Parameters
    ----------
    radix : int
        Ports per switch (even).
    tiers : int
        Switch tiers, >= 1 (1 = a single switch).
    oversubscription : float
        Leaf downlink : uplink ratio ``o`` (1 = non-blocking, 15 = the paper's 15:1).
        The leaf keeps ``ceil(radix / (o + 1))`` uplinks.

    Examples
    --------
    >>> clos_max_gpus(64, tiers=2)
    2048
    >>> clos_max_gpus(64, tiers=3, oversubscription=15)
    122880
    """
    _check_radix(radix)
    if tiers < 1:
        raise ConfigError(f"tiers must be >= 1, got {tiers}")
    if not (oversubscription >= 1 and math.isfinite(oversubscription)):
        raise ConfigError(f"oversubscription must be a ratio >= 1, got {oversubscription!r}")
    if tiers == 1:
        return radix
    up = math.ceil(radix / (oversubscription + 1) - 1e-9)
    down = radix - up
    leaves = 2 * (radix // 2) ** (tiers - 1)
    return leaves * down


def lumoscore_max_gpus(radix: int, tau: int, ocs_ports: int, psi: int = 1) -> int:
    """Maximum GPUs of a LumosCore cluster (pods of leaf-spine joined by an OCS core).

    Parameters
    ----------
    radix : int
        Ports per electrical switch; ``K_leaf = K_spine = radix / 2``.
    tau : int
        Links between each leaf and each spine of a pod (1 or 2 in the paper).
    ocs_ports : int
        Ports of one OCS (``K_ocs``): at most ``ocs_ports / psi`` pods.
    psi : int
        OCS ports each pod uses per OCS: 1 for Cross/Interleaved or Uniform wiring, 2 for
        Dual-link Uniform wiring.

    Examples
    --------
    >>> lumoscore_max_gpus(64, tau=2, ocs_ports=512)
    262144
    """
    _check_radix(radix)
    k = radix // 2
    if tau < 1 or k % tau:
        raise ConfigError(f"tau must be a positive divisor of radix/2 = {k}, got {tau}")
    if ocs_ports < 1:
        raise ConfigError(f"ocs_ports must be >= 1, got {ocs_ports}")
    if psi not in (1, 2):
        raise ConfigError(f"psi must be 1 or 2, got {psi}")
    pods = ocs_ports // psi
    return pods * k * k // tau


def max_gpus(
    architecture: str,
    chip_tbps: float,
    port_gbps: float,
    *,
    ocs_ports: int = DEFAULT_OCS_PORTS,
) -> int:
    """Maximum GPUs of a named architecture.

    ``architecture`` is one of :data:`ARCHITECTURES`, or ``clos-<n>tier`` for any n, or
    ``clos-<n>tier-<o>:1`` for any oversubscription, or ``lumoscore-tau<t>``.

    Examples
    --------
    >>> max_gpus("clos-3tier-15:1", 51.2, 1600)
    15360
    >>> max_gpus("clos-4tier", 25.6, 1600)
    8192
    """
    kind, tiers, over, tau = _parse_architecture(architecture)
    r = radix(chip_tbps, port_gbps)
    if kind == "clos":
        return clos_max_gpus(r, tiers, over)
    return lumoscore_max_gpus(r, tau, ocs_ports)


def _parse_architecture(name: str) -> tuple[str, int, float, int]:
    allowed = "clos-<n>tier, clos-<n>tier-<o>:1 or lumoscore-tau<t>"
    parts = name.strip().lower().split("-")
    try:
        if parts[0] == "clos" and len(parts) in (2, 3) and parts[1].endswith("tier"):
            tiers = int(parts[1][: -len("tier")])
            over = 1.0
            if len(parts) == 3:
                num, _, den = parts[2].partition(":")
                over = float(num) / float(den or "1")
            if tiers >= 1 and over >= 1:
                return "clos", tiers, over, 0
        if parts[0] == "lumoscore" and len(parts) == 2 and parts[1].startswith("tau"):
            tau = int(parts[1][3:])
            if tau >= 1:
                return "lumoscore", 0, 1.0, tau
    except ValueError:
        pass
    raise ConfigError(
        f"unknown architecture {name!r}; allowed: {', '.join(ARCHITECTURES)} or {allowed}"
    )


@dataclass(frozen=True)
class SizingRow:
    """One cell of the sizing table: an architecture at a chip capacity and port speed."""

    architecture: str
    chip_tbps: float
    port_gbps: float
    max_gpus: int


def sizing_table(
    chips_tbps: Iterable[float] = DEFAULT_CHIPS_TBPS,
    port_speeds_gbps: Iterable[float] = DEFAULT_PORT_SPEEDS_GBPS,
    *,
    architectures: Sequence[str] = ARCHITECTURES,
    ocs_ports: int = DEFAULT_OCS_PORTS,
) -> list[SizingRow]:
    """The paper's Table 1 for any chips, port speeds and OCS port count.

    Rows are ordered by architecture, then chip, then port speed. ``max_gpus`` is 0 where the
    architecture cannot be built from such switches: an odd number of ports (no even
    down/up split), or LumosCore with ``radix / 2`` not a multiple of ``tau`` (every leaf has
    ``tau`` links to each spine).

    Examples
    --------
    >>> [r.max_gpus for r in sizing_table([51.2], [1600])]
    [512, 8192, 15360, 65536, 131072]
    """
    chips = list(chips_tbps)
    speeds = list(port_speeds_gbps)
    if not chips:
        raise ConfigError("at least one chip capacity is required")
    if not speeds:
        raise ConfigError("at least one port speed is required")
    return [
        SizingRow(arch, chip, speed, _max_or_zero(arch, chip, speed, ocs_ports))
        for arch in architectures
        for chip in chips
        for speed in speeds
    ]


def _max_or_zero(architecture: str, chip_tbps: float, port_gbps: float, ocs_ports: int) -> int:
    """:func:`max_gpus`, or 0 where the architecture cannot be built from such switches (an odd
    port count, or a LumosCore ``radix / 2`` that ``tau`` does not divide); a speed that does
    not split the chip into whole ports stays an error."""
    kind, _, _, tau = _parse_architecture(architecture)
    r = radix(chip_tbps, port_gbps)
    if r % 2 or (kind == "lumoscore" and (r // 2) % tau):
        return 0
    return max_gpus(architecture, chip_tbps, port_gbps, ocs_ports=ocs_ports)


@dataclass(frozen=True)
class Reach:
    """The fastest port speed at which an architecture still reaches a target cluster size.

    ``port_gbps`` and ``max_gpus`` are ``None`` when no considered speed reaches the target.
    ``tiers`` is the switch tier count (for ``clos-ntier`` the fewest tiers that suffice at that
    speed; LumosCore counts leaf, spine and OCS as 3).
    """

    architecture: str
    chip_tbps: float
    target_gpus: int
    port_gbps: float | None
    tiers: int | None
    max_gpus: int | None


def reach(
    target_gpus: int,
    chip_tbps: float,
    *,
    port_speeds_gbps: Iterable[float] = STANDARD_PORT_SPEEDS_GBPS,
    architectures: Sequence[str] = (*ARCHITECTURES, "clos-ntier"),
    max_tiers: int = 4,
    ocs_ports: int = DEFAULT_OCS_PORTS,
) -> list[Reach]:
    """For a target GPU count and a chip, the highest port speed each architecture reaches.

    ``clos-ntier`` stands for a Clos whose tier count may grow up to ``max_tiers``: its answer
    is the highest speed reachable with any tier count and the fewest tiers needed there.

    Examples
    --------
    >>> r = {x.architecture: x for x in reach(4096, 25.6)}
    >>> r["clos-3tier"].port_gbps, r["lumoscore-tau1"].port_gbps
    (800, 1600)
    >>> r["clos-ntier"].port_gbps, r["clos-ntier"].tiers
    (1600, 4)
    """
    if target_gpus < 1:
        raise ConfigError(f"target_gpus must be >= 1, got {target_gpus}")
    if max_tiers < 1:
        raise ConfigError(f"max_tiers must be >= 1, got {max_tiers}")
    speeds = sorted({s for s in port_speeds_gbps}, reverse=True)
    out: list[Reach] = []
    for arch in architectures:
        found: Reach | None = None
        for speed in speeds:
            try:
                r = radix(chip_tbps, speed)
            except ConfigError:
                continue
            if r % 2:
                continue
            if arch == "clos-ntier":
                for tiers in range(1, max_tiers + 1):
                    size = clos_max_gpus(r, tiers)
                    if size >= target_gpus:
                        found = Reach(arch, chip_tbps, target_gpus, speed, tiers, size)
                        break
            else:
                _, tiers, _, _ = _parse_architecture(arch)
                size = _max_or_zero(arch, chip_tbps, speed, ocs_ports)
                if size >= target_gpus:
                    found = Reach(arch, chip_tbps, target_gpus, speed, tiers or 3, size)
            if found:
                break
        out.append(found or Reach(arch, chip_tbps, target_gpus, None, None, None))
    return out
