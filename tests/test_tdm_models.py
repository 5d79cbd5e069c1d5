"""Models, traffic (Eqs. 4, 5, 8) and deployment (§IV.B) of lumoscore.tdm."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError, InfeasibleError
from lumoscore.tdm.deployment import deploy, job_weight_bytes
from lumoscore.tdm.models import (
    LLAMA3,
    Compute,
    Job,
    JobKind,
    Network,
    Placement,
    job_traffic,
    training_time_s,
)
from lumoscore.tdm.workload import random_jobs


def test_table_iii_and_eq8_closed_form() -> None:
    assert [LLAMA3[m].param_bytes for m in ("1B", "3B", "8B", "90B")] == [
        2.46e9,
        6.42e9,
        21.2e9,
        177.6e9,
    ]
    c = Compute(gpu_flops=26e12, efficiency=0.4, k=8, bytes_per_param=2)
    # t = K * tokens * Phi / (F_GPU * eff), Phi = bytes / 2.
    assert training_time_s(6.42e9, 4096, c) == pytest.approx(8 * 4096 * 3.21e9 / (26e12 * 0.4))
    job = Job("rar", LLAMA3["8B"], 4, tokens=4096, compute=c)
    assert job.train_s == pytest.approx(training_time_s(21.2e9, 4096, c) / 4)
    assert job.gpu_output_bytes * job.gpus_per_unit == pytest.approx(21.2e9)


def test_network_defaults_match_paper_and_errors_name_field() -> None:
    net = Network()
    assert (net.n_pods, net.n_groups, net.pods_per_group * net.ports_per_pod) == (256, 32, 128)
    assert net.tor_gbps == 16 * 150.0
    with pytest.raises(ConfigError, match="pods_per_group"):
        Network(n_pods=10, pods_per_group=4)
    with pytest.raises(ConfigError, match="kind 'mpi' is not one of: ps, rar, alltoall"):
        Job("mpi", LLAMA3["1B"], 2)
    with pytest.raises(ConfigError, match="efficiency"):
        Compute(efficiency=1.5)


def test_ps_traffic_eq4_eq5() -> None:
    job = Job("ps", LLAMA3["3B"], 6)
    units = np.array([1, 3, 0, 2])
    d, tor, ring = job_traffic(job, Placement(0, units, ps_pod=1))
    v = job.unit_bytes
    push = np.zeros((4, 4))
    push[[0, 3], 1] = [v, 2 * v]  # P[i, I] = PN_i F_n U_n
    np.testing.assert_allclose(d[0], push)
    np.testing.assert_allclose(d[1], push.T)  # pull mirrors push
    np.testing.assert_allclose(tor, units * job.gpus_per_unit * job.gpu_output_bytes)  # G_i F_n
    assert ring.size == 0


def test_rar_and_alltoall_traffic() -> None:
    units = np.array([2, 0, 1, 1])
    rar = Job("rar", LLAMA3["1B"], 4)
    d, tor, ring = job_traffic(rar, Placement(0, units))
    assert not d.any() and ring.tolist() == [0, 2, 3]
    np.testing.assert_allclose(tor, 2 * units * rar.unit_bytes)  # 2 G_i F_n
    a2a = Job("alltoall", LLAMA3["1B"], 4)
    d, tor, ring = job_traffic(a2a, Placement(0, units))
    expected = np.outer(units, units) * a2a.unit_bytes  # AN_i AN_j F_n U_n
    np.fill_diagonal(expected, 0)
    np.testing.assert_allclose(d[0], expected)
    np.testing.assert_allclose(d[1], expected)
    np.testing.assert_allclose(tor, 2 * units * a2a.unit_bytes * 3)
    assert ring.size == 0
    # Traffic ranking of §II.B for one model and placement: PS > RAR > all-to-all per link.
    assert Job("ps", LLAMA3["1B"], 4).unit_bytes > a2a.unit_bytes


@settings(max_examples=40, deadline=None)
@given(
    n_jobs=st.integers(0, 30),
    seed=st.integers(0, 2**32 - 1),
    gpus_per_pod=st.sampled_from([64, 128, 256]),
)
def test_deployment_invariants(n_jobs: int, seed: int, gpus_per_pod: int) -> None:
    net = Network(n_pods=16, pods_per_group=4, gpus_per_pod=gpus_per_pod, ports_per_pod=8)
    jobs = random_jobs(n_jobs, np.random.default_rng(seed), models=("1B", "3B", "8B"))
    try:
        placements = deploy(net, jobs)
    except InfeasibleError:
        return
    used = np.zeros((net.n_groups, net.pods_per_group), dtype=np.int64)
    group_load = np.zeros(net.n_groups)
    for job, pl in zip(jobs, placements, strict=True):
        assert pl.units_per_pod.sum() == job.degree  # the whole job sits in one pod group
        fits = ((gpus_per_pod - used) // job.gpus_per_unit).sum(axis=1) >= job.degree
        assert fits[pl.group]
        assert group_load[pl.group] == group_load[fits].min()  # least traffic among feasible
        group_load[pl.group] += job_weight_bytes(job)
        used[pl.group] += pl.units_per_pod * job.gpus_per_unit
        if job.kind is JobKind.PS:
            assert pl.units_per_pod[pl.ps_pod] == pl.units_per_pod.max()
    assert (used <= gpus_per_pod).all()


def test_deployment_picks_least_loaded_group_and_balances_pods() -> None:
    net = Network(n_pods=8, pods_per_group=4, gpus_per_pod=64, ports_per_pod=8)
    jobs = [Job("ps", LLAMA3["90B"], 2, gpus_per_unit=1), Job("rar", LLAMA3["1B"], 6)]
    jobs.append(Job("alltoall", LLAMA3["1B"], 3))
    pl = deploy(net, jobs)
    assert [p.group for p in pl] == [0, 1, 1]  # group 0 carries the 90B job's traffic
    assert pl[1].units_per_pod.tolist() == [2, 2, 1, 1]  # spread evenly over the pods
    # The all-to-all units go to the pods with the least traffic so far.
    assert pl[2].units_per_pod.tolist() == [0, 0, 2, 1]


def test_deployment_infeasible_names_job() -> None:
    net = Network(n_pods=4, pods_per_group=2, gpus_per_pod=8, ports_per_pod=4)
    with pytest.raises(InfeasibleError, match="job 0"):
        deploy(net, [Job("ps", LLAMA3["90B"], 2)])  # 2 units of 32 GPUs, pods of 8


def test_random_jobs_deterministic_and_validated() -> None:
    a = random_jobs(20, np.random.default_rng(7))
    b = random_jobs(20, np.random.default_rng(7))
    assert [(j.kind, j.model.name, j.degree) for j in a] == [
        (j.kind, j.model.name, j.degree) for j in b
    ]
    assert all(2 <= j.degree <= 16 for j in a)
    with pytest.raises(ConfigError, match=r"workload\.models"):
        random_jobs(2, np.random.default_rng(0), models=("7B",))
    with pytest.raises(ConfigError, match=r"workload\.kinds"):
        random_jobs(2, np.random.default_rng(0), kinds=("tree",))
