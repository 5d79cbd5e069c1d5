"""``lumos trace``: generate / import / export / stats, JSON output and exit code 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from lumoscore.cli import main
from lumoscore.workload import (
    generate_trace,
    parse_joblist,
    read_trace,
    workload_level,
    write_joblist,
    write_trace,
)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_generate_csv_and_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("t.csv", "t.parquet"):
        out = tmp_path / name
        code, stdout, _ = run(
            ["trace", "generate", "--preset", "lumoscore-paper", "--jobs", "120", "--seed", "4",
             "--out", str(out)],
            capsys,
        )  # fmt: skip
        assert code == 0 and "wrote 120 jobs" in stdout
        assert read_trace(out) == generate_trace("lumoscore-paper", 120, seed=4)


def test_generate_load_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v.csv"
    code, stdout, _ = run(
        ["trace", "generate", "--preset", "vclos", "--jobs", "300", "--seed", "1", "--load",
         "0.8", "--gpus", "1024", "--out", str(out), "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    data = json.loads(stdout)
    assert data["jobs"] == 300 and data["out"] == str(out)
    assert data["workload_level"] == pytest.approx(0.8)
    assert data["meta"]["preset"] == "vclos" and data["meta"]["cluster_gpus"] == 1024
    assert workload_level(read_trace(out)) == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (
            ["--preset", "nope"],
            r"unknown value 'nope' \(allowed: lumoscore-paper, vclos, tpuv4, vclos-helios, "
            r"vclos-tpuv4, vclos-testbed, lumoscore-published\)",
        ),
        (["--beta", "100", "--load", "0.5"], "exclusive"),
        (["--jobs", "0"], "n_jobs"),
        (["--gpus", "4"], "cluster_gpus"),
        (["--load", "-1"], "load"),
        (["--jobs", "many"], r"--jobs.*integer"),
    ],
)
def test_generate_bad_input_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], pattern: str
) -> None:
    out = tmp_path / "x.csv"
    code, _, err = run(["trace", "generate", *args, "--out", str(out)], capsys)
    assert code == 2
    assert err.startswith("lumos: error: ") and err.count("\n") == 1
    assert re.search(pattern, err)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_generate_bad_suffix_and_missing_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["trace", "generate", "--out", str(tmp_path / "t.txt")], capsys)
    assert code == 2 and "allowed: .csv, .parquet" in err
    code, _, err = run(["trace", "generate"], capsys)
    assert code == 2 and "--out" in err


def test_import_helios_and_joblist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "cluster_log.csv"
    pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "gpu_num": [1, 16, 100, 2],
            "submit_time": [0, 100, 250, 400],
            "duration": [900, 5000, 20000, 100],
            "state": ["COMPLETED", "COMPLETED", "CANCELLED", "COMPLETED"],
        }
    ).to_csv(log, index=False)
    out = tmp_path / "h.parquet"
    code, stdout, _ = run(
        ["trace", "import", str(log), "--format", "helios", "--out", str(out), "--gpus", "64",
         "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert json.loads(stdout)["jobs"] == 2
    t = read_trace(out)
    assert t.gpus.tolist() == [8, 16] and t.meta.cluster_gpus == 64
    code, _, _ = run(
        ["trace", "import", str(log), "--format", "helios", "--states", "", "--min-duration",
         "0", "--gpus", "64", "--load", "0.5", "--out", str(out)],
        capsys,
    )  # fmt: skip
    t = read_trace(out)
    assert code == 0 and len(t) == 4 and t.gpus.max() == 64
    assert workload_level(t) == pytest.approx(0.5)

    jl = write_joblist(generate_trace("tpuv4", 30, seed=2), tmp_path / "jobs.txt")
    code, _, _ = run(["trace", "import", str(jl), "--format", "joblist", "--out",
                      str(tmp_path / "j.csv")], capsys)  # fmt: skip
    assert code == 0
    assert read_trace(tmp_path / "j.csv").same_jobs(parse_joblist(jl.read_text()))


def test_import_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "jobs.txt"
    bad.write_text("[(0, 700, 'Pangu', 16, 10, 8, 1, 1, 8)]")
    out = tmp_path / "o.csv"
    code, _, err = run(["trace", "import", str(bad), "--format", "joblist", "--out", str(out)],
                       capsys)  # fmt: skip
    assert code == 2 and "entry 0, column gpus" in err and not out.exists()
    code, _, err = run(["trace", "import", str(bad), "--format", "slurm", "--out", str(out)],
                       capsys)  # fmt: skip
    assert code == 2 and "allowed: helios, joblist" in err
    code, _, err = run(["trace", "import", str(tmp_path / "none"), "--format", "joblist",
                        "--out", str(out)], capsys)  # fmt: skip
    assert code == 2 and "no such file" in err


def test_export_joblist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = generate_trace("lumoscore-paper", 25, seed=8)
    src = write_trace(t, tmp_path / "t.csv")
    out = tmp_path / "jobs.txt"
    code, _, _ = run(["trace", "export", str(src), "--out", str(out)], capsys)
    assert code == 0 and parse_joblist(out.read_text()).same_jobs(t)


def test_stats_text_json_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = generate_trace("lumoscore-paper", 400, seed=3, load=0.655)
    src = write_trace(t, tmp_path / "t.parquet")
    code, stdout, _ = run(["trace", "stats", str(src)], capsys)
    assert code == 0
    assert "workload level (Eq. 9): 0.6550 on 4096 GPUs (trace)" in stdout
    assert "p99" in stdout and "gpus" in stdout

    plot = tmp_path / "t.png"
    code, stdout, _ = run(
        ["trace", "stats", str(src), "--gpus", "8192", "--plot", str(plot), "--json"], capsys
    )
    assert code == 0
    data = json.loads(stdout)
    assert set(data) >= {
        "jobs", "cluster_gpus", "workload_level", "sizes", "duration_quantiles_s",
        "first_arrival_s", "last_arrival_s", "arrival_span_s", "models", "collectives", "meta",
        "file", "plot",
    }  # fmt: skip
    assert data["jobs"] == 400 and data["cluster_gpus"] == 8192
    assert data["workload_level"] == pytest.approx(0.655 / 2)
    assert sum(row["count"] for row in data["sizes"]) == 400
    assert data["sizes"][-1]["cumulative"] == pytest.approx(1.0)
    assert {row["gpus"] for row in data["sizes"]} <= {8, 16, 32, 64, 128, 256, 512, 1024, 2048}
    q = data["duration_quantiles_s"]
    assert q["min"] <= q["p25"] <= q["p50"] <= q["p75"] <= q["p90"] <= q["p99"] <= q["max"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stats_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,arrival_s\n0,1\n")
    code, _, err = run(["trace", "stats", str(bad), "--json"], capsys)
    assert code == 2 and "column gpus: missing column" in err
    src = write_trace(generate_trace("tpuv4", 10, seed=1), tmp_path / "t.csv")
    code, _, err = run(["trace", "stats", str(src), "--plot", str(tmp_path / "p.gif")], capsys)
    assert code == 2 and "allowed: .png, .svg, .pdf" in err
    assert not (tmp_path / "p.gif").exists()


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("column", ["duration_s", "arrival_s"])
def test_stats_refuses_times_beyond_max_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    src = write_trace(generate_trace("tpuv4", 3, seed=1), tmp_path / "t.csv")
    frame = pd.read_csv(src, dtype=str, keep_default_na=False)
    frame.loc[2, column] = "1e300"  # the last job (arrivals stay in order)
    frame.to_csv(src, index=False)
    code, out, err = run(["trace", "stats", str(src), "--json"], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"lumos: error: {src}: line 4, column {column}: must be at most 1e+12 s (MAX_TIME_S), "
        "got 1e+300\n"
    )
    frame.loc[2, column] = "1e12"  # the limit itself is a valid time
    frame.to_csv(src, index=False)
    code, out, _ = run(["trace", "stats", str(src), "--json"], capsys)
    assert code == 0 and json.loads(out)["duration_quantiles_s"]["max"] <= 1e12


@pytest.mark.filterwarnings("error")
def test_generate_and_import_refuse_arrivals_beyond_max_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.csv"
    head = ["trace", "generate", "--preset", "lumoscore-published", "--jobs", "5", "--gpus", "256"]
    code, _, err = run([*head, "--beta", "1.7e308", "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1
    match = re.fullmatch(
        r"lumos: error: --beta=1\.7e\+308 spreads 5 arrival\(s\) over more than the float "
        r"range, beyond the limit of 1e\+12 s \(MAX_TIME_S\); allowed: 0 < --beta <= (\S+) "
        r"\(for this preset, seed, job count and cluster size\)\n",
        err,
    )
    assert match is not None, err
    beta = float(match.group(1))  # the bound given is allowed, a little more is not
    assert run([*head, "--beta", str(beta), "--out", str(out)], capsys)[0] == 0
    code, _, err = run([*head, "--beta", str(beta * 1.05), "--out", str(out)], capsys)
    assert code == 2 and "allowed: 0 < --beta <=" in err
    for basis in ("sample", "expected"):
        argv = [*head, "--load", "1e-306", "--load-basis", basis, "--out", str(out)]
        code, _, err = run(argv, capsys)
        assert code == 2 and err.count("\n") == 1
        low = re.search(r"allowed: --load >= (\S+) ", err)
        assert low is not None and err.startswith("lumos: error: --load=1e-306 spreads"), err
        argv[argv.index("1e-306")] = low.group(1)
        assert run(argv, capsys)[0] == 0
    log = tmp_path / "cluster_log.csv"
    log.write_text(
        "job_id,gpu_num,submit_time,duration,state\n"
        "a,8,0,1000,COMPLETED\nb,16,50,2000,COMPLETED\nc,8,90,700,COMPLETED\n"
    )
    argv = ["trace", "import", str(log), "--format", "helios", "--gpus", "64", "--out", str(out)]
    code, _, err = run([*argv, "--load", "1e-306"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(
        "lumos: error: --load=1e-306 moves the last arrival past the float range, beyond the "
        "limit of 1e+12 s (MAX_TIME_S); allowed: --load >= "
    ), err
