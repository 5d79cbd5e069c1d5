"""``lumos wire``: summary, --json shape, --out files, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers_cli import run
from lumoscore.topology import build_wiring, load_cluster, read_wiring_map
from lumoscore.topology.wiring import RECORD_COLUMNS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def cluster_file(tmp_path: Path, pods: int, ocs_ports: int) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        f"[cluster]\npods = {pods}\nk_leaf = 8\nk_spine = 8\ntau = 2\n"
        f"gpus_per_server = 8\nocs_ports = {ocs_ports}\nport_gbps = 800\n"
    )
    return path


def test_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["wire", str(EXAMPLES / "cluster.toml")], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "cross wiring without circulators" in text
    assert "32 (max 512 with 512-port OCSes)" in text
    assert "8 x 16 = 128" in text
    assert "full compatibility" in text and "yes" in text
    assert "ok: 2xFR4" in text
    code, out, _ = run(["wire", str(EXAMPLES / "cluster.toml"), "--wiring", "uniform"], capsys)
    assert code == 0 and "no (ToE NP-complete)" in " ".join(out.split())


def test_power_budget_warning_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cluster_file(tmp_path, pods=4, ocs_ports=320)
    code, out, _ = run(["wire", str(path), "--circulators"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "at-limit" in text and "warning:" in text
    code, out, _ = run(["wire", str(path), "--transceiver", "SR8"], capsys)
    assert code == 0 and "over: SR8" in " ".join(out.split())
    code, out, _ = run(["wire", str(path), "--transceiver", "SR8", "--ocs-loss-db", "1"], capsys)
    assert code == 0 and "ok: SR8" in " ".join(out.split())


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "cluster-small.toml"
    code, out, _ = run(["wire", str(path), "--wiring", "dual-link", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"summary", "power_budget", "ports"}
    spec = load_cluster(path)
    s = data["summary"]
    assert s["wiring"] == "dual-link" and s["pods"] == spec.pods
    assert s["max_pods"] == spec.ocs_ports // 2 and s["fully_compatible"] is True
    assert s["ocs_per_group"] == spec.k_spine // 2
    assert data["power_budget"]["ok"] is True and data["power_budget"]["transceiver"] == "2xFR4"
    ports = data["ports"]
    assert len(ports) == spec.ocs_groups * spec.pods * spec.k_spine
    assert all(tuple(p) == RECORD_COLUMNS for p in ports)
    expected = build_wiring(spec, "dual-link").to_array()
    got = np.array([[p[c] for c in RECORD_COLUMNS] for p in ports])
    assert (got == expected).all()


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_out_files(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "cluster-small.toml"
    target = tmp_path / f"map{suffix}"
    code, out, _ = run(["wire", str(path), "--circulators", "--out", str(target)], capsys)
    assert code == 0 and f"wrote {target}" in out.replace("\n", "")
    expected = build_wiring(load_cluster(path), "cross", circulators=True).to_array()
    assert (read_wiring_map(target) == expected).all()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--wiring", "mesh"], "unknown kind 'mesh'"),
        (["--transceiver", "QSFP"], "unknown module 'QSFP'"),
        (["--wiring", "dual-link"], "do not fit dual-link"),
        (["--out", "map.txt"], "unknown format '.txt'"),
        (["--ocs-loss-db", "-2"], "ocs_loss_db must be"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cluster_file(tmp_path, pods=10, ocs_ports=16)  # 10 pods > 16 / 2 for dual-link
    code, out, err = run(["wire", str(path), *args], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lumos: error:") and needle in lines[0]
    assert not (tmp_path / "map.txt").exists()


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["wire", str(tmp_path / "none.toml")], capsys)
    assert code == 2 and "no such file" in err and len(err.strip().splitlines()) == 1


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("speed", "shown"), [("inf", "inf"), ("nan", "nan"), ("0", "0.0"),
                                              ("-800", "-800.0"), ("1e300", "1e+300")])  # fmt: skip
def test_a_port_speed_out_of_range_is_refused_by_name(
    speed: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cluster_file(tmp_path, pods=10, ocs_ports=16)
    path.write_text(path.read_text().replace("port_gbps = 800", f"port_gbps = {speed}"))
    message = (
        f"lumos: error: {path}: cluster.port_gbps: must be a number from 0.001 to 100000 "
        f"(Gb/s), got {shown}\n"
    )
    for argv in (["wire", str(path), "--json"], ["te", str(path), str(tmp_path / "t.npy")]):
        np.save(tmp_path / "t.npy", np.ones((10, 10)) - np.eye(10))
        code, out, err = run(argv, capsys)
        assert code == 2 and out == "" and err == message
