"""``lumos wire --wiring slim-dual-link``: summary, JSON, map file, one-line errors, help; and
the runnable example of docs/wiring.md's Slim Dual-link section prints what it says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from helpers_cli import run
from lumoscore.cli import build_app
from lumoscore.topology import build_wiring, load_cluster, read_wiring_map

DOC = Path(__file__).resolve().parents[1] / "docs" / "wiring.md"


def cluster_file(tmp_path: Path, pods: int = 4, k_spine: int = 8, ocs_ports: int = 16) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        f"[cluster]\npods = {pods}\nk_leaf = 8\nk_spine = {k_spine}\ntau = 2\n"
        f"gpus_per_server = 8\nocs_ports = {ocs_ports}\nport_gbps = 800\n"
    )
    return path


def test_summary_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cluster_file(tmp_path)
    code, out, _ = run(["wire", str(path), "--wiring", "slim-dual-link", "--circulators"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "slim-dual-link wiring with circulators" in text
    assert "4 (max 8 with 16-port OCSes)" in text
    assert "4 x 2 = 8" in text  # 8 / 2 groups x 8 / 4 OCSes
    assert "8 of 16 (psi = 2)" in text
    assert "yes, in units of 2 links" in text


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_json_and_map_file(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cluster_file(tmp_path)
    target = tmp_path / f"map{suffix}"
    code, out, _ = run(
        ["wire", str(path), "--wiring", "slim", "--circulators", "--out", str(target), "--json"],
        capsys,
    )
    assert code == 0
    data = json.loads(out)
    s = data["summary"]
    assert s["wiring"] == "slim-dual-link" and s["circulators"] is True
    assert s["max_pods"] == 8 and s["ocs_per_group"] == 2 and s["psi"] == 2.0
    assert s["fully_compatible"] is True and s["link_granularity"] == 2
    expected = build_wiring(load_cluster(path), "slim-dual-link", circulators=True).to_array()
    assert (read_wiring_map(target) == expected).all()
    ports = np.array([[p["port"], p["tx_ocs"], p["tx_ocs_port"]] for p in data["ports"][:8]])
    assert ports.tolist() == [[k, k // 4, k % 4] for k in range(8)]  # group 0, pod 0


@pytest.mark.parametrize(
    ("args", "cluster", "needle"),
    [
        (
            ["--wiring", "slim-dual-link"],
            {},
            "circulators: slim-dual-link wiring must be deployed with circulators",
        ),
        (["--wiring", "slim"], {}, "allowed: circulators = true (--circulators)"),
        (["--wiring", "slim", "--circulators"], {"k_spine": 6}, "multiple of 4, got 6"),
        (["--wiring", "slim", "--circulators"], {"pods": 9}, "at most 8 pods"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], cluster: dict, needle: str, tmp_path: Path, capsys
) -> None:
    path = cluster_file(tmp_path, **cluster)
    code, out, err = run(["wire", str(path), *args], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lumos: error:") and needle in lines[0]
    assert "Traceback" not in err


def test_help_names_the_new_wiring() -> None:
    res = CliRunner().invoke(build_app(), ["wire", "--help"], env={"COLUMNS": "200"})
    text = " ".join(res.output.split())
    assert res.exit_code == 0
    assert "uniform, dual-link, cross, slim-dual-link" in text
    assert "(required by slim-dual-link)" in text


# ---- docs/wiring.md -----------------------------------------------------------------------
def section_examples(heading: str) -> list[str]:
    text = DOC.read_text()
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.S)


def expected_output(code: str) -> list[str]:
    """``# ...`` lines right after a print and trailing ``# value`` comments of print lines."""
    out: list[str] = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*print\(.*\)\s*#\s*(.+)$", line)
        if m:
            out.append(m.group(1).strip())
        elif line.startswith("# ") and i and "print(" in lines[i - 1]:
            out.append(line[2:].strip())
    return out


def test_docs_example_runs_and_prints_what_the_doc_says() -> None:
    (code,) = section_examples("Slim Dual-link Uniform Wiring (`slim-dual-link`)")
    want = expected_output(code)
    assert len(want) == 6
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == want
