"""Port model of the OCS layer, input validation and port-level assembly of configurations.

The ToE model of Cross Wiring §2.2: the OCS-facing port ``m`` of a spine has a Tx wired to
OCS ``o_m^Tx`` and an Rx wired to OCS ``o_m^Rx``. A configuration is a set of *circuits*
``Tx(m) -> Rx(n)`` inside one OCS (constraint (3): ``o_m^Tx = o_n^Rx``), every Tx and Rx used
at most once (2), and -- the symmetry constraint (4) -- ``Tx(m) -> Rx(n)`` exists exactly when
``Tx(n) -> Rx(m)`` does. So a configuration is a set of bidirectional *links* ``{m, n}``, each
made of two circuits, that form a matching of ports.

Channels
--------
A port ``m`` has the *type* ``(o_m^Tx, o_m^Rx)``; a link ``{m, n}`` is possible exactly when
the type of ``n`` is the reverse of the type of ``m``. The unordered OCS pair ``{a, b}`` of a
type is its *channel*:

* ``a != b`` (Cross Wiring: ports ``2k`` have type ``(2k, 2k+1)``, ports ``2k+1`` have type
  ``(2k+1, 2k)``): a *paired* channel. Its ports split into a *forward* side (type ``(lo, hi)``)
  and a *backward* side (type ``(hi, lo)``), and every link joins a forward port to a backward
  port: the channel is a bipartite switch. The forward circuits of all paired channels form
  the "even" sub-topology of Cross Wiring §3.2; the backward circuits are their mirror.
* ``a == b`` (Uniform Wiring: Tx and Rx of port ``k`` both on OCS ``k``): a *self-paired*
  channel, in which a link joins any two of its ports -- a general matching, the reason ToE
  on Uniform Wiring is NP-complete (Cross Wiring Thm 2.1).

Solvers work on per-channel pod-pair link counts ``x[h, c, i, j]`` (for a paired channel: links
from a forward port of pod ``i`` to a backward port of pod ``j``; for a self-paired channel:
links between pods ``i < j``, stored in the upper triangle). :func:`assemble_circuits` turns
counts into port-level circuits, keeping the links of the current configuration wherever the
counts allow.

Examples
--------
>>> import numpy as np
>>> tx = np.array([[[0, 1], [0, 1]]])  # one group, 2 pods, 2 ports: cross wiring
>>> rx = np.array([[[1, 0], [1, 0]]])
>>> pm = PortModel.from_arrays(tx, np.zeros_like(tx), rx, np.zeros_like(rx))
>>> pm.channels, bool(pm.paired), pm.chan_ocs[0].tolist()
(1, True, [[0, 1]])
>>> x = np.zeros((1, 1, 2, 2), dtype=np.int64)
>>> x[0, 0, 0, 1] = 1  # pod 0 forward port -> pod 1 backward port
>>> assemble_circuits(pm, x).tolist()
[[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import InfeasibleError
from lumoscore.toe.errors import CurrentConfigError, DemandError
from lumoscore.toe.kernels import assemble_links, forward_links

__all__ = [
    "CIRCUIT_COLUMNS",
    "PortModel",
    "assemble_circuits",
    "assemble_sparse",
    "channel_counts",
    "check_current",
    "current_links",
    "links_to_circuits",
    "row_keys",
    "sort_rows",
    "validate_demand",
]

IntArray = NDArray[np.int64]

#: Column names of a circuits array (one circuit ``Tx -> Rx`` per row).
CIRCUIT_COLUMNS = ("group", "ocs", "tx_pod", "tx_port", "rx_pod", "rx_port")

_MAX_LISTED = 5


def _as_int_array(value: Any, name: str, ndim: int) -> IntArray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise DemandError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.number):
            raise DemandError(f"{name} must be numeric, got dtype {arr.dtype}")
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            bad = np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)))[0]
            raise DemandError(
                f"{name}{list(map(int, bad))} = {arr[tuple(bad)]} is not an integer; "
                f"entries must be non-negative integers"
            )
    return arr.astype(np.int64)


@dataclass(frozen=True)
class PortModel:
    """Channel view of the port-level wiring of every OCS group.

    Build it with :meth:`from_wiring` (a ``lumoscore.topology.wiring.Wiring``) or
    :meth:`from_arrays`. Arrays indexed ``[h, pod, port]`` have shape ``(H, P, K)``.

    Attributes
    ----------
    tx_ocs, tx_ocs_port, rx_ocs, rx_ocs_port : ndarray
        OCS (index inside the group) and OCS port of the Tx and of the Rx of every port.
    channel : ndarray
        Channel of every port (index inside its group).
    side : ndarray
        0 = forward side of a paired channel, 1 = backward side, 2 = self-paired channel.
    chan_ocs : ndarray
        ``(H, n_chan, 2)``: the OCS of the forward circuits (``lo``) and of the backward
        circuits (``hi``) of every channel (equal for self-paired ones; ``-1`` = padding).
    chan_self : ndarray
        ``(H, n_chan)`` bool: channel is self-paired.
    cap : ndarray
        ``(H, n_chan, 2, P)``: working ports of each pod on the forward/self side
        (``[:, :, 0]``) and on the backward side (``[:, :, 1]``) of each channel.
    dead : ndarray or None
        ``(H, P, K)`` bool: ports out of service (a failed spine-OCS fiber or OCS port;
        :meth:`without_ports`), never used by a circuit; ``None``: every port works.
    """

    tx_ocs: IntArray
    tx_ocs_port: IntArray
    rx_ocs: IntArray
    rx_ocs_port: IntArray
    channel: IntArray
    side: IntArray
    chan_ocs: IntArray
    chan_self: NDArray[np.bool_]
    cap: IntArray
    n_ocs: int
    dead: NDArray[np.bool_] | None = None

    # ---- constructors ----------------------------------------------------------------
    @classmethod
    def from_wiring(cls, wiring: Any, *, mirror: bool = True) -> PortModel:
        """Port model of a wiring object with arrays ``tx_ocs``, ``tx_ocs_port``, ``rx_ocs``,
        ``rx_ocs_port`` of shape ``(H, P, K)`` (``lumoscore.topology.wiring.Wiring``).

        Examples
        --------
        >>> from types import SimpleNamespace
        >>> import numpy as np
        >>> z = np.zeros((1, 3, 2), dtype=int)
        >>> uni = SimpleNamespace(tx_ocs=z + [0, 1], tx_ocs_port=z, rx_ocs=z + [0, 1], rx_ocs_port=z)
        >>> bool(PortModel.from_wiring(uni).chan_self.all())
        True
        """  # noqa: E501
        if isinstance(wiring, PortModel):
            return wiring
        try:
            arrays = [
                getattr(wiring, n) for n in ("tx_ocs", "tx_ocs_port", "rx_ocs", "rx_ocs_port")
            ]
        except AttributeError as exc:
            raise DemandError(
                f"wiring object lacks {exc.name!r}; expected tx_ocs, tx_ocs_port, rx_ocs, "
                f"rx_ocs_port arrays of shape (H, P, K)"
            ) from None
        sides = None
        if getattr(wiring, "circulators", False):
            sides = np.asarray(wiring.tx_side(), dtype=np.int64)  # N half = forward
        elif mirror and getattr(wiring, "kind", None) == "dual-link":
            sides = np.broadcast_to(np.arange(arrays[0].shape[2]) % 2, arrays[0].shape)
        return cls.from_arrays(*arrays, sides=sides)

    @classmethod
    def from_arrays(
        cls,
        tx_ocs: Any,
        tx_ocs_port: Any,
        rx_ocs: Any,
        rx_ocs_port: Any,
        *,
        sides: Any = None,
    ) -> PortModel:
        """Port model from the four ``(H, P, K)`` wiring arrays (see class docstring).

        ``sides`` (``(H, P, K)`` of 0/1, optional) splits ports whose Tx and Rx share one OCS
        into a forward (0) and a backward (1) side instead of a self-paired channel: the N/S
        half-ports of circulator wirings, or the even/odd ports of Dual-link Uniform Wiring
        when its mirror structure is used (Cross Wiring §3.2).

        Examples
        --------
        >>> import numpy as np
        >>> t = np.array([[[0, 1, 2, 3]] * 3])  # uniform: Tx and Rx of port k on OCS k
        >>> pm = PortModel.from_arrays(t, np.zeros_like(t), t, np.zeros_like(t))
        >>> pm.groups, pm.pods, pm.ports, pm.channels, bool(pm.paired)
        (1, 3, 4, 4, False)
        """
        arrs = [
            _as_int_array(a, n, 3)
            for a, n in zip(
                (tx_ocs, tx_ocs_port, rx_ocs, rx_ocs_port),
                ("tx_ocs", "tx_ocs_port", "rx_ocs", "rx_ocs_port"),
                strict=True,
            )
        ]
        shape = arrs[0].shape
        if any(a.shape != shape for a in arrs) or 0 in shape:
            raise DemandError(
                "wiring arrays must share one non-empty shape (H, P, K), got "
                + ", ".join(str(a.shape) for a in arrs)
            )
        if any(a.min() < 0 for a in arrs):
            raise DemandError("wiring arrays must be non-negative OCS / OCS-port indices")
        a, _, b, _ = arrs
        H = shape[0]
        n_ocs = int(max(a.max(), b.max())) + 1
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        hh = np.broadcast_to(np.arange(H)[:, None, None], shape)
        key = (hh * n_ocs + lo) * n_ocs + hi
        uk, inv = np.unique(key, return_inverse=True)
        grp = uk // (n_ocs * n_ocs)
        rank = np.arange(len(uk)) - np.searchsorted(grp, grp, side="left")
        n_chan = int(rank.max()) + 1
        channel = rank[inv.reshape(shape)]
        side = np.where(a < b, 0, np.where(a > b, 1, 2))
        forced = np.zeros((H, n_chan), dtype=bool)
        if sides is not None:
            sd = np.broadcast_to(np.asarray(sides, dtype=np.int64), shape)
            side = np.where(a == b, sd, side)
            forced[hh[a == b], channel[a == b]] = True
        chan_ocs = np.full((H, n_chan, 2), -1, dtype=np.int64)
        chan_ocs[grp, rank, 0] = (uk // n_ocs) % n_ocs
        chan_ocs[grp, rank, 1] = uk % n_ocs
        chan_self = np.zeros((H, n_chan), dtype=bool)
        chan_self[grp, rank] = chan_ocs[grp, rank, 0] == chan_ocs[grp, rank, 1]
        chan_self &= ~forced
        cap = _pool_sizes(channel, side, chan_self, None)
        # (C order: the ToE kernels take them flattened, without a copy)
        arrs = [np.ascontiguousarray(x) for x in arrs]
        channel, side = np.ascontiguousarray(channel), np.ascontiguousarray(side)
        return cls(*arrs, channel, side, chan_ocs, chan_self, cap, n_ocs)

    # ---- sizes -------------------------------------------------------------------------
    @property
    def groups(self) -> int:
        """Number of OCS groups ``H``."""
        return int(self.tx_ocs.shape[0])

    @property
    def pods(self) -> int:
        """Number of pods ``P``."""
        return int(self.tx_ocs.shape[1])

    @property
    def ports(self) -> int:
        """OCS-facing ports of one spine ``K``."""
        return int(self.tx_ocs.shape[2])

    @property
    def channels(self) -> int:
        """Channels per group (padded to the largest group)."""
        return int(self.chan_self.shape[1])

    @property
    def paired(self) -> bool:
        """True when no channel is self-paired (Cross Wiring: ToE is polynomial)."""
        return not bool(self.chan_self.any())

    def subset(self, groups: Any) -> PortModel:
        """The port model of some groups only (in the given order).

        Examples
        --------
        >>> import numpy as np
        >>> t = np.zeros((3, 2, 2), dtype=int) + [0, 1]
        >>> PortModel.from_arrays(t, t, t, t).subset([2]).groups
        1
        """
        g = np.asarray(groups, dtype=np.int64)
        return PortModel(
            self.tx_ocs[g],
            self.tx_ocs_port[g],
            self.rx_ocs[g],
            self.rx_ocs_port[g],
            self.channel[g],
            self.side[g],
            self.chan_ocs[g],
            self.chan_self[g],
            self.cap[g],
            self.n_ocs,
            None if self.dead is None else self.dead[g],
        )

    def without_ports(self, dead: Any) -> PortModel:
        """The model with the ports ``dead`` (``(H, P, K)`` bool) out of service: they leave
        :attr:`cap` and no circuit uses them (``None`` or no port dead: every port works).

        Examples
        --------
        >>> import numpy as np
        >>> t = np.zeros((1, 3, 2), dtype=int) + [0, 1]  # uniform wiring, 3 pods, 2 ports
        >>> pm = PortModel.from_arrays(t, t, t, t)
        >>> dead = np.zeros((1, 3, 2), bool); dead[0, 1, 0] = True
        >>> pm.without_ports(dead).cap[0, :, 0].tolist()  # channel x pod
        [[1, 0, 1], [1, 1, 1]]
        """
        if dead is None or not np.any(dead):
            return self.with_all_ports()
        d = np.asarray(dead, dtype=bool)
        if d.shape != self.tx_ocs.shape:
            raise DemandError(f"dead ports must have shape {self.tx_ocs.shape}, got {d.shape}")
        cap = _pool_sizes(self.channel, self.side, self.chan_self, ~d)
        return replace(self, cap=cap, dead=d.copy())

    def with_all_ports(self) -> PortModel:
        """The model with every port in service (undoes :meth:`without_ports`)."""
        if self.dead is None:
            return self
        cap = _pool_sizes(self.channel, self.side, self.chan_self, None)
        return replace(self, cap=cap, dead=None)

    def live(self, circuits: Any, *, groups: Any = None) -> NDArray[np.bool_]:
        """Which circuits (rows ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]`` of groups
        ``groups``, default ``0..H-1``) use working ports only (all, without dead ports).
        A link's two circuits touch the same two ports, so both go or both stay."""
        c = np.asarray(circuits, dtype=np.int64).reshape(-1, 6)
        if self.dead is None or not len(c):
            return np.ones(len(c), bool)
        gids = np.arange(self.groups) if groups is None else np.asarray(groups, np.int64)
        pos = np.full(int(max(gids.max(), c[:, 0].max())) + 1, -1, dtype=np.int64)
        pos[gids] = np.arange(self.groups)
        h = pos[c[:, 0]]
        ok = h >= 0
        hh = np.where(ok, h, 0)
        dead = self.dead[hh, c[:, 2], c[:, 3]] | self.dead[hh, c[:, 4], c[:, 5]]
        return ~(ok & dead)


