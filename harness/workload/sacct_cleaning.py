"""Cleaning an sacct job table: named rules that each count the jobs they touch, as the SWF
cleaning does (:mod:`harness.workload.cleaning`, whose walltime rules these share).

Rules run in the order of ``RULES``; each sees the jobs the previous ones left.

============================  =====================================================  ==========
rule                          which jobs                                             actions
============================  =====================================================  ==========
``duplicate_job_id``          a job id read again later (``--duplicates`` lists a    drop
                              requeued job once per run): the last record is kept
``unknown_state``             a state that is not one of Slurm's job states          drop
``cancelled_before_start``    cancelled while pending (no start, or no node          drop
                              allocated)
``no_start``                  never started (pending when sacct ran, or failed       drop
                              to start)
``no_end``                    started but not ended (running or suspended when       drop
                              sacct ran)
``unknown_submit``            no submit time                                         drop
``start_before_submit``       started before it was submitted                        drop
``end_before_start``          ended before it started                                drop
``zero_nodes``                no node requested nor allocated                        drop
``zero_runtime``              ran 0 s                                                drop, keep
``unknown_walltime``          no time limit (UNLIMITED, Partition_Limit, unset, 0)   factor, runtime, drop
``runtime_above_walltime``    ran past its limit (Slurm's OverTimeLimit, the kill    clip, keep, drop,
                              grace)                                                 extend
============================  =====================================================  ==========

``factor`` sets the limit to runtime x ``walltime_factor`` (2), ``runtime`` to the runtime;
``clip`` ends the job at its limit (``timeout`` is set), ``extend`` raises the limit to the
runtime. Times are epoch seconds here; the table is rebased after cleaning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.workload.cleaning import DEFAULT_WALLTIME_FACTOR, CleaningError, RuleResult, chosen_actions

RULES: tuple[str, ...] = (
    "duplicate_job_id",
    "unknown_state",
    "cancelled_before_start",
    "no_start",
    "no_end",
    "unknown_submit",
    "start_before_submit",
    "end_before_start",
    "zero_nodes",
    "zero_runtime",
    "unknown_walltime",
    "runtime_above_walltime",
)
ACTIONS: dict[str, tuple[str, ...]] = {
    **{name: ("drop",) for name in RULES},
    "zero_runtime": ("drop", "keep"),
    "unknown_walltime": ("factor", "runtime", "drop"),
    "runtime_above_walltime": ("clip", "keep", "drop", "extend"),
}
DEFAULT_ACTIONS: dict[str, str] = {name: actions[0] for name, actions in ACTIONS.items()}


@dataclass
class SacctCleaning:
    """The count of every rule: reported by the command and kept in the plan's manifest."""

    records: int
    jobs: int
    results: list[RuleResult]
    walltime_factor: float

    def counts(self) -> dict[str, int]:
        return {r.name: r.count for r in self.results}

    def as_dict(self) -> dict[str, object]:
        return {
            "records": self.records,
            "jobs": self.jobs,
            "rules": self.counts(),
            "actions": {r.name: r.action for r in self.results},
            "first_job_ids": {r.name: r.job_ids for r in self.results if r.count},
            "walltime_factor": self.walltime_factor,
        }


def resolve_actions(actions: dict[str, str] | None) -> dict[str, str]:
    """Defaults overridden by ``actions``; an unknown rule or action is an error."""
    return chosen_actions(actions, DEFAULT_ACTIONS, ACTIONS, "sacct cleaning rule")


def clean_sacct(
    table: pd.DataFrame,
    actions: dict[str, str] | None = None,
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR,
) -> tuple[pd.DataFrame, SacctCleaning]:
    """Apply the rules to a job table of epoch times (``runtime`` = end - start - suspended,
    ``walltime`` the limit or NaN); ``timeout`` is added."""
    if not walltime_factor > 0:
        raise CleaningError(f"--walltime-factor must be > 0, got {walltime_factor}")
    chosen = resolve_actions(actions)
    df = table.copy()
    df["timeout"] = False
    results = []
    for name in RULES:
        mask = _MATCHERS[name](df)
        ids = [int(i) for i in df.loc[mask, "job_id"].head(10)]
        results.append(RuleResult(name, chosen[name], int(mask.sum()), ids))
        if mask.any():
            df = _act(df, mask, name, chosen[name], walltime_factor)
    return df.reset_index(drop=True), SacctCleaning(len(table), len(df), results, walltime_factor)


def _act(df: pd.DataFrame, mask: np.ndarray, name: str, action: str, factor: float) -> pd.DataFrame:
    if action == "drop":
        return df.loc[~mask]
    df = df.copy()
    if name == "unknown_walltime":  # at least 1 s: a zero limit cannot be scheduled
        scale = factor if action == "factor" else 1.0
        df.loc[mask, "walltime"] = (df.loc[mask, "runtime"] * scale).clip(lower=1.0)
    elif name == "runtime_above_walltime":
        df.loc[mask, "timeout"] = True
        if action == "clip":
            df.loc[mask, "runtime"] = df.loc[mask, "walltime"]
        elif action == "extend":
            df.loc[mask, "walltime"] = df.loc[mask, "runtime"]
    return df


def _known(df: pd.DataFrame, column: str) -> pd.Series:
    return df[column].notna()


def _no_node_allocated(df: pd.DataFrame) -> pd.Series:
    """Slurm records a job cancelled while pending with no node (its start may be set)."""
    return (df["nodes_alloc"] == 0).fillna(False).astype(bool)


_MATCHERS: dict[str, Callable[[pd.DataFrame], np.ndarray]] = {
    "duplicate_job_id": lambda df: df["job_id"].duplicated(keep="last").to_numpy(),
    "unknown_state": lambda df: (df["state"] == "").to_numpy(),
    "cancelled_before_start": lambda df: (
        (df["state"] == "CANCELLED") & (~_known(df, "start") | _no_node_allocated(df))
    ).to_numpy(),
    "no_start": lambda df: (~_known(df, "start")).to_numpy(),
    "no_end": lambda df: (~_known(df, "end")).to_numpy(),
    "unknown_submit": lambda df: (~_known(df, "submit")).to_numpy(),
    "start_before_submit": lambda df: (df["start"] < df["submit"]).to_numpy(),
    "end_before_start": lambda df: (df["end"] < df["start"]).to_numpy(),
    "zero_nodes": lambda df: (df["nodes"].fillna(0) <= 0).to_numpy(dtype=bool),
    "zero_runtime": lambda df: (df["runtime"] <= 0).to_numpy(),
    "unknown_walltime": lambda df: (df["walltime"].isna() | (df["walltime"] <= 0)).to_numpy(),
    "runtime_above_walltime": lambda df: (df["runtime"] > df["walltime"]).to_numpy(),
}
