"""Running experiments: one run (:func:`run_one`) and a whole sweep (:func:`run_sweep`).

A sweep skips every run already in the :class:`~lumoscore.experiments.store.ResultStore`,
runs the rest in parallel — on a local process pool (default), in this process
(``workers=1``) or on a Dask distributed cluster — and writes each result into the store in
this (the parent) process as soon as it arrives. Killing a sweep therefore loses only the runs
in flight; running it again runs only the missing ones. A simulation is a pure function of its
:class:`~lumoscore.experiments.config.RunConfig` (every random choice is seeded from
``seed``), so every executor gives identical result files.

Examples
--------
>>> import tempfile
>>> from lumoscore.experiments.config import RunConfig
>>> runs = [RunConfig(arch="best", gpus=256, trace={"jobs": 5}, seed=s) for s in (1, 2)]
>>> with tempfile.TemporaryDirectory() as d:
...     index = run_sweep(runs, ResultStore(d), workers=1, progress=False)
...     again = run_sweep(runs, ResultStore(d), workers=1, progress=False)  # nothing to run
...     index["seed"].tolist(), bool((index["key"] == again["key"]).all())
([1, 2], True)
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import inspect
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.managers import SyncManager
from queue import Empty
from typing import Any, Literal

import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from lumoscore.errors import ConfigError, LumosError
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.store import ResultStore
from lumoscore.pools import worker_init, worker_pool
from lumoscore.sim.kernels import solo_run_cached
from lumoscore.sim.results import SimResult
from lumoscore.warmup import compile_kernels, needed_kernels

__all__ = [
    "SweepError",
    "compile_ahead",
    "run_one",
    "run_sweep",
    "simulator_options",
    "worker_pool",
]

#: Processes :func:`compile_ahead` uses at most: one for the fluid model, one for the rest
#: (they take about as long, docs/simulator.md "The kernel cache").
COMPILE_PROCESSES = 2

RunFn = Callable[[RunConfig], SimResult]
#: ``on_progress(key, finished_jobs, total_jobs)`` of a run in flight.
JobProgress = Callable[[str, int, int], None]


class SweepError(LumosError):
    """Some runs of a sweep failed; the others are in the store."""


def simulator_options(run_config: RunConfig) -> dict[str, Any]:
    """Keyword arguments of :class:`~lumoscore.sim.engine.Simulator` for a run.

    ``failures`` (a :class:`~lumoscore.sim.failures.FailureModel`, only when failures are
    enabled) and ``seed`` are passed when the simulator accepts them.

    Examples
    --------
    >>> opts = simulator_options(RunConfig(arch="best", gpus=256, queue="backfill"))
    >>> opts["queue"], opts["eps"], opts.get("failures")
    ('backfill', 0.0, None)
    """
    from lumoscore.sim.engine import Simulator

    params = inspect.signature(Simulator).parameters
    opts: dict[str, Any] = {
        "queue": run_config.queue,
        "eps": run_config.eps,
        "exposure": run_config.exposure,
    }
    if run_config.placer is not None:
        opts["placer"] = run_config.placer
    failures = run_config.failures.to_model()
    if "failures" in params:
        opts["failures"] = failures if failures.enabled else None
    elif failures.enabled:
        raise ConfigError(
            "failures.rate_per_gpu_day > 0 needs a simulator with failure support; "
            "this lumoscore.sim.engine.Simulator has none"
        )
    links = run_config.link_failures.to_model()
    if links.enabled:
        opts["link_failures"] = links
    if "seed" in params:
        opts["seed"] = run_config.seed
    return opts


def run_one(run_config: RunConfig, progress: Callable[[int, int], None] | None = None) -> SimResult:
    """Simulate one run: build the fabric and the trace, run the simulator.

    Parameters
    ----------
    run_config : RunConfig
        The run.
    progress : callable, optional
        ``progress(finished_jobs, total_jobs)``, passed to the simulator.

    Examples
    --------
    >>> r = run_one(RunConfig(arch="best", gpus=256, trace={"jobs": 5, "load": 0.5}))
    >>> r.summary["jobs"], r.fabric["fabric"]
    (5, 'best')
    """
    from lumoscore.sim.engine import Simulator
    from lumoscore.workload import fitting_jobs, generate_trace, read_trace

    cfg = run_config
    fabric = cfg.make_fabric()
    t = cfg.trace
    if t.file is not None:
        trace = read_trace(t.file)
    else:
        assert t.preset is not None
        trace = generate_trace(
            t.preset,
            t.jobs,
            seed=cfg.seed,
            cluster_gpus=cfg.gpus,
            beta_s=t.beta_s,
            load=t.load,
            load_basis=t.load_basis,
            names={"beta_s": "trace.beta_s", "load": "trace.load"},
        )
    jobs, _ = fitting_jobs(trace, cfg.gpus)  # a job that can never fit is an input error
    sim = Simulator(fabric, jobs, progress=progress, **simulator_options(cfg))
    return sim.run()


def _cost_estimate(run_config: RunConfig) -> float:
    """A rough relative cost of a run: jobs x GPUs x the architecture's relative cost (more
    for fabrics whose jobs share links, such as Clos: rate solves dominate there), more with
    failures and with probing on LumosCore.

    Examples
    --------
    >>> a = RunConfig(arch="clos-51.2T-3tier", gpus=512, trace={"jobs": 10})
    >>> b = RunConfig(arch="best", gpus=512, trace={"jobs": 10})
    >>> _cost_estimate(a) > _cost_estimate(b)
    True
    """
    from lumoscore.fabric.lumos import LumosCoreFabric
    from lumoscore.fabric.presets import architecture

    arch = architecture(run_config.arch)[1]
    weight = arch.relative_cost
    # measured at 4096 GPUs, 1000 jobs: cable failures at 0.01 / 0.05 per cable-day cost
    # about 1.7x / 4.5x, GPU failures at 0.002 per GPU-day 1.4x, probing on LumosCore 5x
    weight *= 1.0 + 70.0 * run_config.link_failures.rate_per_cable_day
    weight *= 1.0 + 200.0 * run_config.failures.rate_per_gpu_day
    if run_config.routing == "probing" and arch.fabric_class is LumosCoreFabric:
        weight *= 5.0
    return run_config.trace.jobs * run_config.gpus * weight


def _accepts_progress(run_fn: RunFn) -> bool:
    try:
        return "progress" in inspect.signature(run_fn).parameters
    except (TypeError, ValueError):
        return False


class _Reporter:
    """Picklable per-run progress callback: sends ``(key, done, total)`` to a queue about a
    hundred times per run."""

    def __init__(self, queue: Any, key: str) -> None:
        self.queue = queue
        self.key = key

    def __call__(self, done: int, total: int) -> None:
        if done == total or done % max(1, total // 100) == 0:
            self.queue.put((self.key, done, total))


def _call_run(
    run_fn: Callable[..., SimResult], cfg: RunConfig, reporter: _Reporter | None = None
) -> SimResult:
    """Run ``run_fn`` in a pool worker (with a progress reporter if given). The worker process
    runs one simulation at a time, so the objects that exist before it are left out of the
    garbage collector's passes meanwhile (:func:`~lumoscore.sim.engine.frozen_gc`)."""
    from lumoscore.sim.engine import frozen_gc

    with frozen_gc():
        return run_fn(cfg) if reporter is None else run_fn(cfg, progress=reporter)


