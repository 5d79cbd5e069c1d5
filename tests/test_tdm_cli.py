"""``lumos tdm``: presets, TOML files, JSON output, plots and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumoscore.cli import main
from lumoscore.tdm.config import load_config, preset

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_small_preset_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["tdm", "--preset", "small", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    for key in (
        "round_time_tdm_s",
        "round_time_non_tdm_s",
        "improvement",
        "groups",
        "stages",
        "solve_s",
    ):
        assert key in data
    assert data["round_time_tdm_s"] <= data["round_time_non_tdm_s"]
    assert data["improvement"] == pytest.approx(
        1 - data["round_time_tdm_s"] / data["round_time_non_tdm_s"]
    )
    assert len(data["stages"]) == 4
    assert sorted(data["groups"]["0"] + data["groups"]["1"]) == list(range(data["n_jobs"]))
    assert data["ilp"]["status"] == "optimal"
    assert data["ilp"]["round_s"] <= data["round_time_tdm_s"] * (1 + 1e-6)


def test_same_seed_same_result(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tdm", "--preset", "paper", "--jobs", "12", "--seed", "5", "--json"]
    a = json.loads(_run(args, capsys)[1])
    b = json.loads(_run(args, capsys)[1])
    c = json.loads(_run([*args[:-2], "6", "--json"], capsys)[1])
    for d in (a, b, c):
        d.pop("solve_s")
    assert a == b
    assert a != c


def test_example_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert load_config(EXAMPLES / "tdm-paper.toml") == preset("paper")
    plot = tmp_path / "tdm.png"
    code, out, _ = _run(["tdm", str(EXAMPLES / "tdm-small.toml"), "--plot", str(plot)], capsys)
    assert code == 0 and plot.stat().st_size > 0
    assert "ILP optimum" in out and "improvement" in out


def test_sweep_json_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["tdm", "--preset", "small", "--no-ilp", "--sweep", "--json"], capsys)
    rows = json.loads(out)["sweep"]
    assert code == 0
    assert {r["sweep"] for r in rows} == {"n_jobs", "context_tokens"}
    assert all(r["round_tdm_s"] <= r["round_non_tdm_s"] + 1e-9 for r in rows)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[network]\nn_pods = 10\npods_per_group = 4\n", "multiple of pods_per_group"),
        ("[network]\nportz = 3\n", "network.portz"),
        ("[[jobs]]\nkind = 'tree'\nmodel = '1B'\ndegree = 2\n", "'ps', 'rar' or 'alltoall'"),
        ("[[jobs]]\nkind = 'ps'\nmodel = '7B'\ndegree = 2\n", "allowed ['1B', '3B', '8B', '90B']"),
        ("[workload]\ndegree_min = 5\ndegree_max = 2\n", "degree_min"),
        ("[compute]\nefficiency = 2\n", "compute.efficiency"),
        ("[network]\nreconfig_us = inf\n", "network.reconfig_us: Input should be a finite"),
        ("[network]\nreconfig_us = nan\n", "network.reconfig_us: Input should be a finite"),
        ("[network]\nport_gbps = inf\n", "network.port_gbps: Input should be a finite"),
        ("[compute]\ngpu_tflops = inf\n", "compute.gpu_tflops: Input should be a finite"),
        ("seed = [\n", "invalid TOML"),
    ],
)
def test_bad_config_one_line_error(
    text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    code, _, err = _run(["tdm", str(f)], capsys)
    assert code == 2
    assert err.startswith("lumos: error:") and err.count("\n") == 1
    assert needle in err


def test_needs_file_or_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["tdm"], capsys)
    assert code == 2 and "--preset" in err
    code, _, err = _run(["tdm", "--preset", "nope"], capsys)
    assert code == 2 and "paper, small" in err


def test_a_bad_plot_path_fails_before_the_solves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path, needle in (
        (tmp_path / "nope" / "x.png", "does not exist"),
        (tmp_path / "x.gif", "PNG"),
    ):
        code, out, err = _run(["tdm", "--preset", "small", "--plot", str(path)], capsys)
        assert code == 2 and needle in err and err.count("\n") == 1 and out == ""
