"""Compiled fluid-model kernels: flows sending at max-min fair rates until they finish.

Rates are piecewise constant between flow completions. Three facts keep the cost of a step
proportional to the flows whose rate actually changes, not to all flows in flight:

* **Bottleneck certificates (exact mode).** An allocation is max-min fair iff it is feasible
  and every flow crosses a saturated link on which no flow is faster (its bottleneck). Every
  row keeps the link that froze its rate. When rows leave or join, only the joining rows and
  the rows whose certificate breaks (their link lost load, or a refilled row now freezes below
  them on a link they share) are refilled, with the others' load frozen in; the links they
  cross are checked again until no certificate breaks (:func:`_closure`). Finishing flows that
  leave only links on which no row is certified break no certificate and cost no solve. When
  the refilled set grows, its rows frozen below the level the newcomers can reach keep their
  rates (:func:`_to_refill`), so a set is not refilled whole again for every row it gains.
* **Refilling from a level ((1+eps) mode).** After flows leave, every flow frozen at a level
  *below* the smallest rate ``r`` of the flows that left keeps its rate: progressive filling
  on the smaller problem goes through exactly the same levels up to ``r`` (a link crossed by
  a flow of rate ``r`` fills at a level ``>= r``, and removing load only raises fill levels).
  So only the flows at or above ``r`` are refilled (:data:`REFILL_MARGIN` absorbs float
  round-off); flows are kept sorted by rate, so they are a suffix found by binary search.
* **Finish times, not remaining bytes.** Each flow keeps its remaining bits at the time its rate
  was last set and its finish time; nothing is touched for the flows whose rate did not change.
  Flows whose finish times are set together and are equal (rows frozen at one level with the
  same bits left, a round's flows at their start rates) form one *finish group*, one entry of a
  binary heap: flows that end together cost one heap operation, not one each.

:func:`fluid_run` runs one set of flows that start together (a round alone on the fabric);
:func:`fluid_advance` runs the shared in-flight flows of several jobs ahead in time until the
next external event or until some job's round has no flow left (its barrier).

The state of a set is a tuple of arrays declared once, in :data:`STATE_FIELDS` (name, per row
or per link, dtype, initial value; the index constants ``RATE``, ..., ``META`` are their
positions and :func:`new_state` makes them); a refill's scratch arrays are the segments of
one allocation declared in :data:`REFILL_SCRATCH`.

Examples
--------
Two flows share a 10 bit/s link; one has 10 bits, the other 20. Both get 5 bit/s; the first
finishes at t = 2 s, then the second gets 10 bit/s and finishes its last 10 bits at t = 3 s:

>>> import numpy as np
>>> t, rem, links, peak, _, _, idle = fluid_run(
...     np.array([0, 1, 2]), np.array([0, 0]), np.ones(2), np.array([10.0, 20.0]),
...     np.array([10.0, 20.0]), np.array([10.0]), np.inf, 1e-9)
>>> float(t), rem.tolist(), links.tolist(), peak.tolist(), idle.tolist()
(3.0, [0.0, 0.0], [0], [10.0], [3.0])
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import is_cached
from lumoscore.jitsort import argsort_stable
from lumoscore.sim.borrow import borrowed, kernel
from lumoscore.sim.heaps import fresh_top, heap_remove, heap_set, open_links, pop_through
from lumoscore.sim.maxmin import _compact

__all__ = [
    "META_ENTRIES",
    "REFILL_MARGIN",
    "REFILL_SCRATCH",
    "STATE_FIELDS",
    "FluidState",
    "Segment",
    "StateField",
    "append_round",
    "compact_rows",
    "count_rows",
    "fluid_advance",
    "fluid_run",
    "kernel_grow",
    "link_lists",
    "link_lists_append",
    "new_state",
    "rebuild_heap",
    "remaining_at",
    "solo_run",
    "solo_run_cached",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Flows whose rate is below ``(1 - REFILL_MARGIN)`` times the smallest rate of the flows that
#: left keep their rate; the others are refilled.
REFILL_MARGIN = 1e-9
#: Relative tolerance under which two bottleneck levels are the same level.
LEVEL_RTOL = 1e-12
#: A filling over at most this many links finds its lowest level by a scan, not a heap.
SCAN_LINKS = 256

# solve modes
RATES_VALID, REFILL, FULL_SOLVE = 0, 1, 2


@dataclass(frozen=True)
class StateField:
    """One array of the fluid state (:data:`STATE_FIELDS`).

    Attributes
    ----------
    name : str
        The module constant holding its position in the state tuple.
    kind : str
        ``"row"`` (one entry per flow row), ``"link"`` (one per compact link) or ``"meta"``
        (one per :data:`META_ENTRIES` entry).
    dtype : type
        ``np.float64`` or ``np.int64``.
    fill : float
        Initial value of every entry (:func:`new_state`).
    doc : str
        What it holds.
    """

    name: str
    kind: str
    dtype: type
    fill: float
    doc: str


@dataclass(frozen=True)
class Segment:
    """One array of the refill's scratch (:data:`REFILL_SCRATCH`), a segment of one int64
    allocation.

    Attributes
    ----------
    name : str
        The module constant holding its index in :data:`REFILL_SCRATCH`.
    dtype : type
        ``np.int64``, or ``np.float64`` (a float view of the segment).
    length : tuple of int
        Entries, as the coefficients of ``(m_max, nnz, k, 1)``: at most ``m_max`` links,
        ``nnz`` route entries and ``k`` rows refilled.
    doc : str
        What it holds.
    """

    name: str
    dtype: type
    length: tuple[int, int, int, int]
    doc: str


_KINDS = ("row", "link", "meta")
_state_fields: list[StateField] = []
_meta_entries: list[str] = []
_segments: list[Segment] = []


def _field(name: str, kind: str, dtype: type, fill: float, doc: str) -> int:
    """Declare the next array of the fluid state; returns its position. Per-row arrays come
    first, then per-link arrays, then the one ``meta`` array."""
    last = _KINDS.index(_state_fields[-1].kind) if _state_fields else 0
    if kind not in _KINDS or _KINDS.index(kind) < last or (kind == "meta" and last == 2):
        raise ValueError(f"state field {name}: kind {kind!r} out of order")
    _state_fields.append(StateField(name, kind, dtype, fill, doc))
    return len(_state_fields) - 1


def _meta(name: str) -> int:
    """Declare the next entry of the state's ``meta`` array; returns its index."""
    _meta_entries.append(name)
    return len(_meta_entries) - 1


def _segment(
    name: str, dtype: type, doc: str, *, m_max: int = 0, nnz: int = 0, k: int = 0, const: int = 0
) -> int:
    """Declare the next segment of the refill's scratch; returns its index. Its length is
    ``m_max`` times the bound on the links, plus ``nnz`` times the route entries, plus ``k``
    times the rows refilled, plus ``const``."""
    _segments.append(Segment(name, dtype, (m_max, nnz, k, const), doc))
    return len(_segments) - 1


