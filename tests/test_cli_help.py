"""Help texts: literal brackets survive, choice options list their values."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from lumoscore.cli import build_app
from lumoscore.fabric import ClosFabric, LumosCoreFabric

runner = CliRunner()


def help_text(*cmd: str) -> str:
    res = runner.invoke(build_app(), [*cmd, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_literal_brackets_are_shown() -> None:
    assert "with a [cluster] table" in help_text("wire")
    assert "with a [cluster] table" in help_text("toe")
    assert "Run the [sweep] values" in help_text("tdm")


def test_routing_help_lists_every_routing() -> None:
    text = help_text("simulate")
    clos = re.search(r"Clos: ([^;]+);", text)
    lumos = re.search(r"LumosCore: ([^;]+);", text)
    assert clos and lumos
    for name in ClosFabric.routings:
        assert name in clos.group(1)
    for name in LumosCoreFabric.routings:
        assert name in lumos.group(1)


def test_simulate_help_lists_architectures_and_trace_presets() -> None:
    from lumoscore.fabric.presets import FABRICS
    from lumoscore.workload.presets import PRESETS

    text = help_text("simulate")
    arch = text[text.index("Architecture:") :]
    assert all(name in arch for name in FABRICS.names())
    preset = text[text.index("Trace preset to generate") :]
    assert all(name in preset for name in PRESETS)


def test_docstring_paragraphs_are_reflowed() -> None:
    """Help paragraphs wrap at the terminal, not at the docstring's own line breaks."""
    res = runner.invoke(build_app(), ["run", "--help"], env={"COLUMNS": "200"})
    lines = [line.strip() for line in res.output.splitlines()]
    para = next(line for line in lines if line.startswith("`--preset NAME` runs a paper preset"))
    assert len(para) > 150  # filled to the width, not broken where the docstring breaks (~75)


def test_help_does_not_load_the_simulation_engine() -> None:
    """Building the CLI (what ``lumos --help`` does) imports the queue policies but neither
    the engine nor its compiled kernels: ``lumoscore.sim`` loads its parts on first use."""
    import subprocess
    import sys

    code = (
        "import sys; from lumoscore.cli import build_app; build_app(); "
        "import lumoscore.sim as s; assert 'QUEUE_POLICIES' in dir(s); "
        "print('lumoscore.sim.engine' in sys.modules, 'lumoscore.sim.kernels' in sys.modules); "
        "s.Simulator; print('lumoscore.sim.engine' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]
