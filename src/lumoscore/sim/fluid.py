"""The flows in flight of jobs that share links: a fluid model with max-min fair rates.

Rates are piecewise constant: they change only when a round's flows join or leave, a flow
finishes, or link capacities change. :class:`FluidSet` keeps the in-flight rows of every
contending job in flat arrays (CSR routes, weights, remaining bits, an owner slot per row) and
runs them ahead in compiled code (:func:`~lumoscore.sim.kernels.fluid_advance`) until the next
external event or until some job's round has no flow left, re-solving incrementally after flow
completions.

Examples
--------
>>> import numpy as np
>>> from lumoscore.sim.plan import RoundPlan
>>> rp = RoundPlan(np.array([0, 1, 2]), np.array([0, 0]), np.ones(2), np.array([10.0, 20.0]),
...                0.0, "x", 0.0, 0.0, np.array([0]))
>>> fs = FluidSet(np.array([10.0]))
>>> fs.add(7, rp)
>>> fs.run_until(np.inf)
True
>>> fs.clock_s, fs.pop_finished()
(3.0, [7])
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from lumoscore.sim.kernels import (
    BOTT,
    FULL_SOLVE,
    M_SOLVES,
    META,
    RATE,
    REFILL,
    REM0,
    ROW_FIELDS,
    T0,
    FluidState,
    fluid_advance,
    link_rows,
    new_state,
    rebuild_heap,
    remaining_at,
)
from lumoscore.sim.plan import DONE_RTOL, RoundPlan

__all__ = ["FluidSet"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class FluidSet:
    """In-flight weighted flows of several jobs over one fabric's links.

    ``capacity_bps`` is the fabric's capacity array (shared: call :meth:`touch` after it
    changes). Exact sets (``eps = 0``) re-solve incrementally when rounds join or flows
    finish and keep their rates when finished rows are dropped; (1+eps) sets refill from the
    smallest finished rate and solve from scratch when rounds join.
    """

    def __init__(self, capacity_bps: FloatArray, eps: float = 0.0) -> None:
        self.capacity = capacity_bps
        self.grow = 1.0 + eps
        self.indptr = np.zeros(1, dtype=np.int64)
        self.indices = np.zeros(0, dtype=np.int64)
        self.weight = np.zeros(0)
        self.size = np.zeros(0)
        self.alive = np.zeros(0, dtype=np.bool_)
        self.slot = np.zeros(0, dtype=np.int64)
        self.row_of = np.zeros(0, dtype=np.int64)  # row of the round's plan
        self.live = np.zeros(0, dtype=np.int64)  # live rows per slot
        self.n_rows: dict[int, int] = {}  # slot -> rows of its round's plan
        self.slot_of: dict[int, int] = {}  # job id -> slot
        self.job_of: dict[int, int] = {}  # slot -> job id
        self.clock_s = 0.0
        self._st: FluidState = new_state(0, capacity_bps.size)
        self._mode = FULL_SOLVE
        self._r_min = math.inf
        self._new_from = 0  # rows from here on joined since the last solve
        self._link_rows: tuple[IntArray, IntArray] | None = None
        self._done = False  # some round has no flow left (until pop_finished)

    def __len__(self) -> int:
        """Live flow rows."""
        return int(self.live.sum())

    @property
    def solves(self) -> int:
        """Max-min (re)fillings so far."""
        return int(self._st[META][M_SOLVES])

    @property
    def rates(self) -> FloatArray:
        """Current rate of every row (valid after :meth:`run_until`; 0 for finished rows)."""
        return np.where(self.alive, self._st[RATE], 0.0)

    @property
    def remaining(self) -> FloatArray:
        """Bits every row still has to send at the clock."""
        return remaining_at(self.alive, self._st, self.clock_s)

    def jobs(self) -> set[int]:
        """Jobs with a round in the set."""
        return set(self.slot_of)

    def touch(self) -> None:
        """Link capacities changed: recompute rates from scratch before sending on."""
        self._mode = FULL_SOLVE

    def add(
        self,
        job_id: int,
        rp: RoundPlan,
        remaining: FloatArray | None = None,
        *,
        now_s: float | None = None,
        rates: FloatArray | None = None,
        bottleneck: IntArray | None = None,
    ) -> None:
        """Start a round's flows (or the rest of them, ``remaining`` bits per flow) at
        ``now_s`` (default: the clock). A set with flows in flight must have been run up to
        ``now_s`` (:meth:`run_until`).

        ``rates`` and ``bottleneck`` (per row: rate and bottleneck link of the round alone at
        this point, see :func:`~lumoscore.sim.plan.solo_state`) are an optional warm start
        of an exact set: only rows whose bottleneck breaks in company are refilled.
        """
        if job_id in self.slot_of:
            raise ValueError(f"job {job_id} already has a round in flight")
        if now_s is not None and now_s != self.clock_s:
            if len(self):
                raise ValueError(
                    f"flows in flight are at t={self.clock_s!r}; run them to {now_s!r} first"
                )
            self.clock_s = float(now_s)
        rem = rp.bits.copy() if remaining is None else remaining.astype(float)
        live = rem > rp.bits * DONE_RTOL
        if not live.any():
            return
        idx = np.flatnonzero(live)
        lens = np.diff(rp.indptr)[idx]
        pos = np.repeat(rp.indptr[idx] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
        pos = pos + np.arange(int(lens.sum()))
        s = self._free_slot()
        self.slot_of[job_id] = s
        self.job_of[s] = job_id
        self.live[s] = idx.size
        self.n_rows[s] = rp.n_flows
        k = idx.size
        self.indices = np.concatenate([self.indices, rp.indices[pos]])
        self.indptr = np.concatenate([self.indptr, self.indptr[-1] + np.cumsum(lens)])
        self.weight = np.concatenate([self.weight, rp.weight[idx]])
        self.size = np.concatenate([self.size, rp.bits[idx]])
        self.alive = np.concatenate([self.alive, np.ones(k, dtype=np.bool_)])
        self.slot = np.concatenate([self.slot, np.full(k, s, dtype=np.int64)])
        self.row_of = np.concatenate([self.row_of, idx])
        fresh = new_state(k, 0)
        fresh[REM0][:] = rem[idx]
        fresh[T0][:] = self.clock_s
        if rates is not None and bottleneck is not None and self.grow == 1.0:
            fresh[RATE][:] = rates[idx]
            fresh[BOTT][:] = bottleneck[idx]
        self._st = tuple(  # type: ignore[assignment]
            np.concatenate([a, b]) if i < ROW_FIELDS else a
            for i, (a, b) in enumerate(zip(self._st, fresh, strict=True))
        )
        self._link_rows = None
        if self.grow > 1.0:
            self._mode = FULL_SOLVE
        elif self._mode != FULL_SOLVE:
            self._mode = REFILL

    def _free_slot(self) -> int:
        for s in range(self.live.size):
            if s not in self.job_of:
                return s
        self.live = np.concatenate([self.live, np.zeros(max(4, self.live.size), np.int64)])
        return self._free_slot()

    def run_until(self, until_s: float) -> bool:
        """Send until ``until_s`` or until a job's round has no flow left; return whether one
        has (see :meth:`pop_finished`). The clock stops at the completion time."""
        if self.finished_pending():
            return True
        if not self.alive.any():
            if math.isfinite(until_s):
                self.clock_s = max(self.clock_s, float(until_s))
            return False
        if self._link_rows is None:
            self._link_rows = link_rows(self.indptr, self.indices, self.capacity.size)
        l_ptr, l_rows = self._link_rows
        clock, self._mode, self._r_min, done = fluid_advance(
            self.indptr,
            self.indices,
            self.capacity,
            self.weight,
            self.size,
            self.alive,
            self.slot,
            self.live,
            self._st,
            l_ptr,
            l_rows,
            self.clock_s,
            float(until_s),
            self._mode,
            self._r_min,
            self._new_from,
            self.grow,
            DONE_RTOL,
        )
        self._new_from = self.alive.size
        self.clock_s = float(clock)
        self._done = bool(done)
        return self._done

    def finished_pending(self) -> bool:
        """Whether some job's round has no flow left (waiting for :meth:`pop_finished`)."""
        return self._done

    def pop_finished(self) -> list[int]:
        """Jobs whose round has no flow left, in slot order; they leave the set."""
        self._done = False
        done = [s for s in sorted(self.job_of) if self.live[s] == 0]
        jobs = [self.job_of.pop(s) for s in done]
        for j in jobs:
            del self.slot_of[j]
        self._maybe_compact()
        return jobs

    def remove_job(self, job_id: int) -> FloatArray:
        """Take a job's in-flight flows out now; returns the bits each row of its round's plan
        still has to send (0 for rows done)."""
        s = self.slot_of.pop(job_id)
        del self.job_of[s]
        mine = self.alive & (self.slot == s)
        rem = np.zeros(self.n_rows.pop(s))
        rem[self.row_of[mine]] = self.remaining[mine]
        self.alive[mine] = False
        self.live[s] = 0
        self._mode = FULL_SOLVE
        self._maybe_compact()
        return rem

    def _maybe_compact(self) -> None:
        """Drop dead rows once they outnumber the live ones (rows not yet solved stay last)."""
        n = self.alive.size
        if n == 0 or 2 * int(self.alive.sum()) > n:
            return
        keep = self.alive
        lens = np.diff(self.indptr)
        self.indices = self.indices[np.repeat(keep, lens)]
        self.indptr = np.concatenate([[0], np.cumsum(lens[keep])]).astype(np.int64)
        self.weight = self.weight[keep]
        self.size = self.size[keep]
        self.slot = self.slot[keep]
        self.row_of = self.row_of[keep]
        self._new_from = int(keep[: self._new_from].sum())
        st = [a[keep] if i < ROW_FIELDS else a for i, a in enumerate(self._st)]
        self._st = tuple(st)  # type: ignore[assignment]
        self.alive = self.alive[keep]
        self._link_rows = None
        if self.grow > 1.0:
            self._mode = FULL_SOLVE
        else:
            rebuild_heap(self.alive, self._st)
