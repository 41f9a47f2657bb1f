"""The live I/O the event clock waits for (``--clock events --model io-aware``): the driver's
look at the publications of the transfers and phases in the shared I/O directory
(:mod:`harness.emulation.iolive.io_events`), read on the host through the cluster's shared
directory."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from harness.cluster.base import ClusterBackend
from harness.emulation.iolive.io_events import IOState, io_state
from harness.emulation.iolive.phases import PLAN_COLUMN, has_phases
from harness.emulation.iolive.transfers import ACTIVE_DIR
from harness.model.rundir import SHARED, SHARED_IO
from harness.slurm.client import ACTIVE_STATES

# state, name, start (as %T %j %S), Slurm job id, burst-buffer state: wide enough that
# whitespace separates every value
SQUEUE_FORMAT = "State:12 ,Name:40 ,StartTime:20 ,JobID:12 ,BurstBufferState:16 "
# burst_buffer/lua's states (Slurm's bb_state_string) while one of its Lua steps runs ...
LUA_STEP_STATES = ("pre-run", "post-run", "teardown")
# ... and those of a transfer, the staging command's (which registers itself in ``active/``)
TRANSFER_STATES = {"staging-in": "in", "staging-out": "out"}


class LiveIOWatch:
    """Reads live I/O's state for the event driver."""

    def __init__(self, directory: Path, plan: pd.DataFrame) -> None:
        self.directory = directory
        self.phase_jobs = set(plan.loc[has_phases(plan), "job_id"].astype(int))

    @classmethod
    def of_run(cls, backend: ClusterBackend, plan: pd.DataFrame) -> LiveIOWatch | None:
        """The watch of an io-aware run (its plan has sigsleep's phases) on a cluster whose shared
        directory this host reads; None otherwise."""
        shared_dir = getattr(backend, "shared_dir", None)
        if PLAN_COLUMN not in plan.columns or shared_dir is None:
            return None
        return cls(shared_dir(SHARED_IO.removeprefix(f"{SHARED}/")), plan)

    def state(self, now: float, running: set[int], rows: Iterable[Sequence[str]] | None) -> IOState:
        """At ``now``, with ``running`` (plan job ids) the jobs Slurm runs and ``rows`` the
        look's squeue rows (:meth:`squeue_columns`)."""
        state = io_state(self.directory, now, running & self.phase_jobs)
        busy = [f"job {row[3]} {row[4]}" for row in rows or () if len(row) >= 5 and self._lua_step(row)]
        if not busy:
            return state
        return replace(state, settled=False, waiting_for=", ".join([*busy, state.waiting_for]).rstrip(", "))

    def _lua_step(self, row: Sequence[str]) -> bool:
        """Whether Slurm runs a Lua step of the job's burst buffer now (its setup, pre-run,
        post-run or teardown; a stage-in or stage-out whose transfer has not registered yet,
        or has ended and Slurm has not taken it in): it changes the job's state without any
        timer of Slurm's, so the clock waits for it."""
        bb_state = row[4]
        if bb_state in LUA_STEP_STATES:
            return True
        kind = TRANSFER_STATES.get(bb_state)
        return kind is not None and not (self.directory / ACTIVE_DIR / f"{row[3]}.{kind}.json").exists()

    @staticmethod
    def squeue_columns() -> list[str]:
        """squeue's words for the look: the jobs in STAGE_OUT kept (their stage-outs still move
        the clock), and each job's Slurm id and burst-buffer state after the usual columns."""
        return [f"--states={','.join(ACTIVE_STATES)}", f"--Format={SQUEUE_FORMAT}"]
