"""``lumos presets``: list the paper presets of ``lumos run --preset NAME``."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console

__all__ = ["presets", "register"]


def presets(json_out: JsonOption = False) -> None:
    """List the paper presets (name, paper figure, kind, what it runs).

    Run one with `lumos run --preset NAME`; simulation presets are scaled down by default
    (`--jobs 1000` reproduces the paper's scale).
    """
    from lumoscore.experiments.presets import PAPER_PRESETS

    if json_out:
        emit_json([p.summary() for p in PAPER_PRESETS.values()])
        return
    table = Table(title="Paper presets (lumos run --preset NAME)")
    for col in ("preset", "paper", "kind", "description"):
        table.add_column(col, no_wrap=col != "description")
    for p in PAPER_PRESETS.values():
        table.add_row(p.name, p.paper, p.kind, p.title)
    console = out_console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 140))
    console.print(table)
    console.print("full scale: simulation presets with --jobs 1000; details: --json")


def register(app: typer.Typer) -> None:
    """Add ``lumos presets`` to the app."""
    app.command("presets")(presets)
