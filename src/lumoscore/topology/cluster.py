"""The LumosCore cluster model: pods of leaf-spine switches joined by an OCS core.

Index arithmetic (all integers, all vectorized over NumPy arrays)::

    gpu g      -> server g // gpus_per_server   -> leaf g // k_leaf   -> pod g // gpus_per_pod
    leaf l     -> pod l // leaves_per_pod,  local leaf l % leaves_per_pod
    spine s    -> pod s // spines_per_pod,  local spine h = s % spines_per_pod -> OCS group h
    OCS o      -> group o // k_spine,       index inside its group o % k_spine

A pod has ``k_spine / tau`` leaves and ``k_leaf / tau`` spines; every leaf has ``k_leaf``
GPU-facing ports and ``k_leaf`` spine-facing ports (``tau`` to each spine of its pod); every
spine has ``k_spine`` leaf-facing ports and ``k_spine`` OCS-facing ports. The OCS core has
``k_leaf / tau`` groups of ``k_spine`` OCSes; spine ``h`` of every pod connects to group ``h``
(LumosCore paper §2.4).

Examples
--------
>>> spec = ClusterSpec(pods=4, k_leaf=16, k_spine=16, tau=2, gpus_per_server=8, ocs_ports=32)
>>> spec.gpus, spec.leaves_per_pod, spec.spines_per_pod, spec.ocs_groups
(512, 8, 8, 8)
>>> int(spec.pod_of_gpu(300)), int(spec.leaf_of_gpu(300))
(2, 18)
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
from numpy.typing import ArrayLike, NDArray

from lumoscore.errors import ConfigError
from lumoscore.fileio import read_text
from lumoscore.hardware.sizing import radix
from lumoscore.limits import MAX_PORT_GBPS, MIN_PORT_GBPS

__all__ = ["ClusterSpec", "load_cluster"]

IntArray = NDArray[np.int64]


class ClusterSpec(pydantic.BaseModel):
    """Size of a LumosCore cluster; every derived count is a property.

    Parameters
    ----------
    pods : int
        Number of pods ``P`` (at most ``ocs_ports``: each OCS has one port per pod).
    k_leaf : int
        GPU-facing ports of a leaf (= its spine-facing ports).
    k_spine : int
        Leaf-facing ports of a spine (= its OCS-facing ports); even for Interleaved Wiring.
    tau : int
        Parallel links between a leaf and each spine of its pod (1 or 2 in the paper).
    gpus_per_server : int
        GPUs (and GPU-facing NIC ports) of one server; divides ``k_leaf``.
    ocs_ports : int
        Ports of one OCS (``K_ocs``, one egress + one ingress per port).
    port_gbps : float
        Speed of every electrical port in Gb/s, from
        :data:`~lumoscore.limits.MIN_PORT_GBPS` to :data:`~lumoscore.limits.MAX_PORT_GBPS`.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    pods: int = pydantic.Field(ge=1, description="number of pods P")
    k_leaf: int = pydantic.Field(ge=1, description="GPU-facing (= spine-facing) ports per leaf")
    k_spine: int = pydantic.Field(ge=2, description="leaf-facing (= OCS-facing) ports per spine")
    tau: int = pydantic.Field(default=2, ge=1, description="links between a leaf and a spine")
    gpus_per_server: int = pydantic.Field(default=8, ge=1, description="GPUs per server")
    ocs_ports: int = pydantic.Field(default=512, ge=1, description="ports per OCS")
    port_gbps: float = pydantic.Field(default=1600.0, description="port speed, Gb/s")

    @pydantic.field_validator("port_gbps")
    @classmethod
    def _check_port_gbps(cls, value: float) -> float:
        if not MIN_PORT_GBPS <= value <= MAX_PORT_GBPS:  # (NaN and infinities too)
            raise ValueError(
                f"must be a number from {MIN_PORT_GBPS:g} to {MAX_PORT_GBPS:g} (Gb/s), "
                f"got {value!r}"
            )
        return value

    @pydantic.model_validator(mode="after")
    def _check_divisibility(self) -> ClusterSpec:
        if self.k_spine % 2:
            raise ValueError(
                f"k_spine must be even (OCS-facing ports are paired by Interleaved Wiring), "
                f"got {self.k_spine}"
            )
        if self.k_leaf % self.tau:
            raise ValueError(f"tau={self.tau} must divide k_leaf={self.k_leaf}")
        if self.k_spine % self.tau:
            raise ValueError(f"tau={self.tau} must divide k_spine={self.k_spine}")
        if self.k_leaf % self.gpus_per_server:
            raise ValueError(
                f"gpus_per_server={self.gpus_per_server} must divide k_leaf={self.k_leaf}"
            )
        if self.pods > self.ocs_ports:
            raise ValueError(
                f"pods={self.pods} exceeds ocs_ports={self.ocs_ports}: every OCS needs one "
                f"port per pod"
            )
        return self

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def from_chip(
        cls,
        chip_tbps: float,
        port_gbps: float,
        *,
        tau: int = 2,
        pods: int | None = None,
        gpus: int | None = None,
        gpus_per_server: int = 8,
        ocs_ports: int = 512,
    ) -> ClusterSpec:
        """Cluster of radix-``R`` switches: ``k_leaf = k_spine = R / 2``.

        Give ``pods`` or a GPU count ``gpus`` (rounded up to whole pods).

        Examples
        --------
        >>> ClusterSpec.from_chip(51.2, 1600, tau=2, gpus=4096).pods
        32
        """
        k = radix(chip_tbps, port_gbps) // 2
        per_pod = k * k // tau
        if (pods is None) == (gpus is None):
            raise ConfigError("give exactly one of pods or gpus")
        if gpus is not None:
            if gpus < 1:
                raise ConfigError(f"gpus must be >= 1, got {gpus}")
            pods = -(-gpus // per_pod)
        return cls(
            pods=pods,
            k_leaf=k,
            k_spine=k,
            tau=tau,
            gpus_per_server=gpus_per_server,
            ocs_ports=ocs_ports,
            port_gbps=port_gbps,
        )

    # ---- derived sizes ------------------------------------------------------------------
    @property
    def leaves_per_pod(self) -> int:
        """Leaves in a pod: ``k_spine / tau``."""
        return self.k_spine // self.tau

    @property
    def spines_per_pod(self) -> int:
        """Spines in a pod: ``k_leaf / tau`` (= number of OCS groups)."""
        return self.k_leaf // self.tau

    @property
    def servers_per_leaf(self) -> int:
        """Servers under one leaf."""
        return self.k_leaf // self.gpus_per_server

    @property
    def gpus_per_leaf(self) -> int:
        """GPUs under one leaf (= ``k_leaf``)."""
        return self.k_leaf

    @property
    def gpus_per_pod(self) -> int:
        """GPUs in one pod: ``k_leaf * k_spine / tau``."""
        return self.k_leaf * self.leaves_per_pod

    @property
    def servers_per_pod(self) -> int:
        """Servers in one pod."""
        return self.gpus_per_pod // self.gpus_per_server

    @property
    def gpus(self) -> int:
        """GPUs in the cluster."""
        return self.pods * self.gpus_per_pod

    @property
    def servers(self) -> int:
        """Servers in the cluster."""
        return self.gpus // self.gpus_per_server

    @property
    def leaves(self) -> int:
        """Leaves in the cluster."""
        return self.pods * self.leaves_per_pod

    @property
    def spines(self) -> int:
        """Spines in the cluster."""
        return self.pods * self.spines_per_pod

    @property
    def ocs_groups(self) -> int:
        """OCS groups ``H = k_leaf / tau``; spine ``h`` of every pod joins group ``h``."""
        return self.spines_per_pod

    @property
    def ocs_per_group(self) -> int:
        """OCSes per group (= ``k_spine``)."""
        return self.k_spine

    @property
    def ocs_count(self) -> int:
        """OCSes in the cluster."""
        return self.ocs_groups * self.ocs_per_group

    @property
    def port_bps(self) -> float:
        """Port speed in bit/s."""
        return self.port_gbps * 1e9

    # ---- index arithmetic (vectorized) --------------------------------------------------
    def _check(self, name: str, idx: ArrayLike, limit: int) -> IntArray:
        arr = np.asarray(idx)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ConfigError(f"{name} indices must be integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
        if arr.size and (arr.min() < 0 or arr.max() >= limit):
            bad = arr[(arr < 0) | (arr >= limit)].flat[0]
            raise ConfigError(f"{name} index {int(bad)} out of range [0, {limit})")
        return arr

    def server_of_gpu(self, gpu: ArrayLike) -> IntArray:
        """Server of each GPU."""
        return self._check("gpu", gpu, self.gpus) // self.gpus_per_server

    def leaf_of_gpu(self, gpu: ArrayLike) -> IntArray:
        """Global leaf index of each GPU."""
        return self._check("gpu", gpu, self.gpus) // self.k_leaf

    def pod_of_gpu(self, gpu: ArrayLike) -> IntArray:
        """Pod of each GPU."""
        return self._check("gpu", gpu, self.gpus) // self.gpus_per_pod

    def leaf_of_server(self, server: ArrayLike) -> IntArray:
        """Global leaf index of each server."""
        return self._check("server", server, self.servers) // self.servers_per_leaf

    def pod_of_leaf(self, leaf: ArrayLike) -> IntArray:
        """Pod of each (global) leaf."""
        return self._check("leaf", leaf, self.leaves) // self.leaves_per_pod

    def local_leaf(self, leaf: ArrayLike) -> IntArray:
        """Index of each (global) leaf inside its pod."""
        return self._check("leaf", leaf, self.leaves) % self.leaves_per_pod

    def spine(self, pod: ArrayLike, h: ArrayLike) -> IntArray:
        """Global index of spine ``h`` of ``pod``."""
        p = self._check("pod", pod, self.pods)
        return p * self.spines_per_pod + self._check("spine", h, self.spines_per_pod)

    def pod_of_spine(self, spine: ArrayLike) -> IntArray:
        """Pod of each (global) spine."""
        return self._check("spine", spine, self.spines) // self.spines_per_pod

    def group_of_spine(self, spine: ArrayLike) -> IntArray:
        """OCS group of each (global) spine: its index ``h`` inside the pod."""
        return self._check("spine", spine, self.spines) % self.spines_per_pod

    def ocs(self, group: ArrayLike, k: ArrayLike) -> IntArray:
        """Global index of OCS ``k`` of ``group``."""
        g = self._check("group", group, self.ocs_groups)
        return g * self.ocs_per_group + self._check("ocs", k, self.ocs_per_group)

    def group_of_ocs(self, ocs: ArrayLike) -> IntArray:
        """OCS group of each (global) OCS."""
        return self._check("ocs", ocs, self.ocs_count) // self.ocs_per_group

    def summary(self) -> dict[str, Any]:
        """Every size of the cluster as a plain dict (for tables and JSON)."""
        return {
            "pods": self.pods,
            "k_leaf": self.k_leaf,
            "k_spine": self.k_spine,
            "tau": self.tau,
            "gpus_per_server": self.gpus_per_server,
            "ocs_ports": self.ocs_ports,
            "port_gbps": self.port_gbps,
            "gpus": self.gpus,
            "servers": self.servers,
            "leaves": self.leaves,
            "spines": self.spines,
            "leaves_per_pod": self.leaves_per_pod,
            "spines_per_pod": self.spines_per_pod,
            "gpus_per_pod": self.gpus_per_pod,
            "ocs_groups": self.ocs_groups,
            "ocs_per_group": self.ocs_per_group,
            "ocs_count": self.ocs_count,
        }


def load_cluster(path: str | Path) -> ClusterSpec:
    """Read a :class:`ClusterSpec` from the ``[cluster]`` table of a TOML file.

    Errors (missing file, bad TOML, missing or invalid keys) raise
    :class:`~lumoscore.errors.ConfigError` naming the file and the key.
    """
    p = Path(path)
    try:
        data = tomllib.loads(read_text(p, what="a cluster TOML file"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    table = data.get("cluster")
    if not isinstance(table, dict):
        raise ConfigError(f"{p}: missing [cluster] table")
    try:
        return ClusterSpec.model_validate(table)
    except pydantic.ValidationError as exc:
        msgs = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            msgs.append(f"cluster.{loc}: {msg}" if loc else f"cluster: {msg}")
        raise ConfigError(f"{p}: " + "; ".join(msgs)) from None
