"""Saving matplotlib figures: atomically, and byte-for-byte reproducibly.

Every figure writer of the package (reports, paper presets, ``lumos scale --plot``,
``lumos tdm --plot``, ``lumos trace stats --plot``) saves through this module:

- figures are built on :class:`matplotlib.figure.Figure` objects and rendered to memory, never
  through matplotlib's global figure manager, so saving a figure changes no process-wide state
  (backend, open figures);
- the file is written with :func:`lumoscore.fileio.atomic_write_text`: a failed render or
  write leaves no partial file and the previous file, if any, untouched;
- the bytes depend only on the figure: no date, no software or version stamp, fixed SVG ids,
  and a figure whose layout engine moves the axes on every draw (constrained layout) is laid
  out once and then frozen, so saving the same figure twice gives identical files.

Formats: PNG, SVG and PDF, chosen by the file suffix (:func:`figure_format`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lumoscore.errors import ConfigError
from lumoscore.fileio import atomic_write_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DEFAULT_DPI",
    "FIGURE_FORMATS",
    "figure_bytes",
    "figure_format",
    "save_figure",
    "save_figures",
]

#: Formats a figure can be saved as (the file suffix without the dot).
FIGURE_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")

#: Resolution of raster output (PNG) unless a writer asks for another one.
DEFAULT_DPI = 100

#: Deterministic rendering: SVG ids hashed from a fixed salt, text as paths (no font names).
_RC: dict[str, Any] = {
    "svg.hashsalt": "lumoscore-report",
    "svg.fonttype": "path",
    "path.simplify": True,
}

#: Metadata that would change between runs or versions, removed (``None`` drops a key).
_META: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}


def _names(formats: Sequence[str]) -> str:
    upper = [f.upper() for f in formats]
    return upper[0] if len(upper) == 1 else f"{', '.join(upper[:-1])} or {upper[-1]}"


def figure_format(path: str | os.PathLike[str], formats: Sequence[str] = FIGURE_FORMATS) -> str:
    """The format (``"png"``, ``"svg"``, ``"pdf"``) of a figure file, from its suffix.

    Parameters
    ----------
    path : str or path-like
        The figure file; the suffix is matched case-insensitively.
    formats : sequence of str
        The formats the caller accepts (a subset of :data:`FIGURE_FORMATS`).

    Returns
    -------
    str
        The lower-case format name.

    Raises
    ------
    ConfigError
        The suffix is not one of ``formats``; the message lists the allowed suffixes.

    Examples
    --------
    >>> figure_format("out/fig7.SVG")
    'svg'
    >>> figure_format("fig7.gif")
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: plot file fig7.gif: suffix '.gif' is not PNG, SVG or PDF \
(allowed: .png, .svg, .pdf)
    """
    target = Path(path)
    fmt = target.suffix.lower()[1:]
    if fmt not in formats or fmt not in FIGURE_FORMATS:
        allowed = ", ".join(f".{f}" for f in formats)
        shown = repr(target.suffix) if target.suffix else "(none)"
        raise ConfigError(
            f"plot file {target}: suffix {shown} is not {_names(formats)} (allowed: {allowed})"
        )
    return fmt


def figure_bytes(fig: Figure, fmt: str, *, dpi: float = DEFAULT_DPI) -> bytes:
    """The figure rendered as ``png``, ``svg`` or ``pdf`` bytes, reproducibly.

    The same figure (or the same figure built again, in this or another process) gives the
    same bytes: no dates or software stamps, fixed SVG ids. A figure with a layout engine is
    laid out once and its axes positions are frozen (the engine is switched off).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    fmt : {"png", "svg", "pdf"}
        The output format.
    dpi : float
        Resolution of raster output.

    Returns
    -------
    bytes
        The file contents.

    Raises
    ------
    ConfigError
        ``fmt`` is not a supported format.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(2, 2), layout="constrained")
    >>> _ = fig.subplots().plot([0, 1], [1, 0])
    >>> figure_bytes(fig, "svg") == figure_bytes(fig, "svg")
    True
    >>> figure_bytes(fig, "png")[:4]
    b'\\x89PNG'
    """
    import matplotlib

    if fmt not in _META:
        raise ConfigError(f"figure format {fmt!r} unknown; allowed: {', '.join(FIGURE_FORMATS)}")
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        if fig.get_layout_engine() is not None:
            # Constrained layout moves the axes by rounding noise on every draw, and SVG clip
            # ids hash the exact positions: lay out once, then freeze the positions.
            fig.draw_without_rendering()
            fig.set_layout_engine("none")
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=_META[fmt])
    return buf.getvalue()


def save_figure(
    fig: Figure,
    path: str | os.PathLike[str],
    *,
    dpi: float = DEFAULT_DPI,
    formats: Sequence[str] = FIGURE_FORMATS,
) -> Path:
    """Write ``fig`` to ``path`` atomically, in the format of its suffix.

    The figure is rendered to memory first (:func:`figure_bytes`), so a failing render leaves
    the disk untouched; the file is then written atomically. The folder must exist.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or path-like
        The file to write; its suffix picks the format (:func:`figure_format`).
    dpi : float
        Resolution of raster output.
    formats : sequence of str
        The suffixes (without dot) the caller accepts.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ConfigError
        The suffix is not allowed, or the folder does not exist.

    Examples
    --------
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(2, 2))
    >>> _ = fig.subplots().plot([0, 1], [1, 0])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = save_figure(fig, Path(d) / "line.svg")
    ...     out.read_bytes() == figure_bytes(fig, "svg")
    True
    """
    fmt = figure_format(path, formats)
    return atomic_write_text(path, figure_bytes(fig, fmt, dpi=dpi))


def save_figures(
    fig: Figure,
    out_dir: str | os.PathLike[str],
    stem: str,
    *,
    formats: Sequence[str] = ("png", "svg"),
    dpi: float = DEFAULT_DPI,
) -> tuple[Path, ...]:
    """Write ``<stem>.<fmt>`` into ``out_dir`` for every format of ``formats``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    out_dir : str or path-like
        An existing folder.
    stem : str
        File name without suffix.
    formats : sequence of str
        Formats to write, in order (default PNG and SVG).
    dpi : float
        Resolution of raster output.

    Returns
    -------
    tuple of pathlib.Path
        The files written, in the order of ``formats``.

    Examples
    --------
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(2, 2))
    >>> _ = fig.subplots().plot([0, 1], [1, 0])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in save_figures(fig, d, "line")]
    ['line.png', 'line.svg']
    """
    out = Path(out_dir)
    return tuple(save_figure(fig, out / f"{stem}.{fmt}", dpi=dpi) for fmt in formats)
