"""The README stays true: its Python examples run and its layout names real modules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "block", re.findall(r"```python\n(.*?)```", README, flags=re.S), ids=lambda b: b[:30]
)
def test_python_examples_run(block: str) -> None:
    exec(compile(block, "README.md", "exec"), {})


def test_layout_lists_existing_packages() -> None:
    layout = README[README.index("## Package layout") :]
    for name in re.findall(r"^  (\w+)/", layout, flags=re.M):
        assert (ROOT / "src" / "lumoscore" / name).is_dir(), name
    for package in (ROOT / "src" / "lumoscore").iterdir():
        if package.is_dir() and (package / "__init__.py").exists():
            assert f"  {package.name}/" in layout, f"README layout misses {package.name}/"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    cmd = re.search(r"\*\*Install and run the tests\*\*.*?```bash\n(.*?)\n```", README, re.S)
    assert cmd is not None
    assert cmd.group(1).strip() in ci
