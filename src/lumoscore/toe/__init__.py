"""Topology engineering: OCS configurations with minimal rewiring.

Cross Wiring §2.2-§6 and Appendix D; LumosCore §4.3 and Appendix A.8. Given the wiring of the
OCS layer, a logical topology per OCS group and the configuration deployed now, compute the
new port-level configuration (circuits), with

* :func:`configure` -- one front door for the solvers ``mdmcf`` (merge-decomposition MCF),
  ``mcf`` (integer decomposition, not rewiring-aware), ``ilp`` (CP-SAT), ``bvn`` and
  ``helios`` (Uniform-Wiring heuristics);
* :func:`evaluate` -- LTCR, MRAR and rewired circuits; :func:`verify_configuration` -- an
  independent check of constraints (1)-(4);
* :func:`staged_plan` -- the staged reconfiguration of LumosCore Appendix A.8;
* :func:`read_config` / :func:`write_config` / :func:`load_demand` -- files.

Examples
--------
>>> import numpy as np
>>> from lumoscore.topology import ClusterSpec, build_wiring
>>> spec = ClusterSpec(pods=4, k_leaf=1, k_spine=4, tau=1, gpus_per_server=1, ocs_ports=4)
>>> w = build_wiring(spec, "cross")
>>> C = random_demand(4, 4, 0)
>>> res = configure(C, w)
>>> evaluate(res.circuits, C).ltcr, verify_configuration(w, res.circuits, C)
(1.0, [])
"""

from lumoscore.toe.errors import CurrentConfigError, DemandError, WiringMismatchError
from lumoscore.toe.instances import random_demand, random_demands
from lumoscore.toe.io import load_demand, read_config, write_config
from lumoscore.toe.mdmcf import merge_decompose
from lumoscore.toe.metrics import ToeMetrics, evaluate, ltcr, mrar, rewired_circuits
from lumoscore.toe.model import PortModel, assemble_circuits
from lumoscore.toe.solve import SOLVERS, ToeResult, configure
from lumoscore.toe.staging import StagedPlan, circuit_loss, staged_plan
from lumoscore.toe.verify import verify_configuration

__all__ = [
    "SOLVERS",
    "CurrentConfigError",
    "DemandError",
    "PortModel",
    "StagedPlan",
    "ToeMetrics",
    "ToeResult",
    "WiringMismatchError",
    "assemble_circuits",
    "circuit_loss",
    "configure",
    "evaluate",
    "load_demand",
    "ltcr",
    "merge_decompose",
    "mrar",
    "random_demand",
    "random_demands",
    "read_config",
    "rewired_circuits",
    "staged_plan",
    "verify_configuration",
    "write_config",
]
