"""Workload level (LumosCore Eq. 9) and arrival-rate calibration."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, PreconditionError
from lumoscore.workload import (
    PRESETS,
    Trace,
    calibrate_beta,
    generate_trace,
    get_preset,
    with_level,
    workload_level,
)


def _eq9(trace: Trace, cluster_gpus: int) -> float:
    """Eq. 9 literally: sum over sizes k of k * lambda_k * T_k / GPUs."""
    span = trace.arrival_s[-1] - trace.arrival_s[0]
    rate = (len(trace) - 1) / span
    total = 0.0
    for k in np.unique(trace.gpus):
        mask = trace.gpus == k
        lam_k = rate * mask.mean()
        t_k = trace.duration_s[mask].mean()
        total += k * lam_k * t_k
    return total / cluster_gpus


def _level_standard_error(trace: Trace, cluster_gpus: int) -> float:
    """Delta-method standard error of the measured level (rate and mean GPU-seconds)."""
    gs = trace.gpus * trace.duration_s
    n = len(trace)
    rel = math.sqrt(np.var(gs) / (n * np.mean(gs) ** 2) + 1.0 / n)
    return workload_level(trace, cluster_gpus) * rel


def test_measured_level_is_eq9() -> None:
    t = generate_trace("lumoscore-paper", 1000, seed=3)
    assert workload_level(t) == pytest.approx(_eq9(t, 4096), rel=1e-12)
    assert workload_level(t, 8192) == pytest.approx(_eq9(t, 8192), rel=1e-12)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("level", [0.3, 0.655, 1.2])
def test_load_sample_basis_hits_level_exactly(preset: str, level: float) -> None:
    t = generate_trace(preset, 1000, seed=8, load=level, cluster_gpus=2048)
    assert workload_level(t) == pytest.approx(level, rel=1e-9)
    assert _eq9(t, 2048) == pytest.approx(level, rel=1e-9)
    assert t.meta.load == level
    # The arrivals are the seed's Poisson process rescaled: same jobs as with any beta.
    u = generate_trace(preset, 1000, seed=8, beta_s=1.0, cluster_gpus=2048)
    assert np.allclose(t.arrival_s, u.arrival_s * t.meta.beta_s, rtol=1e-12)
    assert np.array_equal(t.duration_s, u.duration_s)


@pytest.mark.parametrize(("preset", "n"), [("lumoscore-paper", 200_000), ("vclos", 100_000)])
def test_load_expected_basis_long_trace_converges(preset: str, n: int) -> None:
    level = 0.655
    t = generate_trace(preset, n, seed=21, load=level, load_basis="expected", cluster_gpus=4096)
    assert t.meta.beta_s == pytest.approx(calibrate_beta(preset, level, 4096))
    measured = workload_level(t)
    se = _level_standard_error(t, 4096)
    assert abs(measured - level) <= 4 * se, (measured, se)
    if preset == "vclos":  # light tail: the estimate is tight
        assert measured == pytest.approx(level, rel=0.03)


def test_preset_mean_gpu_seconds_matches_long_sample() -> None:
    # vclos run times are clipped, so the sample mean has a small, reliable standard error.
    spec = get_preset("vclos")
    t = generate_trace("vclos", 100_000, seed=4, cluster_gpus=4096)
    gs = t.gpus * t.duration_s
    se = np.std(gs) / math.sqrt(len(gs))
    assert abs(np.mean(gs) - spec.mean_gpu_seconds(4096)) <= 4 * se


@settings(max_examples=40, deadline=None)
@given(
    preset=st.sampled_from(sorted(PRESETS)),
    level=st.floats(0.01, 5.0),
    beta=st.floats(1.0, 1e5),
    cluster_gpus=st.integers(8, 65_536),
)
def test_calibrate_beta_closed_form_both_ways(
    preset: str, level: float, beta: float, cluster_gpus: int
) -> None:
    b = calibrate_beta(preset, level, cluster_gpus)
    assert workload_level(preset, cluster_gpus, beta_s=b) == pytest.approx(level, rel=1e-12)
    lv = workload_level(preset, cluster_gpus, beta_s=beta)
    assert calibrate_beta(preset, lv, cluster_gpus) == pytest.approx(beta, rel=1e-12)
    # Level is linear in the arrival rate 1/beta.
    assert workload_level(preset, cluster_gpus, beta_s=2 * beta) == pytest.approx(lv / 2)


def test_paper_default_expected_level() -> None:
    # E[gpus] * E[duration] / (2000 s * 4096): documented in docs/workload.md.
    lv = workload_level("lumoscore-paper", 4096, beta_s=2000.0)
    spec = get_preset("lumoscore-paper")
    expected = spec.size_mix_for(4096).mean_gpus * spec.duration.mean_s() / (2000.0 * 4096)
    assert lv == pytest.approx(expected)
    assert 0.8 < lv < 0.9


def test_trace_calibration_and_with_level() -> None:
    t = generate_trace("tpuv4", 500, seed=2)
    b = calibrate_beta(t, 0.7)
    assert workload_level(t, beta_s=b) == pytest.approx(0.7)
    r = with_level(t, 0.7)
    assert workload_level(r) == pytest.approx(0.7)
    assert r.meta.beta_s == pytest.approx(b)
    assert r.arrival_s[0] == t.arrival_s[0]
    assert np.array_equal(r.gpus, t.gpus) and np.array_equal(r.duration_s, t.duration_s)


def test_errors() -> None:
    t = generate_trace("tpuv4", 1, seed=2)
    with pytest.raises(PreconditionError, match="two jobs"):
        workload_level(t)
    t2 = generate_trace("tpuv4", 5, seed=2)
    with pytest.raises(ConfigError, match="level"):
        calibrate_beta(t2, 0.0)
    with pytest.raises(ConfigError, match="unknown preset"):
        workload_level("x", 4096)
    bare = Trace(t2.columns)
    with pytest.raises(ConfigError, match="cluster_gpus"):
        workload_level(bare)
    with pytest.raises(ConfigError, match="beta_s"):
        workload_level(t2, beta_s=-5)


@pytest.mark.parametrize("basis", ["sample", "expected"])
def test_a_level_too_high_to_represent_means_every_job_at_once(basis: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no overflow warning)
        trace = generate_trace(
            "lumoscore-published", 5, seed=1, cluster_gpus=512, load=1e308, load_basis=basis
        )
    assert [j.arrival_s for j in trace.jobs] == [0.0] * 5
