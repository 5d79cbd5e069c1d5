"""Workload level (LumosCore Eq. 9) and arrival-rate calibration.

The paper defines the workload level of a cluster of ``G`` GPUs as

.. math:: \\text{level} = \\sum_k k \\lambda_k T_k / G,

``k`` GPUs per job, ``lambda_k`` the arrival rate of such jobs and ``T_k`` their mean run time.
With ``lambda_k = p_k / beta`` (size ``k`` has probability ``p_k``, mean inter-arrival time
``beta``) this is ``level = E[gpus * duration] / (beta * G)``: linear in the arrival rate, so
``beta = E[gpus * duration] / (level * G)`` in closed form.

For a trace the rate is measured as ``(n - 1) / (last arrival - first arrival)`` and
``E[gpus * duration]`` as the mean over its jobs; for a preset both come from its
distributions (:meth:`~lumoscore.workload.presets.Preset.mean_gpu_seconds`).

Examples
--------
>>> round(workload_level("lumoscore-paper", 4096, beta_s=2000), 3)
0.851
>>> round(calibrate_beta("lumoscore-paper", 0.655, 4096), 1)
2597.3
"""

from __future__ import annotations

import math

import numpy as np

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.limits import MAX_TIME_S
from lumoscore.workload.presets import get_preset
from lumoscore.workload.trace import Trace, TraceMeta

