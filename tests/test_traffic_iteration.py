"""The LLM iteration schedule: round structure and closed-form volumes on the ideal network."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.flows import aggregate, ideal_round_s, pair_totals
from lumoscore.traffic.iteration import _lex_order, iteration_flows, rank_grid
from lumoscore.workload.job import COLLECTIVES, REFERENCE_PORT_GBPS, ExposedShares, Job

SPEC = ClusterSpec(pods=4, k_leaf=32, k_spine=32, tau=2, gpus_per_server=8)  # 2048 GPUs


@st.composite
def placed_jobs(draw: st.DrawFn, tp: int | None = None, shares: ExposedShares | None = None):
    tp = tp if tp is not None else draw(st.sampled_from([8]))
    pp = draw(st.sampled_from([1, 2, 3, 4, 8]))
    dp = draw(st.integers(1, 8))
    gpus = tp * pp * dp
    eps = [e for e in (tp, 2 * tp, 4 * tp, 16, 32) if gpus % e == 0 and e <= gpus]
    ep = draw(st.sampled_from(sorted(set(eps))))
    job = Job(
        job_id=1,
        arrival_s=0.0,
        gpus=gpus,
        model="Pangu",
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        iterations=10,
        duration_s=draw(st.sampled_from([100.0, 3600.0])),
        collective=draw(st.sampled_from(COLLECTIVES)),
        shares=shares,
    )
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    servers = rng.choice(SPEC.servers, size=gpus // SPEC.gpus_per_server, replace=False)
    if gpus % SPEC.gpus_per_server:  # tp < 8: a partial server
        servers = rng.choice(SPEC.servers, size=gpus // SPEC.gpus_per_server + 1, replace=False)
    g = (servers[:, None] * SPEC.gpus_per_server + np.arange(SPEC.gpus_per_server)).reshape(-1)
    return job, rng.permutation(g[:gpus]) if tp < 8 else g[:gpus]


def _expected_tags(job: Job) -> list[str]:
    pp, dp, has_ep = job.pp, job.dp, job.ep > job.tp
    tags = ["pp"] * (pp - 1)
    back = "dp+pp" if dp > 1 else "pp"
    tags += [back] * max(pp - 2, 0)
    if has_ep:
        tags.append("ep")
    if pp >= 2:
        tags.append(back)
    if dp > 1:
        tags.append("dp")
    return tags or ["compute"]


@settings(max_examples=60, deadline=None)
@given(placed_jobs())
def test_round_structure_and_total_time(case) -> None:
    job, gpus = case
    s = iteration_flows(job, gpus, SPEC, aggregate=False)
    assert [r.tag for r in s] == _expected_tags(job)
    ideal = [ideal_round_s(r.flows) for r in s]
    assert [r.ideal_s for r in s] == pytest.approx(ideal)
    sh = job.effective_shares
    # with TP filling the server every class reaches the network and the NIC maxima align
    assert sum(ideal) == pytest.approx(sh.total * job.iteration_s, rel=1e-9)
    assert s.compute_s == pytest.approx(job.compute_s, rel=1e-9)
    assert [r.compute_s for r in s] == pytest.approx([job.compute_s / len(s)] * len(s))
    assert sum(ideal) + s.compute_s == pytest.approx(job.iteration_s, rel=1e-9)


@pytest.mark.parametrize("cls", ["dp", "ep", "pp"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_each_class_takes_its_exposed_share(cls: str, data: st.DataObject) -> None:
    shares = ExposedShares(**{cls: 0.2})
    job, gpus = data.draw(placed_jobs(shares=shares))
    s = iteration_flows(job, gpus, SPEC, aggregate=False)
    degree = {"dp": job.dp > 1, "ep": job.ep > job.tp, "pp": job.pp > 1}[cls]
    ideal = sum(ideal_round_s(r.flows, REFERENCE_PORT_GBPS) for r in s)
    assert ideal == pytest.approx(0.2 * job.iteration_s if degree else 0.0, rel=1e-9)
    # the rounds holding the class, each at the closed-form time per round
    per_round = {
        "dp": 0.2 * job.iteration_s / job.pp,
        "pp": 0.2 * job.iteration_s / (2 * (job.pp - 1)) if job.pp > 1 else 0.0,
        "ep": 0.2 * job.iteration_s,
    }[cls]
    busy = [ideal_round_s(r.flows) for r in s if len(r.flows)]
    assert busy == pytest.approx([per_round] * len(busy))


@settings(max_examples=30, deadline=None)
@given(placed_jobs(tp=2))
def test_intra_server_traffic_stays_off_network(case) -> None:
    job, gpus = case
    s = iteration_flows(job, gpus, SPEC, aggregate=False)
    for r in s:
        assert ((r.flows.src // 8) != (r.flows.dst // 8)).all()
        assert r.ideal_s <= job.iteration_s
    # iteration time is kept: exposed time not spent on the wire moves into compute_s
    total = s.compute_s + sum(r.ideal_s for r in s)
    assert total == pytest.approx(job.iteration_s, rel=1e-9)


def test_dp_rails_alternate_direction() -> None:
    job = Job(
        job_id=0,
        arrival_s=0.0,
        gpus=64,
        model="llama_7b",
        tp=8,
        pp=2,
        dp=4,
        ep=8,
        iterations=10,
        duration_s=1000.0,
    )
    gpus = np.arange(64)
    grid = rank_grid(job, gpus)
    last = iteration_flows(job, gpus, SPEC, aggregate=False)[-1]
    assert last.tag == "dp"
    dst = dict(zip(last.flows.src.tolist(), last.flows.dst.tolist(), strict=True))
    for d in range(4):
        for t in range(8):
            step = 1 if t % 2 == 0 else -1
            assert dst[int(grid[0, d, t])] == int(grid[0, (d + step) % 4, t])


@settings(max_examples=30, deadline=None)
@given(placed_jobs(), st.sampled_from(["leaf", "server", "gpu"]))
def test_aggregation_preserves_round_bytes(case, key: str) -> None:
    job, gpus = case
    raw = iteration_flows(job, gpus, SPEC, aggregate=False)
    agg = iteration_flows(job, gpus, SPEC, aggregate=True, key=key)
    per = {"leaf": SPEC.k_leaf, "server": SPEC.gpus_per_server, "gpu": 1}[key]
    for a, b in zip(raw, agg, strict=True):
        assert b.flows.total_bytes == pytest.approx(a.flows.total_bytes)
        assert b.flows.count == a.flows.count
        ref = aggregate(a.flows, key=lambda g, per=per: g // per)
        assert pair_totals(b.flows)[2] == pytest.approx(pair_totals(ref)[2])
        assert b.ideal_s == a.ideal_s and b.compute_s == a.compute_s
        # the compiled pass aggregates, and times rounds, exactly as the NumPy functions do
        for col in ("src", "dst", "bytes", "weight"):
            assert np.array_equal(getattr(b.flows, col), getattr(ref, col))
        assert a.ideal_s == ideal_round_s(a.flows)


def test_one_stage_expert_pattern_is_a_permutation() -> None:
    job = Job(
        job_id=0,
        arrival_s=0.0,
        gpus=256,
        model="Pangu",
        tp=8,
        pp=1,
        dp=32,
        ep=32,
        iterations=10,
        duration_s=1000.0,
    )
    s = iteration_flows(job, np.arange(256), SPEC, aggregate=False, ep_pattern="one-stage")
    ep = next(r for r in s if r.tag == "ep")
    assert np.unique(ep.flows.src).size == 256 and np.unique(ep.flows.dst).size == 256
    assert ((ep.flows.dst - ep.flows.src) % 32 == 8).all()
    assert ep.ideal_s == pytest.approx(job.shares.ep * job.iteration_s)


def test_bad_inputs() -> None:
    job = Job(
        job_id=3,
        arrival_s=0.0,
        gpus=16,
        model="Pangu",
        tp=8,
        pp=2,
        dp=1,
        ep=8,
        iterations=1,
        duration_s=1.0,
    )
    with pytest.raises(ConfigError, match="needs 16"):
        iteration_flows(job, np.arange(8), SPEC)
    with pytest.raises(ConfigError, match="distinct"):
        iteration_flows(job, np.zeros(16, np.int64), SPEC)
    with pytest.raises(ConfigError, match="key"):
        iteration_flows(job, np.arange(16), SPEC, key="pod")  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 400), st.integers(1, 60), st.integers(0, 2**16))
def test_compiled_row_order_is_lexsort(n: int, n_dst: int, seed: int) -> None:
    # the aggregation's sort (counting sort on src, insertion / heap sort per source) puts
    # rows in np.lexsort((bytes, dst, src)) order up to the order of equal rows
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 4, n)
    dst = rng.integers(0, n_dst, n)
    size = rng.integers(1, 4, n).astype(float)
    got = _lex_order(src, dst, size)
    ref = np.lexsort((size, dst, src))
    assert sorted(got.tolist()) == list(range(n))
    for col in (src, dst, size):
        assert np.array_equal(col[got], col[ref])


def test_every_collective_of_the_job_model_has_a_dp_pattern() -> None:
    """The job model's collective names and the traffic registry are the same set, so no
    job's collective falls back to another's pattern."""
    from lumoscore.errors import ConfigError
    from lumoscore.traffic.iteration import DP_COLLECTIVES
    from lumoscore.workload.job import COLLECTIVES

    assert set(DP_COLLECTIVES) == set(COLLECTIVES)
    with pytest.raises(ConfigError, match="allowed: ring"):
        DP_COLLECTIVES["butterfly"]
