"""Cluster model, port-level physical wiring and logical topology of LumosCore clusters."""

from lumoscore.topology.cluster import ClusterSpec, load_cluster

__all__ = ["ClusterSpec", "load_cluster"]

# ---- port-level wiring, circuits and realization (wiring area) ----------------------------
from lumoscore.topology.circuits import (
    CIRCUIT_COLUMNS,
    logical_topology,
    ltcr,
    read_circuits,
    verify_circuits,
    write_circuits,
)
from lumoscore.topology.realize import (
    ExactRealization,
    UnrealizableError,
    realize,
    realize_exact,
)
from lumoscore.topology.wiring import (
    RECORD_COLUMNS,
    WIRING_KINDS,
    Wiring,
    build_wiring,
    max_gpus,
    max_pods,
    read_wiring_map,
)

__all__ += [
    "CIRCUIT_COLUMNS",
    "RECORD_COLUMNS",
    "WIRING_KINDS",
    "ExactRealization",
    "UnrealizableError",
    "Wiring",
    "build_wiring",
    "logical_topology",
    "ltcr",
    "max_gpus",
    "max_pods",
    "read_circuits",
    "read_wiring_map",
    "realize",
    "realize_exact",
    "verify_circuits",
    "write_circuits",
]

# ---- logical topology (placement area) ----------------------------------------------------
from lumoscore.topology.logical import (  # noqa: E402 (after the wiring block)
    LOGICAL_METHODS,
    LogicalTopology,
    Split,
    apply_split,
    backup_mesh,
    check_logical_topology,
    design_logical_topology,
    extend_logical_topology,
    free_link_split,
    greedy_spine_assignment,
    heuristic_decomposition,
    ilp_logical_topology,
    port_mesh,
    shrink_logical_topology,
    theorem_42_condition,
)

__all__ += [
    "LOGICAL_METHODS",
    "LogicalTopology",
    "Split",
    "apply_split",
    "backup_mesh",
    "check_logical_topology",
    "design_logical_topology",
    "extend_logical_topology",
    "free_link_split",
    "greedy_spine_assignment",
    "heuristic_decomposition",
    "ilp_logical_topology",
    "port_mesh",
    "shrink_logical_topology",
    "theorem_42_condition",
]
