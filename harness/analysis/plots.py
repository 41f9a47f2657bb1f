"""The plots of a run (Gantt, utilisation, queue, waits; the burst-buffer Gantt chart and the
tails from :mod:`harness.analysis.job_plots`), of a comparison of runs, and of an experiment
(boxen plots per policy, ratios to a baseline, metrics against a swept parameter).

Every time axis is in the trace's original time, in hours. Every figure is written by
:func:`harness.analysis.figures.save_figure`, in each of the formats asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from harness.analysis.compare import run_order
from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, save_figure
from harness.analysis.formatting import HOUR, format_metric
from harness.analysis.job_plots import plot_bb_gantt, plot_run_tails
from harness.analysis.metrics import LETTER_VALUE_QUANTILES, quantiles
from harness.analysis.plot_style import (
    JOB_COLOURS,
    STATUS_COLOURS,
    policy_colour,
    run_title,
    status_legend,
    time_axis,
)
from harness.analysis.rundata import RunData
from harness.analysis.series import gantt_layout, queue_series, usage_series
from harness.model.metric_names import HIGHER_IS_BETTER, metric_spec
from harness.model.rundir import PLOTS_DIR

PLOT_CAPTIONS = {
    "gantt": "Gantt chart: one bar per job per compute node it held, from start to end. "
    "Red bars hit their walltime (timeout), dark red ones were killed, grey ones cut when the "
    "replay stopped.",
    "utilisation": "Share of compute nodes and of burst-buffer capacity held by running jobs "
    "over time; the dashed line is the mean over the makespan (the metrics' utilisation).",
    "queue": "Jobs submitted but not yet started, and the compute nodes they ask for, over time.",
    "waits": "Cumulative distribution of the waiting time (submission to start) of the jobs that ran.",
    "bb-gantt": "Burst-buffer Gantt chart: one bar per job holding burst buffer, from start to end, as "
    "tall as the buffer it holds; bars are stacked in start order into the room left by running jobs "
    "(a job split where no gap holds it whole), so the stack's height is the buffer in use.",
    "tails": "Tails of the waits and bounded slowdowns: the share of jobs at or above x, on log axes; "
    "where the curve crosses the dotted 5 % line is the 95th percentile.",
}


def plot_gantt(
    run: RunData, jobs: pd.DataFrame, out: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    compute_count = int(run.platform.get("compute_count") or jobs["nodes"].max())
    layout = gantt_layout(jobs, compute_count)
    fig = Figure(figsize=(12, 6.5), layout="constrained")
    ax = fig.add_subplot()
    x0, x1 = layout["start"].to_numpy() / HOUR, layout["end"].to_numpy() / HOUR
    y0 = layout["node"].to_numpy() - 0.45
    verts = np.stack(
        [np.column_stack(p) for p in ((x0, y0), (x0, y0 + 0.9), (x1, y0 + 0.9), (x1, y0))], axis=1
    )
    job_rank = pd.factorize(layout["job_id"])[0]
    colours = [
        STATUS_COLOURS.get(s, JOB_COLOURS[k % len(JOB_COLOURS)])
        for s, k in zip(layout["status"], job_rank, strict=True)
    ]
    thin = len(layout) < 5000  # edges would blacken a dense chart
    ax.add_collection(
        PolyCollection(
            verts,  # type: ignore[arg-type]  # an (N, 4, 2) array of vertices, as matplotlib accepts
            facecolors=colours,
            edgecolors="white" if thin else "none",
            linewidths=0.3 if thin else 0,
        )
    )
    n_rows = max(int(layout["node"].max()) + 1 if len(layout) else 0, compute_count)
    ax.set_xlim(0, max(float(x1.max(initial=0)), 1e-9) * 1.01)
    ax.set_ylim(n_rows - 0.5, -0.5)  # node 1 at the top
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"compute node index (0 to {n_rows - 1})")
    ax.set_title(run_title(run, "Gantt chart"))
    time_axis(ax)
    status_legend(ax, set(layout["status"]))
    return save_figure(fig, out, formats)


def plot_utilisation(
    run: RunData, jobs: pd.DataFrame, out: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    series = usage_series(jobs, run.platform)
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    panels = (("compute", "util_compute", "compute nodes in use"), ("bb", "util_bb", "burst buffer in use"))
    for ax, (key, metric, label) in zip(axes, panels, strict=True):
        t, level = series[key]
        _draw_steps(ax, t, level * 100, jobs)
        mean = run.metrics.get(metric)
        if isinstance(mean, int | float):
            ax.axhline(100 * mean, color="k", ls="--", lw=1, label=f"mean over makespan: {100 * mean:.2f} %")
            ax.legend(loc="upper right", fontsize="small")
        ax.set_ylabel(f"{label} (% of capacity)")
        ax.set_ylim(0, max(105.0, float(level.max(initial=0)) * 105))
        ax.grid(True, alpha=0.3)
    axes[0].set_title(run_title(run, "Utilisation"))
    time_axis(axes[1])
    return save_figure(fig, out, formats)


def _draw_steps(ax: Any, t: np.ndarray, level: np.ndarray, jobs: pd.DataFrame) -> None:
    """A step function from the first submission to the last event, in hours."""
    first = float(jobs["submit"].min()) if len(jobs) else 0.0
    t = np.concatenate([[min(first, t[0] if len(t) else first)], t]) / HOUR
    level = np.concatenate([[0.0], level])
    ax.step(t, level, where="post", lw=1.2)
    ax.fill_between(t, level, step="post", alpha=0.25)


def plot_queue(
    run: RunData, jobs: pd.DataFrame, out: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    series = queue_series(jobs)
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for ax, (key, label) in zip(
        axes, (("jobs", "pending jobs"), ("nodes", "pending node demand (nodes)")), strict=True
    ):
        t, level = series[key]
        _draw_steps(ax, t, level, jobs)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    compute = run.platform.get("compute_count")
    if compute:
        axes[1].axhline(compute, color="k", ls=":", lw=1, label=f"machine size ({compute} nodes)")
        axes[1].legend(loc="upper right", fontsize="small")
    axes[0].set_title(run_title(run, "Queue"))
    time_axis(axes[1])
    return save_figure(fig, out, formats)


WAIT_TICKS = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (HOUR, "1 h"),
    (6 * HOUR, "6 h"),
    (24 * HOUR, "1 d"),
    (7 * 24 * HOUR, "1 w"),
)


def plot_waits(
    run: RunData, jobs: pd.DataFrame, out: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    """ECDF on a log axis; waits under 1 s (the replay's resolution) are drawn at 1 s."""
    waits = np.sort((jobs["start"] - jobs["submit"]).to_numpy(np.float64))
    shown = np.maximum(waits, 1.0)
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    ax = fig.add_subplot()
    ecdf = np.arange(1, len(waits) + 1) / max(len(waits), 1)
    top = max(float(shown.max(initial=1.0)), 10.0)
    # Start at 0 on the left edge and run on to the right edge, so the curve spans the axis.
    x = np.concatenate([[1.0], shown, [top * 1.5]])
    ax.step(x, np.concatenate([[0.0], ecdf, [1.0]]), where="post", lw=1.5)
    ax.set_xscale("log")
    ticks = [(v, s) for v, s in WAIT_TICKS if v <= top * 10]
    ax.set_xticks([v for v, _ in ticks], [s for _, s in ticks])
    ax.set_xlim(1.0, top * 1.5)
    ax.set_ylim(0, 1.02)
    for key, style in (("median_wait", ":"), ("mean_wait", "--")):
        value = run.metrics.get(key)
        if isinstance(value, int | float) and value > 0:
            ax.axvline(
                value,
                color="k",
                ls=style,
                lw=1,
                label=f"{metric_spec(key).label}: {format_metric(key, value)} ({value / HOUR:.2f} h)",
            )
    zero = int((waits < 1.0).sum())
    ax.set_xlabel(f"waiting time (log scale, original time; {zero} of {len(waits)} jobs waited < 1 s)")
    ax.set_ylabel("fraction of jobs waiting at most x")
    ax.set_title(run_title(run, "Waiting time"))
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize="small")
    return save_figure(fig, out, formats)


