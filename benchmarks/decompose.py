"""Time the symmetric and integer decompositions for 64, 256 and 1024 pods.

Instance (seeded, ``numpy.random.default_rng(seed)``): a random 256-regular multigraph on the
pods by the configuration model -- every pod gets 256 link stubs, the stubs are shuffled and
paired consecutively, and self-pairs are dropped -- so ``C`` is symmetric with a zero diagonal
and row sums <= 256 (256 for almost every pod). For 1024 pods ``C`` has ~230k non-zero
entries, mostly 1, and is dense in the sense that matters (every pod talks to ~225 others).

Timed (median of ``REPEATS`` calls; the first call of each size is reported separately as
"cold" because the first touch of fresh memory is slow on this VM):

* ``symmetric_decomposition(C)``  -- the default, entrywise balanced split ``C = A + A.T``;
* ``symmetric_decomposition(C2, prefer=A)`` -- minimal-rewiring use: ``C2`` is ``C`` with 10 %
  of its links re-drawn, ``prefer`` the split of ``C`` (reported, no target);
* ``integer_decomposition(A, K)`` for ``K = 128`` (the even half of a 256-port spine's OCS
  group; ``A``'s row sums are <= 128, so every part is a partial permutation) and ``K = 8``;
  and ``integer_decomposition_sparse(A, K)``, the same parts as COO arrays (no dense
  ``(K, n, n)`` output: for 1024 pods and ``K = 128`` that array alone is 1 GiB).

Every result is checked with the package's checkers outside the timed region. The machine has
2 cores shared with other engineers: figures are noisy. Prints a table and, last, one JSON line
``{"figures", "targets", "met"}``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

import numpy as np

from lumoscore.decompose import (
    check_integer_decomposition,
    check_symmetric_decomposition,
    integer_decomposition,
    integer_decomposition_sparse,
    symmetric_decomposition,
)

PODS = (64, 256, 1024)
DEGREE = 256
PARTS = (128, 8)
REPEATS = 5
TARGET_S = 1.0  # 1024 pods, each decomposition, median


def random_regular_multigraph(n: int, degree: int, rng: np.random.Generator) -> np.ndarray:
    """Symmetric ``C`` of a random ``degree``-regular multigraph (configuration model)."""
    stubs = rng.permutation(np.repeat(np.arange(n), degree)).reshape(-1, 2)
    a, b = stubs[:, 0], stubs[:, 1]
    keep = a != b
    C = np.zeros((n, n), dtype=np.int64)
    np.add.at(C, (a[keep], b[keep]), 1)
    return C + C.T


def redraw_links(C: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Remove ``fraction`` of the links of ``C`` at random and re-pair the freed stubs."""
    i, j = np.nonzero(np.triu(C, 1))
    links = np.repeat(np.stack([i, j], axis=1), C[i, j], axis=0)
    drop = rng.random(len(links)) < fraction
    kept = links[~drop]
    out = np.zeros_like(C)
    np.add.at(out, (kept[:, 0], kept[:, 1]), 1)
    stubs = rng.permutation(links[drop].ravel()).reshape(-1, 2)
    stubs = stubs[stubs[:, 0] != stubs[:, 1]]
    np.add.at(out, (stubs[:, 0], stubs[:, 1]), 1)
    return out + out.T


def timed(fn: Callable[[], object], repeats: int) -> tuple[object, float, float]:
    """Return ``(result, cold_s, median_s)``: the first call, then the median of ``repeats``."""
    t0 = time.perf_counter()
    result = fn()
    cold = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        del result
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, cold, statistics.median(times)


def main() -> None:
    figures: dict[str, float | int] = {}
    rows = []
    for n in PODS:
        rng = np.random.default_rng(n)
        C = random_regular_multigraph(n, DEGREE, rng)
        nnz = int(np.count_nonzero(C))

        A, cold, med = timed(lambda C=C: symmetric_decomposition(C), REPEATS)
        assert check_symmetric_decomposition(C, A, entrywise=True) == []
        rows.append((n, nnz, "symmetric", "-", cold, med))
        figures[f"symmetric_{n}_s"] = round(med, 4)

        C2 = redraw_links(C, 0.1, rng)
        A2, cold, med = timed(lambda C2=C2, A=A: symmetric_decomposition(C2, prefer=A), REPEATS)
        assert check_symmetric_decomposition(C2, A2) == []
        rows.append((n, nnz, "symmetric prefer", "-", cold, med))
        figures[f"symmetric_prefer_{n}_s"] = round(med, 4)
        # (A2 - A) + (A2 - A).T == C2 - C, so ||A2 - A||_1 >= ||C2 - C||_1 / 2: the excess
        # over that bound measures rewiring beyond what the topology change forces.
        changed = int(np.abs(A2 - A).sum())
        figures[f"symmetric_prefer_{n}_changed_units"] = changed
        figures[f"symmetric_prefer_{n}_excess_over_bound"] = (
            changed - int(np.abs(C2 - C).sum()) // 2
        )
        del A2

        for K in PARTS:
            X, cold, med = timed(lambda A=A, K=K: integer_decomposition(A, K), REPEATS)
            assert check_integer_decomposition(A, X, K) == []
            del X
            rows.append((n, nnz, "integer", str(K), cold, med))
            figures[f"integer_{n}_K{K}_s"] = round(med, 4)
            S, cold, med = timed(lambda A=A, K=K: integer_decomposition_sparse(A, K), REPEATS)
            assert check_integer_decomposition(A, S.to_dense(), K) == []
            rows.append((n, nnz, "integer sparse", str(K), cold, med))
            figures[f"integer_sparse_{n}_K{K}_s"] = round(med, 4)

    print(
        f"{'pods':>5} {'nnz(C)':>8}  {'decomposition':<17} {'K':>4} {'cold s':>8} {'median s':>9}"
    )
    for n, nnz, what, K, cold, med in rows:
        print(f"{n:>5} {nnz:>8}  {what:<17} {K:>4} {cold:>8.3f} {med:>9.3f}")
    print(f"(median of {REPEATS} calls after one cold call; 2 shared cores, figures are noisy)")

    targets = {
        "symmetric_1024_s": TARGET_S,
        "integer_1024_K128_s": TARGET_S,
        "integer_1024_K8_s": TARGET_S,
    }
    met = all(figures[k] <= v for k, v in targets.items())
    print(json.dumps({"figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
