"""Experiment files: pydantic models of one simulation run and of a whole experiment.

A :class:`RunConfig` is one fully resolved simulation (architecture, cluster size, trace,
routing, queue policy, approximation, failures, seed). An :class:`ExperimentConfig` is what an
experiment TOML file holds: the same fields, where the architecture, cluster size, load and
seed may be lists, plus an optional ``[sweep]`` table that maps any :class:`RunConfig` field
path (``"failures.rate_per_gpu_day"``, ``"trace.load"``, ``"routing"``, ...) to a list of
values. :func:`expand` turns an experiment into the grid of runs (architectures x cluster
sizes x sweep values x seeds) in a fixed order. Every model forbids unknown keys, so a typo is
an error; :func:`load_experiment` turns every validation problem into one
:class:`~lumoscore.errors.ConfigError` line ``field.path: message`` that names the allowed
values.

Examples
--------
>>> exp = ExperimentConfig(
...     name="tiny", gpus=512, architectures=["best", "lumoscore-51.2T-tau2"],
...     trace={"jobs": 20}, seeds=2)
>>> [(r.arch, r.seed) for r in expand(exp)]
[('best', 1), ('best', 2), ('lumoscore-51.2T-tau2', 1), ('lumoscore-51.2T-tau2', 2)]
>>> RunConfig(arch="foo", gpus=512)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for RunConfig
arch
  Value error, unknown fabric preset 'foo'; allowed: best, clos-51.2T-3tier, ...
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from lumoscore.errors import ConfigError, format_validation_error
from lumoscore.experiments.architectures import PAPER_ARCHITECTURES
from lumoscore.fabric.presets import architecture, make_fabric
from lumoscore.fileio import read_text
from lumoscore.limits import MAX_GPUS, MAX_JOBS, MAX_RUNS
from lumoscore.registry import Registry
from lumoscore.sim.failures import FailureModel
from lumoscore.sim.link_failures import LinkFailureModel
from lumoscore.sim.placers import PLACERS
from lumoscore.sim.queueing import QUEUE_POLICIES
from lumoscore.traffic.exposure import EXPOSURES
from lumoscore.workload.presets import PRESETS as TRACE_PRESETS

__all__ = [
    "DEFAULT_EXPERIMENT",
    "ExperimentConfig",
    "ExperimentTrace",
    "FailureConfig",
    "RunConfig",
    "TraceConfig",
    "check_trace_files",
    "expand",
    "experiment_from_dict",
    "format_validation_error",
    "load_experiment",
    "run_fields",
]

_MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True, ser_json_inf_nan="constants")
#: Sweep paths that have their own axis in an experiment (``architectures``, ``gpus``,
#: ``seeds``) and so are not allowed in ``[sweep]``.
_OWN_AXES = {"arch": "architectures", "gpus": "gpus", "seed": "seeds"}
#: Top-level shorthands of ``[trace]`` keys in an experiment file.
_TRACE_SHORTHANDS = ("jobs", "beta_s", "load", "load_basis")


def _canonical_arch(name: str) -> str:
    """The architecture's own spelling of ``name`` (raises the registry's error, listing the
    allowed names, for an unknown one)."""
    try:
        return architecture(name)[0]
    except ConfigError as exc:
        raise ValueError(str(exc)) from exc


def _can_fail(arch: str, element: str) -> bool:
    """Whether the architecture's fabric has ``element`` units that can fail (Best and the
    vClos clusters have none; OCS ports are LumosCore's)."""
    return element in architecture(arch)[1].fabric_class.failure_elements


def _routes_one_way(arch: str) -> bool:
    """Whether the architecture has a single routing policy (a routing option does not
    apply to it, e.g. Best)."""
    return len(architecture(arch)[1].routings) == 1


def _check_trace_preset(name: str | None) -> str | None:
    if name is not None and name not in TRACE_PRESETS:
        raise ValueError(f"unknown trace preset {name!r}; allowed: {', '.join(TRACE_PRESETS)}")
    return name


