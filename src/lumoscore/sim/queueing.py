"""Queue policies: the order in which waiting jobs are offered to the placer.

A policy is a :class:`QueuePolicy`: a function that orders the waiting jobs (given in arrival
order) and whether a job that does not fit blocks the jobs behind it. The policies live in the
:data:`QUEUE_POLICIES` registry:

* ``fifo``: arrival order, head-of-line blocking (a job that does not fit blocks the others);
* ``backfill``: arrival order, later jobs may start when an earlier one does not fit;
* ``edf``: earliest deadline first (jobs without a deadline last, ties by arrival),
  head-of-line blocking;
* ``smallest-first``: fewest GPUs first (ties by arrival), head-of-line blocking.

Adding a policy is one function and one registry entry; the simulator and every validator
(CLI, experiment files) take the names from the registry.

Examples
--------
>>> from lumoscore.workload import Job
>>> def job(i, gpus):
...     return Job(job_id=i, arrival_s=float(i), gpus=gpus, model="llama_7b", tp=8, pp=1,
...                dp=gpus // 8, ep=8, iterations=1, duration_s=1.0)
>>> jobs = [job(0, 64), job(1, 8), job(2, 16)]
>>> [j.job_id for j in QUEUE_POLICIES["smallest-first"].order(jobs)]
[1, 2, 0]
>>> QUEUE_POLICIES["backfill"].blocking
False

A new policy, largest job first:

>>> from lumoscore.registry import Registry
>>> largest = QueuePolicy(lambda waiting: sorted(waiting, key=lambda j: -j.gpus), blocking=True)
>>> registry = Registry("queue policy")
>>> _ = registry.register("largest-first", largest)
>>> [j.job_id for j in registry["largest-first"].order(jobs)]
[0, 2, 1]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lumoscore.registry import Registry

if TYPE_CHECKING:
    from lumoscore.workload.job import Job

__all__ = ["QUEUE_POLICIES", "QueuePolicy", "arrival_order", "earliest_deadline", "fewest_gpus"]


@dataclass(frozen=True)
class QueuePolicy:
    """A queue policy.

    Attributes
    ----------
    order : callable
        ``order(waiting) -> list[Job]``: the waiting jobs (in arrival order) in the order the
        placer is offered them.
    blocking : bool
        Whether a job that does not fit stops the jobs behind it (head-of-line blocking).
    """

    order: Callable[[Sequence[Job]], list[Job]]
    blocking: bool


def arrival_order(waiting: Sequence[Job]) -> list[Job]:
    """The jobs as they arrived."""
    return list(waiting)


def earliest_deadline(waiting: Sequence[Job]) -> list[Job]:
    """Earliest deadline first; jobs without a deadline last; ties by arrival."""
    return sorted(
        waiting,
        key=lambda j: (math.inf if j.deadline_s is None else j.deadline_s, j.arrival_s),
    )


def fewest_gpus(waiting: Sequence[Job]) -> list[Job]:
    """Fewest GPUs first; ties by arrival."""
    return sorted(waiting, key=lambda j: (j.gpus, j.arrival_s))


#: Queue policies by name.
QUEUE_POLICIES: Registry[QueuePolicy] = Registry("queue policy")
QUEUE_POLICIES.register("fifo", QueuePolicy(arrival_order, blocking=True))
QUEUE_POLICIES.register("backfill", QueuePolicy(arrival_order, blocking=False))
QUEUE_POLICIES.register("edf", QueuePolicy(earliest_deadline, blocking=True))
QUEUE_POLICIES.register("smallest-first", QueuePolicy(fewest_gpus, blocking=True))
