"""Link failures and repairs during a run (LumosCore Fig. 6(c), Cross Wiring Fig. 8(b)).

:class:`LinkFailureModel` says what fails (``element``, one of
:data:`~lumoscore.fabric.base.FAILURE_ELEMENTS`: leaf-spine cables, spine uplinks -- on
LumosCore the fibers between spines and OCSes, on a Clos of 3+ tiers the tier-2 uplinks --
or OCS ports) and when: a share of the units down from the start (``fraction``, never
repaired: the static case of the papers' robustness figures), Poisson failures of every
working unit at ``rate_per_cable_day``, each repaired ``repair_s`` later, and scripted
``(time_s, unit, "fail" | "repair")`` events. :class:`LinkOutages` turns them into simulator
events: the fabric takes the capacity away (:meth:`Fabric.fail_units
<lumoscore.fabric.base.Fabric.fail_units>`; LumosCore recomputes its logical topology and OCS
configuration on the working links and ports), the running jobs whose routes crossed a link
that went down are routed again around it (Clos and leaf-spine: ECMP re-hashing over the
surviving paths, :meth:`Fabric.live_routes <lumoscore.fabric.base.Fabric.live_routes>`),
flows in flight included; no job is lost. Every event is recorded (:attr:`LinkOutages.events`).

Examples
--------
>>> import numpy as np
>>> from lumoscore.fabric import make_fabric
>>> from lumoscore.sim import Simulator
>>> from lumoscore.workload import generate_trace
>>> jobs = generate_trace("lumoscore-published", 6, seed=1, cluster_gpus=512).jobs
>>> lf = LinkFailureModel(fraction=0.2)
>>> res = Simulator(make_fabric("clos-51.2T-3tier", 512), jobs, link_failures=lf).run()
>>> res.summary["jobs"], res.summary["link_failures"] > 0
(6, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from lumoscore.errors import ConfigError
from lumoscore.fabric.base import check_failure_element
from lumoscore.sim.admission import Admission
from lumoscore.sim.changes import FabricChanges
from lumoscore.sim.events import Event
from lumoscore.sim.state import P_FINISH, RunState

__all__ = ["LINK_EVENT_COLUMNS", "LinkFailureModel", "LinkOutages"]

#: Columns of :attr:`LinkOutages.events` (and of a result's ``link_events`` table).
LINK_EVENT_COLUMNS: tuple[str, ...] = (
    "time_s",
    "kind",
    "cables",
    "dead_links",
    "rerouted_jobs",
    "capacity_lost_bps",
)

_DAY_S = 86_400.0


@dataclass(frozen=True)
class LinkFailureModel:
    """What fails, and when.

    Parameters
    ----------
    fraction : float
        Share of the units down from time 0, drawn at random, never repaired (``[0, 1)``).
    rate_per_cable_day : float
        Poisson failures per working unit per day (0: none).
    repair_s : float
        Time a Poisson failure takes to repair (> 0). ``rate_per_cable_day * repair_s`` is at
        most one day (a unit down at most half the time).
    script : sequence of (float, int, str)
        Scripted events ``(time_s, unit, "fail" | "repair")``.
    element : str
        What a unit is: ``leaf-spine`` (a leaf-spine cable, default), ``spine-ocs`` or
        ``ocs-port`` (:data:`~lumoscore.fabric.base.FAILURE_ELEMENTS`,
        :meth:`Fabric.failure_units <lumoscore.fabric.base.Fabric.failure_units>`).

    Examples
    --------
    >>> LinkFailureModel().enabled, LinkFailureModel(fraction=0.1).enabled
    (False, True)
    >>> LinkFailureModel(fraction=1.0)
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: link failures: fraction must be in [0, 1), got 1.0
    """

    fraction: float = 0.0
    rate_per_cable_day: float = 0.0
    repair_s: float = 3600.0
    script: Sequence[tuple[float, int, str]] = field(default_factory=tuple)
    element: str = "leaf-spine"

    def __post_init__(self) -> None:
        check_failure_element(self.element)
        if not (0.0 <= self.fraction < 1.0):
            raise ConfigError(f"link failures: fraction must be in [0, 1), got {self.fraction}")
        if not (self.rate_per_cable_day >= 0 and math.isfinite(self.rate_per_cable_day)):
            raise ConfigError(
                "link failures: rate_per_cable_day must be a finite number >= 0, got "
                f"{self.rate_per_cable_day}"
            )
        if not (self.repair_s > 0 and math.isfinite(self.repair_s)):
            raise ConfigError(
                f"link failures: repair_s must be a finite number > 0, got {self.repair_s}"
            )
        down = self.rate_per_cable_day * self.repair_s / _DAY_S
        if down > 1:  # each unit down more than half the time: jobs would (nearly) never run
            raise ConfigError(
                f"link failures: rate_per_cable_day x repair_s = {down:.3g} days of repair a "
                f"day per unit (each down {100 * down / (1 + down):.0f} % of the time); at "
                f"most 1 (half the time): rate_per_cable_day <= {_DAY_S / self.repair_s:.4g} "
                f"with repair_s = {self.repair_s:g}"
            )
        for i, ev in enumerate(self.script):
            if len(ev) != 3 or ev[2] not in ("fail", "repair") or not ev[0] >= 0:
                raise ConfigError(
                    f"link failures: script[{i}] = {ev!r}; expected (time_s >= 0, unit, "
                    "'fail' | 'repair')"
                )

    @property
    def enabled(self) -> bool:
        """Whether anything ever fails."""
        return self.fraction > 0 or self.rate_per_cable_day > 0 or bool(self.script)


class LinkOutages:
    """Failures and repairs of one run (see the module docstring).

    Parameters
    ----------
    state : RunState
        The run's shared state (its fabric has units of the failure model's element).
    changes : FabricChanges
        Applies capacity changes and routes jobs again.
    failures : LinkFailureModel
        The failure process.
    rng : numpy.random.Generator
        Draws the failed units and the failure times.
    admission : Admission, optional
        Offered the waiting jobs again after a repair.
    """

    def __init__(
        self,
        state: RunState,
        changes: FabricChanges,
        failures: LinkFailureModel,
        rng: np.random.Generator,
        admission: Admission | None = None,
    ) -> None:
        self.s = state
        self.changes = changes
        self.admission = admission
        self.lf = failures
        self.rng = rng
        # a ConfigError without units of the element
        self.n_cables, self.cable_bps = state.fabric.failure_units(failures.element)
        self.down = np.zeros(self.n_cables, bool)
        #: Whether the next Poisson failure is scheduled (none while every unit is down).
        self.drawing = False
        #: One record per event: see :data:`LINK_EVENT_COLUMNS`.
        self.events: list[dict[str, Any]] = []
        for key in ("link_failures", "link_repairs", "link_reroutes"):
            state.stats.setdefault(key, 0)

    def start(self) -> None:
        """Schedule the failures at time 0, the scripted events and the first Poisson one."""
        q = self.s.queue
        lf = self.lf
        if lf.fraction > 0:
            k = max(1, round(lf.fraction * self.n_cables))
            cables = np.sort(self.rng.choice(self.n_cables, size=k, replace=False))
            q.schedule(0.0, "linkfail", data=cables, priority=P_FINISH)
        for t, cable, kind in lf.script:
            if not 0 <= int(cable) < self.n_cables:
                raise ConfigError(
                    f"link failures: unit {cable} out of range; the fabric has "
                    f"{self.n_cables} {lf.element} units"
                )
            q.schedule(float(t), "link" + kind, data=np.array([int(cable)]), priority=P_FINISH)
        self._schedule_next(0.0)

    def _schedule_next(self, now: float) -> None:
        """Schedule the next Poisson failure among the units up (none while every unit is
        down: the first repair schedules it again, the process being memoryless)."""
        s = self.s
        rate = self.lf.rate_per_cable_day / _DAY_S * int((~self.down).sum())
        self.drawing = rate > 0 and s.done < s.records.n
        if not self.drawing:
            return
        t = now + float(self.rng.exponential(1.0 / rate))
        s.queue.schedule(t, "linkdraw", priority=P_FINISH)

    # -- events ---------------------------------------------------------------------------
    def on_draw(self, ev: Event) -> None:
        """A Poisson failure: a working unit at random goes down until ``repair_s`` later."""
        up = np.flatnonzero(~self.down)
        if up.size:
            cable = int(self.rng.choice(up))
            self._change(np.array([cable]), True, ev.time_s)
            self.s.queue.schedule(
                ev.time_s + self.lf.repair_s, "linkrepair", data=np.array([cable]),
                priority=P_FINISH,
            )  # fmt: skip
        self._schedule_next(ev.time_s)

    def on_fail(self, ev: Event) -> None:
        """Units go down (time-0 share or script)."""
        self._change(np.asarray(ev.data, dtype=np.int64), True, ev.time_s)

    def on_repair(self, ev: Event) -> None:
        """Units are back: the waiting jobs are offered the links again (a job whose flows
        found no route waits for a repair as others wait for GPUs)."""
        self._change(np.asarray(ev.data, dtype=np.int64), False, ev.time_s)
        if not self.drawing:  # every unit was down: failures resume with this one up
            self._schedule_next(ev.time_s)
        if self.admission is not None and self.admission.waiting:
            self.admission.try_start(ev.time_s)

    def _change(self, cables: np.ndarray, fail: bool, now: float) -> None:
        s = self.s
        cables = cables[self.down[cables] != fail]
        if not cables.size:
            return
        self.down[cables] = fail
        fab = s.fabric
        was_dead = None if fab.dead_links is None else fab.dead_links.copy()
        change = fab.fail_units(self.lf.element, cables, fail)
        reroute = set(change.reroute)
        dead = fab.dead_links
        if fail and dead is not None:
            newly = dead & ~was_dead if was_dead is not None else dead
            if newly.any():
                inflight = self.changes.model.inflight  # a load-aware round's own routes
                for jid, run in s.running.items():
                    cur = inflight.get(jid)
                    if newly[run.plan.links].any() or (
                        cur is not None and newly[cur[0].links].any()
                    ):
                        reroute.add(jid)
        lost = float(self.cable_bps * cables.size)
        self.changes.apply(replace(change, reroute=tuple(sorted(reroute))), now)
        s.stats["link_failures" if fail else "link_repairs"] += int(cables.size)
        s.stats["link_reroutes"] += len(reroute)
        self.events.append(
            {
                "time_s": now,
                "kind": "fail" if fail else "repair",
                "cables": int(cables.size),
                "dead_links": 0 if dead is None else int(dead.sum()),
                "rerouted_jobs": len(reroute),
                "capacity_lost_bps": lost if fail else -lost,
            }
        )

    def table(self) -> pd.DataFrame:
        """The events as a table (:data:`LINK_EVENT_COLUMNS`)."""
        return pd.DataFrame(self.events, columns=list(LINK_EVENT_COLUMNS))
