"""Errors of the topology-engineering (OCS configuration) package.

Every class derives from a shared :mod:`lumoscore.errors` type, so the CLI prints a one-line
message and exits 2.

Examples
--------
>>> from lumoscore.errors import PreconditionError
>>> issubclass(DemandError, PreconditionError)
True
"""

from __future__ import annotations

from lumoscore.errors import PreconditionError

__all__ = ["CurrentConfigError", "DemandError", "WiringMismatchError"]


class DemandError(PreconditionError):
    """A logical topology (demand matrix) is malformed: shape, sign, symmetry, diagonal, ports."""


class CurrentConfigError(PreconditionError):
    """A current OCS configuration does not fit the wiring (bad OCS, port, or duplicate use)."""


class WiringMismatchError(PreconditionError):
    """The chosen solver does not support the wiring (e.g. ``mdmcf`` on Uniform Wiring)."""
