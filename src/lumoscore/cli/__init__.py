"""The ``lumos`` command-line interface.

The app is thin: every sub-command lives in its own module of this package and only parses
arguments, calls the library and prints. A module joins the app by defining
``register(app: typer.Typer) -> None``; :func:`build_app` discovers such modules, so adding a
command never touches this file.

Errors a user can fix print one line (``lumos: error: ...``) and exit with code 2. The global
option ``lumos --debug COMMAND ...`` (or the environment variable ``LUMOS_DEBUG=1``) prints the
full traceback, with the chain of causes, before that line. Ctrl-C ends any command with
``lumos: interrupted`` (or its own line, e.g. how to resume a sweep) and exit code 130.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import inspect
import os
import pkgutil
import sys
import threading
from typing import Annotated

import typer

from lumoscore.cli._common import DEBUG_ENV, CliState, debug_from_env, run_guarded

__all__ = ["build_app", "main", "script"]


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
    def _root(
        ctx: typer.Context,
        debug: Annotated[
            bool,
            typer.Option(
                "--debug",
                help=f"On an error, also print the full traceback (or set {DEBUG_ENV}=1).",
            ),
        ] = False,
    ) -> None:
        """LumosCore: size, wire, engineer and simulate OCS-core GPU clusters."""
        if debug:
            ctx.ensure_object(CliState).debug = True

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)
    _reflow_help(app)
    return app


def reflow(text: str) -> str:
    r"""Help text with each paragraph on one line, so that the help formatter wraps it to the
    terminal instead of keeping the docstring's own line breaks mid-sentence.

    Examples
    --------
    >>> reflow("First line\n    continues.\n\n    Second paragraph.")
    'First line continues.\n\nSecond paragraph.'
    """
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _reflow_help(app: typer.Typer) -> None:
    """Reflow the help of every command of ``app`` and of its sub-apps (see :func:`reflow`)."""
    for cmd in app.registered_commands:
        doc = cmd.help or (cmd.callback.__doc__ if cmd.callback else None)
        if doc:
            cmd.help = reflow(doc)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``lumos`` script: run the app, exit with its code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    """
    state = CliState(debug=debug_from_env())
    try:
        app = build_app()
        code = run_guarded(
            lambda: app(args=argv, standalone_mode=False, prog_name="lumos", obj=state), state
        )
    except KeyboardInterrupt:  # (Ctrl-C before a command's own handling, e.g. at import)
        if state.debug:
            raise
        sys.stderr.write("lumos: interrupted\n")
        code = 130
    sys.exit(code)


def script(argv: list[str] | None = None) -> None:
    """The ``lumos`` console script: :func:`main`, then an exit without the interpreter's
    teardown.

    When the command has returned, its files are written and closed; the exit handlers
    (:mod:`atexit`: worker pools, temporary folders, logging) run, the standard streams are
    flushed, and the process ends there, as ``mypy`` ends its runs: Python's teardown would
    then free every module and object one at a time, about 0.4 s once a run has loaded NumPy,
    pandas, Numba and the kernels. While some other non-daemon thread still runs (none of the
    package's commands leaves one) the exit is the ordinary one, which waits for it. A bug's
    exception propagates with its traceback, as from :func:`main`.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    """
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code
    else:  # (main always exits)
        code = 0
    if not isinstance(code, int):  # (sys.exit's rule: None is 0, anything else printed, 1)
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (``lumos ... | head``)
            stream.flush()
    os._exit(code)
