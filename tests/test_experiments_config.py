"""Experiment files: validation messages, defaults and grid expansion."""

from __future__ import annotations

import itertools
from pathlib import Path

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.experiments.architectures import PAPER_ARCHITECTURES
from lumoscore.experiments.config import (
    DEFAULT_EXPERIMENT,
    ExperimentConfig,
    RunConfig,
    expand,
    load_experiment,
    run_fields,
)
from lumoscore.fabric.presets import PRESETS
from lumoscore.sim.queueing import QUEUE_POLICIES


def load(tmp_path: Path, text: str) -> ExperimentConfig:
    p = tmp_path / "exp.toml"
    p.write_text(text)
    return load_experiment(p)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    msg = str(info.value)
    assert "\n" not in msg  # one line
    return msg


def test_unknown_architecture_names_the_allowed_ones(tmp_path: Path) -> None:
    msg = error_of(tmp_path, 'gpus = 512\narchitectures = ["best", "clos-foo"]\n')
    assert "arch" in msg and "'clos-foo'" in msg
    assert all(p in msg for p in PRESETS)


def test_negative_load_and_beta(tmp_path: Path) -> None:
    msg = error_of(tmp_path, "gpus = 512\n[trace]\nload = -0.5\n")
    assert "trace.load" in msg and "greater than 0" in msg
    msg = error_of(tmp_path, "gpus = 512\nbeta_s = [100, -1]\n")
    assert "trace.beta_s" in msg and "greater than 0" in msg


@pytest.mark.parametrize(
    ("arch", "gpus", "needle"),
    [
        ("leaf-spine-25.6T", 65536, "cannot hold gpus=65536"),
        ("lumoscore-25.6T-tau1", 65536, "more than the 512 ports of an OCS"),
        ("clos-51.2T-2tier", 262144, "cannot hold gpus=262144"),
    ],
)
def test_cluster_too_big_for_the_chip(tmp_path: Path, arch: str, gpus: int, needle: str) -> None:
    msg = error_of(tmp_path, f'gpus = {gpus}\narchitectures = ["{arch}"]\n')
    assert needle in msg and arch in msg and f"gpus={gpus}" in msg


def test_unknown_keys_are_errors(tmp_path: Path) -> None:
    assert "archs: unknown key" in error_of(tmp_path, 'archs = ["best"]\n')
    assert "trace.job: unknown key" in error_of(tmp_path, "[trace]\njob = 5\n")
    assert "failures.rate: unknown key" in error_of(tmp_path, "[failures]\nrate = 0.1\n")
    msg = error_of(tmp_path, '[sweep]\n"failures.rate" = [0, 1]\n')
    assert "failures.rate_per_gpu_day" in msg  # lists the allowed paths


def test_other_errors_name_field_and_allowed_values(tmp_path: Path) -> None:
    msg = error_of(tmp_path, 'queue = "lifo"\n')
    assert msg.endswith(f"queue: queue policy 'lifo' unknown; allowed: {', '.join(QUEUE_POLICIES)}")
    assert "trace.preset" in error_of(tmp_path, '[trace]\npreset = "helios"\n')
    msg = error_of(tmp_path, '[trace]\nfile = "t.csv"\npreset = "tpuv4"\n')
    assert "trace.preset or trace.file" in msg
    assert "at most one of trace.beta_s and trace.load" in error_of(
        tmp_path, "gpus = 512\n[trace]\nbeta_s = 10\nload = 0.5\n"
    )
    msg = error_of(tmp_path, 'routing = "planned"\narchitectures = ["clos-51.2T-3tier"]\n')
    assert "routing 'planned'" in msg and "ecmp" in msg
    assert "seeds" in error_of(tmp_path, "seeds = 0\n")
    assert "failures.hard_fraction" in error_of(tmp_path, "[failures]\nhard_fraction = 1.5\n")
    assert "'seed': use the top-level key 'seeds'" in error_of(tmp_path, "[sweep]\nseed = [1]\n")
    assert "not valid TOML" in error_of(tmp_path, "gpus = \n")


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("gpus = true", "gpus: expected an integer or a list, got True"),
        ('gpus = "512"', "gpus: expected an integer or a list, got '512'"),
        ("seeds = true", "seeds: expected an integer or a list, got True"),
        ("seeds = [1, true]", "seeds.1: expected an integer, got True"),
        ('eps = "0.1"', "eps: expected a number or a list, got '0.1'"),
        ("jobs = 10.0", "trace.jobs: expected an integer or a list, got 10.0"),
        ("rail_optimized = 1", "rail_optimized: expected true or false, got 1"),
        ("name = 5", "name: expected a string, got 5"),
        ("[failures]\nrate_per_gpu_day = false", "failures.rate_per_gpu_day: expected a number"),
    ],
)
def test_values_of_the_wrong_type_are_not_converted(tmp_path: Path, line: str, needle: str) -> None:
    msg = error_of(tmp_path, f'architectures = ["best"]\n{line}\n')
    assert needle in msg


