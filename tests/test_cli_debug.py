"""Errors keep their cause: chained sweep failures, ``lumos --debug`` and ``LUMOS_DEBUG``."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from lumoscore.cli import main
from lumoscore.cli._common import CliState, debug_from_env, run_guarded
from lumoscore.errors import ConfigError
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.runner import SweepError, run_one, run_sweep
from lumoscore.experiments.store import ResultStore
from lumoscore.sim.results import SimResult


def fail_on_seed_2(cfg: RunConfig) -> SimResult:
    """A run function that fails for one config (module level: picklable)."""
    if cfg.seed == 2:
        raise RuntimeError("boom in the worker")
    return run_one(cfg)


def tiny_runs(n: int) -> list[RunConfig]:
    return [
        RunConfig(arch="best", gpus=256, trace={"jobs": 4, "load": 0.7}, seed=s)
        for s in range(1, n + 1)
    ]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def bad_trace_experiment(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An experiment whose run fails: the trace file lacks columns (``lumos run`` checks its
    trace files before the runs; that check is switched off here so the run itself fails)."""
    import lumoscore.experiments.config as config

    monkeypatch.setattr(config, "check_trace_files", lambda runs: None)
    (folder / "bad.csv").write_text("job_id,arrival_s\n0,1\n")
    exp = folder / "exp.toml"
    exp.write_text('gpus = 256\narchitectures = ["best"]\n[trace]\nfile = "bad.csv"\n')
    return exp


# --- the sweep error chains the run's error -------------------------------------------------


def test_inline_failure_is_the_cause_with_its_traceback(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="1 of 2 runs failed") as info:
        run_sweep(
            tiny_runs(2), ResultStore(tmp_path), workers=1, progress=False, run_fn=fail_on_seed_2
        )
    cause = info.value.__cause__
    assert isinstance(cause, RuntimeError) and str(cause) == "boom in the worker"
    text = "".join(traceback.format_exception(info.value))
    assert "fail_on_seed_2" in text and "direct cause" in text


def test_pool_failure_keeps_the_remote_traceback(tmp_path: Path) -> None:
    with pytest.raises(SweepError) as info:
        run_sweep(
            tiny_runs(3), ResultStore(tmp_path), workers=2, progress=False, run_fn=fail_on_seed_2
        )
    cause = info.value.__cause__
    assert isinstance(cause, RuntimeError)
    remote = cause.__cause__
    assert remote is not None and type(remote).__name__ == "_RemoteTraceback"
    assert "fail_on_seed_2" in str(remote)
    text = "".join(traceback.format_exception(info.value))
    assert 'raise RuntimeError("boom in the worker")' in text
    assert text.rstrip().splitlines()[-1].startswith("lumoscore.experiments.runner.SweepError")


