"""Public trace importers: Alibaba PAI 2020, Alibaba GPU 2023, Microsoft Philly.

Small files in each documented layout, written here; the mapping to our job model is checked
value by value, through the library and through ``lumos trace import``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from lumoscore.cli import main
from lumoscore.workload import read_trace
from lumoscore.workload.errors import TraceFormatError
from lumoscore.workload.public_traces import import_public, read_public_jobs

# pai_task_table.csv rows (no header line, as released): job_name, task_name, inst_num, status,
# start_time, end_time, plan_cpu, plan_mem, plan_gpu, gpu_type
PAI_2020 = (
    "jA,worker,4,Terminated,1000,5000,600,29.3,200,V100\n"  # 4 x 2 GPUs
    "jA,ps,1,Terminated,1000,5100,600,29.3,,\n"  # no GPU: ignored for the size
    "jB,worker,1,Terminated,2000,2500,600,29.3,100,T4\n"  # 1 GPU, 500 s: too short
    "jC,tf,3,Failed,3000,9000,600,29.3,50,P100\n"  # 1.5 -> 2 GPUs, failed
    "jD,tf,16,Terminated,4000,40000,600,29.3,100,V100\n"  # 16 GPUs
    "jE,tf,2,Running,4500,,600,29.3,100,V100\n"  # never ended: dropped
)
# openb_pod_list_default.csv (header line as released)
ALI_2023 = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p1,8000,32768,8,1000,V100M32,LS,Succeeded,100,9100,200\n"
    "p2,4000,16384,1,300,T4,BE,Succeeded,150,1200,160\n"
    "p3,16000,65536,2,1000,A10,LS,Failed,300,5300,400\n"
    "p4,1000,4096,0,0,,BE,Succeeded,310,9000,320\n"  # CPU only: dropped
    "p5,8000,32768,4,1000,V100M32,LS,Pending,500,,\n"  # never scheduled: dropped
)
PHILLY = [
    {"jobid": "application_1", "status": "Pass", "submitted_time": "2017-10-03 00:00:00",
     "attempts": [{"start_time": "2017-10-03 00:10:00", "end_time": "2017-10-03 02:10:00",
                   "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]},
                              {"ip": "m2", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]}]},
    {"jobid": "application_2", "status": "Killed", "submitted_time": "2017-10-03 00:30:00",
     "attempts": [{"start_time": "2017-10-03 00:31:00", "end_time": "2017-10-03 03:31:00",
                   "detail": [{"ip": "m3", "gpus": ["gpu0"]}]}]},
    {"jobid": "application_3", "status": "Pass", "submitted_time": "2017-10-03 01:00:00",
     "attempts": [{"start_time": "2017-10-03 01:05:00", "end_time": "2017-10-03 01:20:00",
                   "detail": [{"ip": "m4", "gpus": ["gpu0", "gpu1"]}]},
                  {"start_time": "2017-10-03 01:30:00", "end_time": "2017-10-03 05:05:00",
                   "detail": [{"ip": "m4", "gpus": ["gpu0"] * 16}]}]},
    {"jobid": "application_4", "status": "Failed", "submitted_time": "2017-10-03 01:10:00",
     "attempts": []},
]  # fmt: skip


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {
        "alibaba-2020": tmp_path / "pai_task_table.csv",
        "alibaba-2023": tmp_path / "openb_pod_list_default.csv",
        "philly": tmp_path / "cluster_job_log",
    }
    out["alibaba-2020"].write_text(PAI_2020)
    out["alibaba-2023"].write_text(ALI_2023)
    out["philly"].write_text(json.dumps(PHILLY))
    return out


def test_alibaba_2020_tasks_make_jobs(files: dict[str, Path]) -> None:
    t = read_public_jobs(files["alibaba-2020"], "alibaba-2020")
    assert t["job_id"].tolist() == ["jA", "jB", "jC", "jD"]
    assert t["gpu_num"].tolist() == [8, 1, 2, 16]  # ceil(sum inst_num * plan_gpu / 100)
    assert t["submit_time"].tolist() == [1000.0, 2000.0, 3000.0, 4000.0]
    assert t["duration"].tolist() == [4100.0, 500.0, 6000.0, 36000.0]  # earliest start to last end
    assert t["state"].tolist() == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]
    # the same with a header line
    header = ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,"
              "plan_gpu,gpu_type\n")  # fmt: skip
    files["alibaba-2020"].write_text(header + PAI_2020)
    assert read_public_jobs(files["alibaba-2020"], "alibaba-2020").equals(t)


def test_alibaba_2023_pods_are_jobs(files: dict[str, Path]) -> None:
    t = read_public_jobs(files["alibaba-2023"], "alibaba-2023")
    assert t["job_id"].tolist() == ["p1", "p2", "p3"]
    assert t["gpu_num"].tolist() == [8, 1, 2]
    assert t["submit_time"].tolist() == [100.0, 150.0, 300.0]
    assert t["duration"].tolist() == [8900.0, 1040.0, 4900.0]  # deletion - scheduled
    assert t["state"].tolist() == ["COMPLETED", "COMPLETED", "FAILED"]


def test_philly_last_attempt_sets_the_size(files: dict[str, Path]) -> None:
    t = read_public_jobs(files["philly"], "philly")
    assert t["job_id"].tolist() == ["application_1", "application_2", "application_3"]
    assert t["gpu_num"].tolist() == [8, 1, 16]
    assert np.diff(t["submit_time"]).tolist() == [1800.0, 1800.0]
    assert t["duration"].tolist() == [7200.0, 10800.0, 4 * 3600.0]  # first start to last end
    assert t["state"].tolist() == ["COMPLETED", "CANCELLED", "COMPLETED"]


@pytest.mark.parametrize(
    ("fmt", "gpus", "arrivals"),
    [
        ("alibaba-2020", [8, 16], [0.0, 3000.0]),  # completed, longer than 600 s
        ("alibaba-2023", [8, 8], [0.0, 50.0]),  # completed; 1 GPU -> one server (8)
        ("philly", [8, 16], [0.0, 3600.0]),
    ],
)
def test_import_maps_to_the_job_model(
    files: dict[str, Path], fmt: str, gpus: list[int], arrivals: list[float]
) -> None:
    t = import_public(files[fmt], fmt, seed=3)
    assert t.gpus.tolist() == gpus and t.arrival_s.tolist() == arrivals
    assert t.meta.source.startswith(f"{fmt}:") and np.all(t.gpus == t.tp * t.pp * t.dp)
    everything = import_public(files[fmt], fmt, states=None, min_duration_s=0, seed=3)
    assert len(everything) > len(t)


def test_cli_import_writes_a_trace(files: dict[str, Path], tmp_path: Path) -> None:
    for fmt, path in files.items():
        out = tmp_path / f"{fmt}.csv"
        err = io.StringIO()
        with (
            contextlib.redirect_stderr(err),
            contextlib.redirect_stdout(io.StringIO()),
            pytest.raises(SystemExit) as info,
        ):
            main(["trace", "import", str(path), "--format", fmt, "--out", str(out)])
        assert info.value.code in (0, None), err.getvalue()
        assert len(read_trace(out)) == 2


@pytest.mark.parametrize(
    ("fmt", "text", "needle"),
    [
        ("alibaba-2020", "jA,w,x,Terminated,1,2,3,4,100,V\n", "line 1, column inst_num"),
        ("alibaba-2023", "name,num_gpu\np,1\n", "missing column(s)"),
        ("philly", "{", "not JSON"),
        ("philly", '[{"jobid": 1}]', "entry 0"),
        ("philly", "[]", "no job with an attempt"),
    ],
)
def test_bad_files_name_the_place(tmp_path: Path, fmt: str, text: str, needle: str) -> None:
    f = tmp_path / "in.txt"
    f.write_text(text)
    with pytest.raises(TraceFormatError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        read_public_jobs(f, fmt)


@pytest.mark.filterwarnings("error")  # (no overflow or cast RuntimeWarning)
@pytest.mark.parametrize(
    ("fmt", "old", "new", "message"),
    [
        (
            "alibaba-2020",
            "jC,tf,3,",
            "jC,tf,1e300,",
            "line 4, columns inst_num, plan_gpu: 1e300 instances x 50 % of a GPU; allowed: at "
            "most 1048576 GPUs a task (MAX_GPUS)",
        ),
        (
            "alibaba-2020",
            "29.3,50,P100",
            "29.3,1e300,P100",
            "line 4, columns inst_num, plan_gpu: 3 instances x 1e300 % of a GPU; allowed: at "
            "most 1048576 GPUs a task (MAX_GPUS)",
        ),
        ("alibaba-2020", "jC,tf,3,", "jC,tf,-3,", "line 4, column inst_num: must be >= 0, got -3"),
        (
            "alibaba-2023",
            "p3,16000,65536,2,",
            "p3,16000,65536,1e300,",
            "line 4, column num_gpu: must be from 0 to 1048576 (MAX_GPUS), got 1e300",
        ),
        (
            "alibaba-2023",
            "p3,16000,65536,2,",
            "p3,16000,65536,1e19,",  # (beyond int64)
            "line 4, column num_gpu: must be from 0 to 1048576 (MAX_GPUS), got 1e19",
        ),
    ],
)
def test_counts_beyond_max_gpus_are_refused_by_line(
    files: dict[str, Path], fmt: str, old: str, new: str, message: str
) -> None:
    path = files[fmt]
    path.write_text(path.read_text().replace(old, new))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as info:
        main(["trace", "import", str(path), "--format", fmt, "--out", str(path) + ".out.csv"])
    assert info.value.code == 2
    assert err.getvalue() == f"lumos: error: {path.name}: {message}\n"
    assert not Path(str(path) + ".out.csv").exists()


@pytest.mark.filterwarnings("error")
def test_a_job_whose_tasks_sum_beyond_max_gpus_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "pai_task_table.csv"
    path.write_text("".join(f"jZ,w{i},600000,Terminated,1000,5000,600,29.3,100,V100\n"
                            for i in range(2)))  # fmt: skip
    with pytest.raises(TraceFormatError) as info:
        read_public_jobs(path, "alibaba-2020")
    assert str(info.value) == (
        f"{path.name}: job 'jZ': its tasks ask for 1.2e+06 GPUs (sum of inst_num x plan_gpu "
        "/ 100); allowed: at most 1048576 (MAX_GPUS)"
    )