def _pool_sizes(
    channel: IntArray, side: IntArray, chan_self: NDArray[np.bool_], working: Any
) -> IntArray:
    """:attr:`PortModel.cap`: the ports (the ``working`` ones, ``(H, P, K)`` bool, or all)
    of every pod on each side of each channel; a self-paired channel's two sides are one."""
    H, P, K = channel.shape
    n_chan = chan_self.shape[1]
    hh = np.broadcast_to(np.arange(H)[:, None, None], (H, P, K))
    pods = np.broadcast_to(np.arange(P)[None, :, None], (H, P, K))
    idx = ((hh * n_chan + channel) * 2 + (side == 1)) * P + pods
    w = None if working is None else np.asarray(working, dtype=np.float64).ravel()
    cap = np.bincount(idx.ravel(), weights=w, minlength=H * n_chan * 2 * P)
    cap = cap.reshape(H, n_chan, 2, P).astype(np.int64)
    cap[:, :, 1] = np.where(chan_self[:, :, None], cap[:, :, 0], cap[:, :, 1])
    return cap


# ---- demand ------------------------------------------------------------------------------
def validate_demand(demand: Any, model: PortModel) -> IntArray:
    """Check a logical topology against the port model; return it as ``(H, P, P)`` int64.

    Parameters
    ----------
    demand : array_like
        ``(H, P, P)`` (one matrix per group) or ``(P, P)`` when ``H == 1``: non-negative
        integers, symmetric, zero diagonal, every row sum at most the OCS-facing ports of the
        spine (Cross Wiring Def. 2, constraints (14)-(15)).
    model : PortModel
        The wiring.

    Raises
    ------
    DemandError
        Naming the group, pod(s) and value at fault.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 3, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t[:, :, ::-1], t)
    >>> validate_demand([[0, 1, 1], [1, 0, 1], [1, 1, 0]], pm).shape
    (1, 3, 3)
    >>> validate_demand([[0, 1, 0], [2, 0, 0], [0, 0, 0]], pm)
    Traceback (most recent call last):
    ...
    lumoscore.toe.errors.DemandError: demand of group 0 is not symmetric: C[0][1] = 1 but C[1][0] = 2 (pods 0 and 1); a link is bidirectional
    """  # noqa: E501
    arr = np.asarray(demand)
    H, P = model.groups, model.pods
    if arr.ndim == 2:
        arr = arr[None]
    if arr.shape != (H, P, P):
        raise DemandError(
            f"demand has shape {np.asarray(demand).shape}; allowed: ({H}, {P}, {P}) "
            f"(groups x pods x pods)" + (f" or ({P}, {P})" if H == 1 else "")
        )
    C = _as_int_array(arr, "demand", 3)
    if (C < 0).any():
        g, i, j = (int(v) for v in np.argwhere(C < 0)[0])
        raise DemandError(
            f"demand of group {g}: C[{i}][{j}] = {C[g, i, j]} is negative; entries must be "
            f"non-negative integers"
        )
    asym = C.transpose(0, 2, 1) != C
    if asym.any():
        g, i, j = (int(v) for v in np.argwhere(asym)[0])
        raise DemandError(
            f"demand of group {g} is not symmetric: C[{i}][{j}] = {C[g, i, j]} but "
            f"C[{j}][{i}] = {C[g, j, i]} (pods {i} and {j}); a link is bidirectional"
        )
    diag = np.diagonal(C, axis1=1, axis2=2)
    if diag.any():
        g, i = (int(v) for v in np.argwhere(diag)[0])
        raise DemandError(
            f"demand of group {g}: C[{i}][{i}] = {diag[g, i]}; a pod cannot link to itself, "
            f"the diagonal must be 0"
        )
    ports = np.full((H, P), model.ports, dtype=np.int64)
    rows = C.sum(axis=2)
    over = rows > ports
    if over.any():
        g, i = (int(v) for v in np.argwhere(over)[0])
        raise DemandError(
            f"demand of group {g}: pod {i} needs {rows[g, i]} links but spine {g} of pod {i} "
            f"has {ports[g, i]} OCS-facing ports; row sums must be <= {ports[g, i]}"
        )
    return C


