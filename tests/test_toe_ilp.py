"""The CP-SAT MinRewiring ILP: its time limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def test_the_time_limit_is_used_before_giving_up() -> None:
    """A group that finds no solution in its share of the limit tries again with what the
    other groups left: an unsolved instance stops near the limit, not at a fraction of it."""
    import time as _time
    import tomllib

    from lumoscore.toe import configure, random_demand
    from lumoscore.topology import ClusterSpec, build_wiring

    path = Path(__file__).parents[1] / "examples" / "cluster.toml"
    spec = ClusterSpec(**tomllib.loads(path.read_text())["cluster"])
    rng = np.random.default_rng(0)
    demand = np.stack(
        [random_demand(spec.pods, spec.k_spine, rng, fill=0.9) for _ in range(spec.ocs_groups)]
    )
    t0 = _time.perf_counter()
    res = configure(demand, build_wiring(spec, "cross"), solver="ilp", time_limit_s=2.0)
    elapsed = _time.perf_counter() - t0
    if res.status in ("fallback", "timeout"):
        assert elapsed >= 1.8, (res.status, elapsed)
    assert elapsed <= 2.0 + 10.0  # (the fallback decomposition runs after the limit)
