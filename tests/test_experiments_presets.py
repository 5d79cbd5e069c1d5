"""Paper presets: registry, overrides, task presets and ``lumos run --preset`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from lumoscore.cli import build_app, main
from lumoscore.errors import ConfigError
from lumoscore.experiments.architectures import PAPER_ARCHITECTURES
from lumoscore.experiments.config import RunConfig, expand
from lumoscore.experiments.presets import (
    PAPER_PRESETS,
    get_preset,
    preset_experiments,
    preset_runs,
    run_table6,
    run_table6_synthetic,
    run_task,
    takes_sizes,
)
from lumoscore.experiments.store import run_key
from lumoscore.fabric.presets import PRESETS

runner = CliRunner()
SIMULATIONS = [n for n, p in PAPER_PRESETS.items() if p.kind == "simulation"]
TASKS = [n for n, p in PAPER_PRESETS.items() if p.kind == "task"]
EXPECTED = {
    "testbed-static",
    "testbed-dynamic",
    "fig6c",
    "fig6c-ocs",
    "fig10",
    "reconfig-interval",
    "link-failures",
    "vclos-table4",
    "vclos-fig13",
    "vclos-table6",
    "vclos-table7",
    "vclos-fig2",
    "vclos-table5",
    "fig7",
    "fig8ab",
    "fig8c",
    "fig8d",
    "fig8e",
    "fig23",
    "fig24",
    "fig25",
    "table6",
    "sec6.6",
    "cw-fig5",
    "cw-fig6",
    "cw-fig7",
    "cw-fig3c",
    "cw-fig9a",
    "cw-fig9b",
    "testbed-minrewiring",
}


def test_registry_holds_every_paper_item() -> None:
    assert set(PAPER_PRESETS) == EXPECTED
    assert set(TASKS) == {
        "testbed-static",
        "testbed-dynamic",
        "testbed-minrewiring",
        "fig6c",
        "fig6c-ocs",
        "fig10",
        "reconfig-interval",
        "fig7",
        "table6",
        "sec6.6",
        "cw-fig5",
        "cw-fig6",
        "cw-fig7",
        "cw-fig3c",
        "cw-fig9a",
        "cw-fig9b",
        "vclos-fig2",
        "vclos-fig13",
        "vclos-table4",
        "vclos-table5",
        "vclos-table6",
        "vclos-table7",
    }
    for name, p in PAPER_PRESETS.items():
        assert p.name == name and p.paper and p.title and p.description
        assert (p.task is not None) == (p.kind == "task")
        assert bool(p.experiments) == (p.kind == "simulation")


@pytest.mark.parametrize("name", SIMULATIONS)
def test_simulation_presets_expand_at_default_scale(name: str) -> None:
    preset = get_preset(name)
    runs = preset_runs(preset_experiments(preset))
    assert runs
    assert len({run_key(r) for r in runs}) == len(runs)  # no duplicate run
    for r in runs:  # the paper's scale and setup
        assert r.eps == 0.0 and r.trace.jobs == 1000
        assert r.trace.preset == "lumoscore-published" and r.exposure == "research"
    assert preset.full_command == f"lumos run --preset {name}"
    # The overrides reach every run.
    small = preset_runs(preset_experiments(preset, jobs=100, eps=0.01))
    assert len(small) == len(runs)
    assert all(r.trace.jobs == 100 and r.eps == 0.01 for r in small)


def test_swept_values_match_the_paper_figures() -> None:
    def values(name: str, get: object) -> set[object]:
        return {get(r) for r in preset_runs(preset_experiments(get_preset(name)))}  # type: ignore[operator]

    assert values("fig8ab", lambda r: r.arch) == set(PAPER_ARCHITECTURES)
    assert values("fig8ab", lambda r: r.gpus) == {4096}
    assert values("fig8c", lambda r: r.gpus) == {2048, 4096, 8192, 16384}
    for name in set(SIMULATIONS) - {"fig23"}:  # the paper's workload level (§6.2)
        assert values(name, lambda r: (r.trace.load, r.trace.beta_s)) == {(0.655, None)}
    rates = values("link-failures", lambda r: (r.arch, r.link_failures.rate_per_cable_day))
    assert ("best", 0.0) in rates and ("clos-51.2T-3tier", 0.05) in rates
    assert ("lumoscore-51.2T-tau2", 0.05) in rates and ("best", 0.05) not in rates
    repairs = values("link-failures", lambda r: r.link_failures.repair_s)
    assert repairs <= {86400.0, 3600.0} and 86400.0 in repairs  # Best keeps the default
    # the failure-free runs are fig8ab's (same store keys)
    plain = {run_key(r) for r in preset_runs(preset_experiments(get_preset("fig8ab")))}
    free = [r for r in preset_runs(preset_experiments(get_preset("link-failures")))
            if r.link_failures.is_default]  # fmt: skip
    assert free and {run_key(r) for r in free} <= plain
    rates = values("fig8d", lambda r: r.failures.rate_per_gpu_day)
    assert 0.0 in rates and len(rates) >= 3 and max(rates) <= 0.01
    loads = values("fig23", lambda r: r.trace.load)
    assert len(loads) >= 4 and min(loads) < 0.655 < max(loads)
    assert values("fig24", lambda r: (r.arch.split("-")[0], r.rail_optimized)) == {
        ("clos", False),
        ("clos", True),
        ("lumoscore", False),
        ("lumoscore", True),
        ("best", None),
    }
    routes = values("fig25", lambda r: (r.arch, r.routing))
    assert ("best", None) in routes
    for arch in PRESETS:
        if arch.startswith("clos-"):
            assert {x for a, x in routes if a == arch} == {"ecmp", "probing", "ideal"}
        elif arch.startswith("lumoscore-"):
            assert {x for a, x in routes if a == arch} == {"ecmp", "probing", "planned", "ideal"}


def test_fig8e_reuses_the_runs_of_fig8ab() -> None:
    keys = [
        {run_key(r) for r in preset_runs(preset_experiments(get_preset(n)))}
        for n in ("fig8ab", "fig8e")
    ]
    assert keys[0] == keys[1]


def test_rail_optimized_none_keeps_old_store_keys() -> None:
    plain = RunConfig(arch="clos-51.2T-3tier", gpus=512, trace={"jobs": 3})
    doc = plain.model_dump()
    assert doc.pop("rail_optimized") is None
    assert run_key(plain) != run_key(plain.model_copy(update={"rail_optimized": False}))
    rail = RunConfig(arch="clos-51.2T-3tier", gpus=512, trace={"jobs": 3}, rail_optimized=True)
    assert run_key(rail) != run_key(plain)
    lumos = RunConfig(arch="lumoscore-51.2T-tau2", gpus=512, rail_optimized=True)
    assert lumos.make_fabric().rail_optimized
    with pytest.raises(ValueError, match="rail_optimized"):
        RunConfig(arch="vclos", gpus=512, rail_optimized=True)


def test_overrides_and_errors() -> None:
    parts = preset_experiments(get_preset("fig8c"), jobs=4, gpus=[512, 1024], out="x/y")
    runs = preset_runs(parts)
    assert {r.gpus for r in runs} == {512, 1024} and {r.trace.jobs for r in runs} == {4}
    assert all(p.output == "x/y" for p in parts)
    with pytest.raises(ConfigError, match="allowed: fig8ab, fig8c"):
        get_preset("fig9")
    with pytest.raises(ConfigError, match="task preset"):
        preset_experiments(get_preset("fig7"))
    with pytest.raises(ConfigError, match="simulation preset"):
        run_task(get_preset("fig8ab"), "unused")
    with pytest.raises(ConfigError, match=r"preset fig8ab: .*gpus"):
        preset_experiments(get_preset("fig8ab"), gpus=[100])  # not a whole number of pods


def test_presets_command_lists_every_preset() -> None:
    res = runner.invoke(build_app(), ["presets", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [d["name"] for d in doc] == list(PAPER_PRESETS)
    for d in doc:
        assert d["kind"] in ("simulation", "task") and d["paper"] and d["full_command"]
        if d["kind"] == "simulation":
            assert d["runs"] == len(preset_runs(preset_experiments(get_preset(d["name"]))))
    res = runner.invoke(build_app(), ["presets"])
    assert res.exit_code == 0 and "table6" in res.output and "Fig. 8(c)" in res.output


def _error_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("lumos: error: ") and err.count("\n") == 1, err
    return err


def test_unknown_preset_and_bad_flags_are_one_line_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _error_line(capsys, ["run", "--preset", "nope"])
    assert "unknown 'nope'" in err and "allowed: fig8ab, fig8c" in err and "sec6.6" in err
    assert "--jobs" in _error_line(capsys, ["run", "--preset", "fig7", "--jobs", "5"])
    assert "not both" in _error_line(capsys, ["run", "x.toml", "--preset", "fig8ab"])


def test_fig7_task_matches_the_sizing_formulas(tmp_path: Path) -> None:
    from lumoscore.hardware import max_gpus

    out = run_task(get_preset("fig7"), tmp_path, quick=True)
    names = {p.name for p in out.files}
    assert {"fig7.csv", "fig7.md", "fig7.png", "fig7.svg", "preset.json"} <= names
    table = pd.read_csv(tmp_path / "fig7.csv")
    assert len(table) == len(out.rows) > 0
    for r in out.rows:
        assert r["max_gpus"] == max_gpus(r["architecture"], r["chip_tbps"], r["port_gbps"])


def test_table6_task_counts_the_simulations_rewiring(tmp_path: Path) -> None:
    res = runner.invoke(
        build_app(),
        ["run", "--preset", "table6", "--quick", "--gpus", "512", "--gpus", "1024", "--out",
         str(tmp_path), "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["rows"]
    assert [r["gpus"] for r in rows] == [512, 1024]
    for r in rows:
        assert r["reconfigurations"] > 0 and r["rewired_per_reconfiguration"] > 0
        # one OCS port per pod in use: the two shares differ by pods / ocs_ports (512)
        assert r["rewired_of_capacity_pct"] == pytest.approx(
            r["rewired_of_used_pct"] * r["pods"] / 512, rel=1e-9
        )
    for stem in ("table6.csv", "table6.md", "table6.png", "table6.svg", "preset.json"):
        assert (tmp_path / stem).stat().st_size > 0
    with pytest.raises(ConfigError, match="source 'x' unknown"):
        run_table6(tmp_path, source="x")


def test_table6_synthetic_rewires_at_least_the_changed_links(tmp_path: Path) -> None:
    out = run_table6_synthetic(tmp_path, scales_gpus=[512], reconfigurations=1, ilp_max_gpus=512)
    rows = {r["solver"]: r for r in out.rows}
    assert set(rows) == {"mdmcf", "ilp", "mcf"}
    for r in rows.values():
        assert r["gpus"] == 512
    # Every changed demand link needs a new circuit; the ILP rewires the fewest (when proved
    # optimal), mdmcf at most as many as the decomposition that ignores the current circuits.
    floor = rows["mdmcf"]["demand_changed_pct"]
    assert all(r["rewired_links_pct"] >= floor - 1e-9 for r in rows.values())
    if rows["ilp"]["status"] == "optimal":
        assert rows["ilp"]["rewired_links_pct"] <= rows["mdmcf"]["rewired_links_pct"] + 1e-9
    assert rows["mdmcf"]["rewired_links_pct"] <= rows["mcf"]["rewired_links_pct"] + 1e-9
    for stem in ("table6.csv", "table6.md", "table6.png", "table6.svg"):
        assert (tmp_path / stem).stat().st_size > 0
    assert pd.read_csv(tmp_path / "table6.csv").shape[0] == 3


def test_sec66_task_times_both_solvers(tmp_path: Path) -> None:
    out = run_task(get_preset("sec6.6"), tmp_path, quick=True)
    rows = {r["solver"]: r for r in out.rows}
    assert set(rows) == {"mdmcf", "ilp"}
    for r in rows.values():
        assert np.isfinite(r["time_median_s"]) and r["time_median_s"] > 0
        assert 0.0 <= r["mrar"] <= 1.0
    if rows["ilp"]["status"] == "optimal":  # the ILP maximises the kept circuits
        assert rows["ilp"]["mrar"] >= rows["mdmcf"]["mrar"] - 1e-9
    for stem in ("sec6.6.csv", "sec6.6.md", "sec6.6.png", "sec6.6.svg"):
        assert (tmp_path / stem).stat().st_size > 0
    info = json.loads((tmp_path / "preset.json").read_text())
    assert info["name"] == "sec6.6" and info["options"]["scales_gpus"] == [512]


def test_simulation_preset_end_to_end(tmp_path: Path) -> None:
    """fig24 at 512 GPUs with 3 jobs: both parts run into one store, with a report."""
    out = tmp_path / "fig24"
    args = ["run", "--preset", "fig24", "--jobs", "3", "--gpus", "512", "--out", str(out)]
    res = runner.invoke(build_app(), [*args, "--workers", "1", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["experiment"] == "fig24" and len(doc["runs"]) == 13
    assert {(r["arch"], r["rail_optimized"]) for r in doc["runs"]} >= {
        ("clos-51.2T-3tier", True),
        ("clos-51.2T-3tier", False),
        ("lumoscore-51.2T-tau2", True),
        ("best", None),
    }
    info = json.loads((out / "experiment.json").read_text())
    assert info["preset"] == "fig24" and len(info["parts"]) == 2
    summary = pd.read_csv(out / "summary.csv")
    rail = summary[summary["rail_optimized"].astype(str) == "True"]
    assert len(rail) == 6 and rail["slowdown_vs_best"].notna().all()
    # Running again finds every run stored.
    res = runner.invoke(build_app(), [*args, "--dry-run", "--json"])
    assert res.exit_code == 0
    assert all(r["stored"] for r in json.loads(res.output)["runs"])
    assert len(expand(preset_experiments(get_preset("fig24"), jobs=3, gpus=[512])[0])) == 12


@pytest.mark.parametrize(
    "name", [n for n, p in PAPER_PRESETS.items() if p.kind == "task" and not takes_sizes(p)]
)
def test_a_task_preset_without_cluster_sizes_refuses_gpus(name: str, tmp_path) -> None:
    """``--gpus`` replaces a task's cluster sizes; a task that has none says so (and which
    presets take it) instead of failing inside the task."""
    with pytest.raises(ConfigError, match=r"--gpus: task preset .* has no cluster sizes.*table6"):
        run_task(get_preset(name), tmp_path, gpus=[512])
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("name", "needle"), [("cw-fig5", "pod size"), ("table6", "pods of")])
def test_a_task_refusing_its_sizes_leaves_no_folder(name: str, needle: str, tmp_path) -> None:
    out = tmp_path / "new"
    with pytest.raises(ConfigError, match=needle):
        run_task(get_preset(name), out, gpus=[1000])
    assert not out.exists()


def test_the_cli_lists_gpus_only_for_task_presets_with_sizes(capsys) -> None:
    for name, allowed in (("fig10", "--out, --quick"), ("sec6.6", "--out, --gpus, --quick")):
        with pytest.raises(SystemExit) as info:
            main(["run", "--preset", name, "--jobs", "5"])
        assert info.value.code == 2
        assert f"allowed: {allowed}, --json" in capsys.readouterr().err
