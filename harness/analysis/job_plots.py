"""Plots of every job rather than of averages: the tails of waits and bounded slowdowns (one
curve per policy), and a Gantt chart of the burst buffer over time.

Means hide the few jobs that wait for days; a paper's reader asks how many jobs waited more
than an hour. The tail plot answers on log axes: the share of jobs whose wait (or bounded
slowdown) is at least x. Every time axis is in the trace's original time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, save_figure
from harness.analysis.formatting import HOUR
from harness.analysis.metrics import job_metrics
from harness.analysis.plot_style import (
    JOB_COLOURS,
    STATUS_COLOURS,
    policy_colour,
    run_title,
    status_legend,
    time_axis,
)
from harness.analysis.rundata import RunData
from harness.analysis.series import bb_layout
from harness.model.metric_names import DEFAULT_TAU_S

TAIL_PANELS = (("wait", "waiting time (s, log scale; < 1 s drawn at 1 s)", 1.0),
               ("bsld", "bounded slowdown (log scale)", 1.0))  # fmt: skip
TAIL_GUIDES = ((0.5, "median"), (0.05, "5 % of jobs"), (0.01, "1 %"))


def tail_curve(values: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """(x, share): the share of the values that are >= x, at each sorted value (floored)."""
    x = np.sort(np.maximum(np.asarray(values, dtype=np.float64), floor))
    n = len(x)
    return x, (n - np.arange(n)) / max(n, 1)


def plot_tails(
    per_policy: Mapping[str, pd.DataFrame],
    out: Path,
    title: str,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """Two panels, waits and bounded slowdowns: for each policy (a frame with ``wait`` and
    ``bsld`` per job) the share of its jobs at or above x, on log-log axes."""
    fig = Figure(figsize=(12, 5), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (column, label, floor) in zip(axes, TAIL_PANELS, strict=True):
        for i, (policy, jobs) in enumerate(per_policy.items()):
            x, share = tail_curve(jobs[column].to_numpy(), floor)
            if len(x):
                ax.step(
                    x, share, where="post", color=policy_colour(i), lw=1.5, label=f"{policy} ({len(x)} jobs)"
                )
        for level, text in TAIL_GUIDES:
            ax.axhline(level, color="grey", ls=":", lw=0.8)
            ax.annotate(text, (0.01, level), xycoords=("axes fraction", "data"), fontsize="x-small",
                        color="grey", va="bottom")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("share of jobs at or above x")
    axes[1].legend(loc="upper right", fontsize="small")
    fig.suptitle(title)
    return save_figure(fig, out, formats)


def plot_run_tails(run: RunData, jobs: pd.DataFrame, out: Path, formats: Sequence[str]) -> Path:
    """The tail plot of one run, with the bounded slowdown's tau the run was measured with."""
    tau = float((run.manifest.get("settings") or {}).get("tau") or DEFAULT_TAU_S)
    policy = str(run.manifest.get("policy", "run"))
    return plot_tails({policy: job_metrics(jobs, tau=tau)}, out, run_title(run, "Tails"), formats)


def plot_bb_gantt(run: RunData, jobs: pd.DataFrame, out: Path, formats: Sequence[str]) -> Path:
    """One bar per job that holds burst buffer, from its start to its end, as tall as the
    buffer it holds (:func:`harness.analysis.series.bb_layout`), under the total capacity."""
    layout = bb_layout(jobs)
    fig = Figure(figsize=(12, 5.5), layout="constrained")
    ax = fig.add_subplot()
    gb = 1000.0  # MB per GB, as Slurm's and the platform's MB
    x0, x1 = layout["start"].to_numpy() / HOUR, layout["end"].to_numpy() / HOUR
    y0, y1 = layout["y0"].to_numpy() / gb, layout["y1"].to_numpy() / gb
    verts = np.stack([np.column_stack(c) for c in ((x0, y0), (x0, y1), (x1, y1), (x1, y0))], axis=1)
    rank = pd.factorize(layout["job_id"])[0]
    colours = [STATUS_COLOURS.get(s, JOB_COLOURS[k % len(JOB_COLOURS)])
               for s, k in zip(layout["status"], rank, strict=True)]  # fmt: skip
    thin = len(layout) < 5000  # edges would blacken a dense chart
    ax.add_collection(PolyCollection(verts, facecolors=colours, edgecolors="white" if thin else "none",  # type: ignore[arg-type]
                                     linewidths=0.3 if thin else 0))  # fmt: skip
    total = float(run.platform.get("bb_total_mb") or 0.0) / gb
    top = max(total, float(y1.max(initial=0.0)))
    if total:
        ax.axhline(total, color="k", ls="--", lw=1, label=f"capacity: {total:,.0f} GB")
    held = int(layout["job_id"].nunique())
    ax.set_xlim(
        float(jobs["start"].min()) / HOUR if len(jobs) else 0.0, max(float(x1.max(initial=0)), 1e-9) * 1.01
    )
    ax.set_ylim(0, max(top, 1e-9) * 1.05)
    ax.set_ylabel(f"burst buffer held (GB); {held} of {len(jobs)} jobs hold some")
    ax.set_title(run_title(run, "Burst-buffer Gantt chart"))
    time_axis(ax)
    status_legend(ax, set(layout["status"]), extra=ax.get_legend_handles_labels()[0])
    return save_figure(fig, out, formats)
