"""Link bookkeeping of solo rounds (compiled): may a round run on its solo timeline?

A round runs alone on its precomputed timeline when no flow of the shared fluid set crosses
its links and, on every link it shares with other solo rounds, the summed peak loads (the
most each round alone ever puts there) fit the capacity: then no shared link ever saturates
and every flow keeps its solo rates (see :mod:`lumoscore.sim.engine`).

Links are held for the time they are used: alone, a round's last flow on a link leaves it at
a known time after the round's start (``idle_s``, from its solo run). A link whose solo
holders have all left it by the time a new round starts is free for that round (their flows
and its flows never meet there), whatever the holders still send elsewhere.

These functions claim and release a round's links in one compiled pass over them (the engine
does this for every round, so plain NumPy indexing would dominate the run time).

Examples
--------
>>> import numpy as np
>>> cap = np.full(3, 10.0)
>>> fluid, count, load = np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(3)
>>> until = np.zeros(3)
>>> def claim(links, peak, idle, t0):
...     return claim_solo(np.array(links), np.array(peak), np.array(idle), t0, cap, fluid,
...                       count, load, until, 1e-9)
>>> claim([0, 1], [6.0, 6.0], [1.0, 2.0], 0.0)
(True, False, False)
>>> claim([1, 2], [3.0, 3.0], [1.0, 1.0], 0.0)  # 6 + 3 fit on link 1
(True, True, False)
>>> claim([1], [5.0], [1.0], 0.0)  # 6 + 3 + 5 > 10 on link 1 while it is in use
(False, True, False)
>>> claim([0], [5.0], [1.0], 1.5)  # the first round left link 0 at t = 1
(True, False, True)
>>> release_solo(np.array([0, 1]), np.array([6.0, 6.0]), count, load, until)
>>> count.tolist(), load.tolist()
([1, 1, 1], [5.0, 3.0, 3.0])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.jit import cached_jit

__all__ = ["any_marked", "claim_solo", "in_use", "mark_in_use", "release_solo"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@cached_jit
def claim_solo(
    links: IntArray,
    peak_bps: FloatArray,
    idle_s: FloatArray,
    t0: float,
    capacity_bps: FloatArray,
    fluid_rows: IntArray,
    solo_count: IntArray,
    solo_load: FloatArray,
    solo_until: FloatArray,
    fit_rtol: float,
) -> tuple[bool, bool, bool]:  # pragma: no cover - compiled
    """Claim ``links`` for a solo round starting at ``t0`` with the given per-link peak loads
    and idle times if it may run solo; returns ``(solo, shares_a_link_with_another_solo_round,
    uses_a_link_other_solo_rounds_have_left)``.

    ``fluid_rows``: flows of the fluid set on each link; ``solo_count``, ``solo_load`` and
    ``solo_until``: solo rounds holding each link, their summed peaks, and the latest time
    one of them sends there."""
    shared = False
    left = False
    for i in range(links.size):
        l = links[i]
        if fluid_rows[l] > 0:
            return False, False, False
        if solo_count[l] > 0:
            if solo_until[l] <= t0:
                left = True
                continue
            shared = True
            if solo_load[l] + peak_bps[i] > capacity_bps[l] * (1.0 - fit_rtol):
                return False, True, False
    for i in range(links.size):
        l = links[i]
        solo_count[l] += 1
        solo_load[l] += peak_bps[i]
        solo_until[l] = max(solo_until[l], t0 + idle_s[i])
    return True, shared, left


@cached_jit
def any_marked(links: IntArray, marks: NDArray) -> bool:  # pragma: no cover - compiled
    """Whether one of ``links`` is marked (nonzero, e.g. a flag or a flow count):
    ``marks[links].any()`` without the copy."""
    found = False
    for i in range(links.size):
        if marks[links[i]]:
            found = True
            break
    return found


@cached_jit
def in_use(
    links: IntArray, idle_s: FloatArray, t0: float, now: float, marks: NDArray[np.bool_]
) -> bool:  # pragma: no cover - compiled
    """Whether a round that started at ``t0`` still sends at ``now`` on a marked link."""
    found = False
    for i in range(links.size):
        if marks[links[i]] and t0 + idle_s[i] > now:
            found = True
            break
    return found


@cached_jit
def mark_in_use(
    links: IntArray, idle_s: FloatArray, t0: float, now: float, marks: NDArray[np.bool_]
) -> None:  # pragma: no cover - compiled
    """Mark the links on which a round that started at ``t0`` still sends at ``now``."""
    for i in range(links.size):
        if t0 + idle_s[i] > now:
            marks[links[i]] = True


@cached_jit
def release_solo(
    links: IntArray,
    peak_bps: FloatArray,
    solo_count: IntArray,
    solo_load: FloatArray,
    solo_until: FloatArray,
) -> None:  # pragma: no cover - compiled
    """Give back the links of a solo round (a link no solo round uses has load exactly 0)."""
    for i in range(links.size):
        l = links[i]
        solo_count[l] -= 1
        if solo_count[l] > 0:
            solo_load[l] -= peak_bps[i]
        else:
            solo_load[l] = 0.0
            solo_until[l] = -np.inf
