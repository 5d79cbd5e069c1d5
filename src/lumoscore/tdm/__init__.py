"""Time-division multiplexed multi-stage scheduling of PS / RAR / all-to-all jobs in an ODCN.

Tang, Chen, Zhu: jobs are split into two groups that alternate computing and communicating over
four stages per round, with per-stage OXC topologies. See ``docs/tdm.md``. The exact ILP lives in
:mod:`lumoscore.tdm.ilp`, configuration and presets in :mod:`lumoscore.tdm.config`, and the
experiment driver in :mod:`lumoscore.tdm.runner`.

Examples
--------
>>> from lumoscore.tdm import LLAMA3, Job, Network, build_instance, hill_climb
>>> net = Network(n_pods=4, pods_per_group=4, gpus_per_pod=64, ports_per_pod=6)
>>> inst = build_instance(net, [Job("ps", LLAMA3["8B"], 4, tokens=64),
...                             Job("rar", LLAMA3["8B"], 4, tokens=64)])
>>> res = hill_climb(inst)
>>> bool(res.schedule.round_s < res.start.round_s)
True
"""

from __future__ import annotations

from lumoscore.tdm.deployment import deploy
from lumoscore.tdm.grouping import HillClimbResult, hill_climb
from lumoscore.tdm.models import LLAMA3, Compute, Job, JobKind, ModelSpec, Network, Placement
from lumoscore.tdm.ring import form_ring, is_single_ring
from lumoscore.tdm.schedule import (
    Instance,
    Schedule,
    build_instance,
    evaluate_grouping,
    non_tdm_baseline,
)
from lumoscore.tdm.topology import oxc_topology

__all__ = [
    "LLAMA3",
    "Compute",
    "HillClimbResult",
    "Instance",
    "Job",
    "JobKind",
    "ModelSpec",
    "Network",
    "Placement",
    "Schedule",
    "build_instance",
    "deploy",
    "evaluate_grouping",
    "form_ring",
    "hill_climb",
    "is_single_ring",
    "non_tdm_baseline",
    "oxc_topology",
]
