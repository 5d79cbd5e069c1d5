"""Atomic file writes shared by every package: nothing is ever left half written.

A file is written to a temporary file in the target's folder and moved into place with
``os.replace`` only when complete; on any error the temporary file is removed and the target is
left as it was.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from lumoscore.errors import ConfigError

__all__ = [
    "atomic_write",
    "atomic_write_files",
    "atomic_write_text",
    "check_targets",
    "finite_json",
    "json_text",
    "read_text",
]


def read_text(path: str | os.PathLike[str], *, what: str) -> str:
    """The UTF-8 text of ``path``; a file that is not UTF-8 text (e.g. a binary file given by
    mistake) raises a :class:`~lumoscore.errors.ConfigError` naming it and ``what`` was
    expected. Other I/O errors propagate as :class:`OSError`.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.toml"
    >>> _ = p.write_bytes(b"\\xff\\xfe\\x00")
    >>> read_text(p, what="a cluster TOML file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: ...x.toml: not a UTF-8 text file (a cluster TOML file expected)
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not a UTF-8 text file ({what} expected)") from None


def _create_temp(directory: Path, name: str) -> Path:
    """Create an empty file next to the target (permissions follow the umask, unlike
    :func:`tempfile.mkstemp`, whose files are private)."""
    while True:
        tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[Path], None],
    *,
    error: type[Exception] = ConfigError,
) -> Path:
    """Call ``write(tmp)`` on a temporary path next to ``path`` and move it into place.

    If ``write`` raises, the temporary file is removed and ``path`` is left as it was. A
    missing folder, or a folder at ``path``, raises ``error`` (a
    :class:`~lumoscore.errors.ConfigError` by default) naming ``path``; an ``OSError`` on the
    temporary file (a read-only folder, a full disk) names ``path`` too.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = atomic_write(Path(d) / "a.txt", lambda tmp: tmp.write_text("hi"))
    ...     p.read_text()
    'hi'
    """
    target = Path(path)
    with _naming(target):
        tmp = _temp_for(target, error)
    try:
        with _naming(target, tmp):
            write(tmp)
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return target


@contextlib.contextmanager
def _naming(target: Path, tmp: Path | None = None) -> Iterator[None]:
    """Re-raise an ``OSError`` about ``tmp`` (or, without ``tmp``, about a temporary file next
    to ``target``) as one about ``target``: the user named ``target``, never the temporary."""
    try:
        yield
    except OSError as exc:
        name = exc.filename
        ours = name is not None and (
            Path(name) == tmp
            if tmp is not None
            else Path(name).parent == target.parent and str(Path(name).name).startswith(".")
        )
        if not ours or exc.errno is None:
            raise
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None


def _checked_folder(target: Path, error: type[Exception]) -> Path:
    """The folder of ``target``; ``error`` naming ``target`` when that folder is missing or
    ``target`` is a folder."""
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        what = "is a file, not a directory" if directory.exists() else "does not exist"
        raise error(f"{target}: directory {directory} {what}")
    if target.is_dir():
        raise error(f"{target}: is a directory; give a file name")
    return directory


def _temp_for(target: Path, error: type[Exception]) -> Path:
    """An empty temporary file next to ``target``, with the mode of the file it replaces."""
    tmp = _create_temp(_checked_folder(target, error), target.name)
    with contextlib.suppress(OSError):
        # Keep the mode of a file being replaced; new files get 0o666 minus the umask.
        os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
    return tmp


def check_targets(paths: Iterable[Path], *, error: type[Exception] = ConfigError) -> None:
    """Raise ``error`` for the first of ``paths`` that :func:`atomic_write` would refuse (its
    folder missing, or a folder at the path): a command that writes files at its end checks
    them before its work, not after.

    Examples
    --------
    >>> import tempfile
    >>> check_targets([Path(tempfile.mkdtemp()) / "summary.csv"])
    """
    for target in paths:
        _checked_folder(Path(target), error)


def atomic_write_files(
    files: Mapping[Path, str | bytes], *, error: type[Exception] = ConfigError
) -> list[Path]:
    """Write several files together: every target is checked, then every content is written
    to a temporary file, and only then are they all moved into place.

    A folder at one of the paths, a missing folder or a failed write (a full disk) leaves
    every target as it was: an output of several files is never left with some of them new.
    ``str`` contents are written as UTF-8. Returns the paths, in the order given.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "b.txt").mkdir()
    >>> atomic_write_files({d / "a.txt": "A", d / "b.txt": "B"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: .../b.txt: is a directory; give a file name
    >>> (d / "a.txt").exists()
    False
    """
    targets = [Path(p) for p in files]
    check_targets(targets, error=error)
    written: list[tuple[Path, Path]] = []
    try:
        for target, text in zip(targets, files.values(), strict=True):
            with _naming(target):
                tmp = _temp_for(target, error)
            written.append((tmp, target))
            with _naming(target, tmp):
                tmp.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        for tmp, target in written:
            with _naming(target, tmp):
                os.replace(tmp, target)
    except BaseException:
        for tmp, _ in written:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise
    return targets


def atomic_write_text(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write ``text`` (UTF-8, newlines as given) or ``bytes`` to ``path`` atomically."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def finite_json(obj: Any) -> Any:
    """``obj`` (dicts, lists, tuples, numbers, strings) with NumPy scalars as Python numbers
    and every NaN or infinite float as ``None``: standard JSON has no NaN or Infinity, and
    readers such as ``jq`` or a browser's ``JSON.parse`` refuse Python's ``NaN``/``Infinity``
    extension.

    Examples
    --------
    >>> import numpy as np
    >>> finite_json({"mean": float("nan"), "p": [1.5, float("inf")], "n": np.int64(3)})
    {'mean': None, 'p': [1.5, None], 'n': 3}
    """
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_json(v) for v in obj]
    if getattr(obj, "shape", None) == () and hasattr(obj, "item"):
        obj = obj.item()  # a NumPy scalar
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj


def json_text(obj: Any, *, indent: int | None = 2) -> str:
    """Standard JSON for other tools: :func:`finite_json` of ``obj`` (NumPy scalars as Python
    numbers, NaN and infinities as ``null``), a final newline.

    Examples
    --------
    >>> import numpy as np
    >>> json_text({"x": np.float64("nan"), "n": np.int64(2)}, indent=None)
    '{"x": null, "n": 2}\\n'
    """
    return json.dumps(finite_json(obj), indent=indent, allow_nan=False) + "\n"
