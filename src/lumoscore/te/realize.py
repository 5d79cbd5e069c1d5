"""A pod-level logical topology realized on a physical wiring: the capacity TE routes over.

:func:`realize` configures the OCS layer for the logical topology ``C`` (``(H, P, P)``, one
matrix per OCS group) on the wiring of a cluster (:func:`lumoscore.topology.build_wiring`;
Slim Dual-link with circulators, the others without) with a ToE solver
(:func:`lumoscore.toe.configure`; ``mdmcf`` for Cross, Dual-link and Slim Dual-link, the ILP
for Uniform Wiring, whose configurations may realize fewer circuits than asked), and returns
the realized circuits per ordered pod pair and the LTCR (Cross Wiring Eq. 5). Slim
Dual-link realizes links in coupled pairs: an odd count loses one.

Examples
--------
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.te.design import full_mesh
>>> spec = ClusterSpec(pods=9, k_leaf=8, k_spine=8, tau=1, gpus_per_server=1, ocs_ports=9)
>>> C = full_mesh(9, spec.ocs_groups)
>>> realize(spec, C, "cross").ltcr, round(realize(spec, C, "uniform").ltcr, 3)
(1.0, 0.889)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError

__all__ = ["DEFAULT_SOLVERS", "Realization", "realize"]

#: The ToE solver each wiring is configured with by default.
DEFAULT_SOLVERS: dict[str, str] = {
    "cross": "mdmcf",
    "dual-link": "mdmcf",
    "uniform": "ilp",
    "slim-dual-link": "mdmcf",
}


@dataclass(frozen=True)
class Realization:
    """Realized circuits: ``circuits[i, j]`` between every ordered pod pair (summed over the
    OCS groups), the LTCR of the realization, and the solver's time."""

    circuits: NDArray[np.int64]
    ltcr: float
    solve_s: float


def realize(
    spec: Any, logical: Any, wiring: str, *, solver: str | None = None, spread: bool = True
) -> Realization:
    """Configure ``logical`` (``(H, P, P)`` circuits per OCS group) on ``spec``'s ``wiring``
    (module docstring).

    ``spread`` (Uniform Wiring only): solve OCS group ``h`` with the pod labels rotated by
    ``h``, so that the circuits an optimal configuration cannot realize fall on different
    pods in different groups. Any relabelling of the pods is a valid configuration of the
    same OCSes (an OCS joins any two of its ports), and the ILP realizes as many circuits
    either way; without it the solver breaks ties alike in every group and drops the same
    pod pairs everywhere (a 9-pod full mesh then takes 3 of 8 circuits from one pod
    instead of 1 of 9 from each).
    """
    from lumoscore.toe import configure
    from lumoscore.toe.metrics import ltcr
    from lumoscore.topology import build_wiring
    from lumoscore.topology.wiring import wiring_kind

    C = np.asarray(logical, dtype=np.int64)
    H, P = spec.ocs_groups, spec.pods
    if C.shape != (H, P, P):
        raise ConfigError(
            f"logical topology: shape must be (groups, pods, pods) = {(H, P, P)}, got {C.shape}"
        )
    kind = wiring_kind(wiring)
    shift = np.arange(H) if spread and kind == "uniform" else np.zeros(H, np.int64)
    pods = np.arange(P)
    # group h solves C'[h][a, b] = C[h][a - h, b - h] (pods relabelled i -> i + h)
    C_rot = np.stack([C[h][np.ix_((pods - d) % P, (pods - d) % P)] for h, d in enumerate(shift)])
    # Slim Dual-link exists only with circulators; the others are realized without
    phys = build_wiring(spec, kind, circulators=kind == "slim-dual-link")
    res = configure(C_rot, phys, solver=solver or DEFAULT_SOLVERS[kind])
    c = np.asarray(res.circuits, dtype=np.int64).reshape(-1, 6).copy()
    back = shift[c[:, 0]]
    c[:, 2] = (c[:, 2] - back) % P
    c[:, 4] = (c[:, 4] - back) % P
    count = np.bincount(c[:, 2] * P + c[:, 4], minlength=P * P).reshape(P, P)
    return Realization(count, float(ltcr(C, c)), float(getattr(res, "time_s", 0.0)))
