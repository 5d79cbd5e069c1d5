"""Placers: the locality placer's hierarchical best fit, checked against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.fabric import make_fabric
from lumoscore.sim import PLACERS, Simulator
from lumoscore.sim.placers import LocalityPlacer
from lumoscore.workload import Job, generate_trace


def job(i: int, gpus: int) -> Job:
    return Job(job_id=i, arrival_s=0.0, gpus=gpus, model="llama_7b", tp=8, pp=1,
               dp=max(gpus // 8, 1), ep=8, iterations=1, duration_s=1.0)  # fmt: skip


def blocks_used(gpus: np.ndarray, size: int) -> int:
    return int(np.unique(gpus // size).size)


@settings(max_examples=60, deadline=None)
@given(
    busy=st.lists(st.booleans(), min_size=32, max_size=32),
    need=st.integers(1, 16),
)
def test_a_job_uses_the_fewest_pods_possible(busy: list[bool], need: int) -> None:
    """32 servers, leaves of 2, pods of 8: the job spans the fewest pods any choice of its
    free servers could, and never a busy server."""
    p = LocalityPlacer(256, 8, levels=(16, 64))
    taken = np.flatnonzero(busy)
    p.free_slots[taken] = 0
    free_per_pod = 8 - np.bincount(taken // 8, minlength=4)
    got = p.place(job(0, 8 * need))
    if free_per_pod.sum() < need:
        assert got is None
        return
    assert got is not None and got.size == 8 * need
    servers = np.unique(got // 8)
    assert servers.size == need and not np.isin(servers, taken).any()
    fewest = next(
        k for k in range(1, 5)
        if any(free_per_pod[list(c)].sum() >= need for c in itertools.combinations(range(4), k))
    )  # fmt: skip
    assert blocks_used(servers, 8) == fewest


def test_a_job_that_fits_one_pod_takes_the_fullest_such_pod() -> None:
    p = LocalityPlacer(256, 8, levels=(16, 64))
    p.free_slots[[0, 1, 2, 3, 4, 5, 8, 9]] = 0  # pod 0: 2 free, pod 1: 6 free, pods 2-3: 8
    got = p.place(job(0, 16))
    assert set(np.unique(got // 8).tolist()) == {6, 7}  # pod 0's last free leaf
    got = p.place(job(1, 40))  # 5 servers: pod 1 (6 free) rather than an empty pod
    assert set((np.unique(got // 8) // 8).tolist()) == {1}


def test_levels_are_validated_and_the_registry_builds_it_from_the_fabric() -> None:
    with pytest.raises(ConfigError, match="multiple of the previous"):
        LocalityPlacer(256, 8, levels=(16, 24))
    fab = make_fabric("clos-51.2T-3tier", 4096)
    placer = PLACERS["locality"](fab)
    assert isinstance(placer, LocalityPlacer) and placer.block_servers == (2, 32)


def test_simulation_with_the_locality_placer_finishes_every_job() -> None:
    trace = generate_trace("lumoscore-published", 60, seed=2, cluster_gpus=1024)
    fab = make_fabric("clos-51.2T-3tier", 1024, routing="ecmp")
    res = Simulator(fab, trace.jobs, placer="locality").run()
    assert res.jobs["finish_s"].notna().all()
