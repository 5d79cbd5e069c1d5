"""Cluster model, port-level physical wiring and logical topology of LumosCore clusters."""

from lumoscore.topology.cluster import ClusterSpec, load_cluster

__all__ = ["ClusterSpec", "load_cluster"]