# The fluid state, in tuple order (see :func:`new_state`).
RATE = _field("RATE", "row", np.float64, 0.0, "rate (bit/s)")
REM0 = _field("REM0", "row", np.float64, 0.0, "remaining bits at t0")
T0 = _field("T0", "row", np.float64, 0.0, "when the rate was last set")
FIN = _field("FIN", "row", np.float64, np.inf, "finish time")
HEAP = _field("HEAP", "row", np.int64, 0, "finish groups by heap position")
POS = _field("POS", "row", np.int64, -1, "heap position of each finish group, -1 if none")
ORDER = _field("ORDER", "row", np.int64, 0, "rows by rate (kept in (1+eps) mode only)")
BOTT = _field("BOTT", "row", np.int64, -1, "bottleneck link (the certificate), -1 if none")
RMARK = _field("RMARK", "row", np.int64, 0, "scratch stamps")
HKEY = _field("HKEY", "row", np.float64, 0.0, "the heap's keys (finish times) by position")
GRP = _field("GRP", "row", np.int64, -1, "finish group, -1 if none (finished, never ending)")
GNEXT = _field("GNEXT", "row", np.int64, 0, "next row of the row's group (a linked list)")
GPREV = _field("GPREV", "row", np.int64, 0, "previous row of the row's group, -1 if first")
GHEAD = _field("GHEAD", "row", np.int64, -1, "first row of each group, -1 if none")
GFREE = _field("GFREE", "row", np.int64, 0, "stack of free group numbers")
RSET = _field("RSET", "row", np.int64, 0, "scratch: the rows a closure refills")
CAND = _field("CAND", "row", np.int64, 0, "scratch: the rows a check walk gathers")
LOAD = _field("LOAD", "link", np.float64, 0.0, "load (bit/s)")
LOCAL = _field("LOCAL", "link", np.int64, -1, "scratch: local number of each link, -1")
PEAK = _field("PEAK", "link", np.float64, 0.0, "the highest load the link has carried")
LMARK = _field("LMARK", "link", np.int64, 0, "scratch stamps")
TOUCHED = _field("TOUCHED", "link", np.int64, 0, "links whose load fell since the last solve")
TMARK = _field("TMARK", "link", np.int64, 0, "1 if the link is listed in touched")
CHK = _field("CHK", "link", np.int64, 0, "scratch: links to check")
NB = _field("NB", "link", np.int64, 0, "alive rows whose bottleneck is the link")
SMARK = _field("SMARK", "link", np.int64, 0, "scratch stamps")
SLIST = _field("SLIST", "link", np.int64, 0, "scratch: links crossed by a closure's rows")
LROWS = _field("LROWS", "link", np.int64, 0, "alive rows crossing the link")
META = _field("META", "meta", np.int64, 0, "sizes and counters (the M_* entries)")
# entries of ``meta``
M_HEAP = _meta("M_HEAP")  # heap size
M_ORDER = _meta("M_ORDER")  # order length
M_SOLVES = _meta("M_SOLVES")  # solves
M_REFILLED = _meta("M_REFILLED")  # rows refilled
M_STAMP = _meta("M_STAMP")  # stamp
M_TOUCHED = _meta("M_TOUCHED")  # touched count
M_FALLBACKS = _meta("M_FALLBACKS")  # closure fall-backs
M_ROUNDS = _meta("M_ROUNDS")  # closure rounds
M_ALIVE = _meta("M_ALIVE")  # rows alive
M_GFREE = _meta("M_GFREE")  # free group numbers stacked
M_GTOP = _meta("M_GTOP")  # group numbers used

# The refill's scratch, in order (see :func:`_refill`).
S_LSZ = _segment("S_LSZ", np.int64, "the link heap's size", const=1)
S_LINKS = _segment("S_LINKS", np.int64, "the links the rows cross, by local number", m_max=1)
S_LPTR = _segment("S_LPTR", np.int64, "CSR pointers of each link's rows", m_max=1, const=1)
S_LOC = _segment("S_LOC", np.int64, "local link of each route entry, row by row", nnz=1)
S_RPTR = _segment("S_RPTR", np.int64, "CSR pointers of each row's route entries", k=1, const=1)
S_FILL = _segment("S_FILL", np.int64, "next free place of each link's rows", m_max=1)
S_SAT = _segment("S_SAT", np.int64, "the links that saturate at a level", m_max=1)
S_OPENED = _segment("S_OPENED", np.int64, "scan: the open links; heap: positions", m_max=1)
S_LHP = _segment("S_LHP", np.int64, "heap: the links by fill level", m_max=1)
S_LROWS = _segment("S_LROWS", np.int64, "the rows of each link (by S_LPTR)", nnz=1)
S_NACT = _segment("S_NACT", np.float64, "active weight on each link", m_max=1)
S_LOAD = _segment("S_LOAD", np.float64, "load of each link", m_max=1)
S_LCAP = _segment("S_LCAP", np.float64, "capacity of each link", m_max=1)
S_FLOOR = _segment("S_FLOOR", np.float64, "active weight below which a link is idle", m_max=1)
S_LEV = _segment("S_LEV", np.float64, "scan: the open links' levels; heap: its keys", m_max=1)

#: Every array of a :data:`FluidState`, in tuple order: the constants above (``RATE``, ...,
#: ``META``) are their positions. Adding one is one more ``_field`` line.
STATE_FIELDS: tuple[StateField, ...] = tuple(_state_fields)
#: Names of the entries of the state's ``meta`` array (int64), in order: ``M_HEAP``, ...
META_ENTRIES: tuple[str, ...] = tuple(_meta_entries)
#: The refill's scratch arrays, in order: segments of one int64 allocation that they tile
#: (:func:`_scratch_offsets`).
REFILL_SCRATCH: tuple[Segment, ...] = tuple(_segments)
#: Kernel state of a fluid set: the arrays of :data:`STATE_FIELDS`.
FluidState = tuple[NDArray[Any], ...]
#: A fluid set's rows (see :class:`~lumoscore.sim.fluid.FluidSet`): routes (CSR indptr and
#: link ids), weight, size, alive, owner slot and row of the round's plan.
RowBuffers = tuple[IntArray, IntArray, FloatArray, FloatArray, BoolArray, IntArray, IntArray]
#: The first ``ROW_FIELDS`` entries of a :data:`FluidState` are per row, the next
#: ``LINK_FIELDS`` per link, the last is ``meta``.
ROW_FIELDS = sum(f.kind == "row" for f in STATE_FIELDS)
LINK_FIELDS = sum(f.kind == "link" for f in STATE_FIELDS)
#: Relative tolerance of the bottleneck certificates (a link counts as saturated when its load
#: is within it of the capacity; a rate as the link's largest within it).
CERT_RTOL = 1e-9

# start offsets of the scratch segments (and the end), as coefficients of (m_max, nnz, k, 1)
_SCRATCH_AT = np.cumsum(
    np.array([(0, 0, 0, 0)] + [s.length for s in REFILL_SCRATCH], dtype=np.int64), axis=0
)
_N_SEGMENTS = len(REFILL_SCRATCH)


def new_state(n_rows: int, n_links: int) -> FluidState:
    """Fresh kernel state for ``n_rows`` flow rows over ``n_links`` (compact) links: the
    arrays of :data:`STATE_FIELDS` at their fill value (:func:`_new_state` is the same,
    compiled).

    Examples
    --------
    >>> st = new_state(3, 2)
    >>> st[FIN].tolist(), st[LOCAL].tolist(), st[META].size
    ([inf, inf, inf], [-1, -1], 11)
    """
    size = {"row": n_rows, "link": n_links, "meta": len(META_ENTRIES)}
    # (np.zeros leaves untouched pages unmapped: a fabric of millions of links pays for the
    # links its flows cross, not for all of them)
    return tuple(
        np.zeros(size[f.kind], f.dtype) if f.fill == 0 else np.full(size[f.kind], f.fill, f.dtype)
        for f in STATE_FIELDS
    )


def _compiled_new_state() -> Any:
    """:func:`new_state` compiled, for compiled callers: its source is generated from
    :data:`STATE_FIELDS` (a tuple of arrays of several dtypes cannot be built in a loop).
    Not cached on disk (Numba caches only functions with a source file); its callers are."""
    size = {"row": "n_rows", "link": "n_links", "meta": "n_meta"}
    env: dict[str, Any] = {"__name__": __name__, "np": np, "n_meta": len(META_ENTRIES)}
    items = []
    for i, f in enumerate(STATE_FIELDS):
        env[f"dtype_{i}"], env[f"fill_{i}"] = f.dtype, f.fill
        if f.fill == 0:
            items.append(f"np.zeros({size[f.kind]}, dtype=dtype_{i}),  # {f.name}")
        else:
            items.append(f"np.full({size[f.kind]}, fill_{i}, dtype=dtype_{i}),  # {f.name}")
    src = "def _new_state(n_rows, n_links) -> 'FluidState':\n    return (\n{}\n    )\n".format(
        "\n".join(" " * 8 + line for line in items)
    )
    filename = f"<{__name__}._new_state: generated from STATE_FIELDS>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), env)
    return numba.njit(env["_new_state"])


_new_state = _compiled_new_state()


@kernel(internal=True)
def _scratch_offsets(m_max: int, nnz: int, k: int, at: IntArray) -> None:  # pragma: no cover
    """Where each segment of the refill's scratch (:data:`REFILL_SCRATCH`) starts for at most
    ``m_max`` links, ``nnz`` route entries and ``k`` rows, into ``at`` (one more entry: the
    size of the whole). The refill slices its segments at these offsets itself: as inlined
    accessors, each segment cost a compilation of its own (about 2 s of a cold start)."""
    a = _SCRATCH_AT
    for i in range(_N_SEGMENTS + 1):
        at[i] = a[i, 0] * m_max + a[i, 1] * nnz + a[i, 2] * k + a[i, 3]


@kernel(inline="always")
def _room(k: int) -> int:  # pragma: no cover - compiled
    """Room a link's vector gets for ``k`` rows: half as many again (and two), so that rows
    joining later seldom move it."""
    return k + (k >> 1) + 2


