"""Cleaning a job table for a platform: explicit, named rules that each count what they touch.

Rules run in the order of ``RULES``; each sees the jobs the previous ones left. In SWF
``-1`` means unknown in every field; the reader keeps such records (archive logs hold
placeholder records with only status, user, group, application and partition known) and
these rules decide what a replay can use.

==========================  ==================================================  =========
rule                        which jobs                                          actions
==========================  ==================================================  =========
``unknown_submit``          submit time -1 (placeholder records)                drop
``unknown_job_id``          job number -1                                       drop
``duplicate_job_id``        a job number seen earlier in the trace              drop
``unknown_size``            no positive field 8 nor field 5                     drop
``size_from_allocated``     field 8 unknown, size taken from field 5            allocated
``too_large``               more nodes than the platform's compute nodes        drop
``unknown_runtime``         runtime -1                                          drop
``zero_runtime``            runtime 0                                           drop, keep
``unknown_walltime``        requested time -1 or 0 (no usable limit)            factor, runtime,
                                                                                partition_max, drop
``runtime_above_walltime``  runtime > walltime                                  clip, keep, drop, extend
==========================  ==================================================  =========

Sizes are nodes: requested (else allocated) processors over the trace's processors per
node (:mod:`harness.workload.nodes`). ``size_from_allocated`` only counts: the size of a
job whose request is unknown is what it was allocated.

Unknown walltime (a trace may lack it in every record, e.g. METACENTRUM-2009-2, so the
default never drops the whole trace): ``factor`` sets walltime = runtime x
``walltime_factor`` (default 2: archive logs' users ask for about twice what they use),
``runtime`` sets walltime = runtime, ``partition_max`` the largest known walltime of the
job's partition (else of the whole trace; an error when no walltime is known), ``drop``
removes the jobs. For jobs that
ran past their walltime: ``clip`` sets runtime = walltime (the job is killed at its
limit, as in Kopański's simulator; the replay then never depends on Slurm's
kill timing), ``keep`` leaves them, ``extend`` raises the walltime to the runtime.
All of them set the ``timeout`` column for the jobs the rule matched.

The defaults reproduce the burst-buffer study's cleaning of KTH (Kopański 2020,
Section 2.3): 14 jobs above 96 nodes, 8 with zero runtime and 1 of unknown size
are dropped, leaving 28,453 of 28,476.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.platform import Machine

RULES: tuple[str, ...] = (
    "unknown_submit",
    "unknown_job_id",
    "duplicate_job_id",
    "unknown_size",
    "size_from_allocated",
    "too_large",
    "unknown_runtime",
    "zero_runtime",
    "unknown_walltime",
    "runtime_above_walltime",
)

ACTIONS: dict[str, tuple[str, ...]] = {
    "unknown_submit": ("drop",),
    "unknown_job_id": ("drop",),
    "duplicate_job_id": ("drop",),
    "unknown_size": ("drop",),
    "size_from_allocated": ("allocated",),
    "too_large": ("drop",),
    "unknown_runtime": ("drop",),
    "zero_runtime": ("drop", "keep"),
    "unknown_walltime": ("factor", "runtime", "partition_max", "drop"),
    "runtime_above_walltime": ("clip", "keep", "drop", "extend"),
}

DEFAULT_ACTIONS: dict[str, str] = {name: actions[0] for name, actions in ACTIONS.items()}
DEFAULT_WALLTIME_FACTOR = 2.0


class CleaningError(ValueError):
    """An unknown rule or action, or nothing left after cleaning."""


@dataclass
class RuleResult:
    name: str
    action: str
    count: int
    job_ids: list[int] = field(default_factory=list)  # the first few, for reports


@dataclass
class CleaningReport:
    records: int
    jobs: int
    max_nodes: int
    results: list[RuleResult]
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR
    node_size: dict[str, object] | None = None  # how processors became nodes (harness.workload.nodes)

    def counts(self) -> dict[str, int]:
        return {r.name: r.count for r in self.results}

    def actions(self) -> dict[str, str]:
        return {r.name: r.action for r in self.results}

    def as_dict(self) -> dict[str, object]:
        return {
            "records": self.records,
            "jobs": self.jobs,
            "max_nodes": self.max_nodes,
            "rules": self.counts(),
            "actions": self.actions(),
            "walltime_factor": self.walltime_factor,
            "node_size": self.node_size,
        }


def resolve_actions(actions: dict[str, str] | None) -> dict[str, str]:
    """Defaults overridden by ``actions``; unknown names are an error, not a silent no-op."""
    return chosen_actions(actions, DEFAULT_ACTIONS, ACTIONS, "cleaning rule")


def chosen_actions(
    actions: dict[str, str] | None, defaults: dict[str, str], allowed: dict[str, tuple[str, ...]], kind: str
) -> dict[str, str]:
    """``defaults`` overridden by ``actions``, each checked against the rule's ``allowed`` actions
    (``kind`` names the rules in the error: "cleaning rule", "sacct cleaning rule")."""
    chosen = dict(defaults)
    for name, action in (actions or {}).items():
        if name not in allowed:
            raise CleaningError(f"unknown {kind} '{name}' (rules: {', '.join(allowed)})")
        if action not in allowed[name]:
            raise CleaningError(f"rule '{name}': action '{action}' not one of {', '.join(allowed[name])}")
        chosen[name] = action
    return chosen


def clean(
    table: pd.DataFrame,
    platform: Machine | None = None,
    *,
    max_nodes: int | None = None,
    actions: dict[str, str] | None = None,
    walltime_factor: float = DEFAULT_WALLTIME_FACTOR,
) -> tuple[pd.DataFrame, CleaningReport]:
    """Apply the rules; returns the cleaned table (``job_id`` and ``nodes`` as int64,
    ``timeout`` added, index reset) and the count of every rule."""
    limit = max_nodes if max_nodes is not None else (platform.compute_count if platform else None)
    if limit is None:
        raise CleaningError("clean() needs a platform or max_nodes")
    if not walltime_factor > 0:
        raise CleaningError(f"--walltime-factor must be > 0, got {walltime_factor}")
    chosen = resolve_actions(actions)
    df = table.copy()
    df["timeout"] = False
    results = []
    for name in RULES:
        df, result = _apply(df, name, chosen[name], limit, walltime_factor)
        results.append(result)
    df = df.astype({"job_id": "int64", "nodes": "int64"}).reset_index(drop=True)
    return df, CleaningReport(len(table), len(df), limit, results, walltime_factor)


def _apply(
    df: pd.DataFrame, name: str, action: str, limit: int, factor: float
) -> tuple[pd.DataFrame, RuleResult]:
    mask = _MATCHERS[name](df, limit)
    ids = df.loc[mask, "job_id"].head(10)
    result = RuleResult(name, action, int(mask.sum()), [int(i) if pd.notna(i) else -1 for i in ids])
    if not result.count:
        return df, result
    if action == "drop":
        return df.loc[~mask], result
    if (name, action) == ("unknown_walltime", "factor"):
        return _walltime_from_runtime(df, mask, factor), result
    return _FIXERS[(name, action)](df, mask), result


def _unknown_submit(df: pd.DataFrame, limit: int) -> np.ndarray:
    return df["submit"].isna().to_numpy()


def _unknown_job_id(df: pd.DataFrame, limit: int) -> np.ndarray:
    return df["job_id"].isna().to_numpy()


def _duplicate_job_id(df: pd.DataFrame, limit: int) -> np.ndarray:
    return df["job_id"].duplicated(keep="first").to_numpy()


def _size_from_allocated(df: pd.DataFrame, limit: int) -> np.ndarray:
    return (df["procs_req"].isna() | (df["procs_req"] <= 0)).fillna(True).to_numpy(dtype=bool)


def _unknown_size(df: pd.DataFrame, limit: int) -> np.ndarray:
    return df["nodes"].isna().to_numpy()


def _too_large(df: pd.DataFrame, limit: int) -> np.ndarray:
    return (df["nodes"] > limit).fillna(False).to_numpy(dtype=bool)


def _unknown_runtime(df: pd.DataFrame, limit: int) -> np.ndarray:
    return df["runtime"].isna().to_numpy()


def _zero_runtime(df: pd.DataFrame, limit: int) -> np.ndarray:
    return (df["runtime"] == 0).to_numpy()


def _unknown_walltime(df: pd.DataFrame, limit: int) -> np.ndarray:
    # a 0 time limit cannot be scheduled (nor replayed), so it counts as unknown
    return (df["walltime"].isna() | (df["walltime"] <= 0)).to_numpy()


def _runtime_above_walltime(df: pd.DataFrame, limit: int) -> np.ndarray:
    return (df["runtime"] > df["walltime"]).to_numpy()


_MATCHERS: dict[str, Callable[[pd.DataFrame, int], np.ndarray]] = {
    "unknown_submit": _unknown_submit,
    "unknown_job_id": _unknown_job_id,
    "duplicate_job_id": _duplicate_job_id,
    "unknown_size": _unknown_size,
    "size_from_allocated": _size_from_allocated,
    "too_large": _too_large,
    "unknown_runtime": _unknown_runtime,
    "zero_runtime": _zero_runtime,
    "unknown_walltime": _unknown_walltime,
    "runtime_above_walltime": _runtime_above_walltime,
}


def _keep(df: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    return df


def _walltime_from_runtime(df: pd.DataFrame, mask: np.ndarray, factor: float = 1.0) -> pd.DataFrame:
    df = df.copy()
    # at least 1 s: a zero limit cannot be scheduled (a zero runtime kept by zero_runtime=keep)
    df.loc[mask, "walltime"] = (df.loc[mask, "runtime"] * factor).clip(lower=1.0)
    return df


def _walltime_partition_max(df: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    known = df.loc[~mask]
    if known.empty:
        raise CleaningError(
            "unknown_walltime partition_max: no job has a known requested time "
            "(use --unknown-walltime factor or runtime)"
        )
    by_partition = known.groupby(known["partition"].fillna(-1))["walltime"].max()
    part = df.loc[mask, "partition"].fillna(-1)
    df = df.copy()
    df.loc[mask, "walltime"] = part.map(by_partition).fillna(known["walltime"].max()).to_numpy()
    return df


def _overrun(df: pd.DataFrame, mask: np.ndarray, column: str, source: str) -> pd.DataFrame:
    df = df.copy()
    df.loc[mask, "timeout"] = True
    if column:
        df.loc[mask, column] = df.loc[mask, source]
    return df


_FIXERS: dict[tuple[str, str], Callable[[pd.DataFrame, np.ndarray], pd.DataFrame]] = {
    ("zero_runtime", "keep"): _keep,
    ("size_from_allocated", "allocated"): _keep,
    ("unknown_walltime", "runtime"): _walltime_from_runtime,
    ("unknown_walltime", "partition_max"): _walltime_partition_max,
    ("runtime_above_walltime", "clip"): lambda df, m: _overrun(df, m, "runtime", "walltime"),
    ("runtime_above_walltime", "keep"): lambda df, m: _overrun(df, m, "", ""),
    ("runtime_above_walltime", "extend"): lambda df, m: _overrun(df, m, "walltime", "runtime"),
}
