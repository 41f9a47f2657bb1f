"""Release holds: at a fixed speed-up (``harness run --speedup S``) the clock stands still at
each job's end until Slurm has released the job's nodes, then goes on at its pace.

Why: Slurm takes real time to end a job (slurmstepd reports, slurmctld sends every node the
job's termination, each slurmd answers). On RICC's 1,152 nodes a 256-node job's release took
0.6-1.0 real s, 60-100 s of the clock at x100, and ``CompleteWait`` holds every pass
meanwhile, so the jobs due next started up to 500 s late and a wide job lost its backfill
slot (docs/virtual-time.md). At x1 that release lasts about a second of the trace. Held, it
lasts none.

How: each job's end is known ahead, from its start marker (sigsleep ``--started``) plus how
long its sigsleep runs (runtime cut at the walltime). Shortly before the end (``APPROACH_S``
real s) the driver holds the clock and moves it to the end (``PAST_END_S`` past it); sigsleep
then ends the job at its instant. The clock stays held until no job that ended is running or completing in
``squeue`` (``RELEASE_WAIT_S`` at most), then runs at S again. Nothing else moves: submissions,
Slurm's passes and the agent keep the fixed pace between ends. An end the driver saw too late
(a job shorter than its marker's delay) is not held (counted).
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.model.clock import DEFAULT_POLL_S, VirtualClock

APPROACH_S = 0.03  # real s before an end at which the clock is held (then moved to the end)
LOOK_S = 0.01  # real s between two looks at the queue while held
RELEASE_WAIT_S = 5.0  # longest hold for one end (real s): a release Slurm never reports
MARKERS_S = 0.05  # real s between two reads of the start markers while no end is near
# the clock is held this far past an end (virtual s): sigsleep counts its runtime in ns of a
# double-precision epoch (a quarter of a microsecond apart), so at the end's exact instant it
# may be a few hundred ns short of it and would never end on the held clock
PAST_END_S = 0.001

Rows = Sequence[Sequence[str]]  # squeue's (state, name, ...) rows; names are t<plan job id>


@dataclass
class HoldTally:
    """What the holds did in a run (printed at its end)."""

    holds: int = 0  # times the clock was held at an end
    ends: int = 0  # job ends held (several may share an instant)
    held_s: float = 0.0  # real seconds held in all
    longest_s: float = 0.0  # the longest hold
    late: int = 0  # holds that came after their instant (the host woke late): held where it was
    unreleased: int = 0  # holds ended by RELEASE_WAIT_S, not by the release
    missed: int = 0  # ends already past when their start marker was read
    error: str | None = None  # why the holds stopped before the run's end (the clock ran on)

    def summary(self) -> str:
        stopped = f"; stopped by {self.error}, the clock ran on without holds" if self.error else ""
        return (
            f"release holds: {self.ends} job ends in {self.holds} holds, {self.held_s:.1f} real s held "
            f"(longest {self.longest_s:.2f} s); {self.late} late, {self.unreleased} not released in "
            f"{RELEASE_WAIT_S:g} s, {self.missed} ends seen too late to hold{stopped}"
        )


def releasing(rows: Rows, ended: Iterable[int]) -> bool:
    """Slurm is still ending jobs: one of ``ended`` (plan job ids) is running, or a job is
    completing."""
    ended = set(ended)
    for state, name, *_ in rows:
        if state == "COMPLETING":
            return True
        if state == "RUNNING" and name[1:].isdigit() and int(name[1:]) in ended:
            return True
    return False


class EndQueue:
    """The ends to come (a heap of (end, plan job id)), fed with start markers."""

    def __init__(self, durations: Mapping[int, float], since: float = -math.inf) -> None:
        """``since``: ends before it are not to come (a resumed run reads its old markers again)."""
        self.durations = durations
        self.since = since
        self._heap: list[tuple[float, int]] = []

    def add(self, starts: Iterable[tuple[int, float]]) -> None:
        for job, start in starts:
            if job in self.durations and start + self.durations[job] >= self.since:
                heapq.heappush(self._heap, (start + self.durations[job], job))

    def next_end(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_until(self, instant: float) -> list[int]:
        """The jobs ending at or before ``instant``, taken off the queue."""
        jobs = []
        while self._heap and self._heap[0][0] <= instant + 1e-6:
            jobs.append(heapq.heappop(self._heap)[1])
        return jobs


class ReleaseHolds:
    """The driver of a fixed-speed clock's holds, in a thread: :meth:`start`, :meth:`stop`.

    ``new_starts``: the start markers written since its last call, as (plan job id, start);
    ``look``: squeue's rows of the run's jobs (None: no answer)."""

    def __init__(
        self, clock: VirtualClock, rate: float, durations: Mapping[int, float],
        new_starts: Callable[[], list[tuple[int, float]]], look: Callable[[], Rows | None],
    ) -> None:  # fmt: skip
        self.clock = clock
        self.rate = rate
        self.ends = EndQueue(durations)
        self.new_starts = new_starts
        self.look = look
        self.tally = HoldTally()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="release-holds", daemon=True)

    def start(self) -> None:
        self.ends.since = self.clock.now()
        self._thread.start()

    def stop(self) -> HoldTally:
        self._stop.set()
        self._thread.join(timeout=RELEASE_WAIT_S + 5)
        return self.tally

    def _run(self) -> None:
        try:
            self._drive()
        except Exception as exc:  # (a look that failed): the clock runs on, without holds
            self.tally.error = f"{type(exc).__name__}: {exc}"

    def _drive(self) -> None:
        while not self._stop.is_set():
            self.ends.add(self.new_starts())
            missed = self.ends.pop_until(self.clock.now() - 1e-3)  # already past: too late
            self.tally.missed += len(missed)
            end = self.ends.next_end()
            wait = MARKERS_S if end is None else (end - self.clock.now()) / self.rate - APPROACH_S
            if wait > MARKERS_S or end is None:
                self._stop.wait(MARKERS_S)
                continue
            if wait > 0:
                self._stop.wait(wait)
            if not self._stop.is_set():
                self._hold_at(end)

    def _hold_at(self, end: float) -> None:
        began = time.monotonic()
        here = self.clock.hold()
        if here < end + PAST_END_S:
            self.clock.jump(end + PAST_END_S)
        else:
            self.tally.late += 1
        ended = self.ends.pop_until(max(end + PAST_END_S, here))
        try:
            self._wait_for_release(ended, began + RELEASE_WAIT_S)
        finally:
            self.clock.set(None, self.rate, DEFAULT_POLL_S)  # never left held
        held = time.monotonic() - began
        self.tally.holds += 1
        self.tally.ends += len(ended)
        self.tally.held_s += held
        self.tally.longest_s = max(self.tally.longest_s, held)

    def _wait_for_release(self, ended: list[int], deadline: float) -> None:
        while not self._stop.is_set():
            rows = self.look()
            if rows is not None and not releasing(rows, ended):
                return
            if time.monotonic() >= deadline:
                self.tally.unreleased += 1
                return
            time.sleep(LOOK_S)
