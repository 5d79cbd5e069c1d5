"""``lumos scale`` and the CLI's error contract (one line, exit code 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers_cli import run


def test_scale_json_is_table1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["scale", "--json"], capsys)
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 60
    assert set(rows[0]) == {"architecture", "chip_tbps", "port_gbps", "max_gpus"}
    archs = {r["architecture"] for r in rows}
    assert archs == {
        "clos-2tier",
        "clos-3tier",
        "clos-3tier-15:1",
        "lumoscore-tau2",
        "lumoscore-tau1",
    }
    cell = next(
        r
        for r in rows
        if r["architecture"] == "lumoscore-tau1"
        and r["chip_tbps"] == 51.2
        and r["port_gbps"] == 1600
    )
    assert cell["max_gpus"] == 131072


def test_scale_custom_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["scale", "--chip", "102.4", "--port", "3200", "--ocs-ports", "320", "--json"], capsys
    )
    assert code == 0
    by = {r["architecture"]: r["max_gpus"] for r in json.loads(out)}
    assert by["lumoscore-tau1"] == 320 * 16 * 16
    assert by["clos-3tier"] == 32**3 // 4


def test_scale_table_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "fig7.png"
    code, out, _ = run(["scale", "--plot", str(png)], capsys)
    assert code == 0
    assert "131.1k" in out and "lumoscore" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "fig7.svg"
    assert run(["scale", "--plot", str(svg), "--json"], capsys)[0] == 0
    assert "<svg" in svg.read_text()


def test_scale_inverse_question(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "fig7.svg"
    argv = ["scale", "--gpus", "4096", "--chip", "25.6", "--json", "--plot", str(svg)]
    code, out, _ = run(argv, capsys)
    assert code == 0
    by = {r["architecture"]: r for r in json.loads(out)}
    assert by["clos-3tier"]["port_gbps"] == 800
    assert by["lumoscore-tau2"]["port_gbps"] == 1600
    assert "4,096 GPUs" in svg.read_text()  # the chart, with the asked size marked
    argv = ["scale", "--gpus", "100000", "--chip", "25.6", "--json"]
    ntier = [json.loads(run(argv + extra, capsys)[1])[-1] for extra in ([], ["--max-tiers", "3"])]
    assert [r["architecture"] for r in ntier] == ["clos-ntier"] * 2
    assert [r["tiers"] for r in ntier] == [4, 3]


def test_unbuildable_cells_are_marked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["scale", "--chip", "0.4", "--port", "200"], capsys)
    assert code == 0 and "not buildable" in out and "tau" in out
    row = next(line for line in out.splitlines() if "0.4T" in line)
    assert row.split("│")[6].strip() == "-" and row.split("│")[7].strip() == "512"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["scale", "--chip", "12.3"], "does not split"),
        (["scale", "--chip", "abc"], "--chip"),
        (["scale", "--plot", "x.gif"], "PNG, SVG or PDF"),
        (["scale", "--max-tiers", "3"], "--max-tiers applies to --gpus only"),
        (["scale", "--plot", "no-such-folder/fig7.png"], "directory no-such-folder does not"),
        (["nosuch"], "No such command"),
    ],
)
def test_bad_input_one_line_exit_2(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(args, capsys)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("lumos: error: ")
    assert "Traceback" not in err


def test_console_script_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from lumoscore.cli import main; main()", "scale", "--chip", "x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("lumos: error:") and "Traceback" not in proc.stderr
