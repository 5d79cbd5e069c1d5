"""ResultStore: keys, atomic complete-or-absent runs, the index, deterministic files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import lumoscore.experiments.store as store_mod
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.runner import run_one
from lumoscore.experiments.store import ResultStore, StoreError, flatten, run_key
from lumoscore.sim.results import SimResult


def tiny(arch: str = "best", seed: int = 1, **kw: object) -> RunConfig:
    return RunConfig(arch=arch, gpus=256, trace={"jobs": 12}, seed=seed, **kw)


@pytest.fixture(scope="module")
def result() -> SimResult:
    return run_one(tiny())


def test_key_is_stable_and_depends_on_every_field() -> None:
    base = tiny()
    assert run_key(base) == run_key(tiny()) == run_key(RunConfig.model_validate(base.model_dump()))
    variants = [
        tiny(seed=2),
        tiny(arch="lumoscore-51.2T-tau2"),
        tiny(queue="backfill"),
        tiny(eps=0.01),
        tiny(failures={"restart_s": 10.0}),
        RunConfig(arch="best", gpus=512, trace={"jobs": 12}, seed=1),
        RunConfig(arch="best", gpus=256, trace={"jobs": 12, "load": 0.7}, seed=1),
    ]
    keys = {run_key(v) for v in variants} | {run_key(base)}
    assert len(keys) == len(variants) + 1
    assert all(len(k) == 16 and int(k, 16) >= 0 for k in keys)


def test_key_covers_trace_file_content(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("a\n")
    cfg = RunConfig(arch="best", gpus=256, trace={"file": str(f)})
    k1 = run_key(cfg)
    f.write_text("b\n")
    assert run_key(cfg) != k1


def test_key_covers_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run after any change to LumosCore's source is a new run (never a stale result)."""
    cfg = tiny()
    k1 = run_key(cfg)
    assert store_mod.code_digest() == store_mod.code_digest()  # (cached, same source)
    monkeypatch.setattr(store_mod, "code_digest", lambda: "0123456789abcdef")
    assert run_key(cfg) != k1


def test_code_digest_follows_every_source_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest reads every ``.py`` file of the package: an edit to one changes it."""
    pkg = tmp_path / "lumoscore"
    (pkg / "sim").mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = 1\n")
    (pkg / "sim" / "engine.py").write_text("y = 2\n")
    (pkg / "notes.txt").write_text("not code\n")
    monkeypatch.setattr(store_mod.lumoscore, "__file__", str(pkg / "__init__.py"))

    def digest() -> str:
        store_mod.code_digest.cache_clear()
        return store_mod.code_digest()

    try:
        d1 = digest()
        (pkg / "notes.txt").write_text("still not code\n")
        assert digest() == d1
        (pkg / "sim" / "engine.py").write_text("y = 3\n")
        assert digest() != d1
    finally:
        store_mod.code_digest.cache_clear()


def test_a_run_of_other_code_is_replaced(
    tmp_path: Path, result: SimResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing a run whose config is already stored under another key (other code) removes
    the old run: the folder, its index and its reports hold one result per run config."""
    store = ResultStore(tmp_path / "store")
    cfg, other = tiny(), tiny(seed=2)
    old_key = store.put(store.key(cfg), cfg, result)
    other_key = store.put(store.key(other), other, result)
    monkeypatch.setattr(store_mod, "code_digest", lambda: "0123456789abcdef")
    new_key = store.key(cfg)
    assert new_key != old_key and not store.has(new_key)
    store.put(new_key, cfg, result)
    assert store.keys() == sorted([new_key, other_key])
    assert not (tmp_path / "store" / "runs" / old_key).exists()
    assert sorted(store.index()["key"]) == sorted([new_key, other_key])
    assert sorted(pd.read_parquet(tmp_path / "store" / "index.parquet")["key"]) == sorted(
        [new_key, other_key]
    )
    assert store.info(new_key)["lumoscore_code"] == "0123456789abcdef"


def test_put_then_read_back(tmp_path: Path, result: SimResult) -> None:
    store = ResultStore(tmp_path / "store")
    cfg = tiny()
    key = store.key(cfg)
    assert not store.has(key)
    assert store.put(key, cfg, result) == key
    assert store.has(key) and store.keys() == [key]
    pd.testing.assert_frame_equal(store.jobs(key), result.jobs)
    pd.testing.assert_frame_equal(store.queue(key), result.queue)
    info = store.info(key)
    assert RunConfig.model_validate(info["config"]) == cfg
    assert info["summary"]["mean_jct_s"] == pytest.approx(result.summary["mean_jct_s"])
    assert info["fabric"]["fabric"] == "best"
    idx = store.index()
    assert len(idx) == 1
    row = idx.iloc[0]
    assert (row["key"], row["arch"], row["gpus"], row["seed"]) == (key, "best", 256, 1)
    assert row["trace.jobs"] == 12 and row["failures.rate_per_gpu_day"] == 0.0
    assert row["mean_jct_s"] == pytest.approx(result.summary["mean_jct_s"])
    # the index files on disk say the same
    on_disk = pd.read_parquet(tmp_path / "store" / "index.parquet")
    assert on_disk["key"].tolist() == [key]
    assert pd.read_csv(tmp_path / "store" / "index.csv")["key"].tolist() == [key]


