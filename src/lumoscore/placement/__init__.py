"""GPU placement, pod selection, leaf-level demand updates and the one-call admission API.

LumosCore §4.2 and Appendices A.4, A.12 (``docs/placement.md``):

* :class:`ClusterState` -- GPU ownership and failures as NumPy arrays, placements, the
  leaf-level cross-pod demand ``L`` and the deployed OCS circuits;
* :class:`PlacementPolicy` / :func:`get_policy` -- ``locality`` (LumosCore), ``relaxed``,
  ``first-fit``; ``place(state, job) -> Placement | None`` and ``release(state, job_id)``;
* :func:`select_pods_exact` (CP-SAT) / :func:`select_pods_greedy` -- the pod selection of A.4;
* :func:`job_demand`, :func:`share_paths` -- a job's demand part and min-cost-flow path sharing;
* :func:`admit` / :func:`finish` / :func:`reconfigure` -- placement, ``L`` update, logical
  topology and OCS configuration (through :mod:`lumoscore.toe`) in one call.

Examples
--------
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.workload import Job
>>> st = ClusterState.empty(ClusterSpec(pods=2, k_leaf=16, k_spine=16, tau=2))
>>> job = Job(job_id=1, arrival_s=0.0, gpus=64, model="Pangu", tp=8, pp=2, dp=4, ep=8,
...           iterations=1, duration_s=1.0)
>>> get_policy("locality").place(st, job).tier
'pod'
"""

from lumoscore.placement.admit import (
    LOGICAL_MODES,
    Admission,
    Reconfiguration,
    admit,
    fail,
    feasible_demand,
    finish,
    reconfigure,
)
from lumoscore.placement.demand import DEMAND_METHODS, class_costs, job_demand, share_paths
from lumoscore.placement.podselect import (
    PodSelection,
    distribute_units,
    select_pods_exact,
    select_pods_greedy,
)
from lumoscore.placement.policies import (
    POD_SELECTION,
    POLICIES,
    PlacementPolicy,
    get_policy,
    place,
    release,
)
from lumoscore.placement.state import (
    REFUSAL_KINDS,
    ClusterState,
    DemandPart,
    Placement,
    PlacementError,
    Refusal,
)

__all__ = [
    "DEMAND_METHODS",
    "LOGICAL_MODES",
    "POD_SELECTION",
    "POLICIES",
    "REFUSAL_KINDS",
    "Admission",
    "ClusterState",
    "DemandPart",
    "Placement",
    "PlacementError",
    "PlacementPolicy",
    "PodSelection",
    "Reconfiguration",
    "Refusal",
    "admit",
    "class_costs",
    "distribute_units",
    "fail",
    "feasible_demand",
    "finish",
    "get_policy",
    "job_demand",
    "place",
    "reconfigure",
    "release",
    "select_pods_exact",
    "select_pods_greedy",
    "share_paths",
]
