"""The look the tool's plots share: colours of jobs, statuses and policies, titles and the
time axis (in the trace's original time, in hours)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.patches import Patch

from harness.analysis.rundata import RunData

STATUS_COLOURS = {"timeout": "#d62728", "killed": "#7f0000", "cut": "#9e9e9e"}
# Qualitative colours for completed jobs, without the reds and greys reserved above.
JOB_COLOURS = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#9467bd",
               "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d",
               "#17becf", "#9edae5"]  # fmt: skip

# matplotlib's tab10, in the thesis's order of policy colours (blue, orange, green, red, ...)
POLICY_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                  "#7f7f7f", "#bcbd22", "#17becf"]  # fmt: skip


def policy_colour(index: int) -> str:
    return POLICY_COLOURS[index % len(POLICY_COLOURS)]


def run_title(run: RunData, what: str) -> str:
    m = run.manifest
    return f"{what}: {m.get('policy', '?')} on {m.get('trace', '?')} (run {m.get('run_id', '?')})"


def time_axis(ax: Any) -> None:
    ax.set_xlabel("time since replay start (hours, original trace time)")
    ax.grid(True, alpha=0.3)


def status_legend(ax: Any, statuses: set[str], extra: Sequence[Any] = ()) -> None:
    """The legend of job colours, after the ``extra`` handles (a capacity line)."""
    handles = [*extra, Patch(color=JOB_COLOURS[0], label="completed (colour per job)")]
    handles += [Patch(color=c, label=s) for s, c in STATUS_COLOURS.items() if s in statuses]
    ax.legend(handles=handles, loc="upper right", fontsize="small", framealpha=0.85)
