"""LumosCore: design, topology engineering, placement and simulation of OCS-core GPU clusters.

The package is organised one way, from configuration to report::

    hardware -> topology (cluster model, wiring, logical topology) -> decompose -> toe
    workload -> traffic -> placement -> fabric -> sim -> experiments -> cli

Every sub-package works on plain data (NumPy arrays, frozen dataclasses, pydantic models) and
has no global state.
"""

from lumoscore.errors import (
    ConfigError,
    InfeasibleError,
    LumosError,
    PreconditionError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "InfeasibleError",
    "LumosError",
    "PreconditionError",
    "__version__",
]
