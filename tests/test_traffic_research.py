"""The research traffic model (exposure "research") against its definition and closed forms,
and both exposure models in the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_sim import BottleneckFabric
from lumoscore.errors import ConfigError
from lumoscore.fabric import BestFabric
from lumoscore.sim import Simulator
from lumoscore.topology.cluster import ClusterSpec
from lumoscore.traffic.exposure import EXPOSURES
from lumoscore.traffic.research import research_flows
from lumoscore.workload import Job
from lumoscore.workload.job import MODEL_SHARES

SPEC = ClusterSpec(pods=4, k_leaf=32, k_spine=32, tau=2)  # 8 leaves of 16 GPUs, 2048 GPUs


def make_job(*, pp: int, dp: int, ep: int, model: str = "llama_7b", jid: int = 3) -> Job:
    return Job(job_id=jid, arrival_s=0.0, gpus=8 * pp * dp, model=model, tp=8, pp=pp, dp=dp,
               ep=ep, iterations=10, duration_s=1000.0)  # fmt: skip


def pairs(rnd) -> set[tuple[int, int]]:  # type: ignore[no-untyped-def]
    f = rnd.flows
    return set(zip(f.src.tolist(), f.dst.tolist(), strict=True))


def test_the_worked_example_round_by_round() -> None:
    """TP 8, PP 2, DP 4, EP 16 on GPUs 0..63 (rank order): F0; one expert stage (the only
    one: 2 servers a group); DP(1) + B(1); DP(0). DP rings run forward on rails 0-3 and
    backward on rails 4-7; every round's compute and wire time add up to the iteration."""
    job = make_job(pp=2, dp=4, ep=16)
    s = research_flows(job, range(64), SPEC, aggregate=False)
    assert [r.tag for r in s] == ["pp", "ep", "dp+pp", "dp"]
    assert pairs(s[0]) == {(g, g + 32) for g in range(32)}
    assert pairs(s[1]) == {(g0 + j, g0 + 8 + j) for g0 in (0, 16, 32, 48) for j in range(8)} | {
        (g0 + 8 + j, g0 + j) for g0 in (0, 16, 32, 48) for j in range(8)
    }
    ring1 = {(32 + 8 * d + t, 32 + 8 * ((d + 1) % 4) + t) for d in range(4) for t in range(4)}
    ring1 |= {(32 + 8 * ((d + 1) % 4) + t, 32 + 8 * d + t) for d in range(4) for t in range(4, 8)}
    assert pairs(s[2]) == ring1 | {(g + 32, g) for g in range(32)}
    assert pairs(s[3]) == {(a - 32, b - 32) for a, b in ring1}
    # sizes (bits at 1.6 Tb/s = seconds): D = 100 / k, one flow per NIC and class
    r = MODEL_SHARES["llama_7b"]
    k = (1 - r.dp - r.pp - r.ep) + r.pp / 2 + 2 * r.ep / 15 + (r.dp / 24 + r.pp / 2) + r.dp / 24
    d = 100.0 / k
    secs = [float(rnd.flows.bytes.max()) * 8 / 1.6e12 for rnd in s]
    assert secs[0] == pytest.approx(d * r.pp / 2)
    assert secs[1] == pytest.approx(d * 2 * r.ep / 15)
    assert secs[3] == pytest.approx(d * r.dp / 24)
    assert [rnd.ideal_s for rnd in s] == pytest.approx(
        [d * r.pp / 2, d * 2 * r.ep / 15, d * (r.dp / 24 + r.pp / 2), d * r.dp / 24]
    )
    assert [rnd.compute_s for rnd in s] == pytest.approx([d * (1 - r.dp - r.pp - r.ep) / 4] * 4)
    assert sum(rnd.compute_s + rnd.ideal_s for rnd in s) == pytest.approx(100.0, rel=1e-12)


