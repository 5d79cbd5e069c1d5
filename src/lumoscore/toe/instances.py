"""Random logical topologies for tests and benchmarks (Cross Wiring §6.3 set-up).

A logical topology of one OCS group is a loop-free multigraph on the pods whose degrees are at
most the spine's OCS-facing ports ``K``. :func:`random_demand` draws one as a union of random
Hamiltonian cycles (each adds 2 to every degree; ``fill = 1`` gives the heavy load of §6.3,
every port used); given the previous topology it produces the next of a *temporally
successive* sequence by degree-preserving double-edge swaps on a fraction ``change`` of the
links. Everything is vectorized.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> C = random_demand(6, 8, rng)
>>> C.sum(axis=1).tolist(), bool((C == C.T).all()), int(np.trace(C))
([8, 8, 8, 8, 8, 8], True, 0)
>>> C2 = random_demand(6, 8, rng, previous=C, change=0.5)
>>> bool((C2.sum(axis=1) == C.sum(axis=1)).all()), bool((C2 == C).all())
(True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError

__all__ = ["random_demand", "random_demands"]

IntArray = NDArray[np.int64]


def _rng(rng: Any) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _edges(C: IntArray) -> IntArray:
    i, j = np.nonzero(np.triu(C, 1))
    n = C[i, j]
    return np.column_stack([np.repeat(i, n), np.repeat(j, n)])


def _from_edges(E: IntArray, P: int) -> IntArray:
    C = np.bincount(E[:, 0] * P + E[:, 1], minlength=P * P).reshape(P, P)
    return (C + C.T).astype(np.int64)


def random_demand(
    pods: int,
    ports: int,
    rng: Any = None,
    *,
    fill: float = 1.0,
    previous: Any = None,
    change: float = 0.1,
) -> IntArray:
    """A random symmetric logical topology with zero diagonal and row sums at most ``ports``.

    Parameters
    ----------
    pods : int
        Number of pods ``P`` (>= 2).
    ports : int
        OCS-facing ports of a spine ``K`` (even).
    rng : numpy.random.Generator or int, optional
        Randomness (a seed is turned into a Generator).
    fill : float
        Share of the ports used: ``round(fill * K / 2)`` random Hamiltonian cycles.
    previous : array_like, optional
        Previous topology: if given, return a successor with the same degrees in which about
        ``change`` of the links were rewired (double-edge swaps avoiding self-loops).
    change : float
        Share of links swapped when ``previous`` is given.

    Returns
    -------
    ndarray
        ``(P, P)`` int64 matrix.

    Examples
    --------
    >>> random_demand(3, 4, 1).tolist()
    [[0, 2, 2], [2, 0, 2], [2, 2, 0]]
    """
    g = _rng(rng)
    if pods < 2:
        raise ConfigError(f"pods must be >= 2, got {pods}")
    if ports < 2 or ports % 2:
        raise ConfigError(f"ports must be an even number >= 2, got {ports}")
    if not 0.0 <= fill <= 1.0:
        raise ConfigError(f"fill must be in [0, 1], got {fill}")
    if previous is None:
        cycles = round(fill * ports / 2)
        order = np.argsort(g.random((cycles, pods)), axis=1)
        a, b = order, np.roll(order, -1, axis=1)
        E = np.column_stack([a.ravel(), b.ravel()]) if cycles else np.zeros((0, 2), np.int64)
        return _from_edges(np.sort(E, axis=1), pods)
    C = np.asarray(previous, dtype=np.int64)
    E = _edges(C)
    m = len(E)
    n_swap = round(change * m / 2)
    if n_swap == 0 or pods < 4:
        return C.copy()
    E = np.where(g.random(m)[:, None] < 0.5, E, E[:, ::-1])
    pick = g.permutation(m)[: 2 * n_swap]
    e1, e2 = E[pick[:n_swap]], E[pick[n_swap:]]
    a, b, c, d = e1[:, 0], e1[:, 1], e2[:, 0], e2[:, 1]
    ok = (a != c) & (b != d)  # (a, c), (b, d) are loop-free
    new1 = np.where(ok[:, None], np.column_stack([a, c]), e1)
    new2 = np.where(ok[:, None], np.column_stack([b, d]), e2)
    E[pick[:n_swap]], E[pick[n_swap:]] = new1, new2
    return _from_edges(np.sort(E, axis=1), pods)


def random_demands(
    groups: int, pods: int, ports: int, rng: Any = None, *, fill: float = 1.0
) -> IntArray:
    """``(H, P, P)``: an independent :func:`random_demand` for every OCS group.

    Examples
    --------
    >>> random_demands(2, 4, 2, 0).shape
    (2, 4, 4)
    """
    g = _rng(rng)
    return np.stack([random_demand(pods, ports, g, fill=fill) for _ in range(groups)])
