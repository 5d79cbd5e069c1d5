r"""Port-level physical wiring between the spine layer and the OCS layer.

Four wirings of Cross-Wiring §3 and Appendix C (LumosCore §3.1 calls Cross Wiring
*Interleaved Wiring*): three with or without circulators, one (``slim-dual-link``) with
circulators only. The map is the same in every OCS group ``h`` (spine ``h`` of
every pod joins group ``h``), so a :class:`Wiring` stores, for every spine OCS-facing port
``(group h, pod p, port k)``, where its egress (Tx) and ingress (Rx) fibres land: the OCS
*index inside the group* and the OCS port. Everything is built by NumPy broadcasting.

Port model
----------
An OCS of ``K_ocs`` OCS ports has ``K_ocs`` N-side and ``K_ocs`` S-side half-ports; a circuit
joins one N half-port to one S half-port (Cross-Wiring §2.1). ``K = k_spine``.

* **Without circulators** a spine port has a Tx fibre, plugged into the N half of an OCS port,
  and an Rx fibre, plugged into the S half of an OCS port. ``*_ocs_port`` numbers OCS ports
  ``0 .. K_ocs - 1``; a circuit N(q) -> S(q') is a directed link Tx -> Rx.
* **With circulators** a spine port's Tx and Rx share one fibre that lands on *one* half-port,
  so ``tx_* == rx_*`` and ``*_ocs_port`` numbers half-ports ``0 .. 2 K_ocs - 1``: half-port
  ``2 q`` is the N side and ``2 q + 1`` the S side of OCS port ``q``. A circuit joins an N and
  an S half-port and is bidirectional (both directed links exist at once).

Wirings (``psi`` = OCS ports a pod occupies on each OCS of its group)
---------------------------------------------------------------------
``uniform``   (TopoOpt; ``psi = 1``; ``K`` OCSes per group)
    Tx and Rx of port ``k`` go to OCS ``k``, OCS port ``p``. Partially compatible: the ToE
    problem is NP-complete and some logical topologies cannot be realized (Cross-Wiring
    Thm 2.1, Fig. 1; LumosCore Fig. 4). With circulators port ``k`` goes to half-port ``p``
    of OCS ``k`` (``psi = 1/2``): even pods on the N side, odd pods on the S side.
``dual-link`` (Dual-link Uniform, TPUv4; ``psi = 2``; ``K / 2`` OCSes per group)
    Tx and Rx of ports ``2k`` and ``2k + 1`` go to OCS ``k``, OCS ports ``2p`` and ``2p + 1``.
    With circulators port ``2k`` goes to the N half and port ``2k + 1`` to the S half of OCS
    port ``p`` of OCS ``k`` (``psi = 1``).
``cross``     (Cross / Interleaved Wiring; ``psi = 1``; ``K`` OCSes per group)
    The Rx fibres of ports ``2k`` and ``2k + 1`` are swapped: Tx of ``2k`` and Rx of
    ``2k + 1`` go to OCS ``2k``; Tx of ``2k + 1`` and Rx of ``2k`` go to OCS ``2k + 1``; all on
    OCS port ``p``. With circulators even ports are joined to odd ports on ``K / 2`` OCSes
    (Cross-Wiring §3.3: "connecting odd-indexed transceivers to even-indexed ones"): the same
    map as ``dual-link`` with circulators, ``psi = 1``.
``slim-dual-link`` (Slim Dual-link Uniform, Cross-Wiring App. C; circulators only; ``psi = 2``;
    ``K / 4`` OCSes per group; ``k_spine`` a multiple of 4)
    A *transceiver* is the port pair ``(2t, 2t + 1)`` (its two lanes, one circulator each).
    Transceiver ``t`` of pod ``p`` sits on OCS ``t // 2``, OCS port ``q = 2p + t % 2``, lane
    ``2t`` on the N half and lane ``2t + 1`` on the S half of that *same* OCS port. So port
    ``k`` goes to OCS ``k // 4``, half-port ``4p + k % 4``; every pod has two transceivers on
    each OCS of its group: the even one ``2s`` (forward) and the odd one ``2s + 1`` (backward).
    Links are *coupled*: a transceiver's two lanes link to the two lanes of one transceiver of
    another pod (N of one to S of the other, both ways), so every pod pair gets links in units
    of :data:`GRANULARITY` ``= 2``. Fully compatible at that granularity (any logical topology
    with even pod-pair counts within fan-out; an odd count loses one link), by Thm 3.3 on
    transceivers: even transceiver of pod ``i`` <-> odd transceiver of pod ``j`` is the
    mirror-paired sub-topology. With one transceiver per pod per OCS (``psi = 1``, ``K / 2``
    OCSes) the coupled links of an OCS would form a matching of pods and the ToE would be
    multigraph edge colouring (NP-complete, as Thm 2.1): 3 pods with 2 transceivers each, one
    coupled pair wanted between every two pods, get at most one pair per OCS, 2 < 3. Hence
    ``psi = 2``.

The pod limit is ``floor(K_ocs / psi)``: ``uniform = cross = 2 x dual-link`` without
circulators (Cross-Wiring Table 3). With circulators every transceiver needs only half an OCS
port, so ``dual-link`` doubles to ``K_ocs`` pods and ``uniform`` to ``2 K_ocs``. A fully
compatible wiring cannot go beyond ``K_ocs`` pods with circulators: with one half-port per pod
on an OCS the N/S sides 2-colour the pods, and pods of the same colour can never be linked
there (see ``docs/wiring.md``), so ``cross`` with circulators keeps ``K_ocs`` pods and saves
half of the OCSes instead. ``slim-dual-link`` reaches ``floor(K_ocs / 2)`` pods (the
``dual-link`` limit without circulators) with ``K / 4`` OCSes per group.

Scalability in Cross-Wiring Table 3 form (``K_ocs / psi x K_egroup`` GPUs, ``K_egroup`` =
GPUs per pod):

================  ===========  =========  ================  ===============================
wiring            circulators  psi        max pods          full compatibility
================  ===========  =========  ================  ===============================
uniform           no, yes      1, 1/2     K_ocs, 2 K_ocs    no
dual-link         no, yes      2, 1       K_ocs/2, K_ocs    yes
cross             no, yes      1, 1       K_ocs, K_ocs      yes
slim-dual-link    yes only     2          K_ocs/2           yes, in units of 2 links
================  ===========  =========  ================  ===============================

Examples
--------
>>> from lumoscore.topology import ClusterSpec
>>> spec = ClusterSpec(pods=3, k_leaf=2, k_spine=4, tau=1, gpus_per_server=2, ocs_ports=8)
>>> w = build_wiring(spec, "cross")
>>> w.tx_ocs[0, 0].tolist(), w.rx_ocs[0, 0].tolist()  # group 0, pod 0, ports 0..3
([0, 1, 2, 3], [1, 0, 3, 2])
>>> max_pods("cross", 512), max_pods("dual-link", 512), max_pods("dual-link", 512, True)
(512, 256, 512)
>>> s = build_wiring(spec, "slim", circulators=True)  # port k -> OCS k // 4, half 4p + k % 4
>>> s.tx_ocs[0, 1].tolist(), s.tx_ocs_port[0, 1].tolist(), s.granularity
([0, 0, 0, 0], [4, 5, 6, 7], 2)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError
from lumoscore.fileio import atomic_write_text, read_text
from lumoscore.topology.cluster import ClusterSpec

__all__ = [
    "CIRCULATORS_ONLY",
    "FULLY_COMPATIBLE",
    "GRANULARITY",
    "RECORD_COLUMNS",
    "WIRING_KINDS",
    "Wiring",
    "build_wiring",
    "max_gpus",
    "max_pods",
    "ocs_per_group",
    "psi",
    "read_wiring_map",
    "require_circulators",
    "wiring_kind",
]

IntArray = NDArray[np.int64]

WIRING_KINDS: tuple[str, ...] = ("uniform", "dual-link", "cross", "slim-dual-link")
"""Canonical wiring names."""

GRANULARITY: dict[str, int] = {"uniform": 1, "dual-link": 1, "cross": 1, "slim-dual-link": 2}
"""Links a pod pair gains or loses at once: ``slim-dual-link`` couples a transceiver's two
lanes to one remote transceiver, so its pod-pair link counts are even (Cross-Wiring App. C)."""

FULLY_COMPATIBLE: dict[str, bool] = {
    "uniform": False,
    "dual-link": True,
    "cross": True,
    "slim-dual-link": True,
}
"""Whether every symmetric logical topology within fan-out whose pod-pair counts are multiples
of :data:`GRANULARITY` is realizable (Cross-Wiring Table 3; for ``slim-dual-link``: every
topology with even counts -- an odd count is realized one link short)."""

CIRCULATORS_ONLY: frozenset[str] = frozenset({"slim-dual-link"})
"""Wirings that exist only with circulators (Cross-Wiring App. C: the N and S half of one OCS
port carry one transceiver's two lanes)."""

RECORD_COLUMNS: tuple[str, ...] = (
    "group",
    "pod",
    "port",
    "tx_ocs",
    "tx_ocs_port",
    "rx_ocs",
    "rx_ocs_port",
)
"""Columns of the exported map (JSON objects / CSV header), one row per spine OCS-facing port."""

_ALIASES = {
    "uniform": "uniform",
    "dual-link": "dual-link",
    "dual_link": "dual-link",
    "duallink": "dual-link",
    "dual": "dual-link",
    "cross": "cross",
    "interleaved": "cross",
    "slim-dual-link": "slim-dual-link",
    "slim_dual_link": "slim-dual-link",
    "slimduallink": "slim-dual-link",
    "slim-dual": "slim-dual-link",
    "slim_dual": "slim-dual-link",
    "slim": "slim-dual-link",
}

# OCS ports per pod per OCS, (kind, circulators) -> psi
_PSI: dict[tuple[str, bool], Fraction] = {
    ("uniform", False): Fraction(1),
    ("uniform", True): Fraction(1, 2),
    ("dual-link", False): Fraction(2),
    ("dual-link", True): Fraction(1),
    ("cross", False): Fraction(1),
    ("cross", True): Fraction(1),
    ("slim-dual-link", True): Fraction(2),
}


def wiring_kind(name: str) -> str:
    """Canonical wiring name of ``name`` (aliases: ``interleaved`` = ``cross``, ``slim`` =
    ``slim-dual-link``; ``_`` for ``-``).

    Examples
    --------
    >>> wiring_kind("Interleaved"), wiring_kind("dual_link"), wiring_kind("slim")
    ('cross', 'dual-link', 'slim-dual-link')
    """
    key = str(name).strip().lower()
    if key not in _ALIASES:
        raise ConfigError(
            f"wiring: unknown kind {name!r}; allowed: {', '.join(WIRING_KINDS)} "
            f"(aliases: interleaved = cross, slim = slim-dual-link)"
        )
    return _ALIASES[key]


def require_circulators(kind: str, circulators: bool) -> None:
    """Raise a one-line :class:`ConfigError` if wiring ``kind`` needs circulators and has none.

    Examples
    --------
    >>> require_circulators("cross", False)
    >>> require_circulators("slim", False)
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: circulators: slim-dual-link wiring must be deployed with circulators (a transceiver's two lanes share the N and S half of one OCS port); allowed: circulators = true (--circulators), or without circulators one of uniform, dual-link, cross
    """  # noqa: E501
    kind = wiring_kind(kind)
    if kind in CIRCULATORS_ONLY and not circulators:
        others = ", ".join(k for k in WIRING_KINDS if k not in CIRCULATORS_ONLY)
        raise ConfigError(
            f"circulators: {kind} wiring must be deployed with circulators (a transceiver's "
            f"two lanes share the N and S half of one OCS port); allowed: circulators = true "
            f"(--circulators), or without circulators one of {others}"
        )


def psi(kind: str, circulators: bool = False) -> Fraction:
    """OCS ports (N/S pairs) one pod occupies on each OCS of its group.

    Examples
    --------
    >>> psi("dual-link"), psi("uniform", circulators=True), psi("slim", circulators=True)
    (Fraction(2, 1), Fraction(1, 2), Fraction(2, 1))
    """
    require_circulators(kind, circulators)
    return _PSI[(wiring_kind(kind), bool(circulators))]


def max_pods(kind: str, ocs_ports: int, circulators: bool = False) -> int:
    """Most pods the wiring can join with OCSes of ``ocs_ports`` ports: ``floor(K_ocs / psi)``.

    Examples
    --------
    >>> [max_pods(k, 320) for k in ("uniform", "dual-link", "cross")]
    [320, 160, 320]
    >>> [max_pods(k, 320, circulators=True) for k in ("uniform", "dual-link", "cross")]
    [640, 320, 320]
    >>> max_pods("slim-dual-link", 320, circulators=True)
    160
    """
    if int(ocs_ports) < 1:
        raise ConfigError(f"ocs_ports must be >= 1, got {ocs_ports}")
    return int(Fraction(int(ocs_ports)) / psi(kind, circulators))


def max_gpus(
    kind: str,
    ocs_ports: int,
    circulators: bool = False,
    *,
    gpus_per_pod: int,
) -> int:
    """Largest cluster of the wiring: ``max_pods * gpus_per_pod`` (Cross-Wiring Table 3).

    ``K_ocs / psi`` pods, each with ``gpus_per_pod = k_leaf * k_spine / tau`` GPUs.

    Examples
    --------
    >>> max_gpus("cross", 512, gpus_per_pod=16 * 16 // 2)
    65536
    >>> max_gpus("dual-link", 512, gpus_per_pod=128)
    32768
    """
    if int(gpus_per_pod) < 1:
        raise ConfigError(f"gpus_per_pod must be >= 1, got {gpus_per_pod}")
    return max_pods(kind, ocs_ports, circulators) * int(gpus_per_pod)


def ocs_per_group(kind: str, k_spine: int, circulators: bool = False) -> int:
    """OCSes in one group under the wiring: ``k_spine``, or ``k_spine / 2`` when ``psi``
    counts two spine ports per pod per OCS (``dual-link``; ``cross`` with circulators), or
    ``k_spine / 4`` for ``slim-dual-link`` (two transceivers = four ports per pod per OCS).

    Examples
    --------
    >>> ocs_per_group("cross", 16), ocs_per_group("dual-link", 16), ocs_per_group("cross", 16, True)
    (16, 8, 8)
    >>> ocs_per_group("slim-dual-link", 16, True)
    4
    """
    kind = wiring_kind(kind)
    require_circulators(kind, circulators)
    if kind == "slim-dual-link":
        return int(k_spine) // 4
    if kind == "uniform":
        return int(k_spine)
    if kind == "cross" and not circulators:
        return int(k_spine)
    return int(k_spine) // 2


def _group_map(
    kind: str, circulators: bool, pods: int, k: int
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """The ``(P, K)`` maps of one group: tx_ocs, tx_ocs_port, rx_ocs, rx_ocs_port."""
    p = np.arange(pods, dtype=np.int64)[:, None]
    port = np.arange(k, dtype=np.int64)[None, :]
    shape = (pods, k)
    if kind == "uniform":
        ocs = np.broadcast_to(port, shape)
        q = np.broadcast_to(p, shape)  # OCS port p, or half-port p with circulators
        return ocs, q, ocs, q
    if kind == "slim-dual-link":  # transceiver t = (2t, 2t+1) on OCS t // 2, OCS port 2p + t % 2
        ocs = np.broadcast_to(port // 4, shape)
        half = 4 * p + port % 4  # = 2 (2p + t % 2) + lane: lane 0 on N, lane 1 on S
        return ocs, half, ocs, half
    if kind == "dual-link" and not circulators:
        ocs = np.broadcast_to(port // 2, shape)
        q = 2 * p + port % 2
        return ocs, q, ocs, q
    if circulators:  # dual-link and cross: port 2k -> N(p), port 2k+1 -> S(p) of OCS k
        ocs = np.broadcast_to(port // 2, shape)
        half = 2 * p + port % 2
        return ocs, half, ocs, half
    # cross without circulators: Tx of k -> OCS k, Rx of k -> OCS k xor 1, OCS port p
    tx = np.broadcast_to(port, shape)
    rx = np.broadcast_to(port ^ 1, shape)
    q = np.broadcast_to(p, shape)
    return tx, q, rx, q


@dataclass(frozen=True, eq=False)
class Wiring:
    """Port-level physical topology of a whole cluster (read-only arrays).

    Attributes
    ----------
    kind : str
        ``"uniform"``, ``"dual-link"``, ``"cross"`` or ``"slim-dual-link"``.
    circulators : bool
        Whether every spine port's Tx and Rx share one fibre through a circulator.
    spec : ClusterSpec
        The cluster.
    tx_ocs, tx_ocs_port, rx_ocs, rx_ocs_port : numpy.ndarray
        ``int64`` arrays of shape ``(H, P, K)`` (groups, pods, OCS-facing ports per spine):
        OCS index inside the group and OCS port (half-port with circulators) where the Tx and
        the Rx fibre of spine port ``(h, p, k)`` land.
    """

    kind: str
    circulators: bool
    spec: ClusterSpec
    tx_ocs: IntArray
    tx_ocs_port: IntArray
    rx_ocs: IntArray
    rx_ocs_port: IntArray

    def __repr__(self) -> str:
        return (
            f"Wiring(kind={self.kind!r}, circulators={self.circulators}, groups={self.groups}, "
            f"pods={self.pods}, ports={self.ports}, ocs_per_group={self.ocs_per_group})"
        )

    # ---- sizes ----------------------------------------------------------------------------
    @property
    def groups(self) -> int:
        """OCS groups ``H``."""
        return int(self.tx_ocs.shape[0])

    @property
    def pods(self) -> int:
        """Pods ``P``."""
        return int(self.tx_ocs.shape[1])

    @property
    def ports(self) -> int:
        """OCS-facing ports per spine ``K = k_spine``."""
        return int(self.tx_ocs.shape[2])

    @property
    def ocs_per_group(self) -> int:
        """OCSes per group under this wiring."""
        return ocs_per_group(self.kind, self.ports, self.circulators)

    @property
    def ocs_count(self) -> int:
        """OCSes in the cluster under this wiring."""
        return self.groups * self.ocs_per_group

    @property
    def psi(self) -> Fraction:
        """OCS ports one pod occupies on each OCS."""
        return psi(self.kind, self.circulators)

    @property
    def port_slots(self) -> int:
        """Range of ``*_ocs_port``: ``K_ocs`` OCS ports, or ``2 K_ocs`` half-ports."""
        return self.spec.ocs_ports * (2 if self.circulators else 1)

    @property
    def ocs_ports_used(self) -> int:
        """OCS ports (N/S pairs) in use on each OCS: ``ceil(P * psi)``."""
        used = Fraction(self.pods) * self.psi
        return -(-used.numerator // used.denominator)

    @property
    def max_pods(self) -> int:
        """Most pods this wiring supports with the spec's OCS port count."""
        return max_pods(self.kind, self.spec.ocs_ports, self.circulators)

    @property
    def max_gpus(self) -> int:
        """Largest cluster of this wiring with the spec's pod size and OCS port count."""
        return max_gpus(
            self.kind, self.spec.ocs_ports, self.circulators, gpus_per_pod=self.spec.gpus_per_pod
        )

    @property
    def fully_compatible(self) -> bool:
        """Every symmetric logical topology within fan-out is realizable (at
        :attr:`granularity`: pod-pair counts that are multiples of it)."""
        return FULLY_COMPATIBLE[self.kind]

    @property
    def granularity(self) -> int:
        """Links a pod pair gets at once (:data:`GRANULARITY`): 2 for ``slim-dual-link``."""
        return GRANULARITY[self.kind]

    @property
    def coupled(self) -> bool:
        """Ports ``2t`` and ``2t + 1`` form one transceiver whose two lanes must link to the two
        lanes of one transceiver of the same other pod (``slim-dual-link``): a circuit
        ``Tx (i, k) -> Rx (j, k')`` needs its twin ``Tx (i, k ^ 1) -> Rx (j, k' ^ 1)``."""
        return self.granularity > 1

    # ---- N/S sides --------------------------------------------------------------------------
    def tx_side(self) -> IntArray:
        """Side (0 = N, 1 = S) of the half-port carrying each port's Tx, shape ``(H, P, K)``."""
        if self.circulators:
            return self.tx_ocs_port % 2
        return np.zeros_like(self.tx_ocs_port)

    def rx_side(self) -> IntArray:
        """Side (0 = N, 1 = S) of the half-port carrying each port's Rx, shape ``(H, P, K)``."""
        if self.circulators:
            return self.rx_ocs_port % 2
        return np.ones_like(self.rx_ocs_port)

    def tx_half_port(self) -> IntArray:
        """Half-port id ``2 q + side`` of each Tx fibre (the same numbering in both modes)."""
        return self.tx_ocs_port if self.circulators else 2 * self.tx_ocs_port

    def rx_half_port(self) -> IntArray:
        """Half-port id ``2 q + side`` of each Rx fibre."""
        return self.rx_ocs_port if self.circulators else 2 * self.rx_ocs_port + 1

    # ---- summaries and exports --------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Sizes of the wiring as a plain dict."""
        return {
            "wiring": self.kind,
            "circulators": self.circulators,
            "pods": self.pods,
            "ocs_groups": self.groups,
            "ocs_per_group": self.ocs_per_group,
            "ocs_count": self.ocs_count,
            "ocs_ports": self.spec.ocs_ports,
            "ocs_ports_used": self.ocs_ports_used,
            "ocs_port_unit": "half-port" if self.circulators else "ocs-port",
            "psi": float(self.psi),
            "spine_ports_per_group": self.pods * self.ports,
            "spine_ports": self.groups * self.pods * self.ports,
            "k_spine": self.ports,
            "gpus": self.spec.gpus,
            "max_pods": self.max_pods,
            "max_gpus": self.max_gpus,
            "fully_compatible": self.fully_compatible,
            "link_granularity": self.granularity,
        }

    def to_array(self) -> IntArray:
        """The map as an ``(H * P * K, 7)`` ``int64`` array in :data:`RECORD_COLUMNS` order.

        Rows are ordered by group, pod, port.
        """
        h, p, k = np.indices(self.tx_ocs.shape).reshape(3, -1)
        cols = (h, p, k, self.tx_ocs, self.tx_ocs_port, self.rx_ocs, self.rx_ocs_port)
        return np.column_stack([np.ravel(c) for c in cols]).astype(np.int64)

    def to_records(self) -> list[dict[str, int]]:
        """One dict per spine port with the keys of :data:`RECORD_COLUMNS`."""
        return [dict(zip(RECORD_COLUMNS, row, strict=True)) for row in self.to_array().tolist()]

    def to_json(self, path: str | Path) -> None:
        """Write :meth:`to_records` as a JSON list (atomically)."""
        atomic_write_text(path, json.dumps(self.to_records(), indent=1) + "\n")

    def to_csv(self, path: str | Path) -> None:
        """Write the map as CSV with the :data:`RECORD_COLUMNS` header (atomically)."""
        arr = self.to_array()
        lines = [",".join(RECORD_COLUMNS)]
        if arr.size:
            body = np.char.mod("%d", arr)
            lines.extend(",".join(r) for r in body.tolist())
        atomic_write_text(path, "\n".join(lines) + "\n")

    def to_networkx(self) -> nx.DiGraph:
        """Directed graph of spine ports, OCS half-ports and fibres.

        Nodes
            ``("spine", h, p, k)`` -- spine port ``k`` of pod ``p`` in group ``h``; attributes
            ``type="spine_port", group, pod, port``.
            ``("ocs", h, o, s)`` -- half-port ``s = 2 q + side`` of OCS ``o`` in group ``h``;
            attributes ``type="ocs_half_port", group, ocs, ocs_port=q, side="N"|"S"``.
        Edges
            Tx fibre ``spine -> ocs`` and Rx fibre ``ocs -> spine``, attribute
            ``fiber="tx"|"rx"``. With circulators both edges touch the same half-port.
        """
        g = nx.DiGraph(kind=self.kind, circulators=self.circulators)
        arr = self.to_array()
        h, p, k = arr[:, 0], arr[:, 1], arr[:, 2]
        tx_h = self.tx_half_port().ravel()
        rx_h = self.rx_half_port().ravel()
        spine = list(zip(h.tolist(), p.tolist(), k.tolist(), strict=True))
        g.add_nodes_from(
            (("spine", a, b, c), {"type": "spine_port", "group": a, "pod": b, "port": c})
            for a, b, c in spine
        )
        ends = np.unique(
            np.concatenate(
                [np.column_stack([h, arr[:, 3], tx_h]), np.column_stack([h, arr[:, 5], rx_h])]
            ),
            axis=0,
        )
        g.add_nodes_from(
            (
                ("ocs", a, o, s),
                {
                    "type": "ocs_half_port",
                    "group": a,
                    "ocs": o,
                    "ocs_port": s // 2,
                    "side": "NS"[s % 2],
                },
            )
            for a, o, s in ends.tolist()
        )
        g.add_edges_from(
            (("spine", a, b, c), ("ocs", a, o, s), {"fiber": "tx"})
            for (a, b, c), o, s in zip(spine, arr[:, 3].tolist(), tx_h.tolist(), strict=True)
        )
        g.add_edges_from(
            (("ocs", a, o, s), ("spine", a, b, c), {"fiber": "rx"})
            for (a, b, c), o, s in zip(spine, arr[:, 5].tolist(), rx_h.tolist(), strict=True)
        )
        return g


def _validate(spec: ClusterSpec, kind: str, circulators: bool) -> None:
    require_circulators(kind, circulators)
    if kind == "slim-dual-link" and spec.k_spine % 4:
        raise ConfigError(
            f"k_spine: slim-dual-link wiring puts two transceivers (ports 4s .. 4s+3) of every "
            f"pod on OCS s, so k_spine must be a multiple of 4, got {spec.k_spine}"
        )
    if kind in ("cross", "dual-link") and spec.k_spine % 2:
        raise ConfigError(
            f"k_spine: {kind} wiring pairs OCS-facing ports 2k and 2k+1, so k_spine must be "
            f"even, got {spec.k_spine}"
        )
    limit = max_pods(kind, spec.ocs_ports, circulators)
    if spec.pods > limit:
        circ = "with" if circulators else "without"
        raise ConfigError(
            f"pods: {spec.pods} pods do not fit {kind} wiring {circ} circulators on "
            f"{spec.ocs_ports}-port OCSes (psi = {psi(kind, circulators)}): at most {limit} "
            f"pods; use more OCS ports, circulators, or another wiring "
            f"({', '.join(WIRING_KINDS)})"
        )


def build_wiring(spec: ClusterSpec, kind: str = "cross", circulators: bool = False) -> Wiring:
    """Port-level map of ``spec`` under wiring ``kind``.

    Parameters
    ----------
    spec : ClusterSpec
        The cluster (pods, ``k_spine`` OCS-facing ports per spine, ``ocs_ports`` per OCS).
    kind : str
        ``"uniform"``, ``"dual-link"``, ``"cross"`` (alias ``"interleaved"``) or
        ``"slim-dual-link"`` (alias ``"slim"``; needs ``circulators``).
    circulators : bool
        Tx and Rx of each spine port share one fibre (one half-port).

    Raises
    ------
    ConfigError
        Unknown ``kind``, ``slim-dual-link`` without circulators, odd ``k_spine`` for a
        paired wiring (not a multiple of 4 for ``slim-dual-link``), or more pods than
        :func:`max_pods` allows.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=2, k_spine=4, tau=1, gpus_per_server=2, ocs_ports=4)
    >>> w = build_wiring(spec, "dual-link")
    >>> w.tx_ocs.shape, w.ocs_per_group, w.tx_ocs_port[0, 1].tolist()
    ((2, 2, 4), 2, [2, 3, 2, 3])
    >>> build_wiring(spec, "uniform", circulators=True).tx_ocs_port[0, 1].tolist()
    [1, 1, 1, 1]
    """
    if not isinstance(spec, ClusterSpec):
        raise ConfigError(f"spec must be a ClusterSpec, got {type(spec).__name__}")
    kind = wiring_kind(kind)
    circulators = bool(circulators)
    _validate(spec, kind, circulators)
    shape = (spec.ocs_groups, spec.pods, spec.k_spine)
    arrays = []
    for a in _group_map(kind, circulators, spec.pods, spec.k_spine):
        full = np.broadcast_to(np.asarray(a, dtype=np.int64), shape)
        arrays.append(full)  # read-only views: the map is the same in every group
    return Wiring(kind, circulators, spec, *arrays)


def read_wiring_map(path: str | Path) -> IntArray:
    """Read a map written by :meth:`Wiring.to_json` or :meth:`Wiring.to_csv`.

    Returns the ``(n, 7)`` ``int64`` array in :data:`RECORD_COLUMNS` order (compare it with
    :meth:`Wiring.to_array`).

    Examples
    --------
    >>> import tempfile, os
    >>> from lumoscore.topology import ClusterSpec
    >>> spec = ClusterSpec(pods=2, k_leaf=2, k_spine=2, tau=1, gpus_per_server=2, ocs_ports=2)
    >>> w = build_wiring(spec)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w.to_csv(os.path.join(d, "m.csv"))
    ...     bool((read_wiring_map(os.path.join(d, "m.csv")) == w.to_array()).all())
    True
    """
    p = Path(path)
    try:
        text = read_text(p, what="a wiring file")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    if p.suffix.lower() == ".json":
        try:
            rows = json.loads(text)
            return np.array(
                [[int(r[c]) for c in RECORD_COLUMNS] for r in rows], dtype=np.int64
            ).reshape(-1, len(RECORD_COLUMNS))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{p}: not a wiring map ({exc})") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or tuple(c.strip() for c in lines[0].split(",")) != RECORD_COLUMNS:
        raise ConfigError(f"{p}: CSV header must be {','.join(RECORD_COLUMNS)}")
    try:
        data = np.array([ln.split(",") for ln in lines[1:]], dtype=np.int64)
    except ValueError as exc:
        raise ConfigError(f"{p}: not a wiring map ({exc})") from None
    return data.reshape(-1, len(RECORD_COLUMNS))
