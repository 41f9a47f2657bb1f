"""The records the processes of a run pass to each other, one JSON object per line: their fields
in one place, checked where they are read (``mypy`` knows every key).

* ``submissions.jsonl`` (:class:`Submission`): the replay's line per job (and the ordering
  agent's copies of a job it submitted again on the slow tier).
* ``jobs.jsonl`` (:class:`JobRecord`): each job's own record, written by ``sigsleep`` (C,
  ``sigsleep/sigsleep.c``: ``RECORD_FORMAT``) when it ends.

Times are epoch seconds of the run's clock (Slurm's: the wall clock, or the virtual one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict, cast

from harness.model.jsonio import read_jsonl


class Submission(TypedDict, total=False):
    index: int  # the job's place in the replay's order
    job_id: int  # the trace's job number
    slurm_job_id: int | None  # None: sbatch failed for good
    intended: float  # when it was due
    actual: float | None  # entered the queue: sbatch's start, or its begin if sent ahead (None: adopted)
    sent: float  # submitted ahead (--begin): when sbatch was started
    returned: float | None  # when sbatch returned
    lag: float | None  # actual - intended
    attempts: int  # sbatch calls it took
    error: str  # the last sbatch error, for a job never submitted
    adopted: bool  # found in Slurm at a resume, not submitted again


class Phase(TypedDict, total=False):
    kind: str  # compute, checkpoint, stage
    channel: str
    mb: float
    moved_mb: float
    seconds: float
    start: float | None
    end: float | None
    running: float | None
    done: bool


class JobRecord(TypedDict, total=False):
    format: int
    job_id: int
    slurm_job_id: int | None  # the Slurm job that ran (the agent may have submitted it again)
    host: str
    node: str
    nodelist: str
    pid: int
    runtime: float  # what it was asked to run
    walltime: float
    start: float  # at a fixed speed-up Slurm's start (sigsleep --from-slurm-start), else its own
    launched: float  # its own start, when it counted from Slurm's
    end: float
    running: float  # seconds it ran, suspensions left out
    suspended: float  # seconds it spent suspended
    n_suspensions: int
    suspensions: list[list[float]]  # [suspended, resumed] pairs
    reason: str  # completed, timeout, cancelled, ...
    signal: int | None
    phases: list[Phase]


def read_submissions(path: Path) -> list[Submission]:
    return cast(list[Submission], read_jsonl(path))


def read_job_records(path: Path) -> list[JobRecord]:
    return cast(list[JobRecord], read_jsonl(path))


def as_submissions(rows: list[dict[str, Any]]) -> list[Submission]:
    """Lines parsed elsewhere (a tail of the file) as submissions."""
    return cast(list[Submission], rows)


def as_job_records(rows: list[dict[str, Any]]) -> list[JobRecord]:
    """Lines parsed elsewhere (a tail of the file) as the jobs' records."""
    return cast(list[JobRecord], rows)
