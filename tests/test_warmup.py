"""The kernel manifest and the warm-up it drives (lumoscore.warmup)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba import types

from lumoscore import warmup
from lumoscore.experiments.config import DEFAULT_EXPERIMENT, expand
from lumoscore.jit import InternalDispatcher, cached_jit
from lumoscore.warmup import (
    Kernel,
    compile_kernels,
    decode_types,
    encode_types,
    load_manifest,
    needed_kernels,
    record_compiles,
)

SCALARS = [types.int64, types.uint64, types.int32, types.float64, types.float32, types.boolean]
ARRAYS = [types.Array(d, n, lay, readonly=ro) for d in SCALARS for n in (1, 2, 3)
          for lay in ("C", "A") for ro in (False, True)]  # fmt: skip


def _types() -> st.SearchStrategy[types.Type]:
    leaf = st.sampled_from([*SCALARS, *ARRAYS])
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(types.UniTuple, inner, st.integers(1, 4)),
            st.lists(inner, min_size=2, max_size=4).map(types.Tuple),
        ),
        max_leaves=8,
    )


@given(st.lists(_types(), max_size=5))
def test_types_round_trip_through_json(sig: list[types.Type]) -> None:
    data = json.loads(json.dumps(encode_types(sig)))
    assert decode_types(data) == tuple(sig)


def test_literal_recorded_as_its_type_and_others_refused() -> None:
    assert decode_types(encode_types([types.IntegerLiteral(3)])) == (types.int64,)
    with pytest.raises(TypeError, match="complex128"):
        encode_types([types.complex128])
    with pytest.raises(TypeError, match="cannot be recorded"):
        encode_types([types.List(types.int64)])


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    """What ``python -c code args...`` prints (in a process of its own: a kernel cache of
    its own when ``env`` sets ``NUMBA_CACHE_DIR``)."""
    cmd = [sys.executable, "-c", code, *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout


@cached_jit
def _twice(x):  # pragma: no cover - compiled
    return 2 * x


def test_compile_kernels_compiles_the_signature_and_skips_stale_entries() -> None:
    sig = encode_types([types.float64[::1]])
    here = __name__
    stale = [
        Kernel("lumoscore.no_such_module", "f", sig),
        Kernel(here, "no_such_function", sig),
        Kernel(here, "_twice", encode_types([types.Tuple([types.int64, types.float64[::1]])])),
    ]
    assert compile_kernels([*stale, Kernel(here, "_twice", sig)]) == 1
    assert (types.float64[::1],) in _twice.signatures


def test_record_compiles_sees_calls_from_python_not_other_packages() -> None:
    @cached_jit
    def inner(x):  # pragma: no cover - compiled
        return x + 1

    @cached_jit
    def outer(x):  # pragma: no cover - compiled
        return inner(x) * 2

    with record_compiles() as log:
        outer(np.arange(3))
        np.sort(np.arange(3))
    # a function defined in a test is not the package's: nothing recorded
    assert log.calls == [] and log.inside == []


@cached_jit
def _fresh(x):  # pragma: no cover - compiled
    return x + 1


@cached_jit
def _thrice(x):  # pragma: no cover - compiled
    return 3 * x


def test_needed_kernels_lists_what_the_cache_lacks_longest_first(tmp_path, monkeypatch) -> None:
    here = __name__
    sig = encode_types([types.int64])
    monkeypatch.setattr(warmup, "is_cached", lambda disp: disp is _twice)
    m = tmp_path / "kernels.json"
    entry = [here, "_fresh", list(sig)]
    m.write_text(json.dumps({
        "calls": {
            "a": [[here, "_twice", list(sig), 9.0], [*entry, 1.0], [here, "gone", list(sig), 5.0]],
            "b": [[*entry, 2.0], [here, "_fresh", [["float64", 1, "C"]], 3.0]],
            "c": [[here, "_fresh", ["bool"], 7.0]],
            "d": [[here, "_thrice", list(sig), 11.0]],
            "e": [[here, "_thrice", list(sig), 13.0]],
        },
        "inside": [],
    }))  # fmt: skip
    got = [[(k.args, k.seconds) for k in g] for g in needed_kernels(["a", "b", "x"], m)]
    assert got == [[(tuple(sig), 2.0), ((["float64", 1, "C"],), 3.0)]]  # one function
    got = [[k.name for k in g] for g in needed_kernels(["a", "b", "c", "d"], m)]
    assert got == [["_fresh"] * 3, ["_thrice"]]  # 12 s before 11 s
    got = [[k.name for k in g] for g in needed_kernels(["a", "b", "c", "e"], m)]
    assert got == [["_thrice"], ["_fresh"] * 3]
    assert needed_kernels(["a"], tmp_path / "none.json") == []
    for bad in ("{", '{"calls": {"a": [[1]]}, "inside": []}', "[]"):
        m.write_text(bad)
        assert needed_kernels(["a"], m) == []


_RECORD = """
import json, numpy as np
from lumoscore.sim.solo import any_marked
from lumoscore.warmup import record_compiles
with record_compiles() as log:
    any_marked(np.arange(2), np.zeros(3, dtype=np.uint8))
    any_marked(np.arange(2), np.zeros(3, dtype=np.uint8))  # (compiled once)
