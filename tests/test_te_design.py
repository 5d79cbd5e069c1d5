"""Traffic engineering beyond one LP: column generation against the full LP, the series API,
the Facebook-like generators, the COUDER-style robust design, Uniform realizations with
spread losses, and the Fig. 9 presets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.te import (
    facebook_traffic,
    full_mesh,
    gravity_traffic,
    min_mlu,
    min_mlu_series,
    realize,
    robust_topology,
)
from lumoscore.te.lp import two_hop_paths


def _instance(pods: int, seed: int, density: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cap = rng.integers(1, 4, size=(pods, pods)).astype(float)
    cap[rng.random((pods, pods)) > density] = 0.0
    cap = np.maximum(cap, cap.T)  # circuits are bidirectional
    np.fill_diagonal(cap, 0.0)
    tm = rng.random((pods, pods)) * (rng.random((pods, pods)) < 0.7)
    np.fill_diagonal(tm, 0.0)
    tm[cap + (cap @ cap) == 0] = 0.0  # keep every commodity routable
    return cap, tm


@settings(max_examples=40, deadline=None)
@given(pods=st.integers(3, 9), seed=st.integers(0, 2**16), density=st.floats(0.4, 1.0))
def test_column_generation_reaches_the_full_lp_optimum(pods: int, seed: int, density: float):
    cap, tm = _instance(pods, seed, density)
    full = min_mlu(cap, tm, method="full")
    cg = min_mlu(cap, tm, method="columns")
    assert cg.mlu == pytest.approx(full.mlu, abs=1e-7, rel=1e-7)
    assert (cg.load <= cg.mlu * cap + 1e-7).all()
    # warm start from another solution's paths changes nothing but the work
    again = min_mlu(cap, tm, method="columns", start=full.transit)
    assert again.mlu == pytest.approx(full.mlu, abs=1e-7, rel=1e-7)
    # the transit paths reported exist and avoid their own ends
    for s, k, t in cg.transit:
        assert cap[s, k] > 0 and cap[k, t] > 0 and k not in (s, t)


def test_series_equals_one_snapshot_at_a_time() -> None:
    cap = 8.0 * (np.ones((7, 7)) - np.eye(7))
    seq = facebook_traffic("hadoop", 7, snapshots=5, seed=3, total=60.0)
    got = [r.mlu for r in min_mlu_series(cap, seq, method="columns")]
    assert got == pytest.approx([min_mlu(cap, d).mlu for d in seq], rel=1e-7)
    with pytest.raises(ConfigError, match="method"):
        min_mlu(cap, seq[0], method="simplex")  # type: ignore[arg-type]


def test_two_hop_paths_enumerates_every_relay() -> None:
    up = np.ones((4, 4), bool) & ~np.eye(4, dtype=bool)
    up[0, 2] = False
    _, k = two_hop_paths(up, np.array([0]), np.array([3]))
    assert sorted(k.tolist()) == [1]  # 0->2 is down; 0->1->3 remains


@pytest.mark.parametrize("kind", ["hadoop", "web", "database"])
def test_facebook_traffic_is_valid_and_reproducible(kind: str) -> None:
    a = facebook_traffic(kind, 9, snapshots=40, seed=7, total=5.0)
    assert a.shape == (40, 9, 9) and np.allclose(a.sum(axis=(1, 2)), 5.0)
    assert (a >= 0).all() and (np.diagonal(a, axis1=1, axis2=2) == 0).all()
    assert np.array_equal(a, facebook_traffic(kind, 9, snapshots=40, seed=7, total=5.0))
    assert not np.array_equal(a, facebook_traffic(kind, 9, snapshots=40, seed=8, total=5.0))
    # persistence: consecutive snapshots correlate (log space, off-diagonal pairs)
    off = ~np.eye(9, dtype=bool)
    x = np.log(a[:, off])
    lag1 = np.mean([np.corrcoef(x[i], x[i + 1])[0, 1] for i in range(39)])
    assert lag1 > 0.6


def test_facebook_kinds_have_their_structure() -> None:
    web = facebook_traffic("web", 8, snapshots=20, seed=2).mean(axis=0)
    db = facebook_traffic("database", 9, snapshots=20, seed=2).mean(axis=0)
    hadoop = facebook_traffic("hadoop", 9, snapshots=20, seed=2).mean(axis=0)

    def share(m: np.ndarray, n: int) -> float:
        """The share of the traffic on the ``n`` busiest pod pairs."""
        pairs = np.sort((m + m.T)[np.triu_indices(m.shape[0], 1)])[::-1]
        return float(pairs[:n].sum() / m.sum())

    # web: the 2 caches' 12 pairs with the 6 web pods carry most of the traffic
    assert share(web, 12) > 0.8
    # database: the 3 active pods' 3 pairs carry most; Hadoop is spread widely
    assert share(db, 3) > 0.8 and share(hadoop, 3) < 0.35
    with pytest.raises(ConfigError, match="unknown"):
        facebook_traffic("video", 9)
    with pytest.raises(ConfigError, match="pods"):
        facebook_traffic("database", 2)


@settings(max_examples=15, deadline=None)
@given(pods=st.integers(3, 6), seed=st.integers(0, 2**16), ports=st.integers(2, 6))
def test_robust_design_beats_the_full_mesh_and_fits_the_ports(pods: int, seed: int, ports: int):
    """The LP optimizes over every fractional topology within the ports; the full mesh is one
    of them when ``ports >= pods - 1``, so the design's MLU is never above the full mesh's
    worst MLU over the same matrices. The rounded design is symmetric and within the ports."""
    rng = np.random.default_rng(seed)
    window = rng.random((3, pods, pods)) * 4
    window[:, np.arange(pods), np.arange(pods)] = 0.0
    groups = 2
    design = robust_topology(window, groups, ports)
    C = design.circuits
    assert C.shape == (groups, pods, pods) and (np.transpose(C, (0, 2, 1)) == C).all()
    assert (C.sum(axis=2) <= ports).all()
    if ports >= pods - 1:
        mesh = full_mesh(pods, groups).sum(axis=0).astype(float)
        worst = max(min_mlu(mesh, d).mlu for d in window)
        assert design.mlu <= worst + 1e-7
    # the fractional design routes every matrix at its MLU (a second LP agrees)
    frac = design.fractional
    assert max(min_mlu(frac, d).mlu for d in window) == pytest.approx(design.mlu, rel=1e-6)


@settings(max_examples=20, deadline=None)
@given(traffic_exp=st.integers(-200, 200), port_exp=st.integers(-3, 5), seed=st.integers(0, 99))
def test_robust_design_does_not_depend_on_the_units(
    traffic_exp: int, port_exp: int, seed: int
) -> None:
    """design.mlu scales with traffic / capacity over any units (10^6 times the traffic
    gave twice the MLU, 10^9 inf, 10^-12 'unbounded')."""
    tm = gravity_traffic(6, snapshots=3, seed=seed, total=2400.0)
    base = robust_topology(tm, 2, 4, port_gbps=400.0).mlu
    s, port = 10.0**traffic_exp, 10.0**port_exp
    got = robust_topology(tm * s, 2, 4, port_gbps=port).mlu
    assert got == pytest.approx(base * s * 400.0 / port, rel=1e-7)


def test_robust_design_rejects_bad_parameters() -> None:
    with pytest.raises(ConfigError, match="no demand"):
        robust_topology(np.zeros((4, 4)), 1, 2)
    with pytest.raises(ConfigError, match="groups and ports"):
        robust_topology(np.ones((3, 3)) - np.eye(3), 0, 2)


def test_uniform_realization_spreads_its_losses() -> None:
    from lumoscore.experiments.dcn_te import dcn_spec

    spec = dcn_spec()
    C = full_mesh(spec.pods, spec.ocs_groups)
    spread = realize(spec, C, "uniform")
    plain = realize(spec, C, "uniform", spread=False)
    assert spread.ltcr == pytest.approx(8 / 9) and plain.ltcr == pytest.approx(8 / 9)
    assert spread.circuits.sum() == plain.circuits.sum() == 512
    # 64 circuits a pod asked: spread, no pod loses more than 8; plain drops whole pairs
    assert spread.circuits.sum(axis=1).min() >= 56
    assert plain.circuits.sum(axis=1).min() < spread.circuits.sum(axis=1).min()
    assert (spread.circuits == spread.circuits.T).all()


def test_fig9_presets_show_the_effect(tmp_path) -> None:
    from lumoscore.experiments.dcn_te import run_cw_fig9a, run_cw_fig9b

    a = run_cw_fig9a(tmp_path / "a", snapshots=4)
    row = a.rows[0]
    assert row["uniform_ltcr"] == pytest.approx(0.8889, abs=1e-4)
    assert row["mean_excess_pct"] > 0 and row["paper_max_excess_pct"] == 12.36
    assert {p.name for p in a.files} >= {"cw-fig9a.csv", "cw-fig9a.md", "cw-fig9a.png"}
    b = run_cw_fig9b(tmp_path / "b", snapshots=4, window=2)
    assert b.rows[0]["max_excess_pct"] >= 0 and b.rows[0]["snapshots"] == 4


def test_robust_design_refuses_an_lp_too_large() -> None:
    from lumoscore.te.design import MAX_DESIGN_PATHS

    window = facebook_traffic("hadoop", 64, snapshots=12, seed=1)
    with pytest.raises(ConfigError, match=r"max_matrices: .* path variables"):
        robust_topology(window, 8, 63)
    assert MAX_DESIGN_PATHS < 12 * 64 * 63 * 63


def test_cli_traffic_aware_and_slim_dual_link(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from lumoscore.cli import build_app

    (tmp_path / "c.toml").write_text(
        "[cluster]\npods = 4\nk_leaf = 4\nk_spine = 4\ntau = 1\ngpus_per_server = 1\n"
        "ocs_ports = 8\n"
    )
    np.save(tmp_path / "t.npy", facebook_traffic("web", 4, snapshots=3, seed=2, total=10.0))
    runner = CliRunner()
    got = {}
    for wiring in ("cross", "slim-dual-link"):
        args = ["te", str(tmp_path / "c.toml"), str(tmp_path / "t.npy"), "--wiring", wiring,
                "--logical", "traffic-aware", "--matrices", "2", "--json"]  # fmt: skip
        res = runner.invoke(build_app(), args)
        assert res.exit_code == 0, res.output
        got[wiring] = json.loads(res.output)
    assert got["cross"]["ltcr"] == 1.0 and len(got["cross"]["mlu"]) == 3
    # slim realizes links in coupled pairs: never more than cross, never above LTCR 1
    assert got["slim-dual-link"]["ltcr"] <= 1.0
    assert all(
        a <= b + 1e-9
        for a, b in zip(got["cross"]["mlu"], got["slim-dual-link"]["mlu"], strict=True)
    )