def test_missing_run_is_a_clear_error(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    with pytest.raises(StoreError, match="no complete run"):
        store.jobs("0123456789abcdef")
    with pytest.raises(StoreError, match="no complete run"):
        store.info("0123456789abcdef")
    assert store.index().empty and "mean_jct_s" in store.index().columns


def test_crash_before_run_json_leaves_no_complete_run(
    tmp_path: Path, result: SimResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultStore(tmp_path)
    done = tiny(seed=5)
    store.put(store.key(done), done, result)
    real = store_mod.atomic_write_text

    def crash_on_run_json(path: object, text: str | bytes) -> Path:
        if Path(str(path)).name == "run.json":
            raise KeyboardInterrupt  # killed between the Parquet files and run.json
        return real(path, text)  # type: ignore[arg-type]

    monkeypatch.setattr(store_mod, "atomic_write_text", crash_on_run_json)
    cfg = tiny()
    key = store.key(cfg)
    with pytest.raises(KeyboardInterrupt):
        store.put(key, cfg, result)
    monkeypatch.undo()
    assert not store.has(key)
    assert (store.run_dir(key) / "jobs.parquet").is_file()  # written, but not complete
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))
    fresh = ResultStore(tmp_path)
    assert fresh.index()["key"].tolist() == [store.key(done)]
    # resuming writes the run over the partial folder
    fresh.put(key, cfg, result)
    assert fresh.has(key) and len(fresh.index()) == 2


def test_index_is_rebuilt_from_run_json(tmp_path: Path, result: SimResult) -> None:
    store = ResultStore(tmp_path)
    cfgs = [tiny(seed=s) for s in (3, 1, 2)]
    for c in cfgs:
        store.put(store.key(c), c, result)
    (tmp_path / "index.parquet").unlink()
    (tmp_path / "index.csv").unlink()
    idx = ResultStore(tmp_path).index()
    assert idx["seed"].tolist() == [1, 2, 3]  # sorted by arch, gpus, seed
    assert set(idx["key"]) == {run_key(c) for c in cfgs}


def test_same_seed_gives_identical_files(tmp_path: Path) -> None:
    cfg = tiny(arch="lumoscore-51.2T-tau2")
    a, b = ResultStore(tmp_path / "a"), ResultStore(tmp_path / "b")
    key = a.put(a.key(cfg), cfg, run_one(cfg))
    b.put(b.key(cfg), cfg, run_one(cfg))
    for name in ("jobs.parquet", "queue.parquet"):
        assert (a.run_dir(key) / name).read_bytes() == (b.run_dir(key) / name).read_bytes()
    ia, ib = json.loads((a.run_dir(key) / "run.json").read_text()), b.info(key)
    assert ia["config"] == ib["config"] and ia["fabric"] == ib["fabric"]
    strip = {"wall_s"}
    assert {k: v for k, v in ia["summary"].items() if k not in strip} == {
        k: v for k, v in ib["summary"].items() if k not in strip
    }
    # a different seed gives a different trace, hence different files
    other = tiny(arch="lumoscore-51.2T-tau2", seed=2)
    k2 = a.put(a.key(other), other, run_one(other))
    assert (a.run_dir(k2) / "jobs.parquet").read_bytes() != (
        a.run_dir(key) / "jobs.parquet"
    ).read_bytes()


def test_flatten_round_trips_config_paths() -> None:
    flat = flatten(tiny().model_dump())
    assert {"arch", "gpus", "seed", "trace.load", "failures.rate_per_gpu_day"} <= set(flat)


def test_index_keeps_extra_summary_scalars(tmp_path: Path, result: SimResult) -> None:
    extra = SimResult(
        result.jobs,
        {**result.summary, "restarts": 3, "lost_s": 12.5, "note": "text"},
        result.queue,
        result.fabric,
        result.stats,
    )
    store = ResultStore(tmp_path)
    cfg = tiny()
    store.put(store.key(cfg), cfg, extra)
    idx = store.index()
    assert idx.loc[0, "restarts"] == 3 and idx.loc[0, "lost_s"] == 12.5
    assert "note" not in idx.columns and "eps" in idx.columns  # eps: the config's
    assert list(idx.columns)[-1] == "wall_s"


def test_a_damaged_run_is_detected_and_only_it_is_run_again(tmp_path: Path) -> None:
    """Checksums recorded at write time catch a truncated data file; `lumos report` refuses
    the store with a clear message; `lumos run` reruns the damaged run only."""
    import contextlib
    import io

    from lumoscore.cli import main

    exp = tmp_path / "e.toml"
    exp.write_text('name = "e"\ngpus = 256\narchitectures = ["best", "clos-51.2T-3tier"]\n'
                   "[trace]\njobs = 6\n")  # fmt: skip
    out = tmp_path / "out"

    def lumos(*argv: str) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                main(list(argv))
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
        return code, err.getvalue()

    assert lumos("run", str(exp), "--out", str(out), "--workers", "1")[0] == 0
    store = ResultStore(out)
    keys = store.keys()
    assert len(keys) == 2 and not store.damaged()
    victim, other = keys
    (store.run_dir(victim) / "jobs.parquet").write_bytes(b"")  # truncated to 0 bytes
    other_before = (store.run_dir(other) / "run.json").read_bytes()
    assert store.damaged() == {victim: "jobs.parquet does not match its checksum"}

    code, err = lumos("report", str(out))
    assert code == 2 and "1 damaged run(s)" in err and victim in err and len(err.splitlines()) == 1

    code, err = lumos("run", str(exp), "--out", str(out), "--workers", "1")
    assert code == 0 and f"stored run {victim}" in err and "damaged" in err
    assert not store.damaged()
    assert (store.run_dir(other) / "run.json").read_bytes() == other_before  # untouched
    assert len(pd.read_parquet(store.run_dir(victim) / "jobs.parquet")) == 6
