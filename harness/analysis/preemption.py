"""Suspensions of a schedule: counts, and suspended jobs over time (Barberato Figures 5.1-5.5).

Input: the per-job results (with a ``priority`` column: 1 high, 0 low) and the suspension
intervals (``job_id, start, end``), emulated (from the jobs' own sigsleep records) or
simulated (:mod:`harness.sim.preemption`), in the plan's time unit. The figure shows, like
the thesis's, the compute nodes in use by running jobs (the utilisation), the nodes of the
high-priority jobs, and the number of suspended jobs, against time in original hours.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, save_figure

SPAN_COLUMNS = ("job_id", "start", "end")


def suspension_counts(jobs: pd.DataFrame, spans: pd.DataFrame) -> dict[str, Any]:
    """How many suspensions, of how many jobs, for how long (the trace's seconds)."""
    high = jobs["priority"].fillna(0).to_numpy() > 0 if "priority" in jobs.columns else np.zeros(0)
    lengths = (spans["end"] - spans["start"]).to_numpy(np.float64)
    return {
        "high_priority_jobs": int(high.sum()),
        "suspensions": len(spans),
        "suspended_jobs": int(spans["job_id"].nunique()),
        "suspended_s_total": float(lengths.sum()),
        "suspended_s_mean": float(lengths.mean()) if len(lengths) else 0.0,
        "max_suspended_at_once": int(step_count(spans)[1].max()) if len(spans) else 0,
    }


def step_count(spans: pd.DataFrame, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times, level): the number (or summed ``weights``) of intervals open from each time on."""
    if len(spans) == 0:
        return np.array([0.0]), np.array([0.0])
    w = np.ones(len(spans)) if weights is None else np.asarray(weights, dtype=np.float64)
    times = np.concatenate([spans["start"].to_numpy(np.float64), spans["end"].to_numpy(np.float64)])
    delta = np.concatenate([w, -w])
    order = np.lexsort((delta, times))  # at one instant, closings before openings
    return times[order], np.cumsum(delta[order])


def running_spans(jobs: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """The intervals in which each job runs: [start, end] minus its suspensions; with ``nodes``."""
    ran = jobs[jobs["start"].notna() & jobs["end"].notna()]
    cuts = spans.groupby("job_id")
    rows = []
    for job in ran.itertuples(index=False):
        begin = float(job.start)
        if job.job_id in cuts.groups:
            for s in cuts.get_group(job.job_id).sort_values("start").itertuples(index=False):
                rows.append((job.job_id, begin, float(s.start), job.nodes))
                begin = float(s.end)
        rows.append((job.job_id, begin, float(job.end), job.nodes))
    return pd.DataFrame(rows, columns=["job_id", "start", "end", "nodes"])


def plot_suspensions(
    jobs: pd.DataFrame, spans: pd.DataFrame, compute_nodes: int, out: Path, *,
    title: str = "Suspend/resume", formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:  # fmt: skip
    """Nodes busy running, nodes of high-priority jobs and suspended jobs over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    hours = 1.0 / 3600.0
    running = running_spans(jobs, spans)
    high_ids = set(jobs.loc[jobs.get("priority", pd.Series(0, index=jobs.index)) > 0, "job_id"])
    high = running[running["job_id"].isin(high_ids)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True, height_ratios=(2, 1))
    for part, colour, label in ((running, "tab:blue", "utilisation (running)"),
                                (high, "tab:red", "of which high-priority jobs")):  # fmt: skip
        t, nodes = step_count(part, part["nodes"].to_numpy())
        top.step(t * hours, 100.0 * nodes / compute_nodes, where="post", color=colour, label=label)
    top.set_ylabel("% of compute nodes")
    top.set_ylim(0, 105)
    top.legend(loc="lower right", fontsize=8)
    top.set_title(title)
    t, count = step_count(spans)
    bottom.step(t * hours, count, where="post", color="tab:orange")
    bottom.fill_between(t * hours, count, step="post", color="tab:orange", alpha=0.3)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylabel("suspended jobs")
    bottom.set_xlabel("time (hours of original time)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    shown = save_figure(fig, out, formats)
    plt.close(fig)
    return shown
