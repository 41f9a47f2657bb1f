"""The report of an experiment directory: ``report.md``, ``report.html`` and ``plots/*``.

The plots are drawn by the run report's plotting module (:mod:`harness.analysis.plots`): boxen
plots of per-job metrics per policy, box plots of the ratios to the baseline, and each
metric against every swept parameter (periods, [sweep] variables, shrink factors). The
tables are in :mod:`harness.experiments.report_tables`. Only cells of the grid as last
run count (rows of cells since removed from the file stay in the table, unused).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from harness.analysis import plots
from harness.analysis.document import Block, Image, Section
from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, figure_paths
from harness.analysis.formatting import UNITS
from harness.analysis.job_plots import plot_tails
from harness.analysis.render import render_html, render_markdown
from harness.analysis.render_latex import render_latex
from harness.experiments.report_data import ExperimentData, load_experiment
from harness.experiments.report_options import DEFAULT_REPORT, ReportOptions
from harness.experiments.report_pooled import check_axis, pooled_section, pooled_table
from harness.experiments.report_settings import ranked_section, screening_section
from harness.experiments.report_tables import header_section, reported_metrics, table_sections
from harness.experiments.stats import match_axes, ratios
from harness.model.atomic import atomic_write_csv, atomic_write_text
from harness.model.checks import InputError
from harness.model.expdir import REPORT_CSV, REPORT_TEX
from harness.model.metric_names import metric_spec
from harness.model.rundir import PLOTS_DIR, REPORT_HTML, REPORT_MD

JOB_LABELS = {
    "wait": "waiting time (s)", "turnaround": "turnaround time (s)", "runtime": "run time (s)",
    "slowdown": "slowdown", "bsld": "bounded slowdown", "wslowdown": "weighted slowdown",
}  # fmt: skip
SWEPT = ("period", "shrink")  # axes plotted against, besides the [sweep] variables


def write_experiment_report(exp_dir: Path, options: ReportOptions = DEFAULT_REPORT) -> list[Path]:
    """Write the plots (each in every figure format of ``options``) and the report in each of
    its text formats into ``exp_dir``; return the paths of every file written."""
    data = select_metrics(load_experiment(Path(exp_dir)), options.metrics)
    if options.over:
        check_axis(data, options.over)
    shown = write_figures(data, options.figure_formats) if len(data.table) else []
    written = [f for fig in shown for f in figure_paths(fig, options.figure_formats)]
    title = f"Experiment {data.manifest.get('name', data.exp_dir.name)}"
    sections = [header_section(data), *_settings_sections(data, options.rank), *table_sections(data)]
    if options.over and len(data.table):
        sections.append(pooled_section(data, reported_metrics(data), options.over))
    sections.append(_figures_section(data, shown))
    renderings = {"md": (REPORT_MD, render_markdown), "html": (REPORT_HTML, render_html),
                  "latex": (REPORT_TEX, render_latex)}  # fmt: skip
    for fmt in options.text_formats:
        if fmt == "csv":
            table = pooled_table(data, reported_metrics(data), options.over)
            written.append(atomic_write_csv(data.exp_dir / REPORT_CSV, table))
        else:
            name, render = renderings[fmt]
            written.append(atomic_write_text(data.exp_dir / name, render(title, sections)))
    return written


def _settings_sections(data: ExperimentData, rank: Sequence[str]) -> list[Section]:
    """The twin's screening (with ``[screen]``) and the settings ranked by ``rank`` (``--rank``)."""
    screening = screening_section(data)
    sections = [screening] if screening is not None else []
    if rank:
        check_measured(data, rank, "--rank")
        sections.append(ranked_section(data, rank))
    return sections


def check_measured(data: ExperimentData, metrics: Sequence[str], option: str) -> None:
    """A metric no finished cell measured is a one-line error naming the ones measured."""
    measured = list(dict.fromkeys(data.table["metric"])) if len(data.table) else []
    missing = [m for m in metrics if m not in measured]
    if missing:
        listed = ", ".join(measured) or "none: no cell has finished"
        raise InputError(f"not measured in this experiment: {', '.join(missing)} (measured: {listed})",
                         where=option)  # fmt: skip


def select_metrics(data: ExperimentData, metrics: Sequence[str]) -> ExperimentData:
    """``data`` reporting ``metrics`` instead of its file's (unchanged when none are named);
    a metric no finished cell measured is a one-line error naming the ones measured."""
    if not metrics:
        return data
    check_measured(data, metrics, "--metrics")
    settings = {**data.settings, "metrics": list(metrics)}
    return replace(data, manifest={**data.manifest, "report": settings})


