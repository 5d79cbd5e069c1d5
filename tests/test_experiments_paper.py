"""The whole paper in one command (``lumos run --preset all``, lumoscore.experiments.paper)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from helpers_cli import run
from lumoscore.errors import ConfigError
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.paper import LUMOSCORE_PRESETS, STORE_FOLDER, paper_plan, run_paper
from lumoscore.experiments.presets import PAPER_PRESETS
from lumoscore.experiments.runner import run_one, run_sweep
from lumoscore.experiments.store import ResultStore, StoreError, run_key

#: Two simulation presets that share runs, and a task preset: seconds at 3 jobs.
NAMES = ("fig8ab", "fig25", "fig7")


@pytest.fixture(scope="module")
def paper_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paper")
    run_paper(out, names=NAMES, seeds=1, jobs=3, quick=True, workers=1, report=False,
              progress=False)  # fmt: skip
    return out


def test_every_lumoscore_preset_is_a_paper_preset() -> None:
    assert set(LUMOSCORE_PRESETS) <= set(PAPER_PRESETS)
    kinds = [PAPER_PRESETS[n].kind for n in LUMOSCORE_PRESETS]
    assert kinds == sorted(kinds)  # simulations first, then tasks
    assert not any(n.startswith(("vclos", "cw-")) for n in LUMOSCORE_PRESETS)


def test_shared_runs_are_simulated_once(paper_dir: Path) -> None:
    plan = paper_plan(NAMES, out=paper_dir, seeds=1, jobs=3)
    assert len(plan.runs["fig8ab"]) == 7 and len(plan.runs["fig25"]) == 22
    # fig8ab's seven runs are fig25's Best, Clos probing and LumosCore planned runs
    assert len(plan.pooled) == 22
    assert ResultStore(paper_dir / STORE_FOLDER).keys() == sorted(plan.pooled)


def test_each_preset_folder_is_what_the_preset_alone_writes(paper_dir: Path) -> None:
    plan = paper_plan(NAMES, out=paper_dir, seeds=1, jobs=3)
    store = ResultStore(paper_dir / "fig25")
    runs = plan.runs["fig25"]
    assert store.keys() == sorted(run_key(r) for r in runs)
    # the same runs simulated as written (routing="probing" spelled out, ...) give the same jobs
    alone = ResultStore(paper_dir.parent / "fig25-alone")
    run_sweep(runs, alone, workers=1, progress=False)
    for r in runs:
        key = run_key(r)
        assert store.info(key)["config"] == r.model_dump(mode="json")
        pd.testing.assert_frame_equal(store.jobs(key), alone.jobs(key))
    summary = pd.read_csv(paper_dir / "fig25" / "summary.csv")
    assert set(summary["routing"].dropna()) == {"ecmp", "probing", "planned", "ideal"}
    assert json.loads((paper_dir / "fig25" / "experiment.json").read_text())["preset"] == "fig25"


def test_overview_and_resume(paper_dir: Path) -> None:
    doc = json.loads((paper_dir / "paper.json").read_text())
    assert [p["name"] for p in doc["presets"]] == list(NAMES)
    assert doc["distinct_simulations"] == 22 and doc["seeds"] == 1
    assert (paper_dir / "fig7" / "preset.json").is_file()
    assert "| fig25 |" in (paper_dir / "summary.md").read_text()
    before = (paper_dir / STORE_FOLDER / "index.csv").stat().st_mtime_ns
    again = run_paper(paper_dir, names=NAMES, seeds=1, jobs=3, quick=True, workers=1,
                      report=False, progress=False)  # fmt: skip
    assert [r.status for r in again] == ["stored"] * 3
    assert (paper_dir / STORE_FOLDER / "index.csv").stat().st_mtime_ns == before


def test_bad_preset_lists(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown 'fig99'"):
        paper_plan(("fig8ab", "fig99"), out=tmp_path)
    with pytest.raises(ConfigError, match="empty"):
        paper_plan((), out=tmp_path)


def test_canonical_runs() -> None:
    clos = RunConfig(arch="clos-51.2T-3tier", gpus=512, routing="probing", rail_optimized=False)
    assert clos.canonical() == RunConfig(arch="clos-51.2T-3tier", gpus=512)
    lumos = RunConfig(arch="lumoscore-51.2T-tau2", gpus=512, routing="planned")
    assert lumos.canonical().routing is None
    for kept in ("ecmp", "ideal"):
        assert (
            RunConfig(arch="clos-51.2T-3tier", gpus=512, routing=kept).canonical().routing == kept
        )
    assert RunConfig(arch="clos-51.2T-3tier", gpus=512, rail_optimized=True).canonical() \
        .rail_optimized is True  # fmt: skip


def test_adopt_refuses_a_damaged_source(tmp_path: Path) -> None:
    cfg = RunConfig(arch="best", gpus=256, trace={"jobs": 3})
    src = ResultStore(tmp_path / "a")
    key = src.put(src.key(cfg), cfg, run_one(cfg))
    (src.run_dir(key) / "jobs.parquet").write_bytes(b"")
    with pytest.raises(StoreError, match="checksum"):
        ResultStore(tmp_path / "b").adopt(src, [(key, key, cfg)])
    with pytest.raises(StoreError, match="not stored"):
        ResultStore(tmp_path / "b").adopt(src, [("0" * 16, key, cfg)])


def test_cli_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["run", "--preset", "all", "--gpus", "512"], capsys)
    assert code == 2 and "--gpus" in err and "Traceback" not in err
    code, out, _ = run(
        ["run", "--preset", "all", "--out", str(tmp_path), "--dry-run", "--json", "--seeds", "2"],
        capsys,
    )
    doc = json.loads(out)
    assert code == 0 and [p["preset"] for p in doc["presets"]] == list(LUMOSCORE_PRESETS)
    assert doc["to_simulate"] == doc["distinct_simulations"] > 150
    code, _, err = run(["run", "--preset", "fig7", "--seeds", "2"], capsys)
    assert code == 2 and "--seeds" in err
