"""The report of an experiment directory: ``report.md``, ``report.html`` and ``plots/*.png``.

The plots are drawn by the run report's plotting module (:mod:`harness.analysis.plots`): boxen
plots of per-job metrics per policy, box plots of the ratios to the baseline, and each
metric against every swept parameter (periods, [sweep] variables, shrink factors). The
tables are in :mod:`harness.experiments.report_tables`. Only cells of the grid as last
run count (rows of cells since removed from the file stay in the table, unused).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.analysis import plots
from harness.analysis.document import Block, Image, Section
from harness.analysis.formatting import UNITS
from harness.analysis.render import render_html, render_markdown
from harness.experiments.report_data import ExperimentData, load_experiment
from harness.experiments.report_tables import header_section, table_sections
from harness.experiments.stats import match_axes, ratios
from harness.model.atomic import atomic_write_text
from harness.model.metric_names import metric_spec
from harness.model.rundir import PLOTS_DIR, REPORT_HTML, REPORT_MD

JOB_LABELS = {
    "wait": "waiting time (s)", "turnaround": "turnaround time (s)", "runtime": "run time (s)",
    "slowdown": "slowdown", "bsld": "bounded slowdown", "wslowdown": "weighted slowdown",
}  # fmt: skip
SWEPT = ("period", "shrink")  # axes plotted against, besides the [sweep] variables


def write_experiment_report(exp_dir: Path) -> list[Path]:
    """Write the plots, ``report.md`` and ``report.html`` into ``exp_dir``; return their paths."""
    data = load_experiment(Path(exp_dir))
    figures = write_figures(data) if len(data.table) else []
    title = f"Experiment {data.manifest.get('name', data.exp_dir.name)}"
    sections = [header_section(data), *table_sections(data), _figures_section(data, figures)]
    md = data.exp_dir / REPORT_MD
    atomic_write_text(md, render_markdown(title, sections))
    page = data.exp_dir / REPORT_HTML
    atomic_write_text(page, render_html(title, sections))
    return [*figures, md, page]


def write_figures(data: ExperimentData) -> list[Path]:
    out = data.exp_dir / PLOTS_DIR
    out.mkdir(exist_ok=True)
    figures = [*_boxen_figures(data, out), *_ratio_figures(data, out)]
    for axis in swept_axes(data):
        figures += [_against_figure(data, metric, axis, out) for metric in data.settings.get("metrics", [])]
    return figures


def _boxen_figures(data: ExperimentData, out: Path) -> list[Path]:
    paths = []
    for column in data.settings.get("job_metrics", []):
        values = {}
        for policy in data.policies:
            jobs = data.jobs(data.keys(policy=policy))
            if len(jobs):
                values[policy] = jobs[column].to_numpy()
        if values:
            label = JOB_LABELS.get(column, column)
            title = f"{label.split(' (')[0].capitalize()} of every job, per policy (jobs of all its cells)"
            paths.append(plots.plot_boxen(values, label, out / f"boxen-{column}.png", title))
    return paths


def _ratio_figures(data: ExperimentData, out: Path) -> list[Path]:
    baseline = data.settings.get("baseline")
    if not baseline:
        return []
    paths = []
    for metric in data.settings.get("metrics", []):
        r = ratios(data.table, metric, baseline, data.sweep)
        groups = {p: g["ratio"].to_numpy() for p, g in r.groupby("policy", sort=False)}
        if groups:
            label = metric_spec(metric).label
            title = f"{label} divided by {baseline}'s on the same {matched_on(data)}"
            path = out / f"ratio-{metric}.png"
            paths.append(plots.plot_ratio_boxes(groups, baseline, label.lower(), path, title))
    return paths


def swept_axes(data: ExperimentData) -> list[str]:
    """Numeric axes with at least two values: each metric is plotted against them."""
    table = data.table
    axes = [a for a in (*SWEPT, *data.sweep) if a in table.columns]
    numeric = [a for a in axes if pd.api.types.is_numeric_dtype(table[a].dropna())]
    return [a for a in numeric if table[a].dropna().nunique() >= 2]


def _against_figure(data: ExperimentData, metric: str, axis: str, out: Path) -> Path:
    frame = data.table[(data.table["metric"] == metric) & data.table[axis].notna()]
    series_col = "family" if axis in data.sweep else "policy"
    rows = []
    for (series, x), group in frame.groupby([series_col, axis], sort=False):
        lo, hi = data.interval(metric, group)
        rows.append({"series": series, "x": float(x), "y": group["value"].mean(), "lo": lo, "hi": hi})
    label = axis_label(metric)
    title = f"{metric_spec(metric).label} against {axis} (95 % intervals)"
    path = out / f"{metric}-by-{axis}.png"
    return plots.plot_against(pd.DataFrame(rows), axis, label, path, title, bars=axis == "period")


def axis_label(metric: str) -> str:
    spec = metric_spec(metric)
    unit = UNITS[spec.kind]
    return f"{spec.label} ({unit})" if unit and spec.kind != "count" else spec.label


def matched_on(data: ExperimentData) -> str:
    """The axes a ratio's two cells share, those that vary: ``period``, ``period, rep``."""
    axes = [a for a in match_axes(data.table, data.sweep) if data.table[a].nunique(dropna=False) > 1]
    return ", ".join(axes) if axes else "workload"


def _figures_section(data: ExperimentData, figures: list[Path]) -> Section:
    blocks: list[Block] = []
    for path in figures:
        rel = path.relative_to(data.exp_dir).as_posix()
        blocks.append(Image(rel, path.stem, _caption(path.stem, data)))
    return Section("Plots", blocks or ["No plots: no cell has finished."])


def _caption(stem: str, data: ExperimentData) -> str:
    if stem.startswith("boxen-"):
        return ("Letter-value plot of depth 4 (Kopański Section 4.1): boxes from the quartiles out to the "
                "1/8, 1/16 and 1/32 quantiles, the median in white, the jobs beyond as dots.")  # fmt: skip
    if stem.startswith("ratio-"):
        return (f"Ratios to {data.settings.get('baseline')} (Kopański Figures 4.46-4.49): the box spans the "
                "quartiles, each dot is one cell; below 1 is better.")  # fmt: skip
    return ("Mean over the cells at each value, with a bootstrap 95 % interval over their values, or over "
            "the jobs for a single cell (Kopański's intervals).")  # fmt: skip
