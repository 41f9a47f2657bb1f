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
