"""Borrowed arrays: the same memory as the original, with no reference count (a null
memory-info pointer), for single arrays and tuples of arrays of mixed dtypes; no compiled
function returns one to Python; ``LUMOS_NO_BORROW=1`` switches borrowing off, cached
builds included, and the kernel tests pass that way too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core import types
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic

from lumoscore.sim import fluid, heaps, kernels, maxmin, plan, solo
from lumoscore.sim.borrow import BORROWING, NO_BORROW_ENV, borrowed, kernel
from lumoscore.sim.fluid import FluidSet
from lumoscore.sim.maxmin import maxmin_rates
from lumoscore.sim.plan import RoundPlan, _solo_run, solo_state


@intrinsic
def _counted(typingctx, arr):  # type: ignore[no-untyped-def]
    """Whether array ``arr`` carries a memory-info pointer (a reference count)."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        return builder.icmp_unsigned("!=", ary.meminfo, ary.meminfo.type(None))

    return types.boolean(arr), codegen


@numba.njit(inline="always")
def _bump(a, i):  # type: ignore[no-untyped-def]
    if a[i] < 2.0:
        a[i] += 1.0
    else:
        a[i] += 0.5


@numba.njit
def _bump_borrowed(a, n):  # type: ignore[no-untyped-def]
    b = borrowed(a)
    for i in range(n):
        _bump(b, i % b.size)
    return _counted(a), _counted(b), _counted(b[1:])


@numba.njit
def _write_borrowed(x, y, flags):  # type: ignore[no-untyped-def]
    bx, by, bf = borrowed((x, y, flags))
    bx[0] = 5.5
    by[1] = 7
    bf[2] = True
    return _counted(bx) or _counted(by) or _counted(bf), bx.sum(), by.sum()


def test_a_borrowed_array_shares_memory_and_counts_no_references() -> None:
    a = np.zeros(3)
    own, view, sliced = _bump_borrowed(a, 10)
    assert own and view == sliced == (not BORROWING)
    # four bumps of entry 0 (1, 2, 2.5, 3), three of entries 1 and 2 (1, 2, 2.5)
    assert a.tolist() == [3.0, 2.5, 2.5]


def test_a_borrowed_tuple_keeps_each_array_and_its_dtype() -> None:
    x, y, flags = np.arange(3.0), np.arange(3), np.zeros(3, dtype=np.bool_)
    counted, sx, sy = _write_borrowed(x, y, flags)
    assert counted == (not BORROWING)
    assert x.tolist() == [5.5, 1.0, 2.0] and y.tolist() == [0, 7, 2]
    assert flags.tolist() == [False, False, True]
    assert (sx, sy) == (8.5, 9)


# --- arrays returned to Python must carry a reference count -------------------------------


def uncounted(value: object, path: str = "result") -> list[str]:
    """Where in ``value`` (an array, or tuples and lists of them, nested) an array carries no
    reference count.

    NumPy sees an array that compiled code returns with a null memory-info pointer (a
    borrowed one) as an array that neither owns its data nor has a base; every other array
    Numba returns has a base (the memory-info object that keeps its memory alive) or is the
    argument itself."""
    if isinstance(value, np.ndarray):
        return [] if value.base is not None or value.flags.owndata else [path]
    if isinstance(value, tuple | list):
        return [p for i, v in enumerate(value) for p in uncounted(v, f"{path}[{i}]")]
    return []


@numba.njit
def _returns_a_borrowed_view(a):  # type: ignore[no-untyped-def]
    own = a.copy()
    return own[:1], borrowed(own)[1:]  # (the first keeps the memory alive for the check)


def test_the_check_finds_an_array_returned_without_a_reference_count() -> None:
    """The check itself: a function returning a borrowed view of its own array is caught
    (with borrowing on; off, the view is counted like any other)."""
    got = _returns_a_borrowed_view(np.arange(3.0))
    assert got[1].tolist() == [1.0, 2.0]
    assert uncounted(got) == (["result[1]"] if BORROWING else [])
    assert uncounted([np.arange(2.0), (np.zeros(1)[:0],)]) == []


_MODULES = (kernels, heaps, solo, maxmin)


