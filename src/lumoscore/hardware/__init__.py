"""Hardware facts and cluster-size formulas: switch chips, port speeds, OCS port counts."""

from lumoscore.hardware.sizing import (
    ARCHITECTURES,
    DEFAULT_CHIPS_TBPS,
    DEFAULT_OCS_PORTS,
    DEFAULT_PORT_SPEEDS_GBPS,
    STANDARD_PORT_SPEEDS_GBPS,
    Reach,
    SizingRow,
    clos_max_gpus,
    lumoscore_max_gpus,
    max_gpus,
    radix,
    reach,
    sizing_table,
)

__all__ = [
    "ARCHITECTURES",
    "DEFAULT_CHIPS_TBPS",
    "DEFAULT_OCS_PORTS",
    "DEFAULT_PORT_SPEEDS_GBPS",
    "STANDARD_PORT_SPEEDS_GBPS",
    "Reach",
    "SizingRow",
    "clos_max_gpus",
    "lumoscore_max_gpus",
    "max_gpus",
    "radix",
    "reach",
    "sizing_table",
]
