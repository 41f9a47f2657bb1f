"""Statistics over an experiment's result table (long form: one row per cell and metric).

* :func:`group_stats`: per group of cells that differ only by repetition, the mean,
  median and Barberato's AVE/SSD/RSD/C95 (:func:`harness.analysis.metrics.repetition_stats`);
* :func:`ratios`: each cell's value divided by the baseline policy's value in the cell
  that matches it on every other axis (period, seed, repetition, ...): the thesis's
  normalised means (Kopański Figures 4.46-4.49);
* :func:`ratio_summary`: quartiles of those ratios per policy and how often it beats
  the baseline;
* :func:`ranking`: policies ranked per metric and on average over the metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.metrics import bootstrap_ci, repetition_stats
from harness.model.metric_names import HIGHER_IS_BETTER

NOT_GROUPING = ("key", "metric", "value", "seconds", "host")
# Aggregate metrics that are a statistic of a per-job column: (column, statistic).
JOB_STATISTICS: dict[str, tuple[str, Callable[[np.ndarray], Any]]] = {
    "mean_wait": ("wait", np.mean), "median_wait": ("wait", np.median),
    "mean_turnaround": ("turnaround", np.mean), "median_turnaround": ("turnaround", np.median),
    "mean_slowdown": ("slowdown", np.mean), "mean_bsld": ("bsld", np.mean),
    "median_bsld": ("bsld", np.median), "mean_wslowdown": ("wslowdown", np.mean),
}  # fmt: skip


def axes_of(table: pd.DataFrame) -> list[str]:
    """The grid's axes present in a result table, in table order."""
    return [c for c in table.columns if c not in NOT_GROUPING]


