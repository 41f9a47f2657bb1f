"""The report of one run directory: plots, ``report.md`` and a self-contained ``report.html``.

Reads what ``harness run`` (or a simulation) leaves in the run directory:

* ``manifest.json``: run id, policy, trace, shrink, ``time_scale``, completeness, platform, ...;
* ``metrics.json``: :func:`harness.analysis.metrics.summary` in original time, plus optional
  ``cross_check``, ``submission`` and ``repetitions`` sections;
* ``results.parquet``: the per-job table, times in seconds since t0 in *shrunk* time.

Every plot and number is shown in the trace's original (unshrunk) time. The metrics table
prints the values of ``metrics.json`` themselves, never recomputed ones, so the report and
the machine-readable file cannot disagree. Jobs that never ran (``missing``, ``rejected``:
no start or end) are counted in the header but left out of every plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.analysis.document import build_document
from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, figure_paths
from harness.analysis.plots import write_plots
from harness.analysis.render import render_html, render_markdown
from harness.analysis.rundata import load_run
from harness.model.atomic import atomic_write_text
from harness.model.rundir import REPORT_HTML, REPORT_MD


def write_report(run_dir: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS) -> list[Path]:
    """Write ``plots/*`` (each plot in every one of ``formats``), ``report.md`` and
    ``report.html`` into ``run_dir``; return the paths of every file written."""
    run = load_run(Path(run_dir))
    plots = write_plots(run, formats)
    title, sections = build_document(run, plots)
    md = run.run_dir / REPORT_MD
    atomic_write_text(md, render_markdown(title, sections))
    page = run.run_dir / REPORT_HTML
    atomic_write_text(page, render_html(title, sections))
    return [*(f for plot in plots for f in figure_paths(plot, formats)), md, page]
