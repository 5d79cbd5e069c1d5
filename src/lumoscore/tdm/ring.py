"""Algorithm 3: form a RAR ring reusing the connections a stage already needs.

Given the pods a ring must visit and the directed connections the stage already requires
(``LB``), keep the existing connections among those pods, prune every pod to in- and out-degree
at most one (dropping, at a pod with several predecessors, the link from the predecessor of highest
out-degree, and symmetrically for successors), cut every sub-ring that does not visit all pods
(the link into its lowest pod goes), and join the remaining paths head to tail in order of their
first pod. The new connections are exactly the joins, one per path.

Examples
--------
>>> import numpy as np
>>> links = np.zeros((4, 4), dtype=bool)
>>> links[0, 1] = links[1, 2] = True          # a path 0 -> 1 -> 2 already exists
>>> form_ring(np.array([0, 1, 2, 3]), links).tolist()
[[0, 1], [1, 2], [2, 3], [3, 0]]
"""

from __future__ import annotations

import numpy as np

from lumoscore.errors import PreconditionError
from lumoscore.npsets import unique

__all__ = ["form_ring", "is_single_ring"]


def form_ring(pods: np.ndarray, links: np.ndarray) -> np.ndarray:
    """Ring through ``pods`` with few connections outside ``links`` (Alg. 3).

    Parameters
    ----------
    pods : numpy.ndarray
        Distinct pod indices the ring visits (at least two).
    links : numpy.ndarray
        ``(P, P)`` boolean: directed connections already present in the stage.

    Returns
    -------
    numpy.ndarray
        ``(len(pods), 2)`` int: the ring's directed edges ``(from, to)`` in ring order.

    Examples
    --------
    >>> import numpy as np
    >>> form_ring(np.array([2, 0]), np.zeros((3, 3), dtype=bool)).tolist()
    [[0, 2], [2, 0]]
    """
    pods = np.sort(np.asarray(pods, dtype=np.int64))
    m = pods.size
    if m < 2 or unique(pods).size != m:
        raise PreconditionError(f"a ring needs at least two distinct pods, got {pods.tolist()}")
    sub = np.asarray(links, dtype=bool)[np.ix_(pods, pods)].copy()
    np.fill_diagonal(sub, False)
    in_deg = sub.sum(axis=0)
    out_deg = sub.sum(axis=1)
    for n in range(m):  # Lines 4-13: prune degrees
        while in_deg[n] > 1:
            preds = np.flatnonzero(sub[:, n])
            q = int(preds[np.argmax(out_deg[preds])])
            sub[q, n] = False
            in_deg[n] -= 1
            out_deg[q] -= 1
        while out_deg[n] > 1:
            succs = np.flatnonzero(sub[n])
            q = int(succs[np.argmax(in_deg[succs])])
            sub[n, q] = False
            out_deg[n] -= 1
            in_deg[q] -= 1
    succ = np.full(m, -1, dtype=np.int64)
    rows, cols = np.nonzero(sub)
    succ[rows] = cols
    has_pred = np.zeros(m, dtype=bool)
    has_pred[cols] = True
    # Line 14: every node left without a predecessor heads a path; the rest lie on sub-rings.
    paths: list[list[int]] = []
    seen = np.zeros(m, dtype=bool)

    def walk(head: int) -> list[int]:
        seq = [head]
        seen[head] = True
        nxt = int(succ[head])
        while nxt >= 0 and not seen[nxt]:
            seq.append(nxt)
            seen[nxt] = True
            nxt = int(succ[nxt])
        return seq

    for head in np.flatnonzero(~has_pred):
        paths.append(walk(int(head)))
    for start in range(m):
        if not seen[start]:  # a sub-ring: cut the link into its lowest node
            paths.append(walk(start))
    if len(paths) == 1 and len(paths[0]) == m and succ[paths[0][-1]] == paths[0][0]:
        order = paths[0]  # already one ring over every pod
    else:
        paths.sort(key=lambda seq: seq[0])  # Line 15: join the pieces in order
        order = [node for seq in paths for node in seq]
    local = np.asarray(order, dtype=np.int64)
    return np.stack([pods[local], pods[np.roll(local, -1)]], axis=1)


def is_single_ring(edges: np.ndarray, pods: np.ndarray) -> bool:
    """Whether ``edges`` form one directed cycle through exactly ``pods`` (Eq. 7).

    Examples
    --------
    >>> import numpy as np
    >>> is_single_ring(np.array([[0, 1], [1, 0]]), np.array([0, 1]))
    True
    >>> is_single_ring(np.array([[0, 1], [1, 0], [2, 3], [3, 2]]), np.arange(4))
    False
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    pods = np.asarray(pods, dtype=np.int64)
    if edges.shape[0] != pods.size or pods.size < 2:
        return False
    if not (np.array_equal(np.sort(edges[:, 0]), np.sort(pods))):
        return False
    if not (np.array_equal(np.sort(edges[:, 1]), np.sort(pods))):
        return False
    succ = dict(zip(edges[:, 0].tolist(), edges[:, 1].tolist(), strict=True))
    node, steps = int(pods[0]), 0
    while True:
        node = succ[node]
        steps += 1
        if node == int(pods[0]):
            return steps == pods.size
        if steps > pods.size:
            return False
