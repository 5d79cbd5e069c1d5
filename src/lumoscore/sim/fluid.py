"""The flows in flight of jobs that share links: a fluid model with max-min fair rates.

Rates are piecewise constant: they change only when a round's flows join or leave, a flow
finishes, or link capacities change. :class:`FluidSet` keeps the in-flight rows of every
contending job in flat arrays (CSR routes, weights, remaining bits, an owner slot per row) and
runs them ahead in compiled code (:func:`~lumoscore.sim.kernels.fluid_advance`) until the next
external event or until some job's round has no flow left, re-solving incrementally after flow
completions.

Parts of a round that share no link with other rounds (see :mod:`lumoscore.sim.components`)
stay out of the shared solve: they keep their solo timeline, hold their links and end at a
known time; a round that later joins on one of their links brings them in at their exact
progress.

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

import heapq
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lumoscore.npsets import unique
from lumoscore.sim.components import mark_parts, round_components, split_round, sub_rows
from lumoscore.sim.kernels import (
    FULL_SOLVE,
    HKEY,
    LROWS,
    M_ALIVE,
    M_FALLBACKS,
    M_HEAP,
    M_REFILLED,
    M_ROUNDS,
    M_SOLVES,
    META,
    RATE,
    RATES_VALID,
    REFILL,
    ROW_FIELDS,
    FluidState,
    append_round,
    compact_rows,
    count_rows,
    fluid_advance,
    fluid_run,
    kernel_grow,
    new_state,
    rebuild_heap,
    remaining_at,
)
from lumoscore.sim.plan import DONE_RTOL, RoundPlan, _first_end, _rem_before_first_end

__all__ = ["FluidSet"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


_NO_RATES = np.zeros(0)
_NO_BOTT = np.zeros(0, dtype=np.int64)


@dataclass(eq=False)
class _Detached:
    """The parts of a round kept on its solo timeline (one group per slot): the round's
    parts (row labels, per-part end from the round's start, per-link part), which of them are
    still detached, when the round started alone and when the group ends; and the round's
    state when it joined the set (reused when a part is brought in at that time)."""

    slot: int
    rp: RoundPlan
    lab: IntArray
    part_end: FloatArray
    link_part: IntArray
    detached: NDArray[np.bool_]
    started_s: float
    end_s: float
    joined_s: float
    rem: FloatArray
    rates: FloatArray | None
    bott: IntArray | None

    def last_end(self) -> float:
        """When the last of the parts still detached ends alone."""
        return self.started_s + float(self.part_end[self.detached].max())


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
        self._meta = self._buf[META]  # (never reallocated: only per-row arrays grow)
        self._views: FluidState | None = None
        self._args: tuple | None = None  # fluid_advance's arrays (see _kernel_args)
        # the rows crossing each link: a vector per link in one pool (see link_lists)
        self._ldir = np.zeros(3 * capacity_bps.size + 1, dtype=np.int64)
        self._pool = np.zeros(0, dtype=np.int64)
        self._mode = FULL_SOLVE
        self._r_min = math.inf
        self._new_from = 0  # rows from here on joined since the last solve
        self._done = False  # some round has no flow left (until pop_finished)
        # detached parts: one group per slot, the group holding each link, groups by end
        self._groups: dict[int, _Detached] = {}
        self._detached_on = np.full(capacity_bps.size, -1, dtype=np.int64)
        self._ends: list[tuple[float, int]] = []
        self._n_detached = 0
        self._n_rejoined = 0

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
        """Live flow rows in the shared solve, plus one per round with detached parts."""
        return int(self._buf[META][M_ALIVE]) + len(self._groups)

    @property
    def solves(self) -> int:
        """Max-min (re)fillings so far."""
        return int(self._buf[META][M_SOLVES])

    @property
    def counters(self) -> dict[str, int]:
        """Work done so far: re-solves, rows refilled, certificate-check rounds, fall-backs
        to a solve from scratch, parts of rounds kept out of the solve when their round
        joined and parts brought in later."""
        meta = self._buf[META]
        return {
            "max_min_solves": int(meta[M_SOLVES]),
            "refilled_rows": int(meta[M_REFILLED]),
            "closure_rounds": int(meta[M_ROUNDS]),
            "closure_fallbacks": int(meta[M_FALLBACKS]),
            "detached_parts": self._n_detached,
            "rejoined_parts": self._n_rejoined,
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
        """Flow rows in flight on each link, a detached part counting as one row until its
        round's detached parts end (the kernel's array: do not write)."""
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
        started_s: float | None = None,
    ) -> None:
        """Start a round's flows (or the rest of them, ``remaining`` bits per flow) at
        ``now_s`` (default: the clock). A set with flows in flight must have been run up to
        ``now_s`` (:meth:`run_until`).

        ``rates`` and ``bottleneck`` (per row: rate and bottleneck link of the round alone at
        this point, see :func:`~lumoscore.sim.plan.solo_state`) are an optional warm start
        of an exact set: only rows whose bottleneck breaks in company are refilled.

        ``started_s``: the round has run alone on its solo timeline (``rp.idle_s``) since
        then, and ``remaining`` is its progress on it. An exact set then keeps the parts of
        the round that cross no link in use by the set on that timeline (detached).
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
        self.slot_of[job_id] = s
        self.job_of[s] = job_id
        self.n_rows[s] = rp.n_flows
        self.live[s] = 0
        if started_s is not None and self.grow == 1.0 and rp.idle_s is not None:
            g = self._split(s, rp, float(started_s), rem, rates, bottleneck)
            if g is not None:
                rem = np.where(g.detached[g.lab], 0.0, rem)  # (their rows stay out)
        elif self._groups:
            self.attach(rp.links)  # detached parts on its links meet it
        self.live[s] += self._append(s, rp, rem, rates, bottleneck)
        if self.grow > 1.0:
            self._mode = FULL_SOLVE
        elif self._mode != FULL_SOLVE:
            self._mode = REFILL

    def _split(
        self,
        s: int,
        rp: RoundPlan,
        started_s: float,
        rem: FloatArray,
        rates: FloatArray | None,
        bott: IntArray | None,
    ) -> _Detached | None:
        """Detach the parts of a round joining in slot ``s`` that cross no link in use (after
        bringing in the detached parts of other rounds on its links); returns their group,
        None if every part joins the solve."""
        parts = rp.start_state.get("parts")
        if parts is None:
            parts = rp.start_state["parts"] = round_components(
                rp.indptr, rp.indices, self.capacity, rp.links, rp.idle_s
            )
        lab, part_end, link_part = parts
        solve, others = split_round(
            rp.links, link_part, part_end, started_s, self.clock_s, self._buf[LROWS],
            self._detached_on,
        )  # fmt: skip
        if others.size:
            self.attach(others)
        if solve.all():
            return None
        detached = ~solve
        mark_parts(rp.links, link_part, detached, self._buf[LROWS], self._detached_on, s)
        g = _Detached(
            s, rp, lab, part_end, link_part, detached, started_s, math.inf, self.clock_s, rem,
            rates, bott,
        )  # fmt: skip
        g.end_s = g.last_end()
        self._groups[s] = g
        heapq.heappush(self._ends, (g.end_s, s))
        self.live[s] += 1  # the detached parts, until they end or join
        self._n_detached += int(detached.sum())
        return g

    def _append(
        self,
        s: int,
        rp: RoundPlan,
        rem: FloatArray,
        rates: FloatArray | None,
        bottleneck: IntArray | None,
    ) -> int:
        """Append the rows of ``rp`` with bits left in ``rem`` to slot ``s``; returns how
        many."""
        n, k_max = self._n, rp.n_flows
        nnz = int(self._indptr[n])
        # room for every row of the round (those done are skipped)
        if nnz + rp.indices.size > self._indices.size:
            self._indices = _grown(self._indices, nnz, nnz + rp.indices.size)
        self._indptr = _grown(self._indptr, n + 1, n + k_max + 1)
        if n + k_max > self._weight.size:  # (the row buffers grow together)
            self._weight, self._size, self._alive, self._slot, self._row_of = (
                _grown(a, n, n + k_max)
                for a in (self._weight, self._size, self._alive, self._slot, self._row_of)
            )
            self._buf = tuple(  # type: ignore[assignment]
                _grown(a, n, n + k_max) if i < ROW_FIELDS else a for i, a in enumerate(self._buf)
            )
        warm = rates is not None and bottleneck is not None and self.grow == 1.0
        k, self._pool = append_round(
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
            (self._ldir, self._pool),
        )
        self._n = n + k
        self._views = None
        self._args = None
        self._buf[META][M_ALIVE] += k
        return k

    def _detached_state(
        self, g: _Detached, parts: NDArray[np.bool_]
    ) -> tuple[IntArray, FloatArray, FloatArray, IntArray]:
        """The rows of some detached parts of a group and, at the clock, their remaining bits,
        rates and bottleneck links (on their solo timeline: parts are independent)."""
        rp = g.rp
        rows = np.flatnonzero(parts[g.lab])
        if self.clock_s == g.joined_s and g.rates is not None and g.bott is not None:
            return rows, g.rem[rows], g.rates[rows], g.bott[rows]
        bits = rp.bits[rows].astype(float)
        dt = self.clock_s - g.started_s
        if "rate" in rp.start_state:  # before their first flow ends, the rates at the start
            rate, bott = rp.start_state["rate"][rows], rp.start_state["bott"][rows]
            if dt < _first_end(bits, rate):
                return rows, _rem_before_first_end(bits, rate, bott, dt), rate, bott
        ptr, idx = sub_rows(rp.indptr, rp.indices, rows)
        _, rem, _, _, rate, bott, _ = fluid_run(
            ptr,
            idx,
            rp.weight[rows].astype(float),
            bits,
            bits,
            self.capacity,
            dt,
            DONE_RTOL,
            1.0,  # (every call passes grow: one compiled overload, one cache load)
        )
        return rows, rem, rate, bott

    def attach(self, links: IntArray) -> None:
        """Bring the detached parts on ``links`` into the shared solve at their progress now.
        Call it (with the set run up to now) before the capacities of those links change."""
        links = np.asarray(links, dtype=np.int64)
        on = self._detached_on[links]
        for s in unique(on[on >= 0]).tolist():
            g = self._groups[s]
            parts = np.zeros(g.detached.size, dtype=bool)
            parts[g.link_part[np.searchsorted(g.rp.links, links[on == s])]] = True
            self._join(g, parts & g.detached)

    def _join(self, g: _Detached, parts: NDArray[np.bool_]) -> None:
        """Bring ``parts`` (detached) of a group into the shared solve now."""
        s, rp = g.slot, g.rp
        mark_parts(rp.links, g.link_part, parts, self._buf[LROWS], self._detached_on, -1)
        g.detached &= ~parts
        self._n_rejoined += int(parts.sum())
        rows, rem, rate, bott = self._detached_state(g, parts)
        n = rp.n_flows
        full, rates, bottleneck = np.zeros(n), np.zeros(n), np.full(n, -1, dtype=np.int64)
        full[rows], rates[rows], bottleneck[rows] = rem, rate, bott
        self.live[s] += self._append(s, rp, full, rates, bottleneck)
        if self._mode != FULL_SOLVE:
            self._mode = REFILL
        if not g.detached.any():
            self._end_group(g)
        else:
            end_s = g.last_end()
            if end_s < g.end_s:
                g.end_s = end_s
                heapq.heappush(self._ends, (end_s, s))

    def _release(self, g: _Detached) -> None:
        """Give back the links a group's detached parts hold and forget the group."""
        mark_parts(g.rp.links, g.link_part, g.detached, self._buf[LROWS], self._detached_on, -1)
        del self._groups[g.slot]

    def _end_group(self, g: _Detached) -> None:
        """A group has ended (or has no detached part left): its slot counts one less."""
        self._release(g)
        self.live[g.slot] -= 1
        if self.live[g.slot] == 0:
            self._done = True

    def _end_groups(self) -> float:
        """End the groups due by the clock; return when the next one ends."""
        ends = self._ends
        while ends:
            t, s = ends[0]
            g = self._groups.get(s)
            if g is None or g.end_s != t:
                heapq.heappop(ends)  # stale: gone, or it ends earlier now
            elif t <= self.clock_s:
                heapq.heappop(ends)
                self._end_group(g)
            else:
                return t
        return math.inf

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
        while True:
            next_end = self._end_groups()
            if self._done:
                return True
            stop = min(float(until_s), next_end)
            meta = self._buf[META]
            if (
                meta[M_ALIVE]
                and self._mode == RATES_VALID
                and (meta[M_HEAP] == 0 or self._buf[HKEY][0] > stop)
            ):
                # no re-solve due and no flow ends by then: what the kernel would do
                if math.isfinite(stop):
                    self.clock_s = max(self.clock_s, stop)
            elif meta[M_ALIVE]:
                clock, self._mode, self._r_min, done = fluid_advance(
                    *self._kernel_args(),
                    self.clock_s,
                    stop,
                    self._mode,
                    self._r_min,
                    self._new_from,
                    kernel_grow(self.grow),
                    DONE_RTOL,
                )
                self._new_from = self._n
                self.clock_s = float(clock)
                if done:
                    self._done = True
                    return True
            elif math.isfinite(stop):
                self.clock_s = max(self.clock_s, stop)
            if not (next_end <= until_s and self.clock_s >= next_end):
                return False

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
                self._ldir,
                self._pool,
            )
        return self._args

    def finished_pending(self) -> bool:
        """Whether some job's round has no flow left (waiting for :meth:`pop_finished`)."""
        return self._done

    def busy(self) -> bool:
        """Whether the set has anything to run or report: ``len(self) > 0`` or
        :meth:`finished_pending` (asked before every event, hence without ``len``'s sum)."""
        return self._done or bool(self._groups) or bool(self._meta[M_ALIVE])

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
        g = self._groups.get(s)
        if g is not None:
            rows, rem_detached, _, _ = self._detached_state(g, g.detached)
            rem[rows] = rem_detached
            self._release(g)
        self._alive[: self._n][mine] = False
        self._buf[META][M_ALIVE] -= int(mine.sum())
        self.live[s] = 0
        self._mode = FULL_SOLVE
        self._maybe_compact()
        return rem

    def _maybe_compact(self) -> None:
        """Drop dead rows once they outnumber the live ones (rows not yet solved stay last)."""
        n = self._n
        n_new = int(self._buf[META][M_ALIVE])
        if n == 0 or 2 * n_new > n:
            return
        self._n, self._new_from, self._pool = compact_rows(
            n, self._new_from, self._rows(), self._buf, (self._ldir, self._pool)
        )
        self._views = None
        self._args = None
        if self.grow > 1.0:
            self._mode = FULL_SOLVE
        else:
            rebuild_heap(self.alive, self._st)
