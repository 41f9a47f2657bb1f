"""Progress while a cluster's nodes come up: how many are idle, and when all will be.

A 4,320-node cluster takes 30-60 s to come up on this host (docs/cluster.md), and its start
printed nothing meanwhile: the user could not tell a slow start from a stuck one. The ETA is
the observed rate, not a model: the nodes idle so far over the time waited, so a loaded host
gives a longer estimate by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.model.durations import human_duration

# At most one line every 5 s: the wait asks sinfo every second above 200 nodes, and a line
# per look would drown the terminal; a start shorter than this prints no progress line at all.
PROGRESS_EVERY_S = 5.0


def eta_s(idle: int, total: int, elapsed_s: float) -> float | None:
    """Seconds until all ``total`` nodes are idle if they keep coming at the rate seen so far
    (``idle`` in ``elapsed_s``); 0 when all are; None while no node is idle (no rate yet)."""
    if idle >= total:
        return 0.0
    if idle <= 0 or elapsed_s <= 0:
        return None
    return (total - idle) * elapsed_s / idle


def progress_line(idle: int, total: int, eta: float | None) -> str:
    """``nodes idle 1,234/4,320, ETA 25 s`` (``ETA unknown`` before a rate is known)."""
    when = "ETA unknown" if eta is None else f"ETA {human_duration(eta)}"
    return f"nodes idle {idle:,}/{total:,}, {when}"


@dataclass
class IdleProgress:
    """Says the progress line through ``say`` at most every ``every_s`` seconds; one object
    spans every wave of a start, so its rate and ETA are those of the whole cluster."""

    total: int
    say: Callable[[str], None]
    every_s: float = PROGRESS_EVERY_S
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    last_said: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.last_said = self.clock()

    def update(self, idle: int) -> None:
        """Record ``idle`` nodes of ``total`` idle now; say so if ``every_s`` passed since the last
        line and some are still missing (the caller says when all are)."""
        now = self.clock()
        if now - self.last_said < self.every_s or idle >= self.total:
            return
        self.last_said = now
        self.say(progress_line(idle, self.total, eta_s(idle, self.total, now - self.started)))
