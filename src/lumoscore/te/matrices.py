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

import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.errors import ConfigError

__all__ = [
    "check_capacity",
    "check_traffic",
    "read_traffic",
]

FloatArray = NDArray[np.float64]


def check_traffic(
    traffic: Any, *, pods: int | None = None, name: str = "traffic matrix"
) -> FloatArray:
    """``traffic`` as a float array, checked: real, ``(P, P)`` or ``(T, P, P)`` (``P = pods``
    when given), finite, non-negative, zero diagonal; a ConfigError naming the first
    violation."""
    if np.iscomplexobj(traffic):  # (a cast would drop the imaginary parts with a warning)
        raise ConfigError(
            f"{name}: complex entries (dtype {np.asarray(traffic).dtype}); allowed: real "
            "numbers >= 0"
        )
    try:
        a = np.asarray(traffic, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: not numeric ({exc})") from None
    if a.ndim not in (2, 3) or a.shape[-1] != a.shape[-2] or a.shape[-1] < 2:
        raise ConfigError(f"{name}: shape must be (P, P) or (T, P, P) with P >= 2, got {a.shape}")
    if a.ndim == 3 and a.shape[0] == 0:
        raise ConfigError(f"{name}: no matrix (shape {a.shape}); give at least one")
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
            with warnings.catch_warnings():  # (an empty file: the shape check says so)
                warnings.simplefilter("ignore", UserWarning)
                data = np.loadtxt(p, delimiter=",", ndmin=2)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such traffic file") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{p}: cannot read a traffic matrix ({exc})") from None
    return check_traffic(data, name=str(p))
