"""Workloads: the LLM training job model, trace presets, trace files and calibration."""

from lumoscore.workload.job import (
    COLLECTIVES,
    MODEL_SHARES,
    REFERENCE_PORT_GBPS,
    ExposedShares,
    Job,
)

__all__ = ["COLLECTIVES", "MODEL_SHARES", "REFERENCE_PORT_GBPS", "ExposedShares", "Job"]
