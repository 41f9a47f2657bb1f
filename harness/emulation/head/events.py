"""The event-driven virtual clock (``harness run --clock events``): the clock stands still
while Slurm works and moves only when the cluster is quiescent, so that a run's schedule does
not depend on how fast the host is (docs/virtual-time.md).

The clock is held on whole seconds (Slurm stamps whole seconds). Each time the cluster is
quiescent (the replay has made every submission due, no job is completing or configuring,
and nothing in the queue has changed for ``SETTLE_S`` of real time), the driver moves it:

- by one second (a *creep*) when something changed since the last move: Slurm's main and
  backfill passes run only once its clock has advanced (``batch_sched_delay``, the backfill
  interval: the probe in docs/virtual-time.md), so each change gets a pass;
- otherwise straight to the next event: the next submission instant of the plan or the
  next end of a running job (its start, as Slurm stamps it, plus its runtime or its walltime,
  whichever is shorter: sigsleep ends itself at its walltime). It never jumps past an event.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.model.clock import VirtualClock

SETTLE_S = 0.3  # real seconds without a change in the queue before the cluster counts as quiescent
POLL_S = 0.1  # real seconds between two looks
BUSY_STATES = ("COMPLETING", "CONFIGURING")


@dataclass(frozen=True)
class Observation:
    """What the driver sees at one look."""

    t0: float | None  # the replay's t0 (None: not started yet)
    submitted: int  # submissions made, accepted or not
    queue: tuple[tuple[str, str, str], ...] | None  # squeue rows (state, name, start); None: no answer
    done: bool  # the replay has made every submission


def job_durations(plan: pd.DataFrame) -> dict[int, float]:
    """Plan job id -> how long its sigsleep runs: its runtime, cut at its walltime."""
    ends = np.minimum(plan["runtime"].to_numpy(float), plan["walltime"].to_numpy(float))
    return dict(zip(plan["job_id"].astype(int), ends, strict=True))


def next_event(
    now: float, t0: float | None, instants: Sequence[float], submitted: int,
    running: Mapping[int, float], durations: Mapping[int, float],
) -> float:  # fmt: skip
    """The next whole second at which something is due: a submission or a job's end; at
    least a second after ``now`` (a due event not yet seen is a second's creep away)."""
    due = []
    if t0 is not None and submitted < len(instants):
        due.append(t0 + instants[submitted])
    due += [start + durations[job] for job, start in running.items() if job in durations]
    if not due:
        return now + 1.0
    return max(now + 1.0, float(math.ceil(min(due) - 1e-9)))


def submissions_due(now: float, t0: float | None, instants: Sequence[float]) -> int:
    if t0 is None:
        return 0
    return int(np.searchsorted(np.asarray(instants) + t0, now + 1e-9, side="right"))


def quiescent(obs: Observation, now: float, instants: Sequence[float]) -> bool:
    """The replay has caught up with the clock and Slurm is not launching or ending a job."""
    if obs.queue is None or any(row[0] in BUSY_STATES for row in obs.queue):
        return False
    return obs.done or obs.submitted >= submissions_due(now, obs.t0, instants)


class EventDriver:
    """Moves a held virtual clock through a run, in a thread, until stopped."""

    def __init__(
        self, clock: VirtualClock, plan: pd.DataFrame, observe: Callable[[], Observation],
        running: Callable[[Observation], Mapping[int, float]],
    ) -> None:  # fmt: skip
        self.clock = clock
        self.instants = np.sort(plan["submit"].to_numpy(float)).tolist()
        self.durations = job_durations(plan)
        self.observe = observe
        self.running = running
        self.moves = {"creep": 0, "jump": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="event-clock", daemon=True)

    def start(self) -> None:
        self.clock.set(float(math.ceil(self.clock.now())), 0.0)  # held on a whole second
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        seen: Observation | None = None
        changed_at, dirty = time.monotonic(), True
        while not self._stop.wait(POLL_S):
            obs = self.observe()
            if seen is None or obs != seen:
                seen, changed_at, dirty = obs, time.monotonic(), True
                continue
            now = self.clock.now()
            if time.monotonic() - changed_at < SETTLE_S or not quiescent(obs, now, self.instants):
                continue
            if obs.done and not obs.queue:
                continue  # the run is over: the clock rests
            if dirty:
                target, kind = now + 1.0, "creep"
            else:
                target = next_event(
                    now, obs.t0, self.instants, obs.submitted, self.running(obs), self.durations
                )
                kind = "jump"
            self.clock.jump(target)
            self.moves[kind] += 1
            changed_at, dirty = time.monotonic(), False
