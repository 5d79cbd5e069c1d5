"""Figure saving: one helper, atomic writes, byte-identical files, no global matplotlib state."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from lumoscore.errors import ConfigError
from lumoscore.figures import FIGURE_FORMATS, figure_bytes, figure_format, save_figure, save_figures
from lumoscore.hardware import sizing_table
from lumoscore.hardware.plot import plot_scalability
from lumoscore.tdm.runner import plot_sweep

TDM_ROWS = [
    {"sweep": "n_jobs", "value": n, "round_tdm_s": 1.0 + n, "round_non_tdm_s": 2.0 * n}
    for n in (2, 4, 8)
] + [
    {"sweep": "context_tokens", "value": c, "round_tdm_s": c / 1e3, "round_non_tdm_s": c / 5e2}
    for c in (1024, 4096, 16384)
]

#: Writes fig7 (hardware), a TDM chart, a report figure and a paper-preset figure in every
#: format into argv[1], and checks that nothing touched global matplotlib state.
WRITER = textwrap.dedent(
    """
    import json
    import sys
    from pathlib import Path

    import numpy as np

    from lumoscore.experiments.presets import _new_figure, _save_figure
    from lumoscore.figures import save_figure
    from lumoscore.hardware import sizing_table
    from lumoscore.hardware.plot import plot_scalability
    from lumoscore.report.plots import cdf_figure, save_figure as save_report_figure
    from lumoscore.tdm.runner import plot_sweep

    out = Path(sys.argv[1])
    rows = json.loads(sys.argv[2])
    for fmt in ("png", "svg", "pdf"):
        plot_scalability(sizing_table(), out / f"fig7.{fmt}")
        plot_sweep(rows, out / f"tdm.{fmt}")
        fig = cdf_figure(
            {"best": np.array([1.0, 1.2, 2.0]), "clos": np.array([1.1, 3.0])},
            xlabel="JRT slow-down",
            title="Fig. 8(a)",
        )
        save_figure(fig, out / f"cdf.{fmt}", dpi=110)
    save_report_figure(
        cdf_figure({"a": np.array([1.0, 2.0])}, xlabel="x", title="t"), out, "report"
    )
    fig = _new_figure()
    fig.add_subplot().plot([1, 2, 3], [3, 1, 2], marker="o")
    _save_figure(fig, out, "preset")
    assert "matplotlib.pyplot" not in sys.modules, "a figure writer imported pyplot"
    """
)


def _write_all(out: Path) -> dict[str, bytes]:
    out.mkdir()
    subprocess.run(
        [sys.executable, "-c", WRITER, str(out), json.dumps(TDM_ROWS)],
        check=True,
        capture_output=True,
        text=True,
    )
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _line_figure() -> Figure:
    fig = Figure(figsize=(3, 2), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1, 2], [2, 0, 1], label="line")
    ax.legend()
    return fig


def test_same_figures_in_two_processes_are_byte_identical(tmp_path: Path) -> None:
    first = _write_all(tmp_path / "a")
    second = _write_all(tmp_path / "b")
    expected = {
        *(f"{stem}.{fmt}" for stem in ("fig7", "tdm", "cdf") for fmt in ("png", "svg", "pdf")),
        *(f"{stem}.{fmt}" for stem in ("report", "preset") for fmt in ("png", "svg")),
    }
    assert set(first) == expected
    for name in sorted(expected):
        assert first[name] == second[name], f"{name} differs between two runs"


def test_files_carry_no_date_or_software_stamp(tmp_path: Path) -> None:
    svg = plot_scalability(sizing_table(), tmp_path / "fig7.svg").read_bytes()
    assert b"<dc:date>" not in svg and b"Matplotlib v" not in svg
    png = plot_scalability(sizing_table(), tmp_path / "fig7.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and b"Software" not in png
    pdf = plot_sweep(TDM_ROWS, tmp_path / "tdm.pdf").read_bytes()
    assert pdf.startswith(b"%PDF")
    assert b"/CreationDate" not in pdf and b"/Producer" not in pdf and b"Matplotlib" not in pdf


def test_same_figure_saved_twice_is_identical(tmp_path: Path) -> None:
    fig = _line_figure()
    for fmt in FIGURE_FORMATS:
        a = save_figure(fig, tmp_path / f"a.{fmt}").read_bytes()
        b = save_figure(fig, tmp_path / f"b.{fmt}").read_bytes()
        assert a == b == figure_bytes(_line_figure(), fmt), fmt


def test_dpi_changes_png_size() -> None:
    fig = _line_figure()
    assert len(figure_bytes(fig, "png", dpi=50)) < len(figure_bytes(fig, "png", dpi=200))


def test_save_figures_writes_each_format(tmp_path: Path) -> None:
    paths = save_figures(_line_figure(), tmp_path, "x", formats=("svg", "pdf"))
    assert [p.name for p in paths] == ["x.svg", "x.pdf"]
    assert paths[0].read_bytes().lstrip().startswith(b"<?xml")


@pytest.mark.parametrize("name", ["fig.gif", "fig", "fig.eps", "fig.jpg"])
def test_unsupported_suffix_lists_the_allowed_ones(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match=r"allowed: \.png, \.svg, \.pdf"):
        save_figure(_line_figure(), tmp_path / name)
    with pytest.raises(ConfigError, match="PNG, SVG or PDF"):
        plot_scalability(sizing_table(), tmp_path / name)
    with pytest.raises(ConfigError, match=r"allowed: \.png, \.svg, \.pdf"):
        plot_sweep(TDM_ROWS, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_figure_format_subset_and_case() -> None:
    assert figure_format("A/B.PNG") == "png"
    with pytest.raises(ConfigError, match=r"is not PNG or SVG \(allowed: \.png, \.svg\)"):
        figure_format("x.pdf", ("png", "svg"))
    with pytest.raises(ConfigError, match="figure format 'gif' unknown"):
        figure_bytes(_line_figure(), "gif")


def test_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        save_figure(_line_figure(), tmp_path / "nope" / "x.png")


def test_failing_write_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "fig7.svg"
    target.write_bytes(b"old")
    real = Path.write_bytes

    def half_then_fail(self: Path, data: bytes) -> int:
        real(self, data[: len(data) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_bytes", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        plot_scalability(sizing_table(), target)
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["fig7.svg"]


def test_failing_render_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Figure, *args: object, **kwargs: object) -> None:
        raise RuntimeError("render failed")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError, match="render failed"):
        plot_sweep(TDM_ROWS, tmp_path / "tdm.png")
    assert list(tmp_path.iterdir()) == []


def test_constrained_layout_is_frozen_after_the_first_save() -> None:
    fig = _line_figure()
    first = figure_bytes(fig, "svg")
    pos = fig.axes[0].get_position().bounds
    assert figure_bytes(fig, "svg") == first
    assert fig.axes[0].get_position().bounds == pos


def _report_figures() -> list:
    import numpy as np

    from lumoscore.report.plots import ReportFigure, cdf_figure

    return [
        ReportFigure(s, s, "", cdf_figure({"x": np.arange(1.0, 4.0 + k)}, xlabel="x", title=s))
        for k, s in enumerate("abc")
    ]


def test_report_figures_render_alike_on_two_processes_and_one(monkeypatch) -> None:
    """render_figures draws every other figure in a second process: the same bytes as all
    drawn here, and all drawn here when no second process can start."""
    import concurrent.futures as cf

    from lumoscore.report import writer
    from lumoscore.report.plots import figure_bytes as report_bytes

    both = writer.render_figures(_report_figures())
    alone = [
        (report_bytes(f.figure, "png"), report_bytes(f.figure, "svg")) for f in _report_figures()
    ]
    assert both == alone

    def no_pool(*args, **kwargs):
        raise OSError("no processes here")

    monkeypatch.setattr(cf, "ProcessPoolExecutor", no_pool)
    assert writer.render_figures(_report_figures()) == alone


def test_ctrl_c_while_the_report_draws_stops_the_second_process(monkeypatch) -> None:
    """Ctrl-C reaching the drawing parent leaves no drawing process behind and no wait on
    it (the second process ignores SIGINT and is stopped)."""
    import multiprocessing
    import os
    import time

    from lumoscore.report import writer

    parent = os.getpid()
    draw = writer._png_svg

    def interrupted_here(fig):
        if os.getpid() == parent:
            raise KeyboardInterrupt
        return draw(fig)

    monkeypatch.setattr(writer, "_png_svg", interrupted_here)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        writer.render_figures(_report_figures())
    for proc in multiprocessing.active_children():
        proc.join(timeout=10)
    assert not multiprocessing.active_children()
    assert time.perf_counter() - t0 < 30
