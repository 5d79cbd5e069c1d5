"""Random job mixes of §IV.A: model, parallel degree and collective chosen uniformly at random.

Examples
--------
>>> import numpy as np
>>> jobs = random_jobs(3, np.random.default_rng(0))
>>> [(j.kind.value, j.model.name, j.degree) for j in jobs]
[('ps', '90B', 6), ('ps', '8B', 6), ('ps', '8B', 2)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lumoscore.errors import ConfigError
from lumoscore.tdm.models import LLAMA3, Compute, Job, JobKind, ModelSpec

__all__ = ["random_jobs"]


def random_jobs(
    n_jobs: int,
    rng: np.random.Generator,
    *,
    models: Sequence[str] = ("1B", "3B", "8B", "90B"),
    kinds: Sequence[str] = ("ps", "rar", "alltoall"),
    degree_min: int = 2,
    degree_max: int = 16,
    tokens: int = 8192,
    catalog: Mapping[str, ModelSpec] | None = None,
    compute: Compute | None = None,
) -> list[Job]:
    """Draw ``n_jobs`` jobs: model, kind and degree (inclusive range) uniformly at random.

    Parameters
    ----------
    n_jobs : int
        Jobs to draw (>= 0).
    rng : numpy.random.Generator
        Source of every random choice.
    models, kinds : sequence of str
        Candidates (model names of ``catalog``; ``"ps"``, ``"rar"``, ``"alltoall"``).
    degree_min, degree_max : int
        Parallel degree range, inclusive.
    tokens : int
        Context length of every job.
    catalog : mapping or None
        Model catalog (default :data:`~lumoscore.tdm.models.LLAMA3`).
    compute : Compute or None
        Eq. (8) parameters.

    Returns
    -------
    list of Job

    Examples
    --------
    >>> import numpy as np
    >>> jobs = random_jobs(2, np.random.default_rng(1), models=("1B",), kinds=("rar",),
    ...                    degree_min=4, degree_max=4, tokens=1024)
    >>> [(j.kind.value, j.degree, j.tokens) for j in jobs]
    [('rar', 4, 1024), ('rar', 4, 1024)]
    """
    cat = dict(LLAMA3 if catalog is None else catalog)
    if n_jobs < 0:
        raise ConfigError(f"workload.n_jobs must be >= 0, got {n_jobs}")
    if not models or any(m not in cat for m in models):
        raise ConfigError(
            f"workload.models {list(models)!r}: each must be one of {', '.join(sorted(cat))}"
        )
    allowed = [k.value for k in JobKind]
    if not kinds or any(k not in allowed for k in kinds):
        raise ConfigError(f"workload.kinds {list(kinds)!r}: each must be one of {allowed}")
    if not 1 <= degree_min <= degree_max:
        raise ConfigError(
            f"workload.degree_min/degree_max must satisfy 1 <= min <= max, got "
            f"{degree_min}..{degree_max}"
        )
    comp = compute or Compute()
    model_idx = rng.integers(0, len(models), size=n_jobs)
    degree = rng.integers(degree_min, degree_max + 1, size=n_jobs)
    kind_idx = rng.integers(0, len(kinds), size=n_jobs)
    return [
        Job(
            kind=JobKind(kinds[int(kind_idx[i])]),
            model=cat[models[int(model_idx[i])]],
            degree=int(degree[i]),
            tokens=tokens,
            compute=comp,
            name=f"job{i}",
        )
        for i in range(n_jobs)
    ]