# ---- current configuration ---------------------------------------------------------------
def _as_circuits(circuits: Any) -> IntArray:
    arr = np.asarray(circuits if circuits is not None else np.zeros((0, 6)))
    if not np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.float64)
    if arr.size == 0:
        return np.zeros((0, 6), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 6:
        raise CurrentConfigError(
            f"circuits must be rows [group, ocs, tx_pod, tx_port, rx_pod, rx_port], got "
            f"shape {arr.shape}"
        )
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise CurrentConfigError("circuit entries must be integers")
    return arr.astype(np.int64)


def check_current(model: PortModel, circuits: Any, *, groups: Any = None) -> list[str]:
    """List the ways circuits break the wiring (ranges, constraints (2)-(3)); empty = fits.

    Parameters
    ----------
    model : PortModel
        Wiring of the groups (``model.groups`` of them).
    circuits : array_like
        ``(n, 6)`` rows ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]``.
    groups : array_like, optional
        Real group index of each model group (default ``0..H-1``); circuits of other groups
        are reported.

    Returns
    -------
    list of str
        Messages naming the circuit, group, OCS, pod and port at fault.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 2, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t[:, :, ::-1], t)
    >>> check_current(pm, [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]])
    []
    >>> check_current(pm, [[0, 1, 0, 0, 1, 1]])
    ['circuit 0: Tx of group 0 pod 0 port 0 is wired to OCS 0, not OCS 1', 'circuit 0: Rx of group 0 pod 1 port 1 is wired to OCS 0, not OCS 1']
    """  # noqa: E501
    try:
        c = _as_circuits(circuits)
    except CurrentConfigError as exc:
        return [str(exc)]
    H, P, K = model.tx_ocs.shape
    gids = np.arange(H) if groups is None else np.asarray(groups, dtype=np.int64)
    out: list[str] = []
    pos = np.full(int(gids.max()) + 1, -1, dtype=np.int64)
    pos[gids] = np.arange(H)
    gcol = np.clip(c[:, 0], 0, len(pos) - 1)
    bad_g = (c[:, 0] < 0) | (c[:, 0] >= len(pos)) | (pos[gcol] < 0)
    limits = (("OCS", 1, model.n_ocs), ("pod", 2, P), ("port", 3, K), ("pod", 4, P), ("port", 5, K))
    bad = bad_g.copy()
    for r in np.flatnonzero(bad_g)[:_MAX_LISTED]:
        out.append(f"circuit {r}: group {c[r, 0]} is not one of the groups {gids.tolist()}")
    for name, col, lim in limits:
        b = (c[:, col] < 0) | (c[:, col] >= lim)
        for r in np.flatnonzero(b & ~bad)[:_MAX_LISTED]:
            out.append(
                f"circuit {r}: {CIRCUIT_COLUMNS[col]} {c[r, col]} out of range; allowed "
                f"{name} 0..{lim - 1}"
            )
        bad |= b
    ok = ~bad
    h = pos[gcol]
    cc = c[ok]
    hh = h[ok]
    rows = np.flatnonzero(ok)
    t_ocs = model.tx_ocs[hh, cc[:, 2], cc[:, 3]]
    r_ocs = model.rx_ocs[hh, cc[:, 4], cc[:, 5]]
    for k in np.flatnonzero(t_ocs != cc[:, 1])[:_MAX_LISTED]:
        out.append(
            f"circuit {rows[k]}: Tx of group {cc[k, 0]} pod {cc[k, 2]} port {cc[k, 3]} is wired "
            f"to OCS {t_ocs[k]}, not OCS {cc[k, 1]}"
        )
    for k in np.flatnonzero(r_ocs != cc[:, 1])[:_MAX_LISTED]:
        out.append(
            f"circuit {rows[k]}: Rx of group {cc[k, 0]} pod {cc[k, 4]} port {cc[k, 5]} is wired "
            f"to OCS {r_ocs[k]}, not OCS {cc[k, 1]}"
        )
    for label, pc, qc in (("Tx", 2, 3), ("Rx", 4, 5)):
        key = (hh * P + cc[:, pc]) * K + cc[:, qc]
        cnt = np.bincount(key, minlength=H * P * K)
        for kk in np.flatnonzero(cnt > 1)[:_MAX_LISTED]:
            g, rem = divmod(int(kk), P * K)
            out.append(
                f"{label} of group {gids[g]} pod {rem // K} port {rem % K} is used by "
                f"{int(cnt[kk])} circuits; at most one allowed"
            )
    return out


def _checked_circuits(model: PortModel, circuits: Any, groups: Any, check: bool) -> IntArray:
    """``circuits`` as an ``(n, 6)`` int64 array; with ``check``, raise if they break the
    wiring (:func:`check_current`)."""
    if not check:
        if circuits is None:
            return np.zeros((0, 6), dtype=np.int64)
        return np.asarray(circuits, dtype=np.int64).reshape(-1, 6)
    c = _as_circuits(circuits)
    if len(c):
        problems = check_current(model, c, groups=groups)
        if problems:
            raise CurrentConfigError(
                "current configuration does not fit the wiring: " + "; ".join(problems[:3])
            )
    return c


def current_links(
    model: PortModel, circuits: Any, *, groups: Any = None, check: bool = True
) -> IntArray:
    """Links of a configuration as rows ``[h, channel, pod_a, port_a, pod_b, port_b]``.

    One row per forward circuit of a paired channel (``a`` = forward end) and per circuit of a
    self-paired channel with ``(pod_a, port_a) < (pod_b, port_b)``; ``h`` is the position of
    the group in ``groups``. Circuits that do not fit the wiring raise (``check=False`` skips
    that test, for an ``int64`` array already checked by :func:`check_current`).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 2, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t[:, :, ::-1], t)
    >>> current_links(pm, [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]]).tolist()
    [[0, 0, 0, 0, 1, 1]]
    """
    c = _checked_circuits(model, circuits, groups, check)
    H = model.groups
    gids = np.arange(H) if groups is None else np.asarray(groups, dtype=np.int64)
    pos = np.full(int(gids.max()) + 1, -1, dtype=np.int64)
    pos[gids] = np.arange(H)
    return forward_links(
        np.ascontiguousarray(c, dtype=np.int64),
        pos,
        np.ascontiguousarray(model.channel, dtype=np.int64),
        np.ascontiguousarray(model.side, dtype=np.int64),
    )


def channel_counts(
    model: PortModel, circuits: Any, *, groups: Any = None, check: bool = True
) -> IntArray:
    """Circuits per ``(h, channel, direction, tx_pod, rx_pod)``: shape ``(H, n_chan, 2, P, P)``.

    Direction 0 counts circuits whose Tx is on the forward (or self-paired) side, direction 1
    those whose Tx is on the backward side. The per-OCS pod-pair counts ``u_ijk`` of the papers.
    Circuits that do not fit the wiring raise (``check=False`` skips that test, for an
    ``int64`` array already checked by :func:`check_current`).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 2, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t[:, :, ::-1], t)
    >>> u = channel_counts(pm, [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]])
    >>> int(u[0, 0, 0, 0, 1]), int(u[0, 0, 1, 1, 0])
    (1, 1)
    """
    H, P, n_chan = model.groups, model.pods, model.channels
    c = _checked_circuits(model, circuits, groups, check)
    if len(c) == 0:
        return np.zeros((H, n_chan, 2, P, P), dtype=np.int64)
    gids = np.arange(H) if groups is None else np.asarray(groups, dtype=np.int64)
    pos = np.full(int(gids.max()) + 1, -1, dtype=np.int64)
    pos[gids] = np.arange(H)
    h = pos[c[:, 0]]
    ch = model.channel[h, c[:, 2], c[:, 3]]
    d = (model.side[h, c[:, 2], c[:, 3]] == 1).astype(np.int64)
    key = (((h * n_chan + ch) * 2 + d) * P + c[:, 2]) * P + c[:, 4]
    out = np.bincount(key, minlength=H * n_chan * 2 * P * P)
    return out.reshape(H, n_chan, 2, P, P).astype(np.int64, copy=False)


def row_keys(*arrays: Any) -> tuple[IntArray, ...] | None:
    """One ``int64`` key per row of integer arrays with the same columns, ordered like the rows
    (lexicographically), equal exactly for equal rows; None if the keys would overflow.

    Mixed radix over the columns' value ranges (of all arrays together), so sorting the keys
    sorts the rows as ``np.lexsort(rows.T[::-1])`` does.

    Examples
    --------
    >>> import numpy as np
    >>> k, = row_keys(np.array([[1, 5], [0, 7], [1, 2]]))
    >>> np.argsort(k).tolist()
    [1, 2, 0]
    """
    mats = [np.asarray(a, dtype=np.int64) for a in arrays]
    both = np.concatenate(mats)
    if len(both) == 0:
        return tuple(np.zeros(len(m), np.int64) for m in mats)
    lo = both.min(axis=0)
    span = both.max(axis=0) - lo + 1
    total = 1
    for s in span.tolist():
        total *= int(s)
    if total >= 2**62:
        return None
    mult = np.ones(len(span), np.int64)
    mult[:-1] = np.cumprod(span[::-1])[::-1][1:]
    return tuple((m - lo) @ mult for m in mats)


def sort_rows(rows: Any) -> IntArray:
    """The rows of an integer matrix in lexicographic order (``rows[np.lexsort(rows.T[::-1])]``,
    through one ``int64`` key per row when the values allow).

    Examples
    --------
    >>> sort_rows([[1, 5], [0, 7], [1, 2]]).tolist()
    [[0, 7], [1, 2], [1, 5]]
    """
    a = np.asarray(rows, dtype=np.int64)
    keys = row_keys(a)
    if keys is None:
        return a[np.lexsort(a.T[::-1])]
    return a[np.argsort(keys[0], kind="stable")]


# ---- assembly ----------------------------------------------------------------------------
def assemble_circuits(
    model: PortModel,
    counts: Any,
    current: Any = None,
    *,
    groups: Any = None,
) -> IntArray:
    """Port-level circuits realizing per-channel link counts, keeping current links if possible.

    Parameters
    ----------
    model : PortModel
        The wiring of the groups.
    counts : array_like
        ``(H, n_chan, P, P)`` link counts: for paired channels from a forward port of pod ``i``
        to a backward port of pod ``j``; for self-paired ones between pods ``i < j`` (upper
        triangle; the lower triangle must be zero).
    current : array_like, optional
        Current links (:func:`current_links`). For every ``(h, channel, i, j)`` the first
        ``min(count, current)`` of them are kept port for port; the rest of the links take
        free ports in ascending port order.
    groups : array_like, optional
        Real group index of each model group (written in the ``group`` column).

    Returns
    -------
    ndarray
        ``(2 * links, 6)`` circuits ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]``, two
        mirrored circuits per link, sorted.

    Raises
    ------
    lumoscore.errors.InfeasibleError
        A pod has fewer free ports in a channel than its counts need.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 3, 2), dtype=int) + [0, 1]  # uniform wiring, 3 pods, 2 ports
    >>> pm = PortModel.from_arrays(t, t, t, t)
    >>> x = np.zeros((1, 2, 3, 3), dtype=int)
    >>> x[0, 0, 0, 1] = x[0, 1, 1, 2] = 1
    >>> assemble_circuits(pm, x).tolist()
    [[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0], [0, 1, 1, 1, 2, 1], [0, 1, 2, 1, 1, 1]]
    """
    H, P, n_chan = model.groups, model.pods, model.channels
    x = np.asarray(counts, dtype=np.int64)
    if x.shape != (H, n_chan, P, P):
        raise DemandError(f"counts must have shape {(H, n_chan, P, P)}, got {x.shape}")
    keys = np.flatnonzero(x)
    return assemble_sparse(model, keys, x.reshape(-1)[keys], current, groups=groups)


def assemble_sparse(
    model: PortModel,
    keys: Any,
    counts: Any,
    current: Any = None,
    *,
    groups: Any = None,
) -> IntArray:
    """:func:`assemble_circuits` of the counts ``x.flat[keys] = counts`` (all other counts 0).

    ``keys`` are distinct flat indices into ``(H, n_chan, P, P)`` in ascending order, with
    ``counts > 0``; the result equals ``assemble_circuits`` of the dense array.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 3, 2), dtype=int) + [0, 1]  # uniform wiring, 3 pods, 2 ports
    >>> pm = PortModel.from_arrays(t, t, t, t)
    >>> assemble_sparse(pm, [1, 14], [1, 1]).tolist()  # x[0, 0, 0, 1] = x[0, 1, 1, 2] = 1
    [[0, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0], [0, 1, 1, 1, 2, 1], [0, 1, 2, 1, 1, 1]]
    """
    H, P, K, n_chan = model.groups, model.pods, model.ports, model.channels
    keys = np.asarray(keys, dtype=np.int64)
    vals = np.asarray(counts, dtype=np.int64)
    gids = np.arange(H) if groups is None else np.asarray(groups, dtype=np.int64)
    cur = np.zeros((0, 6), dtype=np.int64) if current is None else np.asarray(current, np.int64)
    cur = cur.reshape(-1, 6)
    if model.dead is None:
        dead = np.zeros(H * P * K, dtype=np.bool_)
    else:
        dead = model.dead.ravel()
        h = cur[:, 0]
        cur = cur[~(model.dead[h, cur[:, 2], cur[:, 3]] | model.dead[h, cur[:, 4], cur[:, 5]])]

    links, bad = assemble_links(
        np.ascontiguousarray(keys),
        np.ascontiguousarray(vals),
        np.ascontiguousarray(cur),
        np.ascontiguousarray(model.channel, dtype=np.int64),
        np.ascontiguousarray(model.side, dtype=np.int64),
        np.ascontiguousarray(model.chan_self),
        np.ascontiguousarray(dead),
        P,
        K,
    )
    if bad >= 0:
        pod, c_ = (bad // 2) % P, (bad // (2 * P)) % n_chan
        raise InfeasibleError(
            f"group {gids[bad // (2 * P * n_chan)]}: pod {pod} has too few free ports in channel "
            f"{c_} (OCSes {model.chan_ocs[bad // (2 * P * n_chan), c_].tolist()})"
        )
    return links_to_circuits(model, links, groups=gids)


def links_to_circuits(model: PortModel, links: Any, *, groups: Any = None) -> IntArray:
    """The two circuits ``Tx(a) -> Rx(b)`` and ``Tx(b) -> Rx(a)`` of every link, sorted.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.zeros((1, 2, 2), dtype=int) + [0, 1]
    >>> pm = PortModel.from_arrays(t, t, t[:, :, ::-1], t)
    >>> links_to_circuits(pm, [[0, 0, 0, 0, 1, 1]]).tolist()
    [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]]
    """
    lk = np.asarray(links, dtype=np.int64).reshape(-1, 6)
    gids = np.arange(model.groups) if groups is None else np.asarray(groups, dtype=np.int64)
    h, a, pa, b, pb = lk[:, 0], lk[:, 2], lk[:, 3], lk[:, 4], lk[:, 5]
    fwd = np.column_stack([gids[h], model.tx_ocs[h, a, pa], a, pa, b, pb])
    bwd = np.column_stack([gids[h], model.tx_ocs[h, b, pb], b, pb, a, pa])
    rows = np.concatenate([fwd, bwd])
    # every column has a known range: one mixed-radix key per row sorts them lexicographically
    P, K = model.pods, model.ports
    radix = [int(gids.max(initial=0)) + 1, model.n_ocs, P, K, P, K]
    if len(rows) and math.prod(radix) < 2**62 and rows.min() >= 0:
        key = rows[:, 0]
        for col, r in zip(range(1, 6), radix[1:], strict=True):
            key = key * r + rows[:, col]
        return rows[np.argsort(key, kind="stable")]
    return sort_rows(rows)
