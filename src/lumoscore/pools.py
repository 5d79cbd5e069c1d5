"""Worker processes that leave Ctrl-C to their parent: :func:`worker_pool`, :func:`dask_setup`.

A terminal sends Ctrl-C (SIGINT) to every process of the foreground group. A pool worker
that took it would print its own traceback and could leave the parent waiting on it. The
workers of :func:`worker_pool` ignore it (:func:`worker_init`); the parent, interrupted,
stops them and drops the work not started. Used by sweeps (:mod:`lumoscore.experiments.runner`)
and by the report's second drawing process (:mod:`lumoscore.report.writer`). The worker
processes of a sweep's Dask ``LocalCluster`` do the same through :func:`dask_setup`.

Examples
--------
>>> with worker_pool(1) as pool:
...     pool.submit(abs, -3).result()
3
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Iterator

__all__ = ["dask_setup", "worker_init", "worker_pool"]

#: ``prctl`` option: the signal a process gets when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1


def worker_init(parent_pid: int) -> None:
    """Set up a pool worker: Ctrl-C is left to the parent (which stops the workers), and on
    Linux the worker is terminated when the parent dies (``PR_SET_PDEATHSIG``), so a killed
    ``lumos run`` leaves no orphan simulations behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def dask_setup(worker: object) -> None:
    """Dask's preload hook (``LocalCluster(preload=["lumoscore.pools"])``), run in each worker
    process as it starts: Ctrl-C is left to the parent, which closes the cluster (a worker
    that took it would print its own traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[cf.ProcessPoolExecutor]:
    """A process pool of ``workers`` workers (:func:`worker_init`), shut down on
    leaving; when the block is left by an exception (Ctrl-C included) its worker processes,
    which ignore SIGINT, are stopped and the work not started is dropped."""
    pool = cf.ProcessPoolExecutor(
        max_workers=workers, initializer=worker_init, initargs=(os.getpid(),)
    )
    try:
        yield pool
    except BaseException:
        for proc in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(Exception):
                proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
