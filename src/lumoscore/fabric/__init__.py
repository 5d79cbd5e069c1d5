"""Network fabrics for the simulator: links, capacities and routing.

Every fabric implements :class:`~lumoscore.fabric.base.Fabric`: GPU ``g``'s NIC uplink is link
``g`` and its downlink link ``gpus + g``; :meth:`~lumoscore.fabric.base.Fabric.routes` returns
the links of many flows at once in CSR form.
"""

from lumoscore.fabric.base import Fabric, FabricChange, Routes, check_positive, geometry_spec
from lumoscore.fabric.best import BestFabric
from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.lumos import LUMOS_ROUTING_MODES, LumosCoreFabric, NoCircuitError
from lumoscore.fabric.presets import LUMOSCORE_PRESETS, PRESETS, make_fabric, make_lumoscore
from lumoscore.fabric.routing import ROUTING_MODES

__all__ = [
    "LUMOSCORE_PRESETS",
    "LUMOS_ROUTING_MODES",
    "PRESETS",
    "ROUTING_MODES",
    "BestFabric",
    "ClosFabric",
    "Fabric",
    "FabricChange",
    "LumosCoreFabric",
    "NoCircuitError",
    "Routes",
    "check_positive",
    "geometry_spec",
    "make_fabric",
    "make_lumoscore",
]
