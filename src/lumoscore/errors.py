"""Exception types shared by every LumosCore package.

All errors a user can cause derive from :class:`LumosError`; the CLI turns them into a
one-line message and exit code 2. Algorithms raise the most specific subclass they can so
callers can tell "your input is wrong" from "this instance has no solution".
"""

from __future__ import annotations

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


def format_validation_error(exc: pydantic.ValidationError, prefix: str = "") -> str:
    """One line ``field.path: message; ...`` for a pydantic error.

    Examples
    --------
    >>> import pydantic
    >>> class Run(pydantic.BaseModel, extra="forbid"):
    ...     gpus: int = pydantic.Field(8, ge=8)
    >>> try:
    ...     Run(gpus=4, gpu=1)
    ... except pydantic.ValidationError as exc:
    ...     format_validation_error(exc)
    'gpus: Input should be greater than or equal to 8; gpu: unknown key'
    """
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        loc = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = "unknown key"
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(dict.fromkeys(parts))
