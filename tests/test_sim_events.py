"""The event core: ordering, determinism, supersession and cancellation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lumoscore.errors import PreconditionError
from lumoscore.sim import EventQueue


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(-2, 2)), max_size=60))
def test_pops_in_time_priority_insertion_order(items: list[tuple[int, int]]) -> None:
    q = EventQueue()
    for i, (t, prio) in enumerate(items):
        q.schedule(float(t), "e", data=i, priority=prio)
    out = [(e.time_s, e.priority, e.data) for e in q.drain()]
    expected = sorted((float(t), p, i) for i, (t, p) in enumerate(items))
    assert out == expected
    assert len(q) == 0 and q.peek_time() == math.inf


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 50)), min_size=1, max_size=80))
def test_keyed_events_keep_only_the_latest(ops: list[tuple[int, int]]) -> None:
    q = EventQueue()
    latest: dict[int, int] = {}
    for key, t in ops:
        q.schedule(float(t), "finish", key=key, data=t)
        latest[key] = t
    assert len(q) == len(latest)
    popped = {e.key: e.data for e in q.drain()}
    assert popped == latest


def test_cancel_and_clock() -> None:
    q = EventQueue()
    q.schedule(1.0, "a", key="x")
    q.schedule(2.0, "b")
    assert q.pending("x") and q.cancel("x") and not q.cancel("x")
    assert len(q) == 1
    ev = q.pop()
    assert (ev.kind, q.now_s) == ("b", 2.0)
    with pytest.raises(PreconditionError, match=r"clock is at 2\.0"):
        q.schedule(1.5, "late")
    with pytest.raises(IndexError):
        q.pop()


def test_drain_until() -> None:
    q = EventQueue()
    for t in (3.0, 1.0, 2.0):
        q.schedule(t, "e")
    assert [e.time_s for e in q.drain(until_s=2.0)] == [1.0, 2.0]
    assert q.peek_time() == 3.0
