"""Reports of LumosCore experiments: tables, figures and one self-contained HTML page.

:func:`write_report` reads a result directory written by ``lumos run`` and writes, by default
into ``<store>/report/``: ``summary.md`` and ``summary.csv`` (mean and 95% confidence interval
across seeds per architecture and swept parameter), ``runs.csv`` (one row per run), one PNG and
one SVG per figure (the LumosCore paper's Fig. 8(a)-(e), 23-25 styles) and ``report.html``.

* :mod:`lumoscore.report.metrics`: comparison with Best, seed aggregates, stability, queues;
* :mod:`lumoscore.report.plots`: the figures;
* :mod:`lumoscore.report.tables`, :mod:`lumoscore.report.html`: the tables and the page;
* :mod:`lumoscore.report.data`: the result-store input layer;
* :mod:`lumoscore.report.writer`: the pipeline.
"""

from __future__ import annotations

from lumoscore.report.data import RunSet, load_runs
from lumoscore.report.metrics import aggregate, compare_to_baseline, queue_stats, stability
from lumoscore.report.writer import Report, build_report, save_report, write_report

__all__ = [
    "Report",
    "RunSet",
    "aggregate",
    "build_report",
    "compare_to_baseline",
    "load_runs",
    "queue_stats",
    "save_report",
    "stability",
    "write_report",
]
