"""Report files: a real small result store, self-contained HTML, byte-identical reruns, CLI."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from lumoscore.cli import build_app, main
from lumoscore.errors import ConfigError
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.runner import run_one
from lumoscore.experiments.store import ResultStore
from lumoscore.report import load_runs, write_report

ARCHS = ("best", "lumoscore-51.2T-tau2")


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store")
    store = ResultStore(root)
    for seed, arch in itertools.product((1, 2), ARCHS):
        cfg = RunConfig(arch=arch, gpus=256, seed=seed, trace={"jobs": 20, "load": 0.7})
        store.put(store.key(cfg), cfg, run_one(cfg))
    return root


@pytest.fixture(scope="module")
def report_dir(store_dir: Path) -> Path:
    html = write_report(store_dir)
    assert html == store_dir / "report" / "report.html"
    return html.parent


def test_report_files_exist(report_dir: Path) -> None:
    names = {p.name for p in report_dir.iterdir()}
    for name in ("summary.md", "summary.csv", "runs.csv", "report.html"):
        assert name in names
    pngs = {p.stem for p in report_dir.glob("*.png")}
    svgs = {p.stem for p in report_dir.glob("*.svg")}
    assert pngs == svgs
    # With Best in the store: Fig. 8(a)(b) against Best, Fig. 8(e), the bars, the queue.
    assert {"jrt_slowdown_cdf", "jwt_slowdown_cdf", "contention_cdf", "jct_bars"} <= pngs
    assert not any(n.startswith(".") for n in names)  # no temporary files left behind
    summary = pd.read_csv(report_dir / "summary.csv")
    assert sorted(summary["arch"]) == sorted(ARCHS)
    assert (summary["seeds"] == 2).all()


def test_summary_matches_index(store_dir: Path, report_dir: Path) -> None:
    index = ResultStore(store_dir).index()
    summary = pd.read_csv(report_dir / "summary.csv").set_index("arch")
    for arch in ARCHS:
        x = index.loc[index["arch"] == arch, "mean_jct_s"].to_numpy()
        assert summary.loc[arch, "mean_jct_s"] == pytest.approx(x.mean())
    md = (report_dir / "summary.md").read_text()
    assert "| arch |" in md and "lumoscore-51.2T-tau2" in md


def test_html_is_self_contained(report_dir: Path) -> None:
    page = (report_dir / "report.html").read_text()
    srcs = re.findall(r'src="([^"]*)"', page)
    pngs = sorted(report_dir.glob("*.png"))
    assert len(srcs) == len(pngs)
    embedded = {base64.b64decode(s.split(",", 1)[1]) for s in srcs}
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    assert embedded == {p.read_bytes() for p in pngs}
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert all(h.startswith("#") for h in hrefs)
    assert "<script" not in page and "<link" not in page and "url(" not in page


def test_same_input_gives_identical_files(
    store_dir: Path, report_dir: Path, tmp_path: Path
) -> None:
    again = write_report(store_dir, tmp_path / "again").parent
    first = sorted(p.name for p in report_dir.iterdir())
    assert sorted(p.name for p in again.iterdir()) == first
    for name in first:
        assert (again / name).read_bytes() == (report_dir / name).read_bytes(), name
    assert b"<dc:date>" not in (report_dir / "jct_bars.svg").read_bytes()


def test_cli_errors_name_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for path in (empty, tmp_path / "missing"):
        with pytest.raises(SystemExit) as exc:
            main(["report", str(path)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("lumos: error:") and str(path) in err
    with pytest.raises(ConfigError, match="no finished runs"):
        load_runs(empty)


def test_cli_json(store_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    res = CliRunner().invoke(build_app(), ["report", str(store_dir), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output

    def no_nan(token: str) -> None:
        raise AssertionError(f"non-standard JSON constant {token}")

    doc = json.loads(res.stdout, parse_constant=no_nan)
    assert len(doc["rows"]) == len(ARCHS)
    assert Path(doc["html"]) == out / "report.html"
    assert all(Path(p).is_file() for p in doc["paths"].values())
    res = CliRunner().invoke(build_app(), ["report", str(store_dir), "--out", str(out)])
    assert res.exit_code == 0 and "report.html" in res.stdout


def test_identical_runs_give_byte_identical_reports(tmp_path: Path) -> None:
    """Two identical `lumos run` invocations (fresh stores): report.html, the summaries and the
    figures are byte-identical; wall-clock times live in timings.csv only."""
    from lumoscore.cli import main

    exp = tmp_path / "e.toml"
    exp.write_text(
        'name = "e"\ngpus = 256\narchitectures = ["best", "clos-51.2T-3tier"]\n[trace]\njobs = 12\n'
    )
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        with pytest.raises(SystemExit) as info:
            main(["run", str(exp), "--out", str(out), "--workers", "1"])
        assert info.value.code in (0, None)
    same = ["summary.csv", *(f"report/{p.name}" for p in (outs[0] / "report").iterdir())]
    same = [p for p in same if not p.endswith("timings.csv")]
    assert "report/report.html" in same and "report/summary.csv" in same
    for rel in same:
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel
    timings = (outs[0] / "report" / "timings.csv").read_text()
    assert "wall_s" in timings and "wall_s" not in (outs[0] / "report/report.html").read_text()


def test_report_of_part_of_an_experiment_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run of experiment.json without a stored result (deleted, or a sweep not yet finished)
    is named on stderr and in the report's header; `lumos run` then runs just that one."""
    exp = tmp_path / "e.toml"
    exp.write_text(
        'name = "e"\ngpus = 256\narchitectures = ["best", "clos-51.2T-3tier"]\njobs = 6\n'
    )
    out = tmp_path / "store"
    with pytest.raises(SystemExit) as info:
        main(["run", str(exp), "--out", str(out), "--workers", "1", "--no-report"])
    assert info.value.code in (0, None)
    store = ResultStore(out)
    stored = store.keys()
    clos = next(k for k in stored if store.info(k)["config"]["arch"] != "best")
    shutil.rmtree(store.run_dir(clos))
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["report", str(out)])
    assert info.value.code in (0, None)
    err = capsys.readouterr().err
    assert err.startswith("lumos: warning: ") and err.count("\n") == 1
    assert "1 run(s) of its experiment.json are not stored" in err
    assert "arch=clos-51.2T-3tier, gpus=256, seed=1" in err
    md = (out / "report" / "summary.md").read_text()
    assert "1 of its 2 runs are not stored, e.g. arch=clos-51.2T-3tier" in md
    with pytest.raises(SystemExit) as info:
        main(["run", str(exp), "--out", str(out), "--workers", "1"])
    assert info.value.code in (0, None)
    assert len(ResultStore(out).keys()) == 2 and "not stored" not in capsys.readouterr().err
    assert "not stored" not in (out / "report" / "summary.md").read_text()


@pytest.mark.parametrize("text", ["[]", "{}", '{"key": "zzzz"}', '{"key": "K", "config": 5}'])
def test_a_run_json_of_the_wrong_shape_is_a_damaged_run(store_dir: Path, tmp_path: Path,
                                                        text: str) -> None:  # fmt: skip
    """Valid JSON that is not a run's record: the report names the damaged run (it raised a
    TypeError or KeyError)."""
    import shutil as sh

    copy = tmp_path / "store"
    sh.copytree(store_dir, copy)
    key = ResultStore(copy).keys()[0]
    (copy / "runs" / key / "run.json").write_text(text.replace("K", key))
    with pytest.raises(ConfigError, match=rf"run {key}: run.json is not a run's record"):
        load_runs(copy)