@contextlib.contextmanager
def _local_results(
    todo: Sequence[tuple[str, RunConfig]],
    run_fn: RunFn,
    workers: int,
    on_progress: JobProgress | None = None,
) -> Iterator[Iterator[tuple[str, SimResult | BaseException]]]:
    report = on_progress is not None and _accepts_progress(run_fn)
    if workers <= 1:

        def inline() -> Iterator[tuple[str, SimResult | BaseException]]:
            for key, cfg in todo:
                try:
                    if report:
                        assert on_progress is not None
                        tick = functools.partial(on_progress, key)
                        yield key, run_fn(cfg, progress=tick)  # type: ignore[call-arg]
                    else:
                        yield key, run_fn(cfg)
                except Exception as exc:  # reported with its traceback by run_sweep
                    yield key, exc

        yield inline()
        return
    with contextlib.ExitStack() as stack:
        queue: Any = None
        if report:
            manager = SyncManager()
            manager.start(worker_init, (os.getpid(),))
            stack.callback(manager.shutdown)
            queue = manager.Queue()
        pool = stack.enter_context(worker_pool(workers))
        # kernels the cache lacks, compiled before the runs: a task per function, longest first
        needed = needed_kernels({cfg.arch for _, cfg in todo})
        warming = [pool.submit(compile_kernels, group) for group in needed]
        futures: dict[cf.Future[SimResult], str] = {}

        def submit_runs() -> None:
            for key, cfg in todo:
                args = (run_fn, cfg) if queue is None else (run_fn, cfg, _Reporter(queue, key))
                futures[pool.submit(_call_run, *args)] = key

        def drain() -> None:
            while queue is not None and on_progress is not None:
                try:
                    key, done, total = queue.get_nowait()
                except Empty:
                    return
                on_progress(key, done, total)

        def gather() -> Iterator[tuple[str, SimResult | BaseException]]:
            while cf.wait(warming, timeout=0.25).not_done:  # (its errors: the runs compile)
                pass
            submit_runs()
            pending = set(futures)
            while pending:
                finished, pending = cf.wait(pending, timeout=0.25, return_when=cf.FIRST_COMPLETED)
                drain()
                for fut in finished:
                    # A worker's exception carries the worker's traceback text as its
                    # ``__cause__`` (``concurrent.futures.process._RemoteTraceback``).
                    exc = fut.exception()
                    yield futures[fut], fut.result() if exc is None else exc

        yield gather()


