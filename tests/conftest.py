"""Test-suite settings.

Hypothesis runs derandomized by default: the same examples on every run and machine, so the
suite (and CI) is reproducible. ``HYPOTHESIS_PROFILE=explore pytest`` draws new random
examples instead (how new failing cases are found; pin them with ``@example``).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