def _registered(registry: Registry[Any], name: str) -> str:
    """``name`` if ``registry`` has it, else the registry's message as a ValueError (pydantic
    then names the field)."""
    if name not in registry:
        raise ValueError(registry.unknown(name))
    return name


class FailureConfig(BaseModel):
    """GPU failure process (:class:`~lumoscore.sim.failures.FailureModel`); default: none.

    Examples
    --------
    >>> FailureConfig(rate_per_gpu_day=0.01).to_model().enabled
    True
    >>> FailureConfig().to_model().enabled
    False
    """

    model_config = _MODEL_CONFIG

    rate_per_gpu_day: float = Field(0.0, ge=0, allow_inf_nan=False)
    hard_fraction: float = Field(0.3, ge=0, le=1)
    soft_repair_s: float = Field(600.0, ge=0, allow_inf_nan=False)
    hard_repair_s: float = Field(4 * 3600.0, ge=0, allow_inf_nan=False)
    checkpoint_interval_s: float = Field(3600.0, gt=0)
    restart_s: float = Field(300.0, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _model_accepts(self) -> FailureConfig:
        self.to_model()
        return self

    def to_model(self) -> FailureModel:
        """The simulator's :class:`~lumoscore.sim.failures.FailureModel`."""
        return FailureModel(**self.model_dump())


class LinkFailureConfig(BaseModel):
    """Link failures (:class:`~lumoscore.sim.link_failures.LinkFailureModel`): leaf-spine
    cables, spine-OCS fibers or OCS ports (``element``); default: none.

    Examples
    --------
    >>> LinkFailureConfig(fraction=0.1).to_model().enabled, LinkFailureConfig().is_default
    (True, True)
    """

    model_config = _MODEL_CONFIG

    fraction: float = Field(0.0, ge=0, lt=1)
    rate_per_cable_day: float = Field(0.0, ge=0, allow_inf_nan=False)
    repair_s: float = Field(3600.0, gt=0, allow_inf_nan=False)
    element: Literal["leaf-spine", "spine-ocs", "ocs-port"] = "leaf-spine"

    @property
    def is_default(self) -> bool:
        """No cable ever fails (whatever ``repair_s``): the run is the same as without the
        field, which store keys then leave out."""
        return self.fraction == 0 and self.rate_per_cable_day == 0

    def key(self) -> dict[str, Any]:
        """The fields as a run's store key holds them (``element`` only when not the
        default, so keys of leaf-spine failure runs stay those they always were)."""
        d = self.model_dump()
        if d["element"] == "leaf-spine":
            del d["element"]
        return d

    def to_model(self) -> LinkFailureModel:
        """The simulator's :class:`~lumoscore.sim.link_failures.LinkFailureModel`."""
        return LinkFailureModel(**self.model_dump())


#: Trace preset of a run that names neither a preset nor a file.
DEFAULT_TRACE_PRESET = "lumoscore-published"


class TraceConfig(BaseModel):
    """The job trace of one run: a generated preset or a trace file.

    ``preset`` (default ``lumoscore-published``, the job set of the paper's published runs,
    when no ``file`` is given) draws ``jobs`` jobs
    with the run's seed; the arrival rate is ``beta_s`` (mean inter-arrival time) or ``load``
    (workload level, LumosCore Eq. 9), at most one of them (neither: the preset's default).
    ``file`` reads a trace file (``.csv``/``.parquet``) instead.

    Examples
    --------
    >>> TraceConfig().preset, TraceConfig(file="t.csv").preset
    ('lumoscore-published', None)
    """

    model_config = _MODEL_CONFIG

    preset: str | None = None
    jobs: int = Field(1000, ge=1, le=MAX_JOBS)
    beta_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    load: float | None = Field(None, gt=0, allow_inf_nan=False)
    load_basis: Literal["sample", "expected"] = "sample"
    file: str | None = None

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, v: str | None) -> str | None:
        return _check_trace_preset(v)

    @model_validator(mode="before")
    @classmethod
    def _default_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("file") is None and data.get("preset") is None:
            return {**data, "preset": DEFAULT_TRACE_PRESET}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> TraceConfig:
        if self.file is not None:
            if self.preset is not None:
                raise ValueError("give either trace.preset or trace.file, not both")
            if self.beta_s is not None or self.load is not None:
                raise ValueError("trace.beta_s and trace.load apply to preset traces only")
        if self.beta_s is not None and self.load is not None:
            raise ValueError("give at most one of trace.beta_s and trace.load")
        return self


