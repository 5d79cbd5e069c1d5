"""Experiments: experiment and sweep files, the result store and the sweep runners.

* :mod:`lumoscore.experiments.config`: :class:`RunConfig`, :class:`ExperimentConfig`,
  :func:`load_experiment`, :func:`expand`, :data:`DEFAULT_EXPERIMENT`;
* :mod:`lumoscore.experiments.store`: :class:`ResultStore` (one Parquet file per run plus an
  index, keyed by a hash of the resolved run config);
* :mod:`lumoscore.experiments.runner`: :func:`run_one`, :func:`run_sweep` (local process pool
  or Dask).
"""

from __future__ import annotations

from lumoscore.experiments.config import (
    DEFAULT_EXPERIMENT,
    ExperimentConfig,
    FailureConfig,
    RunConfig,
    TraceConfig,
    expand,
    load_experiment,
)
from lumoscore.experiments.runner import SweepError, run_one, run_sweep
from lumoscore.experiments.store import ResultStore, StoreError, run_key

__all__ = [
    "DEFAULT_EXPERIMENT",
    "ExperimentConfig",
    "FailureConfig",
    "ResultStore",
    "RunConfig",
    "StoreError",
    "SweepError",
    "TraceConfig",
    "expand",
    "load_experiment",
    "run_key",
    "run_one",
    "run_sweep",
]
