"""Network, job and traffic models of TDM multi-stage scheduling (Tang, Chen, Zhu, §II).

An optical data-center network of ``n_pods`` pods is split into pod groups of
``pods_per_group`` pods; every group hangs off one OXC, so circuits only join pods of the same
group. Each pod's ToR has ``ports_per_pod`` OXC ports (``N_link``) of ``port_gbps`` (``B``) and
``tor_gbps`` (``B_tor``) towards its servers. A circuit is half-duplex: in one stage it carries
traffic in one direction, so the per-stage topology is a matrix ``L[i, j]`` of *directed* links and
pod ``i`` uses ``sum_j L[i, j] + L[j, i]`` ports (Eq. 6).

A job of ``degree`` parallel units (``E_n``) of ``gpus_per_unit`` GPUs (``U_n``) each runs four
stages per round: PS jobs train, push, aggregate and pull; RAR and all-to-all jobs train,
communicate, train, communicate (two iterations). Per-stage pod-pair traffic follows Eqs. (4)(5),
the training time Eq. (8).

Examples
--------
>>> net = Network(n_pods=8, pods_per_group=4, ports_per_pod=6)
>>> net.n_groups, net.tor_gbps
(2, 900.0)
>>> job = Job(kind="ps", model=LLAMA3["1B"], degree=4)
>>> round(job.train_s, 3), job.unit_bytes
(7.751, 2460000000.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from lumoscore.errors import ConfigError

__all__ = [
    "DEFAULT_BYTES_PER_PARAM",
    "DEFAULT_EFFICIENCY",
    "DEFAULT_GPU_FLOPS",
    "DEFAULT_K",
    "LLAMA3",
    "Compute",
    "Job",
    "JobKind",
    "ModelSpec",
    "Network",
    "Placement",
    "job_traffic",
    "training_time_s",
]

#: Peak GPU throughput F_GPU of §IV.A (FLOP/s).
DEFAULT_GPU_FLOPS = 26e12
#: GPU efficiency (utilization) of §IV.A.
DEFAULT_EFFICIENCY = 0.4
#: FLOPs per parameter and token with recomputation (Eq. 8's K).
DEFAULT_K = 8.0
#: Bytes per parameter used to turn Table III sizes into parameter counts (BF16 checkpoints).
DEFAULT_BYTES_PER_PARAM = 2.0


class JobKind(StrEnum):
    """Collective-communication class of a job (§II.B)."""

    PS = "ps"
    RAR = "rar"
    ALLTOALL = "alltoall"


@dataclass(frozen=True)
class ModelSpec:
    """An LLM: its size (Table III), hidden size and GPUs of one parallel unit.

    Parameters
    ----------
    name : str
        Catalog name (``"8B"``).
    param_bytes : float
        Parameter size in bytes (Table III); also the gradient volume of one replica.
    hidden_size : int
        Model width; an all-to-all job exchanges ``tokens * hidden_size * bytes_per_param``
        bytes per GPU per stage.
    gpus_per_unit : int
        Default ``U_n``: GPUs holding one replica (memory of an 80 GB A100 with Adam state).
    """

    name: str
    param_bytes: float
    hidden_size: int
    gpus_per_unit: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.param_bytes) and self.param_bytes > 0):
            raise ConfigError(f"model {self.name!r}: param_bytes must be > 0")
        if self.hidden_size < 1 or self.gpus_per_unit < 1:
            raise ConfigError(f"model {self.name!r}: hidden_size and gpus_per_unit must be >= 1")


#: Llama 3 models of §IV.A with the parameter sizes of Table III.
LLAMA3: dict[str, ModelSpec] = {
    "1B": ModelSpec("1B", 2.46e9, 2048, 1),
    "3B": ModelSpec("3B", 6.42e9, 3072, 1),
    "8B": ModelSpec("8B", 21.2e9, 4096, 4),
    "90B": ModelSpec("90B", 177.6e9, 8192, 32),
}


@dataclass(frozen=True)
class Compute:
    """GPU compute parameters of Eq. (8).

    Examples
    --------
    >>> Compute().flops_per_s
    10400000000000.0
    """

    gpu_flops: float = DEFAULT_GPU_FLOPS
    efficiency: float = DEFAULT_EFFICIENCY
    k: float = DEFAULT_K
    bytes_per_param: float = DEFAULT_BYTES_PER_PARAM

    def __post_init__(self) -> None:
        for name in ("gpu_flops", "k", "bytes_per_param"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ConfigError(f"compute.{name} must be a finite number > 0, got {v!r}")
        if not (0.0 < self.efficiency <= 1.0):
            raise ConfigError(f"compute.efficiency must be in (0, 1], got {self.efficiency!r}")

    @property
    def flops_per_s(self) -> float:
        """Sustained FLOP/s of one GPU, ``F_GPU * efficiency``."""
        return self.gpu_flops * self.efficiency


def training_time_s(param_bytes: float, tokens: int, compute: Compute | None = None) -> float:
    """Training (or aggregation) time of one stage, Eq. (8).

    ``t = K * tokens * Phi / (F_GPU * efficiency)`` with ``Phi = param_bytes / bytes_per_param``
    the parameter count.

    Examples
    --------
    >>> round(training_time_s(2.46e9, 8192), 4)
    7.7509
    """
    c = compute or Compute()
    return c.k * tokens * (param_bytes / c.bytes_per_param) / c.flops_per_s


@dataclass(frozen=True)
class Network:
    """Optical DCN of §II.A.

    Parameters
    ----------
    n_pods : int
        Pods ``|V|``; a multiple of ``pods_per_group``.
    pods_per_group : int
        Pods sharing one OXC; a job lives inside one group (§IV.B).
    gpus_per_pod : int
        GPUs of a pod.
    ports_per_pod : int
        OXC ports of a pod's ToR, ``N_link``.
    port_gbps : float
        Bandwidth of one OXC port, ``B``.
    tor_gbps : float or None
        ToR-to-server bandwidth ``B_tor``; ``None`` means 1:1, ``ports_per_pod * port_gbps``.
    reconfig_s : float
        OXC reconfiguration delay.
    """

    n_pods: int = 256
    pods_per_group: int = 8
    gpus_per_pod: int = 2048
    ports_per_pod: int = 16
    port_gbps: float = 150.0
    tor_gbps: float | None = None
    reconfig_s: float = 100e-6

    def __post_init__(self) -> None:
        for name in ("n_pods", "pods_per_group", "gpus_per_pod", "ports_per_pod"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"network.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.n_pods % self.pods_per_group:
            raise ConfigError(
                f"network.n_pods ({self.n_pods}) must be a multiple of network.pods_per_group "
                f"({self.pods_per_group})"
            )
        if not (math.isfinite(self.port_gbps) and self.port_gbps > 0):
            raise ConfigError(f"network.port_gbps must be > 0, got {self.port_gbps!r}")
        if self.tor_gbps is None:
            object.__setattr__(self, "tor_gbps", self.ports_per_pod * float(self.port_gbps))
        elif not (math.isfinite(self.tor_gbps) and self.tor_gbps > 0):
            raise ConfigError(f"network.tor_gbps must be > 0, got {self.tor_gbps!r}")
        if not (math.isfinite(self.reconfig_s) and self.reconfig_s >= 0):
            raise ConfigError(f"network.reconfig_s must be >= 0, got {self.reconfig_s!r}")

    @property
    def n_groups(self) -> int:
        """Number of pod groups (= OXCs)."""
        return self.n_pods // self.pods_per_group

    @property
    def port_bytes_per_s(self) -> float:
        """``B`` in bytes per second."""
        return self.port_gbps * 1e9 / 8.0

    @property
    def tor_bytes_per_s(self) -> float:
        """``B_tor`` in bytes per second."""
        return float(self.tor_gbps) * 1e9 / 8.0


@dataclass(frozen=True)
class Job:
    """One training job (§II.B).

    Parameters
    ----------
    kind : JobKind or str
        ``"ps"``, ``"rar"`` or ``"alltoall"``.
    model : ModelSpec
        The model trained.
    degree : int
        Parallel units ``E_n`` (DP degree for PS/RAR, EP degree for all-to-all), >= 1.
    tokens : int
        Context length: tokens per unit per iteration in Eq. (8).
    gpus_per_unit : int or None
        ``U_n``; ``None`` takes the model's default.
    compute : Compute
        Eq. (8) parameters.
    name : str
        Label shown in reports.
    """

    kind: JobKind
    model: ModelSpec
    degree: int
    tokens: int = 8192
    gpus_per_unit: int | None = None
    compute: Compute = field(default_factory=Compute)
    name: str = ""

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", JobKind(self.kind))
        except ValueError:
            allowed = ", ".join(k.value for k in JobKind)
            raise ConfigError(f"job kind {self.kind!r} is not one of: {allowed}") from None
        if self.degree < 1:
            raise ConfigError(f"job degree must be >= 1, got {self.degree!r}")
        if self.tokens < 1:
            raise ConfigError(f"job tokens must be >= 1, got {self.tokens!r}")
        if self.gpus_per_unit is None:
            object.__setattr__(self, "gpus_per_unit", self.model.gpus_per_unit)
        elif self.gpus_per_unit < 1:
            raise ConfigError(f"job gpus_per_unit must be >= 1, got {self.gpus_per_unit!r}")

    @property
    def gpus(self) -> int:
        """GPUs the job occupies, ``E_n * U_n``."""
        return self.degree * int(self.gpus_per_unit)

    @property
    def train_s(self) -> float:
        """Duration of one compute stage: Eq. (8) shared by the ``U_n`` GPUs of a unit.

        Eq. (8) counts the FLOPs of one unit processing ``tokens`` tokens; the unit's GPUs split
        the model, so each computes ``1 / U_n`` of them (``U_n = 1`` gives Eq. (8) itself).
        """
        return training_time_s(self.model.param_bytes, self.tokens, self.compute) / int(
            self.gpus_per_unit
        )

    @property
    def gpu_output_bytes(self) -> float:
        """``F_n``: output of one GPU per communication stage.

        Data parallel (PS, RAR): the gradient shard ``param_bytes / U_n``. All-to-all (EP): the
        activations of one context, ``tokens * hidden_size * bytes_per_param``.
        """
        if self.kind is JobKind.ALLTOALL:
            return self.tokens * self.model.hidden_size * self.compute.bytes_per_param
        return self.model.param_bytes / int(self.gpus_per_unit)

    @property
    def unit_bytes(self) -> float:
        """``F_n * U_n``: what one parallel unit sends over one inter-unit connection."""
        return self.gpu_output_bytes * int(self.gpus_per_unit)


@dataclass(frozen=True, eq=False)
class Placement:
    """Where a job's parallel units run (§IV.B).

    Parameters
    ----------
    group : int
        Pod group (OXC) index.
    units_per_pod : numpy.ndarray
        ``(pods_per_group,)`` int: parallel units (master nodes ``PN/AN``) per pod of the group.
    ps_pod : int
        Local pod index of the parameter server (PS jobs), else ``-1``.
    """

    group: int
    units_per_pod: np.ndarray
    ps_pod: int = -1

    @property
    def pods(self) -> np.ndarray:
        """Local indices of the pods hosting units (``RN_n``)."""
        return np.flatnonzero(self.units_per_pod)


def job_traffic(job: Job, placement: Placement) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-stage traffic of a job inside its pod group, Eqs. (4)(5).

    Returns
    -------
    demand_bytes : numpy.ndarray
        ``(2, P, P)``: pod-pair OXC traffic of the first (push / collective) and second (pull /
        collective) communication stage; zero diagonal. For RAR jobs it is zero: the ring is a
        decision (:mod:`lumoscore.tdm.ring`) and each ring link carries ``unit_bytes``.
    tor_bytes : numpy.ndarray
        ``(P,)``: ToR-to-server traffic of each pod in either communication stage (Eq. 5):
        ``G_i F_n`` (PS), ``2 G_i F_n`` (RAR), ``2 G_i F_n (E_n - 1)`` (all-to-all).
    ring_pods : numpy.ndarray
        Local pods the ring of a RAR job must visit (empty for other kinds or one pod).

    Examples
    --------
    >>> job = Job(kind="ps", model=LLAMA3["1B"], degree=3)
    >>> d, tor, _ = job_traffic(job, Placement(0, np.array([1, 2, 0]), ps_pod=0))
    >>> (d[0] / job.unit_bytes).astype(int).tolist()
    [[0, 0, 0], [2, 0, 0], [0, 0, 0]]
    >>> (d[1] / job.unit_bytes).astype(int).tolist()
    [[0, 2, 0], [0, 0, 0], [0, 0, 0]]
    """
    units = np.asarray(placement.units_per_pod, dtype=float)
    p = units.size
    v = job.unit_bytes
    demand = np.zeros((2, p, p))
    empty = np.zeros(0, dtype=np.int64)
    if job.kind is JobKind.PS:
        ps = placement.ps_pod
        push = units * v
        push[ps] = 0.0
        demand[0, :, ps] = push
        demand[1, ps, :] = push
        tor = units * v
        return demand, tor, empty
    if job.kind is JobKind.RAR:
        pods = placement.pods
        return demand, 2.0 * units * v, (pods if pods.size > 1 else empty)
    pair = np.outer(units, units) * v
    np.fill_diagonal(pair, 0.0)
    demand[0] = pair
    demand[1] = pair
    return demand, 2.0 * units * v * (job.degree - 1), empty
