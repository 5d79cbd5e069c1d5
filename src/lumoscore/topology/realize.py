r"""Realize a logical topology as port-level OCS circuits on a physical wiring.

Polynomial construction (mirror-decomposable: ``cross``, ``dual-link``, ``slim-dual-link``)
-------------------------------------------------------------------------------------------
LumosCore Thm 3.1 / Cross-Wiring Thm 4.1 and Thm 3.3, per OCS group ``h``:

1. ``C_h = A + A^T`` with every row/column sum of ``A`` within floor/ceil of half of
   ``C_h``'s (symmetric decomposition); with the fan-out ``sum_j C_hij <= K`` every row and
   column sum of ``A`` is at most ``K / 2``.
2. ``A = X[0] + ... + X[K/2 - 1]`` with every part's row/column sums within floor/ceil of
   ``1 / (K/2)`` of ``A``'s (integer decomposition), so every ``X[k]`` is a 0/1 partial
   permutation matrix.
3. ``X[k][i, j] = 1`` becomes one bidirectional link between pod ``i`` and pod ``j``:

   * ``cross``: OCS ``2k`` connects Tx ``(i, 2k)`` -> Rx ``(j, 2k+1)``; the mirror OCS
     ``2k+1`` connects Tx ``(j, 2k+1)`` -> Rx ``(i, 2k)`` (Cross-Wiring Eq. 16).
   * ``dual-link``: OCS ``k`` connects Tx ``(i, 2k+1)`` -> Rx ``(j, 2k)`` (sub-topology
     ``G_0``: N of the odd, S of the even OCS port) and Tx ``(j, 2k)`` -> Rx ``(i, 2k+1)``
     (mirror ``G_1``).
   * with circulators (both kinds): OCS ``k`` joins the N half-port of ``(i, 2k)`` to the S
     half-port of ``(j, 2k+1)``; the one mirror setting carries both directions.

   A partial permutation uses every Tx and every Rx at most once, so constraints (1)-(4)
   hold. Identical groups are decomposed once.

Slim Dual-link Uniform Wiring (Cross-Wiring App. C)
---------------------------------------------------
``slim-dual-link`` couples the two lanes (ports ``2t``, ``2t + 1``) of a transceiver to one
remote transceiver, so links come in units of two (:data:`~lumoscore.topology.wiring.GRANULARITY`).
The same three steps run on *transceivers*, with ``B = C // 2`` (coupled pairs per pod pair):

1. ``B_h = A + A^T``; fan-out ``sum_j C_ij <= K`` gives ``sum_j B_ij <= K/2`` and row and
   column sums of ``A`` at most ``K/4`` (``K`` is a multiple of 4).
2. ``A = X[0] + ... + X[K/4 - 1]``, every ``X[s]`` a partial permutation.
3. ``X[s][i, j] = 1`` couples the even transceiver ``2s`` of pod ``i`` (ports ``4s``,
   ``4s+1``) to the odd transceiver ``2s+1`` of pod ``j`` (ports ``4s+2``, ``4s+3``): OCS ``s``
   joins N ``(i, 4s)`` to S ``(j, 4s+3)`` and N ``(j, 4s+2)`` to S ``(i, 4s+1)`` -- two links,
   four circuit rows. Every pod has one even and one odd transceiver per OCS, so a partial
   permutation uses each at most once (Thm 3.3: the even -> odd sub-topology and its mirror).

Rounding rule: an odd ``C_ij`` cannot be realized in full (every coupled realization has even
pod-pair counts), so :func:`realize` realizes :func:`coarse_part` ``= 2 * (C // 2)``, the
largest part of ``C`` at the wiring's granularity: one link short on each odd entry, so the
LTCR is :func:`coarse_ltcr` ``= 1 - #odd entries / sum C`` (over both triangles and all
groups) -- the optimum, which :func:`realize_exact` confirms.

Uniform wiring
--------------
The ToE problem on Uniform Wiring is NP-complete (Cross-Wiring Thm 2.1) and some logical
topologies are not realizable at all. :func:`realize_exact` solves constraints (2)-(4) with
(1) relaxed to "at most ``C_ij`` links" and the number of links maximised, with OR-Tools
CP-SAT under a time limit (any wiring; meant for small instances). Its LTCR is Eq. (5). On a
coupled wiring its variables are transceiver pairs (any two transceivers of different pods on
one OCS), not port pairs.

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec, build_wiring, verify_circuits
>>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=3)
>>> C = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)  # LumosCore Fig. 4
>>> x = realize(C, build_wiring(spec, "cross"))
>>> x.shape, verify_circuits(build_wiring(spec, "cross"), x, C)
((6, 6), [])
>>> r = realize_exact(C, build_wiring(spec, "uniform"), time_limit_s=10)
>>> r.status, r.realized_links, r.ltcr
('optimal', 2, 0.6666666666666667)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from lumoscore.decompose import integer_decomposition_sparse, symmetric_decomposition
from lumoscore.errors import ConfigError, InfeasibleError, SolverError
from lumoscore.npsets import unique
from lumoscore.topology.circuits import as_logical_topology, logical_topology, ltcr_matrix
from lumoscore.topology.wiring import Wiring

__all__ = [
    "ExactRealization",
    "UnrealizableError",
    "check_logical_topology",
    "coarse_ltcr",
    "coarse_part",
    "realize",
    "realize_exact",
]

_MIRRORED = ("cross", "dual-link", "slim-dual-link")

IntArray = NDArray[np.int64]


class UnrealizableError(InfeasibleError):
    """The logical topology breaks symmetry, fan-out or the zero diagonal: no wiring realizes it."""


def check_logical_topology(C: Any, wiring: Wiring, *, fan_out: bool = True) -> IntArray:
    """Validate a logical topology for ``wiring``; return it as ``(H, P, P)`` ``int64``.

    Raises :class:`UnrealizableError` naming the group and pod(s) when ``C`` has a non-zero
    diagonal (a pod linked to itself), is not symmetric (constraint (4), Cross-Wiring
    Eq. 14) or, with ``fan_out``, a pod needs more than ``K = k_spine`` links (Eq. 15).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=2)
    >>> check_logical_topology([[0, 3], [3, 0]], build_wiring(spec))
    Traceback (most recent call last):
    ...
    lumoscore.topology.realize.UnrealizableError: group 0: pod 0 needs 3 links but its spine
    has only k_spine = 2 OCS-facing ports (fan-out)
    """
    Ch = as_logical_topology(C, wiring)
    H, P, K = wiring.groups, wiring.pods, wiring.ports
    diag = np.argwhere(np.diagonal(Ch, axis1=1, axis2=2) != 0)
    if diag.size:
        g, i = diag[0]
        raise UnrealizableError(
            f"group {g}: pod {i} has {Ch[g, i, i]} links to itself; the diagonal of a logical "
            f"topology must be 0"
        )
    asym = np.argwhere(Ch != Ch.transpose(0, 2, 1))
    if asym.size:
        g, i, j = asym[0]
        raise UnrealizableError(
            f"group {g}: C[{i}, {j}] = {Ch[g, i, j]} != C[{j}, {i}] = {Ch[g, j, i]}: links are "
            f"bidirectional, so pods {i} and {j} need a symmetric link count (symmetry)"
        )
    if fan_out:
        rows = Ch.sum(axis=2)
        over = np.argwhere(rows > K)
        if over.size:
            g, i = over[0]
            raise UnrealizableError(
                f"group {g}: pod {i} needs {rows[g, i]} links but its spine has only "
                f"k_spine = {K} OCS-facing ports (fan-out)"
            )
    del H, P
    return Ch


def coarse_part(C: Any, wiring: Wiring) -> IntArray:
    """The largest part of ``C`` the wiring's link granularity allows: ``g * (C // g)`` with
    ``g = wiring.granularity`` (2 for ``slim-dual-link``, else ``C`` itself), ``(H, P, P)``.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
    >>> coarse_part([[0, 3], [3, 0]], build_wiring(spec, "slim", True))[0].tolist()
    [[0, 2], [2, 0]]
    """
    Ch = as_logical_topology(C, wiring)
    g = wiring.granularity
    return g * (Ch // g)


def coarse_ltcr(C: Any, wiring: Wiring) -> float:
    """LTCR (Eq. 5) of :func:`coarse_part` against ``C``: for ``slim-dual-link``
    ``1 - (number of odd entries of C) / sum(C)``, the best any configuration reaches.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=6)
    >>> coarse_ltcr([[0, 3, 1], [3, 0, 0], [1, 0, 0]], build_wiring(spec, "slim", True))
    0.5
    """
    Ch = as_logical_topology(C, wiring)
    return ltcr_matrix(coarse_part(Ch, wiring), Ch)


def _unique_groups(Ch: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct per-group topologies and, for every group, the index of its distinct one.

    Groups are compared by their bytes (``numpy.unique(axis=0)`` is slow on wide rows).
    """
    first: dict[bytes, int] = {}
    inverse = np.array(
        [first.setdefault(np.ascontiguousarray(c).tobytes(), len(first)) for c in Ch],
        dtype=np.int64,
    )
    reps = np.zeros(len(first), dtype=np.int64)
    reps[inverse[::-1]] = np.arange(len(inverse))[::-1]  # first group of each distinct one
    return Ch[reps], inverse


