"""Algorithm 2: the OXC topology of one stage (lines 9-18).

Start from one directed connection per pod pair with traffic (``LB``), then repeatedly find the
pod pair with the longest completion time ``D[i, j] / (B * L[i, j])`` and give it one more
connection, until the ToR bound ``max_i D_i / B_tor`` is at least that time or pod ``i`` or ``j``
has no free port (Eq. 6 counts ``sum_j L[i, j] + L[j, i]`` against ``N_link``). Every group of
pods (one OXC each) is processed at once, vectorized over the leading axis.

Examples
--------
>>> import numpy as np
>>> d = np.zeros((3, 3)); d[1, 0] = 4.0; d[2, 0] = 2.0
>>> links, comm = oxc_topology(d, np.zeros(3), port_bytes_per_s=1.0, tor_bytes_per_s=1.0,
...                            ports_per_pod=3)
>>> links.tolist(), float(comm)
([[0, 0, 0], [2, 0, 0], [1, 0, 0]], 2.0)
"""

from __future__ import annotations

import numpy as np

from lumoscore.errors import PreconditionError

__all__ = ["completion_times_s", "oxc_topology", "ports_used"]


def ports_used(links: np.ndarray) -> np.ndarray:
    """OXC ports each pod uses, ``sum_j L[i, j] + L[j, i]`` (left side of Eq. 6).

    Examples
    --------
    >>> import numpy as np
    >>> ports_used(np.array([[0, 2], [1, 0]])).tolist()
    [3, 3]
    """
    links = np.asarray(links)
    return links.sum(axis=-1) + links.sum(axis=-2)


def completion_times_s(
    demand_bytes: np.ndarray, links: np.ndarray, port_bytes_per_s: float
) -> np.ndarray:
    """``T[i, j] = D[i, j] / (B L[i, j])``; zero without traffic, ``inf`` without a link.

    Examples
    --------
    >>> import numpy as np
    >>> completion_times_s(np.array([[0.0, 4.0], [1.0, 0.0]]), np.array([[0, 2], [0, 0]]), 1.0)
    array([[ 0.,  2.],
           [inf,  0.]])
    """
    d = np.asarray(demand_bytes, dtype=float)
    lk = np.asarray(links, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d / (port_bytes_per_s * lk)
    return np.where(d > 0, t, 0.0)


def oxc_topology(
    demand_bytes: np.ndarray,
    tor_bytes: np.ndarray,
    *,
    port_bytes_per_s: float,
    tor_bytes_per_s: float,
    ports_per_pod: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy per-stage OXC topology and communication time (Alg. 2).

    Parameters
    ----------
    demand_bytes : numpy.ndarray
        ``(..., P, P)`` directed pod-pair traffic of the stage (diagonal ignored).
    tor_bytes : numpy.ndarray
        ``(..., P)`` ToR-to-server traffic of each pod.
    port_bytes_per_s, tor_bytes_per_s : float
        ``B`` and ``B_tor`` in bytes per second.
    ports_per_pod : int
        ``N_link``.

    Returns
    -------
    links : numpy.ndarray
        ``(..., P, P)`` int directed connections ``L``.
    comm_s : numpy.ndarray
        ``(...)`` stage communication time ``max(T_tor, max T[i, j])``; ``inf`` where the
        required connections alone exceed the ports of some pod (no feasible topology).

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0.0, 9.0], [0.0, 0.0]])
    >>> links, comm = oxc_topology(d, np.array([3.0, 0.0]), port_bytes_per_s=1.0,
    ...                            tor_bytes_per_s=1.0, ports_per_pod=4)
    >>> links.tolist(), float(comm)
    ([[0, 3], [0, 0]], 3.0)
    """
    d = np.array(demand_bytes, dtype=float)
    if d.shape[-1] != d.shape[-2] or d.ndim < 2:
        raise PreconditionError(f"demand_bytes must be (..., P, P), got shape {d.shape}")
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise PreconditionError("demand_bytes must be finite and >= 0")
    batch = d.shape[:-2]
    p = d.shape[-1]
    d = d.reshape(-1, p, p)
    idx = np.arange(p)
    d[:, idx, idx] = 0.0
    tor = np.asarray(tor_bytes, dtype=float).reshape(-1, p)
    t_tor = tor.max(axis=1) / tor_bytes_per_s if p else np.zeros(d.shape[0])
    links = (d > 0).astype(np.int64)  # line 9: L = LB
    free = ports_per_pod - ports_used(links)
    feasible = (free >= 0).all(axis=1)
    active = np.flatnonzero(feasible)
    rate = d / port_bytes_per_s
    while active.size:
        sub = links[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(sub > 0, rate[active] / np.maximum(sub, 1), 0.0)
        flat = t.reshape(active.size, -1).argmax(axis=1)
        t_max = t.reshape(active.size, -1)[np.arange(active.size), flat]
        i, j = np.divmod(flat, p)
        grow = (t_tor[active] < t_max) & (free[active, i] > 0) & (free[active, j] > 0)
        g = active[grow]
        links[g, i[grow], j[grow]] += 1
        free[g, i[grow]] -= 1
        free[g, j[grow]] -= 1
        active = g
    t_oxc = completion_times_s(d, links, port_bytes_per_s).reshape(d.shape[0], -1).max(axis=1)
    comm = np.where(feasible, np.maximum(t_tor, t_oxc), np.inf)
    return links.reshape(*batch, p, p), comm.reshape(batch)
