"""One front door for every OCS-configuration solver, over all OCS groups of a cluster.

:func:`configure` validates the logical topology and the current configuration, runs one of

* ``mdmcf`` -- ``C = A + A.T`` with ``A`` closest to the current forward sub-topology, minimal
  rewiring by merge-decomposition MCF, mirrored backward half (Cross Wiring §5, App. D). With
  a current configuration several bipartitions of
  :func:`~lumoscore.toe.mdmcf.merge_decompose` are run (halves; peel in the natural channel
  order, and on small instances in three more orders) and the least rewiring is kept per
  group -- unless the halves split already meets the lower bound ``sum |A - U|`` (``U`` the
  current forward circuits over all channels) in every group, when no other split can be
  better;
* ``mcf`` -- the same decomposition without rewiring awareness: ``A`` split evenly by the
  integer decomposition (the MinRewiring-style baseline of Cross Wiring §6.2);
* ``ilp`` -- exact OR-Tools CP-SAT (:mod:`lumoscore.toe.ilp`);
* ``bvn``, ``helios`` -- Uniform-Wiring heuristics (:mod:`lumoscore.toe.heuristics`);

(on ``slim-dual-link`` wiring ``mdmcf``, ``mcf`` and ``ilp`` run on the transceiver view of
:mod:`lumoscore.toe.slim`, with the demand rounded down to coupled pairs) and assembles
port-level circuits that keep the current circuits wherever the new per-OCS pod-pair counts
allow. The groups are independent; the decompositions and flows of all groups
are batched into single OR-Tools calls.

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec, build_wiring, verify_circuits
>>> spec = ClusterSpec(pods=3, k_leaf=1, k_spine=2, tau=1, gpus_per_server=1, ocs_ports=3)
>>> C = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)  # the papers' counterexample
>>> res = configure(C, build_wiring(spec, "cross"))
>>> res.solver, res.status, len(res.circuits), verify_circuits(build_wiring(spec, "cross"), res.circuits, C)
('mdmcf', 'feasible', 6, [])
"""  # noqa: E501

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.decompose import integer_decomposition, symmetric_decomposition_batch
from lumoscore.decompose.symmetric import symmetric_pairs_batch
from lumoscore.errors import ConfigError, InfeasibleError
from lumoscore.npsets import lookup
from lumoscore.toe.errors import CurrentConfigError, WiringMismatchError
from lumoscore.toe.mdmcf import refine_pairs, split_entries
from lumoscore.toe.model import (
    PortModel,
    assemble_circuits,
    assemble_sparse,
    check_current,
    current_links,
    validate_demand,
)
from lumoscore.toe.ports import fit_counts
from lumoscore.toe.slim import (
    coupling_problems,
    to_lane_circuits,
    to_transceiver_circuits,
    transceiver_model,
)

__all__ = [
    "COUPLED_SOLVERS",
    "REFINE_ROUNDS",
    "SMALL_UNITS",
    "SOLVERS",
    "ToeResult",
    "check_solver",
    "configure",
    "forward_split",
]

IntArray = NDArray[np.int64]

SOLVERS: tuple[str, ...] = ("mdmcf", "mcf", "ilp", "bvn", "helios")
"""Solver names accepted by :func:`configure`."""

COUPLED_SOLVERS: tuple[str, ...] = ("mdmcf", "mcf", "ilp")
"""Solvers of coupled wirings (``slim-dual-link``): the mirror-paired ones, on the transceiver
view (:mod:`lumoscore.toe.slim`)."""

_BLOCK_ROWS = 2048  # largest block-diagonal matrix decomposed in one call

SMALL_UNITS = 4096
"""Forward links per call up to which ``mdmcf`` also tries three more channel orders for the
peel bipartition (by decreasing current overlap, two random); larger calls use two runs."""

REFINE_ROUNDS = 0
"""Rounds of exact two-channel re-splits (:func:`~lumoscore.toe.mdmcf.refine_pairs`) after
the merge-decomposition recursion of ``mdmcf`` (only when a current configuration is given).
Off: on the §6.3 workload the recursion's result is already pairwise optimal in practice."""


