"""Bad input never gives a traceback: one line on stderr, exit 2, no file left behind.

Every parser gets random bytes and mutated valid files (hypothesis); the listed cases of
absurd sizes, malformed addresses, empty inputs and I/O errors get their own checks. All run
in-process through ``lumoscore.cli.main``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lumoscore.cli import main
from lumoscore.limits import MAX_GPUS, MAX_JOBS

#: (file suffix, command before the file argument, options after it)
PARSERS: list[tuple[str, list[str], list[str]]] = [
    (".csv", ["trace", "stats"], []),
    (".parquet", ["trace", "stats"], []),
    (".csv", ["simulate", "--arch", "best", "--gpus", "64", "--trace"], []),
    (".toml", ["wire"], []),
    (".toml", ["toe"], []),
    (".csv", ["toe", "CLUSTER"], []),
    (".npy", ["toe", "CLUSTER"], []),
    (".toml", ["run"], ["--dry-run"]),
    (".toml", ["tdm"], []),
    (".txt", ["trace", "import"], ["--format", "helios", "--out", "OUT.csv"]),
    (".txt", ["trace", "import"], ["--format", "joblist", "--out", "OUT.csv"]),
    (".csv", ["trace", "import"], ["--format", "alibaba-2020", "--out", "OUT.csv"]),
    (".csv", ["trace", "import"], ["--format", "alibaba-2023", "--out", "OUT.csv"]),
    (".json", ["trace", "import"], ["--format", "philly", "--out", "OUT.csv"]),
]

VALID = {
    ".csv": "job_id,arrival_s,gpus,model,tp,pp,dp,ep,iterations,duration_s\n"
    "0,0.0,16,llama_7b,8,1,2,8,10,100.0\n",
    ".toml": 'gpus = 64\narchitectures = ["best"]\n[trace]\njobs = 3\n',
    ".txt": "[(0.0, 100.0, 'llama_7b', 16, 10, 8, 1, 2, 8)]\n",
    ".parquet": "",
    ".npy": "",
    ".json": '[{"jobid": "a", "status": "Pass", "submitted_time": "2017-10-03 00:00:00", '
    '"attempts": [{"start_time": "2017-10-03 00:10:00", "end_time": "2017-10-03 02:10:00", '
    '"detail": [{"ip": "m1", "gpus": ["g0", "g1"]}]}]}]',
}

CLUSTER = Path(__file__).parents[1] / "examples" / "cluster-small.toml"


def _args(head: list[str], f: Path, tail: list[str], folder: Path) -> list[str]:
    """The command line: placeholders replaced (a valid cluster, an output in ``folder``)."""
    head = [str(CLUSTER) if a == "CLUSTER" else a for a in head]
    tail = [str(folder / a) if a == "OUT.csv" else a for a in tail]
    return [*head, str(f), *tail]


#: The repository's example files.
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TRACE50 = EXAMPLES / "traces" / "lumoscore-paper-50.csv"


def invoke(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("lumos: error: "), err
    for leak in ("Traceback", "Errno", " object at 0x", "Warning"):
        assert leak not in err, err


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@settings(
    max_examples=160, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(min_size=1, max_size=300), which=st.integers(0, len(PARSERS) - 1))
def test_random_bytes_get_one_line(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, which: int
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    suffix, head, tail = PARSERS[which]
    f = folder / f"input{suffix}"
    f.write_bytes(data)
    code, _, err = invoke(_args(head, f, tail, folder))
    if code == 0:  # (random bytes that happen to be a valid input are fine)
        return
    assert_one_line_error(code, err)
    assert files_in(folder) == {f.name}  # nothing half written


@settings(
    max_examples=160, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    which=st.sampled_from([i for i, p in enumerate(PARSERS) if p[0] not in (".parquet", ".npy")]),
    cut=st.integers(0, 200),
    junk=st.sampled_from(["", "\x00", "9" * 40, "-1e308", "nan", "[", "\ufffd", ",,,,"]),
)
def test_mutated_valid_files_get_one_line_or_a_result(
    tmp_path_factory: pytest.TempPathFactory, which: int, cut: int, junk: str
) -> None:
    folder = tmp_path_factory.mktemp("mut")
    suffix, head, tail = PARSERS[which]
    text = VALID[suffix]
    cut = min(cut, len(text))
    f = folder / f"input{suffix}"
    f.write_text(text[:cut] + junk + text[cut:], encoding="utf-8")
    code, _, err = invoke(_args(head, f, tail, folder))
    if code != 0:
        assert_one_line_error(code, err)


def _simulate_512(arch: str, option: str) -> list[str]:
    """``lumos simulate`` of 5 jobs on 512 GPUs of ``arch`` with one ``--option``."""
    head = "simulate --gpus 512 --preset lumoscore-paper --jobs 5 --option"
    return [*head.split(), option, "--arch", arch]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["simulate", "--gpus", "1000000000", "--preset", "lumoscore-paper"], f"{MAX_GPUS} GPUs"),
        (["run", "--gpus", "1000000000", "--dry-run"], str(MAX_GPUS)),
        (["trace", "generate", "--jobs", "1000000000", "--out", "t.csv"], f"{MAX_JOBS} jobs"),
        (["run", "--scheduler", "notaurl", "--jobs", "5"], "SCHEME://HOST:PORT"),
        (["run", "--scheduler", "tcp://host", "--jobs", "5"], "SCHEME://HOST:PORT"),
        (["tdm"], "give a configuration FILE or --preset NAME"),
        (["report", "."], "no finished runs"),
        (["trace", "export", "nope.csv", "--out", "x.txt"], "no such trace file"),
        (["trace", "generate", "--preset", "nope", "--jobs", "3", "--out", "t.csv"], "allowed"),
        (["scale", "--gpus", "0"], "--gpus"),
        (["scale", "--chip", "1e308"], "at most 65536"),
        (["scale", "--port", "1e-300"], "at most 65536"),
        (["presets", "--nope"], "No such option"),
        (["simulate", "--arch", "torus", "--preset", "lumoscore-paper"], "unknown fabric"),
        (["simulate", "--preset", "lumoscore-paper", "--routing", "teleport"], "routing"),
        (["simulate", "--preset", "lumoscore-paper", "--exposure", "x"], "exposure"),
        (["run", "--exposure", "x", "--dry-run"], "exposure"),
        (["simulate", "--preset", "vclos-testbed", "--option", "spines"], "KEY=VALUE"),
        (
            [
                "simulate",
                "--arch",
                "vclos-leaf-spine",
                "--gpus",
                "32",
                "--preset",
                "vclos-testbed",
                "--option",
                "spinez=4",
            ],
            "spinez unknown; allowed: gpus_per_leaf",
        ),
        (["simulate", "--preset", "vclos-testbed", "--placer", "nope"], "allowed: server"),
        (["te", str(EXAMPLES / "cluster.toml"), "missing.npy"], "missing.npy: no such traffic"),
        (["te", "nope.toml", "t.npy"], "nope.toml"),
        (["tdm", str(EXAMPLES / "tdm-small.toml"), "--seed", "-1"], "--seed"),
        (["trace", "import", str(CLUSTER), "--format", "helios", "--seed", "-1"], "--seed"),
        (["run", "--preset", "testbed-static", "--gpus", "512"], "no cluster sizes"),
        (["trace", "import", str(CLUSTER), "--format", "helios", "--gpus", "0"], "'--gpus'"),
        (["trace", "import", ".", "--format", "helios", "--out", "t.csv"], "is a directory"),
        (
            ["trace", "import", str(CLUSTER), "--format", "helios", "--max-gpus", "99999999999"],
            "'--max-gpus'",
        ),
        (_simulate_512("best", "gpus_per_server=0"), "gpus_per_server=0: must be >= 1"),
        (
            _simulate_512("lumoscore-51.2T-tau2", "reconfig_delay_s=1e300"),
            "reconfig_delay_s must be a number of seconds from 0 to 1e+12",
        ),
        (_simulate_512("lumoscore-51.2T-tau2", "backup=maybe"), "expected bool"),
        (
            _simulate_512("vclos-leaf-spine", "port_gbps=1e-300"),
            "port_gbps: must be a number from 0.001 to 100000 (Gb/s), got 1e-300",
        ),
        (["simulate", "--trace", str(TRACE50), "--jobs", "3"], "--jobs: only with --preset"),
        (
            ["simulate", "--trace", str(TRACE50), "--jobs", "3", "--load", "0.5"],
            "--jobs and --load: only with --preset",
        ),
    ],
)
def test_listed_cases_get_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], needle: str
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke(argv)
    assert_one_line_error(code, err)
    assert needle in err
    assert not files_in(tmp_path)  # no experiment.json, no results folder, no trace
    if argv == ["tdm"]:
        assert "not both" not in err


def test_empty_inputs_are_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "header.csv").write_text(VALID[".csv"].splitlines()[0] + "\n")
    code, _, err = invoke(["simulate", "--arch", "best", "--gpus", "64", "--trace", "header.csv"])
    assert_one_line_error(code, err)
    assert "no jobs" in err
    (tmp_path / "empty.toml").write_text("")
    code, _, err = invoke(["run", "empty.toml"])
    assert_one_line_error(code, err)
    assert "names the architectures it runs" in err
    assert files_in(tmp_path) == {"header.csv", "empty.toml"}


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--out", "", "--dry-run"],
        ["simulate", "--arch", "best", "--gpus", "64", "--preset", "lumoscore-published",
         "--jobs", "2", "--out", ""],
        ["report", "results", "--out", ""],
    ],
)  # fmt: skip
def test_an_empty_output_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """(as ``--out "$DIR"`` with DIR unset: not the working folder)"""
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke(argv)
    assert_one_line_error(code, err)
    assert "'--out': an empty path" in err
    assert not files_in(tmp_path)


def test_os_errors_name_the_file_without_errno(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.csv"
    folder.mkdir()
    code, _, err = invoke(["trace", "stats", str(folder)])
    assert_one_line_error(code, err)
    assert str(folder) in err


def test_a_job_that_can_never_fit_is_an_error_or_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = VALID[".csv"] + "1,1.0,128,llama_7b,8,1,16,8,10,100.0\n"
    (tmp_path / "big.csv").write_text(rows)
    argv = ["simulate", "--arch", "best", "--gpus", "64", "--trace", "big.csv"]
    code, _, err = invoke(argv)
    assert_one_line_error(code, err)
    assert "job 1 (128 GPUs)" in err and "--skip-oversized" in err
    code, out, err = invoke([*argv, "--skip-oversized", "--json"])
    assert code == 0 and err.startswith("lumos: warning: skipped 1 job(s)")
    assert '"skipped_oversized": 1' in out and '"jobs": 1' in out


def test_lumos_run_checks_its_trace_files_before_it_runs(tmp_path: Path) -> None:
    """A trace file that cannot be read, or with jobs larger than a run's cluster, is one line
    naming the experiment file and the run, before any run starts (no store is made)."""
    exp = tmp_path / "e.toml"
    exp.write_text(f'architectures = ["best"]\ngpus = [64, 4096]\n[trace]\nfile = "{TRACE50}"\n')
    out = tmp_path / "store"
    code, _, err = invoke(["run", str(exp), "--out", str(out), "--workers", "1"])
    assert_one_line_error(code, err)
    assert f"{exp}: run arch=best, gpus=64: trace.file: 27 jobs need more GPUs" in err
    assert "skip-oversized" not in err and not out.exists()
    (tmp_path / "bad.csv").write_text("job_id,arrival_s\n1,abc\n")
    exp.write_text('architectures = ["best"]\ngpus = 64\n[trace]\nfile = "bad.csv"\n')
    code, _, err = invoke(["run", str(exp), "--out", str(out), "--workers", "1"])
    assert_one_line_error(code, err)
    assert "bad.csv: column gpus: missing column" in err and not out.exists()
    code, _, err = invoke(["run", str(exp), "--jobs", "5", "--dry-run"])
    assert_one_line_error(code, err)
    assert "--jobs: only with preset traces" in err


def test_jobs_left_waiting_when_the_run_ends_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cables that never come back leave jobs without a route: the run ends with them
    waiting, and simulate says so (they are not in the means)."""
    monkeypatch.chdir(tmp_path)
    argv = ["simulate", "--arch", "vclos-leaf-spine", "--gpus", "512", "--preset",
            "vclos-helios", "--jobs", "40", "--link-fraction", "0.97", "--json"]  # fmt: skip
    code, out, err = invoke(argv)
    assert code == 0 and err.startswith("lumos: warning: ") and "never finished" in err
    summary = json.loads(out)
    assert summary["unfinished"] > 0 and summary["jobs"] + summary["unfinished"] == 40


