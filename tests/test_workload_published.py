"""The ``lumoscore-published`` preset against the research code's published 1000-job set.

The published figures (``/work/shared/FIDELITY.md``): sizes 668 x 32, 16 x 128, 208 x 256,
96 x 512, 11 x 1024, 1 x 2048 GPUs; Best run times p10 770 s, p25 1010 s, p50 2109 s, p75
9712 s, p90 44,147 s, p99 436,300 s, mean 21,679 s; arrivals
``cumsum(numpy.random.default_rng(1000).exponential(beta, 1000))``.

Tolerances for one 1000-job trace (seed 1): size shares within 3 points (a share of 0.67 has
a standard error of 1.5 points), run-time quantiles and the mean within 20 % (over 200 seeds
the 95 % range of p75 and p90 is about -20 %..+28 %, the mean's standard error is 10.5 %).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from lumoscore.cli import main
from lumoscore.errors import ConfigError
from lumoscore.experiments.config import expand, load_experiment
from lumoscore.workload import (
    MODEL_SHARES,
    Trace,
    calibrate_beta,
    generate_trace,
    get_preset,
    read_trace,
    workload_level,
    write_trace,
)
from lumoscore.workload.distributions import (
    PUBLISHED_DURATION,
    PUBLISHED_JRT_MEAN_S,
    PUBLISHED_JRT_QUANTILES_S,
    PUBLISHED_MIN_S,
    PUBLISHED_SIZE_COUNTS,
    PUBLISHED_SIZE_MIX,
    QuantileSpline,
)
from lumoscore.workload.presets import PRESETS, draw_parallelism
from lumoscore.workload.trace import columns_from_frame

PRESET = "lumoscore-published"
#: Significance bound of the goodness-of-fit tests (fixed seeds: the tests are stable).
P_MIN = 0.001
#: Arrival times of the published beta-2000 set, from the research code's result log
#: ``LumosCore/large_exp_4096GPU/beta_2000/best/task_time.log`` (task id: arrival).
PUBLISHED_ARRIVALS_S = {0: 2573.4599490318756, 1: 4151.492661838909, 363: 707287.6278587905}


@pytest.fixture(scope="module")
def seed1() -> Trace:
    return generate_trace(PRESET, 1000, seed=1, cluster_gpus=4096)


def _chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = probs / probs.sum() * counts.sum()
    assert np.all(expected >= 5), "merge classes: expected counts must be >= 5"
    return float(stats.chisquare(counts, expected).pvalue)


# ---- the distributions ----------------------------------------------------------------------


def test_size_mix_is_the_published_set() -> None:
    assert sum(PUBLISHED_SIZE_COUNTS.values()) == 1000
    assert PUBLISHED_SIZE_MIX.sizes == (32, 128, 256, 512, 1024, 2048)
    assert PUBLISHED_SIZE_MIX.probs == pytest.approx(
        [c / 1000 for c in PUBLISHED_SIZE_COUNTS.values()]
    )
    assert PUBLISHED_SIZE_MIX.mean_gpus == pytest.approx(139.136)


def test_run_times_pass_through_the_published_quantiles_and_mean() -> None:
    probs = list(PUBLISHED_JRT_QUANTILES_S)
    values = list(PUBLISHED_JRT_QUANTILES_S.values())
    assert PUBLISHED_DURATION.quantile(probs) == pytest.approx(values, rel=1e-12)
    assert PUBLISHED_DURATION.cdf(values) == pytest.approx(probs, rel=1e-12)
    assert PUBLISHED_DURATION.mean_s() == pytest.approx(PUBLISHED_JRT_MEAN_S, rel=1e-6)
    # The hard-coded tail slope is the solved one, rounded.
    solved = QuantileSpline.with_mean(
        probs, values, min_s=PUBLISHED_MIN_S, mean_s=PUBLISHED_JRT_MEAN_S
    )
    assert solved.tail_sigma == pytest.approx(PUBLISHED_DURATION.tail_sigma, abs=1e-6)
    # Smallest run time: Helios' 600 s shortened by Pangu's exposed share 0.3375.
    assert math.isclose(PUBLISHED_MIN_S, 397.5)
    assert float(PUBLISHED_DURATION.quantile(0.0)) == pytest.approx(PUBLISHED_MIN_S)


def test_spline_mean_closed_form_matches_integral() -> None:
    d = PUBLISHED_DURATION
    numeric, _ = integrate.quad(
        lambda p: float(d.quantile(p)), 0, 1, limit=500, points=[0.1, 0.5, 0.9, 0.99, 0.999]
    )
    assert d.mean_s() == pytest.approx(numeric, rel=1e-6)
    small = QuantileSpline((0.2, 0.5, 0.8), (5.0, 20.0, 90.0), min_s=1.0, tail_sigma=0.3)
    numeric, _ = integrate.quad(lambda p: float(small.quantile(p)), 0, 1, limit=200)
    assert small.mean_s() == pytest.approx(numeric, rel=1e-7)


def test_spline_cdf_inverts_quantile() -> None:
    p = np.linspace(0.01, 0.999, 101)
    p = p[p > float(PUBLISHED_DURATION.cdf(PUBLISHED_MIN_S))]
    assert PUBLISHED_DURATION.cdf(PUBLISHED_DURATION.quantile(p)) == pytest.approx(p, rel=1e-9)
    assert float(PUBLISHED_DURATION.cdf(PUBLISHED_MIN_S - 1e-6)) == 0.0


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (((0.5,), (1.0,), 0.5, 1.0), "two knots"),
        (((0.5, 0.4), (1.0, 2.0), 0.5, 1.0), "probs"),
        (((0.0, 0.4), (1.0, 2.0), 0.5, 1.0), "probs"),
        (((0.2, 0.4), (2.0, 1.0), 0.5, 1.0), "values_s"),
        (((0.2, 0.4), (1.0, 2.0), 1.0, 1.0), "min_s"),
        (((0.2, 0.4), (1.0, 2.0), 0.5, 0.0), "tail_sigma"),
    ],
)
def test_spline_rejects_bad_knots(args: tuple, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        QuantileSpline(*args)


def test_spline_with_unreachable_mean() -> None:
    with pytest.raises(ConfigError, match="no tail slope"):
        QuantileSpline.with_mean((0.2, 0.5), (10.0, 20.0), min_s=1.0, mean_s=2.0)


# ---- one 1000-job trace against the published statistics -----------------------------------


def test_seed1_size_mix_close_to_published(seed1: Trace) -> None:
    shares = {k: float(np.mean(seed1.gpus == k)) for k in PUBLISHED_SIZE_COUNTS}
    print("seed 1 size shares:", shares)
    for size, count in PUBLISHED_SIZE_COUNTS.items():
        assert shares[size] == pytest.approx(count / 1000, abs=0.03), size
    assert seed1.gpus.min() == 32 and set(seed1.gpus.tolist()) <= set(PUBLISHED_SIZE_COUNTS)
    counts = np.array(
        [np.sum(seed1.gpus == k) for k in (32, 128, 256)] + [np.sum(seed1.gpus >= 512)]
    )
    probs = np.array([0.668, 0.016, 0.208, 0.108])
    assert _chi_square(counts, probs) > P_MIN
    assert seed1.gpus.mean() == pytest.approx(139.136, rel=0.1)


def test_seed1_run_times_close_to_published(seed1: Trace) -> None:
    d = seed1.duration_s
    got = np.quantile(d, list(PUBLISHED_JRT_QUANTILES_S))
    print("seed 1 run-time quantiles:", got.round(), "mean", round(float(d.mean())))
    for q, p, value in zip(PUBLISHED_JRT_QUANTILES_S, PUBLISHED_JRT_QUANTILES_S.values(), got,
                           strict=True):  # fmt: skip
        # (the p99 of 1000 draws of a heavy tail moves a lot from seed to seed)
        assert value == pytest.approx(p, rel=0.45 if q >= 0.99 else 0.2)
    assert d.mean() == pytest.approx(PUBLISHED_JRT_MEAN_S, rel=0.2)
    assert d.min() >= PUBLISHED_MIN_S
    assert stats.kstest(d, lambda x: PUBLISHED_DURATION.cdf(x)).pvalue > P_MIN


def test_seed1_parallelism_follows_the_generator(seed1: Trace) -> None:
    t = seed1
    servers = t.gpus // 8
    assert np.all(t.tp == 8) and np.all(t.gpus == t.tp * t.pp * t.dp)
    assert np.all(t.dp == servers // t.pp)
    assert set(t.iterations.tolist()) == {10} and set(t.collective.tolist()) == {"ring"}
    small = t.gpus == 32
    # 32-GPU jobs (4 servers): PP = min(4, U{1, 2, 4, 8, 16, 32}) and EP = min(4, ...) = 4.
    assert set(t.pp[small].tolist()) == {1, 2, 4} and set(t.ep[small].tolist()) == {4}
    counts = np.array([np.sum(t.pp[small] == c) for c in (1, 2, 4)])
    assert _chi_square(counts, np.array([1.0, 1.0, 4.0])) > P_MIN
    mid = t.gpus == 128
    assert set(t.pp[mid].tolist()) <= {1, 2, 4, 8, 16} and set(t.ep[mid].tolist()) <= {8, 16}
    big = t.gpus >= 256
    assert set(t.pp[big].tolist()) == {1, 2, 4, 8, 16, 32}
    assert set(t.ep[big].tolist()) == {8, 16, 32}
    counts = np.array([np.sum(t.ep[big] == c) for c in (8, 16, 32)])
    assert _chi_square(counts, np.ones(3)) > P_MIN
    names = list(MODEL_SHARES)
    counts = np.array([np.sum(t.model == m) for m in names])
    assert _chi_square(counts, np.ones(len(names))) > P_MIN


def test_every_generated_job_validates(seed1: Trace) -> None:
    jobs = seed1.jobs  # builds and validates every Job
    assert len(jobs) == 1000
    assert Trace(columns_from_frame(seed1.to_frame()), seed1.meta) == seed1
    # Our job model reads EP in GPUs: EP 4 <= TP 8 means no inter-server all-to-all.
    for job in jobs:
        assert (job.effective_shares.ep == 0.0) == (job.ep <= job.tp)
        if job.gpus == 32:
            assert job.effective_shares.ep == 0.0


# ---- arrivals, determinism, options -------------------------------------------------------


def test_seed_1000_reproduces_the_published_arrivals() -> None:
    t = generate_trace(PRESET, 1000, seed=1000, beta_s=2000.0)
    for job, arrival in PUBLISHED_ARRIVALS_S.items():
        assert t.arrival_s[job] == arrival
    for beta in (1800.0, 2000.0, 2200.0, 30000.0):
        t = generate_trace(PRESET, 1000, seed=1000, beta_s=beta)
        research = np.cumsum(np.random.default_rng(1000).exponential(beta, 1000))
        assert np.array_equal(t.arrival_s, research), beta
    # beta 2000 s is the preset's default.
    assert generate_trace(PRESET, 1000, seed=1000) == generate_trace(
        PRESET, 1000, seed=1000, beta_s=2000.0
    )


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_trace(generate_trace(PRESET, 500, seed=5), a)
    write_trace(generate_trace(PRESET, 500, seed=5), b)
    assert a.read_bytes() == b.read_bytes()
    other = generate_trace(PRESET, 500, seed=6)
    assert not other.same_jobs(read_trace(a))


def test_beta_and_load_work_like_the_other_presets() -> None:
    t = generate_trace(PRESET, 4000, seed=7, beta_s=1800.0)
    gaps = np.diff(np.concatenate([[0.0], t.arrival_s]))
    assert stats.kstest(gaps, "expon", args=(0, 1800.0)).pvalue > P_MIN
    assert t.meta.beta_s == 1800.0 and t.meta.preset == PRESET
    for level in (0.3, 0.655, 1.2):
        s = generate_trace(PRESET, 1000, seed=8, load=level, cluster_gpus=2048)
        assert workload_level(s) == pytest.approx(level, rel=1e-9)
        assert s.meta.load == level
        u = generate_trace(PRESET, 1000, seed=8, beta_s=1.0, cluster_gpus=2048)
        assert np.allclose(s.arrival_s, u.arrival_s * s.meta.beta_s, rtol=1e-12)
        assert np.array_equal(s.duration_s, u.duration_s) and np.array_equal(s.gpus, u.gpus)
    e = generate_trace(PRESET, 300, seed=2, load=0.655, load_basis="expected")
    assert e.meta.beta_s == pytest.approx(calibrate_beta(PRESET, 0.655, 4096))
    # Expected level at the default beta: E[gpus] * E[duration] / (2000 s * 4096 GPUs).
    lv = workload_level(PRESET, 4096)
    # sizes and run times drawn together: E[gpus * duration] integrated over the copula
    expected = PRESETS[PRESET].mean_gpu_seconds(4096) / (2000.0 * 4096)
    assert lv == pytest.approx(expected, rel=1e-6) and expected > 139.136 * PUBLISHED_JRT_MEAN_S / (
        2000.0 * 4096
    )
    assert lv == pytest.approx(0.7846, abs=1e-4)


@pytest.mark.parametrize(("cluster", "cap"), [(512, 512), (1000, 512), (16, 16), (8, 8)])
def test_small_cluster_caps_sizes(cluster: int, cap: int) -> None:
    t = generate_trace(PRESET, 400, seed=3, cluster_gpus=cluster)
    assert t.gpus.max() <= cap and len(t.jobs) == 400
    servers = t.gpus // 8
    assert np.all(t.pp <= servers) and np.all(t.ep <= np.minimum(servers, 32))
    mix = get_preset(PRESET).size_mix_for(cluster)
    assert mix.sizes[-1] == cap
    if cap == 512:
        assert mix.probability(512) == pytest.approx(0.096 + 0.011 + 0.001)
    if cap <= 32:
        assert set(t.gpus.tolist()) == {cap} and set(t.ep.tolist()) == {cap // 8}


def test_draw_parallelism_published_mode_caps_ep_by_servers() -> None:
    tp, pp, dp, ep = draw_parallelism(
        np.random.default_rng(0), np.array([8, 16, 32, 64, 128] * 50), mode="published"
    )
    servers = np.array([1, 2, 4, 8, 16] * 50)
    assert np.all(ep <= servers) and np.all(ep[servers <= 8] == servers[servers <= 8])
    assert np.all(tp * pp * dp == servers * 8)
    with pytest.raises(ConfigError, match="published"):
        draw_parallelism(np.random.default_rng(0), np.array([8]), mode="nope")


# ---- reachable from the CLI and from experiment files -------------------------------------


def test_cli_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.csv"
    with pytest.raises(SystemExit) as exc:
        main(
            ["trace", "generate", "--preset", PRESET, "--jobs", "60", "--seed", "1000",
             "--gpus", "1024", "--out", str(out)]
        )  # fmt: skip
    assert int(exc.value.code or 0) == 0
    assert "wrote 60 jobs" in capsys.readouterr().out
    assert read_trace(out) == generate_trace(PRESET, 60, seed=1000, cluster_gpus=1024)
    assert PRESET in PRESETS


def test_experiment_file_trace_preset(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(
        f'gpus = 512\narchitectures = ["best"]\n[trace]\npreset = "{PRESET}"\njobs = 5\n'
    )
    runs = expand(load_experiment(path))
    assert [r.trace.preset for r in runs] == [PRESET]
    assert math.isfinite(get_preset(PRESET).mean_gpu_seconds(512))


def test_sizes_and_run_times_are_drawn_together() -> None:
    """The copula: larger jobs run longer, marginals unchanged (size shares, run-time quantiles)."""
    from scipy.stats import spearmanr

    from lumoscore.workload.distributions import PUBLISHED_DURATION, PUBLISHED_SIZE_MIX

    t = generate_trace("lumoscore-published", 40_000, seed=7, cluster_gpus=4096)
    assert spearmanr(t.gpus, t.duration_s).correlation > 0.25
    for size, p in zip(PUBLISHED_SIZE_MIX.sizes, PUBLISHED_SIZE_MIX.probs, strict=True):
        assert abs(np.mean(t.gpus == size) - p) < 0.01
    for q in (0.25, 0.5, 0.75):
        want = float(PUBLISHED_DURATION.quantile(q))
        assert abs(np.quantile(t.duration_s, q) / want - 1) < 0.05


def test_mean_gpu_seconds_integrates_the_copula() -> None:
    """Quadrature against the independent closed form (rho -> 0) and a large sample."""
    import dataclasses
    import math

    from scipy import special

    from lumoscore.workload.presets import PRESETS

    base = PRESETS["lumoscore-published"]
    indep = base.size_mix_for(4096).mean_gpus * base.duration.mean_s()
    near0 = dataclasses.replace(base, size_duration_rho=1e-9).mean_gpu_seconds(4096)
    assert abs(near0 / indep - 1) < 5e-3
    rho = base.size_duration_rho
    rng = np.random.default_rng(0)
    z = rng.standard_normal((2, 2_000_000))
    g = base.size_mix_for(4096).quantile(special.ndtr(z[0]))
    d = base.duration.quantile(special.ndtr(rho * z[0] + math.sqrt(1 - rho**2) * z[1]))
    assert abs(base.mean_gpu_seconds(4096) / float(np.mean(g * d)) - 1) < 0.02
