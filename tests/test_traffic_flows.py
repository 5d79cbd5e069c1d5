"""Flows, aggregation and the ideal-network round time."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.traffic.flows import (
    Flows,
    aggregate,
    drop_intra_server,
    ideal_round_s,
    pair_totals,
)


@st.composite
def flow_tables(draw: st.DrawFn) -> Flows:
    n = draw(st.integers(0, 60))
    gpus = draw(st.integers(1, 40))
    src = draw(st.lists(st.integers(0, gpus - 1), min_size=n, max_size=n))
    dst = draw(st.lists(st.integers(0, gpus - 1), min_size=n, max_size=n))
    size = draw(st.lists(st.sampled_from([1.0, 2.5, 4.0, 1e6]), min_size=n, max_size=n))
    weight = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    return Flows.of(src, dst, size, weight) if n else Flows.empty()


def _pair_dict(f: Flows, node=lambda g: g) -> dict[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = defaultdict(float)
    for s, d, b, w in zip(f.src, f.dst, f.bytes, f.weight, strict=True):
        out[int(node(s)), int(node(d))] += float(b) * int(w)
    return dict(out)


@settings(max_examples=80, deadline=None)
@given(flow_tables())
def test_aggregate_preserves_total_and_pair_bytes(f: Flows) -> None:
    g = aggregate(f)
    assert g.total_bytes == pytest.approx(f.total_bytes)
    assert g.count == f.count
    assert _pair_dict(g) == pytest.approx(_pair_dict(f))
    # merged rows are distinct (src, dst, bytes) triples
    triples = set(zip(g.src.tolist(), g.dst.tolist(), g.bytes.tolist(), strict=True))
    assert len(triples) == len(g)


@settings(max_examples=80, deadline=None)
@given(flow_tables(), st.integers(1, 8))
def test_aggregate_by_node_preserves_node_pair_bytes(f: Flows, per_node: int) -> None:
    g = aggregate(f, key=lambda x: x // per_node)
    assert g.total_bytes == pytest.approx(f.total_bytes)
    assert g.count == f.count
    assert _pair_dict(g) == pytest.approx(_pair_dict(f, lambda x: x // per_node))
    # the same with a lookup table
    table = np.arange(40) // per_node
    h = aggregate(f, key=table)
    assert np.array_equal(h.src, g.src) and np.array_equal(h.weight, g.weight)


def test_aggregate_merges_only_equal_sizes() -> None:
    f = Flows.of([0, 0, 0], [1, 1, 1], [2.0, 2.0, 3.0])
    g = aggregate(f)
    assert g.bytes.tolist() == [2.0, 3.0] and g.weight.tolist() == [2, 1]


@settings(max_examples=50, deadline=None)
@given(flow_tables())
def test_pair_totals_matches_python(f: Flows) -> None:
    s, d, b = pair_totals(f)
    got = {(int(x), int(y)): float(z) for x, y, z in zip(s, d, b, strict=True)}
    assert got == pytest.approx(_pair_dict(f))


def test_drop_intra_server() -> None:
    f = Flows.of([0, 3, 4, 8], [3, 4, 12, 11], 1.0)
    assert drop_intra_server(f, 4).src.tolist() == [3, 4]
    with pytest.raises(ConfigError, match="gpus_per_server"):
        drop_intra_server(f, 0)


@settings(max_examples=50, deadline=None)
@given(flow_tables(), st.sampled_from([100.0, 1600.0]))
def test_ideal_round_is_busiest_nic(f: Flows, gbps: float) -> None:
    sent: dict[int, float] = defaultdict(float)
    recv: dict[int, float] = defaultdict(float)
    for s, d, b, w in zip(f.src, f.dst, f.bytes, f.weight, strict=True):
        sent[int(s)] += b * w
        recv[int(d)] += b * w
    peak = max([*sent.values(), *recv.values(), 0.0])
    assert ideal_round_s(f, gbps) == pytest.approx(peak * 8 / (gbps * 1e9))


def test_flows_validate_lengths() -> None:
    with pytest.raises(ConfigError, match="equal length"):
        Flows(np.zeros(2, np.int64), np.zeros(3, np.int64), np.zeros(2), np.ones(2, np.int64))
