"""Topology engineering on Slim Dual-link Uniform Wiring (Cross Wiring App. C): transceivers.

On ``slim-dual-link`` (:mod:`lumoscore.topology.wiring`) ports ``2t`` and ``2t + 1`` are the
two lanes of transceiver ``t`` -- the N and the S half of one OCS port of OCS ``t // 2`` -- and
links are *coupled*: transceiver ``a`` of pod ``i`` and transceiver ``b`` of pod ``j`` on the
same OCS are joined by two circuits, N(a)-S(b) and N(b)-S(a), i.e. two links at once. So the
ToE runs on the **transceiver view**, a :class:`~lumoscore.toe.model.PortModel` with ``K / 2``
"ports" per spine (the transceivers), in which the directed circuit ``a -> b`` stands for the
optical circuit "N lane of ``a`` - S lane of ``b``" (both directions through the circulators).
In that view every OCS ``s`` is one mirror-paired channel: the even transceiver ``2s`` is its
forward side and the odd one ``2s + 1`` its backward side, one of each per pod -- exactly the
structure ``mdmcf``, ``mcf`` and ``ilp`` solve (Cross Wiring Thm 3.3 on transceivers; the
Uniform-Wiring heuristics ``bvn`` and ``helios`` do not apply).

The demand is rounded down to the coarse granularity, ``B = C // 2`` coupled pairs per pod pair
(an odd ``C_ij`` is realized one link short, the best any configuration can do); a current
configuration must be coupled (:func:`coupling_problems`) and is translated to the view
(:func:`to_transceiver_circuits`), the solver's answer back (:func:`to_lane_circuits`).

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
>>> w = build_wiring(spec, "slim-dual-link", circulators=True)
>>> tc = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 0, 0]])  # A of pod 0 <-> B of pod 1
>>> lanes = to_lane_circuits(w, tc)
>>> lanes.tolist()
[[0, 0, 0, 0, 1, 3], [0, 0, 0, 1, 1, 2], [0, 0, 1, 2, 0, 1], [0, 0, 1, 3, 0, 0]]
>>> coupling_problems(w, lanes), to_transceiver_circuits(w, lanes).tolist()
([], [[0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 0, 0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.toe.model import PortModel, sort_rows

__all__ = [
    "coupling_problems",
    "lane_ports",
    "to_lane_circuits",
    "to_transceiver_circuits",
    "transceiver_model",
]

IntArray = NDArray[np.int64]

_LIMIT = 10


def lane_ports(wiring: Any) -> tuple[IntArray, IntArray]:
    """Port of the N lane and of the S lane of every transceiver, each ``(H, P, K / 2)``.

    Transceiver ``t`` is the port pair ``(2t, 2t + 1)``; which of the two is on the N half is
    read from the wiring (``wiring.tx_side()``).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
    >>> n, s = lane_ports(build_wiring(spec, "slim", circulators=True))
    >>> n[0, 0].tolist(), s[0, 0].tolist()
    ([0, 2], [1, 3])
    """
    side = np.asarray(wiring.tx_side(), dtype=np.int64)
    K = side.shape[2]
    even = np.arange(0, K, 2)
    n_first = side[:, :, 0::2] == 0
    n_lane = np.where(n_first, even, even + 1)
    s_lane = np.where(n_first, even + 1, even)
    return n_lane.astype(np.int64), s_lane.astype(np.int64)


def transceiver_model(wiring: Any) -> PortModel:
    """The transceiver view of a coupled wiring: one "port" per transceiver, on its OCS, with
    transceiver ``t`` on the forward side when ``t`` is even, on the backward side when odd.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=8, tau=1, gpus_per_server=1, ocs_ports=6)
    >>> tm = transceiver_model(build_wiring(spec, "slim", circulators=True))
    >>> tm.ports, tm.channels, bool(tm.paired), tm.cap[0, :, :, 0].tolist()
    (4, 2, True, [[1, 1], [1, 1]])
    """
    ocs = np.asarray(wiring.tx_ocs, dtype=np.int64)[:, :, 0::2]
    q = np.asarray(wiring.tx_ocs_port, dtype=np.int64)[:, :, 0::2] // 2  # the OCS port
    sides = np.broadcast_to(np.arange(ocs.shape[2]) % 2, ocs.shape)
    return PortModel.from_arrays(ocs, q, ocs, q, sides=sides)


def to_lane_circuits(wiring: Any, circuits: Any) -> IntArray:
    """Expand transceiver-view circuits ``[group, ocs, pod_a, a, pod_b, b]`` into the optical
    circuits N lane of ``a`` -> S lane of ``b`` and back (two rows each), sorted.

    A transceiver link is two view circuits (``a -> b`` and ``b -> a``), hence four rows: the
    coupled pair of links.
    """
    t = np.asarray(circuits, dtype=np.int64).reshape(-1, 6)
    n_lane, s_lane = lane_ports(wiring)
    g, o, i, a, j, b = t.T
    h = np.asarray(g, dtype=np.int64)
    na, sb = n_lane[h, i, a], s_lane[h, j, b]
    rows = np.concatenate(
        [np.column_stack([g, o, i, na, j, sb]), np.column_stack([g, o, j, sb, i, na])]
    )
    return sort_rows(rows) if len(rows) else np.zeros((0, 6), dtype=np.int64)


def to_transceiver_circuits(wiring: Any, circuits: Any) -> IntArray:
    """The transceiver view of coupled lane circuits: every row whose Tx is an N lane becomes
    ``[group, ocs, tx_pod, tx_port // 2, rx_pod, rx_port // 2]`` (the inverse of
    :func:`to_lane_circuits` on coupled configurations; check them with
    :func:`coupling_problems` first)."""
    c = np.asarray(circuits, dtype=np.int64).reshape(-1, 6)
    if not len(c):
        return np.zeros((0, 6), dtype=np.int64)
    side = np.asarray(wiring.tx_side(), dtype=np.int64)
    n_tx = side[c[:, 0], c[:, 2], c[:, 3]] == 0
    c = c[n_tx]
    return np.column_stack([c[:, 0], c[:, 1], c[:, 2], c[:, 3] // 2, c[:, 4], c[:, 5] // 2])


def coupling_problems(wiring: Any, circuits: Any) -> list[str]:
    """Circuits ``Tx (i, k) -> Rx (j, k')`` without the twin ``Tx (i, k ^ 1) -> Rx (j, k' ^ 1)``
    (the other lanes of the two transceivers), as messages (at most 10; empty = coupled).

    Rows must be in range (see :func:`~lumoscore.toe.model.check_current`).
    """
    c = np.asarray(circuits, dtype=np.int64).reshape(-1, 6)
    if not len(c):
        return []
    H, P, K = np.asarray(wiring.tx_ocs).shape
    m = (c[:, 0] * P + c[:, 2]) * K + c[:, 3]
    n = (c[:, 0] * P + c[:, 4]) * K + c[:, 5]
    span = H * P * K
    key = m * span + n
    twin = (m ^ 1) * span + (n ^ 1)  # K is even: flipping bit 0 flips the port only
    out = []
    for r in np.flatnonzero(~np.isin(twin, key))[:_LIMIT].tolist():
        g, o, i, k, j, kk = c[r].tolist()
        out.append(
            f"group {g}: circuit OCS {o} Tx pod {i} port {k} -> Rx pod {j} port {kk} has no twin "
            f"Tx pod {i} port {k ^ 1} -> Rx pod {j} port {kk ^ 1}: both lanes of a transceiver "
            f"(ports 2t, 2t+1) must link to one transceiver (coupling)"
        )
    return out
