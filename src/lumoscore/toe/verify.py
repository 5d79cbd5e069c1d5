"""Independent port-by-port verifier of OCS configurations (Cross Wiring constraints (1)-(4)).

Written separately from the solvers and from :func:`lumoscore.topology.verify_circuits` (the
tests check both agree): it works from the channel view of the wiring
(:class:`~lumoscore.toe.model.PortModel`) and reports

* rows out of range, a Tx or an Rx used twice (2), a Tx or Rx not wired to the circuit's OCS
  (3) -- via :func:`~lumoscore.toe.model.check_current`;
* with circulators, a circuit joining two half-ports of the same (N or S) side;
* a circuit without its mirror (4);
* on a coupled wiring (``slim-dual-link``) a circuit without the twin circuit of the other
  lanes of its two transceivers;
* a pod pair whose circuits differ from the logical topology (1) -- or, with
  ``partial=True`` (best-effort wirings), exceed it.

Examples
--------
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=2)
>>> w = build_wiring(spec, "cross")
>>> verify_configuration(w, [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]], [[0, 1], [1, 0]])
[]
>>> verify_configuration(w, [[0, 0, 0, 0, 1, 1]], [[0, 1], [1, 0]])[0]
'group 0: circuit OCS 0 Tx pod 0 port 0 -> Rx pod 1 port 1 has no mirror (constraint (4))'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lumoscore.toe.metrics import realized
from lumoscore.toe.model import PortModel, check_current

__all__ = ["verify_configuration"]

_LIMIT = 10


def verify_configuration(
    wiring: Any,
    circuits: Any,
    demand: Any = None,
    *,
    groups: Any = None,
    partial: bool = False,
) -> list[str]:
    """List every violation of constraints (1)-(4) (empty list = valid configuration).

    Parameters
    ----------
    wiring : Wiring or PortModel
        Physical topology.
    circuits : array_like
        ``(n, 6)`` rows ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]``.
    demand : array_like, optional
        ``(H, P, P)`` or ``(P, P)`` logical topology of ``groups``; checked if given.
    groups : array_like, optional
        Groups the demand belongs to and the circuits may use (default all).
    partial : bool
        Accept fewer links than the demand (Uniform Wiring, best effort), never more.

    Returns
    -------
    list of str
        Messages naming group, OCS, pods and ports (at most 10 per kind).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=3)
    >>> w = build_wiring(spec, "uniform")
    >>> x = [[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0]]
    >>> verify_configuration(w, x, [[0, 1, 1], [1, 0, 1], [1, 1, 0]], partial=True)
    []
    >>> verify_configuration(w, x, [[0, 1, 1], [1, 0, 1], [1, 1, 0]])[0]
    'group 0: pods 0 -> 2 have 0 circuits, the logical topology asks for 1 (constraint (1))'
    """
    if isinstance(wiring, PortModel):
        model = wiring
        circ = bool(getattr(wiring, "circulators", False))
    else:
        model = PortModel.from_wiring(wiring, mirror=False)
        circ = bool(getattr(wiring, "circulators", False))
    H_all = model.groups
    gids = np.arange(H_all) if groups is None else np.asarray(groups, dtype=np.int64).ravel()
    if len(gids) != H_all or (gids != np.arange(H_all)).any():
        model = model.subset(gids)
    out = check_current(model, circuits, groups=gids)
    if out:
        return out
    c = np.asarray(circuits, dtype=np.int64).reshape(-1, 6)
    pos = np.full(int(gids.max()) + 1, -1, dtype=np.int64)
    pos[gids] = np.arange(len(gids))
    h = pos[c[:, 0]]
    P, K = model.pods, model.ports

    def label(r: int) -> str:
        g, o, a, p, b, q = c[r].tolist()
        return f"group {g}: circuit OCS {o} Tx pod {a} port {p} -> Rx pod {b} port {q}"

    if circ:
        s_tx = model.side[h, c[:, 2], c[:, 3]]
        s_rx = model.side[h, c[:, 4], c[:, 5]]
        for r in np.flatnonzero(s_tx == s_rx)[:_LIMIT]:
            out.append(f"{label(r)} joins two half-ports of the same OCS side")
    m_key = (h * P + c[:, 2]) * K + c[:, 3]
    n_key = (h * P + c[:, 4]) * K + c[:, 5]
    span = len(gids) * P * K
    fwd = m_key * span + n_key
    rev = n_key * span + m_key
    for r in np.flatnonzero(~np.isin(rev, fwd))[:_LIMIT]:
        out.append(f"{label(r)} has no mirror (constraint (4))")
    if getattr(wiring, "coupled", False):
        # the twin of Tx (i, k) -> Rx (j, k') is Tx (i, k ^ 1) -> Rx (j, k' ^ 1): K is even
        twin = (m_key ^ 1) * span + (n_key ^ 1)
        for r in np.flatnonzero(~np.isin(twin, fwd))[:_LIMIT]:
            _, _, a, p, b, q = c[r].tolist()
            out.append(
                f"{label(r)} has no twin Tx pod {a} port {p ^ 1} -> Rx pod {b} port {q ^ 1} "
                f"(coupling: both lanes of a transceiver link to one transceiver)"
            )
    if demand is not None:
        C = np.asarray(demand, dtype=np.int64)
        C = C[None] if C.ndim == 2 else C
        X = realized(c, C.shape, groups=gids)
        bad = (X > C) if partial else (X != C)
        for g, i, j in np.argwhere(bad)[:_LIMIT].tolist():
            out.append(
                f"group {gids[g]}: pods {i} -> {j} have {X[g, i, j]} circuits, the logical "
                f"topology asks for {'at most ' if partial else ''}{C[g, i, j]} (constraint (1))"
            )
    return out
