"""Helpers shared by the CLI command modules: JSON output and one-line errors."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import click
import numpy as np
import pydantic
import typer

from lumoscore.errors import LumosError

__all__ = ["JsonOption", "emit_json", "run_guarded", "to_jsonable"]

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


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


def emit_json(obj: Any) -> None:
    """Write ``obj`` as indented JSON to stdout."""
    json.dump(to_jsonable(obj), sys.stdout, indent=2)
    sys.stdout.write("\n")


def _first_line(text: str) -> str:
    return " ".join(text.strip().split())


def _usage_message(exc: Exception) -> str:
    fmt = getattr(exc, "format_message", None)
    text = fmt() if callable(fmt) else str(exc)
    ctx = getattr(exc, "ctx", None)
    cmd = getattr(ctx, "command_path", None)
    msg = _first_line(text)
    return f"{cmd}: {msg}" if cmd else msg


def _format_validation_error(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "input"
        parts.append(f"{loc}: {err.get('msg', 'invalid value')}")
    return "; ".join(parts)


# Typer >= 0.26 vendors its own copy of Click; older releases use Click itself. Catch both.
_EXIT = tuple({typer.Exit, click.exceptions.Exit})
_ABORT = tuple({typer.Abort, click.exceptions.Abort})
_USAGE = tuple({click.ClickException, getattr(typer, "TyperException", click.ClickException)})


def run_guarded(call: Callable[[], Any]) -> int:
    """Run a Click/Typer app and map every expected failure to a one-line message, exit 2."""
    try:
        result = call()
    except _EXIT as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    except _ABORT:
        sys.stderr.write("lumos: error: aborted\n")
        return 2
    except _USAGE as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            return 0  # the help text was printed: that is the answer
        sys.stderr.write(f"lumos: error: {_usage_message(exc)}\n")
        return 2
    except pydantic.ValidationError as exc:
        sys.stderr.write(f"lumos: error: {_format_validation_error(exc)}\n")
        return 2
    except (LumosError, OSError) as exc:
        sys.stderr.write(f"lumos: error: {_first_line(str(exc))}\n")
        return 2
    return int(result) if isinstance(result, int) else 0
