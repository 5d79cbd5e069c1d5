"""ToE around ports out of service: per-channel link counts moved onto working ports.

A failed spine-OCS fiber takes one spine port out of service; a failed OCS port takes out
every spine port whose Tx or Rx is wired to it: one port on Uniform Wiring, two on Cross
Wiring (the OCS port carries the Tx of one port and the Rx of its mirror, so both links
break). :meth:`PortModel.without_ports <lumoscore.toe.model.PortModel.without_ports>` removes
the dead ports from the model's per-channel capacities and from assembly;
:func:`fit_counts` then repairs the counts a solver produced for the whole wiring: links on a
pool (channel side of a pod) above its working ports leave it, and each takes the channel of
its group with the most free working ports at both ends (a paired channel in either
direction). A link that finds no channel is lost: the realized topology then has fewer
links than the demand (LTCR < 1). The exact solver ``ilp`` works on the reduced capacities
directly and gives the most links any configuration can keep; ``tests/test_toe_ports.py``
compares the two.

Examples
--------
>>> import numpy as np
>>> from lumoscore.toe.model import PortModel
>>> t = np.zeros((1, 3, 2), dtype=int) + [0, 1]  # uniform wiring: 3 pods, 2 ports, 2 OCSes
>>> pm = PortModel.from_arrays(t, t, t, t)
>>> dead = np.zeros((1, 3, 2), bool); dead[0, 0, 0] = True  # pod 0's port on OCS 0
>>> x = np.zeros((1, 2, 3, 3), dtype=np.int64); x[0, 0, 0, 1] = 1  # 0-1 through OCS 0
>>> y, lost = fit_counts(x, pm.without_ports(dead))
>>> y[0, 1, 0, 1], lost  # moved to OCS 1
(np.int64(1), 0)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lumoscore.toe.model import PortModel

__all__ = ["fit_counts"]

IntArray = NDArray[np.int64]


def _usage(x: IntArray, chan_self: NDArray[np.bool_]) -> IntArray:
    """Ports each pod uses per channel side, ``(n_chan, 2, P)``, for one group's counts."""
    fwd, bwd = x.sum(axis=2), x.sum(axis=1)
    both = fwd + bwd
    s = chan_self[:, None]
    return np.stack([np.where(s, both, fwd), np.where(s, both, bwd)], axis=1)


def _take_one(x: IntArray, c: int, side: int, pod: int, is_self: bool) -> tuple[int, int]:
    """Remove one link of channel ``c`` at ``pod``'s ``side`` (the pod pair with most links
    there); return its pods."""
    if is_self:
        row = x[c, pod, :] + x[c, :, pod]
        j = int(np.argmax(row))
        a, b = min(pod, j), max(pod, j)
        x[c, a, b] -= 1
        return pod, j
    if side == 0:
        j = int(np.argmax(x[c, pod, :]))
        x[c, pod, j] -= 1
        return pod, j
    i = int(np.argmax(x[c, :, pod]))
    x[c, i, pod] -= 1
    return i, pod


def _place_one(x: IntArray, spare: IntArray, chan_self: NDArray[np.bool_], i: int, j: int) -> bool:
    """Put one link between pods ``i`` and ``j`` on the channel (and direction) with the most
    spare working ports at both ends; False when none has a port free at both."""
    fwd_ij = np.minimum(spare[:, 0, i], spare[:, 1, j])  # i forward, j backward
    fwd_ji = np.minimum(spare[:, 0, j], spare[:, 1, i])
    score = np.maximum(fwd_ij, fwd_ji)
    if not (score > 0).any():
        return False
    c = int(np.argmax(score))
    if chan_self[c]:
        x[c, min(i, j), max(i, j)] += 1
    elif fwd_ij[c] >= fwd_ji[c]:
        x[c, i, j] += 1
    else:
        x[c, j, i] += 1
    return True


def _moves(x: IntArray, chan_self: NDArray[np.bool_], c: int, pod: int, side: int):
    """The links of channel ``c`` at ``pod``'s ``side``: ``(other pod, orientation)`` with
    orientation ``(a, b)`` = the link's forward and backward pods (self-paired: sorted)."""
    if chan_self[c]:
        for q in np.flatnonzero(x[c, pod, :] + x[c, :, pod]).tolist():
            yield q, (min(pod, q), max(pod, q))
    elif side == 0:
        for q in np.flatnonzero(x[c, pod, :]).tolist():
            yield q, (pod, q)
    else:
        for q in np.flatnonzero(x[c, :, pod]).tolist():
            yield q, (q, pod)


def _augment(x: IntArray, cap: IntArray, chan_self: NDArray[np.bool_], i: int, j: int) -> bool:
    """Place a link ``i``-``j`` that found no channel by moving one link out of the way: in
    a channel where one end has a free port and the other none, a link at the full end moves
    to another channel with free ports at both its ends (one step of an augmenting path)."""
    spare = cap - _usage(x, chan_self)
    n_chan = x.shape[0]
    for c in range(n_chan):
        ends = [(i, j)] if chan_self[c] else [(i, j), (j, i)]
        for a, b in ends:  # a forward, b backward (self-paired: either)
            sb = 0 if chan_self[c] else 1
            free_a, free_b = spare[c, 0, a] > 0, spare[c, sb, b] > 0
            if free_a == free_b:
                continue  # both free: the greedy would have used it; none free: two moves
            full, side = (b, sb) if free_a else (a, 0)
            for q, (fa, fb) in _moves(x, chan_self, c, full, side):
                if q in (i, j):
                    continue
                y = x.copy()
                y[c, fa, fb] -= 1
                other = cap - _usage(y, chan_self)
                other[c] = 0  # the moved link leaves channel c
                if _place_one(y, other, chan_self, fa, fb):
                    if chan_self[c]:
                        y[c, min(a, b), max(a, b)] += 1
                    else:
                        y[c, a, b] += 1
                    x[...] = y
                    return True
    return False


def fit_counts(counts: IntArray, model: PortModel) -> tuple[IntArray, int]:
    """Per-channel link counts moved onto the model's working ports (module docstring).

    Parameters
    ----------
    counts : ndarray
        ``(H, n_chan, P, P)`` counts as :func:`~lumoscore.toe.model.assemble_circuits` takes
        them, possibly above the working ports of ``model.cap``.
    model : PortModel
        The wiring with its dead ports (:meth:`~lumoscore.toe.model.PortModel.without_ports`).

    Returns
    -------
    (ndarray, int)
        Counts within ``model.cap`` (every link kept stays on its pod pair and group), and
        the number of links that found no working ports.
    """
    x = np.array(counts, dtype=np.int64, copy=True)
    lost = 0
    for h in range(x.shape[0]):
        cs = model.chan_self[h]
        cap = model.cap[h]
        use = _usage(x[h], cs)
        if not (use > cap).any():
            continue
        moved: list[tuple[int, int]] = []
        for c, side, pod in np.argwhere(use > cap).tolist():
            while _usage(x[h], cs)[c, side, pod] > cap[c, side, pod]:
                moved.append(_take_one(x[h], c, side, pod, bool(cs[c])))
        for i, j in moved:
            spare = cap - _usage(x[h], cs)
            if not _place_one(x[h], spare, cs, i, j) and not _augment(x[h], cap, cs, i, j):
                lost += 1
    return x, lost