@pytest.mark.parametrize("name", ["../../elsewhere", "/tmp/abs", "a/b", "..", ".", "a\\\\b"])
def test_the_name_is_one_folder_name(tmp_path: Path, name: str) -> None:
    msg = error_of(tmp_path, f'architectures = ["best"]\nname = "{name}"\n')
    assert "name: a single folder name" in msg and "`output`" in msg
    exp = load(tmp_path, 'architectures = ["best"]\nname = "fig 8 (c), v2.1"\n')
    assert exp.output_dir() == Path("results") / "fig 8 (c), v2.1"


def test_jobs_with_a_trace_file_is_an_error(tmp_path: Path) -> None:
    """A trace file runs its own jobs: a job count beside it would be silently ignored."""
    for text in ('jobs = 3\n[trace]\nfile = "t.csv"\n', '[trace]\nfile = "t.csv"\njobs = 3\n'):
        msg = error_of(tmp_path, 'architectures = ["best"]\n' + text)
        assert "trace.jobs applies to preset traces only" in msg


def test_an_experiment_of_too_many_runs_is_refused_at_once(tmp_path: Path) -> None:
    """A fat-fingered seed count (or sweep) fails in a moment, not after expanding 10^9 runs."""
    assert "seeds: a count of at most 100000 (MAX_RUNS)" in error_of(
        tmp_path, 'architectures = ["best"]\nseeds = 1000000000\n'
    )
    eps = ", ".join(str(i / 100) for i in range(20))
    msg = error_of(tmp_path, f'architectures = ["best"]\nseeds = 6000\neps = [{eps}]\n')
    assert "expands to 120000 runs" in msg and "at most 100000" in msg


def test_a_bare_dotted_architecture_key_is_explained(tmp_path: Path) -> None:
    text = (
        'architectures = ["clos-25.6T-4tier"]\ngpus = 512\n'
        'fabric_options = { clos-25.6T-4tier = { probe_hash = "least-loaded" } }\n'
    )
    msg = error_of(tmp_path, text)
    assert "fabric_options: clos-25.6T-4tier was read as two nested keys" in msg
    assert 'quote the name: "clos-25.6T-4tier"' in msg


def test_integers_are_numbers(tmp_path: Path) -> None:
    exp = load(tmp_path, 'architectures = ["best"]\neps = 0\nbeta_s = 2000\n')
    run = expand(exp)[0]
    assert run.eps == 0.0 and run.trace.beta_s == 2000.0
    assert isinstance(run.trace.beta_s, float)


def test_an_experiment_file_names_what_it_runs(tmp_path: Path) -> None:
    for text in ("", 'name = "x"\ngpus = 512\n'):
        msg = error_of(tmp_path, text)
        assert "names the architectures it runs" in msg and "default.toml" in msg