def _circuits_of_parts(
    kind: str, circulators: bool, k: IntArray, i: IntArray, j: IntArray
) -> IntArray:
    """Rows ``[0, ocs, tx_pod, tx_port, rx_pod, rx_port]`` from the unit entries ``X[k, i, j]``
    of partial permutations."""
    zero = np.zeros_like(k)
    if circulators:  # both kinds: N(i, 2k) <-> S(j, 2k+1) on OCS k
        fwd = np.column_stack([zero, k, i, 2 * k, j, 2 * k + 1])
        rev = np.column_stack([zero, k, j, 2 * k + 1, i, 2 * k])
    elif kind == "cross":
        fwd = np.column_stack([zero, 2 * k, i, 2 * k, j, 2 * k + 1])
        rev = np.column_stack([zero, 2 * k + 1, j, 2 * k + 1, i, 2 * k])
    else:  # dual-link: G_0 = Tx of odd port -> Rx of even port, G_1 its mirror
        fwd = np.column_stack([zero, k, i, 2 * k + 1, j, 2 * k])
        rev = np.column_stack([zero, k, j, 2 * k, i, 2 * k + 1])
    return np.concatenate([fwd, rev]).astype(np.int64)


def _circuits_of_coupled_parts(s: IntArray, i: IntArray, j: IntArray) -> IntArray:
    """``slim-dual-link``: rows of the coupled pair transceiver ``(i, 2s)`` <-> ``(j, 2s+1)``
    on OCS ``s``: N ``(i, 4s)`` - S ``(j, 4s+3)`` and N ``(j, 4s+2)`` - S ``(i, 4s+1)``, both
    directions of each."""
    zero = np.zeros_like(s)
    a_n, a_s, b_n, b_s = 4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3
    rows = [
        np.column_stack([zero, s, i, a_n, j, b_s]),
        np.column_stack([zero, s, j, b_s, i, a_n]),
        np.column_stack([zero, s, j, b_n, i, a_s]),
        np.column_stack([zero, s, i, a_s, j, b_n]),
    ]
    return np.concatenate(rows).astype(np.int64)


