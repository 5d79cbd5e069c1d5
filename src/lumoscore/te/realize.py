"""A pod-level logical topology realized on a physical wiring: the capacity TE routes over.

:func:`realize` configures the OCS layer for the logical topology ``C`` (``(H, P, P)``, one
matrix per OCS group) on the wiring of a cluster (:func:`lumoscore.topology.build_wiring`)
with a ToE solver (:func:`lumoscore.toe.configure`; ``mdmcf`` for Cross and dual-link, the ILP
for Uniform Wiring, whose configurations may realize fewer circuits than asked), and returns
the realized circuits per ordered pod pair and the LTCR (Cross Wiring Eq. 5).

Examples
--------
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.te.matrices import full_mesh
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
DEFAULT_SOLVERS: dict[str, str] = {"cross": "mdmcf", "dual-link": "mdmcf", "uniform": "ilp"}


@dataclass(frozen=True)
class Realization:
    """Realized circuits: ``circuits[i, j]`` between every ordered pod pair (summed over the
    OCS groups), the LTCR of the realization, and the solver's time."""

    circuits: NDArray[np.int64]
    ltcr: float
    solve_s: float


def realize(spec: Any, logical: Any, wiring: str, *, solver: str | None = None) -> Realization:
    """Configure ``logical`` (``(H, P, P)`` circuits per OCS group) on ``spec``'s ``wiring``
    (module docstring)."""
    from lumoscore.toe import configure
    from lumoscore.toe.metrics import ltcr
    from lumoscore.topology import build_wiring

    C = np.asarray(logical, dtype=np.int64)
    if C.shape != (spec.ocs_groups, spec.pods, spec.pods):
        raise ConfigError(
            f"logical topology: shape must be (groups, pods, pods) = "
            f"{(spec.ocs_groups, spec.pods, spec.pods)}, got {C.shape}"
        )
    kind = "cross" if wiring == "interleaved" else wiring
    if kind not in DEFAULT_SOLVERS:
        raise ConfigError(f"wiring {wiring!r} unknown; allowed: {', '.join(DEFAULT_SOLVERS)}")
    res = configure(C, build_wiring(spec, kind), solver=solver or DEFAULT_SOLVERS[kind])
    c = np.asarray(res.circuits, dtype=np.int64).reshape(-1, 6)
    P = spec.pods
    count = np.bincount(c[:, 2] * P + c[:, 4], minlength=P * P).reshape(P, P)
    return Realization(count, float(ltcr(C, res.circuits)), float(getattr(res, "time_s", 0.0)))
