"""Human-readable violation messages for the decomposition checkers.

The checkers compute boolean violation masks with NumPy; :func:`describe_violations` turns a
mask into at most ``limit`` messages (formatted only for the first offending indices) plus one
summary line counting the rest, so checking a 1024 x 1024 x 128 decomposition never builds
millions of strings.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["MESSAGE_LIMIT", "describe_violations"]

#: Messages listed per kind of violation before the remainder is summarised in one line.
MESSAGE_LIMIT = 10


def describe_violations(
    mask: np.ndarray,
    what: str,
    describe: Callable[[tuple[int, ...]], str],
    *,
    limit: int = MESSAGE_LIMIT,
) -> list[str]:
    """Messages for the ``True`` entries of ``mask`` (row-major order).

    Parameters
    ----------
    mask : numpy.ndarray
        Boolean violation mask.
    what : str
        Plural noun for the summary line, e.g. ``"row-sum violations"``.
    describe : callable
        Maps an index tuple of ``mask`` to one message.
    limit : int
        At most this many individual messages; the rest are counted in a final line.

    Examples
    --------
    >>> describe_violations(np.array([False, True]), "negative entries", lambda ix: f"at {ix}")
    ['at (1,)']
    """
    hits = np.argwhere(mask)
    messages = [describe(tuple(int(v) for v in ix)) for ix in hits[:limit]]
    if len(hits) > limit:
        messages.append(f"... and {len(hits) - limit} more {what}")
    return messages
