"""The report's sections of a Slurm settings sweep: what the twin screened out (``[screen]``) and
the settings combinations ranked by chosen metrics (``--rank``), with each one's slurm.conf diff
against the baseline (the site's own settings, or the policy's rendering)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.analysis.document import Block, Section, Table
from harness.experiments.cells import cell_dir
from harness.experiments.report_data import ExperimentData
from harness.experiments.report_tables import plain_value, value_text
from harness.experiments.screen import SCREENED_OUT, read_screening
from harness.experiments.stats import rank_groups
from harness.model import rundir
from harness.model.expdir import RUN_DIR
from harness.model.metric_names import metric_spec


def screening_section(data: ExperimentData) -> Section | None:
    """Every combination's twin score and fate, best first (None without ``[screen]``)."""
    record = read_screening(data.exp_dir)
    if record is None:
        return None
    metric = record["metric"]
    combos = sorted(record["combinations"], key=lambda v: (v["rank"] is None, v["rank"] or 0))
    axes = list(combos[0]["combination"]) if combos else []
    rows = [
        [str(v["rank"] or "-"), *(plain_value(v["combination"][a]) for a in axes),
         value_text(metric, v["twin"]) if v["twin"] is not None else "-", str(len(v["keys"])), v["status"]]
        for v in combos
    ]  # fmt: skip
    out = sum(len(v["keys"]) for v in combos if v["status"] == SCREENED_OUT)
    text = (
        f"The twin of Slurm's own scheduler simulated every cell first; the {record['keep']} best "
        f"combinations by {metric_spec(metric).label.lower()} (the mean over their cells) were emulated, "
        f"{out} cells screened out. A combination whose swept settings the twin does not model is never "
        "screened out."
    )
    headers = ["twin rank", *axes, f"twin {metric}", "cells", "verdict"]
    return Section("Screening by the twin", [text, Table(headers, rows)])


def ranked_section(data: ExperimentData, metrics: Sequence[str]) -> Section:
    """The combinations (groups of cells differing only by repetition) ranked on ``metrics``:
    mean and 95 % interval (t-based, over the repetitions) and each one's slurm.conf diff."""
    ranked = rank_groups(data.table, metrics)
    # every cell, the screened-out ones too: an axis the screening narrowed to one value still
    # names the setting each ranked row ran with
    grid = pd.DataFrame([cell["axes"] for cell in data.grid])
    axes = [
        a for a in ranked.columns
        if a in data.table.columns and (_varies(ranked, a) or (a in grid.columns and _varies(grid, a)))
    ]  # fmt: skip
    rows, blocks = [], []
    for row in ranked.to_dict("records"):
        shown = [f"{value_text(m, row[f'{m}_mean'])} {_interval(m, row)}" for m in metrics]
        rows.append(
            [str(row["rank"]), *(plain_value(row[a]) for a in axes), *shown, f"{row['mean_rank']:.2f}"]
        )
        blocks.append(_diff_block(data, row, axes))
    headers = ["rank", *axes, *(f"{metric_spec(m).label} [95 %]" for m in metrics), "mean rank"]
    text = (
        f"Settings ranked by {', '.join(metrics)} (each by its mean over the repetitions, then by the "
        "mean rank); the interval is the mean -/+ the t-based C95 over the repetitions (none for one)."
    )
    return Section(
        "Settings ranked", [text, Table(headers, rows), "slurm.conf against the baseline:", *blocks]
    )


def _varies(frame: pd.DataFrame, axis: str) -> bool:
    return axis == "policy" or (axis not in ("family", "key") and frame[axis].nunique(dropna=False) > 1)


def _interval(metric: str, row: dict[str, Any]) -> str:
    lo, hi = row[f"{metric}_lo"], row[f"{metric}_hi"]
    if pd.isna(lo):
        return "(n = 1)"
    return f"[{value_text(metric, lo)}, {value_text(metric, hi)}]"


def _diff_block(data: ExperimentData, row: dict[str, Any], axes: list[str]) -> Block:
    """``#rank axes: the changed lines`` from the run directory of one of the group's cells."""
    where = {a: row[a] for a in axes if pd.notna(row[a])}
    name = ", ".join(f"{a} {plain_value(v)}" for a, v in where.items())
    for key in data.keys(**where):
        path = cell_dir(data.exp_dir, key) / RUN_DIR / rundir.SETTINGS_DIFF
        if path.is_file():
            lines = path.read_text().splitlines()
            return f"#{row['rank']} ({name}): " + (
                "; ".join(f"`{line}`" for line in lines) or "same as baseline"
            )
    return f"#{row['rank']} ({name}): no slurm.conf diff recorded"
