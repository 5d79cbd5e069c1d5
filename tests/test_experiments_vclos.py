"""vClos task presets: Fig. 2 against a closed form, Table 5/2 outputs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lumoscore.experiments.vclos import (
    TABLE5_PAPER,
    VCLOS_CASES,
    hash_collisions,
    run_vclos_fig2,
    run_vclos_table5,
)
from lumoscore.fabric.leafspine import leaf_spine_shape


@pytest.mark.parametrize("gpus", [512, 2048])
def test_share_of_lone_flows_matches_balls_in_bins(gpus):
    """Each leaf sends S flows over S hashed uplinks and receives S over S downlinks: a flow
    is alone on both with probability ((1 - 1/S)^(S-1))^2 when the hashes are uniform."""
    _, S = leaf_spine_shape(gpus, 8)
    expected = ((1 - 1 / S) ** (S - 1)) ** 2
    shares = hash_collisions(gpus, trials=30, seed=4)
    assert math.isclose(float(shares.sum()), 1.0)
    assert abs(shares[0] - expected) < 0.015
    assert shares[1] > shares[0]  # two flows on a link is the most common case


def test_fig2_files(tmp_path):
    out = run_vclos_fig2(tmp_path, scales_gpus=[128, 512], trials=2)
    assert {p.name for p in out.files} >= {"fig2.csv", "fig2.md", "fig2.png", "fig2.svg"}
    assert [r["gpus"] for r in out.rows] == [128, 512]


@pytest.mark.filterwarnings("error")  # (no 0/0 RuntimeWarning)
@pytest.mark.parametrize("argv", [["--gpus", "8"], ["--gpus", "8", "--quick"],
                                  ["--gpus", "12"], ["--gpus", "128", "--gpus", "8"]])  # fmt: skip
def test_fig2_refuses_sizes_without_two_leaves_by_name(tmp_path, capsys, argv):
    from helpers_cli import run

    out = tmp_path / "fig2"
    code, stdout, err = run(["run", "--preset", "vclos-fig2", *argv, "--out", str(out)], capsys)
    bad = "12" if "12" in argv else "8"
    assert code == 2 and stdout == ""
    assert err == (
        f"lumos: error: gpus: a multiple of 8 (GPUs a server) from 16 (two leaves), got {bad}\n"
    )
    assert not out.exists()  # nothing written, not even the folder (nor 128's results)


def test_fig2_at_two_leaves_is_finite(tmp_path):
    out = run_vclos_fig2(tmp_path, scales_gpus=[16], trials=2)
    shares = [v for k, v in out.rows[0].items() if k != "gpus"]
    assert all(math.isfinite(v) for v in shares) and math.isclose(sum(shares), 1.0)


def test_table5_writes_ours_beside_the_paper_and_resumes(tmp_path):
    kw = {"lambdas": (120.0,), "jobs": 30, "seeds": (1,), "workers": 1, "progress": False}
    out = run_vclos_table5(tmp_path, **kw)
    row = out.rows[0]
    for label, *_ in VCLOS_CASES:
        assert row[f"{label}_jct_s"] > 0
        assert row[f"{label}_paper_jct_s"] == TABLE5_PAPER[120.0][label]
    t2 = pd.read_csv(tmp_path / "table2.csv")
    assert list(t2["vclos_servers_paper"]) == [878.0]
    runs = sorted((tmp_path / "store" / "runs").iterdir())
    assert len(runs) == len(VCLOS_CASES)
    stamp = [p.stat().st_mtime_ns for p in runs]
    run_vclos_table5(tmp_path, **kw)  # every run is in the store: nothing runs again
    assert [p.stat().st_mtime_ns for p in runs] == stamp


def test_tables_6_and_7_write_ours_beside_the_paper(tmp_path):
    from lumoscore.experiments.vclos import (
        TABLE6_PAPER,
        TABLE7_PAPER,
        run_vclos_table6,
        run_vclos_table7,
    )

    kw = {"jobs": 25, "seeds": (1,), "workers": 1, "progress": False}
    six = run_vclos_table6(tmp_path, queues=("fifo", "smallest-first"), **kw)
    assert [r["queue"] for r in six.rows] == ["fifo", "smallest-first"]
    assert six.rows[1]["best_paper_jct_s"] == TABLE6_PAPER["smallest-first"]["best"]
    seven = run_vclos_table7(tmp_path, **kw)
    assert [r["criterion"] for r in seven.rows] == ["jrt", "jwt", "jct"]
    jrt, jwt, jct = (r["best_s"] for r in seven.rows)
    assert abs(jrt + jwt - jct) < 1e-6 * jct
    assert seven.rows[2]["ecmp_paper_s"] == TABLE7_PAPER["jct"]["ecmp"]


def test_table4_runs_the_testbed_with_redundant_ecmp(tmp_path):
    from lumoscore.experiments.store import ResultStore
    from lumoscore.experiments.vclos import TABLE4_CASES, TABLE4_PAPER, run_vclos_table4

    out = run_vclos_table4(tmp_path, jobs=30, seeds=(1, 2), workers=1, progress=False)
    jrt, jwt, jct = out.rows
    assert jrt["ecmp_paper_s"] == TABLE4_PAPER["jrt"]["ecmp"]
    # isolation: vClos and OCS-vClos run every job at its contention-free run time
    assert jrt["vclos_s"] == pytest.approx(jrt["ocs-vclos_s"])
    assert jrt["ecmp_s"] >= jrt["vclos_s"] and jrt["recmp_s"] >= jrt["vclos_s"]
    for label, *_ in TABLE4_CASES:
        assert jrt[f"{label}_s"] + jwt[f"{label}_s"] == pytest.approx(jct[f"{label}_s"])
    store = ResultStore(tmp_path / "store")
    keys = store.keys()
    spines = {store.info(k)["fabric"]["spines"] for k in keys}
    assert spines == {4, 6}  # the testbed's 4 spines, and rECMP's 50 % more links
    sizes = pd.read_csv(tmp_path / "table4-sizes.csv")
    assert set(sizes["gpus"]) <= {2, 4, 8, 16}
    # jobs on one server never touch the network: every strategy runs them alike
    small = sizes[sizes["gpus"] <= 4]
    assert (small["ecmp_over_vclos"].abs() < 1e-9).all()


def test_fig13_writes_both_clusters_and_the_papers_claims(tmp_path):
    from lumoscore.experiments.vclos import FIG13_PAPER, run_vclos_fig13

    out = run_vclos_fig13(
        tmp_path, clusters=((512, 120.0),), jobs=30, seeds=(1,), workers=1, progress=False
    )
    assert [r["strategy"] for r in out.rows] == [label for label, *_ in VCLOS_CASES]
    claims = pd.read_csv(tmp_path / "fig13-claims.csv")
    assert len(claims) == sum(1 for g, *_ in FIG13_PAPER if g == 512)
    assert {p.name for p in out.files} >= {"fig13.csv", "fig13.png", "fig13-claims.csv"}
