"""GPU failures: a Poisson failure process with soft and hard failures and repair times.

LumosCore §6.5 (Fig. 8(d)) simulates GPU failures of two kinds: *soft* failures (software;
the GPU is back after a reboot) and *hard* failures (hardware; the GPU is replaced, which takes
much longer). Each GPU fails independently at ``rate_per_gpu_day``; a failure hits a GPU drawn
uniformly from the cluster. A job running on a failed GPU is stopped, loses the work done since
its last checkpoint and goes back to the head of the queue with the iterations it still has to
run (checkpoint-restart); it restarts after ``restart_s`` on whatever GPUs the placer then
gives it. The failed GPU cannot be placed on until it is repaired.

Examples
--------
>>> import numpy as np
>>> m = FailureModel(rate_per_gpu_day=0.01, hard_fraction=0.25)
>>> round(m.cluster_rate_per_s(8640), 6)  # 8640 GPUs x 0.01 per day
0.001
>>> rng = np.random.default_rng(0)
>>> t, gpu, hard, repair_s = m.draw(rng, now_s=0.0, gpus=8640)
>>> bool(t > 0 and 0 <= gpu < 8640)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lumoscore.errors import ConfigError

__all__ = ["FailureModel"]


@dataclass(frozen=True)
class FailureModel:
    """Parameters of the GPU failure process.

    Parameters
    ----------
    rate_per_gpu_day : float
        Failures per GPU per day (0 disables failures). Meta's Llama 3 run saw about
        ``5e-4`` unexpected interruptions per GPU-day.
    hard_fraction : float
        Share of failures that are hard (in ``[0, 1]``); the rest are soft.
    soft_repair_s, hard_repair_s : float
        Time until a failed GPU can be used again.
    checkpoint_interval_s : float
        A running job checkpoints every this many seconds of run time; on a failure it loses
        the run time since its last checkpoint (``inf``: restart from the beginning).
    restart_s : float
        Extra time a restarted job needs before its first iteration (loading the checkpoint).
    """

    rate_per_gpu_day: float = 0.0
    hard_fraction: float = 0.3
    soft_repair_s: float = 600.0
    hard_repair_s: float = 4 * 3600.0
    checkpoint_interval_s: float = 3600.0
    restart_s: float = 300.0

    def __post_init__(self) -> None:
        def check(name: str, ok: bool, allowed: str) -> None:
            if not ok:
                raise ConfigError(
                    f"failures.{name}={getattr(self, name)!r} invalid; allowed: {allowed}"
                )

        check("rate_per_gpu_day", _finite(self.rate_per_gpu_day, 0), "a finite number >= 0")
        check("hard_fraction", 0.0 <= self.hard_fraction <= 1.0, "a number in [0, 1]")
        check("soft_repair_s", _finite(self.soft_repair_s, 0), "a finite number >= 0")
        check("hard_repair_s", _finite(self.hard_repair_s, 0), "a finite number >= 0")
        check(
            "checkpoint_interval_s",
            self.checkpoint_interval_s > 0,
            "a number > 0 (inf: no checkpoints)",
        )
        check("restart_s", _finite(self.restart_s, 0), "a finite number >= 0")

    @property
    def enabled(self) -> bool:
        """Whether any failure can happen."""
        return self.rate_per_gpu_day > 0

    def cluster_rate_per_s(self, gpus: int) -> float:
        """Failures per second over a cluster of ``gpus`` GPUs."""
        return self.rate_per_gpu_day * gpus / 86400.0

    def draw(
        self, rng: np.random.Generator, now_s: float, gpus: int
    ) -> tuple[float, int, bool, float]:
        """The next failure after ``now_s``: ``(time_s, gpu, hard, repair_s)``."""
        t = now_s + float(rng.exponential(1.0 / self.cluster_rate_per_s(gpus)))
        gpu = int(rng.integers(gpus))
        hard = bool(rng.random() < self.hard_fraction)
        return t, gpu, hard, self.hard_repair_s if hard else self.soft_repair_s

    def checkpoints(self, run_s: float) -> int:
        """Checkpoints a job has written after ``run_s`` seconds of running."""
        return int(run_s // self.checkpoint_interval_s)

    def kept_iterations(self, run_s: float, iteration_s: float) -> int:
        """Iterations the last checkpoint holds after ``run_s`` seconds of running, for a job
        whose iterations all take ``iteration_s``.

        Examples
        --------
        >>> FailureModel(checkpoint_interval_s=100.0).kept_iterations(250.0, 30.0)  # at 200 s
        6
        """
        k = self.checkpoints(run_s)
        if not k or iteration_s <= 0:
            return 0
        return int(k * self.checkpoint_interval_s // iteration_s)


def _finite(x: float, low: float) -> bool:
    return math.isfinite(x) and x >= low
