"""Exception types shared by every LumosCore package.

All errors a user can cause derive from :class:`LumosError`; the CLI turns them into a
one-line message and exit code 2. Algorithms raise the most specific subclass they can so
callers can tell "your input is wrong" from "this instance has no solution".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pydantic

__all__ = [
    "ConfigError",
    "InfeasibleError",
    "LumosError",
    "PreconditionError",
    "SolverError",
    "format_validation_error",
]


class LumosError(Exception):
    """Base class of every error LumosCore raises on purpose."""


class ConfigError(LumosError, ValueError):
    """A configuration value is invalid; the message names the field and the allowed values."""


class PreconditionError(LumosError, ValueError):
    """An algorithm's input breaks a documented precondition (shape, sign, symmetry, ...)."""


class InfeasibleError(LumosError):
    """The instance is well formed but has no solution (for example a model proved infeasible)."""


class SolverError(LumosError):
    """An external solver failed or timed out without a usable answer."""


#: What each of pydantic's type errors expects, for a field that takes several types.
_EXPECTED = {
    "bool_type": "true or false",
    "dict_type": "a table",
    "float_type": "a number",
    "int_type": "an integer",
    "list_type": "a list",
    "string_type": "a string",
}
#: A union member's tag in an error's location (``gpus.int``, ``seeds.list[int]``).
_UNION_TAG = re.compile(r"^(int|float|str|bool|none|(list|dict|literal)\[.*\])$")


def format_validation_error(exc: pydantic.ValidationError, prefix: str = "") -> str:
    """One line ``field.path: message; ...`` for a pydantic error.

    A value of the wrong type in a field that takes several (``int | list[int]``) gets one
    message listing what the field takes and the value given.

    Examples
    --------
    >>> import pydantic
    >>> class Run(pydantic.BaseModel, extra="forbid", strict=True):
    ...     gpus: int = pydantic.Field(8, ge=8)
    ...     seeds: int | list[int] = 1
    >>> try:
    ...     Run(gpus=4, gpu=1)
    ... except pydantic.ValidationError as exc:
    ...     format_validation_error(exc)
    'gpus: Input should be greater than or equal to 8; gpu: unknown key'
    >>> try:
    ...     Run(seeds=True)
    ... except pydantic.ValidationError as exc:
    ...     format_validation_error(exc)
    'seeds: expected an integer or a list, got True'
    """
    parts: dict[str, list[str]] = {}
    wrong_type: dict[str, tuple[list[str], object]] = {}
    matched: set[str] = set()  # union fields whose value had a member's shape
    for err in exc.errors():
        path = [str(p) for p in err.get("loc", ())]
        tags = [i for i, p in enumerate(path) if _UNION_TAG.match(p)]
        loc = _join(prefix, [p for p in path if not _UNION_TAG.match(p)])
        kind = str(err.get("type", ""))
        if tags and tags[-1] < len(path) - 1:  # inside a member (a list's element)
            matched.add(_join(prefix, [p for p in path[: tags[-1]] if not _UNION_TAG.match(p)]))
        if kind in _EXPECTED:
            alternatives, _ = wrong_type.setdefault(loc, ([], err.get("input")))
            alternatives.append(_EXPECTED[kind])
            parts.setdefault(loc, [])
            continue
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if kind == "extra_forbidden":
            msg = "unknown key"
        parts.setdefault(loc, []).append(msg)
    for loc, (alternatives, given) in wrong_type.items():
        if loc not in matched:
            names = list(dict.fromkeys(alternatives))
            allowed = (
                " or ".join(names)
                if len(names) < 3
                else (", ".join(names[:-1]) + ", or " + names[-1])
            )
            parts[loc].insert(0, f"expected {allowed}, got {given!r}")
    return "; ".join(
        dict.fromkeys(
            f"{loc}: {msg}" if loc else msg for loc, msgs in parts.items() for msg in msgs
        )
    )


def _join(prefix: str, path: list[str]) -> str:
    loc = ".".join(path)
    return f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
