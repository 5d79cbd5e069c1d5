"""Network fabrics for the simulator: links, capacities and routing.

Every fabric implements :class:`~lumoscore.fabric.base.Fabric`: GPU ``g``'s NIC uplink is link
``g`` and its downlink link ``gpus + g``; :meth:`~lumoscore.fabric.base.Fabric.routes` returns
the links of many flows at once in CSR form.
"""

from lumoscore.fabric.base import Fabric, FabricChange, Routes, check_positive, geometry_spec
from lumoscore.fabric.best import BestFabric
from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.lumos import LumosCoreFabric, NoCircuitError
from lumoscore.fabric.presets import (
    FABRICS,
    LUMOSCORE_PRESETS,
    PRESETS,
    Architecture,
    architecture,
    make_fabric,
)
from lumoscore.fabric.routing import ROUTINGS, Routing

__all__ = [
    "FABRICS",
    "LUMOSCORE_PRESETS",
    "PRESETS",
    "ROUTINGS",
    "Architecture",
    "BestFabric",
    "ClosFabric",
    "Fabric",
    "FabricChange",
    "LumosCoreFabric",
    "NoCircuitError",
    "Routes",
    "Routing",
    "architecture",
    "check_positive",
    "geometry_spec",
    "make_fabric",
]