def _tile_groups(per_unique: list[IntArray], inverse: IntArray) -> IntArray:
    parts = []
    for h, u in enumerate(inverse.tolist()):
        rows = per_unique[u].copy()
        rows[:, 0] = h
        parts.append(rows)
    if not parts:
        return np.zeros((0, 6), dtype=np.int64)
    out = np.concatenate(parts)
    order = np.lexsort((out[:, 3], out[:, 2], out[:, 1], out[:, 0]))
    return out[order]


def realize(C: Any, wiring: Wiring) -> IntArray:
    """Circuits realizing logical topology ``C`` exactly on a mirror-decomposable wiring
    (``cross``, ``dual-link``; ``slim-dual-link`` at its granularity).

    Parameters
    ----------
    C : array_like
        ``(P, P)`` (the same for every OCS group) or ``(H, P, P)`` non-negative integer link
        counts, symmetric, zero diagonal, row sums at most ``k_spine``.
    wiring : Wiring
        A ``cross`` or ``dual-link`` wiring (with or without circulators), or a
        ``slim-dual-link`` wiring: then :func:`coarse_part` of ``C`` is realized (every
        odd ``C_ij`` one link short; module docstring).

    Returns
    -------
    numpy.ndarray
        ``(n, 6)`` ``int64`` circuits ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]``,
        ``n = coarse_part(C).sum()`` over all groups (``C.sum()`` but for ``slim-dual-link``),
        sorted by group, OCS, Tx pod and port.

    Raises
    ------
    UnrealizableError
        ``C`` breaks symmetry, fan-out or has a non-zero diagonal (names group and pod).
    ConfigError
        ``wiring`` is ``uniform`` (NP-complete, use :func:`realize_exact`).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=2)
    >>> realize([[0, 1], [1, 0]], build_wiring(spec, "cross")).tolist()
    [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]]
    >>> spec4 = ClusterSpec(pods=2, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
    >>> realize([[0, 3], [3, 0]], build_wiring(spec4, "slim", True)).tolist()  # 3 -> 2 links
    [[0, 0, 0, 0, 1, 3], [0, 0, 0, 1, 1, 2], [0, 0, 1, 2, 0, 1], [0, 0, 1, 3, 0, 0]]
    """
    if not isinstance(wiring, Wiring):
        raise ConfigError(f"wiring must be a Wiring, got {type(wiring).__name__}")
    if wiring.kind not in _MIRRORED:
        raise ConfigError(
            f"wiring.kind: realize() needs a mirror-decomposable wiring "
            f"({', '.join(_MIRRORED)}), got {wiring.kind!r}; ToE on uniform wiring is "
            f"NP-complete: use realize_exact()"
        )
    Ch = check_logical_topology(C, wiring)
    coupled = wiring.coupled
    if coupled:
        Ch = Ch // wiring.granularity  # coupled transceiver pairs per pod pair
    uniq, inverse = _unique_groups(Ch)
    half = wiring.ports // (4 if coupled else 2)
    per_unique = []
    for Cu in uniq:
        A = symmetric_decomposition(Cu)
        X = integer_decomposition_sparse(A, half)
        k, i, j = X.part, X.row, X.col
        P = wiring.pods
        if X.value.size and (
            X.value.max() > 1 or unique(k * P + i).size < k.size or unique(k * P + j).size < k.size
        ):
            raise SolverError(
                "integer decomposition returned a part that is not a partial permutation "
                "(breaks Thm 3.1's bounds)"
            )
        if coupled:
            per_unique.append(_circuits_of_coupled_parts(k, i, j))
        else:
            per_unique.append(_circuits_of_parts(wiring.kind, wiring.circulators, k, i, j))
    return _tile_groups(per_unique, inverse)


