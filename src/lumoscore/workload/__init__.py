"""Workloads: the LLM training job model, trace presets, trace files and calibration."""

from lumoscore.workload.distributions import (
    HELIOS_DURATION,
    PAPER_SIZE_MIX,
    TPUV4_SIZE_MIX,
    ShiftedLogNormal,
    SizeMix,
)
from lumoscore.workload.errors import TraceFormatError
from lumoscore.workload.importers import (
    ResultsLog,
    format_joblist,
    format_results_log,
    import_helios,
    parse_joblist,
    read_joblist,
    read_results_log,
    write_joblist,
    write_results_log,
)
from lumoscore.workload.job import (
    COLLECTIVES,
    KNOWN_MODEL_SHARES,
    MODEL_SHARES,
    REFERENCE_PORT_GBPS,
    VCLOS_MODEL_SHARES,
    ExposedShares,
    Job,
)
from lumoscore.workload.load import (
    arrival_rate_per_s,
    calibrate_beta,
    with_level,
    workload_level,
)
from lumoscore.workload.presets import PRESETS, Preset, generate_trace, get_preset
from lumoscore.workload.trace import TRACE_COLUMNS, Trace, TraceMeta, fitting_jobs
from lumoscore.workload.tracefile import read_trace, write_trace

__all__ = [
    "COLLECTIVES",
    "HELIOS_DURATION",
    "KNOWN_MODEL_SHARES",
    "MODEL_SHARES",
    "PAPER_SIZE_MIX",
    "PRESETS",
    "REFERENCE_PORT_GBPS",
    "TPUV4_SIZE_MIX",
    "TRACE_COLUMNS",
    "VCLOS_MODEL_SHARES",
    "ExposedShares",
    "Job",
    "Preset",
    "ResultsLog",
    "ShiftedLogNormal",
    "SizeMix",
    "Trace",
    "TraceFormatError",
    "TraceMeta",
    "arrival_rate_per_s",
    "calibrate_beta",
    "fitting_jobs",
    "format_joblist",
    "format_results_log",
    "generate_trace",
    "get_preset",
    "import_helios",
    "parse_joblist",
    "read_joblist",
    "read_results_log",
    "read_trace",
    "with_level",
    "workload_level",
    "write_joblist",
    "write_results_log",
    "write_trace",
]
