"""Network fabrics for the simulator: links, capacities and routing.

Every fabric implements :class:`~lumoscore.fabric.base.Fabric`: GPU ``g``'s NIC uplink is link
``g`` and its downlink link ``gpus + g``; :meth:`~lumoscore.fabric.base.Fabric.routes` returns
the links of many flows at once in CSR form.
"""

from lumoscore.fabric.base import Fabric, Routes, check_positive, geometry_spec
from lumoscore.fabric.best import BestFabric

__all__ = ["BestFabric", "Fabric", "Routes", "check_positive", "geometry_spec"]