def _array_kernels() -> set[str]:
    """The compiled functions of :data:`_MODULES` whose return annotation names an array."""
    out = set()
    for mod in _MODULES:
        for name, obj in vars(mod).items():
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == mod.__name__:
                ret = str(obj.py_func.__annotations__.get("return", ""))
                if re.search(r"Array|FluidState|RowBuffers", ret):
                    out.add(f"{mod.__name__}.{name}")
    return out


def _round(paths: list[list[int]], cap: np.ndarray, size: list[float]) -> RoundPlan:
    """A round of flows of weight 1 as the simulator makes it (solo timeline, start state)."""
    indptr = np.cumsum([0] + [len(p) for p in paths]).astype(np.int64)
    indices = np.concatenate([np.asarray(p, np.int64) for p in paths])
    bits, ones = np.asarray(size, float), np.ones(len(paths))
    solo_s, links, peak, idle, start = _solo_run(indptr, indices, ones, bits, cap, 0.0)
    return RoundPlan(indptr, indices, ones, bits, 0.0, "x", solo_s, 0.0, links, peak, idle, start)


def test_no_kernel_returns_an_array_without_a_reference_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every compiled function of the fluid model that returns arrays (:func:`_array_kernels`)
    runs on small inputs, from Python as the fluid set and the plans call them and directly
    for those only compiled code calls; no array it returns (nested in tuples) is borrowed."""
    checked: set[str] = set()

    def check(name: str, out: object) -> object:
        bad = uncounted(out)
        assert not bad, f"{name} returns an array without a reference count: {bad}"
        checked.add(name)
        return out

    def watch(where: object, name: str) -> None:
        fn = getattr(where, name)
        qual = f"{fn.py_func.__module__}.{name}" if isinstance(fn, Dispatcher) else name
        monkeypatch.setattr(where, name, lambda *a, **k: check(qual, fn(*a, **k)))

    for name in ("append_round", "compact_rows", "fluid_advance", "fluid_run", "new_state"):
        watch(fluid, name)
    for name in ("rebuild_heap", "remaining_at"):
        watch(fluid, name)
    watch(plan, "solo_run")
    watch(maxmin, "_fill")
    # the fluid sets, as the simulator drives them: rounds detach, join, leave, finish
    cap = np.array([1.0, 2.0, 1.5, 4.0])
    for eps in (0.0, 0.05):
        fs = FluidSet(cap.copy(), eps)
        a = _round([[0], [1], [3]], fs.capacity, [2.0, 1.0, 3.0])
        rem, rate, bott = solo_state(a, fs.capacity, 0.25)
        fs.add(0, a, rem, rates=rate, bottleneck=bott, started_s=-0.25)
        fs.add(1, _round([[1, 2], [2]], fs.capacity, [1.0, 4.0]))
        assert not fs.run_until(0.5)
        check("FluidSet.remaining", fs.remaining)
        fs.add(2, _round([[0, 2], [3]], fs.capacity, [2.0, 1.0]), now_s=fs.clock_s)
        fs.add(3, _round([[3], [0, 1]], fs.capacity, [5.0, 1.0]), now_s=fs.clock_s)
        check("FluidSet.remove_job", fs.remove_job(2))
        while len(fs):
            fs.run_until(np.inf)
            fs.pop_finished()
    assert maxmin_rates(flow_links=[[0, 1], [0], [1]], capacity=[1.0, 2.0]).rates.size == 3
    # the functions only compiled code calls, on a small set of flows
    f_ptr, f_idx = np.array([0, 2, 4, 6, 7]), np.array([0, 1, 1, 2, 0, 2, 2])
    n = f_ptr.size - 1
    weight, size = np.ones(n), np.array([3.0, 4.0, 5.0, 2.0])
    c_idx, c_cap, glob = check("lumoscore.sim.maxmin._compact", maxmin._compact(f_idx, cap))
    m = c_cap.size
    check("lumoscore.sim.maxmin._transpose", maxmin._transpose(f_ptr, c_idx, m))
    st = check("lumoscore.sim.kernels._new_state", kernels._new_state(n, m))
    ldir, pool = check("lumoscore.sim.kernels.link_lists", kernels.link_lists(f_ptr, c_idx, m))
    ldir2, pool2 = kernels.link_lists(f_ptr[:3], c_idx[: f_ptr[2]], m)
    local = np.full(m, -1, dtype=np.int64)
    out = kernels.link_lists_append(f_ptr, c_idx, ldir2, pool2, 2, n, local)
    check("lumoscore.sim.kernels.link_lists_append", out)
    ldir3 = np.zeros(3 * m + 1, dtype=np.int64)
    out = kernels._rebuild_lists(f_ptr, c_idx, n, ldir3, np.empty(0, dtype=np.int64))
    check("lumoscore.sim.kernels._rebuild_lists", out)
    rows = np.arange(n)
    links = kernels._refill(f_ptr, c_idx, c_cap, weight, st, rows, 0.0, 1.0)
    assert sorted(check("lumoscore.sim.kernels._refill", links).tolist()) == list(range(m))
    alive = np.ones(n, dtype=np.bool_)
    out = kernels._to_refill(f_ptr, c_idx, c_cap, weight, alive, st, ldir, pool, rows, 2, n)
    check("lumoscore.sim.kernels._to_refill", out)
    check("lumoscore.sim.kernels._grown_to", kernels._grown_to(np.arange(3), 5))
    out = kernels._global_bott(st[kernels.BOTT], alive, glob)
    check("lumoscore.sim.kernels._global_bott", out)
    out = kernels._alive_values(alive, st[kernels.RATE], np.empty(n))
    check("lumoscore.sim.kernels._alive_values", out)
    out = kernels._run(f_ptr, f_idx, weight, size, size, cap, np.inf, 1e-9, None, True)
    check("lumoscore.sim.kernels._run", out)
    check("lumoscore.sim.kernels.solo_run", kernels.solo_run(f_ptr, f_idx, weight, size, cap, 1e-9))
    missing = _array_kernels() - checked
    assert not missing, f"kernels returning arrays that this test does not call: {missing}"


# --- switching borrowing off ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


@kernel
def _probe(a):  # type: ignore[no-untyped-def]
    """Compiled once per setting of the switch and cached on disk (as the fluid kernels)."""
    b = borrowed(a)
    return _counted(b), b[1:]


_PROBE = f"""
import json, sys
import numpy as np
sys.path.insert(0, {str(Path(__file__).parent)!r})
import {Path(__file__).stem} as mod
a = np.arange(3.0)
counted, view = mod._probe(a)
print(json.dumps({{"borrowing": mod.BORROWING, "counted": bool(counted),
                  "uncounted": mod.uncounted(view), "base": type(view.base).__name__}}))
