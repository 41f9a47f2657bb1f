"""Statistics of an experiment pooled over one axis, as Barberato's Table 4.8 pools the
sampling offsets: per metric and per group of cells that differ only in that axis (and in
the repetition), the mean (AVE), standard deviation (SSD, divisor n), relative SD (RSD %)
and 95 % half-width (C95) over the group's cells.

:func:`pooled_table` is the full-precision table (what ``report.csv`` holds);
:func:`pooled_section` the same numbers formatted for the report.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.analysis.document import Block, Section, Table
from harness.analysis.formatting import format_number
from harness.experiments.report_data import ExperimentData
from harness.experiments.report_tables import plain_value
from harness.experiments.stats import axes_of, group_stats
from harness.model.checks import InputError
from harness.model.metric_names import metric_spec

STATISTICS = ("n", "AVE", "SSD", "RSD", "C95")
REPETITION = "rep"  # always pooled: a group's repetitions are its cells' samples


def poolable_axes(data: ExperimentData) -> list[str]:
    """The axes of the experiment's table one may pool over (the repetition always is)."""
    return [a for a in axes_of(data.table) if a not in (REPETITION, "family")]


def check_axis(data: ExperimentData, axis: str) -> str:
    """``axis`` if the experiment has it, else a one-line error naming the ones it has."""
    axes = poolable_axes(data)
    if axis not in axes:
        raise InputError(
            f"no axis {axis!r} in this experiment (axes: {', '.join(axes) or 'none'})", where="--over"
        )
    return axis


def pooled_table(data: ExperimentData, metrics: Sequence[str], over: str | None = None) -> pd.DataFrame:
    """One row per metric and group: ``metric``, the group's axes that vary, then ``n``,
    ``AVE``, ``SSD``, ``RSD`` (%), ``C95`` over the cells pooled (repetitions, and ``over``)."""
    pooled = (REPETITION, over) if over else (REPETITION,)
    parts = []
    for metric in metrics:
        stats = group_stats(data.table, metric, over=pooled)
        if stats.empty:
            continue
        stats.insert(0, "metric", metric)
        parts.append(stats)
    if not parts:
        return pd.DataFrame(columns=["metric", *STATISTICS])
    frame = pd.concat(parts, ignore_index=True)
    heads = [a for a in axes_of(frame) if a not in (*STATISTICS, "mean", "median")]
    # Only the axes that vary are columns (the family repeats the policy's name).
    kept = [a for a in heads if a == "policy" or (a != "family" and frame[a].nunique(dropna=False) > 1)]
    return frame[["metric", *kept, *STATISTICS]]


def pooled_section(data: ExperimentData, metrics: Sequence[str], over: str) -> Section:
    """The pooled statistics as one table per metric, in the report's number formats."""
    frame = pooled_table(data, metrics, over)
    axes = [c for c in frame.columns if c not in ("metric", *STATISTICS)]
    blocks: list[Block] = [
        f"Each metric over the values of `{over}` (and the repetitions) pooled, per group of the other "
        "axes: the mean (AVE), standard deviation (SSD, divisor n), relative SD in % (RSD) and the "
        "95 % half-width (C95) over the pooled cells (Barberato's Table 4.8 pools the offsets so)."
    ]
    for metric, rows in frame.groupby("metric", sort=False):
        kind = metric_spec(str(metric)).kind
        body = [
            [*(plain_value(r[a]) for a in axes), str(int(r["n"])), format_number(kind, r["AVE"]),
             format_number(kind, r["SSD"]), format_number("ratio", r["RSD"]), format_number(kind, r["C95"])]
            for _, r in rows.iterrows()
        ]  # fmt: skip
        headers = [*axes, "n", "AVE", "SSD", "RSD %", "C95"]
        blocks += [f"**{metric_spec(str(metric)).label}** (`{metric}`)", Table(headers, body)]
    return Section(f"Pooled over {over}", blocks)
