"""``lumos toe``: JSON output, configuration files, reconfiguration, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers_cli import run
from lumoscore.toe import random_demands
from lumoscore.topology import build_wiring, load_cluster, verify_circuits

CLUSTER = """[cluster]
pods = 4
k_leaf = 8
k_spine = 8
tau = 2
gpus_per_server = 8
ocs_ports = 16
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(CLUSTER)
    C = random_demands(4, 4, 8, np.random.default_rng(0))  # H = 8 / 2 = 4 groups
    np.save(tmp_path / "demand.npy", C)
    np.savetxt(tmp_path / "one.csv", C[0], fmt="%d", delimiter=",")
    return {"cluster": cluster, "npy": tmp_path / "demand.npy", "csv": tmp_path / "one.csv"}


def test_whole_cluster_then_reconfigure(files, tmp_path, capsys) -> None:
    cfg = tmp_path / "cfg.json"
    code, out, _ = run(
        ["toe", str(files["cluster"]), str(files["npy"]), "--out", str(cfg), "--json"], capsys
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["ltcr"] == 1.0 and summary["groups"] == [0, 1, 2, 3]
    doc = json.loads(cfg.read_text())
    assert doc["format"] == "lumoscore-ocs-config" and doc["columns"][0] == "group"
    w = build_wiring(load_cluster(files["cluster"]), "cross")
    assert verify_circuits(w, doc["circuits"], np.load(files["npy"])) == []
    code, out, _ = run(
        ["toe", str(files["cluster"]), str(files["npy"]), "--current", str(cfg), "--json"], capsys
    )
    again = json.loads(out)
    assert code == 0 and again["mrar"] == 1.0 and again["rewired_circuits"] == 0
    C2 = random_demands(4, 4, 8, np.random.default_rng(5))
    np.save(tmp_path / "next.npy", C2)
    args = ["toe", str(files["cluster"]), str(tmp_path / "next.npy"), "--current", str(cfg)]
    code, out, _ = run([*args, "--iota", "0.5", "--json"], capsys)
    staged = json.loads(out)
    assert code == 0 and sorted(h for s in staged["stages"] for h in s) == [0, 1, 2, 3]
    assert staged["stage_max_loss_share"] <= 0.5


def test_one_group_csv_with_other_solvers(files, capsys) -> None:
    for solver in ("mcf", "ilp"):
        args = ["toe", str(files["cluster"]), str(files["csv"]), "--group", "2"]
        code, out, _ = run([*args, "--solver", solver, "--json"], capsys)
        assert code == 0
        assert json.loads(out)["groups"] == [2]
    code, out, _ = run(
        ["toe", str(files["cluster"]), str(files["csv"]), "--wiring", "uniform", "--solver",
         "helios"],
        capsys,
    )  # fmt: skip
    assert code == 0 and "LTCR" in out


def test_errors_are_one_line(files, tmp_path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1,0,0\n0,0,0,0\n0,0,0,0\n0,0,0,0\n")
    code, _, err = run(["toe", str(files["cluster"]), str(bad)], capsys)
    assert code == 2 and "pods 0 and 1" in err and err.count("\n") == 1
    cur = tmp_path / "cur.json"
    cur.write_text(json.dumps({"circuits": [[0, 3, 0, 0, 1, 1]]}))
    code, _, err = run(
        ["toe", str(files["cluster"]), str(files["csv"]), "--current", str(cur)], capsys
    )
    assert code == 2 and "pod 0 port 0 is wired to OCS 0, not OCS 3" in err
    code, _, err = run(
        ["toe", str(files["cluster"]), str(files["csv"]), "--wiring", "uniform"], capsys
    )
    assert code == 2 and "allowed solvers for this wiring" in err
    code, _, err = run(["toe", str(files["cluster"]), str(files["csv"]), "--solver", "x"], capsys)
    assert code == 2 and "allowed: mdmcf, mcf, ilp, bvn, helios" in err


@pytest.mark.parametrize("group", [9, -1])
def test_a_current_circuit_in_no_group_of_the_wiring_is_refused(
    files, tmp_path, capsys, group: int
) -> None:
    """The current configuration's groups are checked against the wiring's (4 here) even when
    only one group is solved: a circuit of group 9 is not silently left out."""
    cur = tmp_path / "cur.json"
    cur.write_text(json.dumps({"circuits": [[group, 0, 0, 0, 1, 1]]}))
    args = ["toe", str(files["cluster"]), str(files["csv"]), "--group", "1"]
    code, _, err = run([*args, "--current", str(cur), "--iota", "0.5"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"group {group} out of range; allowed 0..3" in err


@pytest.mark.parametrize("iota", ["0", "-0.5", "1.5", "nan"])
def test_iota_outside_its_range_is_refused(files, capsys, iota: str) -> None:
    code, _, err = run(["toe", str(files["cluster"]), str(files["npy"]), "--iota", iota], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--iota" in err and "0 < iota <= 1" in err


def test_a_current_circuit_beyond_int64_is_one_line(files, tmp_path, capsys) -> None:
    cur = tmp_path / "cur.json"
    cur.write_text(json.dumps({"circuits": [[0, 0, 2**70, 0, 1, 1]]}))
    args = ["toe", str(files["cluster"]), str(files["npy"]), "--current", str(cur)]
    code, _, err = run(args, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "circuits[0]" in err and "every row must be 6 integers" in err


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("entries", "dtype", "message"),
    [
        ({(0, 1): 1e20, (1, 0): 1e20}, np.float64, "has an entry of magnitude 1e+20"),
        (
            {(0, 1): 2**62, (1, 0): 2**62, (0, 2): 2**62, (2, 0): 2**62},  # row 0 sums to 2^63
            np.int64,
            "sums to more than 1125899906842624 in absolute value",
        ),
    ],
)
def test_a_demand_beyond_max_total_is_refused_by_name(
    files, tmp_path, capsys, entries: dict[tuple[int, int], float], dtype: type, message: str
) -> None:
    C = np.zeros((4, 4), dtype=dtype)
    for idx, v in entries.items():
        C[idx] = v
    path = tmp_path / "huge.npy"
    np.save(path, C)
    code, out, err = run(["toe", str(files["cluster"]), str(path), "--json"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"lumos: error: {path}: demand {message}; allowed: at most ")
    assert "1125899906842624" in err and "negative" not in err


@pytest.mark.filterwarnings("error")  # (no ComplexWarning)
def test_a_complex_demand_is_refused_by_name(files, tmp_path, capsys) -> None:
    path = tmp_path / "complex.npy"
    np.save(path, np.load(files["npy"]).astype(np.complex128))
    code, out, err = run(["toe", str(files["cluster"]), str(path), "--json"], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"lumos: error: {path}: demand has complex entries (dtype complex128); allowed: "
        "integers (integer-valued floats too)\n"
    )
