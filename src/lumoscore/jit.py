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

Wrappers. Numba gives every function it compiles on its own a wrapper for calls from Python
and one for calls from C (a C function pointer, ``@cfunc`` style), each compiled with it (about
0.05-0.1 s). Nothing in the package takes a kernel's C address, so :func:`cached_jit` kernels
are compiled without the C wrapper. Internal kernels (``cached_jit(internal=True)``,
:class:`InternalDispatcher`), those only other kernels call in a run (the sorts of
:mod:`lumoscore.jitsort`, the levels of the fluid model below ``_run``, the helpers of the
routing kernels), go without the Python wrapper too: a caller links the callee's code into its
own and never uses it. Together about 2 s less compilation for the default experiment's
kernels (42 s in one process). An internal kernel called from Python, as tests and
doctests do, runs a twin compiled with the Python wrapper under its own cache name, never the
wrapper-less code.

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
import types
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numba
from numba.core.registry import CPUDispatcher

__all__ = ["InternalDispatcher", "cached_jit", "is_cached", "source_digest"]

_F = TypeVar("_F", bound=Callable[..., Any])
#: The package whose modules the digests follow.
_PACKAGE = __name__.split(".")[0]
_ROOT = Path(__file__).resolve().parent
#: Suffix of the qualified name under which the twin of an internal function is cached.
_TWIN_SUFFIX = "__py"
#: The options that make a function internal (see :class:`InternalDispatcher`).
_NO_WRAPPERS = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
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


class InternalDispatcher(CPUDispatcher):  # type: ignore[misc]
    """A compiled function for other compiled functions: its machine code has no wrapper for
    calls from Python (nor, as no :func:`cached_jit` kernel, one for calls from C), about
    0.05-0.1 s of compilation saved. Called from Python it runs a twin compiled with that
    wrapper (under its own cache name, compiled on that first call): the same results, so a
    test or a doctest may call it as any other kernel. See :func:`cached_jit`
    (``internal=True``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.python_twin()(*args, **kwargs)

    def python_twin(self) -> Any:
        """The twin Python calls run: the same function, compiled with its wrappers (and
        cached, under its own name, when this function is)."""
        twin = self.__dict__.get("_twin")
        if twin is None:
            f = self.py_func
            g = types.FunctionType(
                f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__
            )
            g.__qualname__ = f.__qualname__ + _TWIN_SUFFIX
            g.__module__, g.__doc__, g.__kwdefaults__ = f.__module__, f.__doc__, f.__kwdefaults__
            options = dict(self.targetoptions)
            del options["no_cpython_wrapper"], options["nopython"]
            cache = type(self._cache).__name__ != "NullCache"
            twin = numba.njit(cache=cache, **options)(g)
            self.__dict__["_twin"] = twin
        return twin


def _internal(f: Callable[..., Any], cache: bool, options: dict[str, Any]) -> InternalDispatcher:
    """``f`` compiled as an :class:`InternalDispatcher` (as ``numba.njit`` builds its
    dispatchers, with both wrappers off)."""
    disp = InternalDispatcher(
        py_func=f, locals={}, targetoptions={"nopython": True, **options, **_NO_WRAPPERS}
    )
    if cache:
        disp.enable_caching()
    return disp


def cached_jit(fn_or_signature: Any = None, /, *, internal: bool = False, **options: Any) -> Any:
    """``numba.njit(cache=True, **options)`` whose cache entries follow the source of the
    function's module and of what it imports (see the module). Used bare (``@cached_jit``),
    with options (``@cached_jit(inline="always")``) or with a signature first, compiled when
    the module is imported (``@cached_jit(float64(float64[:]), nogil=True)``).

    ``internal=True`` (no signature): a function that only other compiled functions call in
    a run (:class:`InternalDispatcher`); compiling it skips the wrappers a call from Python
    needs, and a call from Python still works (through a twin compiled for it).
    """
    signature = None if callable(fn_or_signature) else fn_or_signature
    if internal and signature is not None:
        raise TypeError("cached_jit: internal=True takes no signature (compiled on first use)")

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
        if internal:
            return _internal(f, cache, options)
        opts = {"no_cfunc_wrapper": True, **options}
        if signature is None:
            return numba.njit(cache=cache, **opts)(f)
        return numba.njit(signature, cache=cache, **opts)(f)

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