class RunConfig(BaseModel):
    """One fully resolved simulation run.

    Parameters
    ----------
    gpus : int
        Cluster size (>= 8).
    arch : str
        Architecture (a name in :data:`lumoscore.fabric.presets.FABRICS` or a generic
        ``clos-<chip>T-<n>tier[-<o>:1]`` / ``leaf-spine-<chip>T`` name); the cluster must fit
        the architecture (checked by building the fabric).
    trace : TraceConfig
        The job trace.
    routing : str, optional
        Routing policy; ``None`` is the fabric's default.
    placer : str, optional
        Placer (:data:`~lumoscore.sim.placers.PLACERS`); ``None`` is the fabric's default.
    rail_optimized : bool, optional
        Rail-optimized intra-pod wiring (Clos fabrics only; LumosCore Fig. 24); ``None`` (the
        default) is the fabric's plain wiring and marks the field as not applicable (like
        ``routing`` for Best).
    fabric_options : dict
        Further options of :func:`~lumoscore.fabric.presets.make_fabric`:
        ``gpus_per_server`` and the architecture's own (e.g. ``spines`` of the vClos
        leaf-spine clusters, ``reconfig_delay_s`` of LumosCore); an unknown option or value
        is an error naming the allowed ones. Empty (the default): the architecture's defaults.
    queue : str
        Queue policy (:data:`~lumoscore.sim.queueing.QUEUE_POLICIES`).
    eps : float
        0 for exact max-min rates, > 0 for the (1+eps)-approximate allocation.
    exposure : str
        Traffic model (:data:`~lumoscore.traffic.exposure.EXPOSURES`): ``research``
        (default: the traffic of the paper's published runs) or ``literal`` (each class
        takes exactly its exposed share at 1.6 Tb/s).
    failures : FailureConfig
        GPU failures (default none).
    link_failures : LinkFailureConfig
        Leaf-spine cable failures (default none): a ``fraction`` down from the start, and
        Poisson failures at ``rate_per_cable_day`` repaired after ``repair_s``. Needs a fabric
        with leaf-spine cables (Clos, leaf-spine, LumosCore).
    seed : int
        Seed of the trace, of the ECMP hashes and of the failure process.

    Examples
    --------
    >>> r = RunConfig(arch="BEST", gpus=256, trace={"jobs": 10, "load": 0.8})
    >>> r.arch, r.trace.preset, r.trace.load, r.queue
    ('best', 'lumoscore-published', 0.8, 'fifo')
    """

    model_config = _MODEL_CONFIG

    gpus: int = Field(4096, ge=8, le=MAX_GPUS)
    arch: str = "best"
    trace: TraceConfig = TraceConfig()
    routing: str | None = None
    placer: str | None = None
    rail_optimized: bool | None = None
    fabric_options: dict[str, StrictInt | StrictFloat | StrictBool | str] = Field(
        default_factory=dict
    )
    queue: str = "fifo"
    eps: float = Field(0.0, ge=0, allow_inf_nan=False)
    exposure: str = "research"
    failures: FailureConfig = FailureConfig()
    link_failures: LinkFailureConfig = LinkFailureConfig()
    seed: int = Field(1, ge=0)

    @field_validator("exposure")
    @classmethod
    def _known_exposure(cls, v: str) -> str:
        return _registered(EXPOSURES, v)

    @field_validator("queue")
    @classmethod
    def _known_queue(cls, v: str) -> str:
        return _registered(QUEUE_POLICIES, v)

    @field_validator("placer")
    @classmethod
    def _known_placer(cls, v: str | None) -> str | None:
        return None if v is None else _registered(PLACERS, v)

    @field_validator("arch")
    @classmethod
    def _known_arch(cls, v: str, info: pydantic.ValidationInfo) -> str:
        name = _canonical_arch(v)
        gpus = info.data.get("gpus")
        if gpus is not None:
            make_fabric(name, gpus)  # unknown name or cluster too big: the fabric's message
        return name

    @model_validator(mode="after")
    def _fabric_builds(self) -> RunConfig:
        links = not self.link_failures.is_default
        if (
            self.routing is not None
            or self.rail_optimized is not None
            or self.fabric_options
            or links
        ):
            try:
                fabric = self.make_fabric()
                if links:
                    fabric.failure_units(self.link_failures.element)  # units that can fail
            except ConfigError as exc:
                raise ValueError(f"{exc} (arch {self.arch!r})") from None
            except (TypeError, ValueError) as exc:  # an option value the fabric cannot take
                raise ValueError(
                    f"fabric_options {self.fabric_options}: {exc} (arch {self.arch!r})"
                ) from None
        return self

    def __hash__(self) -> int:  # fabric_options is a dict: hash the canonical dump instead
        return hash(self.model_dump_json())

    def make_fabric(self) -> Any:
        """The run's fabric (:func:`~lumoscore.fabric.presets.make_fabric`)."""
        return make_fabric(
            self.arch,
            self.gpus,
            routing=self.routing,
            seed=self.seed,
            rail_optimized=bool(self.rail_optimized),
            **self.fabric_options,
        )

    def canonical(self) -> RunConfig:
        """The same simulation with its defaults left unsaid: a routing equal to the
        architecture's default and ``rail_optimized=False`` become ``None``, so runs that
        differ only in writing a default out share one key.

        Examples
        --------
        >>> a = RunConfig(arch="clos-51.2T-3tier", gpus=512, routing="probing")
        >>> a.canonical() == RunConfig(arch="clos-51.2T-3tier", gpus=512)
        True
        >>> RunConfig(arch="clos-51.2T-3tier", gpus=512, routing="ecmp").canonical().routing
        'ecmp'
        """
        update: dict[str, Any] = {}
        if self.routing is not None and self.routing == architecture(self.arch)[1].default_routing:
            update["routing"] = None
        if self.rail_optimized is False:
            update["rail_optimized"] = None
        return self.model_copy(update=update) if update else self

    def label(self) -> str:
        """A short human-readable description.

        Examples
        --------
        >>> RunConfig(arch="best", gpus=512, trace={"jobs": 20}).label()
        'best 512 GPUs lumoscore-published x20 seed 1'
        """
        t = self.trace
        trace = f"{t.file}" if t.file else f"{t.preset} x{t.jobs}"
        return f"{self.arch} {self.gpus} GPUs {trace} seed {self.seed}"


