"""The logical topology over a run (LumosCore Fig. 10)."""

from __future__ import annotations

import numpy as np
import pytest

from lumoscore.errors import ConfigError
from lumoscore.fabric import make_fabric
from lumoscore.sim import Simulator
from lumoscore.sim.topology_log import mean_topology, topology_at
from lumoscore.workload import generate_trace


def test_the_log_follows_the_fabric_and_ends_empty() -> None:
    """Every record is the fabric's circuits at that moment (symmetric, pod-level, within the
    OCS ports); after the last job leaves no circuit is in use; the mean lies between the
    smallest and largest snapshot entry-wise."""
    fab = make_fabric("lumoscore-51.2T-tau2", 512)
    jobs = generate_trace("lumoscore-published", 30, seed=2, cluster_gpus=512).jobs
    res = Simulator(fab, jobs, exposure="research", record_topology=True).run()
    log = res.topology
    assert set(log.columns) == {"time_s", "src_pod", "dst_pod", "circuits"}
    P = fab.spec.pods
    times = np.unique(log["time_s"])
    mats = [topology_at(log, t, P) for t in times]
    for m in mats:
        assert (m == m.T).all() and (np.diag(m) == 0).all()
        assert (m.sum(axis=1) <= fab.spec.ocs_groups * fab.spec.k_spine).all()
    assert not mats[-1].any()  # the last job left: no circuit
    end = float(res.jobs["finish_s"].max())
    mean = mean_topology(log, P, 0.0, end)
    stack = np.stack(mats)
    assert (mean <= stack.max(axis=0) + 1e-9).all() and (mean >= 0).all()
    assert mean.sum() > 0


def test_recording_needs_ocs_circuits_and_changes_no_result() -> None:
    jobs = generate_trace("lumoscore-published", 10, seed=1, cluster_gpus=512).jobs
    with pytest.raises(ConfigError, match="OCS circuits"):
        Simulator(make_fabric("best", 512), jobs, record_topology=True)
    a = Simulator(make_fabric("lumoscore-51.2T-tau2", 512), jobs).run()
    b = Simulator(make_fabric("lumoscore-51.2T-tau2", 512), jobs, record_topology=True).run()
    assert a.jobs.equals(b.jobs) and a.topology.empty and not b.topology.empty


def test_fig10_preset_writes_snapshots_and_mean(tmp_path) -> None:
    from lumoscore.experiments.topology_snapshots import run_fig10

    out = run_fig10(tmp_path, gpus=512, jobs=30)
    assert [r["what"] for r in out.rows] == ["snapshot 1", "snapshot 2", "snapshot 3",
                                              "snapshot 4", "mean"]  # fmt: skip
    assert (tmp_path / "fig10.png").stat().st_size > 0
    assert (tmp_path / "fig10-mean.csv").exists()
