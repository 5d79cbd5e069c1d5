"""Pod-level traffic matrices: validation and simple generators.

A traffic matrix ``D`` is ``(P, P)`` (one snapshot) or ``(T, P, P)`` (a sequence), finite,
non-negative, with a zero diagonal (traffic inside a pod never crosses the OCS core).

Examples
--------
>>> import numpy as np
>>> check_traffic(np.array([[0, 1.0], [2.0, 0]])).shape
(2, 2)
>>> check_traffic(np.array([[1.0, 1.0], [2.0, 0]]))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lumoscore.errors.ConfigError: traffic matrix: diagonal must be 0 (traffic inside a pod), ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError

__all__ = [
    "check_capacity",
    "check_traffic",
    "demand_topology",
    "full_mesh",
    "gravity_traffic",
    "read_traffic",
]

FloatArray = NDArray[np.float64]


def check_traffic(
    traffic: Any, *, pods: int | None = None, name: str = "traffic matrix"
) -> FloatArray:
    """``traffic`` as a float array, checked: ``(P, P)`` or ``(T, P, P)`` (``P = pods`` when
    given), finite, non-negative, zero diagonal; a ConfigError naming the first violation."""
    try:
        a = np.asarray(traffic, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: not numeric ({exc})") from None
    if a.ndim not in (2, 3) or a.shape[-1] != a.shape[-2] or a.shape[-1] < 2:
        raise ConfigError(f"{name}: shape must be (P, P) or (T, P, P) with P >= 2, got {a.shape}")
    if pods is not None and a.shape[-1] != pods:
        raise ConfigError(f"{name}: {a.shape[-1]} pods, the topology has {pods}")
    if not np.isfinite(a).all():
        raise ConfigError(f"{name}: entries must be finite")
    if (a < 0).any():
        idx = tuple(int(v) for v in np.argwhere(a < 0)[0])
        raise ConfigError(f"{name}: entries must be >= 0, got {a[idx]:g} at {idx}")
    diag = np.diagonal(a, axis1=-2, axis2=-1)
    if (diag != 0).any():
        idx = np.argwhere(diag != 0)[0]
        raise ConfigError(
            f"{name}: diagonal must be 0 (traffic inside a pod), got {diag[tuple(idx)]:g} at "
            f"pod {int(idx[-1])}"
        )
    return a


def check_capacity(capacity: Any) -> FloatArray:
    """A ``(P, P)`` link-capacity matrix, checked like a traffic matrix."""
    cap = check_traffic(capacity, name="capacity matrix")
    if cap.ndim != 2:
        raise ConfigError(f"capacity matrix: shape must be (P, P), got {cap.shape}")
    return cap


def full_mesh(pods: int, groups: int) -> NDArray[np.int64]:
    """The ``(groups, P, P)`` full-mesh logical topology: one circuit between every pod pair
    in every OCS group (Cross Wiring Fig. 9(a)).

    Examples
    --------
    >>> full_mesh(3, 2).sum(axis=0).tolist()
    [[0, 2, 2], [2, 0, 2], [2, 2, 0]]
    """
    if pods < 2 or groups < 1:
        raise ConfigError(f"full mesh needs pods >= 2 and groups >= 1, got {pods}, {groups}")
    one = np.ones((pods, pods), np.int64) - np.eye(pods, dtype=np.int64)
    return np.repeat(one[None], groups, axis=0)


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


def read_traffic(path: str | Path) -> FloatArray:
    """A traffic matrix from ``.npy`` (``(P, P)`` or ``(T, P, P)``) or ``.csv`` (one ``P x P``
    matrix, comma-separated, no header), checked (:func:`check_traffic`); a ConfigError
    naming the file otherwise.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "tm.csv")
    >>> _ = open(p, "w").write("0,1\\n2,0\\n")
    >>> read_traffic(p).tolist()
    [[0.0, 1.0], [2.0, 0.0]]
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".npy", ".csv"):
        raise ConfigError(f"{p}: traffic file must be .npy or .csv, got {suffix or 'no suffix'}")
    try:
        if suffix == ".npy":
            data = np.load(p, allow_pickle=False)
        else:
            data = np.loadtxt(p, delimiter=",", ndmin=2)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such traffic file") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{p}: cannot read a traffic matrix ({exc})") from None
    return check_traffic(data, name=str(p))


def demand_topology(traffic: Any, groups: int, ports: int) -> NDArray[np.int64]:
    """A traffic-aware logical topology ``(groups, P, P)``: the pod pairs' circuits in
    proportion to their demand (``traffic``: ``(P, P)`` or a window ``(T, P, P)``, its mean,
    both directions), every pair with demand getting one circuit first, then one more at a
    time to the pair with the most demand per circuit (D'Hondt) while both pods have ports
    left; circuits spread over the OCS groups, at most ``ports`` per pod and group. Not
    COUDER's robust design: a demand-proportional one.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0, 3.0, 1.0], [0, 0, 0], [0, 0, 0]])
    >>> C = demand_topology(d, groups=2, ports=2)
    >>> C.sum(axis=0).tolist()
    [[0, 3, 1], [3, 0, 0], [1, 0, 0]]
    """
    tm = check_traffic(traffic)
    mean = tm.mean(axis=0) if tm.ndim == 3 else tm
    S = mean + mean.T
    P = S.shape[0]
    if groups < 1 or ports < 1:
        raise ConfigError(f"groups and ports must be >= 1, got {groups}, {ports}")
    C = np.zeros((groups, P, P), np.int64)
    left = np.full((groups, P), ports, np.int64)

    def place(i: int, j: int) -> bool:
        h = np.flatnonzero((left[:, i] > 0) & (left[:, j] > 0))
        if not h.size:
            return False
        g = int(h[np.argmax(left[h, i] + left[h, j])])  # the least used group
        C[g, i, j] += 1
        C[g, j, i] += 1
        left[g, i] -= 1
        left[g, j] -= 1
        return True

    iu, ju = np.triu_indices(P, 1)
    want = S[iu, ju]
    order = np.argsort(-want, kind="stable")
    for k in order[want[order] > 0]:  # connectivity first, heaviest pairs first
        place(int(iu[k]), int(ju[k]))
    count = C.sum(axis=0)[iu, ju].astype(float)
    active = want > 0
    while True:
        score = np.where(active, want / (count + 1), -1.0)
        k = int(np.argmax(score))
        if score[k] <= 0:
            return C
        if place(int(iu[k]), int(ju[k])):
            count[k] += 1
        else:
            active[k] = False
