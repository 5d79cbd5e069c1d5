"""Compiling a sweep's kernels ahead, split among its workers: the kernel manifest.

A process compiles a Numba kernel the first time it calls it with new argument types and
writes it to the on-disk cache (:mod:`lumoscore.jit`); later processes load it. With an empty
cache (the first run after installing or upgrading) every worker of a sweep compiles the
kernels its runs call, when they call them: both workers of a two-core machine compile the
fluid model (about 20 s on one core) and the other kernels every simulation needs at the same
time, and the second core does the first one's work again.

The manifest (``data/kernels.json``) lists, per architecture, the kernels a simulation of it
calls from Python (module, function, argument types) with the seconds each took to compile,
the kernels it compiled inside included. Before a local sweep's runs start, the listed
kernels of its architectures that the cache does not hold (:func:`needed_kernels`) are
compiled on its worker pool, one task per function, longest first (:func:`compile_kernels`):
one worker takes the fluid model while the others take the rest, and the runs then load
every kernel from the cache.

The manifest only saves time: a kernel it misses compiles when first called, as without it;
an entry whose function is gone or whose types no longer match is skipped or compiles a
signature nobody calls. ``tests/test_warmup.py`` checks that it lists every kernel the
default experiment's architectures call; rebuild it with ``python -m lumoscore.warmup`` (each
architecture of the default experiment recorded in a process of its own with an empty cache,
a few minutes) after changing a kernel's argument types.

Examples
--------
>>> from numba import types
>>> sig = (types.int64[::1], types.UniTuple(types.float64[::1], 2), types.boolean, types.none)
>>> encode_types(sig)
(['int64', 1, 'C'], {'unituple': ['float64', 1, 'C'], 'count': 2}, 'bool', 'none')
>>> decode_types(encode_types(sig)) == sig
True
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numba.core import event, types
from numba.np.numpy_support import from_dtype

from lumoscore.jit import is_cached

__all__ = [
    "MANIFEST",
    "CompileLog",
    "Kernel",
    "Manifest",
    "compile_kernels",
    "decode_types",
    "encode_types",
    "load_manifest",
    "needed_kernels",
    "record_compiles",
]

_log = logging.getLogger(__name__)

#: The manifest shipped with the package.
MANIFEST = Path(__file__).resolve().parent / "data" / "kernels.json"
#: The package whose kernels are recorded.
_PACKAGE = "lumoscore"

#: Scalar types kernels take (and arrays hold), recorded by name.
_SCALARS = (types.Integer, types.Float, types.Boolean)


def _encode(t: types.Type) -> Any:
    """One Numba type as JSON data: a scalar by name, an array as ``[dtype, ndim, layout]``
    (``"readonly"`` appended for a read-only one), tuples as ``{"tuple": [...]}`` and
    ``{"unituple": item, "count": n}``, ``None`` as ``"none"``; a literal as its type (a
    kernel compiled inside another for a constant argument)."""
    t = types.unliteral(t)
    if isinstance(t, types.NoneType):
        return "none"
    if isinstance(t, types.Array) and t.aligned and isinstance(t.dtype, _SCALARS):
        return [str(t.dtype), t.ndim, t.layout] + ([] if t.mutable else ["readonly"])
    if isinstance(t, types.UniTuple):
        return {"unituple": _encode(t.dtype), "count": t.count}
    if isinstance(t, types.Tuple):
        return {"tuple": [_encode(x) for x in t.types]}
    if isinstance(t, _SCALARS):
        return str(t)
    raise TypeError(f"kernel argument type {t} cannot be recorded in the manifest")


def _scalar(name: str) -> types.Type:
    """The scalar type of a NumPy dtype name (``int64``, ``uint64``, ``float64``, ``bool``)."""
    return from_dtype(np.dtype(name))


def _decode(obj: Any) -> types.Type:
    """The Numba type of :func:`_encode`'s data."""
    if obj == "none":
        return types.none
    if isinstance(obj, str):
        return _scalar(obj)
    if isinstance(obj, list):
        return types.Array(_scalar(obj[0]), obj[1], obj[2], readonly="readonly" in obj[3:])
    if "unituple" in obj:
        return types.UniTuple(_decode(obj["unituple"]), obj["count"])
    return types.Tuple([_decode(x) for x in obj["tuple"]])


