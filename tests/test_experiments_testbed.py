"""The LumosCore / Cross Wiring testbed scenarios."""

from __future__ import annotations

import pytest

from lumoscore.experiments import testbed as tb
from lumoscore.experiments.testbed import TESTBED_SIZES, run_testbed_dynamic, run_testbed_static


def test_static_scenario_uniform_loses_circuits_and_throughput(tmp_path) -> None:
    """Cross Wiring realizes the whole static mesh (LTCR 1), Uniform Wiring two thirds of it
    (the paper's 0.667: a triangle of 4 links a pair on 8 one-link OCSes), which doubles the
    flows on its busiest circuit and costs its job contention and throughput."""
    out = run_testbed_static(tmp_path)
    for model in ("Pangu", "GPT2_13b"):
        row = {r["architecture"]: r for r in out.rows if r["model"] == model}
        assert row["cross"]["ltcr"] == 1.0 and row["uniform"]["ltcr"] == pytest.approx(2 / 3)
        assert row["uniform"]["flows_per_circuit"] == 2 * row["cross"]["flows_per_circuit"]
        assert row["uniform"]["contention_level"] > row["cross"]["contention_level"]
        assert row["uniform"]["throughput_vs_cross"] < 1.0
    assert (tmp_path / "testbed-static.csv").exists()


def test_dynamic_scenario_trace_and_comparison(tmp_path) -> None:
    jobs = tb.testbed_trace(3)
    assert len(jobs) == 50 and {j.gpus for j in jobs} <= set(TESTBED_SIZES)
    for j in jobs:
        assert j.tp == 8 and j.tp * j.pp * j.dp == j.gpus
        assert j.ep == (16 if j.model in ("Pangu", "GPT2_13b") else 8)
    assert max(j.arrival_s for j in jobs) < 60 * 3600  # about 48 hours
    assert [j.gpus for j in tb.testbed_trace(3)] == [j.gpus for j in jobs]  # one seed, one trace
    out = run_testbed_dynamic(tmp_path, seeds=(3,), jobs=12)
    vs = {r["comparison"]: r["ours"] for r in out.rows}
    assert vs["cross_vs_uniform_mean"] <= 1e-9  # Cross never behind Uniform on average
    assert vs["cross_vs_uniform_best_job"] <= 1e-9
    assert vs["cross_vs_leaf_spine_max_gap"] == pytest.approx(vs["cross_vs_leaf_spine_max_gap"])


def test_minrewiring_comparison(tmp_path) -> None:
    out = tb.run_testbed_minrewiring(tmp_path, seeds=(3,), jobs=10)
    vs = {r["comparison"]: r for r in out.rows}
    static = vs["static: LumosCore throughput over MinRewiring, best model"]
    assert static["paper"] == 0.395 and static["ours"] >= -1e-9  # never below MinRewiring
    assert vs["dynamic: LumosCore mean JRT vs MinRewiring"]["ours"] <= 1e-9
    for stem in ("static", "dynamic", "vs"):
        assert (tmp_path / f"testbed-minrewiring-{stem}.csv").exists()
    rows = (tmp_path / "testbed-minrewiring-static.csv").read_text()
    assert "MinRewiring" in rows and "Helios" in rows and "LumosCore" in rows
