"""The cluster model: derived sizes, index arithmetic, validation, TOML loading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lumoscore.errors import ConfigError
from lumoscore.topology import ClusterSpec, load_cluster

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@st.composite
def specs(draw: st.DrawFn) -> ClusterSpec:
    tau = draw(st.sampled_from([1, 2]))
    gps = draw(st.sampled_from([1, 2, 4, 8]))
    k_leaf = gps * tau * draw(st.integers(1, 4))
    k_spine = 2 * tau * draw(st.integers(1, 6))
    ocs_ports = draw(st.integers(1, 40))
    pods = draw(st.integers(1, ocs_ports))
    return ClusterSpec(
        pods=pods,
        k_leaf=k_leaf,
        k_spine=k_spine,
        tau=tau,
        gpus_per_server=gps,
        ocs_ports=ocs_ports,
    )


def test_paper_pod_shape() -> None:
    # §2.4: a pod has k_spine/tau leaves, k_leaf/tau spines and k_spine*k_leaf/tau GPUs;
    # there are k_leaf/tau OCS groups of k_spine OCSes.
    s = load_cluster(EXAMPLES / "cluster.toml")
    assert (s.leaves_per_pod, s.spines_per_pod, s.gpus_per_pod) == (8, 8, 128)
    assert (s.ocs_groups, s.ocs_per_group, s.gpus) == (8, 16, 4096)


@given(specs())
def test_index_arithmetic_is_consistent(s: ClusterSpec) -> None:
    g = np.arange(s.gpus)
    leaf = s.leaf_of_gpu(g)
    assert np.array_equal(s.leaf_of_server(s.server_of_gpu(g)), leaf)
    assert np.array_equal(s.pod_of_leaf(leaf), s.pod_of_gpu(g))
    # every leaf holds k_leaf GPUs, every pod gpus_per_pod, every leaf lies in one pod
    assert np.all(np.bincount(leaf, minlength=s.leaves) == s.k_leaf)
    assert np.all(np.bincount(s.pod_of_gpu(g), minlength=s.pods) == s.gpus_per_pod)
    # leaf ports: k_leaf up-links = tau links to each of the pod's spines
    assert s.spines_per_pod * s.tau == s.k_leaf
    assert s.leaves_per_pod * s.tau == s.k_spine
    # spines and OCS groups
    pods, hs = np.meshgrid(np.arange(s.pods), np.arange(s.spines_per_pod), indexing="ij")
    sp = s.spine(pods.ravel(), hs.ravel())
    assert np.array_equal(np.sort(sp), np.arange(s.spines))
    assert np.array_equal(s.group_of_spine(sp), hs.ravel())
    assert np.array_equal(s.pod_of_spine(sp), pods.ravel())
    o = np.arange(s.ocs_count)
    assert np.array_equal(s.ocs(s.group_of_ocs(o), o % s.ocs_per_group), o)


def test_out_of_range_index_is_named() -> None:
    s = load_cluster(EXAMPLES / "cluster-small.toml")
    with pytest.raises(ConfigError, match=r"gpu index 128 out of range \[0, 128\)"):
        s.pod_of_gpu([0, 128])
    with pytest.raises(ConfigError, match="integers"):
        s.pod_of_gpu([0.5])


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"k_spine": 7, "tau": 1}, "k_spine must be even"),
        ({"pods": 600}, "exceeds ocs_ports"),
        ({"k_leaf": 12, "tau": 8}, "tau=8 must divide k_leaf"),
        ({"k_leaf": 12}, "gpus_per_server=8 must divide k_leaf=12"),
        ({"pods": 0}, "pods"),
    ],
)
def test_validation_messages(kwargs: dict, needle: str) -> None:
    base = {"pods": 4, "k_leaf": 16, "k_spine": 16, "tau": 2}
    with pytest.raises(pydantic.ValidationError, match=needle):
        ClusterSpec(**{**base, **kwargs})


def test_from_chip_rounds_up_to_pods() -> None:
    s = ClusterSpec.from_chip(51.2, 1600, tau=2, gpus=4000)
    assert (s.k_leaf, s.k_spine, s.pods, s.gpus) == (16, 16, 32, 4096)
    with pytest.raises(ConfigError, match="exactly one"):
        ClusterSpec.from_chip(51.2, 1600)


def test_load_errors_name_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[cluster]\npods = 4\nk_leaf = 16\nk_spine = 15\n")
    with pytest.raises(ConfigError, match=r"c\.toml: cluster: k_spine must be even"):
        load_cluster(bad)
    bad.write_text("[cluster]\npods = 4\nk_leaf = 16\nk_spine = 16\nbogus = 1\n")
    with pytest.raises(ConfigError, match=r"cluster\.bogus"):
        load_cluster(bad)
    bad.write_text("[clusterx]\n")
    with pytest.raises(ConfigError, match=r"missing \[cluster\]"):
        load_cluster(bad)
    bad.write_text("[cluster\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_cluster(bad)
    with pytest.raises(ConfigError, match="no such file"):
        load_cluster(tmp_path / "nope.toml")
