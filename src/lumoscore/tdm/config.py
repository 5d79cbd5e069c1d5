"""TOML configuration of ``lumos tdm`` (pydantic) and the built-in presets.

Every key is documented in ``docs/tdm.md``. Unknown keys are rejected; errors name the field
and the allowed values.

Examples
--------
>>> cfg = TdmConfig.model_validate({"seed": 3, "workload": {"n_jobs": 5}})
>>> cfg.network.n_pods, cfg.workload.n_jobs, cfg.seed
(256, 5, 3)
>>> sorted(PRESETS)
['paper', 'small']
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lumoscore.errors import ConfigError, format_validation_error
from lumoscore.fileio import read_text
from lumoscore.tdm.models import LLAMA3, Compute, ModelSpec, Network

__all__ = [
    "PRESETS",
    "ComputeConfig",
    "JobConfig",
    "ModelConfig",
    "NetworkConfig",
    "SolverConfig",
    "SweepConfig",
    "TdmConfig",
    "WorkloadConfig",
    "load_config",
    "preset",
]

KindName = Literal["ps", "rar", "alltoall"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class NetworkConfig(_Strict):
    """``[network]``: the optical DCN (defaults: §IV.A)."""

    n_pods: int = Field(256, ge=1)
    pods_per_group: int = Field(8, ge=1)
    gpus_per_pod: int = Field(2048, ge=1)
    ports_per_pod: int = Field(16, ge=1)
    port_gbps: float = Field(150.0, gt=0)
    tor_gbps: float | None = Field(None, gt=0)
    reconfig_us: float = Field(100.0, ge=0)

    @model_validator(mode="after")
    def _groups_divide(self) -> NetworkConfig:
        if self.n_pods % self.pods_per_group:
            raise ValueError(
                f"n_pods ({self.n_pods}) must be a multiple of pods_per_group "
                f"({self.pods_per_group})"
            )
        return self

    def build(self) -> Network:
        """The :class:`~lumoscore.tdm.models.Network`."""
        return Network(
            n_pods=self.n_pods,
            pods_per_group=self.pods_per_group,
            gpus_per_pod=self.gpus_per_pod,
            ports_per_pod=self.ports_per_pod,
            port_gbps=self.port_gbps,
            tor_gbps=self.tor_gbps,
            reconfig_s=self.reconfig_us * 1e-6,
        )


class ComputeConfig(_Strict):
    """``[compute]``: Eq. (8) parameters."""

    gpu_tflops: float = Field(26.0, gt=0)
    efficiency: float = Field(0.4, gt=0, le=1)
    k: float = Field(8.0, gt=0)
    bytes_per_param: float = Field(2.0, gt=0)

    def build(self) -> Compute:
        """The :class:`~lumoscore.tdm.models.Compute`."""
        return Compute(
            gpu_flops=self.gpu_tflops * 1e12,
            efficiency=self.efficiency,
            k=self.k,
            bytes_per_param=self.bytes_per_param,
        )


class ModelConfig(_Strict):
    """``[[models]]``: an extra (or overriding) catalog entry."""

    name: str = Field(min_length=1)
    param_gb: float = Field(gt=0)
    hidden_size: int = Field(ge=1)
    gpus_per_unit: int = Field(1, ge=1)


class JobConfig(_Strict):
    """``[[jobs]]``: explicit jobs (deployed in order by §IV.B)."""

    kind: KindName
    model: str
    degree: int = Field(ge=1)
    context_tokens: int | None = Field(None, ge=1)
    gpus_per_unit: int | None = Field(None, ge=1)
    count: int = Field(1, ge=1)


class WorkloadConfig(_Strict):
    """``[workload]``: a random job mix (§IV.A)."""

    n_jobs: int = Field(100, ge=0)
    context_tokens: int = Field(8192, ge=1)
    models: list[str] = Field(default_factory=lambda: ["1B", "3B", "8B", "90B"], min_length=1)
    kinds: list[KindName] = Field(default_factory=lambda: ["ps", "rar", "alltoall"], min_length=1)
    degree_min: int = Field(2, ge=1)
    degree_max: int = Field(16, ge=1)

    @model_validator(mode="after")
    def _degree_range(self) -> WorkloadConfig:
        if self.degree_min > self.degree_max:
            raise ValueError(
                f"degree_min ({self.degree_min}) must be <= degree_max ({self.degree_max})"
            )
        return self


class SweepConfig(_Strict):
    """``[sweep]``: values for the round-time-vs-jobs and vs-context-length charts."""

    n_jobs: list[int] = Field(default_factory=list)
    context_tokens: list[int] = Field(default_factory=list)

    @model_validator(mode="after")
    def _positive(self) -> SweepConfig:
        if any(v < 0 for v in self.n_jobs) or any(v < 1 for v in self.context_tokens):
            raise ValueError("n_jobs values must be >= 0 and context_tokens values >= 1")
        return self


class SolverConfig(_Strict):
    """``[solver]``: hill-climbing cap and the optional exact ILP."""

    max_iters: int | None = Field(None, ge=0)
    ilp: bool = False
    ilp_time_limit_s: float = Field(60.0, gt=0, allow_inf_nan=True)  # inf: no limit


class TdmConfig(_Strict):
    """A whole ``lumos tdm`` file."""

    seed: int = Field(0, ge=0)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    compute: ComputeConfig = Field(default_factory=ComputeConfig)
    models: list[ModelConfig] = Field(default_factory=list)
    workload: WorkloadConfig | None = None
    jobs: list[JobConfig] = Field(default_factory=list)
    sweep: SweepConfig = Field(default_factory=SweepConfig)
    solver: SolverConfig = Field(default_factory=SolverConfig)

    @model_validator(mode="after")
    def _check(self) -> TdmConfig:
        if self.workload is not None and self.jobs:
            raise ValueError("give either [workload] or [[jobs]], not both")
        names = set(self.catalog())
        wanted = [j.model for j in self.jobs]
        if self.workload is not None:
            wanted += self.workload.models
        bad = sorted({m for m in wanted if m not in names})
        if bad:
            raise ValueError(f"unknown model(s) {bad}: allowed {sorted(names)}")
        return self

    def catalog(self) -> dict[str, ModelSpec]:
        """Model catalog: Llama 3 (Table III) plus ``[[models]]`` entries."""
        cat = dict(LLAMA3)
        for m in self.models:
            cat[m.name] = ModelSpec(m.name, m.param_gb * 1e9, m.hidden_size, m.gpus_per_unit)
        return cat

    @property
    def effective_workload(self) -> WorkloadConfig | None:
        """The random workload, or ``None`` when explicit jobs are given."""
        if self.jobs:
            return None
        return self.workload or WorkloadConfig()


def load_config(path: Path | str) -> TdmConfig:
    """Read and validate a TOML file.

    Raises
    ------
    ConfigError
        The file is not valid TOML, or a value is invalid (one line naming the file and the
        field).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tdm.toml"
    >>> _ = f.write_text("seed = 7")
    >>> cfg = load_config(f)
    >>> cfg.seed, cfg.network.n_pods
    (7, 256)
    """
    path = Path(path)
    try:
        data = tomllib.loads(read_text(path, what="a TDM TOML file"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    try:
        return TdmConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {format_validation_error(exc)}") from None


#: Built-in configurations (``lumos tdm --preset NAME``).
PRESETS: dict[str, TdmConfig] = {
    # §IV: 256 pods x 2048 A100, 32 OXCs x 128 ports, groups of 8 pods, 16 x 150 Gb/s per pod,
    # 100 random Llama 3 jobs (1B/3B/8B/90B, degree 2-16, PS/RAR/all-to-all), context 8k.
    "paper": TdmConfig(
        seed=0,
        workload=WorkloadConfig(),
        sweep=SweepConfig(
            n_jobs=[25, 50, 100, 150, 200, 300],
            context_tokens=[1024, 2048, 4096, 8192, 16384],
        ),
    ),
    # A tiny instance the exact ILP solves in about a second.
    "small": TdmConfig(
        seed=0,
        network=NetworkConfig(n_pods=4, pods_per_group=4, gpus_per_pod=16, ports_per_pod=6),
        workload=WorkloadConfig(
            n_jobs=3, context_tokens=32, models=["1B", "3B"], degree_min=2, degree_max=4
        ),
        sweep=SweepConfig(n_jobs=[1, 2, 3, 4, 5], context_tokens=[16, 32, 64, 128, 256]),
        solver=SolverConfig(ilp=True),
    ),
}


def preset(name: str) -> TdmConfig:
    """A preset by name.

    Raises
    ------
    ConfigError
        Unknown name (the message lists the presets).

    Examples
    --------
    >>> preset("paper").network.pods_per_group
    8
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"preset {name!r} is not one of: {', '.join(sorted(PRESETS))}") from None
