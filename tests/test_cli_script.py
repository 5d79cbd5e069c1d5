"""The ``lumos`` console script (:func:`lumoscore.cli.script`): the exit codes, output and exit
handlers of :func:`lumoscore.cli.main`, without the interpreter's teardown."""

from __future__ import annotations

import os
import subprocess
import sys

ENV = {k: v for k, v in os.environ.items() if k != "LUMOS_DEBUG"}


def _run(prelude: str, *args: str, entry: str = "script") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nfrom lumoscore.cli import {entry}\n{entry}()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV, check=False
    )


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    return _run("", *args, entry="main")


def test_script_prints_and_exits_as_main() -> None:
    fast, slow = _run("", "presets"), _main("presets")
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout and "fig8c" in fast.stdout
    bad = ["simulate", "--arch", "nope", "--preset", "lumoscore-published"]
    fast, slow = _run("", *bad), _main(*bad)
    assert fast.returncode == slow.returncode == 2
    assert fast.stderr == slow.stderr and fast.stderr.startswith("lumos: error: ")


def test_script_runs_exit_handlers_last() -> None:
    prelude = "import atexit\natexit.register(lambda: print('handler ran', flush=True))"
    done = _run(prelude, "presets")
    assert done.returncode == 0
    assert done.stdout.endswith("handler ran\n")


def test_script_waits_for_a_running_thread() -> None:
    # (the thread ends only once the main thread has: a fast exit would cut it off, whatever
    # the machine's speed)
    prelude = (
        "import threading\n"
        "main = threading.main_thread()\n"
        "threading.Thread(target=lambda: (main.join(), print('thread done'))).start()"
    )
    done = _run(prelude, "presets")
    assert done.returncode == 0
    assert done.stdout.endswith("thread done\n")
