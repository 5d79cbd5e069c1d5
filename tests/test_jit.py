"""Cached kernels never load stale code (lumoscore.jit)."""

from __future__ import annotations

import importlib
import pkgutil
import shutil
import sys
from pathlib import Path

import numba
import pytest

import lumoscore
from lumoscore.jit import InternalDispatcher, cached_jit, source_digest


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)


def test_digest_follows_kernel_modules_only(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "a.py": "import numba\nfrom lumoscore.b import f\nfrom lumoscore.c import g\n",
            "b.py": "import numba\nfrom lumoscore.d import h\n",  # compiles kernels: followed
            "c.py": "from lumoscore.e import k\n",  # plain module: its own text only
            "d.py": "h = 1\n",
            "e.py": "k = 1\n",
        },
    )

    def digest() -> str:
        source_digest.cache_clear()
        return source_digest(tmp_path / "a.py", tmp_path)

    first = digest()
    (tmp_path / "d.py").write_text("h = 2\n")
    second = digest()
    (tmp_path / "e.py").write_text("k = 2\n")
    third = digest()
    (tmp_path / "c.py").write_text("from lumoscore.e import k  # edited\n")
    assert first != second and second == third and third != digest()


def _cached_dispatchers() -> list[numba.core.registry.CPUDispatcher]:
    found = []
    for info in pkgutil.walk_packages(lumoscore.__path__, prefix="lumoscore."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, numba.core.registry.CPUDispatcher)
                and value.__module__ == info.name
                and value._cache.__class__.__name__ != "NullCache"
            ):
                found.append(value)
    return found


def test_every_cached_kernel_is_filed_under_its_source_digest() -> None:
    kernels = _cached_dispatchers()
    assert len(kernels) > 60
    for k in kernels:
        path = Path(importlib.import_module(k.__module__).__file__).resolve()
        assert k.py_func.__qualname__.endswith(f"__src{source_digest(path)}"), (
            k.py_func.__qualname__
        )


@pytest.mark.parametrize(
    ("kernels", "callee"),
    [("sim/kernels.py", "sim/heaps.py"), ("fabric/clos.py", "fabric/hashing.py")],
)
def test_an_edited_callee_module_changes_the_digest(
    tmp_path: Path, kernels: str, callee: str
) -> None:
    """The fluid kernels inline the heap helpers, Clos routing calls the hash kernels: an
    edit there files the callers anew."""
    root = tmp_path / "lumoscore"
    shutil.copytree(
        Path(lumoscore.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__")
    )
    source_digest.cache_clear()
    before = source_digest(root / kernels, root)
    with (root / callee).open("a") as f:
        f.write("\n# edited\n")
    source_digest.cache_clear()
    assert source_digest(root / kernels, root) != before


def test_is_cached_follows_the_on_disk_cache(tmp_path: Path, monkeypatch) -> None:
    """A kernel is cached once a process has compiled it; the runner's first-run note
    (compiling the kernels) keys on it."""
    from lumoscore.jit import is_cached

    (tmp_path / "tinykernel.py").write_text(
        "from lumoscore.jit import cached_jit\n\n\n@cached_jit\ndef twice(x):\n    return 2 * x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("tinykernel")
    assert not is_cached(mod.twice)
    assert mod.twice(3) == 6
    assert is_cached(mod.twice)
    assert not is_cached(mod.twice.py_func)  # not a compiled function


def test_a_package_module_loaded_under_another_name_is_not_cached() -> None:
    """Run as a script (or ``python -m doctest file.py``) a kernel module of the package would
    file code naming the other module in the shared cache, where the package could not load
    it: such a copy compiles without the cache."""
    import importlib.util

    import lumoscore.sim.heaps as heaps

    spec = importlib.util.spec_from_file_location("heaps_alias", heaps.__file__)
    assert spec is not None and spec.loader is not None
    alias = importlib.util.module_from_spec(spec)
    sys.modules["heaps_alias"] = alias
    try:
        spec.loader.exec_module(alias)
    finally:
        del sys.modules["heaps_alias"]
    assert type(alias.heap_set._cache).__name__ == "NullCache"
    assert type(heaps.heap_set._cache).__name__ != "NullCache"


_INTERNAL = """
from lumoscore.jit import cached_jit


@cached_jit(internal=True)
def inner(x):
    return x.sum() + 1.0


@cached_jit
def outer(x):
    return 2.0 * inner(x)
"""

_CALL_BOTH = """
import json, sys
import numpy as np
import tinyinternal as m
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        if f.__module__ == "tinyinternal":
            compiled.append(f.__qualname__)
    def on_end(self, ev):
        pass
with event.install_listener("numba:compile", Count()):
    x = np.arange(4.0)
    out = [float(m.outer(x)), float(m.inner(x)), float(m.inner.py_func(x))]
print(json.dumps([out, type(m.inner).__name__, sorted(compiled)]))
"""


def test_an_internal_kernel_runs_from_compiled_code_and_from_python(tmp_path: Path) -> None:
    """An internal kernel (compiled without the wrappers Python calls need) gives the same
    results called from another kernel and from Python (through its twin, cached under its
    own name: a process never runs wrapper-less code from Python), with an empty cache and
    with the cache filled."""
    import os
    import subprocess

    (tmp_path / "tinyinternal.py").write_text(_INTERNAL)
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    runs = []
    for _ in range(2):
        res = subprocess.run(
            [sys.executable, "-c", _CALL_BOTH], env=env, capture_output=True, text=True
        )
        assert res.returncode == 0, res.stderr  # (a wrapper-less call would crash)
        runs.append(__import__("json").loads(res.stdout.strip().splitlines()[-1]))
    (first, kind, compiled), (again, _, loaded) = runs
    assert first == again == [14.0, 7.0, 7.0]
    assert kind == "InternalDispatcher"
    # outer (inner compiled inside it) and the twin; then both come from the cache
    assert compiled == ["inner", "inner__py", "outer"] and loaded == []
    names = sorted(p.name for p in cache.rglob("*.nbi"))
    assert any("inner" in n and "__py" in n for n in names)  # the twin, on its own
    assert any("inner" in n and "__py" not in n for n in names)


def test_internal_takes_no_signature() -> None:
    with pytest.raises(TypeError, match="internal"):
        cached_jit("float64(float64)", internal=True)


def test_internal_kernels_are_package_dispatchers() -> None:
    """Internal kernels are found as the package's cached kernels (the digest test covers
    them) and Python calls reach their twins."""
    from lumoscore.jitsort import sort

    assert isinstance(sort, InternalDispatcher)
    assert isinstance(sort, numba.core.registry.CPUDispatcher)
    import numpy as np

    assert sort(np.array([3, 1, 2])).tolist() == [1, 2, 3]
