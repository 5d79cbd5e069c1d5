"""Job deployment of §IV.B: one pod group per job, units spread to balance pod traffic.

Jobs are deployed in the order given. A job goes to the pod group with the least total traffic
(sum of its jobs' per-stage ToR traffic, Eq. 5) among the groups with enough free GPUs; ties go to
the lowest group index. Its parallel units then go one by one to the pod of that group with the
least accumulated traffic that still has ``U_n`` free GPUs (ties: lowest pod). A PS job's
parameter server sits in the pod holding most of its units (ties: lowest pod), which keeps its
push/pull traffic off the OXC as far as possible.

Examples
--------
>>> from lumoscore.tdm.models import LLAMA3, Job, Network
>>> net = Network(n_pods=4, pods_per_group=2, gpus_per_pod=8, ports_per_pod=4)
>>> jobs = [Job("rar", LLAMA3["1B"], 4), Job("ps", LLAMA3["1B"], 2)]
>>> [(p.group, p.units_per_pod.tolist()) for p in deploy(net, jobs)]
[(0, [2, 2]), (1, [1, 1])]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lumoscore.errors import InfeasibleError
from lumoscore.tdm.models import Job, JobKind, Network, Placement

__all__ = ["deploy", "job_weight_bytes"]


def job_weight_bytes(job: Job) -> float:
    """Traffic weight of a job used to balance groups and pods: its ToR traffic (Eq. 5).

    Examples
    --------
    >>> from lumoscore.tdm.models import LLAMA3, Job
    >>> job_weight_bytes(Job("rar", LLAMA3["1B"], 4)) / 2.46e9
    8.0
    """
    v = job.unit_bytes * job.degree
    if job.kind is JobKind.PS:
        return v
    if job.kind is JobKind.RAR:
        return 2.0 * v
    return 2.0 * v * (job.degree - 1)


def deploy(network: Network, jobs: Sequence[Job]) -> tuple[Placement, ...]:
    """Place every job inside one pod group, balancing traffic (§IV.B).

    Parameters
    ----------
    network : Network
        The optical DCN.
    jobs : sequence of Job
        Jobs in deployment order.

    Returns
    -------
    tuple of Placement
        One placement per job, in order.

    Raises
    ------
    InfeasibleError
        A job needs more GPUs than any pod group has left, or a unit does not fit in a pod.
    """
    n_g, p = network.n_groups, network.pods_per_group
    free = np.full((n_g, p), network.gpus_per_pod, dtype=np.int64)
    pod_load = np.zeros((n_g, p))
    group_load = np.zeros(n_g)
    placements = []
    for idx, job in enumerate(jobs):
        u = int(job.gpus_per_unit)
        # Units that still fit per group (a unit never straddles pods).
        fit = (free // u).sum(axis=1)
        ok = fit >= job.degree
        if not ok.any():
            raise InfeasibleError(
                f"job {idx} ({job.name or job.model.name}, {job.degree} units of {u} GPUs) "
                f"does not fit in any pod group: at most {int(fit.max())} units fit"
            )
        g = int(np.argmin(np.where(ok, group_load, np.inf)))
        weight = job_weight_bytes(job)
        unit_w = weight / job.degree
        units = np.zeros(p, dtype=np.int64)
        for _ in range(job.degree):
            pod = int(np.argmin(np.where(free[g] >= u, pod_load[g], np.inf)))
            units[pod] += 1
            free[g, pod] -= u
            pod_load[g, pod] += unit_w
        group_load[g] += weight
        ps_pod = int(np.argmax(units)) if job.kind is JobKind.PS else -1
        placements.append(Placement(group=g, units_per_pod=units, ps_pod=ps_pod))
    return tuple(placements)
