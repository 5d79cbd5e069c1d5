"""The LLM training job model (``../shared/WORKLOAD.md``, LumosCore paper §6.2).

A job occupies ``gpus = tp * pp * dp`` GPUs for ``iterations`` iterations. ``duration_s`` is its
run time on an ideal network at the reference port speed; one iteration takes
``duration_s / iterations`` there, of which the exposed (non-overlappable) communication of each
traffic class takes the share given by :class:`ExposedShares` and compute takes the rest.

Examples
--------
>>> job = Job(job_id=0, arrival_s=0.0, gpus=64, model="llama_7b", tp=8, pp=2, dp=4, ep=16,
...           iterations=10, duration_s=1000.0)
>>> job.servers, job.iteration_s
(8, 100.0)
>>> round(job.shares.dp, 4)
0.069
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lumoscore.errors import ConfigError

__all__ = [
    "COLLECTIVES",
    "KNOWN_MODEL_SHARES",
    "MODEL_SHARES",
    "REFERENCE_PORT_GBPS",
    "VCLOS_MODEL_SHARES",
    "ExposedShares",
    "Job",
]

#: Port speed at which the exposed shares of WORKLOAD.md hold (Gb/s).
REFERENCE_PORT_GBPS = 1600.0

#: Data-parallel collective algorithms a job may use.
COLLECTIVES: tuple[str, ...] = (
    "ring",
    "hierarchical-ring",
    "halving-doubling",
    "all-to-all",
    "double-binary-tree",
)


@dataclass(frozen=True)
class ExposedShares:
    """Exposed share of one iteration per traffic class on an ideal network.

    ``dp``: data-parallel all-reduce, ``ep``: expert all-to-all, ``pp``: pipeline send/recv.
    """

    dp: float = 0.0
    ep: float = 0.0
    pp: float = 0.0

    def __post_init__(self) -> None:
        for name in ("dp", "ep", "pp"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0.0 <= v < 1.0):
                raise ConfigError(f"exposed share {name} must be in [0, 1), got {v!r}")
        if self.dp + self.ep + self.pp >= 1.0:
            raise ConfigError(
                f"exposed shares must sum below 1 (compute needs time), got "
                f"dp+ep+pp={self.dp + self.ep + self.pp:.4f}"
            )

    @property
    def total(self) -> float:
        """Share of an iteration spent in exposed communication."""
        return self.dp + self.ep + self.pp


#: Exposed shares per model (WORKLOAD.md): data-parallel / expert / pipeline.
MODEL_SHARES: dict[str, ExposedShares] = {
    "Pangu": ExposedShares(dp=0.0737, ep=0.258, pp=0.0058),
    "llama_7b": ExposedShares(dp=0.069, ep=0.255, pp=0.0077),
    "llama2_7b": ExposedShares(dp=0.011, ep=0.052, pp=0.0047),
    "llama2_13b": ExposedShares(dp=0.0017, ep=0.058, pp=0.0034),
    "GPT2_13b": ExposedShares(dp=0.047, ep=0.145, pp=0.0063),
}

#: Uncoverable communication share per job type of the vClos evaluation (vClos §8.1, §9.1,
#: Fig. 6; values chosen here, ``docs/workload.md`` gives the reasoning): data-parallel CNN and
#: BERT jobs expose part of their all-reduce, DLRM and MoE most of their all-to-all. The
#: research code's testbed run times under two-flow contention (``llm.py``) put VGG16 at
#: +8-9 % and ResNet50/101 at +0-2.5 % (an exposed share doubles under two-flow contention);
#: §4.2 gives a 600B MoE model's all-to-all 25.8 % and all-reduce 4.2 %; §1 puts all-to-all
#: at 20-50 % of DLRM-like training.
VCLOS_MODEL_SHARES: dict[str, ExposedShares] = {
    "VGG16": ExposedShares(dp=0.09),
    "ResNet50": ExposedShares(dp=0.02),
    "ResNet101": ExposedShares(dp=0.02),
    "BERT": ExposedShares(dp=0.10),
    "DLRM": ExposedShares(dp=0.05, ep=0.35),
    "MoE": ExposedShares(dp=0.042, ep=0.258),
}

#: Every model a job may name without explicit shares.
KNOWN_MODEL_SHARES: dict[str, ExposedShares] = {**MODEL_SHARES, **VCLOS_MODEL_SHARES}


@dataclass(frozen=True)
class Job:
    """One training job of a trace.

    Parameters
    ----------
    job_id : int
        Identifier, unique in its trace.
    arrival_s : float
        Submission time.
    gpus : int
        GPUs requested; equals ``tp * pp * dp``.
    model : str
        Model name (a key of :data:`KNOWN_MODEL_SHARES` unless ``shares`` is given).
    tp, pp, dp : int
        Tensor, pipeline and data parallel degrees.
    ep : int
        Expert-parallel group size in GPUs (``<= tp`` means no inter-server all-to-all).
    iterations : int
        Training iterations.
    duration_s : float
        Run time on an ideal network at :data:`REFERENCE_PORT_GBPS`.
    shares : ExposedShares, optional
        Exposed communication shares; by default those of ``model``. A class whose parallel
        degree is 1 has share 0 (see :attr:`effective_shares`).
    collective : str
        Data-parallel collective algorithm, one of :data:`COLLECTIVES`.
    deadline_s : float, optional
        Absolute deadline (for EDF queueing).
    """

    job_id: int
    arrival_s: float
    gpus: int
    model: str
    tp: int
    pp: int
    dp: int
    ep: int
    iterations: int
    duration_s: float
    shares: ExposedShares = field(default=None)  # type: ignore[assignment]
    collective: str = "ring"
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        if self.shares is None:
            if self.model not in KNOWN_MODEL_SHARES:
                raise ConfigError(
                    f"job {self.job_id}: unknown model {self.model!r} and no shares given; "
                    f"known models: {', '.join(KNOWN_MODEL_SHARES)}"
                )
            object.__setattr__(self, "shares", KNOWN_MODEL_SHARES[self.model])
        for name in ("gpus", "tp", "pp", "dp", "ep", "iterations"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ConfigError(f"job {self.job_id}: {name} must be an integer >= 1, got {v!r}")
        product = int(self.tp) * int(self.pp) * int(self.dp)  # Python ints: never wraps
        if product != self.gpus:
            raise ConfigError(
                f"job {self.job_id}: gpus={self.gpus} must equal tp*pp*dp="
                f"{self.tp}*{self.pp}*{self.dp}={product}"
            )
        if not (math.isfinite(self.arrival_s) and self.arrival_s >= 0):
            raise ConfigError(f"job {self.job_id}: arrival_s must be >= 0, got {self.arrival_s!r}")
        if not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise ConfigError(f"job {self.job_id}: duration_s must be > 0, got {self.duration_s!r}")
        if self.collective not in COLLECTIVES:
            raise ConfigError(
                f"job {self.job_id}: collective {self.collective!r} not one of "
                f"{', '.join(COLLECTIVES)}"
            )

    @property
    def servers(self) -> int:
        """Servers the job spans when TP fills a server (``gpus / tp``)."""
        return self.gpus // self.tp

    @property
    def iteration_s(self) -> float:
        """Ideal duration of one iteration."""
        return self.duration_s / self.iterations

    @property
    def effective_shares(self) -> ExposedShares:
        """Shares with a class set to 0 when its parallel degree is 1 (no such traffic)."""
        s = self.shares
        return ExposedShares(
            dp=s.dp if self.dp > 1 else 0.0,
            ep=s.ep if self.ep > self.tp else 0.0,
            pp=s.pp if self.pp > 1 else 0.0,
        )

    @property
    def compute_s(self) -> float:
        """Compute time of one iteration (the iteration minus its exposed communication)."""
        return self.iteration_s * (1.0 - self.effective_shares.total)
