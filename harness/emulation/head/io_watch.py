"""The live I/O the event clock waits for (``--clock events --model io-aware``): the driver's
look at the publications of the transfers and phases in the shared I/O directory
(:mod:`harness.emulation.iolive.io_events`), read on the host through the cluster's shared
directory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.cluster.base import ClusterBackend
from harness.emulation.iolive.io_events import IOState, io_state
from harness.emulation.iolive.phases import PLAN_COLUMN
from harness.model.rundir import SHARED, SHARED_IO
from harness.slurm.client import ACTIVE_STATES


class LiveIOWatch:
    """Reads live I/O's state for the event driver."""

    def __init__(self, directory: Path, plan: pd.DataFrame) -> None:
        self.directory = directory
        phases = plan[PLAN_COLUMN].fillna("").astype(str) != ""
        self.phase_jobs = set(plan.loc[phases, "job_id"].astype(int))

    @classmethod
    def of_run(cls, backend: ClusterBackend, plan: pd.DataFrame) -> LiveIOWatch | None:
        """The watch of an io-aware run (its plan has sigsleep's phases) on a cluster whose shared
        directory this host reads; None otherwise."""
        shared_dir = getattr(backend, "shared_dir", None)
        if PLAN_COLUMN not in plan.columns or shared_dir is None:
            return None
        return cls(shared_dir(SHARED_IO.removeprefix(f"{SHARED}/")), plan)

    def state(self, now: float, running: set[int]) -> IOState:
        """At ``now``, with ``running`` (plan job ids) the jobs Slurm runs."""
        return io_state(self.directory, now, running & self.phase_jobs)

    @staticmethod
    def squeue_states() -> list[str]:
        """squeue's filter that keeps the jobs in STAGE_OUT in the look: their stage-outs
        still move the clock."""
        return [f"--states={','.join(ACTIVE_STATES)}"]
