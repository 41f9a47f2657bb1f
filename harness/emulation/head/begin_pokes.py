"""Slurm told when a job submitted ahead becomes eligible, at a fixed speed-up.

A job sent ahead (``sbatch --begin``, :mod:`harness.emulation.head.ahead`) becomes eligible
when slurmctld's clock passes its begin, and nothing tells Slurm so: backfill runs only after
a change to jobs, nodes or partitions (``_more_work`` in backfill.c) and the main pass every
``sched_interval`` (60 s). At x1 a job's submission at its instant is such a change. Sent
ahead without a poke, jobs waited up to 60 trace s for Slurm's periodic pass (RICC day 118 at
x100: allocations 60-61 s apart on a quiet cluster; docs/virtual-time.md). So the replay
pokes slurmctld at each begin with the event clock's no-op partition update
(:func:`harness.emulation.head.quiescence.poke_command`) while it waits for its next
submission; the submissions go a lead ahead of their begins, so a poke (tens of real ms)
never makes one late.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable, Iterable

from harness.emulation.head.quiescence import poke_command

POKE_TIMEOUT_S = 30.0  # real seconds a poke may take before it is given up (slurmctld away)


def poke_slurm(partition: str) -> Callable[[], bool]:
    """A poke of slurmctld through ``scontrol``; it says whether slurmctld took it."""

    def poke() -> bool:
        try:
            done = subprocess.run(poke_command(partition), capture_output=True, timeout=POKE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0

    return poke


class BeginPokes:
    """The begins still to come and the poke that tells slurmctld of them. The replay calls
    :meth:`poke_passed` whenever it looks at the clock: one poke for all the begins that have
    passed since the last (a burst of begins in consecutive seconds while a poke runs costs one
    more, not one each). Without begins (no lead), it never pokes."""

    def __init__(self, begins: Iterable[float | None], poke: Callable[[], bool]) -> None:
        self.begins = sorted({b for b in begins if b is not None}, reverse=True)  # None: sent at its instant
        self.last = self.begins[0] if self.begins else -math.inf
        self.poke = poke
        self.pokes = 0  # pokes slurmctld took
        self.failed = 0  # pokes it did not take (the next begin pokes again)

    def poke_passed(self, now: float) -> float:
        """Poke if a begin has passed by ``now``; the clock seconds to the next begin (inf: none)."""
        if self.begins and self.begins[-1] <= now:
            while self.begins and self.begins[-1] <= now:
                self.begins.pop()
            if self.poke():
                self.pokes += 1
            else:
                self.failed += 1
        return self.begins[-1] - now if self.begins else math.inf