print(json.dumps([[k.module, k.name, k.args, k.seconds > 0] for k in log.calls + log.inside]))
"""


def test_record_compiles_sees_a_package_kernel_compiled(tmp_path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}  # empty: it compiles
    out = _python(_RECORD, env=env)
    arrays = [["int64", 1, "C"], ["uint8", 1, "C"]]
    assert json.loads(out) == [["lumoscore.sim.solo", "any_marked", arrays, True]]


def test_manifest_lists_the_default_experiment_and_resolves() -> None:
    manifest = load_manifest()
    archs = {cfg.arch for cfg in expand(DEFAULT_EXPERIMENT)}
    assert archs <= set(manifest.calls)
    assert any(k.name == "_run" for k in manifest.calls["best"])
    for k in [*(k for ks in manifest.calls.values() for k in ks), *manifest.inside]:
        assert hasattr(k.dispatcher(), "compile"), k.key
        decode_types(k.args)
    # what the runs call from Python keeps its wrappers (lumoscore.jit.InternalDispatcher)
    for k in (k for ks in manifest.calls.values() for k in ks):
        assert not isinstance(k.dispatcher(), InternalDispatcher), k.key


def test_exact_runs_compile_no_approximate_allocation() -> None:
    """The default experiment (exact max-min rates) was recorded without compiling the
    (1+eps) refill: the fluid kernels branch on ``grow is None``, which Numba decides when it
    compiles (``lumoscore.sim.kernels.kernel_grow``)."""
    manifest = load_manifest()
    names = {k.name for k in manifest.inside} | {
        k.name for ks in manifest.calls.values() for k in ks
    }
    assert "_refill" in names
    assert "_refill_suffix" not in names
    runs = [k for ks in manifest.calls.values() for k in ks if k.name == "_run"]
    assert runs and all(k.args[8] == "none" for k in runs)


_OBSERVE = """
import importlib, json, pkgutil, sys
import lumoscore
from lumoscore.experiments.config import RunConfig
from lumoscore.experiments.runner import run_one
from lumoscore.warmup import Kernel, encode_types
modules = [importlib.import_module(m.name)
           for m in pkgutil.walk_packages(lumoscore.__path__, "lumoscore.")]
def compiled():  # (kernels declared with a signature compile on import: not the runs')
    out = set()
    for mod in modules:
        for name, obj in vars(mod).items():
            f = getattr(obj, "py_func", None)
            if f is not None and (f.__module__, f.__name__) == (mod.__name__, name):
                out.update(Kernel(mod.__name__, name, encode_types(s)).key
                           for s in obj.signatures)
    return out
def twins():  # internal kernels the runs called from Python
    return {f"{mod.__name__}.{name}" for mod in modules for name, obj in vars(mod).items()
            if "_twin" in getattr(obj, "__dict__", {})}
before, twins_before = compiled(), twins()
for text in sys.argv[1:]:
    run_one(RunConfig.model_validate_json(text))
print(json.dumps([sorted(compiled() - before), sorted(twins() - twins_before)]))
"""


@pytest.mark.slow
def test_manifest_covers_what_the_default_architectures_call() -> None:
    """Every kernel signature a (shortened) run of each default architecture calls is in the
    manifest: a kernel whose argument types change fails here until the manifest is rebuilt
    (``python -m lumoscore.warmup``)."""
    runs = []
    for cfg in expand(DEFAULT_EXPERIMENT):
        short = cfg.model_copy(update={"trace": cfg.trace.model_copy(update={"jobs": 150})})
        runs.append(short.model_dump_json())
    called, twins = json.loads(_python(_OBSERVE, *runs).strip().splitlines()[-1])
    seen = set(called)
    # an internal kernel called from Python would compile a second time (its twin)
    assert not twins, twins
    manifest = load_manifest()
    listed = {k.key for ks in manifest.calls.values() for k in ks}
    listed |= {k.key for k in manifest.inside}
    assert seen, "the runs called no kernel"
    assert seen <= listed, sorted(seen - listed)[:5]


_AHEAD = """
import json, numpy as np
import lumoscore.experiments.runner as runner
from lumoscore.sim.solo import any_marked
from lumoscore.warmup import Kernel, record_compiles
ints, small = ["int64", 1, "C"], ["uint8", 1, "C"]
floats = ["float64", 1, "C"]
groups = [[Kernel("lumoscore.sim.solo", "any_marked", (ints, small), 1.0)],
          [Kernel("lumoscore.sim.plan", "_rem_before_first_end",
                  (floats, floats, ints, "float64"), 0.5)]]
runner.needed_kernels = lambda archs: groups  # (the manifest's would take minutes)
n = runner.compile_ahead(["any"])
with record_compiles() as log:  # the pool compiled it into the cache: this loads it
    any_marked(np.arange(2), np.zeros(3, dtype=np.uint8))
print(json.dumps([n, len(log.calls)]))
"""


def test_compile_ahead_compiles_in_other_processes_into_the_cache(tmp_path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}  # empty
    assert json.loads(_python(_AHEAD, env=env)) == [2, 0]
