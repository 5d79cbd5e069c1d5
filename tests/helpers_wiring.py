"""Shared by the wiring and ToE tests: random symmetric logical topologies (a hypothesis
strategy) and the small one-GPU-a-leaf cluster specs the ToE tests configure.

A plain module imported as ``from helpers_wiring import symmetric_topologies`` (``tests/``
has no ``__init__.py``, so pytest's default ``prepend`` import mode puts it on ``sys.path``).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from lumoscore.topology import ClusterSpec


def toe_spec(pods: int, k_spine: int, groups: int = 1) -> ClusterSpec:
    """``pods`` pods of one leaf each, ``groups`` OCS groups, ``k_spine`` OCS ports a spine,
    OCSes of ``2 * pods`` ports."""
    return ClusterSpec(
        pods=pods, k_leaf=groups, k_spine=k_spine, tau=1, gpus_per_server=1, ocs_ports=2 * pods
    )


@st.composite
def symmetric_topologies(
    draw: st.DrawFn,
    max_pods: int,
    max_k: int,
    *,
    multiple: int = 2,
    unit: int = 1,
    full: bool = True,
) -> tuple[np.ndarray, int]:
    """``(C, K)``: a symmetric non-negative integer ``P x P`` matrix, zero diagonal, row sums
    at most ``K``, ``K`` a multiple of ``multiple``, every count a multiple of ``unit``.

    With ``full``, a drawn boolean may select the full mode: every row sum exactly ``K``, as
    ``K / (2 unit)`` random cyclic permutations plus their transposes, ``unit`` each.
    Otherwise random pod pairs get ``unit`` links while both pods have free ports.
    """
    P = draw(st.integers(2, max_pods))
    K = multiple * draw(st.integers(1, max_k // multiple))
    C = np.zeros((P, P), dtype=np.int64)
    if full and draw(st.booleans()):
        for _ in range(K // (2 * unit)):
            order = np.array(draw(st.permutations(range(P))))
            nxt = np.roll(order, -1)
            np.add.at(C, (order, nxt), unit)
            np.add.at(C, (nxt, order), unit)
        assert (C.sum(axis=1) == K).all()
    else:
        pairs = draw(
            st.lists(st.tuples(st.integers(0, P - 1), st.integers(0, P - 1)), max_size=P * K)
        )
        deg = np.zeros(P, dtype=np.int64)
        for i, j in pairs:
            if i != j and deg[i] + unit <= K and deg[j] + unit <= K:
                C[i, j] += unit
                C[j, i] += unit
                deg[i] += unit
                deg[j] += unit
    return C, K
