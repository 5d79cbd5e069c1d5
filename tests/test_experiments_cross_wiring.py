"""The Cross Wiring micro-benchmark presets (cw-fig5/6/7, cw-fig3c) at their tiny options."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lumoscore.errors import ConfigError
from lumoscore.experiments import cross_wiring as cw
from lumoscore.experiments import presets

MICRO = ("cw-fig5", "cw-fig6", "cw-fig7")


def _files(tmp: Path, stem: str) -> None:
    for suffix in (".csv", ".md", ".png", ".svg"):
        assert (tmp / f"{stem}{suffix}").stat().st_size > 0, stem + suffix


@pytest.fixture(scope="module")
def micro_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three Figs. 5-7 presets run into one folder (one shared computation)."""
    out = tmp_path_factory.mktemp("cw-micro")
    stamps = []
    for name in MICRO:
        presets.run_task(presets.get_preset(name), out, quick=True)
        stamps.append([p.stat().st_mtime_ns for p in out.glob("cw-micro-*.json")])
    assert stamps[0] == stamps[1] == stamps[2]  # written by the first, read by the others
    return out


def test_presets_are_registered_after_sec66() -> None:
    names = list(presets.PAPER_PRESETS)
    i = names.index("sec6.6")
    assert names[i + 1 : i + 5] == ["cw-fig5", "cw-fig6", "cw-fig7", "cw-fig3c"]
    for name in (*MICRO, "cw-fig3c"):
        p = presets.get_preset(name)
        assert p.kind == "task" and p.tiny and "Cross Wiring" in p.paper


def test_micro_presets_share_one_computation(micro_dir: Path) -> None:
    caches = list(micro_dir.glob("cw-micro-*.json"))
    assert len(caches) == 1  # three presets, one computation
    doc = json.loads(caches[0].read_text())
    assert doc["options"]["scales_gpus"] == presets._CW_MICRO_TINY["scales_gpus"]
    for fig in ("cw-fig5", "cw-fig6", "cw-fig7"):
        _files(micro_dir, fig)
        for suffix in (".csv", ".md"):
            assert (micro_dir / f"{fig}-vs{suffix}").stat().st_size > 0
    # every topology of every strategy: ILW realizes it, Uniform at most does; MRAR in [0, 1]
    for gpus, per in doc["results"].items():
        for name, kind, _ in cw.STRATEGIES:
            rec = per[name]
            assert rec["ltcr"], (gpus, name)
            if kind == "cross":
                assert all(v == 1.0 for v in rec["ltcr"]), (gpus, name)
            else:
                assert all(0.0 < v <= 1.0 for v in rec["ltcr"]), (gpus, name)
            assert all(0.0 <= v <= 1.0 for v in rec["mrar"])
            assert len(rec["time_s"]) == rec["topologies"] - 1


def test_fig5_table_has_the_papers_numbers(micro_dir: Path) -> None:
    t = pd.read_csv(micro_dir / "cw-fig5.csv")
    assert {"ltcr_mean", "ltcr_min", "paper_ltcr_min", "paper_source"} <= set(t.columns)
    assert set(t["strategy"]) == {s[0] for s in cw.STRATEGIES}
    ilw = t[t["wiring"] == "cross"]
    assert (ilw["ltcr_min"] == 1.0).all() and ilw["all_realized"].all()
    uni = t[t["wiring"] == "uniform"]
    assert ((uni["ltcr_min"] > 0) & (uni["ltcr_max"] <= 1)).all()
    assert t.loc[t["strategy"] == "Uniform-ILP", "paper_ltcr_min"].eq(0.903).all()
    vs = pd.read_csv(micro_dir / "cw-fig5-vs.csv")
    assert list(vs.columns) == ["claim", "paper", "ours", "holds"]
    assert bool(vs["holds"].iloc[0])  # ILW: LTCR 1 everywhere


def test_fig6_table_has_times_and_the_papers_ratio(micro_dir: Path) -> None:
    t = pd.read_csv(micro_dir / "cw-fig6.csv")
    assert {"time_median_s", "time_max_s", "x_mdmcf_max", "paper_x_mdmcf_max"} <= set(t.columns)
    assert (t["time_median_s"] > 0).all()
    assert t.loc[t["strategy"] == "ILW-ILP", "paper_x_mdmcf_max"].eq(27.96).all()
    assert t.loc[t["solver"] == "ilp", "time_limit_s"].eq(5.0).all()


def test_fig7_table_has_mrar_of_the_ilw_strategies(micro_dir: Path) -> None:
    t = pd.read_csv(micro_dir / "cw-fig7.csv")
    assert set(t["strategy"]) == set(cw.ILW_STRATEGIES)
    for col in ("mrar_mean", "mrar_min", "mrar_max"):
        assert t[col].between(0.0, 1.0).all()
    assert "paper" in t.columns and (t["ilp_optimal_compared"] >= 0).all()


def test_fig3c_tiny_and_the_time_limit_flag(tmp_path: Path) -> None:
    out = presets.run_task(presets.get_preset("cw-fig3c"), tmp_path / "tiny", quick=True)
    _files(tmp_path / "tiny", "cw-fig3c")
    assert all(r["optimal"] == r["solves"] and not r["hit_time_limit"] for r in out.rows)
    assert {"paper_time_max_s", "time_limit_s", "gave_up"} <= set(out.rows[0])
    # a limit far too small for 8 pods of 256 ports: marked as hit, never as proved optimal
    res = cw.run_cw_fig3c(tmp_path / "limit", scales_gpus=[2048], time_limit_s=0.05)
    (row,) = res.rows
    assert row["hit_time_limit"] and row["optimal"] == 0 and row["time_limit_s"] == 0.05
    assert row["paper_time_max_s"] != row["paper_time_max_s"]  # NaN: the paper has 8k only
    solves = pd.read_csv(tmp_path / "limit" / "cw-fig3c-solves.csv")
    assert solves["hit_time_limit"].all() and solves["ltcr"].between(0, 1).all()


def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pod size"):
        cw.spec_for(1000)
    with pytest.raises(ConfigError, match="unknown option"):
        cw.run_cw_fig5(tmp_path, nope=1)
    with pytest.raises(ConfigError, match="topologies"):
        cw.micro_benchmark([64], topologies=1, pod_ports=16)
