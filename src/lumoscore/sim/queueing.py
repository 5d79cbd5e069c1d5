"""Queue policies: the order in which waiting jobs are offered to the placer.

* ``fifo``: arrival order, head-of-line blocking (a job that does not fit blocks the others);
* ``backfill``: arrival order, later jobs may start when an earlier one does not fit;
* ``edf``: earliest deadline first (jobs without a deadline last), head-of-line blocking;
* ``smallest-first``: fewest GPUs first, head-of-line blocking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lumoscore.errors import ConfigError
from lumoscore.workload.job import Job

__all__ = ["QUEUE_POLICIES", "blocking", "check_policy", "ordered"]

QUEUE_POLICIES: tuple[str, ...] = ("fifo", "backfill", "edf", "smallest-first")


def check_policy(name: str) -> str:
    """Return ``name`` if it is a known policy, else raise a ConfigError listing them."""
    if name not in QUEUE_POLICIES:
        raise ConfigError(f"queue policy {name!r} unknown; allowed: {', '.join(QUEUE_POLICIES)}")
    return name


def blocking(policy: str) -> bool:
    """Whether a job that does not fit stops the ones behind it."""
    return policy != "backfill"


def ordered(policy: str, waiting: Sequence[Job]) -> list[Job]:
    """Waiting jobs in the order the policy offers them (``waiting`` is in arrival order)."""
    if policy in ("fifo", "backfill"):
        return list(waiting)
    if policy == "edf":
        return sorted(
            waiting,
            key=lambda j: (math.inf if j.deadline_s is None else j.deadline_s, j.arrival_s),
        )
    return sorted(waiting, key=lambda j: (j.gpus, j.arrival_s))
