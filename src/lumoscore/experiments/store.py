"""The result store: one folder per run, keyed by a hash of the resolved run config.

Layout under the store's root::

    runs/<key>/jobs.parquet   per-job table (SimResult.jobs)
    runs/<key>/queue.parquet  queue length over time (SimResult.queue)
    runs/<key>/run.json       config, summary, run statistics, fabric; written last
    index.parquet, index.csv  one row per complete run (rewritten after every put)

``key`` is the first 16 hex digits of the SHA-256 of the canonical JSON of the run config
together with the store schema, the LumosCore version and a digest of LumosCore's source
(:func:`code_digest`; and, for a trace file, the SHA-256 of its bytes), so the same run with
the same code always lands in the same folder and an interrupted sweep resumes where it
stopped, while a run after the code changed is a new run. Every file is written atomically
(:func:`lumoscore.fileio.atomic_write`) and ``run.json`` is written last: a run is complete
exactly when its ``run.json`` exists. The Parquet files hold no timestamps or wall times
(those live in ``run.json`` and the index), so the same run config gives byte-identical
Parquet files. The index files are a convenience copy: :meth:`ResultStore.index` rebuilds the
table from the ``run.json`` files.

Examples
--------
>>> import tempfile
>>> from lumoscore.experiments.config import RunConfig
>>> cfg = RunConfig(arch="best", gpus=256, trace={"jobs": 5})
>>> with tempfile.TemporaryDirectory() as d:
...     store = ResultStore(d)
...     key = store.key(cfg)
...     len(key), store.has(key), len(store.index())
(16, False, 0)
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import lumoscore
from lumoscore.errors import LumosError
from lumoscore.experiments.config import RunConfig
from lumoscore.fileio import atomic_write, atomic_write_text
from lumoscore.sim.results import SimResult

__all__ = [
    "STORE_SCHEMA",
    "SUMMARY_COLUMNS",
    "ResultStore",
    "StoreError",
    "code_digest",
    "flatten",
    "run_key",
]

#: Version of the store layout and of what a run config leaves unsaid (2: Clos routes by
#: probing and traffic follows the research exposure unless told otherwise); part of every
#: key, so results made under other defaults are never reused.
STORE_SCHEMA = 2
#: Summary columns of the index, in order (NaN when a summary lacks one); any other scalar of
#: the summary follows, sorted by name, and ``wall_s`` comes last.
SUMMARY_COLUMNS: tuple[str, ...] = (
    "jobs",
    "rejected",
    "unfinished",
    "mean_jrt_s",
    "p50_jrt_s",
    "p99_jrt_s",
    "mean_jwt_s",
    "p50_jwt_s",
    "p99_jwt_s",
    "mean_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "mean_jrt_slowdown",
    "mean_contention_level",
    "makespan_s",
    "wall_s",
)


class StoreError(LumosError):
    """A store folder or run is missing or damaged."""


def flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of dotted keys.

    Examples
    --------
    >>> flatten({"arch": "best", "trace": {"jobs": 5, "load": None}})
    {'arch': 'best', 'trace.jobs': 5, 'trace.load': None}
    """
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


@functools.cache
def code_digest() -> str:
    """16 hex digits of a SHA-256 over every Python source file of the ``lumoscore`` package
    in use (path and bytes, in path order): which code produced a result.

    Computed once per process (about 2 MB of source).

    Examples
    --------
    >>> d = code_digest()
    >>> len(d), d == code_digest()
    (16, True)
    """
    root = Path(lumoscore.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def run_key(run_config: RunConfig) -> str:
    """The store key of a run: 16 hex digits of a SHA-256 over its canonical JSON.

    The hash covers the resolved config, :data:`STORE_SCHEMA`, ``lumoscore.__version__``,
    the source digest (:func:`code_digest`: a run after any change to LumosCore's code is a
    new run, never a stale result) and, when the trace is a file, the SHA-256 of the file's
    bytes (an edited trace is a new run).

    Examples
    --------
    >>> a = RunConfig(arch="best", gpus=256, seed=1)
    >>> run_key(a) == run_key(RunConfig(arch="BEST", gpus=256, seed=1)), run_key(a) == run_key(
    ...     RunConfig(arch="best", gpus=256, seed=2))
    (True, False)
    """
    config = run_config.model_dump(mode="python")
    # fields at their defaults that older stores lack: their keys stay valid
    if config.get("placer") is None:
        config.pop("placer", None)
    if not config.get("fabric_options"):
        config.pop("fabric_options", None)
    if run_config.link_failures.is_default:
        config.pop("link_failures", None)
    doc: dict[str, Any] = {
        "schema": STORE_SCHEMA,
        "lumoscore": lumoscore.__version__,
        "code": code_digest(),
        "config": config,
    }
    if run_config.trace.file is not None:
        try:
            data = Path(run_config.trace.file).read_bytes()
        except OSError as exc:
            raise StoreError(f"trace.file: cannot read {run_config.trace.file}: {exc}") from None
        doc["trace_sha256"] = hashlib.sha256(data).hexdigest()
    return hashlib.sha256(_canonical_json(doc).encode()).hexdigest()[:16]


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, engine="pyarrow", compression="zstd")
    return buf.getvalue()


