"""Pod-level traffic generators: a gravity model and Facebook-like Hadoop, web and database
sequences.

The Cross Wiring evaluation (§8.1) routes Facebook's datacenter traffic (Roy et al.,
"Inside the Social Network's (Datacenter) Network", SIGCOMM 2015) aggregated to pods: a
Hadoop cluster of 9 pods, and web and database clusters that involve fewer pods. The traces
themselves are not public at pod level, so :func:`facebook_traffic` draws sequences with the
properties that paper reports, under these assumptions (ours, stated so they can be changed):

* **Hadoop** (``"hadoop"``): every pod talks to every other (the shuffle spreads traffic
  widely; little is rack- or pod-local); pod activity is moderately skewed (log-normal pod
  weights, ``sigma = 0.5``); each pair varies around its gravity mean (log-normal,
  ``sigma = 0.6``) with short persistence (lag-1 correlation 0.8: heavy hitters change from
  snapshot to snapshot), and a pod starts a burst (its egress x3 for one snapshot) with
  probability 0.05 per snapshot (shuffle phases).
* **Web** (``"web"``): a quarter of the pods (at least one) are cache pods; web servers
  talk to caches: web<->cache pairs carry the traffic, web<->web and cache<->cache pairs 5 %
  of it; stable (correlation 0.95, ``sigma = 0.3``).
* **Database** (``"database"``): a third of the pods (at least two) hold the active
  databases and exchange almost all the traffic (replication); the others send 1 % of it;
  stable (correlation 0.95, ``sigma = 0.3``).

Each snapshot is scaled to sum to ``total``. Fluctuations follow a log-space AR(1) process,
so a sequence has the time correlation a TE or topology design over a window can exploit.

Examples
--------
>>> d = facebook_traffic("hadoop", 9, snapshots=4, seed=1)
>>> d.shape, bool(np.allclose(d.sum(axis=(1, 2)), 1.0)), bool((d[:, range(9), range(9)] == 0).all())
((4, 9, 9), True, True)
>>> w = facebook_traffic("web", 8, snapshots=2, seed=1)
>>> float(w[0].max() / np.median(w[0][w[0] > 0])) > 5   # caches dominate
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError

__all__ = ["FACEBOOK_KINDS", "FacebookModel", "facebook_traffic", "gravity_traffic"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class FacebookModel:
    """Parameters of one Facebook-like traffic kind (module docstring)."""

    pod_sigma: float
    pair_sigma: float
    correlation: float
    burst_p: float = 0.0
    burst_factor: float = 1.0


#: The traffic kinds of :func:`facebook_traffic` and their parameters.
FACEBOOK_KINDS: dict[str, FacebookModel] = {
    "hadoop": FacebookModel(0.5, 0.6, 0.8, burst_p=0.05, burst_factor=3.0),
    "web": FacebookModel(0.3, 0.3, 0.95),
    "database": FacebookModel(0.3, 0.3, 0.95),
}


def _structure(kind: str, pods: int, rng: np.random.Generator) -> FloatArray:
    """The ``(P, P)`` pair weights of a kind before fluctuations (module docstring)."""
    P = pods
    w = rng.lognormal(0.0, FACEBOOK_KINDS[kind].pod_sigma, size=P)
    base = np.outer(w, w)
    role = np.zeros(P, bool)
    if kind == "web":
        role[rng.choice(P, size=max(1, P // 4), replace=False)] = True  # caches
        base *= np.where(role[:, None] != role[None, :], 1.0, 0.05)
    elif kind == "database":
        role[rng.choice(P, size=max(2, P // 3), replace=False)] = True  # active databases
        base *= np.where(role[:, None] & role[None, :], 1.0, 0.01)
    np.fill_diagonal(base, 0.0)
    return base


def facebook_traffic(
    kind: str, pods: int, *, snapshots: int = 1, total: float = 1.0, seed: int = 0
) -> FloatArray:
    """``(snapshots, P, P)`` Facebook-like pod-level traffic of ``kind`` (``hadoop``, ``web``
    or ``database``; module docstring for the model), each snapshot summing to ``total``.

    Raises
    ------
    ConfigError
        Unknown ``kind``, fewer than 2 pods (3 for ``database``), ``snapshots < 1`` or
        ``total <= 0``; the message names the parameter.
    """
    if kind not in FACEBOOK_KINDS:
        raise ConfigError(f"traffic kind {kind!r} unknown; allowed: {', '.join(FACEBOOK_KINDS)}")
    if pods < (3 if kind == "database" else 2):
        raise ConfigError(f"pods: {kind} traffic needs at least 3 pods, got {pods}")
    if snapshots < 1:
        raise ConfigError(f"snapshots must be >= 1, got {snapshots}")
    if not (total > 0 and np.isfinite(total)):
        raise ConfigError(f"total must be > 0, got {total}")
    m = FACEBOOK_KINDS[kind]
    rng = np.random.default_rng(seed)
    base = _structure(kind, pods, rng)
    rho, sd = m.correlation, m.pair_sigma
    noise = rng.normal(0.0, sd, size=(pods, pods))
    out = np.empty((snapshots, pods, pods))
    for k in range(snapshots):
        if k:
            noise = rho * noise + np.sqrt(1.0 - rho * rho) * rng.normal(0.0, sd, (pods, pods))
        d = base * np.exp(noise)
        if m.burst_p > 0:
            burst = rng.random(pods) < m.burst_p
            d[burst] *= m.burst_factor
        out[k] = d / d.sum() * total
    return out


def gravity_traffic(
    pods: int, *, snapshots: int = 1, skew: float = 1.0, total: float = 1.0, seed: int = 0
) -> FloatArray:
    """``(snapshots, P, P)`` gravity-model traffic: ``D[s, t]`` proportional to
    ``w_s w_t`` with pod weights drawn log-normally (``sigma = skew``), new weights per
    snapshot, each snapshot summing to ``total``.

    Examples
    --------
    >>> d = gravity_traffic(4, snapshots=2, seed=1)
    >>> d.shape, bool(np.allclose(d.sum(axis=(1, 2)), 1.0)), float(d[0, 0, 0])
    ((2, 4, 4), True, 0.0)
    """
    if pods < 2 or snapshots < 1 or not (skew >= 0) or not (total > 0):
        raise ConfigError("gravity traffic needs pods >= 2, snapshots >= 1, skew >= 0, total > 0")
    rng = np.random.default_rng(seed)
    w = rng.lognormal(0.0, skew, size=(snapshots, pods))
    d = w[:, :, None] * w[:, None, :]
    d[:, np.arange(pods), np.arange(pods)] = 0.0
    return d / d.sum(axis=(1, 2), keepdims=True) * total
