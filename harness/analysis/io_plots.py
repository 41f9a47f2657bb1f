"""The bandwidth plot of an io-aware simulation: PFS and BB-node links over time,
drawn like the utilisation plot (steps, dashed mean over the makespan)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from harness.analysis.figures import DEFAULT_FIGURE_FORMATS, save_figure
from harness.analysis.formatting import HOUR

CAPTION = (
    "Share of the PFS link's and of the BB nodes' bandwidth carried by transfers over time; "
    "the dashed line is the mean over the makespan (util PFS bw, util BB bw)."
)


def plot_bandwidth(
    timeline: pd.DataFrame,
    capacity_bps: dict[str, float],
    out: Path,
    *,
    title: str = "",
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """``timeline`` has columns time, pfs_bps, bb_bps (the trace's seconds); ``capacity_bps``
    the links' totals under the keys ``pfs`` and ``bb`` (per second as well)."""
    fig = Figure(figsize=(12, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    t = timeline["time"].to_numpy(np.float64) / HOUR
    span = (t[-1] - t[0]) if len(t) > 1 else 0.0
    for ax, (key, label) in zip(axes, (("pfs", "PFS link"), ("bb", "BB-node links")), strict=True):
        level = 100 * timeline[f"{key}_bps"].to_numpy(np.float64) / capacity_bps[key]
        ax.step(t, level, where="post", lw=1.0)
        ax.fill_between(t, level, step="post", alpha=0.25)
        if span > 0:
            mean = float(np.sum(level[:-1] * np.diff(t)) / span)
            ax.axhline(mean, color="k", ls="--", lw=1, label=f"mean: {mean:.2f} %")
            ax.legend(loc="upper right", fontsize="small")
        ax.set_ylabel(f"{label} (% of bandwidth)")
        ax.grid(True, alpha=0.3)
    axes[0].set_title(title or "Bandwidth in use")
    axes[1].set_xlabel("time (hours, original trace time)")
    return save_figure(fig, out, formats)