@kernel(internal=True)
def link_lists_append(
    f_ptr: IntArray,
    c_idx: IntArray,
    ldir: IntArray,
    pool: IntArray,
    first_row: int,
    end_row: int,
    local: IntArray,
) -> IntArray:  # pragma: no cover - compiled
    """Add rows ``first_row:end_row`` to the rows of each link: link ``q``'s rows are
    ``pool[ldir[3q] : ldir[3q] + ldir[3q + 1]]`` (oldest first) with room for ``ldir[3q + 2]``
    from ``ldir[3q]``; ``ldir[-1]`` is the pool's first unused entry. A vector without room
    for its new rows moves to the end of the pool with :func:`_room` for them (in place when
    it is there already). ``local`` is per-link scratch, all -1 (left so). Returns the pool (a
    bigger copy when it had to grow).

    A walk over a link's rows reads them in order instead of chasing a pointer per row, as
    linked lists through the route entries did."""
    lo, hi = f_ptr[first_row], f_ptr[end_row]
    links = np.empty(hi - lo, dtype=np.int64)
    count = np.zeros(hi - lo, dtype=np.int64)
    m = 0
    for j in range(lo, hi):
        q = c_idx[j]
        k = local[q]
        if k < 0:
            k = m
            local[q] = m
            links[m] = q
            m += 1
        count[k] += 1
    top_i = ldir.size - 1
    # the pool grows once, before the loop (an array assigned in a loop costs a reference
    # count per iteration): every vector that moves takes at most its room past the top
    end = ldir[top_i]
    for k in range(m):
        q = 3 * links[k]
        need = ldir[q + 1] + count[k]
        if need > ldir[q + 2]:
            end += _room(need)
    if end > pool.size:
        pool = _grown_to(pool, max(2 * pool.size, end))
    for k in range(m):
        q = 3 * links[k]
        local[links[k]] = -1
        b, n, c = ldir[q], ldir[q + 1], ldir[q + 2]
        need = n + count[k]
        if need <= c:
            continue
        room = _room(need)
        top = ldir[top_i]
        at_top = c > 0 and b + c == top
        end = b + room if at_top else top + room
        if not at_top:
            for i in range(n):
                pool[top + i] = pool[b + i]
            ldir[q] = top
        ldir[q + 2] = room
        ldir[top_i] = end
    _place_rows(f_ptr, c_idx, ldir, pool, first_row, end_row)
    return pool


@kernel(internal=True)
def _place_rows(
    f_ptr: IntArray, c_idx: IntArray, ldir: IntArray, pool: IntArray, first_row: int, end_row: int
) -> None:  # pragma: no cover - compiled
    """Put rows ``first_row:end_row`` at the ends of the vectors of the links they cross
    (each vector has room for them)."""
    for f in range(first_row, end_row):
        for j in range(f_ptr[f], f_ptr[f + 1]):
            q = 3 * c_idx[j]
            pool[ldir[q] + ldir[q + 1]] = f
            ldir[q + 1] += 1


@kernel
def append_round(
    r_ptr: IntArray,
    r_idx: IntArray,
    r_weight: FloatArray,
    r_bits: FloatArray,
    remaining: FloatArray,
    rates: FloatArray,
    bottleneck: IntArray,
    slot_id: int,
    clock_s: float,
    done_rtol: float,
    n: int,
    rows: RowBuffers,
    st: FluidState,
    lists: tuple[IntArray, IntArray],
) -> tuple[int, IntArray]:  # pragma: no cover - compiled
    """Append the rows of a round (CSR ``r_ptr``/``r_idx``, per row ``r_weight`` and
    ``r_bits``) with bits still to send (``remaining`` above ``done_rtol`` of their size)
    after the ``n`` rows in use, into buffers with room for them. Each row starts at
    ``clock_s`` with its ``rates`` and ``bottleneck`` (a warm start; empty arrays: none),
    joins the per-link rows (``lists``: :func:`link_lists`) and counts, and belongs to
    ``slot_id``. Returns the rows appended and the pool of the per-link rows (grown if it had
    to)."""
    f_ptr, c_idx, weight, size, alive, slot, row_of = rows
    ldir, pool = lists
    warm = rates.size > 0
    rate, rem0, t0, fin, grp, bott = st[RATE], st[REM0], st[T0], st[FIN], st[GRP], st[BOTT]
    rmark = st[RMARK]
    f = n
    nnz = f_ptr[n]
    for i in range(r_bits.size):
        if not remaining[i] > r_bits[i] * done_rtol:
            continue
        for j in range(r_ptr[i], r_ptr[i + 1]):
            c_idx[nnz] = r_idx[j]
            nnz += 1
        f_ptr[f + 1] = nnz
        weight[f] = r_weight[i]
        size[f] = r_bits[i]
        alive[f] = True
        slot[f] = slot_id
        row_of[f] = i
        rate[f] = rates[i] if warm else 0.0
        bott[f] = bottleneck[i] if warm else -1
        rem0[f] = remaining[i]
        t0[f] = clock_s
        fin[f] = np.inf
        grp[f] = -1
        rmark[f] = 0
        f += 1
    pool = link_lists_append(f_ptr, c_idx, ldir, pool, n, f, st[LOCAL])
    count_rows(f_ptr, c_idx, np.arange(n, f), st[LROWS], 1)
    return f - n, pool


@kernel
def compact_rows(
    n: int,
    new_from: int,
    rows: RowBuffers,
    st: FluidState,
    lists: tuple[IntArray, IntArray],
) -> tuple[int, int, IntArray]:  # pragma: no cover - compiled
    """Drop the dead rows among the first ``n`` (alive ones keep their order) and rebuild the
    per-link rows. The finish-time heap is not rebuilt (:func:`rebuild_heap`). Returns the
    rows left, how many of them come before ``new_from`` and the pool of the per-link rows."""
    f_ptr, c_idx, weight, size, alive, slot, row_of = rows
    ldir, pool = lists
    rate, rem0, t0, fin = st[RATE], st[REM0], st[T0], st[FIN]
    order, bott, rmark = st[ORDER], st[BOTT], st[RMARK]
    for j in range(f_ptr[n]):  # (every link holding a vector is crossed by some row)
        q = 3 * c_idx[j]
        ldir[q] = 0
        ldir[q + 1] = 0
        ldir[q + 2] = 0
    w = 0
    e = 0
    start = 0
    before = 0
    for f in range(n):
        end = f_ptr[f + 1]
        if alive[f]:
            for j in range(start, end):
                c_idx[e] = c_idx[j]
                e += 1
            f_ptr[w + 1] = e
            weight[w] = weight[f]
            size[w] = size[f]
            alive[w] = True
            slot[w] = slot[f]
            row_of[w] = row_of[f]
            rate[w] = rate[f]
            rem0[w] = rem0[f]
            t0[w] = t0[f]
            fin[w] = fin[f]
            order[w] = order[f]
            bott[w] = bott[f]
            rmark[w] = rmark[f]
            if f < new_from:
                before += 1
            w += 1
        start = end
    return w, before, _rebuild_lists(f_ptr, c_idx, w, ldir, pool)


@kernel(internal=True)
def _rebuild_lists(
    f_ptr: IntArray, c_idx: IntArray, n: int, ldir: IntArray, pool: IntArray
) -> IntArray:  # pragma: no cover - compiled
    """Lay the per-link rows of rows ``0..n-1`` out afresh, each link's vector with
    :func:`_room` for its rows, from a ``ldir`` with no vector (all zero) on their links;
    returns the pool."""
    for j in range(f_ptr[n]):
        ldir[3 * c_idx[j] + 1] += 1
    top = 0
    for j in range(f_ptr[n]):
        q = 3 * c_idx[j]
        if ldir[q + 2] == 0:  # (first entry on the link: its count is complete)
            k = ldir[q + 1]
            ldir[q] = top
            ldir[q + 2] = _room(k)
            top += ldir[q + 2]
            ldir[q + 1] = 0
    ldir[ldir.size - 1] = top
    if top > pool.size:
        pool = np.empty(max(top, 2 * pool.size), dtype=np.int64)
    _place_rows(f_ptr, c_idx, ldir, pool, 0, n)
    return pool


@kernel
def count_rows(
    f_ptr: IntArray, c_idx: IntArray, rows: IntArray, lrows: IntArray, delta: int
) -> None:  # pragma: no cover - compiled
    """Add ``delta`` to ``lrows[link]`` for every link each of ``rows`` crosses."""
    for f in rows:
        for j in range(f_ptr[f], f_ptr[f + 1]):
            lrows[c_idx[j]] += delta


