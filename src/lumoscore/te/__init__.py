"""Traffic engineering on OCS-realized pod-level topologies (Cross Wiring §8.1).

* :func:`min_mlu` -- route a pod-level traffic matrix over the direct and two-hop paths of a
  realized topology to minimize the maximum link utilization (MLU), by LP (HiGHS through
  SciPy), or to a certified gap by a first-order method (``method="certified"``,
  :mod:`lumoscore.te.fast`); :func:`min_mlu_edge_flows` is an independent edge-flow
  formulation of the same problem (a check).
* :func:`realize` -- a logical topology ``C`` configured on a wiring (``cross``, ``uniform``,
  ``dual-link``): the realized circuits as a pod-level capacity matrix, and its LTCR.
* :func:`check_traffic` -- validate a traffic matrix or a sequence of them.

Examples
--------
>>> import numpy as np
>>> cap = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], float)
>>> tm = np.array([[0, 2, 0], [0, 0, 0], [0, 0, 0]], float)
>>> round(min_mlu(cap, tm).mlu, 6)      # half direct, half through pod 2
1.0
"""

from lumoscore.te.design import RobustDesign, demand_topology, full_mesh, robust_topology
from lumoscore.te.generators import FACEBOOK_KINDS, facebook_traffic, gravity_traffic
from lumoscore.te.lp import TEResult, min_mlu, min_mlu_edge_flows, min_mlu_series
from lumoscore.te.matrices import check_traffic, read_traffic
from lumoscore.te.realize import Realization, realize

__all__ = [
    "FACEBOOK_KINDS",
    "Realization",
    "RobustDesign",
    "TEResult",
    "check_traffic",
    "demand_topology",
    "facebook_traffic",
    "full_mesh",
    "gravity_traffic",
    "min_mlu",
    "min_mlu_edge_flows",
    "min_mlu_series",
    "read_traffic",
    "realize",
    "robust_topology",
]