def encode_types(args: Sequence[types.Type]) -> tuple[Any, ...]:
    """Argument types of a compiled signature as JSON data (integers, floats, booleans, arrays
    of them, tuples, None); TypeError for any other type."""
    return tuple(_encode(t) for t in args)


def decode_types(data: Sequence[Any]) -> tuple[types.Type, ...]:
    """The argument types :func:`encode_types` wrote."""
    return tuple(_decode(x) for x in data)


@dataclass(frozen=True)
class Kernel:
    """A compiled function of the package with one signature.

    Attributes
    ----------
    module, name : str
        Where the dispatcher is (``getattr(import_module(module), name)``).
    args : tuple
        Its argument types, as :func:`encode_types` writes them.
    seconds : float
        What compiling it took when recorded (with what it compiled inside), 0 if unknown.
    """

    module: str
    name: str
    args: tuple[Any, ...]
    seconds: float = 0.0

    @property
    def key(self) -> str:
        """The function and signature, as one string."""
        return f"{self.module}.{self.name}{json.dumps(self.args)}"

    def dispatcher(self) -> Any:
        """The compiled function (a Numba dispatcher); AttributeError or ImportError if the
        package no longer has it."""
        disp = getattr(importlib.import_module(self.module), self.name)
        if not hasattr(disp, "compile"):
            raise AttributeError(f"{self.module}.{self.name} is not a compiled function")
        return disp


@dataclass
class CompileLog:
    """What :func:`record_compiles` saw: ``calls``, the kernels compiled for a call from
    Python with their seconds (in order); ``inside``, the package's kernels compiled within
    them."""

    calls: list[Kernel] = field(default_factory=list)
    inside: list[Kernel] = field(default_factory=list)


class _Listener(event.Listener):
    """Numba compile events -> a :class:`CompileLog` (the package's functions only)."""

    def __init__(self, log: CompileLog) -> None:
        self.log = log
        self.started: list[float] = []

    def on_start(self, ev: event.Event) -> None:
        self.started.append(time.perf_counter())

    def on_end(self, ev: event.Event) -> None:
        seconds = time.perf_counter() - self.started.pop()
        func = ev.data["dispatcher"].py_func
        if func.__module__.split(".")[0] != _PACKAGE:
            return
        kernel = Kernel(func.__module__, func.__name__, encode_types(ev.data["args"]))
        if self.started:
            self.log.inside.append(kernel)
        else:
            self.log.calls.append(Kernel(kernel.module, kernel.name, kernel.args, seconds))


@contextmanager
def record_compiles() -> Iterator[CompileLog]:
    """Record the kernels compiled in this process inside the block (those loaded from the
    cache are not: record with an empty cache, ``NUMBA_CACHE_DIR`` set to a new folder before
    Numba is imported)."""
    log = CompileLog()
    with event.install_listener("numba:compile", _Listener(log)):
        yield log


@dataclass(frozen=True)
class Manifest:
    """The kernel manifest (see the module).

    Attributes
    ----------
    calls : dict of str to list of Kernel
        Per architecture, the kernels its simulation compiled for calls from Python, with
        their seconds.
    inside : list of Kernel
        The package's kernels compiled within those (every architecture's).
    """

    calls: dict[str, list[Kernel]]
    inside: list[Kernel]


def _kernel(entry: Sequence[Any]) -> Kernel:
    return Kernel(entry[0], entry[1], tuple(entry[2]), float(entry[3]) if entry[3:] else 0.0)


def load_manifest(path: Path = MANIFEST) -> Manifest:
    """The manifest at ``path`` (empty if there is none)."""
    if not path.is_file():
        return Manifest({}, [])
    data = json.loads(path.read_text())
    calls = {arch: [_kernel(e) for e in entries] for arch, entries in data["calls"].items()}
    return Manifest(calls, [_kernel(e) for e in data["inside"]])


