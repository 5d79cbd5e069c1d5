"""Registries of plug-ins: a name maps to a callable or class, validated in one place.

Every kind of plug-in (fabrics, routings, queue policies, placers, collectives) has one
:class:`Registry`. Looking up an unknown name raises a
:class:`~lumoscore.errors.ConfigError` that lists the allowed names; there is never a silent
fallback. Adding a plug-in is one definition plus one :meth:`Registry.register` call.

A registry iterates over its names in registration order and supports ``in`` and ``len``,
so it can stand wherever a tuple of allowed names is expected (help texts, validators).

Examples
--------
>>> shapes = Registry("shape")
>>> @shapes.register("square")
... def square(a: float) -> float:
...     return a * a
>>> shapes.register("circle", lambda r: 3.14159 * r * r)
<function <lambda> at ...>
>>> shapes["square"](3.0)
9.0
>>> list(shapes), "circle" in shapes, len(shapes)
(['square', 'circle'], True, 2)
>>> shapes["triangle"]
Traceback (most recent call last):
...
lumoscore.errors.ConfigError: shape 'triangle' unknown; allowed: square, circle
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, overload

from lumoscore.errors import ConfigError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names of one kind of plug-in mapped to their implementations.

    Parameters
    ----------
    kind : str
        What the names name (``"queue policy"``, ``"routing"``, ...): used in error messages.
    """

    __slots__ = ("_entries", "kind")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, obj: T) -> T: ...

    def register(self, name: str, obj: T | None = None) -> T | Callable[[T], T]:
        """Add ``obj`` under ``name`` (or use as a decorator: ``@registry.register(name)``).

        A name may be registered once; registering it again raises
        :class:`~lumoscore.errors.ConfigError`.
        """
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def add(item: T) -> T:
            if name in self._entries:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = item
            return item

        return add if obj is None else add(obj)

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise ConfigError(self.unknown(name)) from None

    def check(self, name: str) -> str:
        """Return ``name`` if it is registered, else raise the error listing the names."""
        self[name]
        return name

    def unknown(self, name: object) -> str:
        """The message for an unknown ``name``: it names the kind and lists the allowed names."""
        return f"{self.kind} {name!r} unknown; allowed: {', '.join(self._entries)}"

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        """``(name, implementation)`` pairs in registration order."""
        return iter(self._entries.items())

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"
