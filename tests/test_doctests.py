"""Run the docstring examples of every public module (they are part of the documentation)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import lumoscore

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(lumoscore.__path__, prefix="lumoscore.")
    if not m.name.rsplit(".", 1)[-1].startswith("_") and ".cli." not in m.name + "."
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} failing docstring example(s) in {name}"