def needed_kernels(archs: Iterable[str], path: Path = MANIFEST) -> list[list[Kernel]]:
    """The manifest's kernels for simulations of ``archs`` (each once, with the longest time
    recorded) that the on-disk cache does not hold yet and the package still has, grouped by
    function (one process should compile all of a function's signatures: Numba rewrites a
    function's cache index whole, and two processes adding to it at once can lose one),
    longest group first; none if the manifest cannot be read (the runs compile what they
    call)."""
    try:
        manifest = load_manifest(path)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        _log.debug("warm-up: manifest %s unreadable: %s", path, exc)
        return []
    found: dict[str, Kernel] = {}
    for arch in archs:
        for k in manifest.calls.get(arch, []):
            if k.key not in found or k.seconds > found[k.key].seconds:
                found[k.key] = k
    groups: dict[tuple[str, str], list[Kernel]] = {}
    for k in found.values():
        try:
            cached = is_cached(k.dispatcher())
        except (ImportError, AttributeError):
            continue
        if not cached:
            groups.setdefault((k.module, k.name), []).append(k)
    return sorted(groups.values(), key=lambda g: -sum(k.seconds for k in g))


def compile_kernels(kernels: Sequence[Kernel]) -> int:
    """Compile each kernel for its signature (loading it if the cache has it meanwhile); one
    that is gone from the package or no longer compiles for those types is skipped. Returns
    how many compiled."""
    done = 0
    for k in kernels:
        try:
            k.dispatcher().compile(decode_types(k.args))
        except Exception as exc:  # a stale entry: the run compiles what it calls itself
            _log.debug("warm-up: %s skipped: %s", k.key, exc)
            continue
        done += 1
    return done


def _row(k: Kernel, seconds: bool) -> list[Any]:
    """One manifest entry as JSON data (what :func:`_kernel` reads), with or without its
    seconds."""
    return [k.module, k.name, list(k.args)] + ([round(k.seconds, 2)] if seconds else [])


def _entry(k: Kernel, seconds: bool) -> str:
    """One manifest entry, one line of JSON."""
    return json.dumps(_row(k, seconds), separators=(",", ":"))


def _record_one(run_json: str) -> str:
    """Run one :class:`~lumoscore.experiments.config.RunConfig` (JSON) and return what it
    compiled, as JSON: ``{"calls": [...], "inside": [...]}``."""
    from lumoscore.experiments.config import RunConfig
    from lumoscore.experiments.runner import run_one

    cfg = RunConfig.model_validate_json(run_json)
    with record_compiles() as log:
        run_one(cfg)
    calls = [_row(k, True) for k in log.calls]
    return json.dumps({"calls": calls, "inside": [_row(k, False) for k in log.inside]})


def _record(out: Path) -> None:
    """Record every architecture of the default experiment in a process of its own with an
    empty kernel cache, and write the manifest to ``out``."""
    from lumoscore.experiments.config import DEFAULT_EXPERIMENT, expand
    from lumoscore.fileio import atomic_write_text

    calls: dict[str, list[Kernel]] = {}
    inside: dict[str, Kernel] = {}
    for cfg in expand(DEFAULT_EXPERIMENT):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            cmd = [sys.executable, "-m", f"{_PACKAGE}.warmup", "--record-one"]
            res = subprocess.run(
                [*cmd, cfg.model_dump_json()], env=env, capture_output=True, text=True, check=True
            )
        data = json.loads(res.stdout.strip().splitlines()[-1])
        calls[cfg.arch] = [_kernel(e) for e in data["calls"]]
        inside.update((k.key, k) for k in map(_kernel, data["inside"]))
        total = sum(k.seconds for k in calls[cfg.arch])
        print(f"{cfg.arch}: {len(calls[cfg.arch])} kernels, {total:.1f} s", flush=True)
    lines = ["{", '"about": "Kernels a simulation calls (lumoscore.warmup); rebuild with: '
             'python -m lumoscore.warmup",', '"calls": {']  # fmt: skip
    for i, (arch, kernels) in enumerate(calls.items()):
        body = ",\n".join(_entry(k, True) for k in kernels)
        lines.append(f'"{arch}": [\n{body}\n]' + ("," if i < len(calls) - 1 else ""))
    lines += ["},", '"inside": [', ",\n".join(_entry(k, False) for k in inside.values()), "]}"]
    atomic_write_text(out, "\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m lumoscore.warmup [--out PATH]``: rebuild the manifest."""
    parser = argparse.ArgumentParser(
        prog="python -m lumoscore.warmup", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=MANIFEST, help="manifest to write")
    parser.add_argument("--record-one", metavar="RUN_JSON", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.record_one:
        print(_record_one(opts.record_one))
    else:
        _record(opts.out)


if __name__ == "__main__":
    main()