__all__ = [
    "arrival_rate_per_s",
    "calibrate_beta",
    "mean_gpu_seconds",
    "with_level",
    "workload_level",
]


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ConfigError(f"{name} must be a number > 0, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _cluster(trace: Trace | None, cluster_gpus: int | None) -> int:
    if cluster_gpus is None and trace is not None:
        cluster_gpus = trace.meta.cluster_gpus
    if cluster_gpus is None:
        raise ConfigError("cluster_gpus is needed (the trace does not record it)")
    if isinstance(cluster_gpus, bool) or int(cluster_gpus) != cluster_gpus or cluster_gpus < 1:
        raise ConfigError(f"cluster_gpus must be an integer >= 1, got {cluster_gpus!r}")
    return int(cluster_gpus)


def arrival_rate_per_s(trace: Trace) -> float:
    """Measured arrival rate ``(n - 1) / (last arrival - first arrival)``.

    Raises
    ------
    PreconditionError
        With fewer than two jobs or all arrivals at the same time.

    Examples
    --------
    >>> from lumoscore.workload.presets import generate_trace
    >>> t = generate_trace("tpuv4", 3, beta_s=10.0, seed=2)
    >>> arrival_rate_per_s(t) == 2 / float(t.arrival_s[-1])
    True
    """
    n = len(trace)
    span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if n else 0.0
    if n < 2 or span <= 0:
        raise PreconditionError(
            f"arrival rate needs at least two jobs with distinct arrivals, got {n} job(s), "
            f"span {span} s"
        )
    return (n - 1) / span


def mean_gpu_seconds(trace: Trace) -> float:
    """Mean ``gpus * duration_s`` over the jobs of ``trace``.

    Examples
    --------
    >>> from lumoscore.workload.presets import generate_trace
    >>> t = generate_trace("lumoscore-paper", 4, seed=0)
    >>> mean_gpu_seconds(t) == float(np.mean(t.gpus * t.duration_s))
    True
    """
    if len(trace) == 0:
        raise PreconditionError("mean GPU-seconds of an empty trace")
    return float(np.mean(trace.gpus * trace.duration_s))


def workload_level(
    source: Trace | str,
    cluster_gpus: int | None = None,
    *,
    beta_s: float | None = None,
) -> float:
    """Workload level (LumosCore Eq. 9) of a trace or of a preset.

    Parameters
    ----------
    source : Trace or str
        A trace (measured level) or a preset name (expected level).
    cluster_gpus : int, optional
        GPUs of the cluster; for a trace, default ``trace.meta.cluster_gpus``.
        For a preset, default 4096 (it also caps the preset's sizes).
    beta_s : float, optional
        Mean inter-arrival time. For a trace it replaces the measured rate; for a preset the
        default is the preset's ``default_beta_s``.

    Returns
    -------
    float
        ``E[gpus * duration] / (beta * cluster_gpus)``.

    Examples
    --------
    >>> from lumoscore.workload.presets import generate_trace
    >>> t = generate_trace("lumoscore-paper", 50, seed=0, load=0.5)
    >>> round(workload_level(t), 9)
    0.5
    >>> round(workload_level("vclos", 512), 3), round(workload_level("vclos", 512, beta_s=120), 1)
    (0.9, 39.6)
    """
    if isinstance(source, Trace):
        gpus = _cluster(source, cluster_gpus)
        rate = arrival_rate_per_s(source) if beta_s is None else 1.0 / _positive("beta_s", beta_s)
        return rate * mean_gpu_seconds(source) / gpus
    preset = get_preset(source)
    gpus = _cluster(None, 4096 if cluster_gpus is None else cluster_gpus)
    beta = preset.default_beta_for(gpus) if beta_s is None else _positive("beta_s", beta_s)
    return preset.mean_gpu_seconds(gpus) / (beta * gpus)


def calibrate_beta(source: Trace | str, level: float, cluster_gpus: int | None = None) -> float:
    """Mean inter-arrival time that gives workload level ``level`` (closed form).

    Parameters
    ----------
    source : Trace or str
        A preset name (uses its expected ``E[gpus * duration]``) or a trace (uses the mean
        over its jobs, so :func:`with_level` with this ``beta`` hits ``level`` exactly).
    level : float
        Target level (> 0).
    cluster_gpus : int, optional
        As in :func:`workload_level`.

    Examples
    --------
    >>> b = calibrate_beta("tpuv4", 0.7, 8192)
    >>> round(workload_level("tpuv4", 8192, beta_s=b), 12)
    0.7
    """
    level = _positive("level", level)
    if isinstance(source, Trace):
        gpus = _cluster(source, cluster_gpus)
        return mean_gpu_seconds(source) / (level * gpus)
    preset = get_preset(source)
    gpus = _cluster(None, 4096 if cluster_gpus is None else cluster_gpus)
    return preset.mean_gpu_seconds(gpus) / (level * gpus)


def with_level(
    trace: Trace, level: float, cluster_gpus: int | None = None, *, name: str = "level"
) -> Trace:
    """Rescale the arrival times (around the first arrival) so the trace's measured level is
    ``level``; run times and sizes are unchanged.

    A ``level`` so low that the last arrival would be later than
    :data:`~lumoscore.limits.MAX_TIME_S` is a ConfigError naming ``name`` (the CLI passes
    ``--load``) and the lowest level allowed.

    Examples
    --------
    >>> from lumoscore.workload.presets import generate_trace
    >>> t = with_level(generate_trace("lumoscore-paper", 30, seed=4), 0.9)
    >>> round(workload_level(t), 9), t.meta.load
    (0.9, 0.9)
    """
    level = _positive(name, level)
    gpus = _cluster(trace, cluster_gpus)
    measured = workload_level(trace, gpus)
    factor = measured / level
    first = trace.arrival_s[0]
    with np.errstate(over="ignore"):  # (checked below)
        arrival = first + (trace.arrival_s - first) * factor
    if not arrival[-1] <= MAX_TIME_S:
        span = float(trace.arrival_s[-1] - first)
        lowest = span * measured / (MAX_TIME_S - float(first)) * 1.01  # (1 % inside)
        to = f"to {arrival[-1]:.3g} s" if np.isfinite(arrival[-1]) else "past the float range"
        raise ConfigError(
            f"{name}={level!r} moves the last arrival {to}, beyond the limit of "
            f"{MAX_TIME_S:.0e} s (MAX_TIME_S); allowed: {name} >= {lowest:.3g} for this trace"
        )
    old = trace.meta
    meta = TraceMeta(
        preset=old.preset,
        seed=old.seed,
        beta_s=1.0 / arrival_rate_per_s(trace) * factor,
        load=level,
        cluster_gpus=gpus,
        source=old.source,
    )
    return trace.replace_columns(meta, arrival_s=arrival)
