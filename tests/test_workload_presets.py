"""Trace presets: size and run-time distributions, parallelism rule, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from lumoscore.errors import ConfigError
from lumoscore.workload import (
    HELIOS_DURATION,
    MODEL_SHARES,
    PAPER_SIZE_MIX,
    PRESETS,
    TPUV4_SIZE_MIX,
    Trace,
    generate_trace,
    get_preset,
    workload_level,
)
from lumoscore.workload.distributions import (
    TPUV4_CUMULATIVE,
    ShiftedLogNormal,
    SizeMix,
    round_down_pow2,
)
from lumoscore.workload.presets import EP_CHOICES_GPUS, PP_CHOICES
from lumoscore.workload.trace import columns_from_frame

#: Significance bound of every goodness-of-fit test below: a correct generator fails one of
#: them with probability 0.001 for a random seed; the seeds are fixed, so the tests are stable.
P_MIN = 0.001


def _chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = probs / probs.sum() * counts.sum()
    assert np.all(expected >= 5), "merge classes: expected counts must be >= 5"
    return float(stats.chisquare(counts, expected).pvalue)


def _size_counts(gpus: np.ndarray, mix: SizeMix, merge_from: int) -> tuple[np.ndarray, np.ndarray]:
    """Observed counts and class probabilities, classes >= merge_from merged."""
    sizes = np.asarray(mix.sizes)
    probs = np.asarray(mix.probs)
    keep = sizes < merge_from
    counts = np.array([np.sum(gpus == s) for s in sizes[keep]] + [np.sum(gpus >= merge_from)])
    p = np.concatenate([probs[keep], [probs[~keep].sum()]])
    return counts, p


# ---- the published facts behind the mixes ----------------------------------------------------


def test_paper_mix_reproduces_tpuv4_cumulative_shares() -> None:
    cdf = dict(zip(PAPER_SIZE_MIX.sizes, np.cumsum(PAPER_SIZE_MIX.probs), strict=True))
    for size, cum in TPUV4_CUMULATIVE.items():
        # A size that is not a power of two is rounded down, so its share lands in the class
        # below: the cumulative share at a power of two includes the next non-power.
        pow2 = int(round_down_pow2(size))
        if pow2 == size:
            following = [s for s in TPUV4_CUMULATIVE if s > size and round_down_pow2(s) == size]
            expected = TPUV4_CUMULATIVE[following[-1]] if following else cum
            assert cdf[size] == pytest.approx(expected, abs=1e-12)
    # The first class (<= 32) keeps its 0.29 and is split 13.9 : 6.4 : 8.9 over 8/16/32.
    assert sum(PAPER_SIZE_MIX.probs[:3]) == pytest.approx(0.29)
    assert PAPER_SIZE_MIX.probs[0] / PAPER_SIZE_MIX.probs[2] == pytest.approx(13.9 / 8.9)
    assert PAPER_SIZE_MIX.sizes == (8, 16, 32, 64, 128, 256, 512, 1024, 2048)


def test_tpuv4_share_mix() -> None:
    p = dict(zip(TPUV4_SIZE_MIX.sizes, TPUV4_SIZE_MIX.probs, strict=True))
    assert p[8] == pytest.approx((0.021 + 0.004 + 0.067 + 0.047) / 0.975)
    assert p[2048] == pytest.approx((0.017 + 0.061) / 0.975)
    assert sum(p.values()) == pytest.approx(1.0)


def test_duration_fit_hits_published_quantiles_exactly() -> None:
    q = HELIOS_DURATION.quantile([0.0, 0.5, 0.99])
    assert q[0] == pytest.approx(600.0)
    assert q[1] == pytest.approx(2100.0, rel=1e-12)
    assert q[2] == pytest.approx(436_000.0, rel=1e-12)
    assert float(HELIOS_DURATION.cdf(2100.0)) == pytest.approx(0.5)


@pytest.mark.parametrize(
    "dist",
    [HELIOS_DURATION, HELIOS_DURATION.clipped(1000.0, 100_000.0), HELIOS_DURATION.clipped(50, 700)],
)
def test_duration_mean_closed_form_matches_integral(dist: ShiftedLogNormal) -> None:
    # E[X] = integral of the quantile function over (0, 1).
    numeric, _ = integrate.quad(
        lambda p: float(dist.quantile(p)), 0, 1, limit=500, points=[0.5, 0.9, 0.99, 0.999]
    )
    assert dist.mean_s() == pytest.approx(numeric, rel=1e-6)


# ---- the lumoscore-paper preset -------------------------------------------------------------


@pytest.fixture(scope="module")
def paper_1000() -> Trace:
    return generate_trace("lumoscore-paper", 1000, seed=2024, cluster_gpus=4096)


def test_paper_trace_size_cdf_chi_square(paper_1000: Trace) -> None:
    counts, probs = _size_counts(paper_1000.gpus, PAPER_SIZE_MIX, merge_from=1024)
    assert counts.sum() == 1000
    p = _chi_square(counts, probs)
    assert p > P_MIN, f"size mix chi-square p={p:.2e}"
    level = workload_level(paper_1000)
    print(f"1000-job lumoscore-paper trace, seed 2024: workload level {level:.3f} (beta 2000 s)")
    assert math.isfinite(level) and level > 0


def test_paper_trace_duration_quantiles(paper_1000: Trace) -> None:
    d = np.sort(paper_1000.duration_s)
    n = d.size
    assert d[0] >= 600.0
    # Distribution-free 99.9 % confidence interval of the p-quantile from order statistics:
    # the published quantile must lie between d[lo] and d[hi].
    for p, published in ((0.5, 2100.0), (0.99, 436_000.0)):
        lo = int(stats.binom.ppf(0.0005, n, p)) - 1
        hi = int(stats.binom.ppf(0.9995, n, p))
        assert d[lo] <= published <= d[min(hi, n - 1)], (p, d[lo], d[hi])
    # Whole distribution: Kolmogorov-Smirnov against the fitted CDF.
    ks = stats.kstest(d, lambda x: HELIOS_DURATION.cdf(x))
    assert ks.pvalue > P_MIN
    # Stated tolerance for the published figures: median within 25 %, p99 within a factor 2.5
    # (about 2.5 and 3 standard errors of the sample quantiles at n = 1000).
    assert np.median(d) == pytest.approx(2100.0, rel=0.25)
    assert 436_000 / 2.5 <= np.quantile(d, 0.99) <= 436_000 * 2.5


def test_paper_models_uniform_and_shares(paper_1000: Trace) -> None:
    names = list(MODEL_SHARES)
    counts = np.array([np.sum(paper_1000.model == m) for m in names])
    assert _chi_square(counts, np.ones(len(names))) > P_MIN
    for job in paper_1000.jobs[:50]:
        assert job.shares == MODEL_SHARES[job.model]
    assert set(paper_1000.iterations.tolist()) == {10}
    assert set(paper_1000.collective.tolist()) == {"ring"}


def test_paper_parallelism_rule(paper_1000: Trace) -> None:
    t = paper_1000
    servers = t.gpus // 8
    assert np.all(t.tp == 8)
    assert np.all(t.gpus == t.tp * t.pp * t.dp)
    assert np.all(t.dp == servers // t.pp)
    # PP = min(servers, c), c uniform over PP_CHOICES: for big jobs every c is possible.
    assert np.all(np.isin(t.pp, PP_CHOICES)) and np.all(t.pp <= servers)
    big = servers >= max(PP_CHOICES)
    counts = np.array([np.sum(t.pp[big] == c) for c in PP_CHOICES])
    assert _chi_square(counts, np.ones(len(PP_CHOICES))) > P_MIN
    # EP = min(gpus, c) GPUs, c uniform over {8, 16, 32}.
    assert np.all(t.ep <= t.gpus) and np.all(np.isin(t.ep, EP_CHOICES_GPUS))
    assert np.all(t.ep[t.gpus == 8] == 8)
    wide = t.gpus >= 32
    counts = np.array([np.sum(t.ep[wide] == c) for c in EP_CHOICES_GPUS])
    assert _chi_square(counts, np.ones(3)) > P_MIN
    # EP <= 8 GPUs means no inter-server all-to-all.
    for job in t.jobs:
        assert (job.effective_shares.ep == 0.0) == (job.ep <= 8)


def test_generated_trace_passes_file_validation(paper_1000: Trace) -> None:
    cols = columns_from_frame(paper_1000.to_frame())
    assert Trace(cols, paper_1000.meta) == paper_1000
    assert np.all(np.diff(paper_1000.arrival_s) >= 0) and paper_1000.arrival_s[0] == 0.0
    assert paper_1000.meta.preset == "lumoscore-paper" and paper_1000.meta.seed == 2024


def test_poisson_gaps_are_exponential_with_mean_beta() -> None:
    t = generate_trace("lumoscore-paper", 4000, seed=7, beta_s=1800.0)
    gaps = np.diff(t.arrival_s)
    assert stats.kstest(gaps, "expon", args=(0, 1800.0)).pvalue > P_MIN


# ---- determinism ---------------------------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_same_seed_same_trace_different_seed_different(preset: str) -> None:
    a = generate_trace(preset, 300, seed=11)
    b = generate_trace(preset, 300, seed=11)
    c = generate_trace(preset, 300, seed=12)
    assert a == b
    assert not a.same_jobs(c)
    assert not np.array_equal(a.duration_s, c.duration_s)
    assert not np.array_equal(a.arrival_s, c.arrival_s)


@settings(max_examples=25, deadline=None)
@given(
    preset=st.sampled_from(sorted(PRESETS)),
    seed=st.integers(0, 2**32),
    cluster_gpus=st.integers(8, 20_000),
    n=st.integers(1, 60),
)
def test_invariants_for_any_seed_and_cluster(
    preset: str, seed: int, cluster_gpus: int, n: int
) -> None:
    t = generate_trace(preset, n, seed=seed, cluster_gpus=cluster_gpus)
    cap = int(round_down_pow2(cluster_gpus))
    assert len(t) == n
    assert np.all(t.gpus <= cap) and np.all(t.gpus >= get_preset(preset).size_mix.min_gpus)
    assert np.all(round_down_pow2(t.gpus) == t.gpus)
    assert np.all(t.gpus == t.tp * t.pp * t.dp)
    assert np.all(t.ep <= t.gpus) and np.all(t.gpus % t.ep == 0)
    assert np.all(t.duration_s >= float(get_preset(preset).duration.quantile(0.0)))
    assert t.meta.cluster_gpus == cluster_gpus


# ---- vclos and tpuv4 -----------------------------------------------------------------------


def test_vclos_preset() -> None:
    t = generate_trace("vclos", 3000, seed=5, cluster_gpus=2048)
    assert t.gpus.max() <= 512
    assert np.all((t.duration_s >= 1000.0) & (t.duration_s <= 100_000.0))
    assert np.all(t.pp == 1) and np.all(t.ep == 8) and np.all(t.dp == t.gpus // 8)
    names = ["halving-doubling", "ring", "all-to-all"]
    counts = np.array([np.sum(t.collective == c) for c in names])
    assert _chi_square(counts, np.array([0.5, 0.2, 0.3])) > P_MIN
    counts, probs = _size_counts(t.gpus, PAPER_SIZE_MIX.capped(512), merge_from=512)
    assert _chi_square(counts, probs) > P_MIN
    # Clipping puts the 1000 s floor at P(X < 1000) and the cap at P(X > 100000).
    p_low = float(HELIOS_DURATION.cdf(1000.0))
    assert np.mean(t.duration_s == 1000.0) == pytest.approx(p_low, abs=4 * math.sqrt(0.25 / 3000))
    assert t.meta.load == pytest.approx(0.9)


def test_tpuv4_preset_size_mix() -> None:
    t = generate_trace("tpuv4", 2000, seed=9, cluster_gpus=4096)
    counts, probs = _size_counts(t.gpus, TPUV4_SIZE_MIX, merge_from=1024)
    assert _chi_square(counts, probs) > P_MIN


def test_cap_moves_large_jobs_to_cluster_size() -> None:
    t = generate_trace("tpuv4", 2000, seed=1, cluster_gpus=1000)
    assert t.gpus.max() == 512
    share = TPUV4_SIZE_MIX.capped(1000).probability(512)
    expected = sum(
        p for s, p in zip(TPUV4_SIZE_MIX.sizes, TPUV4_SIZE_MIX.probs, strict=True) if s >= 512
    )
    assert share == pytest.approx(expected)


# ---- errors --------------------------------------------------------------------------------


def test_unknown_preset_lists_allowed() -> None:
    with pytest.raises(ConfigError, match=r"unknown preset 'nope'.*lumoscore-paper.*vclos.*tpuv4"):
        generate_trace("nope", 10)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"beta_s": 100.0, "load": 0.5}, "not both"),
        ({"beta_s": -1.0}, "beta_s"),
        ({"load": 0.0}, "load"),
        ({"load": float("nan")}, "load"),
        ({"cluster_gpus": 4}, "cluster_gpus"),
        ({"seed": -3}, "seed"),
        ({"load": 0.5, "load_basis": "median"}, "load_basis"),
    ],
)
def test_bad_arguments(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        generate_trace("lumoscore-paper", 10, **kwargs)


def test_bad_job_count() -> None:
    with pytest.raises(ConfigError, match="n_jobs"):
        generate_trace("lumoscore-paper", 0)


def test_vclos_helios_jobs_follow_the_vclos_rules() -> None:
    from lumoscore.workload.distributions import VCLOS_SIZE_COUNTS, VCLOS_SIZE_MIX
    from lumoscore.workload.presets import ALL_TO_ALL_MODELS, VCLOS_MODELS

    t = generate_trace("vclos-helios", 4000, seed=3, cluster_gpus=512)
    assert t.meta.beta_s == 120.0
    assert set(np.unique(t.gpus)) <= set(VCLOS_SIZE_COUNTS)
    # sizes by count, within sampling error of the research code's request set
    share_single = np.mean(t.gpus == 1)
    assert abs(share_single - VCLOS_SIZE_MIX.probability(1)) < 0.03
    assert set(t.model) == set(VCLOS_MODELS)
    a2a = np.isin(t.model, list(ALL_TO_ALL_MODELS))
    assert np.all(t.tp == np.gcd(t.gpus, 8)) and np.all(t.pp == 1)
    assert np.all(t.ep[a2a] == t.gpus[a2a]) and np.all(t.ep[~a2a] == t.tp[~a2a])
    assert set(t.collective) == {"ring", "hierarchical-ring", "halving-doubling"}
    mean = get_preset("vclos-helios").duration.mean_s()
    assert abs(t.duration_s.mean() / mean - 1) < 0.05


def test_vclos_testbed_jobs_sit_on_four_gpu_servers() -> None:
    from lumoscore.workload.distributions import VCLOS_TESTBED_MEAN_S
    from lumoscore.workload.presets import VCLOS_TESTBED_MODELS

    t = generate_trace("vclos-testbed", 4000, seed=5, cluster_gpus=32)
    assert set(np.unique(t.gpus)) == {2, 4, 8, 16}
    counts = np.bincount(t.gpus)[[2, 4, 8, 16]]
    assert np.all(np.abs(counts / 4000 - 0.25) < 0.03)  # uniform
    assert set(t.model) == set(VCLOS_TESTBED_MODELS)
    assert np.all(t.tp == np.gcd(t.gpus, 4)) and np.all(t.tp * t.dp == t.gpus)
    assert abs(t.duration_s.mean() / VCLOS_TESTBED_MEAN_S - 1) < 0.05
    # the run-time shape is vclos-helios's, scaled
    helios = get_preset("vclos-helios").duration
    testbed = get_preset("vclos-testbed").duration
    q = np.array([0.1, 0.5, 0.9])
    ratio = testbed.quantile(q) / helios.quantile(q)
    assert np.allclose(ratio, VCLOS_TESTBED_MEAN_S / helios.mean_s())