@kernel(internal=True)
def link_lists(
    f_ptr: IntArray, c_idx: IntArray, n_links: int
) -> tuple[IntArray, IntArray]:  # pragma: no cover - compiled
    """The rows crossing each link (the transpose of the routes) as ``(ldir, pool)``: link
    ``q``'s rows, oldest first, are ``pool[ldir[3q] : ldir[3q] + ldir[3q + 1]]`` (rows can be
    appended, :func:`link_lists_append`)."""
    ldir = np.zeros(3 * n_links + 1, dtype=np.int64)
    pool = _rebuild_lists(f_ptr, c_idx, f_ptr.size - 1, ldir, np.empty(0, dtype=np.int64))
    return ldir, pool


@kernel(inline="always")
def _unlink(
    grp: IntArray, gnext: IntArray, gprev: IntArray, ghead: IntArray, f: int
) -> int:  # pragma: no cover - compiled
    """Take row ``f`` out of its finish group: the group's number if that left it empty (it
    must leave the heap, :func:`_drop_group`), else -1. (Small and taking arrays, not the
    state tuple, so that it compiles inline: a call per row costs as much as its work.)"""
    gid = grp[f]
    if gid < 0:
        return -1
    nx, pv = gnext[f], gprev[f]
    if pv >= 0:
        gnext[pv] = nx
    else:
        ghead[gid] = nx
    if nx >= 0:
        gprev[nx] = pv
    grp[f] = -1
    return gid if ghead[gid] < 0 else -1


@kernel(inline="always")
def _drop_group(
    hp: IntArray, hkey: FloatArray, pos: IntArray, gfree: IntArray, meta: IntArray, gid: int
) -> None:  # pragma: no cover - compiled
    """An empty finish group leaves the heap; its number is free again."""
    heap_remove(hp, hkey, pos, meta, gid)
    gfree[meta[M_GFREE]] = gid
    meta[M_GFREE] += 1


@kernel(internal=True)
def _reset_groups(st: FluidState) -> None:  # pragma: no cover - compiled
    """Empty the finish-time heap: no row is in a finish group."""
    meta = st[META]
    meta[M_HEAP] = 0
    meta[M_GFREE] = 0
    meta[M_GTOP] = 0
    st[GRP][:] = -1


@kernel(internal=True)
def _group_rows(st: FluidState, rows: IntArray, times: FloatArray) -> None:  # pragma: no cover
    """Rows ``rows`` (distinct) finish at ``times``: each leaves its finish group and joins a
    new one with the rows of this call that finish at the same time (one heap entry per
    distinct time; rows that never finish join none)."""
    st = borrowed(st)
    fin, grp, gnext, gprev, ghead = st[FIN], st[GRP], st[GNEXT], st[GPREV], st[GHEAD]
    hp, hkey, pos, gfree, meta = st[HEAP], st[HKEY], st[POS], st[GFREE], st[META]
    k = rows.size
    size = 8
    while size < 2 * k:
        size *= 2
    mask = size - 1
    keys = np.empty(size)  # open addressing: time -> group made by this call
    gids = np.full(size, -1, dtype=np.int64)
    bits = np.empty(1)
    as_int = bits.view(np.int64)
    for i in range(k):
        f = rows[i]
        t = times[i]
        gone = _unlink(grp, gnext, gprev, ghead, f)
        if gone >= 0:
            _drop_group(hp, hkey, pos, gfree, meta, gone)
        fin[f] = t
        if not t < np.inf:
            continue
        bits[0] = t
        b = as_int[0]
        h = ((b ^ (b >> 29)) * 0x2545F491) & mask
        while gids[h] >= 0 and keys[h] != t:
            h = (h + 1) & mask
        gid = gids[h]
        if gid < 0:
            if meta[M_GFREE] > 0:
                meta[M_GFREE] -= 1
                gid = gfree[meta[M_GFREE]]
            else:
                gid = meta[M_GTOP]
                meta[M_GTOP] += 1
            gids[h] = gid
            keys[h] = t
            ghead[gid] = -1
            pos[gid] = -1
            heap_set(hp, hkey, pos, meta, gid, t)
        nx = ghead[gid]
        gnext[f] = nx
        gprev[f] = -1
        if nx >= 0:
            gprev[nx] = f
        ghead[gid] = f
        grp[f] = gid


@kernel(internal=True)
def _refill(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    st: FluidState,
    rows: IntArray,
    clock_s: float,
    grow: float,
    finish: bool = True,
) -> IntArray:  # pragma: no cover - compiled
    """Progressive filling of ``rows`` (alive) with the load of every other row frozen in
    ``link_load``; sets their rates, bottleneck links and (``finish``) finish times. Returns
    the links the rows cross.

    The filling works on local copies: the links the rows cross are numbered ``0..m-1``
    (their capacity and load copied, the load written back at the end) and each route entry
    keeps its local link, so the passes over the rows read compact arrays."""
    # (borrowed here too, though the callers' arrays are: compiled apart, this function
    # cannot know, and would make a call per reference count)
    st = borrowed(st)
    f_ptr, c_idx, cap, weight = borrowed((f_ptr, c_idx, cap, weight))
    rate, rem0, t0 = st[RATE], st[REM0], st[T0]
    bott, link_load, local, nb, meta = st[BOTT], st[LOAD], st[LOCAL], st[NB], st[META]
    k = rows.size
    meta[M_REFILLED] += k
    nnz = 0
    for f in rows:
        nnz += f_ptr[f + 1] - f_ptr[f]
    m_max = min(nnz, cap.size)
    # the scratch arrays are segments of one allocation (a run makes hundreds of thousands of
    # small refills; see REFILL_SCRATCH), borrowed (the helpers inlined into the filling's
    # loop would count references to them at every level); it is owned by the links returned
    at = np.empty(_N_SEGMENTS + 1, dtype=np.int64)
    _scratch_offsets(m_max, nnz, k, at)
    own = np.empty(at[_N_SEGMENTS], dtype=np.int64)
    scr = borrowed(own)
    lsz = scr[at[S_LSZ] : at[S_LSZ + 1]]  # (heap size)
    links = scr[at[S_LINKS] : at[S_LINKS + 1]]
    l_ptr = scr[at[S_LPTR] : at[S_LPTR + 1]]
    l_ptr[:] = 0
    loc = scr[at[S_LOC] : at[S_LOC + 1]]  # local link of each route entry, row by row
    r_ptr = scr[at[S_RPTR] : at[S_RPTR + 1]]
    fill = scr[at[S_FILL] : at[S_FILL + 1]]
    sat = scr[at[S_SAT] : at[S_SAT + 1]]
    opened = scr[at[S_OPENED] : at[S_OPENED + 1]]  # (scan; the heap's positions)
    lhp = scr[at[S_LHP] : at[S_LHP + 1]]  # (heap)
    l_rows = scr[at[S_LROWS] : at[S_LROWS + 1]]
    n_act = scr[at[S_NACT] : at[S_NACT + 1]].view(np.float64)
    n_act[:] = 0.0
    load = scr[at[S_LOAD] : at[S_LOAD + 1]].view(np.float64)
    lcap = scr[at[S_LCAP] : at[S_LCAP + 1]].view(np.float64)
    floor = scr[at[S_FLOOR] : at[S_FLOOR + 1]].view(np.float64)
    # (scan: the open links' levels; heap: its keys)
    lev = scr[at[S_LEV] : at[S_LEV + 1]].view(np.float64)
    r_ptr[0] = 0
    m = 0
    e = 0
    for i in range(k):
        f = rows[i]
        if bott[f] >= 0:
            nb[bott[f]] -= 1
        r_old = rate[f]
        sending = r_old > 0.0 and r_old < np.inf
        if sending:
            rem0[f] = max(rem0[f] - r_old * (clock_s - t0[f]), 0.0)
        t0[f] = clock_s
        w = weight[f]
        for j in range(f_ptr[f], f_ptr[f + 1]):
            l = c_idx[j]
            if sending:
                link_load[l] -= w * r_old
            q = local[l]
            if q < 0:
                q = m
                local[l] = m
                links[m] = l
                m += 1
            loc[e] = q
            e += 1
            n_act[q] += w
            l_ptr[q + 1] += 1
        r_ptr[i + 1] = e
    for q in range(m):
        load[q] = link_load[links[q]]
        lcap[q] = cap[links[q]]
        l_ptr[q + 1] += l_ptr[q]
        fill[q] = l_ptr[q]
        floor[q] = n_act[q] * 1e-12
    for i in range(k):
        for e in range(r_ptr[i], r_ptr[i + 1]):
            q = loc[e]
            l_rows[fill[q]] = i
            fill[q] += 1
    # progressive filling. The links' fill levels sit in a heap (few links: a scan finds the
    # lowest level faster, :func:`_lowest_links`). A level never decreases (a row frozen at t
    # on a link of level L >= t leaves (L n - w t) / (n - w) >= L), so keys are lower bounds
    # refreshed only when a link reaches the top.
    scan = m <= SCAN_LINKS
    lsz[0] = 0
    lpos = opened
    if not scan:
        lpos[:m] = -1
        open_links(lhp, lev, lpos, lsz, lcap[:m], load[:m], n_act[:m])
    active = np.ones(k, dtype=np.bool_)
    left = k
    # (scan) the links still open, in order, and their fill levels
    n_open = 0
    if scan:
        for q in range(m):
            if lcap[q] < np.inf:
                opened[n_open] = q
                n_open += 1
    while left > 0:
        if scan:
            n_sat, t, n_open = _lowest_links(
                lcap, load, n_act, floor, grow, opened, n_open, lev, sat
            )
            if n_sat == 0:
                break
        else:
            if not fresh_top(lhp, lev, lpos, lsz, lcap, load, n_act, floor):
                break
            t = lev[0]
            if t < 0.0:
                t = 0.0
            thresh = t * grow * (1.0 + LEVEL_RTOL)
            n_sat = pop_through(lhp, lev, lpos, lsz, lcap, load, n_act, floor, thresh, sat)
        for i in range(n_sat):
            q = sat[i]
            for z in range(l_ptr[q], l_ptr[q + 1]):
                r = l_rows[z]
                if active[r]:
                    active[r] = False
                    left -= 1
                    f = rows[r]
                    rate[f] = t
                    bott[f] = links[q]
                    nb[links[q]] += 1
                    w = weight[f]
                    for e in range(r_ptr[r], r_ptr[r + 1]):
                        q2 = loc[e]
                        n_act[q2] -= w
                        load[q2] += w * t
    for i in range(k):
        if active[i]:
            rate[rows[i]] = np.inf
            bott[rows[i]] = -1

    for q in range(m):
        link_load[links[q]] = load[q]
        local[links[q]] = -1
    if finish:
        _finish_rows(st, rows, clock_s)
    return own[at[S_LINKS] : at[S_LINKS] + m]


