"""Link bookkeeping of solo rounds (compiled): may a round run on its solo timeline?

A round runs alone on its precomputed timeline when no round of the shared fluid set crosses
its links and, on every link it shares with other solo rounds, the summed peak loads (the
most each round alone ever puts there) fit the capacity: then no shared link ever saturates
and every flow keeps its solo rates (see :mod:`lumoscore.sim.engine`). These two functions
claim and release a round's links in one compiled pass over them (the engine does this for
every round, so plain NumPy indexing would dominate the run time).

Examples
--------
>>> import numpy as np
>>> cap = np.full(3, 10.0)
>>> fluid, count, load = np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(3)
>>> claim_solo(np.array([0, 1]), np.array([6.0, 6.0]), cap, fluid, count, load, 1e-9)
(True, False)
>>> claim_solo(np.array([1, 2]), np.array([3.0, 3.0]), cap, fluid, count, load, 1e-9)
(True, True)
>>> claim_solo(np.array([0]), np.array([5.0]), cap, fluid, count, load, 1e-9)  # 6 + 5 > 10
(False, True)
>>> release_solo(np.array([0, 1]), np.array([6.0, 6.0]), count, load)
>>> count.tolist(), load.tolist()
([0, 1, 1], [0.0, 3.0, 3.0])
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["claim_solo", "release_solo"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@numba.njit(cache=True)
def claim_solo(
    links: IntArray,
    peak_bps: FloatArray,
    capacity_bps: FloatArray,
    fluid_count: IntArray,
    solo_count: IntArray,
    solo_load: FloatArray,
    fit_rtol: float,
) -> tuple[bool, bool]:  # pragma: no cover - compiled
    """Claim ``links`` for a solo round with the given per-link peak loads if it may run
    solo; returns ``(solo, shares_a_link_with_another_solo_round)``."""
    shared = False
    for i in range(links.size):
        l = links[i]
        if fluid_count[l] > 0:
            return False, False
        if solo_count[l] > 0:
            shared = True
            if solo_load[l] + peak_bps[i] > capacity_bps[l] * (1.0 - fit_rtol):
                return False, True
    for i in range(links.size):
        l = links[i]
        solo_count[l] += 1
        solo_load[l] += peak_bps[i]
    return True, shared


@numba.njit(cache=True)
def release_solo(
    links: IntArray, peak_bps: FloatArray, solo_count: IntArray, solo_load: FloatArray
) -> None:  # pragma: no cover - compiled
    """Give back the links of a solo round (a link no solo round uses has load exactly 0)."""
    for i in range(links.size):
        l = links[i]
        solo_count[l] -= 1
        solo_load[l] = solo_load[l] - peak_bps[i] if solo_count[l] > 0 else 0.0
