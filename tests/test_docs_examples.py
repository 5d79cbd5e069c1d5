"""The runnable examples of docs/simulator.md's "Extending the simulator" section run and
print what the document says they print (each in a fresh process: they register plug-ins)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[1] / "docs" / "simulator.md"


def section_examples(doc: Path, heading: str) -> list[str]:
    """The ```python blocks of the section under ``## heading``."""
    text = doc.read_text()
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.S)


def expected_output(code: str) -> list[str]:
    """What the example says it prints: ``# ...`` lines right after a print, and trailing
    ``# value`` comments of print lines."""
    out: list[str] = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*print\(.*\)\s*#\s*(.+)$", line)
        if m:
            out.append(m.group(1).strip())
        elif (
            line.startswith("# ")
            and i
            and ("print(" in lines[i - 1] or (out and lines[i - 1].startswith("# ")))
        ):
            out.append(line[2:].strip())
    return out


EXAMPLES = section_examples(DOC, "Extending the simulator")


def test_the_section_has_its_three_examples() -> None:
    assert len(EXAMPLES) == 3


@pytest.mark.parametrize("code", EXAMPLES, ids=["queue-policy", "architecture", "placer"])
def test_example_runs_and_prints_what_the_doc_says(code: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == expected_output(code)
