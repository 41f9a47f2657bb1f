"""Watching a replay from the host: progress lines, and the verdict of when it is over.

The host polls the cluster's shared run directory (the replay's status, the submissions
and the jobs' own records, read incrementally) and ``squeue``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Protocol

import numpy as np
import pandas as pd

from harness.cluster.base import ClusterBackend, Spawned
from harness.emulation.head.progress import RunObserver
from harness.emulation.run.estimate import EVENT_WALL_S_PER_JOB
from harness.model.clock import VirtualClock, WallClock
from harness.model.durations import clock
from harness.model.exitcodes import describe_exit
from harness.model.jsonio import parse_jsonl
from harness.model.records import as_job_records, as_submissions
from harness.model.rundir import SIGSLEEP_LOG, STATUS, SUBMISSIONS


class WatchedRun(Protocol):
    """What the watcher needs of the run it watches (:class:`harness.emulation.head.launch.HeadRun`)."""

    backend: ClusterBackend
    observer: RunObserver | None
    running_since: dict[int, float]  # plan job id -> start (epoch s), from squeue

    @property
    def timeout(self) -> float | None: ...

    @property
    def clock(self) -> WallClock | VirtualClock: ...

    def queue_counts(self) -> tuple[int, int] | None: ...

    def observe_faults(self, queue_answered: bool) -> None: ...

    def ended_early(self, slurm_ids: set[int]) -> int: ...


class HeadProcessDied(RuntimeError):
    """The replay or the ordering agent ended before the run did (killed, out of memory, its
    container restarted): not a verdict on the run. Its jobs stay in Slurm and ``harness run
    --resume`` takes it up (:mod:`harness.emulation.head.launch`)."""

    def __init__(self, what: str, detail: str = "") -> None:
        super().__init__(f"{what}: {detail}" if detail else what)
        self.what = what  # the short form, for the run's fault events


class JsonlTail:
    """Reads the new complete lines of a growing shared JSON-lines file at each call.

    Progress polling every second must not fetch the whole log again (tens of MB on
    a long trace, over SSH for remote clusters): only the bytes past the last
    complete line are read.
    """

    def __init__(self, backend: ClusterBackend, rel: str) -> None:
        self.backend = backend
        self.rel = rel
        self.offset = 0
        self.records: list[dict] = []

    def poll(self) -> list[dict]:
        data = self.backend.read_from(self.rel, self.offset)
        if data:
            complete = data[: data.rfind(b"\n") + 1]  # a last line without newline is still being written
            self.offset += len(complete)
            self.records.extend(parse_jsonl(complete.decode(errors="replace")))
        return self.records


class Watcher:
    """Polls the shared run directory and squeue; prints progress; decides when it is over."""

    GRACE_S = 10.0  # queue empty but records missing: wait this long for late records
    # squeue at most this often while the replay submits: each call is a process started in
    # the controller container (docker exec: ~50-80 ms of CPU), which delayed submissions.
    QUEUE_POLL_S = 5.0

    def __init__(
        self, head: WatchedRun, plan: pd.DataFrame, shared: str, quiet: bool, verbose: bool = False
    ) -> None:
        self.head = head
        self.clock = getattr(head, "clock", None) or WallClock()  # the run's clock, as this host reads it
        self.total = len(plan)
        self.last_submit = float(plan["submit"].max()) if len(plan) else 0.0
        # a job cannot end before its start (its submission instant at the earliest) plus its runtime
        self.timing = dict(
            zip(plan["job_id"].astype(int), zip(plan["submit"], plan["runtime"], strict=True), strict=True)
        )
        self.finished_ids: set[int] = set()
        self.shared = shared
        self.quiet = quiet
        self.verbose = verbose
        self.tty = sys.stderr.isatty() and not quiet
        self.started = time.monotonic()
        self._last_line = 0.0
        self._empty_since: float | None = None
        self._last_instant_passed: float | None = None  # when (wall, monotonic) the clock passed it
        self._submissions = JsonlTail(head.backend, f"{shared}/{SUBMISSIONS}")
        self._records = JsonlTail(head.backend, f"{shared}/{SIGSLEEP_LOG}")
        self._queue: tuple[int, int] = (0, 0)  # the last counts squeue gave
        self._queue_known = False
        self._queue_at: float | None = None

    def wait(self, proc: Spawned, agent: Spawned | None = None) -> tuple[bool, str]:
        while True:
            backend = self.head.backend
            status = _parse_status(backend.read_text(f"{self.shared}/{STATUS}"))
            subs = self._submissions.poll()
            records = self._records.poll()
            self.finished_ids = {r["job_id"] for r in records}
            done_records = len(records)
            # once every job is submitted, the verdict needs the queue at every look
            counts = self._queue_counts(fresh=bool(status.get("done")))
            self._show(status, subs, done_records, *self._queue)
            if self.head.observer is not None:  # progress.json and interim/ in the run directory
                observed = as_submissions(subs), as_job_records(records)
                self.head.observer.observe(status, *observed, self._queue, self._eta(status))
            queued = None if counts is None else sum(counts)
            self._check_agent(agent)
            verdict = self._verdict(proc, status, subs, done_records, queued)
            if verdict is not None:
                # the last line shows what the verdict saw (the report's counts)
                self._show(status, subs, done_records, *self._queue, force=True)
                if self.tty:
                    print(file=sys.stderr)
                return verdict
            time.sleep(1.0)

    def _queue_counts(self, fresh: bool) -> tuple[int, int] | None:
        """(pending, running) from squeue, at most every QUEUE_POLL_S unless ``fresh``; None when
        squeue did not answer (slurmctld busy): an unanswered look is not an empty queue."""
        now = time.monotonic()
        if fresh or self._queue_at is None or now - self._queue_at >= self.QUEUE_POLL_S:
            counts = self.head.queue_counts()
            self.head.observe_faults(counts is not None)
            self._queue_known = counts is not None
            self._queue = counts or self._queue
            self._queue_at = now
        return self._queue if self._queue_known else None

    @staticmethod
    def _check_agent(agent: Spawned | None) -> None:
        """A dead agent means nothing would start, or Slurm would start jobs in its own order."""
        if agent is not None and agent.poll() is not None:
            raise HeadProcessDied(
                f"the ordering agent stopped ({describe_exit(agent.returncode)})", _tail(agent)
            )

    def _verdict(
        self, proc: Spawned, status: dict, subs: list[dict], records: int, queued: int | None
    ) -> tuple[bool, str] | None:
        accepted = sum(1 for s in subs if s.get("slurm_job_id") is not None)
        replay_done = bool(status.get("done"))
        if proc.poll() is not None and not replay_done:
            # the status was read before the look at the queue: the replay may have written
            # "done" and exited since (a loaded head widens that window); only a status read
            # after its exit tells an early stop
            if _parse_status(self.head.backend.read_text(f"{self.shared}/{STATUS}")).get("done"):
                return None  # the next look has the fresh status, submissions and records
            raise HeadProcessDied(f"the replay stopped early ({describe_exit(proc.returncode)})", _tail(proc))
        if replay_done and records >= accepted:
            return True, ""
        if replay_done and queued == 0 and records + self._ended_early(subs) >= accepted:
            return True, ""  # the others were ended by Slurm (a node failed): collect accounts for them
        if replay_done and queued == 0:
            self._empty_since = self._empty_since or time.monotonic()
            if time.monotonic() - self._empty_since > self.GRACE_S:
                return False, f"{accepted - records} job(s) left the queue without a sigsleep record"
        else:  # jobs queued, or squeue did not answer: the queue must be seen empty GRACE_S anew
            self._empty_since = None
        return self._timed_out(status)

    def _timed_out(self, status: dict) -> tuple[bool, str] | None:
        """``--timeout`` is in wall-clock seconds after the run's clock passed the last
        submission instant (on a virtual clock that instant is the page's, the wait the wall's)."""
        timeout = self.head.timeout
        if not timeout or not status.get("t0") or self.clock.now() <= status["t0"] + self.last_submit:
            return None
        self._last_instant_passed = self._last_instant_passed or time.monotonic()
        if time.monotonic() - self._last_instant_passed > timeout:
            return False, f"timed out {timeout:g} s after the last submission instant"
        return None

    def _ended_early(self, subs: list[dict]) -> int:
        """Jobs Slurm ended without a sigsleep record (asked only once the queue is empty)."""
        done = self.finished_ids
        waiting = {
            int(s["slurm_job_id"]) for s in subs if s.get("slurm_job_id") and s.get("job_id") not in done
        }
        return self.head.ended_early(waiting) if waiting else 0

    def _show(
        self, status: dict, subs: list[dict], records: int, pending: int, running: int, force: bool = False
    ) -> None:
        now = time.monotonic()
        every = 0.0 if self.tty or self.verbose else (30.0 if self.quiet else 10.0)
        if now - self._last_line < every and not force:
            return
        self._last_line = now
        lags = np.array([s["lag"] for s in subs if s.get("lag") is not None], dtype=float) * 1000
        p50, p99 = (np.percentile(lags, 50), np.percentile(lags, 99)) if lags.size else (0.0, 0.0)
        elapsed = now - self.started
        line = (
            f"[{clock(elapsed)}] submitted {len(subs)}/{self.total}  pending {pending}  running {running}  "
            f"finished {records}  lag p50 {p50:.0f} ms p99 {p99:.0f} ms  "
            f"ETA {clock(self._eta(status))}"
        )
        if self.tty:
            print("\r" + line + " " * 4, end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def _eta(self, status: dict) -> float:
        """Wall-clock seconds until the last unfinished job can have ended: a running job at its
        start plus its runtime, any other once started now (or at its submission instant), in
        the run's clock, divided by its speed-up. Zero only when every job has ended: an
        unfinished job counts as ending a second from now at least."""
        if isinstance(self.clock, VirtualClock) and self.clock.rate == 0:  # moved by events: by jobs left
            return EVENT_WALL_S_PER_JOB * (self.total - len(self.finished_ids))
        pace = self.clock.rate if self.clock.rate > 0 else 1.0
        t0 = status.get("t0")
        if not t0:
            return max((submit + runtime for submit, runtime in self.timing.values()), default=0.0) / pace
        return self._time_left(float(t0)) / pace

    def _time_left(self, t0: float) -> float:
        now = self.clock.now()
        running_since = self.head.running_since
        ends = [now]
        for job, (submit, runtime) in self.timing.items():
            if job not in self.finished_ids:
                start = running_since.get(job, max(t0 + submit, now))
                ends.append(max(start + runtime, now + 1.0))
        return max(ends) - now


def _tail(proc: Spawned) -> str:
    """The last words of an exited process (its piped output)."""
    return (proc.stdout.read() if proc.stdout else "").strip()[-500:]


def _parse_status(text: str | None) -> dict:
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
