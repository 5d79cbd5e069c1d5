"""Periodic OCS switching during a run (LumosCore Table 5, Cross Wiring Table 4).

Both papers switch half of the OCS links of their testbed at a regular interval while a
llama2-7B job trains, and report the job's mean time per step. A LumosCore fabric with
``switch_interval_s > 0`` (:class:`~lumoscore.fabric.lumos.LumosCoreFabric`) gets the same
here: every interval, for ``switch_s``, every OCS link keeps ``1 - switch_share`` of its
circuits' capacity (:meth:`~lumoscore.fabric.lumos.LumosCoreFabric.ocs_switch`); flows in
flight slow down exactly (the rates are solved again at both ends of the window).

Examples
--------
>>> from lumoscore.fabric.lumos import LumosCoreFabric
>>> from lumoscore.sim import Simulator
>>> from lumoscore.topology import ClusterSpec
>>> from lumoscore.workload import Job
>>> spec = ClusterSpec(pods=4, k_leaf=8, k_spine=8, tau=2, gpus_per_server=8, ocs_ports=4)
>>> job = Job(job_id=0, arrival_s=0.0, gpus=64, model="Pangu", tp=8, pp=2, dp=4, ep=8,
...           iterations=100, duration_s=100.0)
>>> fab = LumosCoreFabric(spec, switch_interval_s=10.0, reconfig_delay_s=0.0)
>>> res = Simulator(fab, [job]).run()
>>> res.stats["ocs_switches"] > 0
True
"""

from __future__ import annotations

from typing import Any

from lumoscore.sim.changes import FabricChanges
from lumoscore.sim.events import Event
from lumoscore.sim.state import P_FINISH, RunState

__all__ = ["OcsSwitching"]


class OcsSwitching:
    """The periodic switching windows of one run on a fabric with ``switch_interval_s``."""

    def __init__(self, state: RunState, changes: FabricChanges) -> None:
        self.s = state
        self.changes = changes
        fab: Any = state.fabric
        self.interval_s = float(fab.switch_interval_s)
        self.switch_s = float(fab.switch_s)
        state.stats.setdefault("ocs_switches", 0)

    def start(self) -> None:
        """Schedule the first window, one interval after time 0."""
        self.s.queue.schedule(self.interval_s, "ocsswitch", data=True, priority=P_FINISH)

    def on_switch(self, ev: Event) -> None:
        """A window opens (``data`` True) or closes; the next opens an interval later while
        jobs remain."""
        s = self.s
        fab: Any = s.fabric
        self.changes.apply(fab.ocs_switch(bool(ev.data)), ev.time_s)
        if ev.data:
            s.stats["ocs_switches"] += 1
            s.queue.schedule(ev.time_s + self.switch_s, "ocsswitch", data=False,
                             priority=P_FINISH)  # fmt: skip
        elif s.done < s.records.n:
            start = ev.time_s - self.switch_s + self.interval_s
            s.queue.schedule(start, "ocsswitch", data=True, priority=P_FINISH)
