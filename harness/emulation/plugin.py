"""The interface of a run's plug-ins: a concern that adds to a run without the core knowing it.

Live I/O (:mod:`harness.emulation.iolive.plugin`) is one: it adds plan columns, changes
Slurm's configuration, waits for what it runs on the cluster, and enriches the per-job
results and the metrics' sections. The run (:mod:`harness.emulation.run.steps`) calls every
active plug-in at each of these points, in the order of :data:`harness.emulation.run.steps.PLUGINS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from harness.cluster.base import ClusterBackend
from harness.emulation.run.specs import RunOptions
from harness.model.records import JobRecord, Submission
from harness.model.timescale import TimeScale
from harness.platform import Platform
from harness.slurm.config import SchedulerConfig


@dataclass(frozen=True)
class Collected:
    """What the collect step has gathered when it asks the plug-ins to enrich the results."""

    opts: RunOptions
    backend: ClusterBackend
    sched: SchedulerConfig
    raw: Path  # the run's raw/ directory, where a plug-in copies its own records
    t0: float  # the replay's start (epoch s): every result time counts from it
    submissions: list[Submission]
    records: list[JobRecord]  # the jobs' own sigsleep records
    ran: list[Submission]  # the submissions and the agent's copies of them: one per Slurm job
    slurm_dir: Path
    scale: TimeScale  # how the trace's seconds map to Slurm's on the run's clock

    @property
    def uses_agent(self) -> bool:
        return self.sched.external_ordering


class RunPlugin(Protocol):
    """One concern of a run, called by the run's steps at fixed points."""

    name: str
    time_columns: tuple[str, ...]  # the times it adds to the results (converted to the trace's)

    def wanted(self, opts: RunOptions) -> bool:
        """Whether the run with ``opts`` uses this plug-in."""
        ...

    def configure(self, sched: SchedulerConfig) -> SchedulerConfig:
        """Slurm's configuration with what this plug-in needs."""
        ...

    def plan(self, plan: pd.DataFrame, opts: RunOptions, platform: Platform) -> tuple[pd.DataFrame, dict]:
        """The plan with this plug-in's columns (in the trace's time), and what to add to its
        manifest."""
        ...

    def on_clock(self, plan: pd.DataFrame, scale: TimeScale, platform: Platform) -> pd.DataFrame:
        """The plan in Slurm's seconds with what this plug-in derives from its times."""
        ...

    def before_collect(self, backend: ClusterBackend) -> None:
        """Wait for what this plug-in runs on the cluster to end before records are copied."""
        ...

    def enrich(self, results: pd.DataFrame, collected: Collected) -> pd.DataFrame:
        """The per-job results (in Slurm's seconds) with this plug-in's columns."""
        ...

    def check(
        self, results: pd.DataFrame, slurm_jobs: dict[int, dict], collected: Collected
    ) -> dict[str, Any]:
        """This plug-in's part of the cross-check (``{}``: none); ``ok`` False fails the check."""
        ...

    def sections(self, results: pd.DataFrame) -> dict[str, Any]:
        """This plug-in's sections of ``metrics.json`` (and so of the report)."""
        ...