def test_a_negative_seed_in_a_tdm_file_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "neg.toml"
    f.write_text("seed = -1\n" + (EXAMPLES / "tdm-small.toml").read_text().replace("seed =", "# "))
    code, _, err = invoke(["tdm", str(f)])
    assert_one_line_error(code, err)
    assert "seed" in err


def test_an_output_path_that_is_a_folder_or_under_a_file_is_named(tmp_path: Path) -> None:
    """A writer's target that is a folder (or whose folder is a file) is reported by the
    path given, not by the temporary file next to it."""
    (tmp_path / "d.json").mkdir()
    (tmp_path / "afile").write_text("x")
    for out, needle in (
        (tmp_path / "d.json", "d.json: is a directory"),
        (tmp_path / "afile" / "x.json", "afile is a file, not a directory"),
    ):
        code, _, err = invoke(["wire", str(CLUSTER), "--out", str(out)])
        assert_one_line_error(code, err)
        assert needle in err and ".tmp" not in err
    assert {p.name for p in (tmp_path / "d.json").iterdir()} == set()


def test_an_output_of_several_files_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """A folder in the way of one of a command's files leaves none of them written (simulate
    --out, report --out), and lumos run refuses it before it simulates anything."""
    sim, rep, store = tmp_path / "sim", tmp_path / "rep", tmp_path / "store"
    (sim / "summary.json").mkdir(parents=True)
    argv = ["simulate", "--gpus", "256", "--preset", "lumoscore-published", "--jobs", "3"]
    code, _, err = invoke([*argv, "--out", str(sim)])
    assert_one_line_error(code, err)
    assert "summary.json: is a directory" in err and files_in(sim) == {"summary.json"}
    exp = tmp_path / "e.toml"
    exp.write_text('architectures = ["best"]\ngpus = 256\njobs = 3\n')
    (store / "summary.csv").mkdir(parents=True)
    code, _, err = invoke(["run", str(exp), "--out", str(store), "--workers", "1"])
    assert_one_line_error(code, err)
    assert "summary.csv: is a directory" in err and files_in(store) == {"summary.csv"}
    (store / "summary.csv").rmdir()
    assert invoke(["run", str(exp), "--out", str(store), "--workers", "1", "--no-report"])[0] == 0
    (rep / "summary.md").mkdir(parents=True)
    code, _, err = invoke(["report", str(store), "--out", str(rep)])
    assert_one_line_error(code, err)
    assert "summary.md: is a directory" in err and files_in(rep) == {"summary.md"}