def test_defaults_and_relative_trace_file(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    exp = load(
        tmp_path,
        'name = "x"\ngpus = 512\narchitectures = ["best"]\n[trace]\nfile = "traces/t.csv"\n',
    )
    assert exp.architectures == ["best"]
    assert exp.output_dir() == Path("results/x")
    assert exp.trace.file == str((tmp_path / "traces" / "t.csv").resolve())
    run = expand(exp)[0]
    assert (run.queue, run.eps, run.seed, run.routing) == ("fifo", 0.0, 1, None)
    assert not run.failures.to_model().enabled


def test_default_experiment() -> None:
    runs = expand(DEFAULT_EXPERIMENT)
    assert [r.arch for r in runs] == list(PAPER_ARCHITECTURES)
    assert {
        (r.gpus, r.trace.preset, r.trace.jobs, r.trace.beta_s, r.seed, r.eps) for r in runs
    } == {(4096, "lumoscore-published", 1000, 2000.0, 1, 0.0)}
    assert {r.exposure for r in runs} == {"research"} and {r.routing for r in runs} == {None}
    path = Path(__file__).parents[1] / "examples" / "experiments" / "default.toml"
    assert load_experiment(path) == DEFAULT_EXPERIMENT


def test_example_sweep_file_loads() -> None:
    path = Path(__file__).parents[1] / "examples" / "experiments" / "sweep-failures.toml"
    exp = load_experiment(path)
    assert "failures.rate_per_gpu_day" in exp.sweep
    assert len(expand(exp)) >= 2


def test_grid_order_and_size() -> None:
    exp = ExperimentConfig(
        name="g",
        gpus=[256, 512],
        architectures=["best", "lumoscore-51.2T-tau2"],
        trace={"jobs": 5, "load": [0.5, 0.9]},
        seeds=[7, 8],
        sweep={"failures.rate_per_gpu_day": [0.0, 0.01], "queue": ["fifo", "backfill"]},
    )
    runs = expand(exp)
    expected = list(
        itertools.product(
            ["best", "lumoscore-51.2T-tau2"],
            [256, 512],
            [0.5, 0.9],
            [0.0, 0.01],
            ["fifo", "backfill"],
            [7, 8],
        )
    )
    got = [
        (r.arch, r.gpus, r.trace.load, r.failures.rate_per_gpu_day, r.queue, r.seed) for r in runs
    ]
    assert got == expected
    assert expand(exp) == runs  # deterministic


def test_routing_sweep_applies_to_best_once() -> None:
    exp = ExperimentConfig(
        gpus=512,
        architectures=["best", "clos-51.2T-3tier"],
        trace={"jobs": 5},
        sweep={"routing": ["ecmp", "source"]},
    )
    got = [(r.arch, r.routing) for r in expand(exp)]
    assert got == [("best", None), ("clos-51.2T-3tier", "ecmp"), ("clos-51.2T-3tier", "source")]
    per_arch = ExperimentConfig(
        gpus=512,
        architectures=["clos-51.2T-3tier", "lumoscore-51.2T-tau2"],
        routing={"clos-51.2T-3tier": "source"},
        trace={"jobs": 5},
    )
    assert [r.routing for r in expand(per_arch)] == ["source", None]


@settings(max_examples=25, deadline=None)
@given(
    path=st.sampled_from([p for p in run_fields() if p not in ("arch", "gpus", "seed")]),
)
def test_every_run_field_is_sweepable(path: str) -> None:
    values = {
        "trace.preset": ["lumoscore-paper", "tpuv4"],
        "trace.jobs": [3, 4],
        "trace.beta_s": [100.0, 200.0],
        "trace.load": [0.5, 0.6],
        "trace.load_basis": ["sample", "expected"],
        "trace.file": None,
        "routing": ["ecmp", "source"],
        "placer": ["server", "locality"],
        "rail_optimized": [False, True],
        "fabric_options": [{}, {"gpus_per_server": 8}],
        "queue": ["fifo", "edf"],
        "eps": [0.0, 0.1],
        "exposure": ["literal", "research"],
        "failures.rate_per_gpu_day": [0.0, 0.5],
        "failures.hard_fraction": [0.1, 0.2],
        "failures.soft_repair_s": [1.0, 2.0],
        "failures.hard_repair_s": [1.0, 2.0],
        "failures.checkpoint_interval_s": [60.0, float("inf")],
        "failures.restart_s": [1.0, 2.0],
        "link_failures.fraction": [0.0, 0.1],
        "link_failures.rate_per_cable_day": [0.0, 0.5],
        "link_failures.repair_s": [60.0, 120.0],
        "link_failures.element": ["leaf-spine", "spine-ocs"],
    }[path]
    if values is None:
        return
    exp = ExperimentConfig(
        gpus=512, architectures=["clos-51.2T-3tier"], trace={"jobs": 2}, sweep={path: values}
    )
    runs = expand(exp)
    got = [r.model_dump() for r in runs]
    for doc, value in zip(got, values, strict=True):
        node = doc
        *parents, leaf = path.split(".")
        for p in parents:
            node = node[p]
        assert node[leaf] == value


def test_placer_table_per_architecture_and_store_keys() -> None:
    from lumoscore.experiments.store import run_key

    exp = ExperimentConfig(
        gpus=512,
        architectures=["best", "vclos"],
        placer={"BEST": "vclos"},
        trace={"jobs": 2},
    )
    assert [(r.arch, r.placer) for r in expand(exp)] == [("best", "vclos"), ("vclos", None)]
    plain = RunConfig(arch="best", gpus=512)
    # an unset placer leaves the key as it was before the field existed
    assert run_key(plain) != run_key(RunConfig(arch="best", gpus=512, placer="vclos"))
    doc = plain.model_dump(mode="python")
    assert doc.pop("placer") is None
    with pytest.raises(pydantic.ValidationError, match="placer"):
        RunConfig(arch="best", gpus=512, placer="nope")


def test_fabric_options_reach_the_fabric_per_architecture_and_keep_old_keys() -> None:
    from lumoscore.experiments.runner import run_one
    from lumoscore.experiments.store import run_key

    exp = ExperimentConfig(
        gpus=32,
        architectures=["vclos", "vclos-leaf-spine"],
        fabric_options={"vclos-leaf-spine": {"gpus_per_server": 4, "spines": 6,
                                              "gpus_per_leaf": 4}},
        trace={"jobs": 4, "preset": "vclos-testbed"},
        exposure="literal",
    )  # fmt: skip
    plain, recmp = expand(exp)
    assert plain.fabric_options == {}
    fabric = recmp.make_fabric()
    assert (fabric.L, fabric.S, fabric.spec.gpus_per_server) == (8, 6, 4)
    assert run_one(recmp).summary["jobs"] == 4
    # empty options leave the key as it was before the field existed
    doc = plain.model_dump(mode="python")
    assert doc.pop("fabric_options") == {}
    assert run_key(plain) != run_key(recmp)
    assert hash(recmp) == hash(recmp.model_copy())
    with pytest.raises(pydantic.ValidationError, match="spinez unknown; allowed: gpus_per_leaf"):
        RunConfig(arch="vclos-leaf-spine", gpus=32, fabric_options={"spinez": 3})
    with pytest.raises(pydantic.ValidationError, match="gpus_per_server=3"):
        RunConfig(arch="vclos", gpus=32, fabric_options={"gpus_per_server": 3})
    with pytest.raises(pydantic.ValidationError, match="fabric_options: 'best' not in"):
        ExperimentConfig(architectures=["vclos"], fabric_options={"best": {}})


def test_run_config_is_hashable_and_frozen() -> None:
    r = RunConfig(arch="best", gpus=256)
    assert hash(r) == hash(RunConfig(arch="BEST", gpus=256))
    with pytest.raises(Exception, match="frozen"):
        r.gpus = 512  # type: ignore[misc]


def test_exposure_is_a_validated_key_defaulting_to_research() -> None:
    from lumoscore.experiments.store import run_key

    research = RunConfig(arch="best", gpus=256)
    literal = RunConfig(arch="best", gpus=256, exposure="literal")
    assert literal.exposure == "literal" and research.exposure == "research"
    assert run_key(research) != run_key(literal)
    with pytest.raises(pydantic.ValidationError, match="exposure model 'x' unknown; allowed"):
        RunConfig(arch="best", gpus=256, exposure="x")
    exp = ExperimentConfig(name="e", gpus=256, architectures=["best"], exposure="literal")
    assert {r.exposure for r in expand(exp)} == {"literal"}


def test_a_top_level_rail_optimized_reaches_every_run() -> None:
    """``rail_optimized`` at the top level (as the docs list it) is every run's; ``false`` is
    the plain wiring, the same runs as leaving it out."""
    archs = ["clos-51.2T-3tier", "lumoscore-51.2T-tau2"]
    on = expand(ExperimentConfig(architectures=archs, rail_optimized=True))
    assert [r.rail_optimized for r in on] == [True, True]
    off = expand(ExperimentConfig(architectures=archs, rail_optimized=False))
    plain = expand(ExperimentConfig(architectures=archs))
    assert [r.canonical() for r in off] == [r.canonical() for r in plain]
    with pytest.raises(ConfigError, match="rail_optimized"):
        expand(ExperimentConfig(architectures=["best"], rail_optimized=True))


def test_relative_trace_files_of_a_sweep_are_beside_the_file(tmp_path: Path, monkeypatch) -> None:
    """``[sweep] "trace.file"`` paths are relative to the experiment file, as ``[trace] file``
    is, wherever ``lumos run`` is started."""
    sub = tmp_path / "exp"
    sub.mkdir()
    row = "job_id,arrival_s,gpus,model,tp,pp,dp,ep,iterations,duration_s\n"
    for name in ("g1.csv", "g2.csv"):
        (sub / name).write_text(row + "0,0.0,16,llama_7b,8,1,2,8,10,100.0\n")
    (sub / "e.toml").write_text(
        'gpus = 512\narchitectures = ["best"]\n[sweep]\n"trace.file" = ["g1.csv", "g2.csv"]\n'
    )
    monkeypatch.chdir(tmp_path)
    runs = expand(load_experiment(sub / "e.toml"))
    assert [r.trace.file for r in runs] == [str((sub / n).resolve()) for n in ("g1.csv", "g2.csv")]
