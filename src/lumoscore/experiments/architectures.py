"""The architectures the LumosCore paper compares: experiment-level lists.

The fabric registry (:data:`lumoscore.fabric.presets.FABRICS`) says how to build every named
architecture; which of them a paper's evaluation compares, and in what order its tables list
them, is data of the experiments, kept here. Adding an architecture to the registry changes no
paper reproduction; adding one to :data:`PAPER_ARCHITECTURES` changes the default experiment
(``lumos run``), the paper presets and the README table.

Examples
--------
>>> len(PAPER_ARCHITECTURES), PAPER_ARCHITECTURES[0]
(7, 'best')
>>> PAPER_CLOS
('clos-51.2T-3tier', 'clos-25.6T-3tier', 'clos-25.6T-4tier')
"""

from __future__ import annotations

from lumoscore.fabric.clos import ClosFabric
from lumoscore.fabric.lumos import LumosCoreFabric
from lumoscore.fabric.presets import architecture

__all__ = ["PAPER_ARCHITECTURES", "PAPER_CLOS", "PAPER_LUMOSCORE"]

#: The seven architectures of the LumosCore paper's comparison (§6.4, Fig. 8, Table 4), in the
#: order its tables list them: the ideal switch, three Clos networks, three LumosCore clusters.
PAPER_ARCHITECTURES: tuple[str, ...] = (
    "best",
    "clos-51.2T-3tier",
    "clos-25.6T-3tier",
    "clos-25.6T-4tier",
    "lumoscore-51.2T-tau2",
    "lumoscore-51.2T-tau1",
    "lumoscore-25.6T-tau1",
)
#: The paper's Clos architectures (rail-optimized wiring and probing routing apply to these).
PAPER_CLOS: tuple[str, ...] = tuple(
    a for a in PAPER_ARCHITECTURES if architecture(a)[1].fabric_class is ClosFabric
)
#: The paper's LumosCore architectures.
PAPER_LUMOSCORE: tuple[str, ...] = tuple(
    a for a in PAPER_ARCHITECTURES if architecture(a)[1].fabric_class is LumosCoreFabric
)
