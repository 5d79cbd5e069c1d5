"""Helpers shared by the CLI command modules: JSON output, one-line errors, ``--debug``."""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import click
import numpy as np
import pydantic
import typer
from rich.console import Console

from lumoscore.errors import LumosError, format_validation_error
from lumoscore.fileio import json_text

__all__ = [
    "DEBUG_ENV",
    "CliState",
    "JsonOption",
    "debug_from_env",
    "emit_json",
    "folder_path",
    "run_guarded",
    "to_jsonable",
    "varying_columns",
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def folder_path(value: str) -> Path:
    """Parser of an output-folder option: an empty value (often an unset shell variable, as in
    ``--out "$DIR"``) is refused rather than read as the working folder.

    Examples
    --------
    >>> folder_path("results/x")
    PosixPath('results/x')
    """
    if not value:
        raise typer.BadParameter("an empty path; give a folder ('.' for the working folder)")
    return Path(value)


#: Environment variable that turns ``--debug`` on (any value but empty, 0, false, no, off).
DEBUG_ENV = "LUMOS_DEBUG"


@dataclasses.dataclass
class CliState:
    """Options of one ``lumos`` invocation that apply to every command.

    :func:`lumoscore.cli.main` creates one per call and hands it to the app as the Click
    context object (``ctx.obj``); the root callback records the global options in it and
    :func:`run_guarded` reads them when an error comes out.

    Attributes
    ----------
    debug : bool
        On an error, print the full traceback (with its causes) before the one-line message.
    """

    debug: bool = False


def debug_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether :data:`DEBUG_ENV` asks for ``--debug``.

    Examples
    --------
    >>> debug_from_env({"LUMOS_DEBUG": "1"}), debug_from_env({"LUMOS_DEBUG": "0"})
    (True, False)
    >>> debug_from_env({})
    False
    """
    env = os.environ if environ is None else environ
    value = env.get(DEBUG_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, pydantic models, NumPy scalars/arrays and paths to JSON types."""
    if isinstance(obj, pydantic.BaseModel):
        return to_jsonable(obj.model_dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj


#: Width of the tables printed when standard output is not a terminal (a pipe or a file):
#: wide enough that no column is cut.
PIPE_WIDTH = 400


def out_console() -> Console:
    """The console for a command's results: the terminal's width on a terminal, else
    :data:`PIPE_WIDTH` columns so that piped tables are whole (not cut at 80)."""
    return Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)


def table_console() -> Console:
    """:func:`out_console` for wide tables: at least 160 columns when not on a terminal."""
    console = out_console()
    return console if console.is_terminal else Console(width=max(console.width, 160))


def varying_columns(rows: Sequence[Mapping[str, Any]], skip: Sequence[str] = ()) -> list[str]:
    """``arch``, ``gpus`` and every other column of ``rows`` (flattened run configs) whose
    value differs between them, but ``seed`` and ``skip``: what tells the runs apart.

    Examples
    --------
    >>> rows = [{"arch": "best", "gpus": 8, "eps": e, "queue": "fifo", "seed": 1} for e in (0, 1)]
    >>> varying_columns(rows)
    ['arch', 'gpus', 'eps']
    """
    fixed = ("arch", "gpus", "seed", *skip)
    first = rows[0] if rows else {}
    return ["arch", "gpus"] + [
        c for c in first if c not in fixed and len({repr(r[c]) for r in rows}) > 1
    ]


def emit_json(obj: Any) -> None:
    """Write ``obj`` as indented standard JSON to stdout (NaN and infinities as ``null``)."""
    sys.stdout.write(json_text(to_jsonable(obj)))


def _first_line(text: str) -> str:
    return " ".join(text.strip().split())


def _usage_message(exc: Exception) -> str:
    fmt = getattr(exc, "format_message", None)
    text = fmt() if callable(fmt) else str(exc)
    ctx = getattr(exc, "ctx", None)
    cmd = getattr(ctx, "command_path", None)
    msg = _first_line(text)
    return f"{cmd}: {msg}" if cmd else msg


def _os_message(exc: OSError) -> str:
    """``FILE: reason`` without the ``[Errno N]`` prefix (e.g. ``out.csv: file exists``).

    Examples
    --------
    >>> _os_message(FileExistsError(17, "File exists", "valid.csv"))
    'valid.csv: file exists'
    """
    reason = exc.strerror or _first_line(str(exc))
    reason = reason[:1].lower() + reason[1:]
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


# Typer >= 0.26 vendors its own copy of Click; older releases use Click itself. Catch both.
_EXIT = tuple({typer.Exit, click.exceptions.Exit})
_ABORT = tuple({typer.Abort, click.exceptions.Abort})
_USAGE = tuple({click.ClickException, getattr(typer, "TyperException", click.ClickException)})


def _fail(message: str, exc: BaseException, state: CliState | None) -> int:
    """Report an expected error: the traceback first under ``--debug``, then one line; exit 2."""
    if state is not None and state.debug:
        sys.stderr.write("".join(traceback.format_exception(exc)))
    sys.stderr.write(f"lumos: error: {message}\n")
    return 2


def run_guarded(call: Callable[[], Any], state: CliState | None = None) -> int:
    """Run a Click/Typer app and map every expected failure to a one-line message, exit 2.

    Expected failures are usage errors, invalid input (:class:`pydantic.ValidationError`),
    :class:`~lumoscore.errors.LumosError` and :class:`OSError`. With ``state.debug`` the full
    traceback, with the chain of causes (for a failed sweep run, the worker's traceback), is
    printed before the message. Any other exception is a bug and propagates with its
    traceback, with or without ``--debug``.

    Parameters
    ----------
    call : callable
        Runs the app; its integer result is the exit code.
    state : CliState, optional
        The invocation's global options, read after ``call`` returns or raises.

    Returns
    -------
    int
        The exit code: the app's, or 2 for an expected failure.
    """
    try:
        result = call()
    except _EXIT as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    except _ABORT as exc:
        return _fail("aborted", exc, state)
    except _USAGE as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            return 0  # the help text was printed: that is the answer
        return _fail(_usage_message(exc), exc, state)
    except pydantic.ValidationError as exc:
        return _fail(format_validation_error(exc), exc, state)
    except LumosError as exc:
        return _fail(_first_line(str(exc)), exc, state)
    except OSError as exc:
        return _fail(_os_message(exc), exc, state)
    return int(result) if isinstance(result, int) else 0