@kernel(inline="always")
def _lowest_links(
    cap: FloatArray,
    load: FloatArray,
    n_act: FloatArray,
    floor: FloatArray,
    grow: float,
    opened: IntArray,
    n_open: int,
    lv: FloatArray,
    sat: IntArray,
) -> tuple[int, float, int]:  # pragma: no cover - compiled
    """The links of a filling that saturate next, found by a scan (the heap's choice: every
    open link whose fill level ``(cap - load) / n_act`` is within the level tolerance of the
    lowest, or within ``grow`` of it): their number (in ``sat``, in order), the level, and how
    many links stay open. ``opened[:n_open]`` holds the open links (finite capacity, in
    order); links left with no active row (``n_act <= floor``) and the links returned are
    closed, so a scan reads only the links still open. ``lv`` is scratch for their levels."""
    t = np.inf
    n = 0
    for i in range(n_open):
        q = opened[i]
        if n_act[q] > floor[q]:
            x = (cap[q] - load[q]) / n_act[q]
            if x < t:
                t = x
            opened[n] = q
            lv[n] = x
            n += 1
    if n == 0:
        return 0, t, 0
    if t < 0.0:
        t = 0.0
    thresh = t * grow * (1.0 + LEVEL_RTOL)
    n_sat = 0
    n_open = 0
    for i in range(n):
        q = opened[i]
        if lv[i] <= thresh:
            sat[n_sat] = q
            n_sat += 1
        else:
            opened[n_open] = q
            n_open += 1
    return n_sat, t, n_open


@kernel(internal=True)
def _finish_rows(st: FluidState, rows: IntArray, clock_s: float) -> None:  # pragma: no cover
    """Finish times of ``rows`` from their rates and the bits they have left at ``clock_s``."""
    rate, rem0 = st[RATE], st[REM0]
    times = np.empty(rows.size)
    for i in range(rows.size):
        r = rate[rows[i]]
        times[i] = clock_s + rem0[rows[i]] / r if r > 0.0 else np.inf
    _group_rows(st, rows, times)


@kernel(inline="always")
def _record_peak(st: FluidState, links: IntArray) -> None:  # pragma: no cover - compiled
    link_load, peak = st[LOAD], st[PEAK]
    for l in links:
        if link_load[l] > peak[l]:
            peak[l] = link_load[l]


@kernel(inline="always")
def _first_at_least(
    rate: FloatArray, order: IntArray, n: int, limit: float
) -> int:  # pragma: no cover
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if rate[order[mid]] < limit:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _refill_suffix(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    alive: BoolArray,
    st: FluidState,
    r_min: float,
    clock_s: float,
    grow: float,
) -> None:  # pragma: no cover - compiled
    """Refill every alive row at or above ``r_min`` (all of them for ``r_min = 0``) and keep
    ``order`` sorted by rate."""
    rate, order, meta = st[RATE], st[ORDER], st[META]
    p = _first_at_least(rate, order, meta[M_ORDER], r_min * (1.0 - REFILL_MARGIN))
    k = 0
    for i in range(p, meta[M_ORDER]):
        if alive[order[i]]:
            k += 1
    rows = np.empty(k, dtype=np.int64)
    k = 0
    for i in range(p, meta[M_ORDER]):
        if alive[order[i]]:
            rows[k] = order[i]
            k += 1
    _record_peak(st, _refill(f_ptr, c_idx, cap, weight, st, rows, clock_s, grow, np.bool_(True)))
    by_rate = argsort_stable(rate[rows])
    for i in range(k):
        order[p + i] = rows[by_rate[i]]
    meta[M_ORDER] = p + k


@kernel(internal=True)
def _grown_to(buf: IntArray, size: int) -> IntArray:  # pragma: no cover - compiled
    """``buf`` copied into an array of ``size`` (at least its own) entries."""
    bigger = np.empty(size, dtype=np.int64)
    for i in range(buf.size):
        bigger[i] = buf[i]
    return bigger


@kernel(inline="always")
def _enlist(
    S: IntArray, ns: int, rmark: IntArray, stamp: int, g: int, limit: int
) -> int:  # pragma: no cover - compiled
    """Put row ``g`` into the refill set ``S`` (``ns`` rows so far, at most ``limit``): the
    new count, -1 when full. The row is marked ``-stamp`` (enlisted, not yet refilled: its
    rate is stale) until its refill marks it ``stamp``."""
    rmark[g] = -stamp
    if ns >= limit:
        return -1
    S[ns] = g
    return ns + 1


@kernel(inline="always")
def _enlist_link(
    links: IntArray, n: int, mark: IntArray, stamp: int, q: int
) -> int:  # pragma: no cover - compiled
    """Append link ``q`` to ``links`` (``n`` so far) unless already marked with ``stamp``."""
    if mark[q] != stamp:
        mark[q] = stamp
        links[n] = q
        n += 1
    return n


