"""Exception types shared by every LumosCore package.

All errors a user can cause derive from :class:`LumosError`; the CLI turns them into a
one-line message and exit code 2. Algorithms raise the most specific subclass they can so
callers can tell "your input is wrong" from "this instance has no solution".
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InfeasibleError",
    "LumosError",
    "PreconditionError",
    "SolverError",
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
