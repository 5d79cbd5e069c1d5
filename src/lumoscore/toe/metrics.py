"""Quality metrics of an OCS configuration: LTCR, MRAR and rewired circuits.

* **LTCR** (Cross Wiring Eq. 5): ``1 - sum_ij (C_ij - X_ij)^+ / sum_ij C_ij`` with ``X_ij`` the
  circuits from pod ``i`` to pod ``j`` (links, since every link is two mirrored circuits),
  summed over all OCS groups.
* **MRAR** (Cross Wiring Def. 3): ``1 - sum_ijk (x_ijk - u_ijk)^+ / sum_ijk x_ijk`` with
  ``x_ijk`` / ``u_ijk`` the new / current circuits from pod ``i`` to pod ``j`` inside OCS ``k``
  (every OCS of every group). 1 = every circuit already existed.
* **Rewired circuits** (LumosCore Table 6): port-level circuits of the new configuration that
  the current one does not have (a mirror pair counts twice), and their share of all circuits.

Examples
--------
>>> import numpy as np
>>> new = np.array([[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]])
>>> m = evaluate(new, [[0, 1], [1, 0]], current=new[:1])
>>> m.ltcr, m.mrar, m.rewired_circuits, m.rewired_share
(1.0, 0.5, 1, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.toe.model import row_keys

__all__ = [
    "ToeMetrics",
    "evaluate",
    "ltcr",
    "mrar",
    "realized",
    "rewired_circuits",
]

IntArray = NDArray[np.int64]


def _circ(c: Any) -> IntArray:
    arr = np.asarray(c if c is not None else np.zeros((0, 6)), dtype=np.int64)
    return arr.reshape(-1, 6)


def realized(circuits: Any, demand_shape: tuple[int, int, int], *, groups: Any = None) -> IntArray:
    """``X[h, i, j]``: circuits from pod ``i`` to pod ``j`` in (the ``h``-th of) ``groups``.

    Examples
    --------
    >>> realized([[3, 0, 0, 0, 1, 1]], (1, 2, 2), groups=[3]).tolist()
    [[[0, 1], [0, 0]]]
    """
    c = _circ(circuits)
    H, P, _ = demand_shape
    gids = np.arange(H) if groups is None else np.asarray(groups, dtype=np.int64)
    pos = np.full(int(gids.max()) + 1, -1, dtype=np.int64)
    pos[gids] = np.arange(H)
    inr = (c[:, 0] >= 0) & (c[:, 0] < len(pos))
    inr &= (c[:, 2] >= 0) & (c[:, 2] < P) & (c[:, 4] >= 0) & (c[:, 4] < P)
    h = np.where(inr, pos[np.where(inr, c[:, 0], 0)], -1)
    ok = h >= 0
    X = np.bincount((h[ok] * P + c[ok, 2]) * P + c[ok, 4], minlength=H * P * P)
    return X.reshape(H, P, P).astype(np.int64)


def ltcr(demand: Any, circuits: Any, *, groups: Any = None) -> float:
    """Logical Topology Compatibility Rate (Cross Wiring Eq. 5); 1.0 for an empty demand.

    Examples
    --------
    >>> C = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)
    >>> ltcr(C, [[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0]])  # only pods 0-1 linked
    0.33333333333333337
    """
    C = np.asarray(demand, dtype=np.int64)
    if C.ndim == 2:
        C = C[None]
    total = int(C.sum())
    if total == 0:
        return 1.0
    X = realized(circuits, C.shape, groups=groups)
    return 1.0 - float(np.maximum(C - X, 0).sum()) / total


def _keyed_counts(c: IntArray, cols: tuple[int, ...]) -> tuple[IntArray, IntArray]:
    if len(c) == 0:
        return np.zeros((0, len(cols)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.unique(c[:, cols], axis=0, return_counts=True)


def _excess(new: IntArray, old: IntArray, cols: tuple[int, ...]) -> int:
    """``sum (x - u)^+`` over keys made of ``cols``."""
    if len(new) == 0:
        return 0
    if len(old) == 0:
        return len(new)
    keys = row_keys(new[:, cols], old[:, cols])
    if keys is not None:
        kn, cn = np.unique(keys[0], return_counts=True)
        ko, co = np.unique(keys[1], return_counts=True)
        at = np.minimum(np.searchsorted(ko, kn), len(ko) - 1)
        had = np.where(ko[at] == kn, co[at], 0)
        return int(np.maximum(cn - had, 0).sum())
    kn, cn = _keyed_counts(new, cols)
    ko, co = _keyed_counts(old, cols)
    both = np.concatenate([kn, ko])
    uk, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.ravel()
    x = np.bincount(inv[: len(kn)], weights=cn, minlength=len(uk))
    u = np.bincount(inv[len(kn) :], weights=co, minlength=len(uk))
    return int(np.maximum(x - u, 0).sum())


def mrar(circuits: Any, current: Any) -> float:
    """MinRewiring Achievement Rate (Cross Wiring Def. 3) over per-OCS pod-pair counts.

    Examples
    --------
    >>> mrar([[0, 0, 0, 0, 1, 1]], [[0, 0, 0, 2, 1, 3]])  # same OCS and pods, other ports
    1.0
    """
    new, old = _circ(circuits), _circ(current)
    if len(new) == 0:
        return 1.0
    return 1.0 - _excess(new, old, (0, 1, 2, 4)) / len(new)


def rewired_circuits(circuits: Any, current: Any) -> int:
    """Port-level circuits of ``circuits`` absent from ``current``.

    Examples
    --------
    >>> rewired_circuits([[0, 0, 0, 0, 1, 1]], [[0, 0, 0, 2, 1, 3]])
    1
    """
    return _excess(_circ(circuits), _circ(current), (0, 1, 2, 3, 4, 5))


@dataclass(frozen=True)
class ToeMetrics:
    """Metrics of one configuration against its demand and the configuration it replaces."""

    ltcr: float
    mrar: float
    circuits: int
    rewired_circuits: int
    rewired_share: float
    removed_circuits: int


def evaluate(circuits: Any, demand: Any, *, current: Any = None, groups: Any = None) -> ToeMetrics:
    """All metrics of a configuration (see the module docstring).

    Parameters
    ----------
    circuits : array_like
        New configuration, ``(n, 6)``.
    demand : array_like
        ``(H, P, P)`` (or ``(P, P)``) logical topology of ``groups``.
    current : array_like, optional
        Configuration being replaced (none = empty: MRAR 0, all circuits rewired).
    groups : array_like, optional
        Group index of each demand matrix (default ``0..H-1``).

    Examples
    --------
    >>> evaluate([[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]], [[0, 1], [1, 0]]).mrar
    0.0
    """
    new, old = _circ(circuits), _circ(current)
    rew = rewired_circuits(new, old)
    return ToeMetrics(
        ltcr=ltcr(demand, new, groups=groups),
        mrar=mrar(new, old),
        circuits=len(new),
        rewired_circuits=rew,
        rewired_share=rew / len(new) if len(new) else 0.0,
        removed_circuits=_excess(old, new, (0, 1, 2, 3, 4, 5)),
    )