@dataclass(frozen=True, eq=False)
class ExactRealization:
    """Result of :func:`realize_exact`.

    Attributes
    ----------
    circuits : numpy.ndarray
        ``(n, 6)`` circuits (both directions of every link).
    status : str
        ``"optimal"`` (every group proved optimal), ``"feasible"`` (time limit hit with a
        solution) or ``"timeout"`` (some group got no solution in time: its links are empty).
    ltcr : float
        Cross-Wiring Eq. (5) of the circuits against ``C``.
    realized_links : int
        Bidirectional links realized (all groups).
    upper_bound_links : int
        Proven upper bound on the realizable links (equals ``realized_links`` when optimal).
    target_links : int
        Bidirectional links asked for (``C.sum() / 2``).
    logical : numpy.ndarray
        ``(H, P, P)`` realized link counts.
    wall_time_s : float
        Solver wall time.
    """

    circuits: IntArray
    status: str
    ltcr: float
    realized_links: int
    upper_bound_links: int
    target_links: int
    logical: IntArray
    wall_time_s: float


def _candidate_pairs(
    tx_o: IntArray,
    rx_o: IntArray,
    tx_s: IntArray,
    rx_s: IntArray,
    pod: IntArray,
    Cg: IntArray,
    n_ocs: int,
) -> tuple[IntArray, IntArray]:
    """Unordered port pairs ``{m, n}`` of different pods with ``C > 0`` whose both directed
    circuits ``m -> n`` and ``n -> m`` can exist (Tx of one and Rx of the other on the same
    OCS, on opposite N/S sides).

    Ports are grouped by class ``(tx_ocs, rx_ocs, tx_side, rx_side)``; the partners of a
    class form the class ``(rx_ocs, tx_ocs, 1 - rx_side, 1 - tx_side)``, so the candidates are
    products of two classes (memory proportional to the candidates, not to ``(P K)^2``).
    """
    key = ((tx_o * n_ocs + rx_o) * 2 + tx_s) * 2 + rx_s
    partner = ((rx_o * n_ocs + tx_o) * 2 + (1 - rx_s)) * 2 + (1 - tx_s)
    order = np.argsort(key, kind="stable")
    classes, starts = np.unique(key[order], return_index=True)
    members = dict(zip(classes.tolist(), np.split(order, starts[1:]), strict=True))
    ms, ns = [], []
    for a, A in members.items():
        b = int(partner[A[0]])
        if b < a or b not in members:
            continue
        mm, nn = (g.ravel() for g in np.meshgrid(A, members[b], indexing="ij"))
        keep = pod[mm] < pod[nn] if a == b else pod[mm] != pod[nn]
        ms.append(mm[keep])
        ns.append(nn[keep])
    if not ms:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    m, n = np.concatenate(ms), np.concatenate(ns)
    useful = Cg[pod[m], pod[n]] > 0
    return m[useful], n[useful]


