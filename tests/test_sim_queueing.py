"""The queue policies, on hand-made traces whose start times are known in closed form.

On :class:`~lumoscore.fabric.BestFabric` a job's GPUs are its own (a non-blocking fabric), so a
job runs exactly its ``duration_s`` whatever else is running: every start time below follows
from the queue policy alone. The traces keep jobs waiting together (behind a job holding the
cluster) so that the order in which a policy offers them is observable.

Head-of-line blocking: ``fifo``, ``edf`` and ``smallest-first`` stop at the first job in their
order that does not fit; ``backfill`` goes on to the jobs behind it.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_sim import job
from lumoscore.errors import ConfigError
from lumoscore.fabric import BestFabric
from lumoscore.sim.engine import Simulator
from lumoscore.sim.queueing import QUEUE_POLICIES
from lumoscore.workload import Job

POLICIES = ("fifo", "backfill", "edf", "smallest-first")


def starts(jobs: list[Job], queue: str, gpus: int = 16) -> dict[int, float]:
    """Start time of every job of the run on ``BestFabric(gpus)``."""
    res = Simulator(BestFabric(gpus=gpus), jobs, queue=queue).run().jobs
    assert res["finish_s"].notna().all()
    return dict(zip(res["job_id"].tolist(), res["start_s"].tolist(), strict=True))


def approx(expected: dict[int, float]):  # type: ignore[no-untyped-def]
    return pytest.approx(expected, rel=1e-12, abs=1e-9)


# ---- the order the policies offer waiting jobs in ---------------------------------------


@pytest.mark.parametrize(
    ("policy", "order", "blocking"),
    [
        ("fifo", [0, 1, 2, 3, 4], True),
        ("backfill", [0, 1, 2, 3, 4], False),
        # deadlines 300 (3 then 4, by arrival), 500, none (0 then 2, by arrival)
        ("edf", [3, 4, 1, 0, 2], True),
        # 8 GPUs (1 then 3), 16 (0 then 4), 32
        ("smallest-first", [1, 3, 0, 4, 2], True),
    ],
)
def test_policies_order_the_waiting_jobs(policy: str, order: list[int], blocking: bool) -> None:
    waiting = [  # in arrival order, as the simulator keeps them
        job(0, 0.0, 16),
        job(1, 1.0, 8, deadline=500.0),
        job(2, 2.0, 32),
        job(3, 3.0, 8, deadline=300.0),
        job(4, 4.0, 16, deadline=300.0),
    ]
    assert [j.job_id for j in QUEUE_POLICIES[policy].order(waiting)] == order
    assert QUEUE_POLICIES[policy].blocking is blocking


# ---- EDF in the simulator ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # 0 holds the cluster until 100; then edf runs 2 (deadline 500) before 1 (1000)
        ("edf", {0: 0.0, 1: 130.0, 2: 100.0}),
        ("fifo", {0: 0.0, 1: 100.0, 2: 150.0}),
    ],
)
def test_edf_starts_the_earlier_deadline_first_where_fifo_keeps_arrival_order(
    policy: str, expected: dict[int, float]
) -> None:
    jobs = [
        job(0, 0.0, 16, duration=100.0),
        job(1, 1.0, 16, duration=50.0, deadline=1000.0),
        job(2, 2.0, 16, duration=30.0, deadline=500.0),
    ]
    assert starts(jobs, policy) == approx(expected)


def test_edf_runs_jobs_without_deadline_last_and_breaks_deadline_ties_by_arrival() -> None:
    # Each job needs the whole cluster, so they run one after the other from t=100 in EDF
    # order: 4 and 3 (deadline 400; 4 arrived first although its id is larger), 2 (900),
    # then the jobs without a deadline in arrival order, 1 and 5.
    jobs = [
        job(0, 0.0, 16, duration=100.0),
        job(1, 1.0, 16, duration=10.0),
        job(2, 2.0, 16, duration=20.0, deadline=900.0),
        job(4, 3.0, 16, duration=30.0, deadline=400.0),
        job(3, 4.0, 16, duration=40.0, deadline=400.0),
        job(5, 5.0, 16, duration=50.0),
    ]
    expected = {0: 0.0, 4: 100.0, 3: 130.0, 2: 170.0, 1: 190.0, 5: 200.0}
    assert starts(jobs, "edf") == approx(expected)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # 2 fits beside 0 at t=2 but waits behind 1, the earliest deadline, which does not fit
        ("edf", {0: 0.0, 1: 100.0, 2: 150.0}),
        ("backfill", {0: 0.0, 1: 202.0, 2: 2.0}),
    ],
)
def test_edf_is_head_of_line_blocking(policy: str, expected: dict[int, float]) -> None:
    jobs = [
        job(0, 0.0, 8, duration=100.0),
        job(1, 1.0, 16, duration=50.0, deadline=200.0),
        job(2, 2.0, 8, duration=200.0, deadline=1000.0),
    ]
    assert starts(jobs, policy) == approx(expected)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # the blocked head is the earliest deadline, not the earliest arrival: 2 starts at once
        ("edf", {0: 0.0, 1: 100.0, 2: 2.0}),
        ("fifo", {0: 0.0, 1: 100.0, 2: 150.0}),
    ],
)
def test_edf_head_is_the_earliest_deadline_not_the_earliest_arrival(
    policy: str, expected: dict[int, float]
) -> None:
    jobs = [
        job(0, 0.0, 8, duration=100.0),
        job(1, 1.0, 16, duration=50.0, deadline=1000.0),
        job(2, 2.0, 8, duration=30.0, deadline=200.0),
    ]
    assert starts(jobs, policy) == approx(expected)


# ---- backfill and smallest-first --------------------------------------------------------


@pytest.mark.parametrize(
    ("small_duration", "big_start"),
    [
        (30.0, 100.0),  # the small job is done before the big one could start anyway
        (200.0, 202.0),  # no reservation: a backfilled job may delay the job it passed
    ],
)
def test_backfill_starts_a_small_job_beside_a_blocked_big_one(
    small_duration: float, big_start: float
) -> None:
    jobs = [
        job(0, 0.0, 8, duration=100.0),
        job(1, 1.0, 16, duration=50.0),
        job(2, 2.0, 8, duration=small_duration),
    ]
    assert starts(jobs, "backfill") == approx({0: 0.0, 1: big_start, 2: 2.0})
    assert starts(jobs, "fifo") == approx({0: 0.0, 1: 100.0, 2: 150.0})


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # at t=100 the two 8-GPU jobs go first, side by side; 1 waits until both are done
        ("smallest-first", {0: 0.0, 1: 140.0, 2: 100.0, 3: 100.0}),
        ("fifo", {0: 0.0, 1: 100.0, 2: 150.0, 3: 150.0}),
    ],
)
def test_smallest_first_starts_the_small_jobs_first(
    policy: str, expected: dict[int, float]
) -> None:
    jobs = [
        job(0, 0.0, 16, duration=100.0),
        job(1, 1.0, 16, duration=50.0),
        job(2, 2.0, 8, duration=30.0),
        job(3, 3.0, 8, duration=40.0),
    ]
    assert starts(jobs, policy) == approx(expected)


# ---- a property of head-of-line-blocking EDF ---------------------------------------------


def edf_inversions(jobs: list[Job], start: dict[int, float]) -> list[tuple[int, int]]:
    """Pairs ``(k, j)``: ``k`` was waiting when ``j`` started (arrived strictly before), comes
    before ``j`` in EDF order (earlier deadline, or the same and an earlier arrival), and
    still started strictly later.

    Head-of-line-blocking EDF has none: ``j`` is only offered once every job before it in
    EDF order that was waiting has started. (A job arriving at the very time ``j`` starts
    may have come after it: finishes are handled before arrivals at equal times.)
    """

    def key(x: Job) -> tuple[float, float]:
        return (math.inf if x.deadline_s is None else x.deadline_s, x.arrival_s)

    return [
        (k.job_id, j.job_id)
        for j in jobs
        for k in jobs
        if k.arrival_s < start[j.job_id] < start[k.job_id] and key(k) < key(j)
    ]


@st.composite
def traces_with_deadlines(draw: st.DrawFn) -> list[Job]:
    n = draw(st.integers(2, 8))
    jobs, t = [], 0.0
    for i in range(n):
        t += draw(st.integers(1, 40))  # distinct arrivals: EDF's order is a total one
        slack = draw(st.none() | st.sampled_from([0, 50, 100, 200, 400]))
        jobs.append(
            job(
                i,
                t,
                draw(st.sampled_from([8, 16, 32])),
                duration=float(draw(st.integers(20, 300))),
                deadline=None if slack is None else t + slack,
            )
        )
    return jobs


@settings(max_examples=40, deadline=None, derandomize=True)
@given(jobs=traces_with_deadlines())
def test_edf_never_lets_a_later_deadline_pass_a_waiting_earlier_one(jobs: list[Job]) -> None:
    start = starts(jobs, "edf", gpus=32)
    assert edf_inversions(jobs, start) == []


def test_the_edf_property_catches_fifo() -> None:
    # the trace of the first EDF test: FIFO starts 1 (deadline 1000) while 2 (500) waits
    jobs = [
        job(0, 0.0, 16, duration=100.0),
        job(1, 1.0, 16, duration=50.0, deadline=1000.0),
        job(2, 2.0, 16, duration=30.0, deadline=500.0),
    ]
    assert edf_inversions(jobs, starts(jobs, "fifo")) == [(2, 1)]
    assert edf_inversions(jobs, starts(jobs, "edf")) == []


# ---- validation -------------------------------------------------------------------------


def test_an_unknown_queue_policy_is_a_config_error_naming_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="'lifo'") as err:
        Simulator(BestFabric(gpus=16), [job(0, 0.0, 8)], queue="lifo")
    for name in POLICIES:
        assert name in str(err.value)