PLOTTERS = (
    ("gantt", plot_gantt),
    ("bb-gantt", plot_bb_gantt),
    ("utilisation", plot_utilisation),
    ("queue", plot_queue),
    ("waits", plot_waits),
    ("tails", plot_run_tails),
)


def write_plots(run: RunData, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS) -> list[Path]:
    """The run's plots in each of ``formats``; returns the paths a report embeds."""
    jobs = run.jobs()
    if jobs.empty:
        return []
    out_dir = run.run_dir / PLOTS_DIR
    out_dir.mkdir(exist_ok=True)
    return [plot(run, jobs, out_dir / name, formats) for name, plot in PLOTTERS]


# -- comparison of runs ----------------------------------------------------------------------


def plot_comparison(df: pd.DataFrame, out: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS) -> Path:
    """Grouped bars of each metric relative to the baseline, with C95 error bars."""
    runs = run_order(df)
    metrics = list(df.index)
    # Wide enough for the bar labels, but no wider than a page.
    width_in = min(16.0, max(8.0, len(metrics) * (1.0 + 0.3 * (len(runs) - 1)) + 2.0))
    fig = Figure(figsize=(width_in, 6.0), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(metrics))
    width = 0.8 / max(len(runs), 1)
    base = df[(df.attrs.get("baseline", runs[0]), "value")].to_numpy(np.float64)
    for i, run in enumerate(runs):
        ratio = df[(run, "ratio")].to_numpy(np.float64)
        # C95 in the baseline's units becomes a half-width on the ratio axis.
        with np.errstate(divide="ignore", invalid="ignore"):
            err = np.where(base != 0, df[(run, "c95")].to_numpy(np.float64) / np.abs(base), np.nan)
        pos = x - 0.4 + width * (i + 0.5)
        yerr = None if np.all(np.isnan(err)) else np.nan_to_num(err)
        bars = ax.bar(pos, np.nan_to_num(ratio, nan=0.0), width, label=run, yerr=yerr, capsize=3)
        if len(metrics) * len(runs) <= 40:
            labels = ["n/a" if np.isnan(r) else f"{r:.2f}" for r in ratio]
            ax.bar_label(bars, labels=labels, fontsize="x-small", padding=2)
    ax.axhline(1.0, color="k", lw=1, ls="--")
    ax.set_xticks(x, [_axis_label(m) for m in metrics], rotation=30, ha="right")
    ax.set_ylabel("ratio to baseline (1 = same as baseline)")
    ax.set_title(f"Metrics relative to the baseline run: {df.attrs.get('baseline', runs[0])}")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return save_figure(fig, out, formats)


