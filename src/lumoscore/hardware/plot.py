"""Fig. 7 of the LumosCore paper: maximum cluster size against per-port speed (log scale)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lumoscore.errors import ConfigError
from lumoscore.figures import figure_format, save_figure
from lumoscore.hardware.sizing import SizingRow

__all__ = ["plot_scalability"]

#: Resolution of the PNG chart.
_DPI = 150


def plot_scalability(
    rows: Sequence[SizingRow], path: str | Path, *, target_gpus: int | None = None
) -> Path:
    """Write the max-GPUs-versus-port-speed chart of ``rows`` to ``path`` (PNG, SVG or PDF).

    One panel per chip capacity, one line per architecture (leaving out the speeds it cannot
    be built at, ``max_gpus == 0``), log-scaled GPU axis;
    ``target_gpus`` adds a dashed line at that cluster size (``lumos scale --gpus``). The file is
    written atomically and byte-for-byte reproducibly (:func:`lumoscore.figures.save_figure`)
    into an existing folder.

    Examples
    --------
    >>> import tempfile, os
    >>> from lumoscore.hardware import sizing_table
    >>> out = plot_scalability(sizing_table(), os.path.join(tempfile.mkdtemp(), "fig7.svg"))
    >>> out.suffix
    '.svg'
    """
    from matplotlib.figure import Figure

    out = Path(path)
    figure_format(out)  # a bad suffix fails before any work
    chips = sorted({r.chip_tbps for r in rows})
    archs = list(dict.fromkeys(r.architecture for r in rows))
    if not chips:
        raise ConfigError("nothing to plot: the sizing table is empty")
    fig = Figure(figsize=(4.2 * len(chips), 3.6))
    axes = list(fig.subplots(1, len(chips), sharey=True, squeeze=False)[0])
    markers = "osD^v<>ph*"
    for ax, chip in zip(axes, chips, strict=True):
        for i, arch in enumerate(archs):
            pts = sorted(
                (r.port_gbps, r.max_gpus)
                for r in rows
                if r.chip_tbps == chip and r.architecture == arch and r.max_gpus > 0
            )
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker=markers[i % len(markers)], label=arch)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        speeds = sorted({r.port_gbps for r in rows if r.chip_tbps == chip})
        ax.set_xticks(speeds)
        ax.set_xticklabels([f"{s:g}" for s in speeds])
        ax.set_xlabel("per-port speed (Gb/s)")
        ax.set_title(f"{chip:g} Tb/s switch chip")
        ax.grid(True, which="major", alpha=0.3)
        if target_gpus is not None:
            ax.axhline(target_gpus, color="black", linestyle="--", linewidth=1,
                       label=f"{target_gpus:,} GPUs")  # fmt: skip
    axes[0].set_ylabel("maximum GPUs")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out, dpi=_DPI)
