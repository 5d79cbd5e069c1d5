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

__all__ = ["JsonOption", "emit_json", "fail", "run_guarded", "to_jsonable"]

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


def fail(message: str) -> None:
    """Abort the command with a one-line error (exit code 2)."""
    raise LumosError(message)


def _first_line(text: str) -> str:
    return " ".join(text.strip().split())


def _format_validation_error(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "input"
        parts.append(f"{loc}: {err.get('msg', 'invalid value')}")
    return "; ".join(parts)


def run_guarded(call: Callable[[], Any]) -> int:
    """Run a Click/Typer app and map every expected failure to a one-line message, exit 2."""
    try:
        result = call()
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.exceptions.Abort:
        sys.stderr.write("lumos: error: aborted\n")
        return 2
    except click.ClickException as exc:
        sys.stderr.write(f"lumos: error: {_first_line(exc.format_message())}\n")
        return 2
    except pydantic.ValidationError as exc:
        sys.stderr.write(f"lumos: error: {_format_validation_error(exc)}\n")
        return 2
    except (LumosError, OSError) as exc:
        sys.stderr.write(f"lumos: error: {_first_line(str(exc))}\n")
        return 2
    return int(result) if isinstance(result, int) else 0
