"""Collective communication algorithms as rounds of flows (one round per algorithm step).

Every collective takes ``ranks``: the GPU ids in rank order, either one group of shape ``(N,)``
or ``B`` independent groups of shape ``(B, N)`` that run the collective in lockstep (their flows
of one step share a round). ``size_bytes`` is the message size ``S`` of ONE group (for an
all-reduce: the buffer every rank reduces; for an all-to-all: the buffer every rank scatters,
``S / N`` to each peer). Steps are built with NumPy index arithmetic; flows of a GPU to itself
are never emitted. Each collective has a ``*_bytes`` function giving its closed-form total.

=========================  ====================================  ==============================
collective                 steps (rounds)                        total bytes of one group
=========================  ====================================  ==============================
ring all-reduce            ``2(N-1)`` of ``S/N`` (i -> i+1)      ``2(N-1) S``
hierarchical ring          ``(m-1) + 2(G-1) + (m-1)``            ``2(N-1) S``  (``N = G m``)
halving-doubling           ``2 log2 M`` (+2 fold steps)          ``2(M-1) S + 2(N-M) S``
double binary tree         ``2 D`` (tree depth ``D``) of ``S/2``   ``2(N-1) S``
pairwise all-to-all        ``N-1`` of ``S/N`` (i -> i+t)         ``(N-1) S``
pod-aware all-to-all       ``N`` of ``S/N`` (Eq. 44)             ``(N-1) S``
pipeline send/recv         ``pp-1`` per direction, ``S`` each    ``(pp-1) M S`` per direction
parameter server           push, pull (``S/K`` per pair)         ``2 (W K - |W & K|) S / K``
=========================  ====================================  ==============================

(``M`` = largest power of two ``<= N``; ``m`` GPUs per group, ``G`` groups.)

Examples
--------
>>> s = ring_allreduce([0, 8, 16, 24], 4e6)
>>> len(s), s[0].flows.src.tolist(), s[0].flows.dst.tolist(), float(s[0].flows.bytes[0])
(6, [0, 8, 16, 24], [8, 16, 24, 0], 1000000.0)
>>> s.total_bytes == ring_allreduce_bytes(4, 4e6)
True
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.npsets import unique
from lumoscore.traffic.flows import Flows, Round, Schedule

__all__ = [
    "binary_tree_parents",
    "double_binary_tree",
    "double_binary_tree_bytes",
    "halving_doubling",
    "halving_doubling_bytes",
    "hierarchical_ring",
    "hierarchical_ring_bytes",
    "pairwise_all_to_all",
    "pairwise_all_to_all_bytes",
    "parameter_server",
    "parameter_server_bytes",
    "pipeline",
    "pipeline_bytes",
    "pod_all_to_all",
    "pod_all_to_all_bytes",
    "ring_allreduce",
    "ring_allreduce_bytes",
]

IntArray = NDArray[np.int64]


def _groups(ranks: ArrayLike) -> IntArray:
    arr = np.asarray(ranks)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"ranks must be integer GPU ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ConfigError(f"ranks must have shape (N,) or (groups, N), got {arr.shape}")
    return arr


def _size(size_bytes: float) -> float:
    s = float(size_bytes)
    if not (np.isfinite(s) and s >= 0):
        raise ConfigError(f"size_bytes must be finite and >= 0, got {size_bytes!r}")
    return s


def _step(src: IntArray, dst: IntArray, size: float) -> Flows:
    src = src.reshape(-1)
    dst = dst.reshape(-1)
    keep = src != dst
    if not keep.all():
        src, dst = src[keep], dst[keep]
    n = src.shape[0]
    return Flows(src, dst, np.full(n, size), np.ones(n, np.int64))


def _schedule(rounds: list[Round]) -> Schedule:
    return Schedule(tuple(rounds))


# ---- ring ---------------------------------------------------------------------------------
def ring_allreduce(ranks: ArrayLike, size_bytes: float, *, reverse: bool = False) -> Schedule:
    """Ring all-reduce: ``N-1`` reduce-scatter and ``N-1`` all-gather steps of ``S/N``.

    In every step rank ``i`` sends one chunk to rank ``i+1`` (``i-1`` when ``reverse``); the
    step pattern is the same in all ``2(N-1)`` steps (vClos §5.3, Patarasuk & Yuan).

    Examples
    --------
    >>> s = ring_allreduce([[0, 1, 2], [3, 4, 5]], 3.0, reverse=True)
    >>> len(s), s[0].flows.dst.tolist(), s[0].tag
    (4, [2, 0, 1, 5, 3, 4], 'ring-reduce-scatter')
    """
    g = _groups(ranks)
    S = _size(size_bytes)
    n = g.shape[1]
    if n < 2:
        return Schedule()
    nxt = np.roll(g, 1 if reverse else -1, axis=1)
    step = _step(g, nxt, S / n)
    return _schedule(
        [Round(step, tag="ring-reduce-scatter")] * (n - 1)
        + [Round(step, tag="ring-all-gather")] * (n - 1)
    )


def ring_allreduce_bytes(n: int, size_bytes: float, groups: int = 1) -> float:
    """Closed form of :func:`ring_allreduce`: ``2 (N-1) S`` per group.

    Examples
    --------
    >>> ring_allreduce_bytes(4, 8.0)
    48.0
    """
    return float(groups * 2 * max(n - 1, 0) * size_bytes)


# ---- hierarchical ring --------------------------------------------------------------------
def hierarchical_ring(
    ranks: ArrayLike,
    size_bytes: float,
    group_size: int,
    *,
    alternate: bool = False,
    variant: Literal["rails", "leader"] = "rails",
) -> Schedule:
    """Hierarchical ring all-reduce over groups of ``m = group_size`` consecutive ranks.

    ``variant="rails"`` (NCCL-style, LumosCore A.5.2): (1) reduce-scatter inside each group
    (ring, ``m-1`` steps of ``S/m``); (2) ``m`` parallel inter-group ring all-reduces, one per
    local index ``j`` ("rail"), each over the ``G`` ranks with local index ``j`` on ``S/m``
    (``2(G-1)`` steps of ``S/(mG)``); (3) all-gather inside each group (``m-1`` steps of ``S/m``).
    With ``alternate`` the rails of odd local index run their inter-group ring in the opposite
    direction (the Eq. 43 arrangement: half the rails clockwise, half counter-clockwise).

    ``variant="leader"`` (Horovod-style): every non-leader sends ``S`` to local rank 0 in one step,
    the leaders run a ring all-reduce on ``S`` (``2(G-1)`` steps of ``S/G``), then every leader
    sends ``S`` to its ``m-1`` group members in one step.

    Both move ``2(N-1) S`` bytes (see :func:`hierarchical_ring_bytes`).

    Examples
    --------
    >>> s = hierarchical_ring(list(range(8)), 8.0, group_size=4)
    >>> len(s), [r.tag for r in s][2:6]
    (8, ['intra-reduce-scatter', 'inter-ring', 'inter-ring', 'intra-all-gather'])
    >>> s[3].flows.src.tolist(), s[3].flows.dst.tolist()
    ([0, 1, 2, 3, 4, 5, 6, 7], [4, 5, 6, 7, 0, 1, 2, 3])
    """
    g = _groups(ranks)
    S = _size(size_bytes)
    b, n = g.shape
    m = int(group_size)
    if m < 1 or n % m:
        raise PreconditionError(
            f"group_size must be >= 1 and divide the {n} ranks, got group_size={group_size}"
        )
    if variant not in ("rails", "leader"):
        raise ConfigError(f"variant must be 'rails' or 'leader', got {variant!r}")
    G = n // m
    grid = g.reshape(b, G, m)
    rounds: list[Round] = []
    if variant == "rails":
        if m > 1:
            intra = _step(grid, np.roll(grid, -1, axis=2), S / m)
            rounds += [Round(intra, tag="intra-reduce-scatter")] * (m - 1)
        if G > 1:
            fwd = np.roll(grid, -1, axis=1)
            if alternate:
                bwd = np.roll(grid, 1, axis=1)
                odd = (np.arange(m) % 2 == 1)[None, None, :]
                fwd = np.where(odd, bwd, fwd)
            inter = _step(grid, fwd, S / (m * G))
            rounds += [Round(inter, tag="inter-ring")] * (2 * (G - 1))
        if m > 1:
            rounds += [Round(intra, tag="intra-all-gather")] * (m - 1)
    else:
        lead = grid[:, :, :1]
        if m > 1:
            members = grid[:, :, 1:]
            rounds.append(
                Round(_step(members, np.broadcast_to(lead, members.shape), S), tag="intra-reduce")
            )
        if G > 1:
            lr = lead[:, :, 0]
            ring = _step(lr, np.roll(lr, -1, axis=1), S / G)
            rounds += [Round(ring, tag="inter-ring")] * (2 * (G - 1))
        if m > 1:
            rounds.append(
                Round(_step(np.broadcast_to(lead, members.shape), members, S), tag="intra-bcast")
            )
    return _schedule(rounds)


def hierarchical_ring_bytes(n: int, size_bytes: float, group_size: int, groups: int = 1) -> float:
    """Closed form of :func:`hierarchical_ring` (both variants).

    ``G (m-1) S`` (intra) ``+ 2 (G-1) S`` (inter) ``+ G (m-1) S`` (intra) ``= 2 (N-1) S``.

    Examples
    --------
    >>> hierarchical_ring_bytes(8, 8.0, 4)
    112.0
    """
    m = group_size
    G = n // m
    return float(groups * (2 * G * (m - 1) + 2 * max(G - 1, 0)) * size_bytes)


# ---- recursive halving-doubling -------------------------------------------------------------
def halving_doubling(ranks: ArrayLike, size_bytes: float) -> Schedule:
    """Recursive halving-doubling all-reduce (Rabenseifner; vClos §5.3).

    With ``N = M`` a power of two: reduce-scatter in ``log2 M`` steps, step ``k`` exchanging
    ``S / 2^(k+1)`` with the partner at distance ``2^k`` (``i XOR 2^k``); then all-gather in the
    mirrored ``log2 M`` steps (distance ``2^(L-1-k)``, ``S / 2^(L-k)``).

    When ``N`` is not a power of two, ``M = 2^floor(log2 N)`` and ``R = N - M``: the fold of
    vClos §5.3 -- before the reduce-scatter rank ``M + i`` (``i < R``) sends its whole buffer
    ``S`` to rank ``i`` (one extra step), the first ``M`` ranks run halving-doubling, and after
    the all-gather rank ``i`` sends the result ``S`` back to rank ``M + i`` (one extra step).

    Examples
    --------
    >>> s = halving_doubling([0, 1, 2, 3], 8.0)
    >>> [float(r.flows.bytes[0]) for r in s], s[1].flows.dst.tolist()
    ([4.0, 2.0, 2.0, 4.0], [2, 3, 0, 1])
    >>> len(halving_doubling(list(range(6)), 8.0))
    6
    """
    g = _groups(ranks)
    S = _size(size_bytes)
    n = g.shape[1]
    if n < 2:
        return Schedule()
    L = n.bit_length() - 1
    M = 1 << L
    R = n - M
    core = g[:, :M]
    pos = np.arange(M)
    rounds: list[Round] = []
    if R:
        rounds.append(Round(_step(g[:, M:], g[:, :R], S), tag="hd-fold-in"))
    for k in range(L):
        rounds.append(Round(_step(core, core[:, pos ^ (1 << k)], S / (1 << (k + 1))), tag="hd-rs"))
    for k in range(L):
        d = L - 1 - k
        rounds.append(Round(_step(core, core[:, pos ^ (1 << d)], S / (1 << (d + 1))), tag="hd-ag"))
    if R:
        rounds.append(Round(_step(g[:, :R], g[:, M:], S), tag="hd-fold-out"))
    return _schedule(rounds)


def halving_doubling_bytes(n: int, size_bytes: float, groups: int = 1) -> float:
    """Closed form of :func:`halving_doubling`: ``2 (M-1) S + 2 (N-M) S`` per group.

    Examples
    --------
    >>> halving_doubling_bytes(4, 8.0), halving_doubling_bytes(6, 8.0)
    (48.0, 80.0)
    """
    if n < 2:
        return 0.0
    M = 1 << (n.bit_length() - 1)
    return float(groups * (2 * (M - 1) + 2 * (n - M)) * size_bytes)


# ---- double binary tree --------------------------------------------------------------------
def binary_tree_parents(n: int, shift: int = 0) -> IntArray:
    """Parent position of each of ``n`` ranks in a balanced in-order binary tree (root: -1).

    The tree over positions ``0..n-1`` takes the middle position as the root and recurses on
    both halves, so the leaves are (nearly) every other position. With ``shift`` the tree is
    built over the positions relabelled ``(p + shift) mod n``: a shift of 1 makes the leaves of
    one tree the inner nodes of the other (NCCL's double binary tree).

    Examples
    --------
    >>> binary_tree_parents(7).tolist()
    [1, 3, 1, -1, 5, 3, 5]
    >>> binary_tree_parents(7, shift=1).tolist()  # leaves 1, 3, 5, 6 (first tree: 0, 2, 4, 6)
    [2, 0, -1, 4, 2, 4, 0]
    """
    parent = np.full(n, -1, np.int64)
    stack = [(0, n - 1, -1)]
    while stack:
        lo, hi, up = stack.pop()
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        parent[mid] = up
        stack.append((lo, mid - 1, mid))
        stack.append((mid + 1, hi, mid))
    if shift:  # relabel: node p of the tree is rank (p - shift) mod n
        rank = (np.arange(n) - shift) % n
        out = np.full(n, -1, np.int64)
        out[rank] = np.where(parent >= 0, rank[np.maximum(parent, 0)], -1)
        return out
    return parent


def _depths(parent: IntArray) -> IntArray:
    depth = np.zeros(parent.size, np.int64)
    for i in range(parent.size):
        d, p = 0, parent[i]
        while p >= 0:
            d, p = d + 1, parent[p]
        depth[i] = d
    return depth


def double_binary_tree(ranks: ArrayLike, size_bytes: float) -> Schedule:
    """Double-binary-tree all-reduce (Sanders et al.; NCCL; vClos §5.3): two binary trees over
    the ranks (:func:`binary_tree_parents`, the second shifted by one), each reducing half of
    the buffer up to its root and broadcasting it back down. Round ``t`` of the reduce sends
    ``S/2`` from every node of depth ``D - t`` of both trees to its parent; the broadcast
    mirrors it (``2 D`` rounds, ``D`` the deeper tree's depth). Not a leaf-wise permutation:
    a parent receives from two children at once.

    Examples
    --------
    >>> s = double_binary_tree([0, 1, 2, 3, 4, 5, 6], 8.0)
    >>> len(s), float(s[0].flows.bytes[0]), s[-1].tag
    (4, 4.0, 'dbt-broadcast')
    >>> s.total_bytes == double_binary_tree_bytes(7, 8.0)
    True
    """
    g = _groups(ranks)
    S = _size(size_bytes)
    n = g.shape[1]
    if n < 2:
        return Schedule()
    trees = [binary_tree_parents(n), binary_tree_parents(n, shift=1)]
    depths = [_depths(p) for p in trees]
    D = int(max(d.max() for d in depths))
    up: list[Round] = []
    down: list[Round] = []
    for level in range(D, 0, -1):
        kids = [np.flatnonzero(d == level) for d in depths]
        src = np.concatenate([g[:, k] for k in kids], axis=1)
        dst = np.concatenate([g[:, p[k]] for p, k in zip(trees, kids, strict=True)], axis=1)
        up.append(Round(_step(src, dst, S / 2), tag="dbt-reduce"))
        down.append(Round(_step(dst, src, S / 2), tag="dbt-broadcast"))
    return _schedule(up + down[::-1])


def double_binary_tree_bytes(n: int, size_bytes: float, groups: int = 1) -> float:
    """Closed form of :func:`double_binary_tree`: every tree edge carries ``S/2`` up and
    ``S/2`` down in each of the two trees, ``2 (N-1) S`` per group.

    Examples
    --------
    >>> double_binary_tree_bytes(7, 8.0)
    96.0
    """
    return float(groups * 2 * max(n - 1, 0) * size_bytes)


# ---- all-to-all ---------------------------------------------------------------------------
def pairwise_all_to_all(ranks: ArrayLike, size_bytes: float) -> Schedule:
    """Pairwise-exchange all-to-all: in step ``t = 1..N-1`` rank ``i`` sends ``S/N`` to ``i+t``.

    Examples
    --------
    >>> s = pairwise_all_to_all([0, 1, 2], 3.0)
    >>> len(s), s[1].flows.dst.tolist()
    (2, [2, 0, 1])
    """
    g = _groups(ranks)
    S = _size(size_bytes)
    n = g.shape[1]
    return _schedule(
        [Round(_step(g, np.roll(g, -t, axis=1), S / n), tag="all-to-all") for t in range(1, n)]
    )


def pairwise_all_to_all_bytes(n: int, size_bytes: float, groups: int = 1) -> float:
    """Closed form of :func:`pairwise_all_to_all` and :func:`pod_all_to_all`: ``(N-1) S``.

    Examples
    --------
    >>> pairwise_all_to_all_bytes(4, 8.0)
    24.0
    """
    return float(groups * max(n - 1, 0) * size_bytes)


def pod_all_to_all(ranks: ArrayLike, size_bytes: float, per_pod: int) -> Schedule:
    """Pod-aware all-to-all of LumosCore A.7 (Eq. 44).

    Ranks are pod-major: rank ``p*n + j`` is GPU ``j`` of pod ``p`` (``n = per_pod`` GPUs in
    each of ``P`` pods). In phase ``t = 1..nP`` rank ``p*n + j`` sends ``S/(nP)`` to rank
    ``(p (n+1) + n j + t - 1) mod nP``. Over the ``nP`` phases every rank meets every rank once,
    itself included (that phase it sends nothing), so there are ``nP`` rounds and ``(nP-1) S``
    bytes. When ``n <= P`` no two GPUs of one pod send to the same pod in one phase.

    Examples
    --------
    >>> s = pod_all_to_all(list(range(6)), 6.0, per_pod=2)   # 3 pods of 2 GPUs
    >>> len(s), s[0].flows.src.tolist(), s[0].flows.dst.tolist()   # rank 0 meets itself
    (6, [1, 2, 3, 4, 5], [2, 3, 5, 0, 2])
    """
    g = _groups(ranks)
    S = _size(size_bytes)
    N = g.shape[1]
    n = int(per_pod)
    if n < 1 or N % n:
        raise PreconditionError(f"per_pod must be >= 1 and divide the {N} ranks, got {per_pod}")
    pos = np.arange(N)
    p, j = pos // n, pos % n
    base = p * (n + 1) + n * j
    rounds = []
    for t in range(1, N + 1):
        dst = (base + t - 1) % N
        rounds.append(Round(_step(g, g[:, dst], S / N), tag="pod-all-to-all"))
    return _schedule(rounds)


def pod_all_to_all_bytes(n: int, size_bytes: float, groups: int = 1) -> float:
    """Closed form of :func:`pod_all_to_all`: ``(N-1) S`` per group.

    Examples
    --------
    >>> pod_all_to_all_bytes(6, 6.0)
    30.0
    """
    return pairwise_all_to_all_bytes(n, size_bytes, groups)


# ---- pipeline -----------------------------------------------------------------------------
def pipeline(
    stages: ArrayLike,
    size_bytes: float,
    direction: Literal["forward", "backward", "both"] = "both",
) -> Schedule:
    """Pipeline send/recv between consecutive stages.

    ``stages`` has shape ``(pp, M)``: row ``s`` are the ``M`` GPUs of stage ``s`` (position ``k``
    of stage ``s`` talks to position ``k`` of stages ``s±1``). Forward: ``pp-1`` rounds, round
    ``s`` sends ``S`` from stage ``s`` to ``s+1``. Backward: ``pp-1`` rounds from the last stage
    down, stage ``s+1`` to ``s``. ``"both"`` is forward then backward.

    Examples
    --------
    >>> s = pipeline([[0, 1], [8, 9], [16, 17]], 5.0)
    >>> len(s), s[0].flows.dst.tolist(), s[2].flows.src.tolist()
    (4, [8, 9], [16, 17])
    """
    g = np.asarray(stages)
    if g.ndim == 1:
        g = g[:, None]
    g = _groups(g)
    S = _size(size_bytes)
    if direction not in ("forward", "backward", "both"):
        raise ConfigError(f"direction must be 'forward', 'backward' or 'both', got {direction!r}")
    pp = g.shape[0]
    rounds: list[Round] = []
    if direction in ("forward", "both"):
        rounds += [Round(_step(g[s], g[s + 1], S), tag="pp-forward") for s in range(pp - 1)]
    if direction in ("backward", "both"):
        rounds += [
            Round(_step(g[s + 1], g[s], S), tag="pp-backward") for s in range(pp - 2, -1, -1)
        ]
    return _schedule(rounds)


def pipeline_bytes(pp: int, per_stage: int, size_bytes: float, directions: int = 2) -> float:
    """Closed form of :func:`pipeline`: ``(pp-1) M S`` per direction.

    Examples
    --------
    >>> pipeline_bytes(3, 2, 5.0)
    40.0
    """
    return float(directions * max(pp - 1, 0) * per_stage * size_bytes)


# ---- parameter server ----------------------------------------------------------------------
def parameter_server(workers: ArrayLike, servers: ArrayLike, size_bytes: float) -> Schedule:
    """Parameter-server synchronisation (push, then pull; TDM paper §II.B).

    The model of ``S`` bytes is sharded evenly over the ``K`` servers: in the push round every
    worker sends ``S/K`` to every server, in the pull round every server sends ``S/K`` back to
    every worker (a worker that is also a server keeps its own shard local).

    Examples
    --------
    >>> s = parameter_server([0, 1, 2], [8], 6.0)
    >>> [r.tag for r in s], s[0].flows.dst.tolist(), s.total_bytes
    (['ps-push', 'ps-pull'], [8, 8, 8], 36.0)
    """
    w = _groups(workers).reshape(-1)
    k = _groups(servers).reshape(-1)
    if k.size == 0:
        raise ConfigError("parameter_server needs at least one server GPU")
    S = _size(size_bytes)
    src = np.repeat(w, k.size)
    dst = np.tile(k, w.size)
    return _schedule(
        [
            Round(_step(src, dst, S / k.size), tag="ps-push"),
            Round(_step(dst, src, S / k.size), tag="ps-pull"),
        ]
    )


def parameter_server_bytes(workers: ArrayLike, servers: ArrayLike, size_bytes: float) -> float:
    """Closed form of :func:`parameter_server`: ``2 (W K - |W & K|) S / K``.

    Examples
    --------
    >>> parameter_server_bytes([0, 1, 2], [8], 6.0), parameter_server_bytes([0, 1], [1], 4.0)
    (36.0, 8.0)
    """
    w = unique(np.asarray(workers).reshape(-1))
    k = unique(np.asarray(servers).reshape(-1))
    both = np.intersect1d(w, k).size
    return float(2 * (w.size * k.size - both) * size_bytes / k.size)