@kernel(internal=True)
def _to_refill(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    alive: BoolArray,
    st: FluidState,
    ldir: IntArray,
    pool: IntArray,
    S: IntArray,
    lo: int,
    ns: int,
) -> IntArray:  # pragma: no cover - compiled
    """Rows to refill when rows ``S[lo:ns]`` (N) join the refill set ``S[:lo]`` (just
    refilled with every other row's load frozen): N and the rows of ``S[:lo]`` at or above
    ``lam``. Progressive filling of ``S[:ns]`` goes through exactly the levels of the last
    filling of ``S[:lo]`` below ``lam``, so the rows frozen there keep their rate and
    bottleneck:

    * no link crossed by N saturates below ``lam``: at level ``x`` it carries at most the
      frozen rows' load, the rates of ``S[:lo]`` and ``x`` per N row, i.e.
      ``load - N's old load + W_N x``;
    * no row of ``S[:lo]`` froze on a link crossed by N below ``lam`` (there the load
      differs: N's old load in the last filling, ``W_N x`` now).

    Every other link carries the same load as in the last filling up to ``lam``.
    """
    st = borrowed(st)
    f_ptr, c_idx, cap, weight, alive, ldir, pool, S = borrowed(
        (f_ptr, c_idx, cap, weight, alive, ldir, pool, S)
    )
    rate, bott, rmark, local = st[RATE], st[BOTT], st[RMARK], st[LOCAL]
    link_load, nb, meta = st[LOAD], st[NB], st[META]
    stamp = meta[M_STAMP]
    nnz = 0
    for i in range(lo, ns):
        nnz += f_ptr[S[i] + 1] - f_ptr[S[i]]  # (N is marked -stamp: not refilled yet)
    links = np.empty(nnz, dtype=np.int64)
    w_new = np.zeros(nnz)  # per link: N's weight and N's old load
    old = np.zeros(nnz)
    m = 0
    for i in range(lo, ns):
        g = S[i]
        r = rate[g]
        sending = r > 0.0 and r < np.inf
        for j in range(f_ptr[g], f_ptr[g + 1]):
            q = c_idx[j]
            if not cap[q] < np.inf:
                continue
            if local[q] < 0:
                local[q] = m
                links[m] = q
                m += 1
            w_new[local[q]] += weight[g]
            if sending:
                old[local[q]] += weight[g] * r
    lam = np.inf
    for k in range(m):
        q = links[k]
        local[q] = -1
        reach = (cap[q] - link_load[q] + old[k]) / w_new[k]
        if reach < lam:
            lam = reach
        if nb[q] == 0:
            continue  # no row is certified on q
        lb = ldir[3 * q]
        for z in range(lb + ldir[3 * q + 1] - 1, lb - 1, -1):
            g = pool[z]
            if alive[g] and rmark[g] == stamp and bott[g] == q and rate[g] < lam:
                lam = rate[g]
    keep_below = lam * (1.0 - REFILL_MARGIN)
    rows = np.empty(ns, dtype=np.int64)
    k = 0
    for i in range(lo):
        if not rate[S[i]] < keep_below:
            rows[k] = S[i]
            k += 1
    for i in range(lo, ns):
        rows[k] = S[i]
        k += 1
    return rows[:k]


@kernel(internal=True)
def _closure(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    alive: BoolArray,
    st: FluidState,
    ldir: IntArray,
    pool: IntArray,
    new_from: int,
    clock_s: float,
    limit: int,
) -> bool:  # pragma: no cover - compiled
    """Exact re-solve after rows left (their load fell on the ``touched`` links) or joined
    (rows ``new_from`` on): refill only the rows whose bottleneck certificate breaks, until
    every row has one again.

    An allocation is max-min fair iff it is feasible and every flow crosses a saturated link
    on which no flow is faster (its bottleneck). Every row keeps the link that froze it
    (``bott``). Rows whose certificate link lost load, or on whose links a refilled row now
    freezes below them, join the refilled set ``S``; ``S`` is refilled with the other rows'
    load frozen (always feasible) and the links it crosses are checked again, until no
    certificate breaks. New rows with a rate and bottleneck (*warm*: their round's rates
    alone, a hint) are loaded and checked like the others (a link they overload sends all its
    rows to ``S``); new rows without start in ``S``. Returns False (the caller solves from
    scratch) when ``S`` would exceed ``limit`` rows.
    """
    st = borrowed(st)
    f_ptr, c_idx, cap, weight, alive, ldir, pool = borrowed(
        (f_ptr, c_idx, cap, weight, alive, ldir, pool)
    )
    rate, bott, rmark, local = st[RATE], st[BOTT], st[RMARK], st[LOCAL]
    link_load, lmark, touched, tmark = st[LOAD], st[LMARK], st[TOUCHED], st[TMARK]
    nb, smark, meta = st[NB], st[SMARK], st[META]
    meta[M_STAMP] += 1
    stamp = meta[M_STAMP]
    # links to check once: those whose load fell, and those of warm joining rows
    tl = st[CHK]
    nt = 0
    for i in range(meta[M_TOUCHED]):
        q = touched[i]
        tmark[q] = 0
        lmark[q] = stamp
        tl[nt] = q
        nt += 1
    meta[M_TOUCHED] = 0
    S = st[RSET]  # (a row enters S at most once)
    limit = min(limit, S.size)
    ns = np.int64(0)  # (a literal 0 would compile _to_refill twice)
    warm = np.empty(alive.size - new_from, dtype=np.int64)
    n_warm = 0
    # per link the warm rows cross (local numbers): how many, their top rate, the lowest
    # rate of those certified there
    n_new = f_ptr[alive.size] - f_ptr[new_from]
    wl = np.empty(n_new, dtype=np.int64)
    w_cnt = np.zeros(n_new, dtype=np.int64)
    w_top = np.zeros(n_new)
    w_low = np.full(n_new, np.inf)
    n_wl = 0
    for g in range(new_from, alive.size):
        if not alive[g]:
            continue
        r = rate[g]
        b = bott[g]
        if r > 0.0 and r < np.inf and b >= 0:
            # warm row (rates of its round alone): load it, check its links
            nb[b] += 1
            w = weight[g]
            for j in range(f_ptr[g], f_ptr[g + 1]):
                q = c_idx[j]
                link_load[q] += w * r
                nt = _enlist_link(tl, nt, lmark, stamp, q)
                k = local[q]
                if k < 0:
                    k = n_wl
                    local[q] = k
                    wl[k] = q
                    n_wl += 1
                w_cnt[k] += 1
                if r > w_top[k]:
                    w_top[k] = r
                if b == q and r < w_low[k]:
                    w_low[k] = r
            warm[n_warm] = g
            n_warm += 1
            continue
        bott[g] = -1
        ns = _enlist(S, ns, rmark, stamp, g, limit)
        if ns < 0:
            return False
    # A link that only warm rows cross needs no walk over its rows when its certificates
    # hold by the counts above (the check below would find the same top rate and certified
    # rows): it is marked -stamp and skipped.
    lrows = st[LROWS]
    for k in range(n_wl):
        q = wl[k]
        local[q] = -1
        c = cap[q]
        if w_cnt[k] != lrows[q] or not c < np.inf or link_load[q] > c * (1.0 + CERT_RTOL):
            continue
        if nb[q] == 0 or (
            link_load[q] >= c * (1.0 - CERT_RTOL) and w_low[k] >= w_top[k] * (1.0 - CERT_RTOL)
        ):
            lmark[q] = -stamp
    _finish_rows(st, warm[:n_warm], clock_s)
    # links crossed by S (their peaks are recorded at the end)
    sl = st[SLIST]
    n_sl = 0
    cand = st[CAND]  # (the rows of one link: at most every row)
    added = ns
    first = True
    while True:
        # links to check: those of the rows just refilled (no other link changed since the
        # last check), and the first time the links that lost load or gained warm rows
        rl = tl[:0]
        if added:
            meta[M_ROUNDS] += 1
            rows = S[:ns]
            if ns > added:  # rows refilled before keep their rate below the new rows' reach
                rows = _to_refill(
                    f_ptr, c_idx, cap, weight, alive, st, ldir, pool, S, ns - added, ns
                )
            n_rows = rows.size
            old_r = np.empty(n_rows)
            old_b = np.empty(n_rows, dtype=np.int64)
            fresh = np.empty(n_rows, dtype=np.bool_)
            for i in range(n_rows):
                g = rows[i]
                old_r[i] = rate[g]
                old_b[i] = bott[g]
                fresh[i] = rmark[g] == -stamp
            for i in range(ns - added, ns):
                rmark[S[i]] = stamp
            rl = _refill(f_ptr, c_idx, cap, weight, st, rows, clock_s, 1.0, np.bool_(False))
            for q in rl:
                n_sl = _enlist_link(sl, n_sl, smark, stamp, q)
            # Only the links of rows new to S or whose rate or bottleneck changed are checked:
            # on the others nothing changed since their last check, which enlisted nothing
            # (no new row crosses them).
            n_ck = 0
            for i in range(n_rows):
                g = rows[i]
                if fresh[i] or rate[g] != old_r[i] or bott[g] != old_b[i]:
                    for j in range(f_ptr[g], f_ptr[g + 1]):
                        q = c_idx[j]
                        if local[q] < 0:
                            local[q] = 0
                            rl[n_ck] = q
                            n_ck += 1
            for i in range(n_ck):
                local[rl[i]] = -1
            rl = rl[:n_ck]
        added = 0
        n_rl = rl.size
        for i in range(n_rl + (nt if first else 0)):
            q = rl[i] if i < n_rl else tl[i - n_rl]
            c = cap[q]
            if not c < np.inf or (i >= n_rl and lmark[q] == -stamp):
                continue
            overloaded = link_load[q] > c * (1.0 + CERT_RTOL)
            if nb[q] == 0 and not overloaded:
                continue  # no row is certified on q (refilled ones neither): nothing can break
            if overloaded:
                # warm rows overload it: refill its rows at or above the equal share. Its
                # fill level x (sum of w min(r, x) = c) is at least c / (sum of w), so rows
                # below keep their rates (their load alone fits), and the check of its links
                # after the refill catches any certificate that still breaks.
                w_sum = 0.0
                lb = ldir[3 * q]
                le = lb + ldir[3 * q + 1]
                for z in range(le - 1, lb - 1, -1):
                    g = pool[z]
                    if alive[g]:
                        w_sum += weight[g]
                share = c / w_sum * (1.0 - REFILL_MARGIN)
                for z in range(le - 1, lb - 1, -1):
                    g = pool[z]
                    if not alive[g] or rmark[g] == stamp or rmark[g] == -stamp:
                        continue
                    if rate[g] >= share:
                        ns = _enlist(S, ns, rmark, stamp, g, limit)
                        if ns < 0:
                            return False
                        added += 1
                continue
            saturated = link_load[q] >= c * (1.0 - CERT_RTOL)
            top = 0.0  # fastest row on q
            s_lev = -1.0  # level at which refilled rows froze on q
            n_cand = 0  # rows outside S on q, gathered for the second look
            lb = ldir[3 * q]
            le = lb + ldir[3 * q + 1]
            if le - lb > cand.size:
                return False  # (only if routes cross q twice: a link has more rows than n)
            wp = le  # (finished rows are dropped on the way: the others move up, in order)
            for z in range(le - 1, lb - 1, -1):
                g = pool[z]
                if alive[g]:
                    wp -= 1
                    pool[wp] = g
                    r = rate[g]
                    if rmark[g] != -stamp:  # (rows waiting for their refill: stale rates)
                        if r > top:
                            top = r
                        if rmark[g] == stamp:
                            if bott[g] == q and r > s_lev:
                                s_lev = r
                        else:
                            cand[n_cand] = g
                            n_cand += 1
            if wp > lb:
                ldir[3 * q] = wp
                ldir[3 * q + 1] = le - wp
                ldir[3 * q + 2] -= wp - lb
            for i_c in range(n_cand):
                g = cand[i_c]
                r = rate[g]
                broken = bott[g] == q and (not saturated or r < top * (1.0 - CERT_RTOL))
                if broken or (s_lev >= 0.0 and r > s_lev * (1.0 + CERT_RTOL)):
                    ns = _enlist(S, ns, rmark, stamp, g, limit)
                    if ns < 0:
                        return False
                    added += 1
        first = False
        if added == 0:
            # (a row may be refilled in several rounds: its finish time is set once, here)
            _finish_rows(st, S[:ns], clock_s)
            _record_peak(st, sl[:n_sl])
            _record_peak(st, tl[:nt])
            return True


