"""Slurm told when a job submitted ahead becomes eligible, at a fixed speed-up.

A job sent ahead (``sbatch --begin``, :mod:`harness.emulation.head.ahead`) becomes eligible
when slurmctld's clock passes its begin, and nothing tells Slurm so: backfill runs only after
a change to jobs, nodes or partitions (``_more_work`` in backfill.c) and the main pass every
``sched_interval`` (60 s). At x1 a job's submission at its instant is such a change. Sent
ahead without a poke, jobs waited up to 60 trace s for Slurm's periodic pass (RICC day 118 at
x100: allocations 60-61 s apart on a quiet cluster; docs/virtual-time.md). So the replay
pokes slurmctld at each begin, with a no-op update of a job sent for it
(:func:`job_poke_command`), while it waits for its next submission; the submissions go a
lead ahead of their begins, so a poke (tens of real ms) never makes one late.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable, Iterable

POKE_TIMEOUT_S = 30.0  # real seconds a poke may take before it is given up (slurmctld away)


def job_poke_command(slurm_id: int, name: str) -> list[str]:
    """A no-op update of a job of the replay's own (its name, to what it is): the replay's user
    may make it (a partition update, the event clock's poke, needs Slurm's own user), and like
    every update it queues the main pass and counts as a change for backfill (job_mgr.c
    ``_update_job`` sets ``last_job_update``)."""
    return ["scontrol", "update", f"JobId={slurm_id}", f"Name={name}"]


def poke_slurm(slurm_id: int, name: str) -> bool:
    """Poke slurmctld through ``scontrol``; whether slurmctld took it."""
    try:
        done = subprocess.run(job_poke_command(slurm_id, name), capture_output=True, timeout=POKE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class BeginPokes:
    """The begins still to come, the jobs sent for each (:meth:`note`), and the poke that tells
    slurmctld of them. The replay calls :meth:`poke_passed` whenever it looks at the clock: one
    poke for all the begins that have passed since the last (a burst of begins in consecutive
    seconds while a poke runs costs one more, not one each). Without begins, it never pokes."""

    def __init__(self, begins: Iterable[float | None], poke: Callable[[int, str], bool]) -> None:
        self.poke = poke
        self.jobs: dict[float, tuple[int, str]] = {}  # begin -> (Slurm id, name) of a job sent for it
        self.pokes = 0  # pokes slurmctld took
        self.failed = 0  # pokes it did not take, or begins with no job in Slurm (the next begin pokes again)
        self.expect(begins)

    def expect(self, begins: Iterable[float | None]) -> None:
        """The begins to poke at from now on (None: a job sent at its instant, no begin)."""
        self.begins = sorted({b for b in begins if b is not None}, reverse=True)  # the next one last

    @property
    def last(self) -> float:
        """The last begin still to come (-inf: none)."""
        return self.begins[0] if self.begins else -math.inf

    def note(self, begin: float, slurm_id: int, name: str) -> None:
        """A job for ``begin`` is in Slurm's queue (called as its sbatch returns)."""
        self.jobs.setdefault(begin, (slurm_id, name))

    def poke_passed(self, now: float) -> float:
        """Poke if a begin has passed by ``now``; the clock seconds to the next begin (inf: none)."""
        passed: list[float] = []
        while self.begins and self.begins[-1] <= now:
            passed.append(self.begins.pop())
        if passed:
            job = next((self.jobs[b] for b in reversed(passed) if b in self.jobs), None)
            if job is not None and self.poke(*job):
                self.pokes += 1
            else:
                self.failed += 1
        return self.begins[-1] - now if self.begins else math.inf
