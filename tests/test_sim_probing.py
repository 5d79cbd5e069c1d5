"""Probing routing sees the flows of the jobs already running."""

from __future__ import annotations

import numpy as np

from helpers_sim import job
from lumoscore.fabric.clos import ClosFabric
from lumoscore.sim.engine import Simulator
from lumoscore.sim.plan import build_plan, probe_load


def test_probing_steers_around_running_jobs() -> None:
    fab = ClosFabric(64, 1600, radix=32, tiers=2, gpus_per_server=8, routing="probing")
    servers_a, servers_b = np.arange(0, 8, 2), np.arange(1, 8, 2)
    gpus_a = (servers_a[:, None] * 8 + np.arange(8)).ravel()
    gpus_b = (servers_b[:, None] * 8 + np.arange(8)).ravel()
    a = build_plan(job(0, 0.0, 32), gpus_a, fab)
    bg = probe_load(a, fab.n_links)
    blind = build_plan(job(1, 0.0, 32), gpus_b, fab)
    seeing = build_plan(job(1, 0.0, 32), gpus_b, fab, link_load=bg.copy())
    # the busiest link carrying both jobs' flows is no busier when B sees A's flows
    peak_blind = (bg + probe_load(blind, fab.n_links)).max()
    peak_seeing = (bg + probe_load(seeing, fab.n_links)).max()
    assert peak_seeing <= peak_blind
    shared_blind = np.count_nonzero(bg * probe_load(blind, fab.n_links))
    shared_seeing = np.count_nonzero(bg * probe_load(seeing, fab.n_links))
    assert shared_seeing < shared_blind


def test_simulator_probing_background_is_released() -> None:
    fab = ClosFabric(64, 1600, radix=32, tiers=2, gpus_per_server=8, routing="probing")
    jobs = [job(i, 0.0, 16) for i in range(6)]
    res = Simulator(fab, jobs).run()
    assert res.jobs["finish_s"].notna().all()
