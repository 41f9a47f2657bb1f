"""When things are due on the event clock (:mod:`harness.emulation.head.events`): each running
job's end, the next event, the next whole second."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from harness.emulation.head.ahead import next_begin
from harness.emulation.iolive.io_events import IOState
from harness.emulation.iolive.phases import has_phases


def job_durations(plan: pd.DataFrame) -> dict[int, float]:
    """Plan job id -> how long its sigsleep runs: its runtime, cut at its walltime; a job with
    phases (live I/O) at most its walltime: its phases decide, and it publishes when its last
    one ends (:func:`with_finals`)."""
    walltime = plan["walltime"].to_numpy(float)
    ends = np.minimum(plan["runtime"].to_numpy(float), walltime)
    ends = np.where(has_phases(plan).to_numpy(), walltime, ends)
    return dict(zip(plan["job_id"].astype(int), ends, strict=True))


def with_finals(
    durations: Mapping[int, float], io: IOState | None, running: Mapping[int, float]
) -> Mapping[int, float]:
    """``durations`` with the jobs in their last phase lasting until that phase's published end."""
    if io is None or not io.finals:
        return durations
    finals = {job: end - running[job] for job, end in io.finals if job in running}
    return {**durations, **{job: min(d, durations.get(job, d)) for job, d in finals.items()}}


def next_event(
    now: float, t0: float | None, instants: Sequence[float], submitted: int,
    running: Mapping[int, float], durations: Mapping[int, float], ahead: bool = False,
) -> float:  # fmt: skip
    """The next whole second at which something is due: a submission (``ahead``: a job's
    eligible instant) or a job's end; at least a second after ``now`` (a due event not yet
    seen is a second's creep away)."""
    due = []
    upcoming = next_begin(now, t0, instants) if ahead else None
    if upcoming is not None:
        due.append(upcoming)
    elif not ahead and t0 is not None and submitted < len(instants):
        due.append(t0 + instants[submitted])
    due += [start + durations[job] for job, start in running.items() if job in durations]
    second = next_second(now)
    if not due:
        return second
    return max(second, float(math.ceil(min(due) - 1e-9)))


def next_second(now: float) -> float:
    """The next whole second after ``now`` (a transfer's end may hold the clock between two)."""
    return float(math.floor(now + 1e-6)) + 1.0


def ends_due(now: float, running: Mapping[int, float], durations: Mapping[int, float]) -> int:
    """Jobs still running although their sigsleep has reached its end at ``now``."""
    return sum(
        1 for job, start in running.items() if job in durations and start + durations[job] <= now + 1e-6
    )
