"""Columnar flows, rounds and schedules, and their vectorized aggregation.

A :class:`Flows` is a table of equal-length NumPy columns: ``src`` and ``dst`` (GPU ids, or
network-node ids after :func:`aggregate` with a key), ``bytes`` (bytes of ONE flow of the row)
and ``weight`` (how many identical flows the row stands for). The bytes a row moves are
``bytes * weight``.

A :class:`Round` is one barrier-delimited step: its flows, the compute seconds that precede them,
a traffic-class tag and, when the generator knows it, the round's communication time on the
ideal network. A :class:`Schedule` is a tuple of rounds run one after the other.

Examples
--------
>>> f = Flows.of([0, 0, 1], [8, 8, 9], 100.0)
>>> len(f), f.total_bytes
(3, 300.0)
>>> g = aggregate(f)
>>> g.src.tolist(), g.dst.tolist(), g.weight.tolist(), g.total_bytes
([0, 1], [8, 9], [2, 1], 300.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError
from lumoscore.workload.job import REFERENCE_PORT_GBPS

__all__ = [
    "Flows",
    "Round",
    "Schedule",
    "aggregate",
    "drop_intra_server",
    "ideal_round_s",
    "nic_load_bytes",
    "pair_totals",
]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Flows:
    """Equal-length columns describing flows (one row = ``weight`` identical flows).

    Parameters
    ----------
    src, dst : ndarray of int64
        Source and destination GPU (or node) ids.
    bytes : ndarray of float64
        Bytes of one flow of the row.
    weight : ndarray of int64
        Number of identical flows the row stands for (>= 1).

    Examples
    --------
    >>> f = Flows.of([0, 1], [1, 0], [4.0, 2.0], weight=[1, 3])
    >>> f.total_bytes, f.count
    (10.0, 4)
    """

    src: IntArray
    dst: IntArray
    bytes: FloatArray
    weight: IntArray

    def __post_init__(self) -> None:
        src = np.asarray(self.src, dtype=np.int64).reshape(-1)
        dst = np.asarray(self.dst, dtype=np.int64).reshape(-1)
        size = np.asarray(self.bytes, dtype=np.float64).reshape(-1)
        weight = np.asarray(self.weight, dtype=np.int64).reshape(-1)
        n = src.shape[0]
        if not (dst.shape[0] == size.shape[0] == weight.shape[0] == n):
            raise ConfigError(
                f"Flows columns must have equal length, got src={n}, dst={dst.shape[0]}, "
                f"bytes={size.shape[0]}, weight={weight.shape[0]}"
            )
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dst", dst)
        object.__setattr__(self, "bytes", size)
        object.__setattr__(self, "weight", weight)

    @classmethod
    def of(
        cls,
        src: ArrayLike,
        dst: ArrayLike,
        bytes: ArrayLike,
        weight: ArrayLike | None = None,
    ) -> Flows:
        """Build flows, broadcasting scalars (e.g. one size for all rows, weight 1 by default).

        Examples
        --------
        >>> Flows.of([3, 4], [5, 6], 8.0).bytes.tolist()
        [8.0, 8.0]
        """
        s = np.asarray(src, dtype=np.int64).reshape(-1)
        d = np.asarray(dst, dtype=np.int64).reshape(-1)
        w = np.ones(1, np.int64) if weight is None else np.asarray(weight, np.int64).reshape(-1)
        b = np.asarray(bytes, dtype=np.float64).reshape(-1)
        s, d, b, w = np.broadcast_arrays(s, d, b, w)
        return cls(s.copy(), d.copy(), b.copy(), w.copy())

    @classmethod
    def _unchecked(cls, src: IntArray, dst: IntArray, size: FloatArray, weight: IntArray) -> Flows:
        """Flows from 1-D int64, int64, float64, int64 columns of equal length, taken as they
        are (no conversion or check: for generators that build them so)."""
        out = object.__new__(cls)
        object.__setattr__(out, "src", src)
        object.__setattr__(out, "dst", dst)
        object.__setattr__(out, "bytes", size)
        object.__setattr__(out, "weight", weight)
        return out

    @classmethod
    def empty(cls) -> Flows:
        """No flows.

        Examples
        --------
        >>> len(Flows.empty())
        0
        """
        z = np.zeros(0, np.int64)
        return cls(z, z, np.zeros(0, np.float64), z)

    @staticmethod
    def concat(parts: Sequence[Flows]) -> Flows:
        """Rows of every part, in order.

        Examples
        --------
        >>> len(Flows.concat([Flows.of([0], [1], 1.0), Flows.of([2, 3], [4, 5], 1.0)]))
        3
        """
        parts = [p for p in parts if len(p)]
        if not parts:
            return Flows.empty()
        if len(parts) == 1:
            return parts[0]
        return Flows(
            np.concatenate([p.src for p in parts]),
            np.concatenate([p.dst for p in parts]),
            np.concatenate([p.bytes for p in parts]),
            np.concatenate([p.weight for p in parts]),
        )

    def select(self, mask: ArrayLike) -> Flows:
        """Rows where ``mask`` is true (or the rows of an index array).

        Examples
        --------
        >>> Flows.of([0, 1], [1, 2], 1.0).select([False, True]).src.tolist()
        [1]
        """
        m = np.asarray(mask)
        return Flows(self.src[m], self.dst[m], self.bytes[m], self.weight[m])

    def scaled(self, factor: float) -> Flows:
        """The same flows with every size multiplied by ``factor``.

        Examples
        --------
        >>> Flows.of([0], [1], 2.0).scaled(3.0).bytes.tolist()
        [6.0]
        """
        return Flows(self.src, self.dst, self.bytes * factor, self.weight)

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def total_bytes(self) -> float:
        """Bytes moved by all flows (``sum(bytes * weight)``)."""
        return float(np.dot(self.bytes, self.weight))

    @property
    def count(self) -> int:
        """Number of flows the rows stand for (``sum(weight)``)."""
        return int(self.weight.sum())


@dataclass(frozen=True, slots=True)
class Round:
    """One barrier-delimited round: compute, then flows; it ends when its slowest flow ends.

    Parameters
    ----------
    flows : Flows
        The round's flows (all start together after the compute).
    compute_s : float
        Compute seconds before the flows start.
    tag : str
        Traffic class, e.g. ``"pp"``, ``"dp+pp"``, ``"ep"``, ``"dp"`` or a collective step name.
    ideal_s : float, optional
        Communication time of the round on the ideal network, when the generator knows it.
    """

    flows: Flows
    compute_s: float = 0.0
    tag: str = ""
    ideal_s: float | None = None


@dataclass(frozen=True, slots=True)
class Schedule:
    """Rounds run one after the other, with a barrier after each.

    Examples
    --------
    >>> s = Schedule((Round(Flows.of([0], [1], 5.0), 1.0, "a"), Round(Flows.of([1], [0], 5.0))))
    >>> len(s), s.total_bytes, s.compute_s
    (2, 10.0, 1.0)
    """

    rounds: tuple[Round, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.rounds)

    def __iter__(self) -> Iterator[Round]:
        return iter(self.rounds)

    def __getitem__(self, i: int) -> Round:
        return self.rounds[i]

    @property
    def total_bytes(self) -> float:
        """Bytes moved by every round."""
        return float(sum(r.flows.total_bytes for r in self.rounds))

    @property
    def compute_s(self) -> float:
        """Compute seconds of every round."""
        return float(sum(r.compute_s for r in self.rounds))

    def merged(self) -> Flows:
        """Flows of all rounds concatenated (as if they ran concurrently).

        Examples
        --------
        >>> s = Schedule((Round(Flows.of([0], [1], 5.0)), Round(Flows.of([1], [0], 5.0))))
        >>> len(s.merged())
        2
        """
        return Flows.concat([r.flows for r in self.rounds])


def _node_map(key: ArrayLike | Callable[[IntArray], IntArray], ids: IntArray) -> IntArray:
    if callable(key):
        return np.asarray(key(ids), dtype=np.int64)
    table = np.asarray(key, dtype=np.int64)
    if table.ndim != 1:
        raise ConfigError(f"aggregate key must be a 1-D GPU -> node table, got shape {table.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise ConfigError(
            f"aggregate key table has {table.shape[0]} entries; a flow names GPU {int(ids.max())}"
        )
    return table[ids]


def aggregate(flows: Flows, key: ArrayLike | Callable[[IntArray], IntArray] | None = None) -> Flows:
    """Merge flows with the same endpoints and size into one weighted row.

    Parameters
    ----------
    flows : Flows
        Flows to merge.
    key : array or callable, optional
        ``None`` merges rows with identical ``(src, dst, bytes)``. Otherwise a GPU -> node
        mapping (a 1-D table indexed by GPU id, or a vectorized callable such as
        ``spec.leaf_of_gpu``): rows with the same ``(node(src), node(dst), bytes)`` become one
        row whose ``src``/``dst`` are NODE ids and whose weight is the sum of the weights.

    Returns
    -------
    Flows
        Rows sorted by ``(src, dst, bytes)``; total bytes and bytes per (node) pair preserved.

    Examples
    --------
    >>> f = Flows.of([0, 1, 2, 9], [8, 9, 10, 1], 4.0)
    >>> g = aggregate(f, key=lambda g: g // 8)   # 8 GPUs per leaf
    >>> g.src.tolist(), g.dst.tolist(), g.weight.tolist()
    ([0, 1], [1, 0], [3, 1])
    """
    if len(flows) == 0:
        return flows
    src, dst = flows.src, flows.dst
    if key is not None:
        src = _node_map(key, src)
        dst = _node_map(key, dst)
    order = np.lexsort((flows.bytes, dst, src))
    s, d, b, w = src[order], dst[order], flows.bytes[order], flows.weight[order]
    new = np.empty(s.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    new[1:] |= d[1:] != d[:-1]
    new[1:] |= b[1:] != b[:-1]
    starts = np.flatnonzero(new)
    return Flows(s[starts], d[starts], b[starts], np.add.reduceat(w, starts))


def drop_intra_server(flows: Flows, gpus_per_server: int) -> Flows:
    """Keep only flows between different servers (intra-server traffic stays off the network).

    Examples
    --------
    >>> drop_intra_server(Flows.of([0, 0], [7, 8], 1.0), 8).dst.tolist()
    [8]
    """
    if gpus_per_server < 1:
        raise ConfigError(f"gpus_per_server must be >= 1, got {gpus_per_server}")
    keep = (flows.src // gpus_per_server) != (flows.dst // gpus_per_server)
    if keep.all():
        return flows
    return flows.select(keep)


def nic_load_bytes(flows: Flows) -> tuple[IntArray, FloatArray, IntArray, FloatArray]:
    """Bytes sent and received per GPU NIC: ``(senders, sent, receivers, received)``.

    Examples
    --------
    >>> s, sent, r, recv = nic_load_bytes(Flows.of([0, 0, 1], [1, 2, 2], 3.0))
    >>> s.tolist(), sent.tolist(), r.tolist(), recv.tolist()
    ([0, 1], [6.0, 3.0], [1, 2], [3.0, 6.0])
    """
    vol = flows.bytes * flows.weight
    s, si = np.unique(flows.src, return_inverse=True)
    r, ri = np.unique(flows.dst, return_inverse=True)
    return s, np.bincount(si, vol, s.size), r, np.bincount(ri, vol, r.size)


def ideal_round_s(flows: Flows, port_gbps: float = REFERENCE_PORT_GBPS) -> float:
    """Time of a round on an ideal (non-blocking) network: its most loaded NIC drains last.

    Every NIC sends and receives at ``port_gbps``; concurrent flows of one NIC share it, so the
    round lasts ``max(bytes sent or received by one NIC) * 8 / port speed``. Rows are GPU-level
    (``weight`` identical flows between the same two GPUs load that NIC ``weight`` times).

    Examples
    --------
    >>> ideal_round_s(Flows.of([0, 0], [1, 2], 1e9), port_gbps=8.0)
    2.0
    """
    if len(flows) == 0:
        return 0.0
    vol = flows.bytes * flows.weight
    peak = max(np.bincount(flows.src, vol).max(), np.bincount(flows.dst, vol).max())
    return float(peak * 8.0 / (port_gbps * 1e9))


def pair_totals(flows: Flows) -> tuple[IntArray, IntArray, FloatArray]:
    """Total bytes per ``(src, dst)`` pair, sorted by pair.

    Examples
    --------
    >>> s, d, b = pair_totals(Flows.of([1, 0, 1], [0, 1, 0], [2.0, 1.0, 3.0]))
    >>> s.tolist(), d.tolist(), b.tolist()
    ([0, 1], [1, 0], [1.0, 5.0])
    """
    if len(flows) == 0:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0)
    pairs = np.stack([flows.src, flows.dst], axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    tot = np.bincount(inv.reshape(-1), flows.bytes * flows.weight, uniq.shape[0])
    return uniq[:, 0].copy(), uniq[:, 1].copy(), tot
