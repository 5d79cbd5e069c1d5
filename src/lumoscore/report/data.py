"""Input layer of the report: the runs of a result store as plain tables.

:func:`load_runs` reads a result directory written by ``lumos run``
(:class:`lumoscore.experiments.store.ResultStore`: ``index.parquet`` and
``runs/<key>/{jobs.parquet, queue.parquet, run.json}``) into a :class:`RunSet`. Everything
after this is pure functions over the tables (:mod:`lumoscore.report.metrics`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from lumoscore.errors import ConfigError

__all__ = ["RunSet", "load_runs"]


@dataclass(frozen=True)
class RunSet:
    """The runs of one experiment: the index and, by run key, per-job/queue tables and info.

    Examples
    --------
    >>> rs = RunSet(pd.DataFrame({"key": ["a"], "arch": ["best"]}), {}, name="demo")
    >>> rs.keys
    ['a']
    """

    index: pd.DataFrame
    jobs: Mapping[str, pd.DataFrame]
    queues: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    infos: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    name: str = "experiment"
    #: The experiment's runs that have no stored result (e.g. ``"arch=clos-51.2T-3tier,
    #: gpus=256, seed=1"``): the report then covers part of the experiment and says so.
    unstored: tuple[str, ...] = ()

    @property
    def keys(self) -> list[str]:
        """The run keys, in index order."""
        return [str(k) for k in self.index["key"]]


def _experiment_name(index: pd.DataFrame, root: Path) -> str:
    """``name`` of the store's ``experiment.json`` (written by ``lumos run``), else a
    single-valued ``experiment``/``name`` column, else the folder name."""
    doc = _try(lambda: json.loads((root / "experiment.json").read_text(encoding="utf-8")))
    if isinstance(doc, dict) and isinstance(doc.get("name"), str) and doc["name"]:
        return doc["name"]
    for col in ("experiment", "name", "experiment.name"):
        if col in index.columns and index[col].nunique(dropna=True) == 1:
            return str(index[col].dropna().iloc[0])
    return root.resolve().name or "experiment"


def load_runs(store_dir: str | Path) -> RunSet:
    """Read every finished run of the result directory ``store_dir``.

    Raises :class:`~lumoscore.errors.ConfigError` naming the path when it is not a directory or
    holds no finished run.
    """
    root = Path(store_dir)
    if not root.is_dir():
        raise ConfigError(f"report: {root}: no such result directory")
    index, reader = _open(root)
    if index is None or index.empty or "key" not in index.columns:
        raise ConfigError(
            f"report: {root}: no finished runs (expected index.parquet and runs/<key>/ "
            "written by `lumos run`)"
        )
    index = index.sort_values("key", kind="stable").reset_index(drop=True)
    index["key"] = index["key"].astype(str)
    jobs: dict[str, pd.DataFrame] = {}
    queues: dict[str, pd.DataFrame] = {}
    infos: dict[str, Mapping[str, Any]] = {}
    for key in index["key"]:
        j, q, info = reader(key)
        if j is not None:
            jobs[key] = j
        if q is not None:
            queues[key] = q
        if info is not None:
            infos[key] = info
    return RunSet(index, jobs, queues, infos, name=_experiment_name(index, root))


def _open(root: Path) -> tuple[pd.DataFrame | None, Any]:
    """The index and a per-run reader, through the ResultStore when it is available."""
    try:
        from lumoscore.experiments.store import ResultStore
    except ImportError:
        return _open_files(root)
    store = ResultStore(root)
    try:
        damaged = store.damaged()
        index = None if damaged else store.index()
    except (FileNotFoundError, OSError):
        return None, None
    if damaged:
        shown = "; ".join(f"run {k}: {why}" for k, why in list(damaged.items())[:3])
        more = f" and {len(damaged) - 3} more" if len(damaged) > 3 else ""
        raise ConfigError(
            f"report: {root}: {len(damaged)} damaged run(s) ({shown}{more}); `lumos run` "
            "with the same experiment and --out recomputes them"
        )

    def read(key: str) -> tuple[Any, Any, Any]:
        return (
            _try(lambda: store.jobs(key)),
            _try(lambda: store.queue(key)),
            _try(lambda: store.info(key)),
        )

    return index, read


def _try(call: Any) -> Any:
    try:
        return call()
    except (FileNotFoundError, KeyError, OSError, ValueError):
        return None


def _open_files(root: Path) -> tuple[pd.DataFrame | None, Any]:
    """Fallback reader of the documented on-disk layout (no ResultStore installed)."""
    if (root / "index.parquet").is_file():
        index = pd.read_parquet(root / "index.parquet")
    elif (root / "index.csv").is_file():
        index = pd.read_csv(root / "index.csv")
    else:
        return None, None

    def read(key: str) -> tuple[Any, Any, Any]:
        run = root / "runs" / key
        j = _try(lambda: pd.read_parquet(run / "jobs.parquet"))
        q = _try(lambda: pd.read_parquet(run / "queue.parquet"))
        info = _try(lambda: json.loads((run / "run.json").read_text()))
        return j, q, info

    return index, read
