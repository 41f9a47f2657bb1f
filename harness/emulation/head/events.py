"""The event-driven virtual clock (``harness run --clock events``): the clock stands still
while Slurm works and moves only when the cluster is quiescent, so that a run's schedule does
not depend on how fast the host is (docs/virtual-time.md).

The clock is held on whole seconds (Slurm stamps whole seconds). Each time the cluster is
quiescent, the driver moves it. Quiescent is measured (:mod:`harness.emulation.head.quiescence`):

- always: the replay has made every submission due, no job is completing or configuring,
  every job Slurm runs has read its start (sigsleep's start marker) and none is still running
  past its end (``HARD_WAIT_S`` at most, should a marker or an end never come);
- then either slurmctld's signals (no RPC agent or backfill pass in flight; with jobs
  pending, a backfill pass at the present instant and, after a submission or an end, a main
  scheduling cycle) and nothing changed for ``SETTLE_S``, or, without them, nothing changed
  for ``FALLBACK_S`` of real time (counted: the run prints how often).

It moves it:

- by one second (a *creep*) when something changed since the last move: Slurm's main and
  backfill passes run only once its clock has advanced (``batch_sched_delay``, the backfill
  interval: the probe in docs/virtual-time.md), so each change gets a pass;
- otherwise straight to the next event: the next submission instant of the plan or the
  next end of a running job (its start, as Slurm stamps it, plus its runtime or its walltime,
  whichever is shorter: sigsleep ends itself at its walltime). It never jumps past an event.

With live I/O (io-aware), every transfer and phase publishes its end
(:mod:`harness.emulation.iolive.io_events`, read by :mod:`harness.emulation.head.io_watch`):
the cluster is quiescent only once all have published for the set of transfers running, and
no job is in a Lua step of Slurm's burst-buffer life cycle; the clock then goes no further
than the first of those ends, which may fall between two seconds.

With the replay submitting ahead (``harness replay --submit-ahead``, ``ahead=True``), each job
is in Slurm's queue, not yet eligible (``sbatch --begin``), before the clock reaches its
instant: Slurm's passes at that instant see it, instead of racing its ``sbatch``. The driver
then waits for the next instant's jobs to be submitted before it moves, and a job waiting for
its begin is not a change, nor pending, until its instant.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from harness.emulation.head.ahead import (
    eligible_at,
    eligible_instant,
    submissions_ahead_due,
    submissions_due,
)
from harness.emulation.head.event_times import ends_due, job_durations, next_event, next_second, with_finals
from harness.emulation.head.quiescence import SlurmActivity
from harness.emulation.iolive.io_events import IOState
from harness.model.clock import VirtualClock

SETTLE_S = 0.1  # real seconds without a change before slurmctld's signals are believed
FALLBACK_S = 0.3  # ... and before the cluster counts as quiescent without them
# how far the daemons stay behind the page while an instant's jobs end: Slurm stamps whole
# seconds, so one second keeps its passes out of that instant until the driver lets them in
DAEMONS_LEAD_S = 1.0
HARD_WAIT_S = 10.0  # longest wait for a job's start marker or end before the clock moves anyway
POKE_WAIT_S = 1.0  # longest wait for the main cycle a poke asked for (counted when it never came)
POLL_S = 0.03  # real seconds between two looks
# the most a held instant's daemons are nudged on (NUDGE_S at a time) for main cycles after the
# agent's releases: far from the next second, which time() would read
MAX_NUDGED_S = 0.5
BUSY_STATES = ("COMPLETING", "CONFIGURING")


@dataclass(frozen=True)
class Observation:
    """What the driver sees at one look."""

    t0: float | None  # the replay's t0 (None: not started yet)
    submitted: int  # submissions made, accepted or not
    # squeue rows (state, name, start; with live I/O also Slurm's id and BB state); None: no answer
    queue: tuple[tuple[str, ...], ...] | None
    done: bool  # the replay has made every submission
    activity: SlurmActivity | None = None  # slurmctld's counters (sdiag); None: not known
    unstarted: int = 0  # jobs Slurm runs whose sigsleep has not written its start marker yet
    # the ordering agent: when its last look began (wall clock; None: no look yet). It looks
    # every 0.1 s: not a change of the cluster
    agent_looked: float | None = field(default=None, compare=False)
    # ... and when it last released jobs (wall clock; None: never)
    agent_released: float | None = field(default=None, compare=False)
    io: IOState | None = None  # live I/O's publications (io-aware runs; io_events)

    @property
    def jobs(self) -> tuple:
        """What changes when a job is submitted, starts or ends (not a pass of Slurm's)."""
        return self.t0, self.submitted, self.queue, self.done


def quiescent(obs: Observation, now: float, instants: Sequence[float], ahead: bool = False) -> bool:
    """The replay has caught up with the clock (``ahead``: is one submission instant ahead of
    it) and Slurm is not launching or ending a job."""
    if obs.queue is None or any(row[0] in BUSY_STATES for row in obs.queue):
        return False
    due = submissions_ahead_due if ahead else submissions_due
    return obs.done or obs.submitted >= due(now, obs.t0, instants)


def as_at(
    obs: Observation, now: float, submit_of: Mapping[int, float], instants: Sequence[float] | None = None
) -> Observation:  # fmt: skip
    """What of ``obs`` is in play at ``now`` when jobs are submitted ahead: the jobs whose
    instant has come (counted as submitted; their rows in the queue), not those still waiting
    for their begin (``submit_of``: plan job id -> submission offset)."""
    t0 = obs.t0
    if t0 is None:
        return obs

    def waiting(row: tuple[str, ...]) -> bool:
        offset = submit_of.get(int(row[1][1:])) if row[1][1:].isdigit() else None
        return row[0] == "PENDING" and offset is not None and eligible_instant(t0 + offset) > now + 1e-9

    instants = sorted(submit_of.values()) if instants is None else instants  # (sorted)
    come = int(np.searchsorted(eligible_at(t0, instants), now + 1e-9, side="right"))
    queue = None if obs.queue is None else tuple(row for row in obs.queue if not waiting(row))
    return replace(obs, submitted=min(obs.submitted, come), queue=queue)


def _pending(obs: Observation) -> bool:
    return any(row[0] == "PENDING" for row in obs.queue or ())


def slurm_settled(
    obs: Observation, moved: Observation | None, now: float, main_ran: bool = False, backfill: bool = True
) -> bool:  # fmt: skip
    """slurmctld's signals that it is done with ``now``: no RPC agent or backfill pass in
    flight and, with jobs pending, a backfill pass at ``now`` (``backfill``: sched/backfill
    runs; sched/builtin has no such pass) and, if a job was submitted or ended since the last
    move, a main cycle since, unless one already ran at ``now`` (``main_ran``: the main
    scheduler runs once per instant, the next one waits a second)."""
    act = obs.activity
    if act is None or act.busy:
        return False
    if not _pending(obs):
        return True
    if backfill and act.backfill_at < now - 1e-6:
        return False
    before = moved.activity if moved is not None else None
    if main_ran or before is None or before.accepted_or_ended == act.accepted_or_ended:
        return True
    # any change, a reset at slurmctld's midnight too: to wait here for a cycle nothing asks for would stall
    return act.main_cycles != before.main_cycles


class EventDriver:
    """Moves a held virtual clock through a run, in a thread, until stopped."""

    def __init__(
        self, clock: VirtualClock, plan: pd.DataFrame, observe: Callable[[], Observation],
        running: Callable[[Observation], Mapping[int, float]], ahead: bool = False,
        agent: bool = False, backfill: bool = True, poke: Callable[[], None] | None = None,
    ) -> None:  # fmt: skip
        """``ahead``: the replay submits ahead (``harness replay --submit-ahead``); ``agent``: an
        ordering agent decides, and the clock waits for its look at the latest change;
        ``backfill``: slurmctld runs sched/backfill; ``poke``: asks slurmctld for a main
        scheduling cycle (a no-op update: :func:`~harness.emulation.head.quiescence.poke_script`)."""
        self.clock = clock
        self.ahead = ahead
        self.agent = agent
        self.backfill = backfill
        self._changed_wall = 0.0  # when the driver last saw a change (wall clock, as the agent's)
        self.instants = np.sort(plan["submit"].to_numpy(float)).tolist()
        self.submit_of = dict(zip(plan["job_id"].astype(int), plan["submit"].to_numpy(float), strict=True))
        self.durations = job_durations(plan)
        self.observe = observe
        self.running = running
        self.poke = poke
        self._poked: tuple[float, float] = (-1.0, 0.0)  # the instant last poked at, when (monotonic)
        self.moves = {
            "creep": 0,
            "jump": 0,
            "approach": 0,
            "poke": 0,
            "unpoked": 0,
            "release": 0,
            "fallback": 0,
            "forced": 0,
        }
        self._main: tuple[int, float] = (-1, -1.0)  # the main cycles counted, the instant they last moved at
        self._release_handled = 0.0  # the agent's last release that a main cycle has followed
        # the release being handled: when it was made, the main cycles counted before the poke,
        # when the poke went (monotonic)
        self._release_poke: tuple[float, int, float] | None = None
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
        seen_jobs: tuple = ()  # the jobs in play at the last change
        moved: Observation | None = None  # the look the last move was decided on
        changed_at, dirty = time.monotonic(), True
        leading = False  # the page is at an instant the daemons have not reached yet
        while not self._stop.wait(POLL_S):
            obs = self.observe()
            self._note_main_cycle(obs)
            if not self._release_scheduled(obs):
                continue
            now = self.clock.now()
            view = as_at(obs, now, self.submit_of, self.instants) if self.ahead else obs
            if seen is None or obs != seen or view.jobs != seen_jobs:
                dirty = dirty or seen is None or view.jobs != seen_jobs
                seen, seen_jobs, changed_at = obs, view.jobs, time.monotonic()
                self._changed_wall = time.time()
                continue
            if not quiescent(obs, now, self.instants, self.ahead) or (obs.done and not obs.queue):
                continue  # (an empty queue after the last submission: the run is over, the clock rests)
            kind = self._ready(view, moved, now, time.monotonic() - changed_at, leading)
            if kind is None:
                continue
            if leading:  # the instant's jobs have ended (and been submitted): now Slurm's passes
                self._count(kind)
                self.clock.jump(now)
                leading, moved, changed_at = False, view, time.monotonic()
                self._changed_wall = time.time()  # the agent looks at the whole instant now
                continue
            step = self._step(obs, view, now, dirty)
            if step is None:
                continue  # a main cycle asked for at ``now`` has not run yet
            self._count(kind)
            target, leading = step
            self.clock.jump(target, DAEMONS_LEAD_S if leading else 0.0)
            moved, changed_at, dirty = view, time.monotonic(), False

    def _count(self, kind: str) -> None:
        if kind:
            self.moves[kind] += 1

    def _step(
        self, obs: Observation, view: Observation, now: float, dirty: bool
    ) -> tuple[float, bool] | None:
        """Where the clock goes now and whether the page leads the daemons there; None: not
        yet. With jobs pending and some ending at the target, Slurm's passes of the second
        before come first: the clock *approaches* (both to that second, and Slurm settles
        there), then a main cycle at it (poked for if none ran), then the lead. Not with the
        agent: its jobs are held until it releases them, at an instant it has seen whole, so
        Slurm's passes of the second before have nothing to start."""
        target, move = self._target(obs, now, dirty)
        leading = self._lead_needed(obs, target)
        if leading and _pending(view) and not self.agent:
            if target - DAEMONS_LEAD_S > now + 1e-6:
                target, move, leading = target - DAEMONS_LEAD_S, "approach", False
            elif not self._main_cycle_ran(now):
                return None
        self.moves[move] += 1
        return target, leading

    def _lead_needed(self, obs: Observation, target: float) -> bool:
        """Whether a job ends at ``target`` (or, not submitting ahead, one is submitted then):
        the page then goes there first and the daemons a second behind, until those jobs have
        ended (and been submitted); only then do the daemons, and Slurm's passes, reach it."""
        running = self.running(obs)
        durations = with_finals(self.durations, obs.io, running)
        ends = (start + durations[job] for job, start in running.items() if job in durations)
        if any(math.ceil(end - 1e-9) <= target for end in ends):
            return True
        if self.ahead or obs.t0 is None or obs.submitted >= len(self.instants):
            return False
        return math.ceil(obs.t0 + self.instants[obs.submitted] - 1e-9) <= target

    def _main_cycle_ran(self, now: float) -> bool:
        """Whether slurmctld ran a main scheduling cycle at the daemons' ``now``; if not, poke
        it for one (once per instant) and say no until it ran or ``POKE_WAIT_S`` passed.

        It runs once per instant (``sched_min_interval`` on a held clock): with one run at
        ``now``, no end of the next instant's jobs, stamped ``now`` while the daemons lag, can
        start a job at ``now`` in one run and at the next second in another (the epilog's
        completion calls the main cycle directly; docs/virtual-time.md)."""
        if self._main[1] >= now - 1e-6 or self.poke is None:
            return True
        if self._poked[0] != now:
            self.poke()
            self._poked = (now, time.monotonic())
            self.moves["poke"] += 1
            return False
        if time.monotonic() - self._poked[1] < POKE_WAIT_S:
            return False
        self.moves["unpoked"] += 1
        self._main = (self._main[0], now)  # (do not wait again at this instant)
        return True

    def _ready(
        self, obs: Observation, moved: Observation | None, now: float, still: float, leading: bool = False
    ) -> str | None:  # fmt: skip
        """None: not yet; else '' (Slurm's signals), 'fallback' (the settle time alone) or
        'forced' (a start marker or a job's end that never came). While the page leads the
        daemons the agent does not look (it would decide on an instant half done)."""
        if (
            obs.unstarted
            or ends_due(now, running := self.running(obs), with_finals(self.durations, obs.io, running))
            or (obs.io is not None and not obs.io.settled)
            or not (leading or self._agent_caught_up(obs))
        ):
            return "forced" if still >= HARD_WAIT_S else None
        # Slurm's passes are at the daemons' instant (its whole second: a nudge is within it)
        slurm_now = math.floor(self.clock.daemons_now() + 1e-6)
        if still >= SETTLE_S and slurm_settled(
            obs, moved, slurm_now, self._main[1] >= slurm_now, self.backfill
        ):
            return ""
        return "fallback" if still >= FALLBACK_S else None

    def _agent_caught_up(self, obs: Observation) -> bool:
        """Without an agent, always; with one, once a look of its began after the last change
        the driver saw (it then saw that change, and its decision on it is applied)."""
        if not self.agent:
            return True
        return obs.agent_looked is not None and obs.agent_looked > self._changed_wall

    def _release_scheduled(self, obs: Observation) -> bool:
        """Whether a main scheduling cycle has run since the agent last released jobs; if not,
        nudge the daemons within their second and poke slurmctld for one, and say no until it
        ran (or ``POKE_WAIT_S`` passed). On a held clock the main cycle runs once per instant:
        a release after it would start its jobs at the next instant the clock reaches, or at
        this one, as the host's speed decides (docs/virtual-time.md). The nudge lets the cycle
        run again at the same second, so the released jobs start where the agent decided, as
        in the simulator."""
        released = obs.agent_released
        if released is None or released <= self._release_handled or obs.activity is None or self.poke is None:
            return True
        pending = self._release_poke
        if pending is None or pending[0] != released:
            now, daemons = self.clock.now(), self.clock.daemons_now()
            if daemons < now - 1e-6 or daemons - now >= MAX_NUDGED_S:  # a lead (its end runs the cycle)
                self._release_handled = released
                return True
            self.clock.nudge()
            self.poke()
            self._release_poke = (released, obs.activity.main_cycles, time.monotonic())
            self.moves["release"] += 1
            return False
        if obs.activity.main_cycles_since(pending[1]):
            self._release_handled = released
            return True
        if time.monotonic() - pending[2] < POKE_WAIT_S:
            return False
        self.moves["unpoked"] += 1
        self._release_handled = released
        return True

    def _note_main_cycle(self, obs: Observation) -> None:
        """The instant of the daemons when a main scheduling cycle was last seen to run."""
        act = obs.activity
        if act is not None and act.main_cycles != self._main[0]:
            ran = act.main_cycles_since(self._main[0])
            self._main = (act.main_cycles, self.clock.daemons_now() if ran else self._main[1])

    def _target(self, obs: Observation, now: float, dirty: bool) -> tuple[float, str]:
        """Where the clock goes next, and how: a second on after a change (``creep``), else to
        the next event (``jump``)."""
        io_end = obs.io.next_end if obs.io is not None else math.inf
        if dirty:
            return min(next_second(now), io_end), "creep"
        running = self.running(obs)
        target = next_event(
            now, obs.t0, self.instants, obs.submitted, running, with_finals(self.durations, obs.io, running),
            self.ahead,
        )  # fmt: skip
        return min(target, io_end), "jump"