"""


def _python(*args: str, borrow: bool, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python args`` in the repository, with borrowing on or off."""
    env = {k: v for k, v in os.environ.items() if k != NO_BORROW_ENV}
    if not borrow:
        env[NO_BORROW_ENV] = "1"
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


@pytest.mark.skipif(not BORROWING, reason="borrowing is off here already")
def test_the_switch_turns_borrowing_off_even_with_a_cached_build() -> None:
    """``LUMOS_NO_BORROW=1``: a cached compiled function that borrows returns counted arrays
    (its memory-info pointer is set, and NumPy sees a base), though a build with borrowing
    on is in Numba's on-disk cache (this process puts it there), and the other way round
    (a process with borrowing on after one with it off)."""
    counted, view = _probe(np.arange(3.0))
    assert not counted and uncounted(view) == ["result"] and BORROWING
    got = []
    for borrow in (False, True):
        proc = _python("-c", _PROBE, borrow=borrow, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        got.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    off = {"borrowing": False, "counted": True, "uncounted": [], "base": "_MemInfo"}
    on = {"borrowing": True, "counted": False, "uncounted": ["result"], "base": "NoneType"}
    assert got == [off, on]


#: The kernel tests, run again with borrowing off.
_NO_BORROW_TESTS = ("tests/test_sim_kernels.py", "tests/test_sim_layout.py", __file__)


@pytest.mark.slow
@pytest.mark.skipif(not BORROWING, reason="borrowing is off here already")
def test_the_kernel_tests_pass_with_borrowing_off() -> None:
    """A fault that shows only with borrowing (a view used after its memory went) or only
    without it: the kernel tests pass both ways (in a process with ``LUMOS_NO_BORROW=1``;
    Numba caches that build apart, so it compiles once)."""
    proc = _python(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", *_NO_BORROW_TESTS, borrow=False,
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]  # (5: none ran)
