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
    FULL_SOLVE,
    LROWS,
    M_ALIVE,
    M_FALLBACKS,
    M_REFILLED,
    M_ROUNDS,
    M_SOLVES,
    META,
    RATE,
    REFILL,
    ROW_FIELDS,
    FluidState,
    append_round,
    compact_rows,
    count_rows,
    fluid_advance,
    new_state,
    rebuild_heap,
    remaining_at,
)
from lumoscore.sim.plan import DONE_RTOL, RoundPlan

__all__ = ["FluidSet"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


_NO_RATES = np.zeros(0)
_NO_BOTT = np.zeros(0, dtype=np.int64)


def _grown(a: np.ndarray, used: int, need: int) -> np.ndarray:
    """``a`` with room for ``need`` entries (capacity doubled), its first ``used`` kept."""
    if need <= a.shape[0]:
        return a
    out = np.empty(max(need, 2 * a.shape[0], 16), dtype=a.dtype)
    out[:used] = a[:used]
    return out


class FluidSet:
    """In-flight weighted flows of several jobs over one fabric's links.

    ``capacity_bps`` is the fabric's capacity array (shared: call :meth:`touch` after it
    changes). Exact sets (``eps = 0``) re-solve incrementally when rounds join or flows
    finish and keep their rates when finished rows are dropped; (1+eps) sets refill from the
    smallest finished rate and solve from scratch when rounds join. Rows live in buffers that
    grow by doubling, so a round joins in time proportional to its own rows.
    """

    def __init__(self, capacity_bps: FloatArray, eps: float = 0.0) -> None:
        self.capacity = capacity_bps
        self.grow = 1.0 + eps
        self._n = 0  # rows in use
        self._indptr = np.zeros(1, dtype=np.int64)
        self._indices = np.zeros(0, dtype=np.int64)
        self._weight = np.zeros(0)
        self._size = np.zeros(0)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._slot = np.zeros(0, dtype=np.int64)
        self._row_of = np.zeros(0, dtype=np.int64)  # row of the round's plan
        self.live = np.zeros(0, dtype=np.int64)  # live rows per slot
        self.n_rows: dict[int, int] = {}  # slot -> rows of its round's plan
        self.slot_of: dict[int, int] = {}  # job id -> slot
        self.job_of: dict[int, int] = {}  # slot -> job id
        self.clock_s = 0.0
        self._buf: FluidState = new_state(0, capacity_bps.size)
        self._views: FluidState | None = None
        self._args: tuple | None = None  # fluid_advance's arrays (see _kernel_args)
        # the rows crossing each link, as linked lists (lhead per link; lnext, lrow per entry)
        self._lhead = np.full(capacity_bps.size, -1, dtype=np.int64)
        self._lnext = np.zeros(0, dtype=np.int64)
        self._lrow = np.zeros(0, dtype=np.int64)
        self._mode = FULL_SOLVE
        self._r_min = math.inf
        self._new_from = 0  # rows from here on joined since the last solve
        self._done = False  # some round has no flow left (until pop_finished)

    # views of the rows in use
    @property
    def alive(self) -> NDArray[np.bool_]:
        """Whether each row is still sending."""
        return self._alive[: self._n]

    @property
    def slot(self) -> IntArray:
        """Owner slot of each row."""
        return self._slot[: self._n]

    @property
    def _st(self) -> FluidState:
        """The kernel state of the rows in use (views into the buffers, cached)."""
        if self._views is None or self._views[0].shape[0] != self._n:
            n = self._n
            self._views = tuple(  # type: ignore[assignment]
                a[:n] if i < ROW_FIELDS else a for i, a in enumerate(self._buf)
            )
        return self._views  # type: ignore[return-value]

    def __len__(self) -> int:
        """Live flow rows."""
        return int(self._buf[META][M_ALIVE])

    @property
    def solves(self) -> int:
        """Max-min (re)fillings so far."""
        return int(self._buf[META][M_SOLVES])

    @property
    def counters(self) -> dict[str, int]:
        """Work done so far: re-solves, rows refilled, certificate-check rounds and fall-backs
        to a solve from scratch."""
        meta = self._buf[META]
        return {
            "max_min_solves": int(meta[M_SOLVES]),
            "refilled_rows": int(meta[M_REFILLED]),
            "closure_rounds": int(meta[M_ROUNDS]),
            "closure_fallbacks": int(meta[M_FALLBACKS]),
        }

    @property
    def rates(self) -> FloatArray:
        """Current rate of every row (valid after :meth:`run_until`; 0 for finished rows)."""
        return np.where(self.alive, self._buf[RATE][: self._n], 0.0)

    @property
    def remaining(self) -> FloatArray:
        """Bits every row still has to send at the clock."""
        return remaining_at(self.alive, self._st, self.clock_s)

    @property
    def link_rows(self) -> IntArray:
        """Flow rows in flight on each link (the kernel's array: do not write)."""
        return self._buf[LROWS]

    def jobs(self) -> set[int]:
        """Jobs with a round in the set."""
        return set(self.slot_of)

    def touch(self) -> None:
        """Link capacities changed: recompute rates from scratch before sending on."""
        self._mode = FULL_SOLVE
        self._args = None

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
        rem = rp.bits if remaining is None else remaining.astype(float)
        if not (rem > rp.bits * DONE_RTOL).any():
            return
        s = self._free_slot()
        n, k_max = self._n, rp.n_flows
        nnz = int(self._indptr[n])
        # room for every row of the round (those done are skipped)
        self._indptr = _grown(self._indptr, n + 1, n + k_max + 1)
        self._indices, self._lnext, self._lrow = (
            _grown(a, nnz, nnz + rp.indices.size) for a in (self._indices, self._lnext, self._lrow)
        )
        self._weight, self._size, self._alive, self._slot, self._row_of = (
            _grown(a, n, n + k_max)
            for a in (self._weight, self._size, self._alive, self._slot, self._row_of)
        )
        self._buf = tuple(  # type: ignore[assignment]
            _grown(a, n, n + k_max) if i < ROW_FIELDS else a for i, a in enumerate(self._buf)
        )
        warm = rates is not None and bottleneck is not None and self.grow == 1.0
        k = append_round(
            rp.indptr,
            rp.indices,
            rp.weight.astype(float, copy=False),
            rp.bits.astype(float, copy=False),
            rem,
            rates.astype(float, copy=False) if warm else _NO_RATES,  # type: ignore[union-attr]
            bottleneck.astype(np.int64, copy=False) if warm else _NO_BOTT,  # type: ignore[union-attr]
            s,
            self.clock_s,
            DONE_RTOL,
            n,
            self._rows(),
            self._buf,
            (self._lhead, self._lnext, self._lrow),
        )
        self.slot_of[job_id] = s
        self.job_of[s] = job_id
        self.live[s] = k
        self.n_rows[s] = rp.n_flows
        self._n = n + k
        self._views = None
        self._args = None
        self._buf[META][M_ALIVE] += k
        if self.grow > 1.0:
            self._mode = FULL_SOLVE
        elif self._mode != FULL_SOLVE:
            self._mode = REFILL

    def _rows(self) -> tuple:
        """The row buffers (whole, with their spare room), as the kernels take them."""
        return (
            self._indptr,
            self._indices,
            self._weight,
            self._size,
            self._alive,
            self._slot,
            self._row_of,
        )

    def _free_slot(self) -> int:
        for s in range(self.live.size):
            if s not in self.job_of:
                return s
        self.live = np.concatenate([self.live, np.zeros(max(4, self.live.size), np.int64)])
        self._args = None
        return self._free_slot()

    def run_until(self, until_s: float) -> bool:
        """Send until ``until_s`` or until a job's round has no flow left; return whether one
        has (see :meth:`pop_finished`). The clock stops at the completion time."""
        if self._done:
            return True
        if not self._buf[META][M_ALIVE]:
            if math.isfinite(until_s):
                self.clock_s = max(self.clock_s, float(until_s))
            return False
        clock, self._mode, self._r_min, done = fluid_advance(
            *self._kernel_args(),
            self.clock_s,
            float(until_s),
            self._mode,
            self._r_min,
            self._new_from,
            self.grow,
            DONE_RTOL,
        )
        self._new_from = self._n
        self.clock_s = float(clock)
        self._done = bool(done)
        return self._done

    def _kernel_args(self) -> tuple:
        """The arrays :func:`~lumoscore.sim.kernels.fluid_advance` works on (views of the
        rows in use; cached until rows are added or dropped)."""
        if self._args is None:
            n = self._n
            self._args = (
                self._indptr[: n + 1],
                self._indices,
                self.capacity,
                self._weight[:n],
                self._size[:n],
                self._alive[:n],
                self._slot[:n],
                self.live,
                self._st,
                self._lhead,
                self._lnext,
                self._lrow,
            )
        return self._args

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
        count_rows(self._indptr, self._indices, np.flatnonzero(mine), self._buf[LROWS], -1)
        rem = np.zeros(self.n_rows.pop(s))
        rem[self._row_of[: self._n][mine]] = self.remaining[mine]
        self._alive[: self._n][mine] = False
        self._buf[META][M_ALIVE] -= int(mine.sum())
        self.live[s] = 0
        self._mode = FULL_SOLVE
        self._maybe_compact()
        return rem

    def _maybe_compact(self) -> None:
        """Drop dead rows once they outnumber the live ones (rows not yet solved stay last)."""
        n = self._n
        n_new = len(self)
        if n == 0 or 2 * n_new > n:
            return
        self._n, self._new_from = compact_rows(
            n, self._new_from, self._rows(), self._buf, (self._lhead, self._lnext, self._lrow)
        )
        self._views = None
        self._args = None
        if self.grow > 1.0:
            self._mode = FULL_SOLVE
        else:
            rebuild_heap(self.alive, self._st)
