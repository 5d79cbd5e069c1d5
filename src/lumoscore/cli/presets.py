"""``lumos presets``: list the paper presets of ``lumos run --preset NAME``."""

from __future__ import annotations

import typer
from rich.table import Table

from lumoscore.cli._common import JsonOption, emit_json, out_console

__all__ = ["presets", "register"]


def presets(json_out: JsonOption = False) -> None:
    """List the paper presets (name, paper figure, kind, what it runs).

    Run one with `lumos run --preset NAME`; simulation presets run at the paper's scale
    and setup (`--jobs N` for a smaller trace).
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
    console.print(table)
    console.print("simulation presets: 1000 jobs, the paper's setup (--jobs N for fewer); "
                  "details: --json")  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add ``lumos presets`` to the app."""
    app.command("presets")(presets)
