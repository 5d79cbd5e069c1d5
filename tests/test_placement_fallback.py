"""The EP-split fallback of the admission and the refusal causes the LumosCore fabric counts.

A job is refused only for want of GPUs (``gpus``, ``tp_slots``) or of network (``network``);
``locality`` refusals (EP groups that fit no pod set whole) remain only with the fallback off.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import InfeasibleError
from lumoscore.fabric import LumosCoreFabric
from lumoscore.fabric.lumos import REFUSAL_CAUSES
from lumoscore.placement import ClusterState, Placement, Refusal, admit, get_policy
from lumoscore.sim import Simulator
from lumoscore.sim.plan import build_plan
from lumoscore.topology import ClusterSpec, build_wiring
from lumoscore.workload import Job

admit_module = importlib.import_module("lumoscore.placement.admit")

#: 3 pods of 4 leaves, one server of 4 GPUs a leaf (16 GPUs a pod), tau = 1: 48 GPUs.
SPEC = ClusterSpec(pods=3, k_leaf=4, k_spine=4, tau=1, gpus_per_server=4, ocs_ports=4)


def make_job(jid: int, gpus: int, *, pp: int = 1, ep: int = 4, tp: int = 4) -> Job:
    return Job(
        job_id=jid, arrival_s=0.0, gpus=gpus, model="Pangu", tp=tp, pp=pp,
        dp=gpus // (tp * pp), ep=ep, iterations=1, duration_s=10.0,
    )  # fmt: skip


def half_full(fab: LumosCoreFabric) -> None:
    """Two of the four servers of every pod busy (8 idle GPUs a pod, 24 in all)."""
    for p in range(SPEC.pods):
        g = np.arange(p * 16, p * 16 + 8)
        fab.state.allocate(Placement(job_id=100 + p, gpus=g, pods=(p,), leaves=(4 * p, 4 * p + 1)))


def causes(fab: LumosCoreFabric) -> dict[str, int]:
    return {c: int(fab.stats[f"refusals_{c}"]) for c in REFUSAL_CAUSES}


def test_fallback_places_a_job_the_locality_rules_refuse() -> None:
    """16 GPUs with one EP group of 16 (4 servers) while every pod has 2 idle servers: 24 GPUs
    are idle, but no pod holds the EP group whole, so the locality placer refuses the job
    (the head of a FIFO queue would block). The fallback splits the EP group over the fewest
    pods (2, in halves) and the network carries it: routes exist for every round."""
    old = LumosCoreFabric(SPEC, admit_options={"split_ep": False})
    new = LumosCoreFabric(SPEC)
    for fab in (old, new):
        half_full(fab)
    j = make_job(1, 16, ep=16)
    assert old.place(j) is None
    assert old.state.refusals[-1].reason == "ep-confinement"
    assert causes(old) == {"gpus": 0, "tp_slots": 0, "locality": 1, "network": 0}
    assert old.stats["relaxed_admissions"] == 0
    gpus = new.place(j)
    assert gpus is not None and gpus.size == 16
    assert new.state.placements[1].tier == "pods-ep-split"
    assert np.bincount(SPEC.pod_of_gpu(gpus), minlength=3).tolist() == [8, 8, 0]
    assert new.stats["relaxed_admissions"] == 1 and new.stats["admissions"] == 1
    assert causes(new) == dict.fromkeys(REFUSAL_CAUSES, 0)
    new.apply(new.admit(1, gpus))
    assert new.ocs_circuits()[:, 0, 1].sum() > 0  # the two pods are joined
    plan = build_plan(j, gpus, new)
    assert all(math.isfinite(r.solo_s) for r in plan.rounds)
    new.apply(new.release(1))
    assert new.state.check() == [] and int(new.ocs_circuits().sum()) == 0


def test_simulator_no_longer_blocks_on_ep_confinement() -> None:
    """The same situation in the simulator: six 8-GPU jobs fill the three pods (two a pod, the
    locality rule packs them); every second one ends soon, leaving half of every pod idle; a
    16-GPU job with EP 16 arrives. Without the fallback it waits for a long filler although 24
    GPUs are idle (fragmentation blocks); with it, it starts at once."""
    fillers = [
        Job(job_id=k, arrival_s=0.0, gpus=8, model="Pangu", tp=4, pp=1, dp=2, ep=4,
            iterations=1, duration_s=1000.0 if k % 2 else 10.0)
        for k in range(6)
    ]  # fmt: skip
    late = Job(job_id=6, arrival_s=100.0, gpus=16, model="Pangu", tp=4, pp=1, dp=4, ep=16,
               iterations=1, duration_s=10.0)  # fmt: skip
    out = {}
    for split in (False, True):
        fab = LumosCoreFabric(SPEC, admit_options={"split_ep": split})
        res = Simulator(fab, [*fillers, late]).run()
        jwt = float(res.jobs.set_index("job_id").loc[6, "jwt_s"])
        out[split] = (res.summary["fragmentation_blocks"], fab.stats["relaxed_admissions"], jwt)
    assert out[False][0] >= 1 and out[False][1] == 0 and out[False][2] > 800.0
    assert out[True][:2] == (0, 1) and out[True][2] < 1.0


def test_refusal_causes_are_counted() -> None:
    fab = LumosCoreFabric(SPEC)
    half_full(fab)
    assert fab.place(make_job(1, 32)) is None  # 24 idle GPUs
    assert causes(fab) == {"gpus": 1, "tp_slots": 0, "locality": 0, "network": 0}
    # half of every server busy: 24 idle GPUs, no whole server (TP slot of 4 GPUs)
    fab = LumosCoreFabric(SPEC)
    busy = (np.arange(12)[:, None] * 4 + np.arange(2)).reshape(-1)
    fab.state.allocate(Placement(job_id=100, gpus=busy, pods=(0, 1, 2), leaves=tuple(range(12))))
    assert fab.place(make_job(1, 8)) is None
    assert causes(fab) == {"gpus": 0, "tp_slots": 1, "locality": 0, "network": 0}
    assert fab.stats["refusals"] == 1


def test_leaf_port_refusal_is_a_network_cause() -> None:
    """Pod 0 has one idle server, pods 1 and 2 four each: a 36-GPU job (PP 3 x DP 3) needs all
    nine. Its first server's leaf gets a cross-pod PP pair (+4 links) and two cross-pod DP
    ring pairs (+2 each): 8 > K_leaf = 4; re-placing away from that leaf leaves too few GPUs,
    and with path sharing off the leaves' ports cannot carry the job."""
    spec = SPEC
    for share, placed in ((False, False), (True, True)):
        fab = LumosCoreFabric(spec, admit_options={"share": share})
        fab.state.allocate(Placement(job_id=100, gpus=np.arange(12), pods=(0,), leaves=(0, 1, 2)))
        got = fab.place(make_job(1, 36, pp=3))
        assert (got is not None) == placed
        if not placed:
            assert fab.state.refusals[-1].reason == "leaf-ports"
            assert causes(fab) == {"gpus": 0, "tp_slots": 0, "locality": 0, "network": 1}


