"""Slurm's will-run windows: where Slurm's backfill places a blocked job's reservation.

Slurm 24.11's ``sched/backfill`` with ``bf_licenses`` (whole-node jobs, the burst buffer as a
license pool) first finds the earliest instant at which its own map of running jobs and earlier
reservations holds the job (``earliest`` here), then asks select/cons_tres's will-run test
(``_future_run_test`` in ``select/cons_tres/job_test.c``) when the job starts. That test
releases the running jobs ending before ``earliest`` at once; if the job does not fit then, it
walks the others by end time and releases them in *groups*: the first released job's end is
rounded up to a ``time_window`` barrier of Slurm's clock (30 s at first), and a group takes
every job ending by that barrier plus ``time_window``; after a failed test ``time_window``
doubles. When the job fits, its start is the end of the group's *last* job, not the first end
at which it fits. Jobs that share neither a node usable by the job nor a license with it are
skipped, and the walk stops at ``later_start``, the next instant after ``earliest`` at which
Slurm's map frees nodes. So a reservation lands up to one window late, and a job that EASY with
exact ends would refuse may backfill in front of it. Running jobs only: BB held without nodes
(stage-outs) is not walked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.policies.profile import AvailabilityProfile
from harness.policies.state import QueuedJob, RunningJob

SLURM_TIME_WINDOW_S = 30.0  # _future_run_test's initial time_window (no bf_window_linear)
RELEASE_CAP = 200  # rm_job_cnt: after this many releases in one group the test is skipped


@dataclass(frozen=True)
class WillRunWindows:
    """The will-run's windows in the trace's seconds.

    ``window_s`` is Slurm's 30-s ``time_window`` in the trace's seconds, and ``origin_s`` Slurm's
    clock at the trace's instant 0, modulo that window, in the trace's seconds: the barriers are
    the instants ``t`` with ``(origin_s + t) % window_s == 0``, as Slurm aligns on its own clock.
    """

    window_s: float = SLURM_TIME_WINDOW_S
    origin_s: float = 0.0

    def barrier_after(self, end: float) -> float:
        """Slurm's ``end_time + (time_window - end_time % time_window)``: always later than ``end``."""
        return end + (self.window_s - (self.origin_s + end) % self.window_s)


@dataclass(frozen=True)
class Candidate:
    """A running job in the will-run's list: its end and whether the test may release it."""

    end: float
    kept: bool  # False: shares neither usable nodes nor a license with the job (Slurm skips it)


def last_released(
    jobs: Sequence[Candidate], fits: Callable[[int], bool], windows: WillRunWindows, stop_after: float | None
) -> int | None:
    """The will-run's walk over ``jobs`` (sorted by end): the index of the last job released
    when the job first fits, or None if it never does.

    ``fits(k)``: whether the job fits once the kept jobs among ``jobs[:k]`` are released.
    ``stop_after``: Slurm's ``will_run->end``; a job ending later ends the walk.
    """
    time_window = windows.window_s
    barrier: float | None = None  # set once, by the first released job: later groups share it
    at, more = 0, True
    while more:
        last, released = None, 0
        tested = True
        while True:
            if at >= len(jobs) or (stop_after is not None and jobs[at].end > stop_after):
                more = False
                break
            job = jobs[at]
            at += 1
            if not job.kept:
                continue
            if barrier is None:
                barrier = windows.barrier_after(job.end)
            last = at - 1
            if at >= len(jobs):
                more = False
                break
            if jobs[at].end > barrier + time_window:
                break
            released += 1
            if released > RELEASE_CAP + 1:  # Slurm's ``rm_job_cnt++ > 200``: no test this round
                tested = False
                break
        if last is None:
            return None
        if not tested:
            continue
        if fits(at):
            return last
        # Slurm doubles at least once, then until the next job is inside the window.
        time_window *= 2
        while at < len(jobs) and barrier is not None and jobs[at].end > barrier + time_window:
            time_window *= 2
    return None


def slurm_start_walked(
    profile: AvailabilityProfile,
    running: Sequence[RunningJob],
    job: QueuedJob,
    earliest: float,
    with_bb: bool,
    windows: WillRunWindows,
) -> tuple[float, bool]:
    """Where Slurm's backfill reserves ``job``, whose earliest start on ``profile`` is
    ``earliest``, and whether the will-run walked (released jobs ending at or after
    ``earliest``): if not, only the nodes of jobs ending before ``earliest`` were free to it.

    Exact for the first reservation (the profile then only gains resources over time); for a
    later one, a start the profile does not hold falls back to ``earliest`` (Slurm would look
    again later), so the profile is never over-committed."""
    if earliest <= profile.now:
        return earliest, False
    license_job = with_bb and job.bb_per_node_mb > 0
    ending = sorted((r for r in running if r.expected_end >= earliest), key=lambda r: r.expected_end)
    # A job ending at ``earliest`` frees nodes the job may use; one ending later still holds its
    # nodes in Slurm's map over the job's window, so only a shared license keeps it in the walk.
    kept = [r.expected_end == earliest or (license_job and r.bb_per_node_mb > 0) for r in ending]
    jobs = [Candidate(r.expected_end, k) for r, k in zip(ending, kept, strict=True)]
    held = profile.window_min(earliest, job.walltime)
    gains = [_resources(r, profile.res.shape[1]) for r in ending]

    def fits(count: int) -> bool:
        free = held.copy()
        for i, r in enumerate(ending):
            released = i < count and kept[i]
            if released and r.expected_end > earliest:
                free += gains[i]  # released early by the will-run, still held on the profile
            elif not released and r.expected_end == earliest:
                free -= gains[i]  # free on the profile at ``earliest``, not yet released by the will-run
        return _admits(free, job, with_bb)

    if fits(0):  # the test with only the jobs ending before ``earliest`` released
        return earliest, False
    last = last_released(jobs, fits, windows, _next_release(profile, earliest))
    if last is None:
        return earliest, True
    start = jobs[last].end
    return (start if _admits(profile.window_min(start, job.walltime), job, with_bb) else earliest), True


def _next_release(profile: AvailabilityProfile, earliest: float) -> float | None:
    """Slurm's ``later_start`` for a test at ``earliest``: the next instant nodes come free."""
    times, compute = profile.times, profile.compute
    for k in range(int(np.searchsorted(times, earliest, side="right")), len(times)):
        if compute[k] > compute[k - 1]:
            return float(times[k])
    return None


def _resources(running: RunningJob, width: int) -> np.ndarray:
    """A running job's nodes and its MB on each BB node, as a profile row."""
    row = np.zeros(width, dtype=np.int64)
    row[0] = running.nodes
    for b in running.allocation.bb:
        row[1 + b] += running.bb_per_node_mb
    return row


def _admits(free: np.ndarray, job: QueuedJob, with_bb: bool) -> bool:
    if free[0] < job.nodes:
        return False
    if not with_bb or job.bb_per_node_mb <= 0:
        return True
    return int((free[1:] // job.bb_per_node_mb).sum()) >= job.nodes
