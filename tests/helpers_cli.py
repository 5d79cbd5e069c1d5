"""Helper shared by the command-line tests: run ``lumos`` in-process.

A plain module imported as ``from helpers_cli import run`` (``tests/`` has no
``__init__.py``, so pytest's default ``prepend`` import mode puts it on ``sys.path``).
"""

from __future__ import annotations

import pytest

from lumoscore.cli import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``lumos ARGS`` in-process: its exit code, stdout and stderr."""
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return int(exc.value.code), out, err
