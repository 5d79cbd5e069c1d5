"""Merge-decomposition min-cost flow (MDMCF): minimal rewiring on Cross Wiring.

Cross Wiring §5 and Appendix D (LumosCore Appendix A.1). After the symmetric decomposition
``C = A + A.T`` the forward ("even") sub-topology must realize ``A`` over the channels of the
group (channel ``c`` = the OCS pair ``(2c, 2c+1)``), while changing as few per-OCS pod-pair
circuit counts as possible (objective (26)); the backward sub-topology is its mirror.

Two channels (Appendix D.2, Theorem 5.1)
----------------------------------------
With ``x`` the units of ``A_ij`` put in the first channel, the second gets ``A_ij - x``, and the
rewiring cost ``f_ij(x) = (u1_ij - x)^+ + (u2_ij - A_ij + x)^+`` (circuits of the current
configuration that disappear) is convex piecewise linear with slopes -1, 0, +1 between the
break points ``clip(u1_ij)`` and ``clip(A_ij - u2_ij)``. One arc per linear piece from row node
``i`` to column node ``j`` models it exactly; row ``i`` must send between
``R_i - G2_i`` and ``min(G1_i, R_i)`` units (the ports of pod ``i`` in each channel), column
``j`` likewise. Minimising the removed circuits minimises ``sum |x - u|`` because the total of
``x`` is fixed. The network is a bounded circulation (source, sink, lower bounds moved into
node supplies) solved exactly by OR-Tools' ``SimpleMinCostFlow``: the optimum of the ILP
(21)-(26) for two channels.

More channels (Algorithm 1, Appendix D.3)
-----------------------------------------
Split the channels into two halves, merge each half into one big channel (summed port counts
and summed current circuits), solve the two-channel problem, and recurse on each half with its
share of ``A``. The fractional point ``x = A |K1| / |K|`` is feasible at every split (D.3), so by
integrality an integral split always exists -- provided every pod has the same number of
ports in every channel, as Cross Wiring wires them (with uneven channels a split can be
infeasible, reported as :class:`~lumoscore.errors.InfeasibleError`). Every sub-problem of one
recursion depth -- of all OCS groups at once -- is one batched OR-Tools solve over disjoint
node ranges, so a whole cluster costs ``ceil(log2 n_channels)`` C++ calls. Optimal for two
channels (4 OCSes per group); a heuristic beyond (the splits are optimal only for the merged
problem). :func:`refine_pairs` then re-splits random disjoint channel pairs exactly (a local
search that never increases the rewiring).

Examples
--------
>>> import numpy as np
>>> A = np.array([[[0, 2], [1, 0]]])                # one group, two pods
>>> cap = np.ones((1, 2, 2, 2), dtype=np.int64)     # 2 channels, 1 port per side and pod
>>> u = np.zeros((1, 2, 2, 2), dtype=np.int64)
>>> u[0, 1, 0, 1] = 1                               # pod 0 -> pod 1 now in channel 1
>>> x = merge_decompose(A, u, cap)
>>> x[0, :, 0, 1].tolist(), int(x[0, :, 1, 0].sum())
([1, 1], 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.graph.python import min_cost_flow

from lumoscore.errors import InfeasibleError, SolverError
from lumoscore.toe.kernels import split_children, split_level, two_channel_network

__all__ = ["merge_decompose", "refine_pairs", "split_entries", "two_channel_split"]

IntArray = NDArray[np.int64]


def two_channel_split(
    sub: IntArray,
    i: IntArray,
    j: IntArray,
    a: IntArray,
    u1: IntArray,
    u2: IntArray,
    row_bounds: tuple[IntArray, IntArray],
    col_bounds: tuple[IntArray, IntArray],
) -> IntArray:
    """Solve a batch of two-channel splits (Appendix D.2) in one min-cost-flow call.

    Parameters
    ----------
    sub, i, j, a : ndarray
        One row per non-zero entry ``A_ij = a`` of sub-problem ``sub`` (``0 <= sub < m``).
    u1, u2 : ndarray
        Current circuits of the entry in the first and in the second channel.
    row_bounds, col_bounds : tuple of ndarray
        ``(lo, hi)`` arrays of shape ``(m, P)``: bounds on the units row ``i`` (column ``j``)
        of sub-problem ``sub`` puts in the first channel.

    Returns
    -------
    ndarray
        Units of each entry in the first channel, minimising the current circuits lost.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.zeros(2, dtype=np.int64)
    >>> lo, hi = np.zeros((1, 2), dtype=np.int64), np.ones((1, 2), dtype=np.int64)
    >>> two_channel_split(z, np.array([0, 1]), np.array([1, 0]), np.array([1, 1]),
    ...                   np.array([0, 1]), np.array([1, 0]), (lo, hi), (lo, hi)).tolist()
    [0, 1]
    """
    row_lo, row_hi = row_bounds
    col_lo, col_hi = col_bounds
    if (row_lo > row_hi).any() or (col_lo > col_hi).any():
        raise InfeasibleError("two-channel split: a row or column needs more ports than it has")
    n = len(a)
    t, h, cp, cs, supplies = two_channel_network(
        *(np.ascontiguousarray(x, dtype=np.int64) for x in (sub, i, j, a, u1, u2)),
        *(np.ascontiguousarray(x, dtype=np.int64) for x in (row_lo, row_hi, col_lo, col_hi)),
    )
    mcf = min_cost_flow.SimpleMinCostFlow()
    arcs = mcf.add_arcs_with_capacity_and_unit_cost(t.astype(np.int32), h.astype(np.int32), cp, cs)
    mcf.set_nodes_supplies(np.arange(supplies.size, dtype=np.int32), supplies)
    status = mcf.solve()
    if status == mcf.INFEASIBLE:
        raise InfeasibleError("two-channel split: the flow network is infeasible")
    if status != mcf.OPTIMAL:
        raise SolverError(f"two-channel split: OR-Tools min-cost flow returned status {status}")
    flow = mcf.flows(arcs[: 3 * n]).reshape(3, n)
    return flow.sum(axis=0).astype(np.int64)


def merge_decompose(
    A: Any, u: Any, cap: Any, *, n_channels: Any = None, split: str = "halves"
) -> IntArray:
    """Split every group's forward sub-topology ``A`` over its channels with minimal rewiring.

    Parameters
    ----------
    A : array_like
        ``(H, P, P)`` non-negative integers: links from forward ports of pod ``i`` to backward
        ports of pod ``j`` in group ``h``.
    u : array_like
        ``(H, n_chan, P, P)`` current forward circuits per channel (the papers' ``u_ijk``).
    cap : array_like
        ``(H, n_chan, 2, P)`` forward (``[:, :, 0]``) and backward (``[:, :, 1]``) ports of
        every pod in every channel (the papers' ``G_{i,k}``).
    n_channels : array_like, optional
        Real channels of each group (the rest is padding); default all.
    split : {"halves", "peel"}
        Bipartition of Algorithm 1 line 6: two halves (depth ``ceil(log2 n)``, the default) or
        one channel against the rest (depth ``n - 1``).

    Returns
    -------
    ndarray
        ``x`` of shape ``(H, n_chan, P, P)`` with ``x.sum(axis=1) == A`` and every channel's
        row sums within the forward ports and column sums within the backward ports.

    Raises
    ------
    lumoscore.errors.InfeasibleError
        ``A`` needs more ports than the channels have (naming the group and pod).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[[0, 1, 1], [1, 0, 1], [1, 1, 0]]])
    >>> cap = np.ones((1, 2, 2, 3), dtype=np.int64)
    >>> x = merge_decompose(A, np.zeros((1, 2, 3, 3), dtype=np.int64), cap)
    >>> bool((x.sum(axis=1) == A).all()), int(x.sum(axis=3).max()), int(x.sum(axis=2).max())
    (True, 1, 1)
    """
    A = np.asarray(A, dtype=np.int64)
    u = np.asarray(u, dtype=np.int64)
    cap = np.asarray(cap, dtype=np.int64)
    H, n_chan, _, P = cap.shape
    nch = np.full(H, n_chan) if n_channels is None else np.asarray(n_channels, dtype=np.int64)
    e_h, e_i, e_j = np.nonzero(A)
    x_h, x_c, x_i, x_j, x_v = split_entries(
        e_h, e_i, e_j, A[e_h, e_i, e_j], u[e_h, :, e_i, e_j], cap, nch, split=split
    )
    x = np.zeros((H, n_chan, P, P), dtype=np.int64)
    x[x_h, x_c, x_i, x_j] = x_v
    return x


def split_entries(
    e_h: IntArray,
    e_i: IntArray,
    e_j: IntArray,
    e_a: IntArray,
    e_u: IntArray,
    cap: IntArray,
    n_channels: IntArray,
    *,
    split: str = "halves",
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """:func:`merge_decompose` on the non-zero entries of ``A`` (the sparse core).

    Parameters
    ----------
    e_h, e_i, e_j, e_a : ndarray
        The entries ``A[e_h, e_i, e_j] = e_a > 0`` in row-major order (as ``np.nonzero``).
    e_u : ndarray
        ``(len(e_a), n_chan)`` current forward circuits of every entry per channel.
    cap, n_channels, split
        As :func:`merge_decompose` (``n_channels`` an array).

    Returns
    -------
    tuple of ndarray
        ``(h, channel, i, j, value)`` of every non-zero ``x[h, channel, i, j]``, each once.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.array([0])
    >>> cap = np.ones((1, 2, 2, 2), dtype=np.int64)
    >>> [v.tolist() for v in split_entries(one, one, one + 1, one + 2, np.zeros((1, 2), int),
    ...                                    cap, np.array([2]))]
    [[0, 0], [0, 1], [0, 0], [1, 1], [1, 1]]
    """
    H, n_chan, _, P = cap.shape
    nch = np.asarray(n_channels, dtype=np.int64)
    e_h, e_i, e_j, e_a = (np.ascontiguousarray(v, dtype=np.int64) for v in (e_h, e_i, e_j, e_a))
    tot = cap.sum(axis=1)  # (H, 2, P)
    for label, side, pod in (("sends", 0, e_i), ("receives", 1, e_j)):
        sums = np.bincount(e_h * P + pod, weights=e_a, minlength=H * P).reshape(H, P)
        over = sums > tot[:, side]
        if over.any():
            h, i = (int(v) for v in np.argwhere(over)[0])
            raise InfeasibleError(
                f"group {h}: pod {i} {label} {int(sums[h, i])} links in the forward sub-topology "
                f"but has only {tot[h, side, i]} ports on that side"
            )
    c_cum = np.zeros((H, n_chan + 1, 2, P), dtype=np.int64)
    np.cumsum(cap, axis=1, out=c_cum[:, 1:])
    out: list[tuple[IntArray, ...]] = []

    sub_h = np.arange(H, dtype=np.int64)
    sub_lo = np.zeros(H, dtype=np.int64)
    sub_hi = nch.copy()
    e_sub = e_h
    # current circuits of every entry of A, cumulated over the channels: a sub-problem's
    # share of an entry is a difference of two of these (entries keep their origin ``e_o``)
    u_cum = np.zeros((len(e_a), n_chan + 1), dtype=np.int64)
    np.cumsum(e_u, axis=1, out=u_cum[:, 1:])
    e_o = np.arange(len(e_a), dtype=np.int64)
    while len(e_sub):
        # one depth: leaves (one channel left) out, the rest split in two by one flow
        leaf, entries, subs, flow = split_level(
            e_sub, e_i, e_j, e_a, e_o, sub_h, sub_lo, sub_hi, c_cum, u_cum, split == "halves"
        )
        if len(leaf[0]):
            out.append(leaf)
        e_sub, e_i, e_j, e_a, e_o = entries
        if not len(e_sub):
            break
        u1, u2, row_lo, row_hi, col_lo, col_hi = flow
        x1 = two_channel_split(e_sub, e_i, e_j, e_a, u1, u2, (row_lo, row_hi), (col_lo, col_hi))
        (e_sub, e_i, e_j, e_a, e_o), (sub_h, sub_lo, sub_hi) = split_children(
            e_sub, e_i, e_j, e_a, e_o, x1, *subs
        )
    if not out:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z, z
    return tuple(np.concatenate(col) for col in zip(*out, strict=True))  # type: ignore[return-value]


def refine_pairs(
    x: Any, u: Any, cap: Any, *, rounds: int = 8, patience: int = 2, rng: Any = None
) -> IntArray:
    """Improve a split by exact two-channel re-splits of disjoint channel pairs (local search).

    Each round pairs the channels of every group (randomly), and for every pair re-solves the
    two-channel problem of Appendix D.2 on the links the pair carries -- exactly, so no round
    makes the rewiring worse. All pairs of all groups are one batched flow per round. Stops
    after ``rounds`` rounds or after ``patience`` rounds in a row that improve nothing.

    Examples
    --------
    >>> import numpy as np
    >>> u = np.zeros((1, 2, 2, 2), dtype=np.int64); u[0, 0, 0, 1] = 1
    >>> x = np.zeros_like(u); x[0, 1, 0, 1] = 1            # same link, other channel
    >>> refine_pairs(x, u, np.ones((1, 2, 2, 2), dtype=np.int64))[0, :, 0, 1].tolist()
    [1, 0]
    """
    x = np.array(x, dtype=np.int64)
    u = np.asarray(u, dtype=np.int64)
    cap = np.asarray(cap, dtype=np.int64)
    H, n_chan, _, P = cap.shape
    if n_chan < 2:
        return x
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    best = int(np.abs(x - u).sum())
    stale = 0
    for _ in range(rounds):
        perm = g.permutation(n_chan)
        half = n_chan // 2
        c1, c2 = perm[:half], perm[half : 2 * half]
        Y = x[:, c1] + x[:, c2]  # (H, half, P, P)
        e_h, e_p, e_i, e_j = np.nonzero(Y)
        sub = e_h * half + e_p
        a = Y[e_h, e_p, e_i, e_j]
        m = H * half
        R = np.bincount(sub * P + e_i, weights=a, minlength=m * P).reshape(m, P).astype(np.int64)
        S = np.bincount(sub * P + e_j, weights=a, minlength=m * P).reshape(m, P).astype(np.int64)
        cap1 = cap[:, c1].reshape(m, 2, P)
        cap2 = cap[:, c2].reshape(m, 2, P)
        x1 = two_channel_split(
            sub,
            e_i,
            e_j,
            a,
            u[e_h, c1[e_p], e_i, e_j],
            u[e_h, c2[e_p], e_i, e_j],
            (np.maximum(R - cap2[:, 0], 0), np.minimum(cap1[:, 0], R)),
            (np.maximum(S - cap2[:, 1], 0), np.minimum(cap1[:, 1], S)),
        )
        new = x.copy()
        new[:, c1] = 0
        new[:, c2] = 0
        new[e_h, c1[e_p], e_i, e_j] = x1
        new[e_h, c2[e_p], e_i, e_j] = a - x1
        cost = int(np.abs(new - u).sum())
        if cost > best:  # cannot happen: every pair's re-split is optimal
            raise SolverError("refine_pairs: a re-split increased the rewiring")
        x = new
        stale = stale + 1 if cost == best else 0
        if stale >= patience:
            break
        best = cost
    return x
