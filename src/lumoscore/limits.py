"""Size limits checked before anything is allocated, and the seed's range.

A request beyond them is an input error (``ConfigError`` naming the limit), not an attempt to
allocate tens of gigabytes: a fat-fingered ``--gpus 1000000000`` must fail in a millisecond
with a message, never after minutes of swapping or with an out-of-memory kill. A seed is a
non-negative integer (NumPy's ``SeedSequence`` takes no other). Times of a trace (arrivals and
run times) are at most :data:`MAX_TIME_S`; a cluster's port speed is from
:data:`MIN_PORT_GBPS` to :data:`MAX_PORT_GBPS`.
"""

from __future__ import annotations

import numbers

from lumoscore.errors import ConfigError

__all__ = [
    "MAX_GPUS",
    "MAX_JOBS",
    "MAX_PORT_GBPS",
    "MAX_RUNS",
    "MAX_TIME_S",
    "MIN_PORT_GBPS",
    "check_gpus",
    "check_jobs",
    "check_seed",
]

#: Largest cluster the simulator and the fabrics accept: 2^20 GPUs, eight times the largest
#: LumosCore build of the paper's Table 1 (131k GPUs at tau = 1).
MAX_GPUS = 1 << 20
#: Most jobs a generated trace may have (a trace of 10^6 jobs takes about 0.3 GB).
MAX_JOBS = 1_000_000
#: Most runs one experiment may expand to (architectures x sizes x sweep values x seeds):
#: the paper's whole evaluation is about 400.
MAX_RUNS = 100_000
#: Latest arrival and longest run time of a trace, in seconds (about 31,700 years): room for
#: MAX_JOBS jobs at a mean gap of 10^6 s, while sums of run times over MAX_JOBS jobs stay far
#: from the float range and a clock near it still resolves a millisecond.
MAX_TIME_S = 1e12
#: Slowest and fastest port speed of a cluster file, in Gb/s (1 Mb/s to 100 Tb/s, 60 times
#: the paper's 1.6 Tb/s): a value outside is a typo or a unit mistake, not a switch.
MIN_PORT_GBPS = 1e-3
MAX_PORT_GBPS = 1e5


def check_gpus(gpus: int, name: str = "gpus") -> int:
    """``gpus`` if it is an integer in ``[1, MAX_GPUS]``, else a ConfigError naming ``name``.

    Examples
    --------
    >>> check_gpus(4096)
    4096
    >>> check_gpus(10**9)
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: gpus=1000000000 is above the limit of 1048576 GPUs (MAX_GPUS)
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int):
        raise ConfigError(f"{name} must be an integer, got {gpus!r}")
    if gpus > MAX_GPUS:
        raise ConfigError(f"{name}={gpus} is above the limit of {MAX_GPUS} GPUs (MAX_GPUS)")
    return gpus


def check_jobs(jobs: int, name: str = "jobs") -> int:
    """``jobs`` if it is at most ``MAX_JOBS``, else a ConfigError naming ``name``."""
    if jobs > MAX_JOBS:
        raise ConfigError(f"{name}={jobs} is above the limit of {MAX_JOBS} jobs (MAX_JOBS)")
    return jobs


def check_seed(seed: int, name: str = "seed") -> int:
    """``seed`` as an int if it is a non-negative integer, else a ConfigError naming ``name``.

    Examples
    --------
    >>> check_seed(7)
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    lumoscore.errors.ConfigError: seed must be an integer >= 0, got -1
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ConfigError(f"{name} must be an integer >= 0, got {seed!r}")
    return int(seed)
