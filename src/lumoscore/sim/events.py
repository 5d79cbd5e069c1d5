"""A tiny event core: a heap of timestamped events with a tie-breaking counter.

Events pop in order of ``(time_s, priority, seq)``: earlier first, then lower priority value,
then insertion order, so a run is deterministic. An event may carry a *key* (for example a job
id): scheduling a new event with the same key supersedes the pending one, which is dropped
lazily when it reaches the top of the heap. This is what a flow-level simulator needs to
reschedule only the jobs whose rates changed.

Examples
--------
>>> q = EventQueue()
>>> _ = q.schedule(5.0, "finish", key=("job", 1))
>>> _ = q.schedule(2.0, "arrive", data={"job": 2})
>>> _ = q.schedule(3.0, "finish", key=("job", 1))   # supersedes the event at 5.0
>>> [(e.time_s, e.kind) for e in q.drain()]
[(2.0, 'arrive'), (3.0, 'finish')]
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator
from heapq import heappop, heappush
from typing import Any, NamedTuple

from lumoscore.errors import PreconditionError

__all__ = ["Event", "EventQueue"]


class Event(NamedTuple):
    """One scheduled event; ordered by ``(time_s, priority, seq)`` (``seq`` is unique, so the
    other fields never take part in the order). A named tuple: a run makes one per round,
    and it is built about four times faster than a frozen dataclass."""

    time_s: float
    priority: int
    seq: int
    kind: str
    key: Hashable | None = None
    data: Any = None


# builds an Event from a tuple of all its fields, without the named tuple's Python-level
# ``__new__`` (a run makes one per round)
_event = tuple.__new__


class EventQueue:
    """Priority queue of :class:`Event` with keyed supersession and cancellation.

    The clock :attr:`now_s` is the time of the last popped event; scheduling in the past
    raises :class:`~lumoscore.errors.PreconditionError`.
    """

    __slots__ = ("_heap", "_latest", "_live", "_seq", "now_s")

    def __init__(self, start_s: float = 0.0) -> None:
        # events compare as plain tuples (in C) by (time_s, priority, seq); seq is unique
        self._heap: list[Event] = []
        self._latest: dict[Hashable, int] = {}
        self._seq = 0
        self._live = 0
        self.now_s = float(start_s)

    def __len__(self) -> int:
        """Number of pending (not superseded or cancelled) events."""
        return self._live

    def schedule(
        self,
        time_s: float,
        kind: str,
        *,
        key: Hashable | None = None,
        data: Any = None,
        priority: int = 0,
    ) -> Event:
        """Add an event; with ``key``, replace the pending event of that key (if any)."""
        if not time_s >= self.now_s:  # (False for NaN too)
            raise PreconditionError(
                f"cannot schedule {kind!r} at t={time_s!r}: the clock is at {self.now_s!r}"
            )
        seq = self._seq
        self._seq = seq + 1
        ev = _event(Event, (float(time_s), priority, seq, kind, key, data))
        if key is not None:
            latest = self._latest
            if key in latest:
                self._live -= 1
            latest[key] = seq
        self._live += 1
        heappush(self._heap, ev)
        return ev

    def cancel(self, key: Hashable) -> bool:
        """Drop the pending event of ``key``; return whether there was one."""
        if self._latest.pop(key, None) is None:
            return False
        self._live -= 1
        return True

    def pending(self, key: Hashable) -> bool:
        """Whether an event with ``key`` is pending."""
        return key in self._latest

    def _skip_stale(self) -> None:
        """Drop superseded and cancelled events from the top of the heap."""
        heap, latest = self._heap, self._latest
        while heap:
            top = heap[0]
            key = top[4]  # (by position: the named fields cost an attribute lookup each)
            if key is None or latest.get(key) == top[2]:
                return
            heappop(heap)

    def peek(self) -> Event | None:
        """The next event without removing it (``None`` when empty)."""
        self._skip_stale()
        return self._heap[0] if self._heap else None

    def peek_time(self) -> float:
        """Time of the next event (``inf`` when empty)."""
        self._skip_stale()
        return self._heap[0].time_s if self._heap else math.inf

    def pop(self) -> Event:
        """Remove and return the next event and advance the clock to it."""
        self._skip_stale()
        if not self._heap:
            raise IndexError("pop from an empty EventQueue")
        ev = heappop(self._heap)
        key = ev[4]
        if key is not None:
            del self._latest[key]
        self._live -= 1
        self.now_s = ev[0]
        return ev

    def drain(self, until_s: float = math.inf) -> Iterator[Event]:
        """Pop events in order while their time is at most ``until_s``."""
        while True:
            t = self.peek_time()
            if not self._heap or t > until_s:
                return
            yield self.pop()
