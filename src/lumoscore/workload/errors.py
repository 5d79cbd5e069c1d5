"""Errors of the workload package."""

from __future__ import annotations

from lumoscore.errors import ConfigError

__all__ = ["TraceFormatError"]


class TraceFormatError(ConfigError):
    """A trace file or job list is malformed.

    The message names the place (``line 7`` of a CSV file, ``row 5`` of a Parquet file,
    ``entry 3`` of a job list) and the column; both are also kept as attributes.

    Parameters
    ----------
    message : str
        One-line description, already naming the place and column.
    where : str, optional
        The place, e.g. ``"line 7"``.
    column : str, optional
        The offending column, if any.

    Examples
    --------
    >>> err = TraceFormatError("t.csv: line 3, column gpus: must be >= 1", "line 3", "gpus")
    >>> err.column
    'gpus'
    """

    def __init__(self, message: str, where: str | None = None, column: str | None = None):
        super().__init__(message)
        self.where = where
        self.column = column