def test_deep_pipelines_send_as_the_published_runs_did() -> None:
    """PP 4: F0, F1, F2 (two compute slots); DP(3)+B(2), DP(2)+B(1); expert; DP(1)+B(1);
    DP(0): B(3) is never sent and B(1) twice."""
    job = make_job(pp=4, dp=2, ep=8)
    s = research_flows(job, range(64), SPEC, aggregate=False)
    assert [r.tag for r in s] == ["pp"] * 3 + ["dp+pp"] * 3 + ["dp"]
    stage = np.arange(64).reshape(4, 16)

    def back(a: int) -> set[tuple[int, int]]:
        return set(zip(stage[a].tolist(), stage[a - 1].tolist(), strict=True))

    backs = [pairs(r) - {p for p in pairs(r) if abs(p[0] - p[1]) < 16} for r in s[3:6]]
    assert backs == [back(2), back(1), back(1)]
    c = [r.compute_s for r in s]
    assert c[2] == pytest.approx(2 * c[0]) and c[0] == pytest.approx(c[6])


def test_an_expert_stage_is_chosen_by_the_job_id_and_sized_for_all_stages() -> None:
    """EP 32 (4 servers a group): 3 exchange stages; the chosen one sends rail j of server i
    to rail j of server i+k+1; no compute slot before it unless it is the first stage."""
    seen = set()
    for jid in range(12):
        job = make_job(pp=1, dp=8, ep=32, jid=jid)
        s = research_flows(job, range(64), SPEC, aggregate=False)
        ep = next(r for r in s if r.tag == "ep")
        shift = {(b - a) % 32 for a, b in pairs(ep)}
        assert len(shift) == 1
        k = shift.pop() // 8 - 1
        seen.add(k)
        assert (ep.compute_s > 0) == (k == 0)
        again = research_flows(job, range(64), SPEC, aggregate=False)  # same job, same stage
        assert [pairs(r) for r in again] == [pairs(r) for r in s]
    assert seen == {0, 1, 2}


@settings(max_examples=40, deadline=None)
@given(
    pp=st.sampled_from([1, 2, 3, 4]),
    dp=st.sampled_from([1, 2, 4]),
    ep=st.sampled_from([4, 8, 16]),
    model=st.sampled_from(sorted(MODEL_SHARES)),
    exposure=st.sampled_from(list(EXPOSURES)),
)
def test_alone_on_best_a_job_runs_exactly_its_duration(
    pp: int, dp: int, ep: int, model: str, exposure: str
) -> None:
    if (8 * pp * dp) % ep:
        ep = 8
    job = make_job(pp=pp, dp=dp, ep=ep, model=model)
    res = Simulator(BestFabric(gpus=128), [job], exposure=exposure).run()
    assert float(res.jobs["jrt_s"][0]) == pytest.approx(job.duration_s, rel=1e-9)
    assert res.summary["exposure"] == exposure


class Fixed:
    """Places every job on the same GPUs."""

    def __init__(self, gpus: list[int]) -> None:
        self.gpus = np.array(gpus)

    def place(self, job):  # type: ignore[no-untyped-def]
        return self.gpus

    def release(self, job_id):  # type: ignore[no-untyped-def]
        return None


@pytest.mark.parametrize("exposure", ["literal", "research"])
def test_one_job_on_a_two_to_one_oversubscribed_link(exposure: str) -> None:
    """A DP-2 job (Pangu, TP 8, PP 1, no expert traffic) across two leaves of a dumbbell whose
    core carries half of what its 16 flows need: its one all-reduce round takes twice its
    time alone. Literal: that round is the whole DP share, JRT = duration (1 + r_dp).
    Research: a flow takes r_dp D / 8 with D = T / k, k = 1 - r_dp + r_dp / 8, so
    JRT = duration (1 + (r_dp / 8) / k)."""
    job = make_job(pp=1, dp=2, ep=8, model="Pangu")
    fab = BottleneckFabric(32, port_gbps=1600.0, core_gbps=8 * 1600.0)
    placer = Fixed([*range(8), *range(16, 24)])
    res = Simulator(fab, [job], placer=placer, exposure=exposure).run()
    r = MODEL_SHARES["Pangu"].dp
    extra = r if exposure == "literal" else (r / 8) / (1 - r + r / 8)
    assert float(res.jobs["jrt_s"][0]) == pytest.approx(job.duration_s * (1 + extra), rel=1e-9)


def test_an_unknown_exposure_is_named_with_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="exposure model 'paper' unknown; allowed: literal"):
        Simulator(BestFabric(gpus=64), [], exposure="paper")
