"""Where a run's data meets Slurm's clock: the only place an emulation converts times.

The run directory keeps the trace's own time (``plan.parquet``, ``results.parquet``); the
head node replays ``raw/plan.parquet``, the same plan in the seconds of the cluster's clock,
and the jobs, the replay and Slurm report times in those seconds, which the collection turns
back into the trace's. The run's :class:`~harness.model.timescale.TimeScale` says how.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.emulation.collect.fidelity import LaunchDelay, measured_launch_delays, recorded_launch_delays
from harness.emulation.collect.results import finished
from harness.emulation.plugin import RunPlugin
from harness.model import rundir
from harness.model.columns import EMULATION_TIME_COLUMNS
from harness.model.timescale import TimeScale
from harness.platform import Platform
from harness.workload.plan import save_plan


def plan_on_clock(
    plan: pd.DataFrame, manifest: dict[str, Any], scale: TimeScale, plugins: list[RunPlugin],
    platform: Platform, path: Path,
) -> pd.DataFrame:  # fmt: skip
    """The plan the head node replays, saved at ``path``: its times in Slurm's seconds, with what
    each plug-in derives from them (live I/O: sigsleep's phase lists, the staging rates' scale)."""
    out = scale.slurm_table(plan)
    for plugin in plugins:
        out = plugin.on_clock(out, scale, platform)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_plan(out, {**manifest, "slurm_seconds": {"shrink": scale.shrink}}, path)
    return out


def results_in_trace_time(results: pd.DataFrame, scale: TimeScale, plugins: list[RunPlugin]) -> pd.DataFrame:
    """Per-job results read in Slurm's seconds, in the trace's."""
    columns = [*EMULATION_TIME_COLUMNS, *(c for plugin in plugins for c in plugin.time_columns)]
    return scale.trace_table(results, columns)


def collected_results(
    run_dir: Path, collected: dict[str, Any], scale: TimeScale, plugins: list[RunPlugin]
) -> pd.DataFrame:
    """``results.parquet`` in the trace's time. A run collected by an earlier version (its collect
    step's findings say no ``times``) stored Slurm's seconds: converted, so it resumes."""
    results = pd.read_parquet(run_dir / rundir.RESULTS)
    if collected.get(rundir.TIMES) == rundir.TRACE_TIME:
        return results
    return results_in_trace_time(results, scale, plugins)


def collected_delays(run_dir: Path, collected: dict[str, Any]) -> tuple[LaunchDelay, LaunchDelay]:
    """The start and stage-in delays measured at collection (Slurm's seconds); for a run
    collected by an earlier version, measured now on its results (in Slurm's seconds)."""
    if "launch_delays" in collected or collected.get(rundir.TIMES) == rundir.TRACE_TIME:
        return recorded_launch_delays(collected)
    old = finished(pd.read_parquet(run_dir / rundir.RESULTS))
    return recorded_launch_delays(
        {"launch_delays": measured_launch_delays(old, float(collected.get("t0", 0.0)))}
    )