def run_fields(model: type[BaseModel] = RunConfig, prefix: str = "") -> list[str]:
    """Every leaf field path of a model (``"trace.load"``, ``"failures.restart_s"``, ...).

    Examples
    --------
    >>> "failures.rate_per_gpu_day" in run_fields(), "trace" in run_fields()
    (True, False)
    """
    out: list[str] = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(run_fields(ann, f"{prefix}{name}."))
        else:
            out.append(f"{prefix}{name}")
    return out


class ExperimentTrace(BaseModel):
    """The ``[trace]`` table of an experiment: as :class:`TraceConfig`, but ``jobs``,
    ``beta_s`` and ``load`` may be lists (each list is a sweep axis)."""

    model_config = _MODEL_CONFIG

    preset: str | None = None
    jobs: int | list[int] = 1000
    beta_s: float | list[float] | None = None
    load: float | list[float] | None = None
    load_basis: Literal["sample", "expected"] = "sample"
    file: str | None = None

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, v: str | None) -> str | None:
        return _check_trace_preset(v)

    @field_validator("jobs", "beta_s", "load")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("an empty list; give a value or a non-empty list")
        return v


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


class ExperimentConfig(BaseModel):
    """An experiment file: the runs of :func:`expand` and where their results go.

    ``gpus``, ``trace.jobs``, ``trace.beta_s``, ``trace.load`` and ``eps`` take a value or a
    list (``jobs``, ``beta_s``, ``load`` and ``load_basis`` may also be given at the top
    level); ``seeds`` a list or a count ``n`` (seeds ``1..n``); ``routing`` a policy for every
    architecture or a table ``{arch = policy}``; ``placer`` a table ``{arch = placer}``
    (default: each fabric's own); ``fabric_options`` a table ``{arch = {option = value}}``
    (:attr:`RunConfig.fabric_options`); ``rail_optimized`` every run's (unset: the plain
    wiring; Best and the vClos clusters refuse ``true``); ``sweep`` maps a :class:`RunConfig` field
    path to the list of values to try. ``output`` defaults to ``results/<name>``.

    Examples
    --------
    >>> e = ExperimentConfig(name="x", seeds=3, sweep={"failures.rate_per_gpu_day": [0, 0.01]})
    >>> e.seed_list(), e.output_dir().as_posix()
    ([1, 2, 3], 'results/x')
    """

    model_config = _MODEL_CONFIG

    name: str = Field("experiment", min_length=1)
    description: str = ""
    gpus: int | list[int] = 4096
    architectures: list[str] = Field(
        default_factory=lambda: list(PAPER_ARCHITECTURES), min_length=1
    )
    trace: ExperimentTrace = ExperimentTrace()
    routing: str | dict[str, str] | None = None
    placer: dict[str, str] | None = None
    fabric_options: dict[str, dict[str, StrictInt | StrictFloat | StrictBool | str]] | None = None
    rail_optimized: bool | None = None
    queue: str = "fifo"
    eps: float | list[float] = 0.0
    exposure: str = "research"
    failures: FailureConfig = FailureConfig()
    link_failures: LinkFailureConfig = LinkFailureConfig()
    seeds: int | list[int] = Field([1])
    output: str | None = None
    sweep: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _folder_name(cls, v: str) -> str:
        """One folder name (the default output is ``results/<name>``), never a path."""
        if v in (".", "..") or any(ch in v for ch in "/\\\0"):
            raise ValueError(
                f"a single folder name (no '/', '\\' or NUL; not '.' or '..'), got {v!r}; "
                "`output` chooses another folder"
            )
        return v

    @field_validator("queue")
    @classmethod
    def _known_queue(cls, v: str) -> str:
        return _registered(QUEUE_POLICIES, v)

    @field_validator("exposure")
    @classmethod
    def _known_exposure(cls, v: str) -> str:
        return _registered(EXPOSURES, v)

    @model_validator(mode="before")
    @classmethod
    def _trace_keys_at_top(cls, data: Any) -> Any:
        """``jobs``, ``beta_s``, ``load`` and ``load_basis`` may be given at the top level
        as shorthands of ``trace.<key>``."""
        if not isinstance(data, dict):
            return data
        moved = {k: data[k] for k in _TRACE_SHORTHANDS if k in data}
        if not moved:
            return data
        trace = data.get("trace", {})
        if not isinstance(trace, dict):
            return data
        both = sorted(k for k in moved if k in trace)
        if both:
            raise ValueError(f"{both[0]} given both at the top level and in [trace]; give one")
        rest = {k: v for k, v in data.items() if k not in moved}
        return {**rest, "trace": {**trace, **moved}}

    @field_validator("architectures")
    @classmethod
    def _unique_archs(cls, v: list[str]) -> list[str]:
        names = [_canonical_arch(a) for a in v]
        dup = sorted({a for a in names if names.count(a) > 1})
        if dup:
            raise ValueError(f"listed twice: {', '.join(dup)}")
        return names

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: int | list[int]) -> int | list[int]:
        if isinstance(v, int) and v < 1:
            raise ValueError(f"a count >= 1 or a list of integers >= 0, got {v}")
        if isinstance(v, int) and v > MAX_RUNS:
            raise ValueError(f"a count of at most {MAX_RUNS} (MAX_RUNS), got {v}")
        if isinstance(v, list) and (not v or any(s < 0 for s in v)):
            raise ValueError(f"a count >= 1 or a non-empty list of integers >= 0, got {v}")
        return v

    @field_validator("gpus", "eps")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("an empty list; give a value or a non-empty list")
        return v

    @field_validator("sweep")
    @classmethod
    def _sweep_paths(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        allowed = [p for p in run_fields() if p not in _OWN_AXES]
        for path, values in v.items():
            if path in _OWN_AXES:
                raise ValueError(f"{path!r}: use the top-level key {_OWN_AXES[path]!r} instead")
            if path not in allowed:
                raise ValueError(f"unknown field {path!r}; allowed: {', '.join(allowed)}")
            if not values:
                raise ValueError(f"{path!r}: an empty list of values")
        return v

    @field_validator("routing")
    @classmethod
    def _canonical_routing_keys(cls, v: Any) -> Any:
        return {_canonical_arch(k): r for k, r in v.items()} if isinstance(v, dict) else v

    @field_validator("placer")
    @classmethod
    def _canonical_placer_keys(cls, v: Any) -> Any:
        if v is None:
            return v
        return {_canonical_arch(k): _registered(PLACERS, p) for k, p in v.items()}

    @field_validator("fabric_options")
    @classmethod
    def _canonical_option_keys(cls, v: Any) -> Any:
        return None if v is None else {_canonical_arch(k): o for k, o in v.items()}

    @model_validator(mode="after")
    def _tables_name_listed_archs(self) -> ExperimentConfig:
        for field in ("routing", "placer", "fabric_options"):
            table = getattr(self, field)
            if not isinstance(table, dict):
                continue
            extra = sorted(set(table) - set(self.architectures))
            if extra:
                raise ValueError(
                    f"{field}: {', '.join(map(repr, extra))} not in architectures; allowed: "
                    f"{', '.join(self.architectures)}"
                )
        return self

    def seed_list(self) -> list[int]:
        """The seeds: the list given, or ``1..n`` for a count ``n``."""
        return list(range(1, self.seeds + 1)) if isinstance(self.seeds, int) else list(self.seeds)

    def output_dir(self) -> Path:
        """``output``, or ``results/<name>``."""
        return Path(self.output) if self.output else Path("results") / self.name

    def axes(self) -> dict[str, list[Any]]:
        """The sweep axes besides architecture, cluster size and seed: list-valued fields
        (``trace.jobs``, ``trace.beta_s``, ``trace.load``, ``eps``) and ``[sweep]``."""
        implicit = {
            "trace.jobs": self.trace.jobs,
            "trace.beta_s": self.trace.beta_s,
            "trace.load": self.trace.load,
            "eps": self.eps,
        }
        out = {k: list(v) for k, v in implicit.items() if isinstance(v, list)}
        for path, values in self.sweep.items():
            if path in out:
                raise ConfigError(f"sweep.{path}: also given as a list in the experiment")
            out[path] = list(values)
        return out

    def base(self, arch: str) -> dict[str, Any]:
        """The :class:`RunConfig` fields shared by every run of ``arch`` (scalars only)."""
        trace = self.trace.model_dump(exclude_none=True)
        for key in ("jobs", "beta_s", "load"):
            if isinstance(trace.get(key), list):
                del trace[key]
        if isinstance(self.routing, dict):
            routing = self.routing.get(arch)
        else:
            # One policy for every architecture: it does not apply to one that routes one way
            # only (Best routes ideally).
            routing = None if _routes_one_way(arch) else self.routing
        placer = (self.placer or {}).get(arch)
        options = (self.fabric_options or {}).get(arch)
        return {
            "arch": arch,
            "trace": trace,
            "routing": routing,
            **({"placer": placer} if placer is not None else {}),
            **({"fabric_options": options} if options else {}),
            **({"rail_optimized": self.rail_optimized} if self.rail_optimized is not None else {}),
            "queue": self.queue,
            "eps": self.eps if not isinstance(self.eps, list) else 0.0,
            "exposure": self.exposure,
            "failures": self.failures.model_dump(),
            **(
                {}
                if self.link_failures == LinkFailureConfig()
                or not _can_fail(arch, self.link_failures.element)
                else {"link_failures": self.link_failures.key()}
            ),
        }


def _set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    node = doc
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value


def expand(config: ExperimentConfig) -> list[RunConfig]:
    """The runs of an experiment: architectures x cluster sizes x sweep values x seeds.

    The order is fixed: architectures as listed, then cluster sizes, then the sweep axes
    (list-valued fields, then ``[sweep]`` in file order; the last axis varies fastest), then
    seeds. Duplicate runs (for example Best under a routing or link-failure sweep, which
    never applies to Best) are kept once.

    Raises
    ------
    ConfigError
        A run is invalid (an architecture that cannot hold the cluster, a routing policy the
        fabric does not know, a trace with both ``beta_s`` and ``load``, ...); the message
        names the run and the field.

    Examples
    --------
    >>> e = ExperimentConfig(name="s", gpus=256, architectures=["best"], trace={"jobs": 5},
    ...                      sweep={"trace.load": [0.5, 0.9]})
    >>> [(r.trace.load, r.seed) for r in expand(e)]
    [(0.5, 1), (0.9, 1)]
    """
    axes = config.axes()
    count = len(config.architectures) * len(_as_list(config.gpus)) * len(config.seed_list())
    count *= math.prod(len(v) for v in axes.values())
    if count > MAX_RUNS:
        raise ConfigError(
            f"the experiment expands to {count} runs (architectures x gpus x sweep values x "
            f"seeds); at most {MAX_RUNS} (MAX_RUNS)"
        )
    seen: dict[str, RunConfig] = {}
    for arch, gpus in itertools.product(config.architectures, _as_list(config.gpus)):
        for combo in itertools.product(*axes.values()):
            for seed in config.seed_list():
                doc = config.base(arch)
                doc["gpus"] = gpus
                doc["seed"] = seed
                element = dict(zip(axes, combo, strict=True)).get(
                    "link_failures.element", config.link_failures.element
                )
                for path, value in zip(axes, combo, strict=True):
                    if path == "routing" and _routes_one_way(arch):
                        value = None
                    if path.startswith("link_failures.") and not _can_fail(arch, element):
                        continue  # e.g. Best and the vClos clusters have nothing to fail
                    _set_path(doc, path, value)
                try:
                    run = RunConfig.model_validate(doc)
                except pydantic.ValidationError as exc:
                    what = ", ".join(
                        [f"arch={arch}", f"gpus={gpus}"]
                        + [f"{p}={v!r}" for p, v in zip(axes, combo, strict=True)]
                    )
                    raise ConfigError(f"run {what}: {format_validation_error(exc)}") from None
                seen.setdefault(run.model_dump_json(), run)
    return list(seen.values())


def _refuse_split_names(data: Mapping[str, Any], source: object) -> None:
    """An architecture name written as a bare TOML key (``clos-25.6T-4tier = ...``) is split
    at its dot into nested keys (``clos-25`` -> ``6T-4tier``): say so, not 'expected a
    string, got {...}'."""
    for table in ("routing", "placer", "fabric_options"):
        entries = data.get(table)
        if not isinstance(entries, dict):
            continue
        for head, inner in entries.items():
            if isinstance(inner, dict) and re.fullmatch(r"[A-Za-z-]+\d+", str(head)):
                tail = next((k for k in inner if re.match(r"\d+T", str(k))), None)
                if tail is not None:
                    raise ConfigError(
                        f"{source}: {table}: {head}.{tail} was read as two nested keys (TOML "
                        f'splits a bare key at each dot); quote the name: "{head}.{tail}"'
                    )


def check_trace_files(runs: Sequence[RunConfig]) -> None:
    """Read every trace file of ``runs`` once and check that each run's cluster holds every
    job of its file: such problems are the same for every seed and are told before anything
    runs, not as failed runs at the end.

    Raises
    ------
    ConfigError
        A file that cannot be read or parsed (the reader's message names the file, line and
        column), or ``run arch=..., gpus=...: trace.file: <n> jobs need more GPUs ...``.
    """
    from lumoscore.workload import fitting_jobs, read_trace

    traces: dict[str, Any] = {}
    for run in runs:
        name = run.trace.file
        if name is None:
            continue
        if name not in traces:
            traces[name] = read_trace(name)
        try:
            fitting_jobs(traces[name], run.gpus)
        except ConfigError as exc:
            raise ConfigError(
                f"run arch={run.arch}, gpus={run.gpus}: trace.file: {exc} ({name}; a larger "
                "`gpus`, or a trace without them)"
            ) from None


def load_experiment(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment TOML file.

    A relative ``trace.file`` (also in ``[sweep]``) is taken relative to the file's folder.
    Every run of the experiment is validated too (:func:`expand`), so an infeasible cluster
    fails here.

    Raises
    ------
    ConfigError
        Unreadable TOML or any invalid value: one line ``field.path: message``.
    OSError
        The file cannot be read.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "e.toml"
    ...     _ = p.write_text('name = "e"\\ngpus = 512\\narchitectures = ["best", "nope"]\\n')
    ...     try:
    ...         load_experiment(p)
    ...     except ConfigError as exc:
    ...         print(str(exc).split(": ", 1)[1][:60])
    architectures: unknown fabric preset 'nope'; allowed: best,
    """
    p = Path(path)
    try:
        doc = tomllib.loads(read_text(p, what="an experiment TOML file"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    config = experiment_from_dict(doc, base_dir=p.parent, source=str(p))
    if "architectures" not in doc:
        raise ConfigError(
            f"{p}: an experiment file names the architectures it runs, e.g. "
            'architectures = ["best", "clos-51.2T-3tier"] (a complete one: '
            "examples/experiments/default.toml; `lumos run` without a file runs that one)"
        )
    return config


def experiment_from_dict(
    doc: Mapping[str, Any], *, base_dir: Path | None = None, source: str = "experiment"
) -> ExperimentConfig:
    """Validate a parsed experiment document (see :func:`load_experiment`)."""
    data = dict(doc)

    def beside(name: Any) -> Any:  # a relative trace file: relative to the experiment file
        if base_dir is None or not isinstance(name, str) or Path(name).is_absolute():
            return name
        return str((base_dir / name).resolve())

    _refuse_split_names(data, source)
    trace = data.get("trace")
    if isinstance(trace, dict) and "file" in trace:
        data["trace"] = {**trace, "file": beside(trace["file"])}
        if "jobs" in trace or "jobs" in data:
            raise ConfigError(
                f"{source}: trace.jobs applies to preset traces only (trace.file runs the "
                "file's own jobs)"
            )
    sweep = data.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("trace.file"), list):
        data["sweep"] = {**sweep, "trace.file": [beside(f) for f in sweep["trace.file"]]}
    try:
        config = ExperimentConfig.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{source}: {format_validation_error(exc)}") from None
    try:
        expand(config)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return config


#: The built-in experiment of ``lumos run``: the LumosCore paper's published 4096-GPU
#: comparison (§6.4, Fig. 8) of the seven presets on the ``lumoscore-published`` workload,
#: 1000 jobs at ``beta_s = 2000`` s, seed 1, research exposure, Clos with probing.
DEFAULT_EXPERIMENT = ExperimentConfig(
    name="default",
    description="LumosCore §6.4: seven architectures at 4096 GPUs, the published workload",
    gpus=4096,
    architectures=list(PAPER_ARCHITECTURES),
    trace=ExperimentTrace(preset="lumoscore-published", jobs=1000, beta_s=2000.0),
    queue="fifo",
    eps=0.0,
    seeds=[1],
)