@kernel(internal=True)
def _solve(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    alive: BoolArray,
    st: FluidState,
    ldir: IntArray,
    pool: IntArray,
    mode: int,
    r_min: float,
    new_from: int,
    clock_s: float,
    grow: float | None,
) -> None:  # pragma: no cover - compiled
    """Rates of the alive rows as ``mode`` says (see :func:`fluid_advance`); ``grow``: None
    for exact max-min rates, else the ``1 + eps`` factor of the approximate allocation."""
    rate, order, link_load, meta = st[RATE], st[ORDER], st[LOAD], st[META]
    meta[M_SOLVES] += 1
    if mode == REFILL:
        if grow is not None:
            _refill_suffix(f_ptr, c_idx, cap, weight, alive, st, r_min, clock_s, grow)
            return
        limit = max(64, alive.size // 2)
        if _closure(f_ptr, c_idx, cap, weight, alive, st, ldir, pool, new_from, clock_s, limit):
            return
        meta[M_FALLBACKS] += 1
    # from scratch: every alive row, loads rebuilt from the rates held since t0
    touched, tmark = st[TOUCHED], st[TMARK]
    for i in range(meta[M_TOUCHED]):
        tmark[touched[i]] = 0
    meta[M_TOUCHED] = 0
    link_load[:] = 0.0
    st[NB][:] = 0
    _reset_groups(st)
    n = 0
    for f in range(alive.size):
        st[BOTT][f] = -1
        if alive[f]:
            # rows keep their (rem0, t0, rate) history; zero rate = nothing sent since t0
            order[n] = f
            n += 1
            if rate[f] > 0.0 and rate[f] < np.inf:
                for j in range(f_ptr[f], f_ptr[f + 1]):
                    link_load[c_idx[j]] += weight[f] * rate[f]
    meta[M_ORDER] = 0
    if grow is not None:
        meta[M_ORDER] = n
        _refill_suffix(f_ptr, c_idx, cap, weight, alive, st, 0.0, clock_s, grow)
    else:
        rows = order[:n].copy()
        _record_peak(st, _refill(f_ptr, c_idx, cap, weight, st, rows, clock_s, 1.0, np.bool_(True)))


@kernel
def fluid_advance(
    f_ptr: IntArray,
    c_idx: IntArray,
    cap: FloatArray,
    weight: FloatArray,
    size: FloatArray,
    alive: BoolArray,
    slot: IntArray,
    live: IntArray,
    st: FluidState,
    ldir: IntArray,
    pool: IntArray,
    clock_s: float,
    until_s: float,
    mode: int,
    r_min: float,
    new_from: int,
    grow: float | None,
    done_rtol: float,
) -> tuple[float, int, float, bool]:  # pragma: no cover - compiled
    """Run the in-flight rows from ``clock_s`` towards ``until_s``.

    Rates are (re)computed as ``mode`` says (:data:`FULL_SOLVE`, :data:`REFILL` after
    completions or after rows ``new_from`` on joined, or :data:`RATES_VALID`). Stops at
    ``until_s``, or as soon as flow completions leave some slot (a job's round) with no live
    row (``live[slot]`` counts them), or when no row can progress. ``alive``, ``live`` and the
    state ``st`` are updated in place; ``(ldir, pool)`` are the rows of each link
    (:func:`link_lists`). ``grow``: None for exact max-min rates, else the ``1 + eps`` factor
    (:func:`kernel_grow`).

    Returns ``(clock_s, mode, r_min, round_done)``.
    """
    st = borrowed(st)
    f_ptr, c_idx, cap, weight, size, alive, slot, live, ldir, pool = borrowed(
        (f_ptr, c_idx, cap, weight, size, alive, slot, live, ldir, pool)
    )
    rate, hp, hkey, pos, bott, nb = st[RATE], st[HEAP], st[HKEY], st[POS], st[BOTT], st[NB]
    grp, gnext, gprev, ghead, gfree = st[GRP], st[GNEXT], st[GPREV], st[GHEAD], st[GFREE]
    link_load, touched, tmark, meta = st[LOAD], st[TOUCHED], st[TMARK], st[META]
    lrows = st[LROWS]
    while True:
        if mode != RATES_VALID:
            _solve(
                f_ptr,
                c_idx,
                cap,
                weight,
                alive,
                st,
                ldir,
                pool,
                mode,
                r_min,
                new_from,
                clock_s,
                grow,
            )
            new_from = alive.size
            mode = RATES_VALID
            r_min = np.inf
        if meta[M_HEAP] == 0 or hkey[0] > until_s:
            # (rows left at rate 0, on links of no capacity, never finish: they are in no
            # finish group)
            if until_s < np.inf:
                clock_s = max(clock_s, until_s)
            return clock_s, mode, r_min, False
        t_next = hkey[0]
        dt = t_next - clock_s
        clock_s = t_next
        done = False
        stay = False  # a row of the group at the top ends later than within the tolerance
        while meta[M_HEAP] > 0 and not stay:
            t = hkey[0]
            g = ghead[hp[0]]
            while g >= 0:
                f = g
                g = gnext[g]
                r = rate[f]
                if r < np.inf and r * (t - clock_s) > size[f] * done_rtol + r * dt * 1e-12:
                    stay = True
                    continue
                # row f has sent its last bit
                gone = _unlink(grp, gnext, gprev, ghead, f)
                if gone >= 0:
                    _drop_group(hp, hkey, pos, gfree, meta, gone)
                alive[f] = False
                meta[M_ALIVE] -= 1
                if bott[f] >= 0:
                    nb[bott[f]] -= 1
                sending = r > 0.0 and r < np.inf
                for j in range(f_ptr[f], f_ptr[f + 1]):
                    q = c_idx[j]
                    lrows[q] -= 1
                    if sending:
                        link_load[q] -= weight[f] * r
                        if tmark[q] == 0:
                            tmark[q] = 1
                            touched[meta[M_TOUCHED]] = q
                            meta[M_TOUCHED] += 1
                live[slot[f]] -= 1
                if live[slot[f]] == 0:
                    done = True
                if r < r_min:
                    r_min = r
        if grow is None:
            # exact sets: only links on which some row is still certified can break a
            # certificate; with none, the rates stay max-min fair
            k = 0
            for i in range(meta[M_TOUCHED]):
                q = touched[i]
                if nb[q] > 0:
                    touched[k] = q
                    k += 1
                else:
                    tmark[q] = 0
            meta[M_TOUCHED] = k
        if grow is not None or meta[M_TOUCHED] > 0:
            mode = REFILL
        if done:
            return clock_s, mode, r_min, True


@kernel
def rebuild_heap(alive: BoolArray, st: FluidState) -> None:  # pragma: no cover - compiled
    """Put every alive row back into a finish group (after rows were renumbered)."""
    st = borrowed(st)
    _reset_groups(st)
    rows = np.flatnonzero(alive)
    _group_rows(st, rows, st[FIN][rows])


@kernel
def remaining_at(
    alive: BoolArray, st: FluidState, clock_s: float
) -> FloatArray:  # pragma: no cover - compiled
    """Remaining bits of every row at ``clock_s`` (0 for finished rows)."""
    rate, rem0, t0 = st[RATE], st[REM0], st[T0]
    out = np.zeros(alive.size)
    for f in range(alive.size):
        if alive[f]:
            r = rate[f]
            out[f] = max(rem0[f] - (r * (clock_s - t0[f]) if r > 0.0 else 0.0), 0.0)
    return out


@kernel(internal=True)
def _alive_values(
    alive: BoolArray, values: FloatArray, out: FloatArray
) -> FloatArray:  # pragma: no cover - compiled
    """``out`` with the alive rows' ``values``, 0 for the others (``np.where(alive, values,
    0)`` in place, without NumPy's broadcasting checks); returns it."""
    for f in range(alive.size):
        out[f] = values[f] if alive[f] else 0.0
    return out


@kernel(internal=True)
def _global_bott(bott: IntArray, alive: BoolArray, glob: IntArray) -> IntArray:
    """Bottleneck links of the alive rows as fabric link ids (-1 for none and for others)."""
    out = np.full(alive.size, -1, dtype=np.int64)
    for f in range(alive.size):
        if alive[f] and bott[f] >= 0:
            out[f] = glob[bott[f]]
    return out


@kernel
def _run(
    f_ptr: IntArray,
    f_idx: IntArray,
    weight: FloatArray,
    size: FloatArray,
    remaining: FloatArray,
    capacity: FloatArray,
    until_s: float,
    done_rtol: float,
    grow: float | None,
    start: bool,
) -> tuple[
    float, FloatArray, IntArray, FloatArray, FloatArray, IntArray, FloatArray, FloatArray, IntArray
]:  # pragma: no cover - compiled
    """:func:`fluid_run`, and (``start``: else empty) the rates and bottleneck links of the
    flows at time 0 (after the first solve and the flows that end at once)."""
    n = weight.size
    alive = np.zeros(n, dtype=np.bool_)
    live = np.zeros(1, dtype=np.int64)
    for f in range(n):
        if remaining[f] > size[f] * done_rtol:
            alive[f] = True
            live[0] += 1
    c_idx, c_cap, glob = _compact(f_idx, capacity)
    st = _new_state(n, c_cap.size)
    _alive_values(alive, remaining, st[REM0])
    st[META][M_ALIVE] = live[0]
    count_rows(f_ptr, c_idx, np.flatnonzero(alive), st[LROWS], 1)
    slot = np.zeros(n, dtype=np.int64)
    t = 0.0
    rate0 = np.zeros(0)
    bott0 = np.zeros(0, dtype=np.int64)
    if live[0] > 0:
        ldir, pool = link_lists(f_ptr, c_idx, c_cap.size)
        # (np.int64: a non-literal mode, so fluid_advance and _solve compile once)
        mode, r_min, done = np.int64(FULL_SOLVE), np.inf, False
        if start:  # run to time 0 first (the same steps), keep the rates then
            t, mode, r_min, done = fluid_advance(
                f_ptr, c_idx, c_cap, weight, size, alive, slot, live, st, ldir, pool,
                0.0, min(until_s, 0.0), mode, r_min, n, grow, done_rtol,
            )  # fmt: skip
            rate0 = _alive_values(alive, st[RATE], np.empty(n))
            bott0 = _global_bott(st[BOTT], alive, glob)
        if not start or (not done and until_s > t):
            t, _, _, done = fluid_advance(
                f_ptr, c_idx, c_cap, weight, size, alive, slot, live, st, ldir, pool,
                t, until_s, mode, r_min, n, grow, done_rtol,
            )  # fmt: skip
        if not done and t < until_s:
            t = np.inf  # some flow can never finish (zero capacity)
    elif start:
        rate0 = np.zeros(n)
        bott0 = np.full(n, -1, dtype=np.int64)
    rate = _alive_values(alive, st[RATE], np.empty(n))
    bott = _global_bott(st[BOTT], alive, glob)
    idle = np.zeros(c_cap.size)  # when the last flow left each link
    for f in range(n):
        if alive[f]:
            left = np.inf
        elif remaining[f] > size[f] * done_rtol:
            left = st[FIN][f]  # (finished here: its last finish time)
        else:
            continue
        for j in range(f_ptr[f], f_ptr[f + 1]):
            if left > idle[c_idx[j]]:
                idle[c_idx[j]] = left
    return t, remaining_at(alive, st, t), glob, st[PEAK], rate, bott, idle, rate0, bott0


def kernel_grow(grow: float) -> float | None:
    """The ``grow`` argument of the compiled fluid model for the factor ``grow = 1 + eps``:
    None for exact max-min rates (``grow == 1``), so that Numba compiles an exact run without
    the approximate allocation's code (its branches are on ``grow is None``, which Numba
    decides when it compiles).

    Examples
    --------
    >>> kernel_grow(1.0) is None, kernel_grow(1.01)
    (True, 1.01)
    """
    return None if grow == 1.0 else float(grow)


def fluid_run(
    f_ptr: IntArray,
    f_idx: IntArray,
    weight: FloatArray,
    size: FloatArray,
    remaining: FloatArray,
    capacity: FloatArray,
    until_s: float,
    done_rtol: float,
    grow: float = 1.0,
) -> tuple[float, FloatArray, IntArray, FloatArray, FloatArray, IntArray, FloatArray]:
    """Fluid model of flows starting together: run until all finish or ``until_s`` passes.

    ``grow = 1 + eps`` selects the (1+eps)-approximate allocation. Returns the elapsed time
    (``inf`` if some flow can never finish), the remaining size of every flow, the links the
    flows cross with the highest load (bit/s) each carried meanwhile and the time its last
    flow left it (``inf`` while some flow still crosses it), and every flow's rate and
    bottleneck link (fabric link id, -1 if none) when it stopped (0 and -1 for finished
    flows).
    """
    t, rem, glob, peak, rate, bott, idle, _, _ = _run(
        f_ptr, f_idx, weight, size, remaining, capacity, float(until_s), float(done_rtol),
        kernel_grow(grow), np.bool_(False),
    )  # fmt: skip
    return t, rem, glob, peak, rate, bott, idle


def solo_run_cached() -> bool:
    """Whether the compiled fluid model (:func:`solo_run`, which every simulation calls) is in
    Numba's on-disk cache: without it, the first simulation of a process compiles it (about
    20 s on one core), as after installing or upgrading LumosCore."""
    return is_cached(_run)


def solo_run(
    f_ptr: IntArray,
    f_idx: IntArray,
    weight: FloatArray,
    size: FloatArray,
    capacity: FloatArray,
    done_rtol: float,
    grow: float = 1.0,
) -> tuple[
    float, FloatArray, IntArray, FloatArray, FloatArray, IntArray, FloatArray, FloatArray, IntArray
]:
    """:func:`fluid_run` of flows from their full ``size`` to the end, and also every flow's
    rate and bottleneck link at time 0 (0 and -1 for flows that end at once)."""
    return _run(
        f_ptr, f_idx, weight, size, size, capacity, np.inf, float(done_rtol), kernel_grow(grow),
        np.bool_(True),
    )  # fmt: skip
