"""The host settles before a replay on the wall clock or at a fixed speed-up.

On those clocks every millisecond of latency is multiplied into the trace's time, and the
moment a run starts is often the busiest of its host: the image was just built, a hundred
``slurmd`` just registered, the last repetition's collection just ended. The slice's
``plan-square-0`` at x100 whose replay started at a load of 32 was 5-9 % above its four
repetitions that started quiet (docs/virtual-time.md, session 28). So the replay starts only
once the host's CPUs were less than ``QUIET_BUSY_PCT`` busy over ``WINDOW_S`` (``/proc/stat``,
a measured signal, not a sleep), waiting at most ``MAX_WAIT_S``; the wait and the busy share
are recorded beside the run's host load. On the event clock the clock waits for Slurm, so it
starts at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.emulation.run.hostload import PROC_STAT, cpu_ticks

QUIET_BUSY_PCT = 50.0  # share of all CPUs' time busy under which the host counts as quiet
WINDOW_S = 2.0
MAX_WAIT_S = 120.0


@dataclass(frozen=True)
class Settled:
    """How long the replay waited for its host and how busy the host was over the last window."""

    waited_s: float
    busy_pct: float | None
    quiet: bool


def read_busy_ticks(path: Path = PROC_STAT) -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs (busy: neither idle nor waiting for I/O); None
    without /proc/stat."""
    ticks = cpu_ticks(path)
    if ticks is None:
        return None
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def busy_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The busy share of the CPUs' time between two readings, in percent; None when unknown."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def wait_for_quiet_host(
    say: Callable[[str], None],
    ticks: Callable[[], tuple[int, int] | None] = read_busy_ticks,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.monotonic,
    max_wait_s: float = MAX_WAIT_S,
) -> Settled:
    """Wait until a ``WINDOW_S`` window finds the host under ``QUIET_BUSY_PCT`` busy, at most
    ``max_wait_s``; says why it waits, and a warning when it gave up."""
    start, before = now(), ticks()
    if before is None:  # not Linux: nothing to measure by
        return Settled(0.0, None, True)
    said = False
    while True:
        sleep(WINDOW_S)
        after = ticks()
        busy, waited = busy_pct(before, after), now() - start
        if busy is None or busy < QUIET_BUSY_PCT:
            if said:
                say(f"the host settled after {waited:.0f} s ({_pct(busy)} busy): the replay starts")
            return Settled(round(waited, 1), _rounded(busy), True)
        if waited >= max_wait_s:
            say(
                f"warning: the host was still {_pct(busy)} busy after {waited:.0f} s: the replay starts "
                "anyway; its latency is multiplied into the trace's time (see the host load below)"
            )
            return Settled(round(waited, 1), _rounded(busy), False)
        if not said:
            say(
                f"waiting for the host to settle before the replay: its CPUs are {_pct(busy)} busy "
                f"(under {QUIET_BUSY_PCT:g} % over {WINDOW_S:g} s; at most {max_wait_s:g} s)"
            )
            said = True
        before = after


def settle_before_replay(events: bool, backend: str, say: Callable[[str], None]) -> Settled | None:
    """On the wall clock or at a fixed speed-up with the daemons on this host (``docker``,
    ``local``), the wait for a quiet host; None where the host's load does not matter."""
    if events or backend not in ("docker", "local"):
        return None
    return wait_for_quiet_host(say)


def _rounded(busy: float | None) -> float | None:
    return None if busy is None else round(busy, 1)


def _pct(busy: float | None) -> str:
    return "?" if busy is None else f"{busy:.0f} %"