def _write_run_json(run_dir: Path, doc: Mapping[str, Any]) -> None:
    """Write a run's ``run.json`` (atomically; the file that marks the run complete)."""
    text = json.dumps(doc, indent=2, default=_json_default, allow_nan=True) + "\n"
    atomic_write_text(run_dir / "run.json", text)


def _link_or_copy(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (the same bytes, no copy), or a copy where the file
    system cannot link; an existing ``dst`` is replaced atomically."""
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _is_record(doc: Any, key: str) -> bool:
    """Whether a parsed ``run.json`` is run ``key``'s record (a damaged or foreign one is
    reported by :meth:`ResultStore.damage` and left out of the index)."""
    return (
        isinstance(doc, dict)
        and doc.get("key") == key
        and isinstance(doc.get("config"), dict)
        and isinstance(doc.get("summary", {}), dict)
        and isinstance(doc.get("fabric", {}), dict)
    )


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


class ResultStore:
    """Results of many runs under one folder (see the module docstring for the layout).

    Parameters
    ----------
    root : str or Path
        The store's folder (created on the first :meth:`put`).

    Examples
    --------
    >>> import tempfile
    >>> from lumoscore.experiments.runner import run_one
    >>> cfg = RunConfig(arch="best", gpus=256, trace={"jobs": 5})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     store = ResultStore(d)
    ...     key = store.put(store.key(cfg), cfg, run_one(cfg))
    ...     idx = store.index()
    ...     idx.loc[0, "arch"], int(idx.loc[0, "trace.jobs"]), len(store.jobs(key))
    ('best', 5, 5)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._rows: dict[str, dict[str, Any]] | None = None
        self._configs: dict[str, str] = {}  # key -> canonical JSON of its config

    # -- keys and presence ------------------------------------------------------------------
    def key(self, run_config: RunConfig) -> str:
        """The key of ``run_config`` (:func:`run_key`)."""
        return run_key(run_config)

    def run_dir(self, key: str) -> Path:
        """The folder of run ``key``."""
        return self.root / "runs" / key

    def has(self, key: str) -> bool:
        """Whether run ``key`` is complete (its ``run.json`` exists; :meth:`damage` says
        whether it is intact)."""
        return (self.run_dir(key) / "run.json").is_file()

    def damage(self, key: str) -> str | None:
        """Why the stored run ``key`` cannot be used (``None``: intact): an unreadable
        ``run.json``, a missing data file, or one whose SHA-256 differs from the one recorded
        when it was written (runs stored without checksums: an unreadable Parquet file).

        Examples
        --------
        >>> import tempfile
        >>> from lumoscore.experiments.runner import run_one
        >>> cfg = RunConfig(arch="best", gpus=256, trace={"jobs": 3})
        >>> with tempfile.TemporaryDirectory() as d:
        ...     store = ResultStore(d)
        ...     key = store.put(store.key(cfg), cfg, run_one(cfg))
        ...     ok = store.damage(key)
        ...     _ = (store.run_dir(key) / "jobs.parquet").write_bytes(b"")
        ...     ok, store.damage(key)
        (None, 'jobs.parquet does not match its checksum')
        """
        d = self.run_dir(key)
        try:
            doc = json.loads((d / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "run.json is missing or unreadable"
        if not _is_record(doc, key):
            return "run.json is not a run's record (its key, config and summary)"
        files = doc.get("files")
        for name in ("jobs.parquet", "queue.parquet"):
            path = d / name
            if not path.is_file():
                return f"{name} is missing"
            if isinstance(files, dict) and name in files:
                if hashlib.sha256(path.read_bytes()).hexdigest() != files[name]:
                    return f"{name} does not match its checksum"
            else:
                try:
                    pq.read_metadata(path)
                except (OSError, ValueError, pa.ArrowException):
                    return f"{name} is not a readable Parquet file"
        return None

    def damaged(self) -> dict[str, str]:
        """Every complete run that :meth:`damage` finds damaged, with why."""
        found = {key: self.damage(key) for key in self.keys()}
        return {key: why for key, why in found.items() if why is not None}

    def keys(self) -> list[str]:
        """Keys of every complete run, sorted."""
        runs = self.root / "runs"
        if not runs.is_dir():
            return []
        return sorted(p.parent.name for p in runs.glob("*/run.json"))

    def unstored(self, runs: Iterable[RunConfig]) -> list[RunConfig]:
        """The runs of ``runs`` with no complete result in the store, whatever code made the
        stored ones (compared by run config, not by key), in the order given.

        Examples
        --------
        >>> import tempfile
        >>> store = ResultStore(tempfile.mkdtemp())
        >>> [r.arch for r in store.unstored([RunConfig(arch="best", gpus=256, seed=1)])]
        ['best']
        """
        stored = set()
        for key in self.keys():
            try:
                config = RunConfig.model_validate(self.info(key)["config"])
            except (StoreError, KeyError, TypeError, ValueError):
                continue  # damaged or of another schema: not a result of any of these runs
            stored.add(config.model_dump_json())
        return [r for r in runs if r.model_dump_json() not in stored]

    # -- writing ----------------------------------------------------------------------------
    def put(self, key: str, run_config: RunConfig, result: SimResult) -> str:
        """Store ``result`` of ``run_config`` under ``key`` and rewrite the index.

        Writes ``jobs.parquet``, ``queue.parquet``, ``link_events.parquet`` (runs with link
        failures) and, last, ``run.json``, each atomically;
        a crash before ``run.json`` leaves the run incomplete (it is run again on resume).
        A stored run of the same config under another key (made by other code, for example)
        is removed: the folder keeps the latest result of each run config. Returns ``key``.
        """
        d = self.run_dir(key)
        d.mkdir(parents=True, exist_ok=True)
        files = {}
        frames = [("jobs.parquet", result.jobs), ("queue.parquet", result.queue)]
        if not result.link_events.empty:
            frames.append(("link_events.parquet", result.link_events))
        for name, frame in frames:
            data = _parquet_bytes(frame)
            atomic_write_text(d / name, data)
            files[name] = hashlib.sha256(data).hexdigest()
        doc = {
            "key": key,
            "files": files,
            "schema": STORE_SCHEMA,
            "lumoscore_version": lumoscore.__version__,
            "lumoscore_code": code_digest(),
            "config": run_config.model_dump(mode="json"),
            "summary": result.summary,
            "stats": result.stats,
            "fabric": result.fabric,
        }
        _write_run_json(d, doc)
        self._add_row(doc)
        self._write_index()
        return key

    def adopt(self, source: ResultStore, runs: Iterable[tuple[str, str, RunConfig]]) -> int:
        """Take runs of ``source`` into this store without running them again.

        For each ``(source_key, key, run_config)``, run ``source_key`` of ``source`` becomes
        run ``key`` here, recorded under ``run_config``: the same simulation under the name a
        sweep of this store asks for (for example a routing written out that ``source``
        stored as the default). Data files are hard-linked where the file system allows,
        else copied; ``run.json`` is written last, so an interrupted adoption leaves only
        incomplete runs. Runs already intact here are left alone; the index is rewritten
        once. Returns the number of runs added.

        Raises
        ------
        StoreError
            ``source`` lacks one of the runs or holds it damaged.

        Examples
        --------
        >>> import tempfile
        >>> from lumoscore.experiments.runner import run_one
        >>> cfg = RunConfig(arch="best", gpus=256, trace={"jobs": 3})
        >>> with tempfile.TemporaryDirectory() as d:
        ...     src, dst = ResultStore(f"{d}/a"), ResultStore(f"{d}/b")
        ...     key = src.put(src.key(cfg), cfg, run_one(cfg))
        ...     dst.adopt(src, [(key, key, cfg)]), dst.adopt(src, [(key, key, cfg)])
        ...     bool(dst.jobs(key).equals(src.jobs(key)))
        (1, 0)
        True
        """
        added = 0
        for source_key, key, run_config in runs:
            if self.has(key) and self.damage(key) is None:
                continue
            why = source.damage(source_key) if source.has(source_key) else "not stored"
            if why is not None:
                raise StoreError(f"run {source_key!r} of {source.root}: {why}")
            doc = source.info(source_key)
            d = self.run_dir(key)
            d.mkdir(parents=True, exist_ok=True)
            for name in doc.get("files", {}):
                _link_or_copy(source.run_dir(source_key) / name, d / name)
            doc = {**doc, "key": key, "config": run_config.model_dump(mode="json")}
            _write_run_json(d, doc)
            self._add_row(doc)
            added += 1
        if added:
            self._write_index()
        return added

    # -- reading ----------------------------------------------------------------------------
    def info(self, key: str) -> dict[str, Any]:
        """The ``run.json`` document of run ``key``: ``config``, ``summary``, ``stats``,
        ``fabric``, ``key``, ``schema``, ``lumoscore_version``."""
        path = self.run_dir(key) / "run.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(f"run {key!r}: no complete run in {self.root}") from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"run {key!r}: damaged run.json: {exc}") from None

    def jobs(self, key: str) -> pd.DataFrame:
        """The per-job table of run ``key``."""
        return self._read_parquet(key, "jobs.parquet")

    def link_events(self, key: str) -> pd.DataFrame:
        """The cable failures and repairs of run ``key`` (empty for a run without them;
        :data:`~lumoscore.sim.link_failures.LINK_EVENT_COLUMNS`)."""
        if "link_events.parquet" not in self.info(key).get("files", {}):
            return pd.DataFrame()
        return self._read_parquet(key, "link_events.parquet")

    def queue(self, key: str) -> pd.DataFrame:
        """The queue-length table (``time_s``, ``waiting``) of run ``key``."""
        return self._read_parquet(key, "queue.parquet")

    def index(self) -> pd.DataFrame:
        """One row per complete run: ``key``, the flattened config (``arch``, ``gpus``,
        ``trace.load``, ``failures.rate_per_gpu_day``, ..., ``seed``), ``fabric.port_gbps``
        and the summary columns (:data:`SUMMARY_COLUMNS`, then any other scalar of the run
        summary such as ``restarts`` or ``lost_s``, then ``wall_s``); sorted by architecture,
        cluster size, seed and key. Rebuilt from the ``run.json`` files."""
        self._rows = None
        return self._frame()

    # -- internals --------------------------------------------------------------------------
    def _read_parquet(self, key: str, name: str) -> pd.DataFrame:
        if not self.has(key):
            raise StoreError(f"run {key!r}: no complete run in {self.root}")
        return pd.read_parquet(self.run_dir(key) / name)

    @staticmethod
    def _row(doc: Mapping[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"key": doc["key"], **flatten(doc["config"])}
        port = doc.get("fabric", {}).get("port_gbps")
        row["fabric.port_gbps"] = math.nan if port is None else float(port)
        summary = doc.get("summary", {})
        for col in SUMMARY_COLUMNS[:-1]:
            row[col] = summary.get(col, math.nan)
        # Any further scalar the simulator reports (restarts, lost_s, ...), then wall_s.
        for col in sorted(set(summary) - set(SUMMARY_COLUMNS) - {"eps"}):
            value = summary[col]
            if isinstance(value, int | float) and col not in row:
                row[col] = value
        row["wall_s"] = summary.get("wall_s", math.nan)
        return row

    def _load_rows(self) -> dict[str, dict[str, Any]]:
        if self._rows is None:
            docs = {key: self.info(key) for key in self.keys()}
            docs = {key: doc for key, doc in docs.items() if _is_record(doc, key)}
            self._rows = {key: self._row(doc) for key, doc in docs.items()}
            self._configs = {key: _canonical_json(doc["config"]) for key, doc in docs.items()}
        return self._rows

    def _add_row(self, doc: Mapping[str, Any]) -> None:
        """Index the run ``doc`` (just written) and remove the runs it supersedes: those of
        the same config under another key, made by other code, another store schema or
        another version of the trace file. A folder keeps one result per run config, the
        latest, so its index and reports never mix results of different code."""
        rows = self._load_rows()
        key, config = doc["key"], _canonical_json(doc["config"])
        rows[key] = self._row(doc)
        self._configs[key] = config
        for old in [k for k, c in self._configs.items() if c == config and k != key]:
            d = self.run_dir(old)
            (d / "run.json").unlink(missing_ok=True)  # incomplete first, then gone
            shutil.rmtree(d, ignore_errors=True)
            del rows[old], self._configs[old]

    def _frame(self) -> pd.DataFrame:
        rows = list(self._load_rows().values())
        if not rows:
            cols = ["key", *flatten(RunConfig().model_dump()), "fabric.port_gbps", *SUMMARY_COLUMNS]
            return pd.DataFrame(columns=cols)
        frame = pd.DataFrame(rows)
        frame = frame.sort_values(["arch", "gpus", "seed", "key"], kind="stable")
        return frame.reset_index(drop=True)

    def _write_index(self) -> None:
        frame = self._frame()
        atomic_write(
            self.root / "index.parquet",
            lambda tmp: frame.to_parquet(tmp, index=False, engine="pyarrow"),
            error=StoreError,
        )
        atomic_write_text(self.root / "index.csv", frame.to_csv(index=False))