def test_empty_traffic_files_are_one_line(tmp_path: Path) -> None:
    import numpy as np

    np.save(tmp_path / "none.npy", np.zeros((0, 4, 4)))
    (tmp_path / "empty.csv").write_text("")
    for name, needle in (("none.npy", "no matrix"), ("empty.csv", "shape must be")):
        code, _, err = invoke(["te", str(EXAMPLES / "cluster.toml"), str(tmp_path / name)])
        assert_one_line_error(code, err)
        assert needle in err


def test_a_bad_value_in_a_tdm_file_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text("[network]\nports_per_pod = 0\n")
    code, _, err = invoke(["tdm", str(f)])
    assert_one_line_error(code, err)
    assert f"{f}: network.ports_per_pod" in err


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [("--load", "1e-306", "allowed: --load >= 1.06e-08"), ("--beta", "1.7e308", "0 < --beta <=")],
)
def test_simulate_arrivals_beyond_max_time_name_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, value: str, allowed: str
) -> None:
    monkeypatch.chdir(tmp_path)
    head = "simulate --preset lumoscore-published --gpus 256 --jobs 5"
    code, out, err = invoke([*head.split(), option, value])
    assert_one_line_error(code, err)
    assert f"lumos: error: {option}={float(value)!r} spreads 5 arrival(s) over more than" in err
    assert "beyond the limit of 1e+12 s (MAX_TIME_S)" in err and allowed in err
    assert out == "" and not files_in(tmp_path)
