"""Files of topology engineering: demand matrices in, OCS configurations (JSON) out.

Demand: a CSV (comma-separated integers, ``#`` comments, no header) or ``.npy`` pod x pod
matrix (one OCS group), or a ``.npy`` array of shape ``(H, P, P)`` (one matrix per group).

Configuration JSON (written atomically: temporary file in the same folder + ``os.replace``)::

    {
      "format": "lumoscore-ocs-config", "version": 1,
      "wiring": "cross", "circulators": false,
      "columns": ["group", "ocs", "tx_pod", "tx_port", "rx_pod", "rx_port"],
      "circuits": [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0], ...],
      "solver": "mdmcf", "status": "feasible", "solve_time_s": 0.01, "groups": [0, 1],
      "metrics": {"ltcr": 1.0, "mrar": 0.9, ...}
    }

``ocs`` is the OCS index inside the group; ports are the spine OCS-facing ports
``0 .. k_spine - 1`` numbered as by ``lumos wire --json``. Only ``circuits`` is needed to read
a file back as a current configuration (a bare JSON list of rows is accepted too).

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_config(d / "cfg.json", [[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]], wiring="cross")
>>> read_config(d / "cfg.json").tolist()
[[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 0, 0]]
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lumoscore.decompose.errors import DecompositionInputError
from lumoscore.decompose.validation import as_integer_matrix
from lumoscore.errors import ConfigError
from lumoscore.fileio import atomic_write_text, read_text
from lumoscore.toe.model import CIRCUIT_COLUMNS

__all__ = ["CONFIG_FORMAT", "load_demand", "read_config", "write_config"]

CONFIG_FORMAT = "lumoscore-ocs-config"
"""Value of the ``format`` key of configuration files."""


def load_demand(path: str | Path) -> NDArray[np.int64]:
    """Read a demand matrix (``.csv`` or ``.npy``, 2-D or 3-D) as int64.

    Entries are integers (integer-valued floats too) whose magnitudes sum to at most
    :data:`~lumoscore.decompose.validation.MAX_TOTAL` (so row sums cannot overflow int64);
    anything else is a ConfigError naming the file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = p.write_text("0,1\\n1,0\\n")
    >>> load_demand(p).tolist()
    [[0, 1], [1, 0]]
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such demand file")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif suffix in (".csv", ".txt"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
                arr = np.loadtxt(p, delimiter=",", comments="#", ndmin=2)
        else:
            raise ConfigError(f"{p}: unknown demand format {suffix!r}; allowed: .csv, .npy")
    except ValueError as exc:
        raise ConfigError(f"{p}: cannot read a numeric matrix: {exc}") from None
    if arr.size == 0:
        raise ConfigError(f"{p}: no data (a pods x pods matrix expected)")
    if arr.ndim not in (2, 3):
        raise ConfigError(f"{p}: demand must be 2-D (P, P) or 3-D (H, P, P), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise ConfigError(f"{p}: demand must be numeric, got dtype {arr.dtype}")
    if arr.dtype.kind == "c":
        raise ConfigError(
            f"{p}: demand has complex entries (dtype {arr.dtype}); allowed: integers "
            "(integer-valued floats too)"
        )
    if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
        bad = np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)))[0].tolist()
        raise ConfigError(f"{p}: demand entry {bad} = {arr[tuple(bad)]} is not an integer")
    try:  # (entries and their sum at most MAX_TOTAL: exact in int64 and in float64)
        return as_integer_matrix(arr, name=f"{p}: demand", ndim=arr.ndim, allow_negative=True)
    except DecompositionInputError as exc:
        raise ConfigError(str(exc)) from None


def write_config(path: str | Path, circuits: Any, **meta: Any) -> None:
    """Write a configuration JSON atomically (see the module docstring); ``meta`` adds keys.

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> write_config(p, [], solver="mdmcf")
    >>> json.loads(p.read_text())["solver"]
    'mdmcf'
    """
    rows = np.asarray(circuits, dtype=np.int64).reshape(-1, 6).tolist()
    doc: dict[str, Any] = {"format": CONFIG_FORMAT, "version": 1, **meta}
    doc["columns"] = list(CIRCUIT_COLUMNS)
    doc["circuits"] = rows
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def read_config(path: str | Path) -> NDArray[np.int64]:
    """Circuits ``(n, 6)`` of a configuration JSON (a bare list of rows is accepted).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_text('{"circuits": [[0, 1, 2, 3, 4, 5]]}')
    >>> read_config(p).shape
    (1, 6)
    """
    p = Path(path)
    try:
        doc = json.loads(read_text(p, what="a JSON file"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such configuration file") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: invalid JSON: {exc}") from None
    rows = doc.get("circuits") if isinstance(doc, dict) else doc
    if rows is None:
        raise ConfigError(f"{p}: missing key 'circuits' (rows {list(CIRCUIT_COLUMNS)})")
    if not isinstance(rows, list):
        raise ConfigError(f"{p}: 'circuits' must be a list of rows {list(CIRCUIT_COLUMNS)}")
    for k, r in enumerate(rows):
        if not isinstance(r, list) or len(r) != 6 or not all(_small_int(v) for v in r):
            raise ConfigError(
                f"{p}: circuits[{k}] = {r!r}; every row must be 6 integers {list(CIRCUIT_COLUMNS)}"
            )
    return np.asarray(rows, dtype=np.int64).reshape(-1, 6)


def _small_int(value: object) -> bool:
    """An integer a circuit row may hold (an int64; not a bool)."""
    return type(value) is int and -(2**62) < value < 2**62