def test_ocs_infeasible_is_a_network_refusal_and_leaves_the_state(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Should the OCS layer be unable to realise the logical topology, the job is refused
    (``network`` / ``ocs``) and the state is as before: GPUs, ``L``, splits, circuits."""
    wiring = build_wiring(SPEC, "cross")
    state = ClusterState.empty(SPEC)
    first = admit(state, make_job(1, 24, pp=2), wiring=wiring)  # pod 0 and half of pod 1
    assert first.admitted and state.L.sum() > 0
    before = (state.owner.copy(), state.L.copy(), dict(state.job_split), state.circuits.copy())

    def infeasible(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise InfeasibleError("the ToE finds no OCS configuration")

    monkeypatch.setattr(admit_module, "configure", infeasible)
    adm = admit(state, make_job(2, 24, pp=2), wiring=wiring)  # pods 1 and 2: cross-pod
    assert not adm.admitted and adm.refusal is not None
    assert (adm.refusal.kind, adm.refusal.reason) == ("network", "ocs")
    assert np.array_equal(state.owner, before[0]) and np.array_equal(state.L, before[1])
    assert state.job_split.keys() == before[2].keys() and np.array_equal(state.circuits, before[3])
    assert state.check() == []


def test_fabric_counts_an_ocs_refusal(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fab = LumosCoreFabric(SPEC)

    def infeasible(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise InfeasibleError("the ToE finds no OCS configuration")

    monkeypatch.setattr(admit_module, "configure", infeasible)
    assert fab.place(make_job(1, 32, pp=2)) is None
    assert causes(fab) == {"gpus": 0, "tp_slots": 0, "locality": 0, "network": 1}
    assert fab.state.free_gpus == SPEC.gpus


# ---- the split placement on random states ----------------------------------------------------
POLICY_SPEC = ClusterSpec(pods=4, k_leaf=16, k_spine=8, tau=2, gpus_per_server=8)  # 64 a pod


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.booleans(), min_size=POLICY_SPEC.gpus // 8, max_size=POLICY_SPEC.gpus // 8),
    st.sampled_from([16, 32, 64, 128, 192]),
    st.sampled_from([8, 16, 32, 64]),
)
def test_split_placement_on_random_states(busy: list[bool], gpus: int, ep: int) -> None:
    """On random busy servers, ``split_ep=True`` refuses only for want of idle slots; it
    uses the fewest pods that hold the job at all and the same placement as ``locality``
    whenever that one fits; every pod's share is a multiple of a divisor of the EP group;
    same state, same placement."""
    state = ClusterState.empty(POLICY_SPEC)
    servers = np.flatnonzero(busy)
    if servers.size:
        g = (servers[:, None] * 8 + np.arange(8)).reshape(-1)
        state.allocate(Placement(job_id=999, gpus=g, pods=(), leaves=()))
    job = make_job(1, gpus, ep=min(ep, gpus), tp=8)
    pol = get_policy("locality")
    strict = pol.propose(state, job)
    split = pol.propose(state, job, split_ep=True)
    assert isinstance(split, Placement) == (state.free_gpus >= gpus)
    if isinstance(strict, Placement):
        assert isinstance(split, Placement) and np.array_equal(strict.gpus, split.gpus)
        return
    if not isinstance(split, Placement):
        assert isinstance(split, Refusal) and split.kind == "gpus"
        return
    assert strict.reason == "ep-confinement" and split.tier == "pods-ep-split"
    assert not (state.owner[split.gpus] >= 0).any()
    per_pod = np.bincount(POLICY_SPEC.pod_of_gpu(split.gpus), minlength=4) // 8
    idle_slots = np.sort(state.idle.reshape(4, -1).sum(axis=1) // 8)[::-1]
    fewest = int(np.searchsorted(np.cumsum(idle_slots), gpus // 8) + 1)
    assert int((per_pod > 0).sum()) == fewest
    u = math.gcd(gpus // 8, max(1, job.ep // 8))
    d = math.gcd(u, *per_pod[per_pod > 0].tolist())
    assert d < u  # not whole EP groups (else the strict rule would have placed it)
    again = pol.propose(state, job, split_ep=True)
    assert isinstance(again, Placement) and np.array_equal(again.gpus, split.gpus)
