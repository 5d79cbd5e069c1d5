"""Traffic of LLM training jobs: collectives as rounds of flows, the iteration schedule of a
placed job, rank and communication-domain arrangement, and leaf-level demand (``docs/traffic.md``).
"""

from lumoscore.traffic.arrangement import (
    arrange_halving_doubling,
    arrange_hierarchical_ring,
    arrange_job,
    arrange_ring,
    pod_counts,
)
from lumoscore.traffic.demand import (
    c_link,
    is_leafwise_permutation,
    leaf_demand,
    max_flows_pod_to_pod,
    research_pairs,
)
from lumoscore.traffic.flows import (
    Flows,
    Round,
    Schedule,
    aggregate,
    drop_intra_server,
    ideal_round_s,
    nic_load_bytes,
    pair_totals,
)
from lumoscore.traffic.iteration import class_times_s, iteration_flows, rank_grid

__all__ = [
    "Flows",
    "Round",
    "Schedule",
    "aggregate",
    "arrange_halving_doubling",
    "arrange_hierarchical_ring",
    "arrange_job",
    "arrange_ring",
    "c_link",
    "class_times_s",
    "drop_intra_server",
    "ideal_round_s",
    "is_leafwise_permutation",
    "iteration_flows",
    "leaf_demand",
    "max_flows_pod_to_pod",
    "nic_load_bytes",
    "pair_totals",
    "pod_counts",
    "rank_grid",
    "research_pairs",
]