def _solve_group(
    wiring: Wiring, h: int, Cg: IntArray, time_limit_s: float, workers: int, seed: int
) -> tuple[IntArray, str, int]:
    """CP-SAT on one group: circuits (group column 0), status, upper bound on links."""
    P, K = wiring.pods, wiring.ports
    target = int(np.triu(Cg, 1).sum())
    empty = np.zeros((0, 6), dtype=np.int64)
    if target == 0:
        return empty, "optimal", 0
    if time_limit_s <= 0:
        return empty, "timeout", target
    tx_o = wiring.tx_ocs[h].reshape(-1)
    rx_o = wiring.rx_ocs[h].reshape(-1)
    tx_s = wiring.tx_side()[h].reshape(-1)
    rx_s = wiring.rx_side()[h].reshape(-1)
    pod = np.repeat(np.arange(P), K)
    m, n = _candidate_pairs(tx_o, rx_o, tx_s, rx_s, pod, Cg, wiring.ocs_per_group)
    if m.size == 0:
        return empty, "optimal", 0
    # constraint (2) (+ (4)): every port in at most one link; relaxed constraint (1): at
    # most C_ij links between pods i < j
    pair = np.minimum(pod[m], pod[n]) * P + np.maximum(pod[m], pod[n])
    got = _max_links(m, n, pair, Cg.reshape(-1), h, time_limit_s, workers, seed)
    if got is None:
        return empty, "timeout", target
    values, code, best_bound = got
    bound = min(target, int(np.floor(best_bound + 1e-6)))
    mm, nn = m[values], n[values]
    zero = np.zeros_like(mm)
    rows = np.concatenate(
        [
            np.column_stack([zero, tx_o[mm], mm // K, mm % K, nn // K, nn % K]),
            np.column_stack([zero, tx_o[nn], nn // K, nn % K, mm // K, mm % K]),
        ]
    ).astype(np.int64)
    status = "optimal" if code == cp_model.OPTIMAL else "feasible"
    return rows, status, bound if status == "feasible" else int(values.sum())


def _solve_group_coupled(
    wiring: Wiring, h: int, Cg: IntArray, time_limit_s: float, workers: int, seed: int
) -> tuple[IntArray, str, int]:
    """CP-SAT on one group of a coupled wiring: one 0/1 variable per pair of transceivers
    (ports ``2t``, ``2t+1``) of different pods on the same OCS; circuits (group column 0),
    status and an upper bound, all in links (two per coupled pair)."""
    P, K = wiring.pods, wiring.ports
    g = wiring.granularity
    T = K // 2
    target = int(np.triu(Cg, 1).sum())
    empty = np.zeros((0, 6), dtype=np.int64)
    pairs_cap = Cg // g
    if not np.triu(pairs_cap, 1).any():
        return empty, "optimal", 0
    if time_limit_s <= 0:
        return empty, "timeout", target
    side = wiring.tx_side()[h]  # (P, K): 0 = N lane, 1 = S lane
    ocs = wiring.tx_ocs[h][:, 0::2].reshape(-1)  # OCS of every transceiver (pod-major)
    lane = np.arange(K).reshape(T, 2)
    n_port = np.where(side[:, 0::2] == 0, lane[:, 0], lane[:, 1]).reshape(-1)
    s_port = np.where(side[:, 0::2] == 0, lane[:, 1], lane[:, 0]).reshape(-1)
    pod = np.repeat(np.arange(P), T)
    order = np.argsort(ocs, kind="stable")
    _, starts = np.unique(ocs[order], return_index=True)
    ms, ns = [], []
    for members in np.split(order, starts[1:]):
        a, b = (x.ravel() for x in np.meshgrid(members, members, indexing="ij"))
        keep = (pod[a] < pod[b]) & (pairs_cap[pod[a], pod[b]] > 0)
        ms.append(a[keep])
        ns.append(b[keep])
    m, n = np.concatenate(ms), np.concatenate(ns)
    if m.size == 0:
        return empty, "optimal", 0
    # every transceiver in at most one pair; at most C_ij links, in coupled pairs
    pair = pod[m] * P + pod[n]
    got = _max_links(m, n, pair, pairs_cap.reshape(-1), h, time_limit_s, workers, seed)
    if got is None:
        return empty, "timeout", target
    values, code, best_bound = got
    mm, nn = m[values], n[values]
    pi, pj, o = pod[mm], pod[nn], ocs[mm]
    zero = np.zeros_like(mm)
    rows = []
    for a_n, b_s, p_a, p_b in (
        (n_port[mm], s_port[nn], pi, pj),  # N lane of one transceiver - S lane of the other
        (n_port[nn], s_port[mm], pj, pi),
    ):
        rows.append(np.column_stack([zero, o, p_a, a_n, p_b, b_s]))
        rows.append(np.column_stack([zero, o, p_b, b_s, p_a, a_n]))
    circuits = np.concatenate(rows).astype(np.int64)
    status = "optimal" if code == cp_model.OPTIMAL else "feasible"
    bound = min(target, g * int(np.floor(best_bound + 1e-6)))
    return circuits, status, bound if status == "feasible" else g * int(values.sum())


def _max_links(
    m: IntArray,
    n: IntArray,
    pair: IntArray,
    caps: IntArray,
    h: int,
    time_limit_s: float,
    workers: int,
    seed: int,
) -> tuple[NDArray[np.bool_], int, float] | None:
    """CP-SAT over candidate links ``m[i] - n[i]`` (port or transceiver ids): every end in
    at most one chosen link, at most ``caps[pair[i]]`` links per pod pair, as many links as
    possible. Returns the chosen links, the status code and the objective bound, or
    ``None`` when no solution was found in time."""
    model = cp_model.CpModel()
    y = model.new_bool_var_series("y", pd.Index(np.arange(m.size)))
    yv = y.to_numpy()
    ends = np.concatenate([m, n])
    var_of_end = np.concatenate([np.arange(m.size), np.arange(m.size)])
    order = np.argsort(ends, kind="stable")
    _, starts = np.unique(ends[order], return_index=True)
    for idx in np.split(var_of_end[order], starts[1:]):
        if idx.size > 1:
            model.add(cp_model.LinearExpr.sum(list(yv[idx])) <= 1)
    order = np.argsort(pair, kind="stable")
    keys, starts = np.unique(pair[order], return_index=True)
    for idx, cap in zip(np.split(order, starts[1:]), caps[keys].tolist(), strict=True):
        if idx.size > cap:
            model.add(cp_model.LinearExpr.sum(list(yv[idx])) <= cap)
    model.maximize(cp_model.LinearExpr.sum(list(yv)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    code = solver.solve(model)
    if code == cp_model.MODEL_INVALID:
        raise SolverError(f"CP-SAT: invalid model for group {h}: {model.validate()}")
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return solver.boolean_values(y).to_numpy().astype(bool), code, solver.best_objective_bound


def realize_exact(
    C: Any,
    wiring: Wiring,
    time_limit_s: float = 10.0,
    *,
    workers: int = 1,
    seed: int = 0,
) -> ExactRealization:
    """Realize as many links of ``C`` as possible on any wiring, with OR-Tools CP-SAT.

    Constraints (2)-(4) of Cross-Wiring §2.2 are exact; (1) is relaxed to "at most ``C_ij``
    links between pods ``i`` and ``j``" and the number of realized links is maximised. One
    0/1 variable per port pair ``{m, n}`` of different pods whose Tx/Rx are wired so that both
    directed circuits ``m -> n`` and ``n -> m`` exist (so symmetry holds by construction).
    On a coupled wiring (``slim-dual-link``) one variable per pair of transceivers of
    different pods on one OCS instead, worth two links, at most ``C_ij // 2`` pairs per pod
    pair. Groups with the same topology are solved once. For small instances: the problem is
    NP-complete on uniform wiring.

    Parameters
    ----------
    C : array_like
        ``(P, P)`` or ``(H, P, P)`` symmetric non-negative integer link counts, zero diagonal
        (fan-out is not required: excess demand just lowers the LTCR).
    wiring : Wiring
        Any wiring.
    time_limit_s : float
        Total solver time budget over all groups; when exhausted the best solution so far is
        returned with ``status="feasible"`` (or ``"timeout"`` without one).
    workers : int
        CP-SAT search workers.
    seed : int
        CP-SAT random seed.

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=2, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=2)
    >>> r = realize_exact([[0, 2], [2, 0]], build_wiring(spec, "uniform"))
    >>> r.status, r.realized_links, r.ltcr
    ('optimal', 2, 1.0)
    """
    if not isinstance(wiring, Wiring):
        raise ConfigError(f"wiring must be a Wiring, got {type(wiring).__name__}")
    if not time_limit_s > 0:
        raise ConfigError(f"time_limit_s must be > 0, got {time_limit_s}")
    if int(workers) < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    Ch = check_logical_topology(C, wiring, fan_out=False)
    uniq, inverse = _unique_groups(Ch)
    first_group = np.array([int(np.flatnonzero(inverse == u)[0]) for u in range(len(uniq))])
    start = time.perf_counter()
    deadline = start + float(time_limit_s)
    per_unique: list[IntArray] = []
    statuses: list[str] = []
    bounds: list[int] = []
    for u, Cu in enumerate(uniq):
        left = deadline - time.perf_counter()
        solve = _solve_group_coupled if wiring.coupled else _solve_group
        rows, status, bound = solve(wiring, int(first_group[u]), Cu, left, workers, seed)
        per_unique.append(rows)
        statuses.append(status)
        bounds.append(bound)
    wall = time.perf_counter() - start
    circuits = _tile_groups(per_unique, inverse)
    X = logical_topology(wiring, circuits)
    if "timeout" in statuses:
        status = "timeout"
    elif "feasible" in statuses:
        status = "feasible"
    else:
        status = "optimal"
    counts = np.bincount(inverse, minlength=len(uniq))
    return ExactRealization(
        circuits=circuits,
        status=status,
        ltcr=ltcr_matrix(X, Ch),
        realized_links=int(circuits.shape[0] // 2),
        upper_bound_links=int(np.dot(counts, bounds)),
        target_links=int(Ch.sum() // 2),
        logical=X,
        wall_time_s=wall,
    )
