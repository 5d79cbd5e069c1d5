"""Compiled kernels whose on-disk cache never goes stale: :func:`cached_jit`.

Numba's cache (``numba.njit(cache=True)``) keys a compiled function on its module file's time
stamp and size only. A kernel that calls or inlines a kernel of another module keeps its cached
machine code when only that other module changes, and runs the old code without a word.
:func:`cached_jit` is ``numba.njit(cache=True)`` with one difference: the qualified name under
which Numba files the function ends with a digest of its module's source and of every LumosCore
module it imports, followed through the modules that compile kernels themselves
(:func:`source_digest`). An edit to any of them gives new cache entries; old ones are never
loaded again.

A module of the package loaded under another name (run as a script, or by ``python -m
doctest`` on its file) compiles its kernels without the cache: Numba would file them where the
package's own go, naming a module the package cannot import.

Where the cache lives is Numba's choice: beside the sources (``__pycache__``) when that folder is
writable (an editable install, a virtual environment), else the user's cache folder (for
example ``~/.cache/numba`` for a system-wide install), or ``NUMBA_CACHE_DIR`` when it is set.

Examples
--------
>>> from lumoscore.sim.heaps import heap_set
>>> heap_set.py_func.__qualname__.startswith("heap_set__src")
True
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numba

__all__ = ["cached_jit", "is_cached", "source_digest"]

_F = TypeVar("_F", bound=Callable[..., Any])
#: The package whose modules the digests follow.
_PACKAGE = __name__.split(".")[0]
_ROOT = Path(__file__).resolve().parent
#: ``from lumoscore.x.y import ...`` and ``import lumoscore.x.y``.
_IMPORT = re.compile(rb"^\s*(?:from|import)\s+(" + _PACKAGE.encode() + rb"(?:\.\w+)*)", re.M)


def _module_file(root: Path, module: str) -> Path | None:
    """The source file of ``module`` (dotted, from the package) under the package ``root``."""
    parts = module.split(".")[1:]
    for path in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


@cache
def source_digest(path: Path, root: Path = _ROOT) -> str:
    """A digest of the source file ``path`` and of every module of the package at ``root``
    that it imports; the imports of an imported module are followed when it compiles kernels
    itself (its source mentions ``numba``), so a change anywhere in the code a kernel can
    call or inline changes the digest.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "a.py").write_text("import numba\\nfrom lumoscore.b import f\\n")
    >>> _ = (d / "b.py").write_text("f = 1\\n")
    >>> before = source_digest(d / "a.py", d)
    >>> _ = (d / "b.py").write_text("f = 2\\n")
    >>> source_digest.cache_clear()
    >>> source_digest(d / "a.py", d) != before
    True
    """
    digest = hashlib.sha256()
    seen: set[Path] = set()
    todo = [Path(path)]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        text = p.read_bytes()
        digest.update(str(p.relative_to(root) if p.is_relative_to(root) else p.name).encode())
        digest.update(text)
        if p == Path(path) or b"numba" in text:
            for name in _IMPORT.findall(text):
                found = _module_file(root, name.decode())
                if found is not None:
                    todo.append(found)
    return digest.hexdigest()[:12]


def cached_jit(fn_or_signature: Any = None, /, **options: Any) -> Any:
    """``numba.njit(cache=True, **options)`` whose cache entries follow the source of the
    function's module and of what it imports (see the module). Used bare (``@cached_jit``),
    with options (``@cached_jit(inline="always")``) or with a signature first, compiled when
    the module is imported (``@cached_jit(float64(float64[:]), nogil=True)``)."""
    signature = None if callable(fn_or_signature) else fn_or_signature

    def wrap(f: _F) -> Any:
        module = sys.modules.get(f.__module__)
        source = getattr(module, "__file__", None)
        cache = True
        if source is not None and Path(source).resolve().is_relative_to(_ROOT):
            f.__qualname__ += f"__src{source_digest(Path(source).resolve())}"
            # a module of the package run under another name (a script, ``python -m
            # doctest file.py``) would file code that names that module where the package
            # looks for its own, and the package could not load it: compiled, not cached
            cache = f.__module__.startswith(_PACKAGE + ".")
        if signature is None:
            return numba.njit(cache=cache, **options)(f)
        return numba.njit(signature, cache=cache, **options)(f)

    return wrap(fn_or_signature) if callable(fn_or_signature) else wrap


def is_cached(dispatcher: Any) -> bool:
    """Whether Numba's on-disk cache holds compiled code of ``dispatcher`` (a compiled
    function with ``cache=True``) for some signature, i.e. its cache index exists; a process
    that calls it then loads instead of compiling (for a signature the cache holds).

    Examples
    --------
    >>> import numba
    >>> is_cached(numba.njit(lambda x: x))  # no on-disk cache at all
    False
    """
    cache = getattr(dispatcher, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    return index is not None and Path(index).is_file()
