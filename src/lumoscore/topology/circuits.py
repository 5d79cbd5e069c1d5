"""Port-level OCS configurations ("circuits"), their verifier and the logical topology they form.

A configuration of the whole OCS layer is an ``int64`` array of shape ``(n, 6)``, one row per
*directed* circuit (Cross-Wiring §2.2, ``x_mn = 1``)::

    [group, ocs, tx_pod, tx_port, rx_pod, rx_port]

``ocs`` is the OCS index inside the group and ports are spine OCS-facing ports ``0 .. K - 1``
numbered as in :mod:`lumoscore.topology.wiring`. The row says: OCS ``ocs`` of group ``group``
connects the Tx of port ``tx_port`` of spine ``group`` in pod ``tx_pod`` to the Rx of port
``rx_port`` of spine ``group`` in pod ``rx_pod``. A bidirectional logical link is two rows
(constraint (4)); with circulators the two rows are one physical mirror setting of one OCS.

:func:`verify_circuits` checks constraints (1)-(4) port by port, independently of how the
circuits were built; :func:`logical_topology` counts the links between pods and
:func:`ltcr` is Cross-Wiring Eq. (5).

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=2)
>>> w = build_wiring(spec, "cross")
>>> x = np.array([[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]])  # pod 0 <-> pod 1, one link
>>> verify_circuits(w, x, C=[[0, 1], [1, 0]])
[]
>>> logical_topology(w, x)[0].tolist()
[[0, 1], [1, 0]]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.fileio import atomic_write_text, read_text
from lumoscore.topology.wiring import Wiring

__all__ = [
    "CIRCUIT_COLUMNS",
    "MAX_MESSAGES_PER_CHECK",
    "as_circuits",
    "as_logical_topology",
    "logical_topology",
    "ltcr",
    "ltcr_matrix",
    "read_circuits",
    "verify_circuits",
    "write_circuits",
]

IntArray = NDArray[np.int64]

CIRCUIT_COLUMNS: tuple[str, ...] = ("group", "ocs", "tx_pod", "tx_port", "rx_pod", "rx_port")
"""Columns of a circuits array."""

MAX_MESSAGES_PER_CHECK = 20
"""At most this many messages per kind of violation; the rest are counted in one line."""


def as_circuits(circuits: Any) -> IntArray:
    """Validate and convert to an ``(n, 6)`` ``int64`` array (an empty input gives ``(0, 6)``).

    Examples
    --------
    >>> as_circuits([]).shape
    (0, 6)
    """
    arr = np.asarray(circuits)
    if arr.size == 0:
        return np.zeros((0, 6), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 6:
        raise PreconditionError(
            f"circuits must have shape (n, 6) with columns {', '.join(CIRCUIT_COLUMNS)}, "
            f"got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer) and (
        not np.issubdtype(arr.dtype, np.floating) or not np.all(arr == np.round(arr))
    ):
        raise PreconditionError(f"circuits must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def as_logical_topology(C: Any, wiring: Wiring, *, name: str = "C") -> IntArray:
    """``C`` of shape ``(P, P)`` (the same for every group) or ``(H, P, P)`` as ``(H, P, P)``.

    Checks shape, integrality and non-negativity only (not symmetry or fan-out).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=2, k_spine=2, tau=1, gpus_per_server=2, ocs_ports=2)
    >>> as_logical_topology([[0, 1], [1, 0]], build_wiring(spec)).shape
    (2, 2, 2)
    """
    arr = np.asarray(C)
    H, P = wiring.groups, wiring.pods
    if arr.shape == (P, P):
        arr = np.broadcast_to(arr, (H, P, P))
    elif arr.shape != (H, P, P):
        raise PreconditionError(
            f"{name} must have shape (P, P) = ({P}, {P}) or (H, P, P) = ({H}, {P}, {P}), "
            f"got {arr.shape}"
        )
    if (
        arr.size
        and not np.issubdtype(arr.dtype, np.integer)
        and (not np.issubdtype(arr.dtype, np.number) or not np.all(arr == np.round(arr)))
    ):
        raise PreconditionError(f"{name} must hold integers, got dtype {arr.dtype}")
    out = np.array(arr, dtype=np.int64)
    if out.size and out.min() < 0:
        g, i, j = np.argwhere(out < 0)[0]
        raise PreconditionError(
            f"{name}[group {g}, pod {i}, pod {j}] = {out[g, i, j]} is negative; link counts "
            f"must be >= 0"
        )
    return out


def _capped(messages: list[str], total: int, what: str) -> list[str]:
    if total > len(messages):
        messages.append(f"... and {total - len(messages)} more {what}")
    return messages


def logical_topology(wiring: Wiring, circuits: Any) -> IntArray:
    """Directed links between pods, ``X[h, i, j] = sum x_mn`` over ``m`` in pod ``i``,
    ``n`` in pod ``j`` (Cross-Wiring Eq. 5), shape ``(H, P, P)``.

    Rows out of range are ignored (:func:`verify_circuits` reports them).
    """
    x = as_circuits(circuits)
    H, P = wiring.groups, wiring.pods
    X = np.zeros((H, P, P), dtype=np.int64)
    ok = _in_range(wiring, x)
    x = x[ok]
    np.add.at(X, (x[:, 0], x[:, 2], x[:, 4]), 1)
    return X


def ltcr_matrix(X: Any, C: Any) -> float:
    """Logical Topology Compatibility Rate (Cross-Wiring Eq. 5) of realized ``X`` vs target ``C``.

    ``1 - sum(max(C - X, 0)) / sum(C)``; ``1.0`` when ``C`` is all zeros.

    Examples
    --------
    >>> ltcr_matrix([[0, 1], [1, 0]], [[0, 2], [2, 0]])
    0.5
    """
    Xa = np.asarray(X, dtype=np.int64)
    Ca = np.asarray(C, dtype=np.int64)
    total = int(Ca.sum())
    if total == 0:
        return 1.0
    return 1.0 - float(np.maximum(Ca - Xa, 0).sum()) / total


def ltcr(wiring: Wiring, circuits: Any, C: Any) -> float:
    """LTCR (Cross-Wiring Eq. 5) of ``circuits`` against the target ``C`` (``(P, P)`` or
    ``(H, P, P)``; a ``(P, P)`` target applies to every group)."""
    target = as_logical_topology(C, wiring)
    return ltcr_matrix(logical_topology(wiring, circuits), target)


def _in_range(wiring: Wiring, x: IntArray) -> NDArray[np.bool_]:
    H, P, K, O = wiring.groups, wiring.pods, wiring.ports, wiring.ocs_per_group
    lim = np.array([H, O, P, K, P, K])
    return np.all((x >= 0) & (x < lim), axis=1)


def verify_circuits(wiring: Wiring, circuits: Any, C: Any = None) -> list[str]:
    """Check a configuration against Cross-Wiring constraints (1)-(4), port by port.

    Parameters
    ----------
    wiring : Wiring
        The physical topology.
    circuits : array_like
        ``(n, 6)`` rows ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]``.
    C : array_like, optional
        Target logical topology, ``(P, P)`` (every group) or ``(H, P, P)``; if given the
        circuits must realize it exactly (constraint (1)).

    Returns
    -------
    list of str
        One message per violation (empty = valid), naming group, OCS, pod and port:
        out-of-range rows; a Tx or an Rx used by more than one circuit (constraint (2)); a
        circuit whose Tx or Rx is not wired to its OCS (constraint (3)); with circulators a
        circuit joining two half-ports of the same side; a circuit without its mirror
        (constraint (4)); on a coupled wiring (``slim-dual-link``) a circuit
        ``Tx (i, k) -> Rx (j, k')`` without its twin ``Tx (i, k ^ 1) -> Rx (j, k' ^ 1)`` (the
        transceiver's other lane); a pod pair whose link count differs from ``C``
        (constraint (1)).
        At most :data:`MAX_MESSAGES_PER_CHECK` messages per kind.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=3)
    >>> w = build_wiring(spec, "uniform")
    >>> for msg in verify_circuits(w, [[0, 0, 0, 0, 1, 0]]):  # the mirror is missing
    ...     print(msg)
    group 0: circuit OCS 0 Tx pod 0 port 0 -> Rx pod 1 port 0 has no mirror circuit
    Tx pod 1 port 0 -> Rx pod 0 port 0 (symmetry, constraint (4))
    >>> print(verify_circuits(w, [[0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0]])[0])
    group 0: circuit OCS 1 Tx pod 0 port 0 -> Rx pod 1 port 0: Tx of pod 0 port 0 is wired
    to OCS 0, not OCS 1 (constraint (3))
    """
    x = as_circuits(circuits)
    H, P, K, O = wiring.groups, wiring.pods, wiring.ports, wiring.ocs_per_group
    msgs: list[str] = []
    out: list[str]

    # ---- ranges -------------------------------------------------------------------------
    ok = _in_range(wiring, x)
    bad = np.flatnonzero(~ok)
    out = [
        f"circuit row {r} {x[r].tolist()} out of range: group < {H}, ocs < {O}, "
        f"pod < {P}, port < {K}"
        for r in bad[:MAX_MESSAGES_PER_CHECK].tolist()
    ]
    msgs.extend(_capped(out, bad.size, "out-of-range rows"))
    x = x[ok]
    g, o, tp, tk, rp, rk = x.T

    def label(rows: IntArray) -> list[str]:
        return [
            f"group {a}: circuit OCS {b} Tx pod {c} port {d} -> Rx pod {e} port {f}"
            for a, b, c, d, e, f in rows.tolist()
        ]

    def report(bad: IntArray, say: Callable[[str, int], str], what: str) -> list[str]:
        """``say(label, row)`` for the first offending rows ``bad``, then how many more."""
        head = bad[:MAX_MESSAGES_PER_CHECK]
        out = [say(lab, r) for lab, r in zip(label(x[head]), head.tolist(), strict=True)]
        return _capped(out, bad.size, what)

    # ---- constraint (2): every Tx and every Rx at most once ----------------------------
    for end, pod, port in (("Tx", tp, tk), ("Rx", rp, rk)):
        key = (g * P + pod) * K + port
        uniq, counts = np.unique(key, return_counts=True)
        dup = uniq[counts > 1]
        out = []
        for kk in dup[:MAX_MESSAGES_PER_CHECK].tolist():
            rows = x[key == kk]
            gg, rest = divmod(kk, P * K)
            pp, qq = divmod(rest, K)
            out.append(
                f"group {gg}: {end} of pod {pp} port {qq} is used by {rows.shape[0]} circuits "
                f"(OCS {', '.join(map(str, rows[:, 1].tolist()))}); at most one allowed "
                f"(constraint (2))"
            )
        msgs.extend(_capped(out, dup.size, f"{end} ports used twice"))

    # ---- constraint (3): Tx and Rx wired to the circuit's OCS --------------------------
    tx_at = wiring.tx_ocs[g, tp, tk]
    rx_at = wiring.rx_ocs[g, rp, rk]
    msgs.extend(
        report(
            np.flatnonzero(tx_at != o),
            lambda lab, r: (
                f"{lab}: Tx of pod {tp[r]} port {tk[r]} is wired to OCS {tx_at[r]}, "
                f"not OCS {o[r]} (constraint (3))"
            ),
            "circuits with a Tx on another OCS",
        )
    )
    msgs.extend(
        report(
            np.flatnonzero(rx_at != o),
            lambda lab, r: (
                f"{lab}: Rx of pod {rp[r]} port {rk[r]} is wired to OCS {rx_at[r]}, "
                f"not OCS {o[r]} (constraint (3))"
            ),
            "circuits with an Rx on another OCS",
        )
    )

    # ---- circulators: a circuit joins an N and an S half-port --------------------------
    if wiring.circulators:
        tx_side = wiring.tx_side()[g, tp, tk]
        same = np.flatnonzero(
            (tx_side == wiring.rx_side()[g, rp, rk]) & (tx_at == o) & (rx_at == o)
        )
        msgs.extend(
            report(
                same,
                lambda lab, r: (
                    f"{lab}: both half-ports are on the {'NS'[int(tx_side[r])]} "
                    "side of the OCS; a circuit joins an N and an S half-port"
                ),
                "same-side circuits",
            )
        )

    # ---- constraint (4): symmetry x_mn = x_nm ------------------------------------------
    m_key = (g * P + tp) * K + tk
    n_key = (g * P + rp) * K + rk
    span = H * P * K
    fwd = m_key * span + n_key
    rev = n_key * span + m_key
    msgs.extend(
        report(
            np.flatnonzero(~np.isin(rev, fwd)),
            lambda lab, r: (
                f"{lab} has no mirror circuit Tx pod {rp[r]} port {rk[r]} -> Rx pod "
                f"{tp[r]} port {tk[r]} (symmetry, constraint (4))"
            ),
            "circuits without mirror",
        )
    )

    # ---- coupled wirings (slim-dual-link): both lanes of a transceiver to one transceiver --
    if getattr(wiring, "coupled", False):
        twin = ((g * P + tp) * K + (tk ^ 1)) * span + (g * P + rp) * K + (rk ^ 1)
        msgs.extend(
            report(
                np.flatnonzero(~np.isin(twin, fwd)),
                lambda lab, r: (
                    f"{lab} has no twin circuit Tx pod {tp[r]} port {tk[r] ^ 1} -> "
                    f"Rx pod {rp[r]} port {rk[r] ^ 1}: the two lanes of a transceiver (ports 2t, "
                    f"2t+1) must link to one transceiver (coupling, {wiring.kind} wiring)"
                ),
                "uncoupled circuits",
            )
        )

    # ---- constraint (1): the circuits realize C -----------------------------------------
    if C is not None:
        target = as_logical_topology(C, wiring)
        X = np.zeros((H, P, P), dtype=np.int64)
        np.add.at(X, (g, tp, rp), 1)
        diff = np.argwhere(target != X)
        out = []
        for a, i, j in diff[:MAX_MESSAGES_PER_CHECK].tolist():
            out.append(
                f"group {a}: pods {i} -> {j} have {X[a, i, j]} circuits, the logical topology "
                f"asks for {target[a, i, j]} (constraint (1))"
            )
        msgs.extend(_capped(out, diff.shape[0], "pod pairs off target"))
    return msgs


def write_circuits(path: str | Path, circuits: Any) -> None:
    """Write circuits as JSON (a list of objects with :data:`CIRCUIT_COLUMNS` keys, for a
    ``.json`` path) or CSV (that header), atomically (temp file + ``os.replace``).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_circuits(os.path.join(d, "c.json"), [[0, 0, 0, 0, 1, 1]])
    ...     read_circuits(os.path.join(d, "c.json")).tolist()
    [[0, 0, 0, 0, 1, 1]]
    """
    x = as_circuits(circuits)
    p = Path(path)
    if p.suffix.lower() == ".json":
        rows = [dict(zip(CIRCUIT_COLUMNS, r, strict=True)) for r in x.tolist()]
        atomic_write_text(p, json.dumps(rows, indent=1) + "\n")
        return
    lines = [",".join(CIRCUIT_COLUMNS)]
    lines.extend(",".join(map(str, r)) for r in x.tolist())
    atomic_write_text(p, "\n".join(lines) + "\n")


def read_circuits(path: str | Path) -> IntArray:
    """Read circuits written by :func:`write_circuits` (``.json`` or CSV) as ``(n, 6)``."""
    p = Path(path)
    try:
        text = read_text(p, what="a circuits file")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    try:
        if p.suffix.lower() == ".json":
            rows = [[int(r[c]) for c in CIRCUIT_COLUMNS] for r in json.loads(text)]
        else:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if not lines or tuple(c.strip() for c in lines[0].split(",")) != CIRCUIT_COLUMNS:
                raise ConfigError(f"{p}: CSV header must be {','.join(CIRCUIT_COLUMNS)}")
            rows = [[int(v) for v in ln.split(",")] for ln in lines[1:]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{p}: not a circuits file ({exc})") from None
    return as_circuits(np.array(rows, dtype=np.int64).reshape(-1, 6))
