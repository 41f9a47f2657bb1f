"""Submitting ahead on the event clock (``harness replay --submit-ahead``): each job is sent at
the previous submission instant of the plan with ``sbatch --begin`` at its own instant, so that
Slurm's passes of that instant see it (docs/virtual-time.md). The replay and the event clock's
driver both count instants with these functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

ROUNDING_S = 1e-9  # an instant this close above a whole second is that second
# at a fixed speed-up, jobs go to Slurm this many real seconds before their begin: a burst of
# a hundred sbatch calls (20-50 ms each on this host) is in the queue, in order, by its instant
AHEAD_REAL_S = 5.0


def ahead_options(
    agent: bool, events: bool, speedup: float | None, backfill: bool, io: bool = False
) -> list[str]:
    """The replay's options for submitting ahead, each job with its begin. Not with the
    ordering agent, which would see (and start) a held job before its instant. The event
    clock: at the previous instant, so that Slurm's queue holds each instant's jobs when the
    clock gets there (events.py). A fixed speed-up with backfill: a lead of AHEAD_REAL_S real
    seconds, so that a burst's sbatch calls are done by its instant and go in the trace's
    order; the replay pokes slurmctld at each begin (begin_pokes.py), or a begin would wait for
    Slurm's periodic main pass. Not without backfill (slurm-fcfs; not measured with pokes).
    Not with live I/O at a fixed speed-up either: with a lead (before the pokes), the x50
    io-aware integration run's transfers left the staging model by 16 % in 2 of 5 runs (0 of
    3 without it; not traced, possibly the same wait for the periodic pass)."""
    if agent:
        return []
    if events:
        return ["--submit-ahead"]
    if speedup is not None and backfill and not io:
        return ["--submit-ahead", "--ahead-by", f"{AHEAD_REAL_S * speedup:g}"]
    return []


def send_plan(
    intended: list[float], ahead: bool, ahead_by: float | None
) -> tuple[list[float | None], list[float]]:
    """(each job's begin, when the replay sends it): no begin, sent at its instant; or, ahead,
    its whole-second begin, sent a lead of ``ahead_by`` before it or at the previous instant."""
    if not ahead:
        return [None] * len(intended), list(intended)
    eligible = eligible_instants(intended)
    sent = lead_release_instants(eligible, ahead_by) if ahead_by is not None else release_instants(eligible)
    return list(eligible), sent


def eligible_instant(intended: float) -> float:
    """The whole second at which a job submitted ahead becomes eligible: Slurm stamps whole
    seconds, and the event clock stops on whole seconds."""
    return float(math.ceil(intended - ROUNDING_S))


def eligible_instants(intended: Sequence[float] | np.ndarray) -> list[float]:
    """:func:`eligible_instant` of each (vectorised: the event clock's driver asks at every look)."""
    return np.ceil(np.asarray(intended, dtype=float) - ROUNDING_S).tolist()


def release_instants(eligible: Sequence[float]) -> list[float]:
    """When each job is submitted ahead: at the previous (earlier) eligible instant of the plan,
    so that Slurm's queue holds the next instant's jobs, and only those, before the clock gets
    there; the first instant's jobs at once (-inf). ``eligible`` is sorted."""
    released, previous, current = [], -math.inf, -math.inf
    for instant in eligible:
        if instant > current:
            previous, current = current, instant
        released.append(previous)
    return released


def lead_release_instants(eligible: Sequence[float], lead: float) -> list[float]:
    """At a fixed speed-up (no driver waits for the replay): each job is submitted ``lead``
    clock seconds before its eligible instant. Sent at the previous instant instead, a burst's
    ``sbatch`` calls, real milliseconds each, would come seconds of the clock late and in the
    order they returned (docs/virtual-time.md)."""
    return [instant - lead for instant in eligible]


def submissions_due(now: float, t0: float | None, instants: Sequence[float]) -> int:
    if t0 is None:
        return 0
    return int(np.searchsorted(np.asarray(instants) + t0, now + 1e-9, side="right"))


def eligible_at(t0: float, instants: Sequence[float]) -> np.ndarray:
    """The whole seconds at which jobs submitted ahead become eligible, sorted as ``instants``."""
    return np.asarray(eligible_instants(np.asarray(instants, dtype=float) + t0))


def next_begin(now: float, t0: float | None, instants: Sequence[float]) -> float | None:
    """The first eligible instant after ``now`` (None: none left, or the replay not started)."""
    if t0 is None:
        return None
    later = eligible_at(t0, instants)
    later = later[later > now + 1e-9]
    return float(later[0]) if later.size else None


def submissions_ahead_due(now: float, t0: float | None, instants: Sequence[float]) -> int:
    """Submitting ahead: the jobs the replay must have submitted before the clock leaves ``now``,
    those eligible up to the next eligible instant (all of them once none is left)."""
    if t0 is None:
        return 0
    upcoming = next_begin(now, t0, instants)
    if upcoming is None:
        return len(instants)
    return int(np.searchsorted(eligible_at(t0, instants), upcoming + 1e-9, side="right"))