def metric_frame(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The rows of one metric, one per cell."""
    return table[table["metric"] == metric].reset_index(drop=True)


def _group_keys(frame: pd.DataFrame, drop: Sequence[str]) -> list[str]:
    return [c for c in axes_of(frame) if c not in drop]


def group_stats(table: pd.DataFrame, metric: str, over: Sequence[str] = ("rep",)) -> pd.DataFrame:
    """One row per group of cells that differ only in the ``over`` axes.

    Columns: the group's axes, ``n``, ``mean``, ``median`` and ``AVE``, ``SSD``, ``RSD``,
    ``C95`` (SSD with divisor n, C95 the t-based half-width; NaN for a single cell).
    """
    frame = metric_frame(table, metric)
    by = _group_keys(frame, over)
    rows = []
    groups = frame.groupby(by, sort=False, dropna=False) if by else [((), frame)]
    for values, group in groups:
        vals = group["value"].to_numpy(np.float64)
        stats = repetition_stats(vals)
        head = dict(zip(by, values if isinstance(values, tuple) else (values,), strict=True))
        rows.append({**head, "n": len(vals), "mean": float(vals.mean()), "median": float(np.median(vals)),
                     **stats})  # fmt: skip
    return pd.DataFrame(rows)


STAT_COLUMNS = ("n", "mean", "median", "AVE", "SSD", "RSD", "C95")


def rank_groups(table: pd.DataFrame, metrics: Sequence[str], over: Sequence[str] = ("rep",)) -> pd.DataFrame:
    """Groups of cells that differ only in ``over`` (the repetitions), ranked on each metric by
    their mean (1 = best; utilisation higher is better) and then by the mean rank.

    Columns: the group's axes, ``rank``, ``mean_rank`` and per metric ``M_n``, ``M_mean``,
    ``M_lo``, ``M_hi`` (mean -/+ :func:`group_stats`'s C95, NaN for one cell) and ``M_rank``.
    """
    merged: pd.DataFrame | None = None
    for metric in metrics:
        stats = group_stats(table, metric, over)
        by = [c for c in stats.columns if c not in STAT_COLUMNS]
        part = stats[by].copy()
        part[f"{metric}_n"] = stats["n"]
        part[f"{metric}_mean"] = stats["mean"]
        part[f"{metric}_lo"], part[f"{metric}_hi"] = (
            stats["mean"] - stats["C95"],
            stats["mean"] + stats["C95"],
        )
        part[f"{metric}_rank"] = stats["mean"].rank(method="min", ascending=metric not in HIGHER_IS_BETTER)
        merged = part if merged is None else merged.merge(part, on=by, how="outer")
    if merged is None:
        return pd.DataFrame()
    merged["mean_rank"] = merged[[f"{m}_rank" for m in metrics]].mean(axis=1)
    merged = merged.sort_values("mean_rank", kind="stable").reset_index(drop=True)
    merged.insert(0, "rank", merged["mean_rank"].rank(method="min").astype(int))
    return merged


def match_axes(table: pd.DataFrame, sweep: Sequence[str] = ()) -> list[str]:
    """The axes a cell and its baseline share: all but the policy and what names it."""
    return _group_keys(table, ("policy", "family", *sweep))


def ratios(table: pd.DataFrame, metric: str, baseline: str, sweep: Sequence[str] = ()) -> pd.DataFrame:
    """Each non-baseline cell's value over its matching baseline cell's value (column ``ratio``).

    Cells without a matching baseline cell, or whose baseline value is 0, are left out.
    """
    frame = metric_frame(table, metric)
    on = match_axes(frame, sweep)
    base = frame[frame["policy"] == baseline][[*on, "value"]].rename(columns={"value": "baseline_value"})
    if base.duplicated(on).any():
        raise ValueError(f"several {baseline} cells match the same {', '.join(on)}")
    others = frame[frame["policy"] != baseline]
    merged = others.merge(base, on=on, how="inner") if on else others.merge(base, how="cross")
    merged = merged[merged["baseline_value"] != 0].copy()
    merged["ratio"] = merged["value"] / merged["baseline_value"]
    return merged.reset_index(drop=True)


def ratio_summary(ratio_frame: pd.DataFrame) -> pd.DataFrame:
    """Per policy: n, Q1, median, Q3, mean of the ratios and how many are below 1 (better)."""
    rows = []
    for policy, group in ratio_frame.groupby("policy", sort=False):
        r = group["ratio"].to_numpy(np.float64)
        q1, med, q3 = np.quantile(r, [0.25, 0.5, 0.75])
        rows.append({"policy": policy, "n": len(r), "q1": float(q1), "median": float(med), "q3": float(q3),
                     "mean": float(r.mean()), "below_1": int((r < 1).sum())})  # fmt: skip
    return pd.DataFrame(rows)


def ranking(
    table: pd.DataFrame, metrics: Sequence[str], baseline: str | None = None, sweep: Sequence[str] = ()
) -> pd.DataFrame:
    """Policies ranked on each metric (1 = best) and by their mean rank over the metrics.

    With a baseline a policy's score is its median ratio to the baseline (the baseline
    scores 1); without one, its mean over all its cells. Ties share the lower rank.
    """
    scores = {}
    for metric in metrics:
        scores[metric] = _scores(table, metric, baseline, sweep)
    frame = pd.DataFrame(scores)
    ranks = pd.DataFrame(
        {m: frame[m].rank(method="min", ascending=m not in HIGHER_IS_BETTER) for m in metrics}
    )
    out = frame.add_suffix("_score").join(ranks.add_suffix("_rank"))
    out["mean_rank"] = ranks.mean(axis=1)
    out = out.sort_values(["mean_rank"], kind="stable")
    out.insert(0, "rank", out["mean_rank"].rank(method="min").astype(int))
    return out.rename_axis("policy").reset_index()


def _scores(table: pd.DataFrame, metric: str, baseline: str | None, sweep: Sequence[str]) -> pd.Series:
    frame = metric_frame(table, metric)
    order = list(dict.fromkeys(frame["policy"]))
    if baseline is None:
        return frame.groupby("policy", sort=False)["value"].mean().reindex(order)
    r = ratios(table, metric, baseline, sweep)
    medians = r.groupby("policy", sort=False)["ratio"].median()
    return pd.Series({p: 1.0 if p == baseline else medians.get(p, np.nan) for p in order})


def bootstrap_interval(metric: str, jobs: pd.DataFrame, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95 % interval of an aggregate metric over the jobs (Kopański Section 4.1);
    NaNs for metrics that are not a statistic of one per-job column (makespan, utilisation)."""
    if metric not in JOB_STATISTICS or jobs.empty:
        return float("nan"), float("nan")
    column, statistic = JOB_STATISTICS[metric]
    return bootstrap_ci(jobs[column].to_numpy(np.float64), statistic, seed=seed)
