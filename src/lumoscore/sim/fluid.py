"""The flows in flight of jobs that share links: a fluid model with max-min fair rates.

Rates are piecewise constant: they change only when a round's flows join or a flow finishes.
:class:`FluidSet` keeps the in-flight rows of every contending job in flat arrays (CSR routes,
weights, remaining bits, owner job), recomputes max-min rates over them when the set changes,
and reports the time of the next flow completion.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from lumoscore.sim.maxmin import fluid_rates
from lumoscore.sim.plan import DONE_RTOL, RoundPlan

__all__ = ["FluidSet"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class FluidSet:
    """In-flight weighted flows of several jobs over one fabric's links."""

    def __init__(self, capacity_bps: FloatArray, eps: float = 0.0) -> None:
        self.capacity = capacity_bps
        self.grow = 1.0 + eps
        self.indptr = np.zeros(1, dtype=np.int64)
        self.indices = np.zeros(0, dtype=np.int64)
        self.weight = np.zeros(0)
        self.size = np.zeros(0)
        self.remaining = np.zeros(0)
        self.owner = np.zeros(0, dtype=np.int64)
        self.rates = np.zeros(0)
        self.clock_s = 0.0
        self.solves = 0

    def __len__(self) -> int:
        return int(self.weight.size)

    def jobs(self) -> set[int]:
        """Jobs with flows in flight."""
        return set(np.unique(self.owner).tolist())

    def advance(self, now_s: float) -> None:
        """Send at the current rates until ``now_s``."""
        dt = now_s - self.clock_s
        if dt > 0 and self.remaining.size:
            self.remaining -= self.rates * dt
        self.clock_s = max(self.clock_s, now_s)

    def add(self, job_id: int, rp: RoundPlan, remaining: FloatArray | None = None) -> None:
        """Start a round's flows (or the rest of them, ``remaining`` bits per flow)."""
        rem = rp.bits.copy() if remaining is None else remaining.astype(float)
        live = rem > rp.bits * DONE_RTOL
        if not live.any():
            return
        idx = np.flatnonzero(live)
        lens = np.diff(rp.indptr)[idx]
        pos = np.repeat(rp.indptr[idx] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
        pos = pos + np.arange(int(lens.sum()))
        self.indices = np.concatenate([self.indices, rp.indices[pos]])
        self.indptr = np.concatenate([self.indptr, self.indptr[-1] + np.cumsum(lens)])
        self.weight = np.concatenate([self.weight, rp.weight[idx]])
        self.size = np.concatenate([self.size, rp.bits[idx]])
        self.remaining = np.concatenate([self.remaining, rem[idx]])
        self.owner = np.concatenate([self.owner, np.full(idx.size, job_id, dtype=np.int64)])
        self.rates = np.concatenate([self.rates, np.zeros(idx.size)])

    def _keep(self, keep: NDArray[np.bool_]) -> None:
        lens = np.diff(self.indptr)
        mask = np.repeat(keep, lens)
        self.indices = self.indices[mask]
        self.indptr = np.concatenate([[0], np.cumsum(lens[keep])]).astype(np.int64)
        self.weight = self.weight[keep]
        self.size = self.size[keep]
        self.remaining = self.remaining[keep]
        self.owner = self.owner[keep]
        self.rates = self.rates[keep]

    def remove_job(self, job_id: int) -> FloatArray:
        """Take a job's in-flight flows out (returns their remaining bits)."""
        mine = self.owner == job_id
        rem = self.remaining[mine].copy()
        self._keep(~mine)
        return rem

    def pop_finished(self) -> set[int]:
        """Drop finished flows; return the jobs that have no flow left in flight."""
        if not self.weight.size:
            return set()
        done = self.remaining <= self.size * DONE_RTOL
        if not done.any():
            return set()
        before = set(np.unique(self.owner[done]).tolist())
        self._keep(~done)
        after = set(np.unique(self.owner).tolist()) if self.owner.size else set()
        return before - after

    def solve(self) -> float:
        """Recompute max-min rates; return the time until the next flow finishes (inf if none)."""
        if not self.weight.size:
            return math.inf
        alive = np.ones(self.weight.size, dtype=np.bool_)
        self.rates = fluid_rates(
            self.indptr, self.indices, self.weight, self.capacity, alive, self.grow
        )
        self.solves += 1
        return float((self.remaining / self.rates).min())