@dataclass(frozen=True)
class ToeResult:
    """Outcome of one (whole-cluster or single-group) OCS configuration.

    Attributes
    ----------
    circuits : ndarray
        ``(n, 6)`` rows ``[group, ocs, tx_pod, tx_port, rx_pod, rx_port]``.
    solver : str
        Solver asked for (``"patch"``: :func:`lumoscore.toe.patch.patch_circuits` answered,
        in :func:`lumoscore.placement.reconfigure`).
    status : str
        ``"optimal"`` (proved optimal for the solver's objective), ``"feasible"`` (valid, not
        proved optimal), ``"timeout"`` (time limit reached; best solution found) or
        ``"fallback"`` (the solver found nothing in time; ``fallback`` produced the answer).
    solve_time_s : float
        Wall-clock time of the whole call (validation, solve, port assignment).
    fallback : str or None
        Solver used instead, if any.
    groups : tuple of int
        Groups configured.
    notes : tuple of str
        Extra information (time limits hit per group, ...).
    """

    circuits: IntArray
    solver: str
    status: str
    solve_time_s: float
    fallback: str | None = None
    groups: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())


def forward_split(C: Any, prefer: Any = None) -> IntArray:
    """``A`` with ``C[h] = A[h] + A[h].T`` for every group (Theorem 3.2), all groups batched.

    ``prefer`` (``(H, P, P)``, e.g. the current forward sub-topology) makes each ``A[h]``
    differ from it in as few units as possible. Groups are decomposed in batches of up to
    ``_BLOCK_ROWS`` pod rows, one min-cost flow per batch
    (:func:`~lumoscore.decompose.symmetric_decomposition_batch`).

    Examples
    --------
    >>> import numpy as np
    >>> C = np.array([[[0, 2], [2, 0]], [[0, 1], [1, 0]]])
    >>> A = forward_split(C)
    >>> bool((A + A.transpose(0, 2, 1) == C).all())
    True
    """
    C = np.asarray(C, dtype=np.int64)
    P_ = None if prefer is None else np.asarray(prefer, dtype=np.int64)
    H, P, _ = C.shape
    per = max(1, _BLOCK_ROWS // max(P, 1))
    if per >= H:
        return symmetric_decomposition_batch(C, prefer=P_)
    out = np.zeros_like(C)
    for s in range(0, H, per):
        blk = None if P_ is None else P_[s : s + per]
        out[s : s + per] = symmetric_decomposition_batch(C[s : s + per], prefer=blk)
    return out


def _model_for(wiring: Any, *, mirror: bool, groups: IntArray) -> PortModel:
    model = PortModel.from_wiring(wiring, mirror=mirror)
    if len(groups) != model.groups or (groups != np.arange(model.groups)).any():
        model = model.subset(groups)
    return model


def check_solver(wiring: Any, solver: str) -> None:
    """Raise if ``solver`` (one of :data:`SOLVERS`) cannot configure ``wiring`` (a
    :class:`~lumoscore.topology.Wiring` or a :class:`PortModel`): an unknown name,
    ``mdmcf``/``mcf`` on a wiring that is not mirror-paired, or ``bvn``/``helios`` on
    ``slim-dual-link`` (:class:`WiringMismatchError`, naming the solvers that fit).

    Examples
    --------
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=4, k_leaf=4, k_spine=4, tau=2, gpus_per_server=4, ocs_ports=4)
    >>> check_solver(build_wiring(spec, "cross"), "mdmcf")
    >>> check_solver(build_wiring(spec, "uniform"), "mdmcf")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lumoscore.toe.errors.WiringMismatchError: solver 'mdmcf' needs a mirror-paired wiring ...
    """
    if solver not in SOLVERS:
        raise ConfigError(f"solver {solver!r} unknown; allowed: {', '.join(SOLVERS)}")
    if getattr(wiring, "coupled", False):
        if solver not in COUPLED_SOLVERS:
            raise WiringMismatchError(
                f"solver {solver!r} is a Uniform-Wiring heuristic (one matching of pods per "
                f"OCS) and does not fit {wiring.kind} wiring, whose coupled transceivers form "
                f"mirror-paired channels; allowed solvers for this wiring: "
                f"{', '.join(COUPLED_SOLVERS)}"
            )
        return
    if solver in ("mdmcf", "mcf"):
        model = (
            wiring if isinstance(wiring, PortModel) else PortModel.from_wiring(wiring, mirror=True)
        )
        _require_paired(model, solver, np.arange(model.groups))


def _require_paired(model: PortModel, solver: str, groups: IntArray) -> None:
    if model.paired:
        model = model.with_all_ports()  # a property of the wiring, not of dead ports
        uneven = model.cap[:, :, 0] != model.cap[:, :, 1]
        if uneven.any():
            h, c, i = (int(v) for v in np.argwhere(uneven)[0])
            raise WiringMismatchError(
                f"solver {solver!r} needs every pod to have as many forward as backward ports "
                f"in each channel (mirror symmetry); in group {groups[h]} pod {i} has "
                f"{model.cap[h, c, 0, i]} forward and {model.cap[h, c, 1, i]} backward ports on "
                f"OCS {model.chan_ocs[h, c, 0]} (e.g. uniform wiring with circulators); "
                f"allowed solver for this wiring: ilp"
            )
        return
    h, c = (int(v) for v in np.argwhere(model.chan_self)[0])
    o = int(model.chan_ocs[h, c, 0])
    raise WiringMismatchError(
        f"solver {solver!r} needs a mirror-paired wiring (cross, dual-link or circulators): "
        f"in group {groups[h]} the Tx and Rx of a port share OCS {o} (uniform wiring); "
        f"allowed solvers for this wiring: ilp, bvn, helios"
    )


def _forward_keys(model: PortModel, current: IntArray, groups: IntArray) -> IntArray:
    """Flat index into ``(H, n_chan, P, P)`` of every forward circuit of ``current`` (checked
    ``int64`` circuits of ``groups``): the per-channel counts ``u`` of the papers, as keys."""
    if not len(current):
        return np.zeros(0, dtype=np.int64)
    n_chan, P = model.channels, model.pods
    pos = np.full(int(groups.max()) + 1, -1, dtype=np.int64)
    pos[groups] = np.arange(len(groups))
    h, i, port, j = pos[current[:, 0]], current[:, 2], current[:, 3], current[:, 4]
    fwd = model.side[h, i, port] != 1
    key = ((h * n_chan + model.channel[h, i, port]) * P + i) * P + j
    return key[fwd]


def _rewiring(
    xk: IntArray, xv: IntArray, uk: IntArray, un: IntArray, H: int, span: int
) -> NDArray[np.float64]:
    """Rewiring ``sum |x - u|`` per group of counts ``x`` and ``u`` given as flat keys
    (``u``'s ascending) and values, ``span`` keys a group:
    ``sum x + sum u - 2 sum min(x, u)``, the minimum taken on the support of ``x``."""
    same = np.minimum(xv, lookup(uk, un, xk))
    return np.bincount(xk // span, weights=xv - 2 * same, minlength=H) + np.bincount(
        uk // span, weights=un, minlength=H
    )


def _forward_entries(C: IntArray, prefer: IntArray | None) -> tuple[IntArray, IntArray]:
    """Non-zero entries of :func:`forward_split` as flat keys into ``(H, P, P)`` (ascending,
    the order of ``np.nonzero``) and values: the same flows, without the dense ``A``."""
    H, P, _ = C.shape
    per = max(1, _BLOCK_ROWS // max(P, 1))
    keys, vals = [], []
    for s in range(0, H, per):
        blk = None if prefer is None else prefer[s : s + per]
        g, i, j, c, a = symmetric_pairs_batch(C[s : s + per], blk)
        g = g + s
        keys += [((g * P + i) * P + j)[a > 0], ((g * P + j) * P + i)[c > a]]
        vals += [a[a > 0], (c - a)[c > a]]
    key, val = np.concatenate(keys), np.concatenate(vals)
    order = np.argsort(key)
    return key[order], val[order]


def _mdmcf_sparse(
    C: IntArray, model: PortModel, current: Any, groups: IntArray
) -> tuple[IntArray, IntArray]:
    """``mdmcf`` counts as flat keys into ``(H, n_chan, P, P)`` (ascending) and values > 0.

    ``C = A + A.T`` (:func:`forward_split`, ``A`` closest to the current forward circuits
    ``u``), then the halves recursion of :func:`~lumoscore.toe.mdmcf.merge_decompose`; with a
    current configuration, when some group's rewiring ``sum |x - u|`` is above the bound
    ``sum |A - sum_c u_c|``, the peel bipartitions of Algorithm 1 too (least rewiring per group).
    """
    H, n_chan, P = model.groups, model.channels, model.pods
    PP = P * P
    cur = np.zeros((0, 6), np.int64) if current is None else current
    uk, un = np.unique(_forward_keys(model, cur, groups), return_counts=True)
    prefer = None
    if len(cur):
        pk = uk // (n_chan * PP) * PP + uk % PP
        # sum over channels; within one channel the keys are distinct (uk is), so a
        # fancy-index add per channel is exact (cheaper than a float bincount of H P^2)
        prefer = np.zeros(H * PP, np.int64)
        chan = uk // PP % n_chan
        for c in range(n_chan):
            sel = chan == c
            prefer[pk[sel]] += un[sel]
        prefer = prefer.reshape(H, P, P)
    ek, ea = _forward_entries(C, prefer)
    e_h, e_i, e_j = ek // PP, ek // P % P, ek % P
    n_ch = (model.chan_ocs[:, :, 0] >= 0).sum(axis=1)
    e_u = lookup(uk, un, ((e_h[:, None] * n_chan + np.arange(n_chan)) * P + e_i[:, None]) * P
                  + e_j[:, None])  # fmt: skip
    x_h, x_c, x_i, x_j, x_v = split_entries(e_h, e_i, e_j, ea, e_u, model.cap, n_ch, split="halves")
    xk = ((x_h * n_chan + x_c) * P + x_i) * P + x_j
    order = np.argsort(xk)
    xk, xv = xk[order], x_v[order]
    if prefer is None:
        return xk, xv
    # rewiring sum |x - u| per group = sum x + sum u - 2 sum min(x, u), on the support of u;
    # its bound sum |A - U| (U = sum_c u_c = prefer) likewise on the support of A
    best = _rewiring(xk, xv, uk, un, H, n_chan * PP)
    bound = (
        np.bincount(e_h, weights=ea, minlength=H)
        + np.bincount(uk // (n_chan * PP), weights=un, minlength=H)
        - 2 * np.bincount(e_h, weights=np.minimum(ea, prefer.reshape(-1)[ek]), minlength=H)
    )
    if (best == bound).all() and not REFINE_ROUNDS:
        return xk, xv
    return _other_bipartitions(
        ek, ea, uk, un, xk, xv, best, model, n_ch, at_bound=bool((best == bound).all())
    )


def _other_bipartitions(
    ek: IntArray,
    ea: IntArray,
    uk: IntArray,
    un: IntArray,
    xk: IntArray,
    xv: IntArray,
    best: Any,
    model: PortModel,
    n_ch: IntArray,
    *,
    at_bound: bool,
) -> tuple[IntArray, IntArray]:
    """Algorithm 1 allows any bipartition: the peel splits in several channel orders (unless
    every group is ``at_bound``), keeping per group the least rewiring; then
    :data:`REFINE_ROUNDS` of :func:`~lumoscore.toe.mdmcf.refine_pairs`.

    On the entries only: ``A`` as flat keys into ``(H, P, P)`` and values (``ek``, ``ea``),
    the current circuits ``u`` and the halves split ``x`` as flat keys into
    ``(H, n_chan, P, P)`` and values (all keys ascending), ``best`` the rewiring of ``x`` per
    group. Returns the chosen ``x`` likewise."""
    H, n_chan, P = model.groups, model.channels, model.pods
    PP = P * P
    u_h, u_ij = uk // (n_chan * PP), uk % PP
    orders: list[Any] = []
    if not at_bound:
        orders.append(np.broadcast_to(np.arange(n_chan), (H, n_chan)))
    if orders and (n_ch == n_chan).all() and ea.sum() <= SMALL_UNITS:
        # overlap[h, c] = sum_ij min(u[h, c, i, j], A[h, i, j])
        both = np.minimum(un, lookup(ek, ea, u_h * PP + u_ij))
        per = u_h * n_chan + uk // PP % n_chan
        overlap = np.bincount(per, weights=both, minlength=H * n_chan).reshape(H, n_chan)
        orders.append(np.argsort(-overlap, axis=1, kind="stable"))
        rng = np.random.default_rng(0)
        orders += [np.argsort(rng.random((H, n_chan)), axis=1) for _ in range(2)]
    e_h, e_ij = ek // PP, ek % PP
    e_u = lookup(uk, un, (e_h[:, None] * n_chan + np.arange(n_chan)) * PP + e_ij[:, None])
    for order in orders:
        # the channels in this order: the peel splits channel order[h, 0] off first
        eo = np.take_along_axis(e_u, order[e_h], axis=1)
        co = np.take_along_axis(model.cap, order[:, :, None, None], axis=1)
        y_h, y_c, y_i, y_j, y_v = split_entries(
            e_h, e_ij // P, e_ij % P, ea, eo, co, n_ch, split="peel"
        )
        yk = ((y_h * n_chan + order[y_h, y_c]) * P + y_i) * P + y_j
        cost = _rewiring(yk, y_v, uk, un, H, n_chan * PP)
        take = cost < best
        keep = ~take[xk // (n_chan * PP)]
        mine = take[y_h]
        xk = np.concatenate([xk[keep], yk[mine]])
        xv = np.concatenate([xv[keep], y_v[mine]])
        at = np.argsort(xk)
        xk, xv = xk[at], xv[at]
        best = np.minimum(cost, best)
    if REFINE_ROUNDS and (n_ch == n_ch[0]).all():
        dense = np.zeros((2, H * n_chan * PP), np.int64)
        dense[0, xk], dense[1, uk] = xv, un
        x = refine_pairs(
            dense[0].reshape(H, n_chan, P, P), dense[1].reshape(H, n_chan, P, P), model.cap,
            rounds=REFINE_ROUNDS, rng=0,
        ).reshape(-1)  # fmt: skip
        xk = np.flatnonzero(x)
        xv = x[xk]
    return xk, xv


def _mdmcf_counts(C: IntArray, model: PortModel, current: Any, groups: IntArray) -> IntArray:
    """:func:`_mdmcf_sparse` as a dense ``(H, n_chan, P, P)`` array."""
    keys, vals = _mdmcf_sparse(C, model, current, groups)
    x = np.zeros(model.groups * model.channels * model.pods**2, dtype=np.int64)
    x[keys] = vals
    return x.reshape(model.groups, model.channels, model.pods, model.pods)


def _mcf_counts(C: IntArray, model: PortModel, groups: IntArray) -> IntArray:
    A = forward_split(C)
    H, n_chan, P = model.groups, model.channels, model.pods
    x = np.zeros((H, n_chan, P, P), dtype=np.int64)
    n_ch = (model.chan_ocs[:, :, 0] >= 0).sum(axis=1)
    for h in range(H):  # one batched OR-Tools call per recursion depth and group
        x[h, : n_ch[h]] = integer_decomposition(A[h], int(n_ch[h]))
    over_r = x.sum(axis=3) > model.cap[:, :, 0]
    over_c = x.sum(axis=2) > model.cap[:, :, 1]
    if over_r.any() or over_c.any():
        h, c, i = (int(v) for v in np.argwhere(over_r | over_c)[0])
        raise InfeasibleError(
            f"mcf: group {groups[h]} pod {i} needs more ports than channel {c} has (the even "
            f"split assumes the same ports in every channel)"
        )
    return x


def configure(
    demand: Any,
    wiring: Any,
    *,
    current: Any = None,
    solver: str = "mdmcf",
    groups: Any = None,
    time_limit_s: float = 60.0,
    seed: int | None = 0,
    check: bool = True,
) -> ToeResult:
    """Compute a new OCS configuration realizing ``demand`` (as far as the wiring allows).

    Parameters
    ----------
    demand : array_like
        ``(H, P, P)`` logical topology per group (or ``(P, P)`` for one group): symmetric,
        non-negative integers, zero diagonal, row sums at most the spine's OCS-facing ports.
    wiring : Wiring or PortModel
        Physical topology (:func:`lumoscore.topology.build_wiring`). A ``slim-dual-link``
        wiring must be given as the ``Wiring`` (its coupling is not in a ``PortModel``): the
        demand is rounded down to even pod-pair counts (noted in ``notes``), solved on the
        transceiver view (:mod:`lumoscore.toe.slim`) with ``mdmcf``, ``mcf`` or ``ilp``.
    current : array_like, optional
        Current configuration, circuits ``(n, 6)``; circuits of the wiring's groups not
        configured are ignored. Must fit the wiring (a circuit of a group the wiring does not
        have is an error).
    solver : str
        One of :data:`SOLVERS`.
    groups : array_like, optional
        Groups the demand matrices belong to (default: all groups, in order).
    time_limit_s : float
        Time limit of the CP-SAT solver (``ilp``), for the whole call.
    seed : int, optional
        Random seed of the CP-SAT search.
    check : bool
        Validate ``demand`` and ``current`` (default). ``False`` skips both checks: only for
        callers that guarantee them, e.g. a ``current`` this function produced for the same
        wiring and a demand that fits the ports (the placement's event loop).

    Returns
    -------
    ToeResult

    Raises
    ------
    lumoscore.toe.errors.DemandError
        Malformed demand (names group, pod and value).
    lumoscore.toe.errors.CurrentConfigError
        Current configuration does not fit the wiring (names circuit, pod, port and OCS).
    lumoscore.toe.errors.WiringMismatchError
        Solver not applicable to the wiring.

    Examples
    --------
    >>> import numpy as np
    >>> from lumoscore.topology import ClusterSpec, build_wiring
    >>> spec = ClusterSpec(pods=4, k_leaf=2, k_spine=4, tau=1, gpus_per_server=2, ocs_ports=4)
    >>> w = build_wiring(spec, "cross")
    >>> C = np.array([[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 2], [1, 1, 2, 0]])
    >>> first = configure(np.stack([C, C]), w)
    >>> again = configure(np.stack([C, C]), w, current=first.circuits)  # nothing to change
    >>> bool((np.sort(again.circuits, axis=0) == np.sort(first.circuits, axis=0)).all())
    True
    """
    t0 = time.perf_counter()
    if solver not in SOLVERS:
        raise ConfigError(f"solver: unknown {solver!r}; allowed: {', '.join(SOLVERS)}")
    H_all = int(np.asarray(wiring.tx_ocs).shape[0])
    gids = np.arange(H_all) if groups is None else np.asarray(groups, dtype=np.int64).ravel()
    if (
        gids.size == 0
        or gids.min() < 0
        or gids.max() >= H_all
        or len(set(gids.tolist())) < len(gids)
    ):
        raise ConfigError(f"groups: {gids.tolist()} must be distinct groups in 0..{H_all - 1}")
    cur = None
    if current is not None:
        cur = np.asarray(current, dtype=np.int64).reshape(-1, 6)
        off = np.flatnonzero((cur[:, 0] < 0) | (cur[:, 0] >= H_all)) if check else ()
        if len(off):  # (a group the wiring lacks: never configured, so never dropped silently)
            r = int(off[0])
            raise CurrentConfigError(
                f"circuit {r}: group {int(cur[r, 0])} out of range; allowed 0..{H_all - 1}"
            )
        if len(cur):
            member = np.zeros(max(H_all, int(cur[:, 0].max()) + 1), bool)
            member[gids] = True
            cur = cur[member[np.maximum(cur[:, 0], 0)] & (cur[:, 0] >= 0)]
    if getattr(wiring, "coupled", False):
        return _configure_coupled(
            demand, wiring, cur, solver, gids, time_limit_s, seed, check=check, t0=t0
        )
    mirror = solver in ("mdmcf", "mcf")
    model = _model_for(wiring, mirror=mirror, groups=gids)
    if check:
        C = validate_demand(demand, model)
    else:
        C = np.asarray(demand, dtype=np.int64).reshape(model.groups, model.pods, model.pods)
    if cur is not None and check:
        problems = check_current(model, cur, groups=gids)
        if problems:
            raise CurrentConfigError(
                "current configuration does not fit the wiring: " + "; ".join(problems[:3])
            )
    if cur is not None and model.dead is not None:  # circuits on dead ports are gone
        cur = cur[model.live(cur, groups=gids)]
    notes: tuple[str, ...] = ()
    status, fallback = "feasible", None
    if solver in ("mdmcf", "mcf"):
        _require_paired(model, solver, gids)
        full = model.with_all_ports()  # the decomposition's theorem: every port works
        if solver == "mdmcf":
            keys, vals = _mdmcf_sparse(C, full, cur, gids)
        else:
            x = _mcf_counts(C, full, gids)
            keys = np.flatnonzero(x)
            vals = x.reshape(-1)[keys]
    elif solver == "ilp":
        from lumoscore.toe.ilp import ilp_counts

        out = ilp_counts(C, model, cur, gids, time_limit_s=time_limit_s, seed=seed)
        x, status, notes = out.counts, out.status, out.notes
        if x is None:
            fallback = "mdmcf" if model.paired else "helios"
            fb = configure(C, wiring, current=cur, solver=fallback, groups=gids)
            return ToeResult(
                fb.circuits,
                solver,
                "fallback",
                time.perf_counter() - t0,
                fallback,
                tuple(int(g) for g in gids),
                notes,
            )
    else:
        from lumoscore.toe.heuristics import bvn_counts, helios_counts

        fn = bvn_counts if solver == "bvn" else helios_counts
        x = fn(C, model, gids)
    if model.dead is not None and solver in ("mdmcf", "mcf"):
        x = np.zeros(model.groups * model.channels * model.pods**2, dtype=np.int64)
        x[keys] = vals
        x, lost = fit_counts(x.reshape(model.groups, model.channels, model.pods, -1), model)
        keys = np.flatnonzero(x)
        vals = x.reshape(-1)[keys]
        if lost:
            notes += (f"{lost} link(s) found no working ports (dead ports)",)
    has_cur = cur is not None and len(cur) > 0
    links = current_links(model, cur, groups=gids, check=False) if has_cur else None
    circuits = (
        assemble_sparse(model, keys, vals, links, groups=gids)
        if solver in ("mdmcf", "mcf")
        else assemble_circuits(model, x, links, groups=gids)
    )
    return ToeResult(
        circuits,
        solver,
        status,
        time.perf_counter() - t0,
        fallback,
        tuple(int(g) for g in gids),
        notes,
    )


def _configure_coupled(
    demand: Any,
    wiring: Any,
    cur: IntArray | None,
    solver: str,
    gids: IntArray,
    time_limit_s: float,
    seed: int | None,
    *,
    check: bool,
    t0: float,
) -> ToeResult:
    """:func:`configure` on a coupled wiring (``slim-dual-link``): validate at port level,
    round the demand down to coupled pairs, solve on the transceiver view, expand the lanes."""
    check_solver(wiring, solver)
    lanes = _model_for(wiring, mirror=False, groups=gids)
    if check:
        C = validate_demand(demand, lanes)
    else:
        C = np.asarray(demand, dtype=np.int64).reshape(lanes.groups, lanes.pods, lanes.pods)
    notes: list[str] = []
    odd = int(np.count_nonzero(np.triu(C % wiring.granularity, 1)))
    if odd:
        notes.append(
            f"{wiring.kind}: {odd} pod pair(s) with an odd link count realized one link short "
            f"(links come in coupled pairs, granularity {wiring.granularity})"
        )
    tcur = None
    if cur is not None and len(cur):
        if check:
            problems = check_current(lanes, cur, groups=gids) or coupling_problems(wiring, cur)
            if problems:
                raise CurrentConfigError(
                    "current configuration does not fit the wiring: " + "; ".join(problems[:3])
                )
        tcur = to_transceiver_circuits(wiring, cur)
        tmodel = transceiver_model(wiring)
        h = tcur[:, 0]
        cross = tmodel.side[h, tcur[:, 2], tcur[:, 3]] != tmodel.side[h, tcur[:, 4], tcur[:, 5]]
        if not cross.all():
            notes.append(
                f"{int((~cross).sum()) // 2} current coupled pair(s) join two even or two odd "
                f"transceivers: not kept (the solvers pair transceiver 2s with 2s+1)"
            )
            tcur = tcur[cross]
    res = configure(
        C // wiring.granularity,
        transceiver_model(wiring),
        current=tcur,
        solver=solver,
        groups=gids,
        time_limit_s=time_limit_s,
        seed=seed,
        check=check,
    )
    return ToeResult(
        to_lane_circuits(wiring, res.circuits),
        solver,
        res.status,
        time.perf_counter() - t0,
        res.fallback,
        res.groups,
        tuple(notes) + res.notes,
    )
