"""The ``lumos`` command-line interface.

The app is thin: every sub-command lives in its own module of this package and only parses
arguments, calls the library and prints. A module joins the app by defining
``register(app: typer.Typer) -> None``; :func:`build_app` discovers such modules, so adding a
command never touches this file.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from lumoscore.cli._common import run_guarded

__all__ = ["build_app", "main"]


def build_app() -> typer.Typer:
    """Create the Typer app with every command module of :mod:`lumoscore.cli` registered."""
    app = typer.Typer(
        name="lumos",
        help="LumosCore: size, wire, engineer and simulate OCS-core GPU clusters.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """LumosCore: size, wire, engineer and simulate OCS-core GPU clusters."""

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``lumos`` script."""
    app = build_app()
    code = run_guarded(lambda: app(args=argv, standalone_mode=False, prog_name="lumos"))
    sys.exit(code)
