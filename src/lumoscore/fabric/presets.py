"""Named fabrics (architectures): the :data:`FABRICS` registry and :func:`make_fabric`.

An architecture is an :class:`Architecture` entry: how to build its fabric for a cluster size
(``build(gpus, *, routing, seed, gpus_per_server, rail_optimized, **options)``), its fabric
class (which tells its routings) and its relative simulation cost. Adding an architecture is
one :meth:`~lumoscore.registry.Registry.register` call in this file. Which architectures a
paper compares is experiment-level data (:mod:`lumoscore.experiments.architectures`), not this
registry.

Electrical architectures are named by switch chip and tier count; the port speed follows from
the sizing formulas (:mod:`lumoscore.hardware.sizing`): the **highest standard port speed**
whose maximum cluster size still holds the requested GPUs. At 4096 GPUs a 3-tier Clos of 25.6T
chips runs at 800 Gb/s, of 51.2T chips at 1600 Gb/s, and a 4-tier Clos of 25.6T chips at
1600 Gb/s.

Registered names:

* ``best``: the ideal single switch at 1.6 Tb/s (:class:`~lumoscore.fabric.best.BestFabric`);
* ``clos-51.2T-3tier``, ``clos-25.6T-3tier``, ``clos-25.6T-4tier`` (the paper's Clos rows);
* ``lumoscore-51.2T-tau2``, ``lumoscore-51.2T-tau1``, ``lumoscore-25.6T-tau1``: LumosCore
  clusters (:class:`~lumoscore.fabric.lumos.LumosCoreFabric`) of that chip and ``tau`` at
  1.6 Tb/s (LumosCore keeps 1.6 Tb/s ports: the OCS core does not limit the cluster size, see
  :func:`lumoscore.hardware.sizing.reach`), 512-port OCSes; the GPU count must be a whole
  number of pods (128, 256 and 64 GPUs a pod).

* ``vclos``, ``ocs-vclos``, ``ocs-relax``: vClos-paper leaf-spine clusters whose jobs each
  hold a virtual Clos (:class:`~lumoscore.fabric.leafspine.VClosFabric`), and
  ``vclos-leaf-spine``, the same cluster shared (ECMP, ``balanced`` or ``source`` routing),
  for any GPU count a leaf-spine shape holds (:func:`~lumoscore.fabric.leafspine.leaf_spine_shape`:
  512 GPUs are 32 leaves x 16 spines); options ``spines``, ``gpus_per_leaf``, ``port_gbps``.

Generic names (any chip, parsed): ``clos-<chip>T-<n>tier``, ``clos-<chip>T-<n>tier-<o>:1``
(oversubscribed leaves) and ``leaf-spine-<chip>T`` (= ``clos-<chip>T-2tier``). Names are
case-insensitive.

Examples
--------
>>> fab = make_fabric("clos-25.6T-3tier", 4096)
>>> fab.port_gbps, fab.tiers, fab.radix
(800.0, 3, 32)
>>> architecture("LUMOSCORE-51.2T-tau2")[0], architecture("clos-51.2t-2tier")[0]
('lumoscore-51.2T-tau2', 'clos-51.2T-2tier')

A new architecture is one entry (here in a registry of its own, to leave the real one as it is):

>>> from lumoscore.registry import Registry
>>> mine = Registry("fabric")
>>> _ = mine.register("clos-51.2T-3tier-3:1", clos_architecture(51.2, 3, oversubscription=3.0))
>>> mine["clos-51.2T-3tier-3:1"].build(4608).uplinks
8
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pydantic

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import Fabric
from lumoscore.fabric.best import BestFabric
from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.leafspine import LeafSpineFabric, VClosFabric, leaf_spine_shape
from lumoscore.fabric.lumos import LumosCoreFabric
from lumoscore.hardware.sizing import STANDARD_PORT_SPEEDS_GBPS, clos_max_gpus, radix
from lumoscore.limits import check_gpus, check_seed
from lumoscore.placement.vclos import ISOLATING_ALLOCATORS
from lumoscore.registry import Registry
from lumoscore.topology.cluster import ClusterSpec

__all__ = [
    "FABRICS",
    "LUMOSCORE_PRESETS",
    "PRESETS",
    "Architecture",
    "architecture",
    "clos_architecture",
    "clos_port_speed",
    "lumoscore_architecture",
    "make_fabric",
    "vclos_architecture",
]

#: Port speed of the Best fabric (LumosCore §6.2).
BEST_PORT_GBPS = 1600.0
#: Port speed and OCS ports of the LumosCore presets (LumosCore §6.2: 1.6 Tb/s, 512-port OCS).
LUMOSCORE_PORT_GBPS = 1600.0
LUMOSCORE_OCS_PORTS = 512
#: Port speed of the vClos-family clusters: the reference speed at which job run times are
#: given (:data:`~lumoscore.workload.job.REFERENCE_PORT_GBPS`), so that they compare with
#: Best; the testbed presets pass ``port_gbps=100``.
VCLOS_PORT_GBPS = 1600.0
#: Generic (parsed) names.
_GENERIC = "clos-<chip>T-<n>tier, clos-<chip>T-<n>tier-<o>:1, leaf-spine-<chip>T"
_CLOS_RE = re.compile(
    r"^clos-(?P<chip>\d+(?:\.\d+)?)t-(?P<tiers>\d+)tier(?:-(?P<num>\d+(?:\.\d+)?):(?P<den>\d+))?$"
)
_LEAF_SPINE_RE = re.compile(r"^leaf-spine-(?P<chip>\d+(?:\.\d+)?)t$")
#: Relative cost of a simulated job-GPU on a fabric whose jobs share links (rate solves
#: dominate) and on one whose jobs are isolated or placed apart (used to order a sweep's runs,
#: longest first). Measured on the default experiment (4096 GPUs, 1000 jobs): Best 0.7 s, each
#: Clos 3.8 s; LumosCore see :func:`lumoscore_architecture`.
_SHARED_COST, _ISOLATED_COST = 5.5, 1.0


@dataclass(frozen=True)
class Architecture:
    """A named fabric.

    Attributes
    ----------
    build : callable
        ``build(gpus, *, routing=None, seed=0, gpus_per_server=8, rail_optimized=False,
        **options) -> Fabric``: the fabric for ``gpus`` GPUs (``options`` go to the fabric
        class); raises :class:`~lumoscore.errors.ConfigError` for a size it cannot hold.
    fabric_class : type
        The class it builds; its ``routings`` are the routings the architecture accepts.
    relative_cost : float
        Simulation cost per job and GPU relative to Best (only orders a sweep's runs).
    extra_options : tuple of str
        Options the build takes beyond the fabric class's own (e.g. ``port_gbps``).
    routing : str, optional
        The routing its fabrics use when none is given (default: the first of
        :attr:`routings`).
    """

    build: Callable[..., Fabric]
    fabric_class: type[Fabric]
    relative_cost: float = _ISOLATED_COST
    extra_options: tuple[str, ...] = ()
    routing: str | None = None

    @property
    def routings(self) -> tuple[str, ...]:
        """Routing policies the architecture accepts."""
        return self.fabric_class.routings

    @property
    def default_routing(self) -> str:
        """The routing of a fabric built without one.

        Examples
        --------
        >>> architecture("clos-51.2T-3tier")[1].default_routing
        'probing'
        >>> architecture("lumoscore-51.2T-tau2")[1].default_routing
        'planned'
        """
        return self.routing or self.routings[0]


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
    >>> clos_port_speed(0.1, 3, 4096)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: a 0.1T chip has fewer than 4 ports at every ... built of it
    """
    speeds = ", ".join(str(s) for s in STANDARD_PORT_SPEEDS_GBPS)
    buildable = False
    for speed in sorted(STANDARD_PORT_SPEEDS_GBPS, reverse=True):
        try:
            r = radix(chip_tbps, speed)
        except ConfigError:
            continue
        if r % 2 or r < 4:
            continue
        buildable = True
        if clos_max_gpus(r, tiers, oversubscription) >= gpus:
            return float(speed), r
    if not buildable:
        raise ConfigError(
            f"a {chip_tbps:g}T chip has fewer than 4 ports at every standard port speed "
            f"({speeds} Gb/s): no Clos is built of it"
        )
    raise ConfigError(
        f"a {tiers}-tier Clos of {chip_tbps:g}T chips (oversubscription {oversubscription:g}:1) "
        f"cannot hold gpus={gpus} at any standard port speed ({speeds} Gb/s)"
    )


# -- builders -------------------------------------------------------------------------------
#: Routing of a Clos architecture built by name when none is given: probing, the default of
#: the paper's evaluation (§6.2). ``ClosFabric`` itself defaults to ``ecmp``.
CLOS_DEFAULT_ROUTING = "probing"


def _build_best(
    gpus: int,
    *,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    rail_optimized: bool = False,
    **options: Any,
) -> Fabric:
    BestFabric.checked_routing(routing)
    if rail_optimized:
        raise ConfigError("rail_optimized must be False: Best has no leaves")
    return BestFabric(gpus, BEST_PORT_GBPS, gpus_per_server, **options)


def _clos_name(chip: float, tiers: int, over: float) -> str:
    return f"clos-{chip:g}T-{tiers}tier" + (f"-{over:g}:1" if over != 1 else "")


def _build_clos(
    gpus: int,
    *,
    chip_tbps: float,
    tiers: int,
    oversubscription: float,
    name: str,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    rail_optimized: bool = False,
    **options: Any,
) -> Fabric:
    port_gbps, r = clos_port_speed(chip_tbps, tiers, gpus, oversubscription)
    try:
        return ClosFabric(
            gpus,
            port_gbps,
            r,
            tiers,
            oversubscription=oversubscription,
            gpus_per_server=gpus_per_server,
            routing=ClosFabric.checked_routing(routing or CLOS_DEFAULT_ROUTING),
            rail_optimized=rail_optimized,
            seed=seed,
            name=name,
            **options,
        )
    except ConfigError as exc:
        raise ConfigError(f"at {port_gbps:g} Gb/s (radix {r}): {exc}") from exc


def clos_architecture(
    chip_tbps: float, tiers: int, *, oversubscription: float = 1.0, name: str | None = None
) -> Architecture:
    """An n-tier Clos of ``chip_tbps`` chips at the fastest standard port speed that holds
    the cluster (``name``: the fabric's name; default ``clos-<chip>T-<n>tier[-<o>:1]``)."""
    if tiers not in (2, 3, 4):
        raise ConfigError(f"tiers must be 2, 3 or 4, got {tiers}")
    if not oversubscription >= 1:
        raise ConfigError(f"oversubscription must be >= 1:1, got {oversubscription:g}:1")
    build = partial(
        _build_clos,
        chip_tbps=chip_tbps,
        tiers=tiers,
        oversubscription=oversubscription,
        name=name or _clos_name(chip_tbps, tiers, oversubscription),
    )
    return Architecture(build, ClosFabric, _SHARED_COST, routing=CLOS_DEFAULT_ROUTING)


def _build_lumoscore(
    gpus: int,
    *,
    chip_tbps: float,
    tau: int,
    name: str,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    rail_optimized: bool = False,
    **options: Any,
) -> Fabric:
    routing = LumosCoreFabric.checked_routing(routing)
    k = radix(chip_tbps, LUMOSCORE_PORT_GBPS) // 2
    per_pod = k * k // tau
    max_pods = LUMOSCORE_OCS_PORTS
    if not (isinstance(gpus, int | np.integer) and gpus >= 1 and gpus % per_pod == 0):
        raise ConfigError(
            f"gpus={gpus!r} must be a whole number of pods of {per_pod} GPUs: {per_pod}, "
            f"{2 * per_pod}, {3 * per_pod}, ... up to {max_pods * per_pod}"
        )
    if gpus // per_pod > max_pods:
        raise ConfigError(
            f"gpus={gpus} needs {gpus // per_pod} pods, more than the {max_pods} ports of an "
            f"OCS; valid sizes: multiples of {per_pod} up to {max_pods * per_pod}"
        )
    spec = ClusterSpec.from_chip(
        chip_tbps,
        LUMOSCORE_PORT_GBPS,
        tau=tau,
        gpus=int(gpus),
        gpus_per_server=gpus_per_server,
        ocs_ports=LUMOSCORE_OCS_PORTS,
    )
    return LumosCoreFabric(
        spec,
        routing=routing,
        seed=seed,
        name=name,
        chip_tbps=chip_tbps,
        rail_optimized=rail_optimized,
        **options,
    )


def lumoscore_architecture(chip_tbps: float, tau: int, *, name: str) -> Architecture:
    """A LumosCore cluster of ``chip_tbps`` chips and ``tau`` at 1.6 Tb/s with 512-port OCSes
    (``options`` of its build go to :class:`~lumoscore.fabric.lumos.LumosCoreFabric`:
    ``reconfig_delay_s``, ``demand_method``, ``wiring``, ``solver``, ``policy``,
    ``admit_options``)."""
    build = partial(_build_lumoscore, chip_tbps=chip_tbps, tau=tau, name=name)
    # topology engineering at every admission grows with the pods: measured on the default
    # experiment (4096 GPUs), relative to Best, 3.4 with 16 pods, 4.5 with 32, 6.4 with 64
    k = radix(chip_tbps, LUMOSCORE_PORT_GBPS) // 2
    pods_at_4096 = 4096 * tau / (k * k)
    return Architecture(build, LumosCoreFabric, 2.4 + pods_at_4096 / 16)


def _build_leaf_spine(
    gpus: int,
    *,
    allocator: str | None,
    name: str,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    rail_optimized: bool = False,
    spines: int | None = None,
    gpus_per_leaf: int | None = None,
    port_gbps: float = VCLOS_PORT_GBPS,
    **options: Any,
) -> Fabric:
    if rail_optimized:
        raise ConfigError("rail_optimized is not supported by the vClos leaf-spine fabrics")
    if spines is None and gpus_per_leaf is None:
        leaves, spines = leaf_spine_shape(gpus, gpus_per_server)
        d = spines
    else:
        d = int(gpus_per_leaf if gpus_per_leaf is not None else spines)  # type: ignore[arg-type]
        spines = int(spines if spines is not None else d)
        if d < 1 or gpus % d:
            raise ConfigError(f"gpus={gpus} must be a whole number of leaves of {d} GPUs")
        leaves = gpus // d
    if allocator is None:
        return LeafSpineFabric(
            leaves, spines, gpus_per_server, gpus_per_leaf=d, port_gbps=port_gbps,
            routing=LeafSpineFabric.checked_routing(routing), seed=seed, name=name, **options,
        )  # fmt: skip
    return VClosFabric(
        leaves, spines, gpus_per_server, gpus_per_leaf=d, port_gbps=port_gbps,
        allocator=allocator, routing=VClosFabric.checked_routing(routing), seed=seed, name=name,
        **options,
    )  # fmt: skip


def vclos_architecture(allocator: str | None, *, name: str) -> Architecture:
    """A vClos-paper leaf-spine cluster: ``allocator`` ``vclos``, ``ocs-vclos`` or
    ``ocs-relax`` (a :class:`~lumoscore.fabric.leafspine.VClosFabric`), or ``None`` for the
    shared baseline (:class:`~lumoscore.fabric.leafspine.LeafSpineFabric`, ECMP by default).
    Options: ``spines`` and ``gpus_per_leaf`` (default: :func:`leaf_spine_shape`),
    ``port_gbps`` (default :data:`VCLOS_PORT_GBPS`)."""
    build = partial(_build_leaf_spine, allocator=allocator, name=name)
    if allocator is None:
        return Architecture(build, LeafSpineFabric, _SHARED_COST, ("port_gbps", "spines"))
    return Architecture(build, VClosFabric, _ISOLATED_COST, ("port_gbps", "spines"))


# -- the registry ---------------------------------------------------------------------------
#: Named architectures.
FABRICS: Registry[Architecture] = Registry("fabric preset")
FABRICS.register("best", Architecture(_build_best, BestFabric, _ISOLATED_COST))
for _chip, _tiers in ((51.2, 3), (25.6, 3), (25.6, 4)):
    FABRICS.register(_clos_name(_chip, _tiers, 1.0), clos_architecture(_chip, _tiers))
for _chip, _tau in ((51.2, 2), (51.2, 1), (25.6, 1)):
    _name = f"lumoscore-{_chip:g}T-tau{_tau}"
    FABRICS.register(_name, lumoscore_architecture(_chip, _tau, name=_name))
for _alloc in ISOLATING_ALLOCATORS:
    FABRICS.register(_alloc, vclos_architecture(_alloc, name=_alloc))
FABRICS.register("vclos-leaf-spine", vclos_architecture(None, name="vclos-leaf-spine"))

#: Every registered architecture name.
PRESETS: tuple[str, ...] = FABRICS.names()
#: The registered LumosCore architectures.
LUMOSCORE_PRESETS: tuple[str, ...] = tuple(
    n for n, a in FABRICS.items() if a.fabric_class is LumosCoreFabric
)


def architecture(name: str) -> tuple[str, Architecture]:
    """The canonical name and :class:`Architecture` of ``name`` (registered or generic,
    case-insensitive); an unknown name raises a ConfigError listing the allowed names."""
    if not isinstance(name, str):
        raise ConfigError(f"fabric preset must be a name, got {name!r}")
    key = name.strip().lower()
    for known, arch in FABRICS.items():
        if known.lower() == key:
            return known, arch
    m = _CLOS_RE.match(key)
    if m:
        chip, tiers = float(m["chip"]), int(m["tiers"])
        over = float(m["num"]) / float(m["den"]) if m["num"] else 1.0
    else:
        m = _LEAF_SPINE_RE.match(key)
        if not m:
            raise ConfigError(
                f"unknown fabric preset {name!r}; allowed: {', '.join(FABRICS)} or {_GENERIC}"
            )
        chip, tiers, over = float(m["chip"]), 2, 1.0
    canonical = _clos_name(chip, tiers, over) if _CLOS_RE.match(key) else f"leaf-spine-{chip:g}T"
    try:
        return canonical, clos_architecture(chip, tiers, oversubscription=over, name=canonical)
    except ConfigError as exc:
        raise ConfigError(f"fabric {name!r}: {exc}") from exc


def make_fabric(
    name: str,
    gpus: int,
    *,
    routing: str | None = None,
    seed: int = 0,
    gpus_per_server: int = 8,
    rail_optimized: bool = False,
    **options: Any,
) -> Fabric:
    """Build the architecture ``name`` for ``gpus`` GPUs.

    Parameters
    ----------
    name : str
        A name in :data:`FABRICS` or a generic ``clos-<chip>T-<n>tier[-<o>:1]`` /
        ``leaf-spine-<chip>T`` name (case-insensitive).
    gpus : int
        Cluster size.
    routing : str, optional
        Routing policy, one of the architecture's
        :attr:`~Architecture.routings` (default: :attr:`~Architecture.default_routing`:
        ``probing`` for Clos, ``planned`` for LumosCore, ``ideal`` for Best).
    seed : int
        Seed of the ECMP hash seeds.
    gpus_per_server : int
        GPUs per server.
    rail_optimized : bool
        Rail-optimized intra-pod wiring (Clos only).
    **options
        Passed to the fabric class (e.g. LumosCore's ``reconfig_delay_s``).

    Examples
    --------
    >>> make_fabric("clos-51.2T-3tier", 4096).port_gbps
    1600.0
    >>> make_fabric("leaf-spine-51.2T", 512, routing="source").describe()["tiers"]
    2
    >>> make_fabric("best", 64, routing="ecmp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: fabric 'best': routing 'ecmp' does not apply to this fabric; ...
    """
    canonical, arch = architecture(name)
    if isinstance(gpus, int | np.integer) and not isinstance(gpus, bool):
        check_gpus(int(gpus))  # before any fabric allocates per-GPU arrays
    check_seed(seed)
    _check_options(canonical, arch, options)
    _check_values(
        canonical,
        arch,
        {"gpus_per_server": gpus_per_server, "rail_optimized": rail_optimized, **options},
    )
    try:
        return arch.build(
            gpus,
            routing=routing,
            seed=seed,
            gpus_per_server=gpus_per_server,
            rail_optimized=rail_optimized,
            **options,
        )
    except ConfigError as exc:
        raise ConfigError(f"fabric {canonical!r}: {exc}") from exc


#: Constructor parameters that :func:`make_fabric` sets itself.
_SET_BY_MAKE = frozenset(
    ("self", "gpus", "spec", "port_gbps", "radix", "tiers", "routing", "seed", "name",
     "gpus_per_server", "rail_optimized", "chip_tbps", "oversubscription", "allocator")
)  # fmt: skip


#: Fabric options that count something (at least 1) and those that must be positive; options
#: in seconds (``*_s``) must be >= 0.
_COUNTS = frozenset(("gpus_per_server", "spines", "gpus_per_leaf"))
_POSITIVE = frozenset(("port_gbps",))


def _option_types(arch: Architecture) -> dict[str, Any]:
    """The declared type of every parameter of the architecture's build and fabric class."""
    found: dict[str, Any] = {}
    for fn in (arch.build, arch.fabric_class.__init__):
        for n, p in inspect.signature(fn, eval_str=True).parameters.items():
            if p.annotation is not p.empty:
                found.setdefault(n, p.annotation)
    return found


def _check_values(name: str, arch: Architecture, options: dict[str, Any]) -> None:
    """Option values of the wrong type (``gpus_per_server=1.5``, ``backup="maybe"``; an
    integer is a float too) or out of range (a count below 1, a port speed <= 0, a time
    below 0, a number not finite) raise a ConfigError naming the option."""
    declared = _option_types(arch)
    for key, given in options.items():
        value = given
        if key in declared:
            plain = given.item() if isinstance(given, np.generic) else given  # (NumPy scalars)
            try:
                value = pydantic.TypeAdapter(declared[key]).validate_python(plain, strict=True)
            except pydantic.ValidationError as exc:
                kind = getattr(declared[key], "__name__", str(declared[key]))
                raise ConfigError(
                    f"fabric {name!r}: option {key}={given!r}: expected {kind} "
                    f"({exc.errors()[0]['msg']})"
                ) from None
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        bad = f"fabric {name!r}: option {key}={given!r}: "
        if not math.isfinite(value):
            raise ConfigError(bad + "must be finite")
        if key in _COUNTS and value < 1:
            raise ConfigError(bad + "must be >= 1")
        if key in _POSITIVE and value <= 0:
            raise ConfigError(bad + "must be > 0")
        if key.endswith("_s") and value < 0:
            raise ConfigError(bad + "seconds, >= 0")


def _check_options(name: str, arch: Architecture, options: dict[str, Any]) -> None:
    """Options the architecture's fabric class does not take raise a ConfigError naming
    them and listing the ones it takes."""
    params = inspect.signature(arch.fabric_class.__init__).parameters
    allowed = [n for n, p in params.items() if n not in _SET_BY_MAKE and p.default is not p.empty]
    allowed += [n for n in arch.extra_options if n not in allowed]
    bad = sorted(set(options) - set(allowed))
    if bad:
        raise ConfigError(
            f"fabric {name!r}: option(s) {', '.join(bad)} unknown; allowed: "
            f"{', '.join(allowed) or 'none'}"
        )