def write_figures(data: ExperimentData, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS) -> list[Path]:
    """The experiment's plots in each of ``formats``; returns the paths the report embeds."""
    out = data.exp_dir / PLOTS_DIR
    out.mkdir(exist_ok=True)
    figures = [*_boxen_figures(data, out, formats), *_tail_figures(data, out, formats)]
    figures += _ratio_figures(data, out, formats)
    for axis in swept_axes(data):
        metrics = data.settings.get("metrics", [])
        figures += [_against_figure(data, metric, axis, out, formats) for metric in metrics]
    return figures


def job_groups(data: ExperimentData) -> dict[str, list[str]]:
    """The cells whose jobs a figure pools, by label: one group per policy or, with Slurm
    settings swept, per policy and combination of settings (the ranked table's rows)."""
    axes = _setting_axes(data)
    if not axes:
        return {p: data.keys(policy=p) for p in data.policies}
    groups: dict[str, list[str]] = {}
    several = data.table["policy"].nunique() > 1
    for values, rows in data.table.groupby(["policy", *axes], sort=False):
        named = [f"{a.split('.')[-1]}={v}" for a, v in zip(axes, values[1:], strict=True)]
        groups["\n".join([values[0], *named] if several else named)] = list(dict.fromkeys(rows["key"]))
    return groups


def _setting_axes(data: ExperimentData) -> list[str]:
    """The swept Slurm settings the results hold (what job_groups and the titles go by)."""
    return [a for a in data.settings.get("slurm_axes", []) if a in data.table.columns]


def _grouped_by(data: ExperimentData) -> str:
    return "per setting" if _setting_axes(data) else "per policy"


def _boxen_figures(data: ExperimentData, out: Path, formats: Sequence[str]) -> list[Path]:
    paths = []
    groups = job_groups(data)
    for column in data.settings.get("job_metrics", []):
        values = {}
        for label, keys in groups.items():
            jobs = data.jobs(keys)
            if len(jobs):
                values[label] = jobs[column].to_numpy()
        if values:
            label = JOB_LABELS.get(column, column)
            name = label.split(" (")[0].capitalize()
            title = f"{name} of every job, {_grouped_by(data)} (all its cells)"
            paths.append(plots.plot_boxen(values, label, out / f"boxen-{column}", title, formats=formats))
    return paths


def _tail_figures(data: ExperimentData, out: Path, formats: Sequence[str]) -> list[Path]:
    """Waits and bounded slowdowns of every job, one curve per group (its cells' jobs pooled)."""
    per_group = {label: data.jobs(keys) for label, keys in job_groups(data).items()}
    per_group = {label: jobs for label, jobs in per_group.items() if len(jobs)}
    if not per_group:
        return []
    title = f"Tails of waits and bounded slowdowns, {_grouped_by(data)} (all its cells)"
    return [plot_tails(per_group, out / "tails", title, formats)]


def _ratio_figures(data: ExperimentData, out: Path, formats: Sequence[str]) -> list[Path]:
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
            path = out / f"ratio-{metric}"
            paths.append(plots.plot_ratio_boxes(groups, baseline, label.lower(), path, title, formats))
    return paths


def swept_axes(data: ExperimentData) -> list[str]:
    """Numeric axes with at least two values: each metric is plotted against them."""
    table = data.table
    axes = [a for a in (*SWEPT, *data.sweep) if a in table.columns]
    numeric = [a for a in axes if pd.api.types.is_numeric_dtype(table[a].dropna())]
    return [a for a in numeric if table[a].dropna().nunique() >= 2]


def _against_figure(data: ExperimentData, metric: str, axis: str, out: Path, formats: Sequence[str]) -> Path:
    frame = data.table[(data.table["metric"] == metric) & data.table[axis].notna()]
    series_col = "family" if axis in data.sweep else "policy"
    rows = []
    for (series, x), group in frame.groupby([series_col, axis], sort=False):
        lo, hi = data.interval(metric, group)
        rows.append({"series": series, "x": float(x), "y": group["value"].mean(), "lo": lo, "hi": hi})
    label = axis_label(metric)
    title = f"{metric_spec(metric).label} against {axis} (95 % intervals)"
    path = out / f"{metric}-by-{axis}"
    return plots.plot_against(pd.DataFrame(rows), axis, label, path, title, axis == "period", formats)


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
    if stem == "tails":
        return ("The share of each policy's jobs whose wait (left) or bounded slowdown (right) is at least "
                "x, on log axes: the curves' right ends are the tails a mean hides; the dotted lines mark "
                "the median, the 5 % and the 1 % of jobs.")  # fmt: skip
    if stem.startswith("ratio-"):
        return (f"Ratios to {data.settings.get('baseline')} (Kopański Figures 4.46-4.49): the box spans the "
                "quartiles, each dot is one cell; below 1 is better.")  # fmt: skip
    return ("Mean over the cells at each value, with a bootstrap 95 % interval over their values, or over "
            "the jobs for a single cell (Kopański's intervals).")  # fmt: skip