def _axis_label(metric: str) -> str:
    arrow = "higher better" if metric in HIGHER_IS_BETTER else "lower better"
    return f"{metric_spec(metric).label}\n({arrow})"


# -- plots of experiments: several policies, many cells ------------------------------------------
# The thesis's figure types (Kopański Section 4.1): letter-value (boxen) plots of per-job
# metrics, box plots of per-period ratios to a baseline, means with 95 % intervals.


def plot_boxen(
    values: dict[str, np.ndarray],
    label: str,
    out: Path,
    title: str,
    floor: float = 1.0,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """Letter-value plots of depth 4, one per policy, on a log axis (values below ``floor``
    are drawn at ``floor``): nested boxes from the quartiles out to the 1/32 quantiles,
    each level narrower, the median a white line, jobs beyond the outer box as dots."""
    fig = Figure(figsize=(max(6.0, 1.6 * len(values) + 2), 5.5), layout="constrained")
    ax = fig.add_subplot()
    levels = len(LETTER_VALUE_QUANTILES) // 2  # 4 boxes around the median
    for i, vals in enumerate(values.values()):
        shown = np.maximum(np.asarray(vals, dtype=np.float64), floor)
        q = list(quantiles(shown).values())
        colour = policy_colour(i)
        for level in range(levels):  # the quartile box (level 0) is the widest and darkest
            lo, hi = q[levels - 1 - level], q[levels + 1 + level]
            half = 0.4 * (levels - level) / levels
            ax.add_patch(Rectangle((i - half, lo), 2 * half, hi - lo, facecolor=colour,
                                   alpha=1.0 - 0.2 * level, edgecolor="white", linewidth=0.6))  # fmt: skip
        ax.plot([i - 0.4, i + 0.4], [q[levels], q[levels]], color="white", lw=1.5)
        outer = shown[(shown < q[0]) | (shown > q[-1])]
        ax.scatter(np.full(len(outer), float(i)), outer, s=3, color=colour, alpha=0.5, rasterized=True)
    ax.set_yscale("log")
    ax.set_xticks(range(len(values)), list(values), rotation=20, ha="right")
    ax.set_xlim(-0.6, len(values) - 0.4)
    ax.set_ylabel(f"{label} (log scale; values < {floor:g} drawn at {floor:g})")
    ax.set_title(title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return save_figure(fig, out, formats)


def plot_ratio_boxes(
    ratios: dict[str, np.ndarray],
    baseline: str,
    label: str,
    out: Path,
    title: str,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """A box plot of each policy's ratios to the baseline, each ratio a black dot."""
    fig = Figure(figsize=(max(6.0, 1.5 * len(ratios) + 2), 5), layout="constrained")
    ax = fig.add_subplot()
    names = list(ratios)
    boxes = ax.boxplot([ratios[n] for n in names], positions=range(len(names)), widths=0.6,
                       showfliers=False, patch_artist=True, medianprops={"color": "black"})  # fmt: skip
    for i, patch in enumerate(boxes["boxes"]):
        patch.set_facecolor(policy_colour(i + 1))  # colour 0 is the baseline's elsewhere
        patch.set_alpha(0.6)
    jitter = np.random.default_rng(0)  # fixed: the same figure on every run
    for i, name in enumerate(names):
        r = np.asarray(ratios[name], dtype=np.float64)
        ax.scatter(i + jitter.uniform(-0.12, 0.12, len(r)), r, s=12, color="black", zorder=3)
    ax.axhline(1.0, color="grey", ls="--", lw=1, label=f"{baseline} (= 1)")
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel(f"{label}, ratio to {baseline}")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    return save_figure(fig, out, formats)


def plot_against(
    points: pd.DataFrame,
    x: str,
    label: str,
    out: Path,
    title: str,
    bars: bool = False,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """A metric against a swept parameter, one series per policy, with its 95 % interval.

    ``points`` has columns ``series, x, y, lo, hi``. With ``bars`` the values of x are
    categories (the periods of a split workload) drawn as grouped bars like the thesis's
    per-period plots; otherwise lines with error bars.
    """
    fig = Figure(figsize=(11, 5), layout="constrained")
    ax = fig.add_subplot()
    xs = sorted(points["x"].unique())
    series = list(dict.fromkeys(points["series"]))
    width = 0.8 / max(len(series), 1)
    for i, name in enumerate(series):
        p = points[points["series"] == name].sort_values("x")
        pos = np.searchsorted(xs, p["x"]) + (i - (len(series) - 1) / 2) * width if bars else p["x"]
        err = np.vstack([p["y"] - p["lo"], p["hi"] - p["y"]]).clip(min=0)
        if bars:
            ax.bar(pos, p["y"], width, color=policy_colour(i), label=name, yerr=err, capsize=2,
                   error_kw={"lw": 0.8})  # fmt: skip
        else:
            ax.errorbar(pos, p["y"], yerr=err, color=policy_colour(i), label=name, marker="o", capsize=3)
    if bars:
        ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
    else:
        ax.set_xticks(xs, [f"{v:g}" for v in xs])
    ax.set_xlabel(x)
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.legend(fontsize="small", ncols=min(len(series), 4))
    ax.grid(True, axis="y", alpha=0.3)
    return save_figure(fig, out, formats)