def compile_ahead(archs: Iterable[str]) -> int:
    """Compile the kernels that simulations of ``archs`` call and the on-disk cache lacks
    (:func:`~lumoscore.warmup.needed_kernels`) on a pool of up to :data:`COMPILE_PROCESSES`
    processes, one task per function, longest first; for a process about to simulate itself
    (``lumos simulate``), whose first simulation then loads them. Nothing happens when the
    cache holds them or the machine has one core. Returns how many functions it compiled.

    Examples
    --------
    >>> compile_ahead(["no-such-architecture"])
    0
    """
    groups = needed_kernels(archs)
    workers = min(COMPILE_PROCESSES, os.cpu_count() or 1, len(groups))
    if workers < 2:
        return 0
    with worker_pool(workers) as pool:  # (a task that fails leaves its kernels to the run)
        cf.wait([pool.submit(compile_kernels, group) for group in groups])
    return len(groups)


#: Address schemes a Dask scheduler listens on.
DASK_SCHEMES: tuple[str, ...] = ("tcp", "tls", "ucx", "ws", "wss")
#: Seconds to wait for a Dask scheduler's first worker before giving up.
DASK_WORKER_TIMEOUT_S = 60.0


def check_scheduler_address(address: str) -> str:
    """``address`` if it reads as a Dask scheduler address ``SCHEME://HOST:PORT``, else a
    ConfigError naming the expected form.

    Examples
    --------
    >>> check_scheduler_address("tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> check_scheduler_address("notaurl")
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: --scheduler 'notaurl': expected SCHEME://HOST:PORT ...
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:
        port = None
        parts = None
    if parts is None or parts.scheme not in DASK_SCHEMES or not parts.hostname or port is None:
        raise ConfigError(
            f"--scheduler {address!r}: expected SCHEME://HOST:PORT with SCHEME one of "
            f"{', '.join(DASK_SCHEMES)} (e.g. tcp://10.0.0.5:8786)"
        )
    return address


@contextlib.contextmanager
def _local_cluster(workers: int) -> Iterator[Any]:
    """A Dask ``LocalCluster`` of ``workers`` one-thread worker processes, closed on leaving.

    The cluster starts with SIGINT blocked in this thread: a Ctrl-C pressed meanwhile is
    delivered once it has started, and the cluster is then closed, never left half-started
    (Dask's exit handler would close it and print a traceback). Its worker processes ignore
    Ctrl-C (:func:`lumoscore.pools.dask_setup`, preloaded) and log only critical errors (a
    run's error comes back as its result)."""
    from distributed import LocalCluster

    masking = threading.current_thread() is threading.main_thread() and hasattr(
        signal, "pthread_sigmask"
    )
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if masking else set()
    try:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
            preload=["lumoscore.pools"],
        )
    except BaseException:
        if masking:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        raise
    with cluster:
        if masking:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # (a pending Ctrl-C lands here)
        yield cluster


@contextlib.contextmanager
def _dask_results(
    todo: Sequence[tuple[str, RunConfig]],
    run_fn: RunFn,
    *,
    client: Any = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
) -> Iterator[Iterator[tuple[str, SimResult | BaseException]]]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - dask is a dependency
        raise ConfigError(f"executor='dask' needs the 'distributed' package: {exc}") from None
    with contextlib.ExitStack() as stack:
        if client is None:
            if scheduler is not None:
                check_scheduler_address(scheduler)
                try:
                    client = stack.enter_context(Client(scheduler, timeout="20s"))
                except (OSError, ValueError) as exc:
                    raise ConfigError(
                        f"--scheduler {scheduler}: cannot reach the Dask scheduler: "
                        f"{' '.join(str(exc).split())}"
                    ) from None
                try:
                    client.wait_for_workers(1, timeout=DASK_WORKER_TIMEOUT_S)
                except TimeoutError:
                    raise ConfigError(
                        f"--scheduler {scheduler}: no worker joined the scheduler within "
                        f"{DASK_WORKER_TIMEOUT_S:g} s (start one: dask worker {scheduler})"
                    ) from None
            else:
                cluster = stack.enter_context(_local_cluster(dask_local or 1))
                client = stack.enter_context(Client(cluster))
        futures = {
            client.submit(run_fn, cfg, key=f"lumos-run-{key}", pure=False): key for key, cfg in todo
        }

        def gather() -> Iterator[tuple[str, SimResult | BaseException]]:
            for fut in as_completed(futures):
                key = futures[fut]
                if fut.status == "error":
                    exc = fut.exception()
                    if exc.__traceback__ is None:  # keep the worker's traceback
                        exc = exc.with_traceback(fut.traceback())
                    yield key, exc
                else:
                    yield key, fut.result()

        try:
            yield gather()
        except BaseException:
            client.cancel(list(futures))
            raise


def run_sweep(
    runs: Sequence[RunConfig],
    store: ResultStore,
    *,
    executor: Literal["local", "dask"] = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    client: Any = None,
    progress: bool = True,
    run_fn: RunFn = run_one,
    console: Console | None = None,
) -> pd.DataFrame:
    """Run every run not yet in ``store``; return the index rows of ``runs``.

    Parameters
    ----------
    runs : sequence of RunConfig
        The runs (for example :func:`~lumoscore.experiments.config.expand` of an experiment);
        duplicates run once.
    store : ResultStore
        Where results go; runs whose key it has are skipped.
    executor : {"local", "dask"}
        ``local``: a process pool of ``workers`` processes (default: one per CPU core, at
        most one per run; ``workers=1`` runs in this process). ``dask``: a Dask distributed
        cluster — ``client`` (an existing ``distributed.Client``), else ``scheduler``
        (address ``tcp://host:port``), else a ``LocalCluster`` of ``dask_local`` worker
        processes of one thread each.
    progress : bool
        Show a progress bar on stderr (only on a terminal).
    run_fn : callable
        The function that runs one config (default :func:`run_one`; must be picklable for
        process pools and Dask).
    console : rich Console, optional
        Console of the progress bar (default: stderr).

    Returns
    -------
    pandas.DataFrame
        The store's index rows (:meth:`ResultStore.index`) of the completed ``runs``, in the
        order of ``runs``.

    Raises
    ------
    SweepError
        Some runs failed (the message counts them and quotes the first error, which is the
        ``__cause__``, with its traceback); every other result is in the store.
    """
    if executor not in ("local", "dask"):
        raise ConfigError(f"executor={executor!r} unknown; allowed: local, dask")
    if workers is not None and workers < 1:
        raise ConfigError(f"workers={workers} must be >= 1")
    if dask_local is not None and dask_local < 1:
        raise ConfigError(f"dask_local={dask_local} must be >= 1")
    keyed = {store.key(cfg): cfg for cfg in runs}
    todo = []
    for key, cfg in keyed.items():
        why = store.damage(key) if store.has(key) else "missing"
        if why == "missing":
            todo.append((key, cfg))
        elif why is not None:  # a damaged run: say so, and compute it again
            (console or Console(stderr=True)).print(
                f"lumos: warning: stored run {key} ({cfg.label()}) is damaged ({why}); "
                "running it again",
                markup=False,
                highlight=False,
            )
            todo.append((key, cfg))
    # Longest first (a rough estimate) keeps the workers busy to the end; results and the
    # returned index do not depend on the order.
    todo.sort(key=lambda kc: -_cost_estimate(kc[1]))
    failed: list[tuple[str, BaseException]] = []
    if todo:
        console = console or Console(stderr=True)
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not progress or not console.is_terminal,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        in_flight: dict[str, Any] = {}

        def on_progress(key: str, done: int, total: int) -> None:
            if key not in in_flight:
                if not in_flight:  # (compiling is over once a run reports jobs)
                    bar.update(task, description=title)
                in_flight[key] = bar.add_task(f"  {keyed[key].label()}", total=total)
            bar.update(in_flight[key], completed=done, total=total)

        if executor == "dask":
            ctx = _dask_results(
                todo, run_fn, client=client, scheduler=scheduler, dask_local=dask_local
            )
        else:
            n = workers if workers is not None else min(len(todo), os.cpu_count() or 1)
            ctx = _local_results(todo, run_fn, n, None if bar.disable else on_progress)
        with ctx as results, bar:
            stored = len(keyed) - len(todo)
            title = f"[bold]runs[/] ({stored} already stored)" if stored else "[bold]runs[/]"
            # a local first run compiles the simulator's kernels before any job finishes
            cold = executor == "local" and not bar.disable and not solo_run_cached()
            note = " (compiling kernels, first run only)"
            task = bar.add_task(title + note if cold else title, total=len(todo))
            for key, outcome in results:
                if isinstance(outcome, BaseException):
                    failed.append((key, outcome))
                else:
                    store.put(key, keyed[key], outcome)
                bar.update(task, advance=1)
                if key in in_flight:
                    bar.remove_task(in_flight.pop(key))
    if failed:
        # The first failure is the cause: its traceback (for a pool or Dask worker, the
        # worker's) stays attached to the SweepError.
        key, exc = failed[0]
        raise SweepError(
            f"{len(failed)} of {len(keyed)} runs failed (the others are stored in "
            f"{store.root}); first: {keyed[key].label()} [{key}]: {type(exc).__name__}: {exc}"
        ) from exc
    index = store.index()
    order = {key: i for i, key in enumerate(keyed)}
    index = index[index["key"].isin(order)]
    index = index.iloc[index["key"].map(order).argsort(kind="stable")]
    return index.reset_index(drop=True)