def test_dask_failure_keeps_the_worker_traceback(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    with pytest.raises(SweepError) as info:
        run_sweep(
            tiny_runs(2),
            ResultStore(tmp_path),
            executor="dask",
            dask_local=1,
            progress=False,
            run_fn=fail_on_seed_2,
        )
    cause = info.value.__cause__
    assert isinstance(cause, RuntimeError) and cause.__traceback__ is not None
    assert "fail_on_seed_2" in "".join(traceback.format_exception(info.value))


# --- the CLI: one line, or the full traceback with --debug ----------------------------------


def test_failing_run_is_one_line_without_debug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LUMOS_DEBUG", raising=False)
    exp = bad_trace_experiment(tmp_path, monkeypatch)
    code, _, err = run_cli(
        ["run", str(exp), "--out", str(tmp_path / "o"), "--workers", "1", "--no-report"], capsys
    )
    assert code == 2
    assert err.startswith("lumos: error: 1 of 1 runs failed") and err.count("\n") == 1
    assert "Traceback" not in err


def test_failing_run_with_debug_shows_traceback_and_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LUMOS_DEBUG", raising=False)
    exp = bad_trace_experiment(tmp_path, monkeypatch)
    argv = ["run", str(exp), "--out", str(tmp_path / "o"), "--workers", "1", "--no-report"]
    code, _, err = run_cli(["--debug", *argv], capsys)
    assert code == 2
    assert err.startswith("Traceback (most recent call last):")
    assert "The above exception was the direct cause of the following exception" in err
    assert "TraceFormatError" in err and "missing column" in err  # the run's own error
    assert "read_trace" in err  # ... with the frames where it was raised
    lines = err.rstrip("\n").splitlines()
    assert lines[-2].startswith("lumoscore.experiments.runner.SweepError: 1 of 1 runs failed")
    assert lines[-1].startswith("lumos: error: 1 of 1 runs failed")


@pytest.mark.parametrize(
    ("value", "debug"), [("1", True), ("yes", True), ("0", False), ("", False)]
)
def test_debug_env_var(
    value: str,
    debug: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LUMOS_DEBUG", value)
    code, _, err = run_cli(["scale", "--plot", str(tmp_path / "x.gif")], capsys)
    assert code == 2
    assert ("Traceback" in err) is debug
    assert err.splitlines()[-1] == (
        f"lumos: error: plot file {tmp_path / 'x.gif'}: suffix '.gif' is not PNG, SVG or PDF "
        "(allowed: .png, .svg, .pdf)"
    )
    assert ("figure_format" in err) is debug


def test_debug_usage_error_still_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LUMOS_DEBUG", raising=False)
    code, _, err = run_cli(["--debug", "scale", "--chip", "abc"], capsys)
    assert code == 2 and "Traceback" in err
    assert err.splitlines()[-1].startswith("lumos: error: lumos scale: Invalid value for '--chip'")


def test_debug_is_per_invocation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LUMOS_DEBUG", raising=False)
    bad = ["scale", "--plot", str(tmp_path / "x.gif")]
    assert "Traceback" in run_cli(["--debug", *bad], capsys)[2]
    err = run_cli(bad, capsys)[2]
    assert "Traceback" not in err and err.count("\n") == 1


def test_unexpected_error_propagates_with_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug is not an expected error: it is not hidden behind one line, debug or not."""
    import lumoscore.hardware.plot

    def buggy(*args: object, **kwargs: object) -> Path:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(lumoscore.hardware.plot, "plot_scalability", buggy)
    for argv in (["scale", "--plot", "x.png"], ["--debug", "scale", "--plot", "x.png"]):
        with pytest.raises(ZeroDivisionError, match="a bug"):
            main(argv)
    assert capsys.readouterr().err == ""


def test_run_guarded_prints_the_cause_chain(capsys: pytest.CaptureFixture[str]) -> None:
    def fail() -> None:
        try:
            raise KeyError("inner")
        except KeyError as exc:
            raise ConfigError("outer\nsecond line") from exc

    assert run_guarded(fail) == 2
    assert capsys.readouterr().err == "lumos: error: outer second line\n"
    assert run_guarded(fail, CliState(debug=True)) == 2
    err = capsys.readouterr().err
    assert "KeyError: 'inner'" in err and "direct cause" in err
    assert err.endswith("lumos: error: outer second line\n")


def test_debug_from_env_values() -> None:
    assert debug_from_env({"LUMOS_DEBUG": "TRUE"}) is True
    assert debug_from_env({"LUMOS_DEBUG": " off "}) is False
    assert debug_from_env({}) is False


def test_console_script_debug(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LUMOS_DEBUG"}
    cmd = [sys.executable, "-c", "from lumoscore.cli import main; main()"]
    bad = ["scale", "--plot", str(tmp_path / "x.gif")]
    plain = subprocess.run([*cmd, *bad], capture_output=True, text=True, env=env, check=False)
    assert plain.returncode == 2 and plain.stderr.count("\n") == 1
    debug = subprocess.run(
        [*cmd, "--debug", *bad], capture_output=True, text=True, env=env, check=False
    )
    assert debug.returncode == 2
    assert "Traceback (most recent call last)" in debug.stderr
    assert "lumoscore.errors.ConfigError" in debug.stderr
    assert debug.stderr.splitlines()[-1] == plain.stderr.rstrip("\n")


def test_ctrl_c_before_the_command_runs_is_one_line_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while the command modules load (before any command handles it) ends with one
    line and the shell's code for SIGINT, not a traceback."""
    import lumoscore.cli as cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_app", interrupted)
    with pytest.raises(SystemExit) as info:
        cli.main(["run"])
    assert info.value.code == 130
    assert capsys.readouterr().err == "lumos: interrupted\n"
