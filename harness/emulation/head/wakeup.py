"""When the ordering agent looks at Slurm again: as soon as the run has changed, not only on
its poll.

A look costs a ``squeue`` process, so the agent cannot look every few milliseconds; but
waiting out its poll (0.1 s) delays every start it decides by 50 ms on average, which a fixed
speed-up multiplies (5 trace s at x100). Two files in the run directory say cheaply that the
cluster has changed, and are watched between looks (a ``stat`` every 2 ms):

- the replay's status (``replay.json``) says ``caught_up`` once every submission due so far
  has returned: a burst of jobs submitted at one instant wakes the agent once, after its
  last job, so the policy decides on the whole burst, as its twin does;
- the jobs' own log (sigsleep's ``jobs.jsonl``) gains a line when a job ends. Slurm usually
  still lists the job at the next look (completing), so until it no longer does, the agent looks
  again every ``ENDING_RELOOK_S`` instead of every poll (or, on a queue so long that a look
  takes longer, after as long as the last look took: at most half its time goes to looking).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from harness.model.jsonio import JsonFileError, read_json
from harness.model.rundir import SIGSLEEP_LOG, STATUS

WATCH_S = 0.002  # between two looks at the watched files' stat
ENDING_RELOOK_S = 0.01  # between looks while a job that ended is still listed by Slurm
ENDING_GIVE_UP_S = 2.0  # an ended job still listed after this long waits for the poll again

POLL, SUBMITTED, ENDED, ENDING = "poll", "submitted", "ended", "ending"


class Wakeup:
    """Waits for the next reason to look: new submissions, a job's end, or the poll."""

    def __init__(
        self,
        run_dir: Path,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.status_path = run_dir / STATUS
        self.log_path = run_dir / SIGSLEEP_LOG
        self.sleep = sleep
        self.monotonic = monotonic
        self._status_stamp: tuple[int, int] | None = None
        self._answered = self._answered_now()  # submissions already made (e.g. the agent restarted)
        self._log_offset = _size(self.log_path)  # ends before the agent started are not news
        self._partial = b""
        self.ending: dict[int, float] = {}  # Slurm id -> when its end was read (monotonic)
        self._relook = ENDING_RELOOK_S

    def wait(self, poll: float) -> str:
        """Return at the first reason to look again, and which: ``submitted``, ``ended``,
        ``ending`` (an ended job still listed: look again soon) or ``poll``."""
        now = self.monotonic()
        deadline = now + (min(poll, self._relook) if self.ending else poll)
        while True:
            if self._submissions_answered():
                return SUBMITTED
            if self._read_ends():
                return ENDED
            now = self.monotonic()
            if now >= deadline:
                return ENDING if self.ending else POLL
            self.sleep(min(WATCH_S, deadline - now))

    def looked(self, active: set[int], took: float = 0.0) -> None:
        """After a look (which took ``took`` s): forget the ended jobs that Slurm no longer
        lists (or has listed too long)."""
        self._relook = max(ENDING_RELOOK_S, took)
        given_up = self.monotonic() - ENDING_GIVE_UP_S
        self.ending = {job: seen for job, seen in self.ending.items() if job in active and seen > given_up}

    # -- the replay's status --------------------------------------------------------------
    def _submissions_answered(self) -> bool:
        """Whether the replay has caught up with more submissions than at the last wake-up."""
        try:
            stat = os.stat(self.status_path)
        except OSError:
            return False
        stamp = (stat.st_ino, stat.st_mtime_ns)
        if stamp == self._status_stamp:
            return False
        self._status_stamp = stamp
        answered = self._answered_now()
        if answered is None or answered == self._answered:
            return False
        self._answered = answered
        return True

    def _answered_now(self) -> int | None:
        """Submissions made (or failed) when the replay last caught up; None while it has not."""
        try:
            status = read_json(self.status_path)
        except JsonFileError:  # not there yet, or replaced right now: the next stat sees it
            return None
        if not status.get("caught_up"):
            return None
        return int(status.get("submitted", 0)) + int(status.get("failed", 0))

    # -- the jobs' own log ----------------------------------------------------------------
    def _read_ends(self) -> bool:
        """Read the log's new lines; whether a job's end is among them."""
        size = _size(self.log_path)
        if size <= self._log_offset:
            if size < self._log_offset:  # a new log (another run in the same directory)
                self._log_offset, self._partial = 0, b""
            return False
        with open(self.log_path, "rb") as handle:
            handle.seek(self._log_offset)
            chunk = handle.read(size - self._log_offset)
        self._log_offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        now = self.monotonic()
        ended = [job for job in map(_slurm_id, lines) if job is not None]
        self.ending.update(dict.fromkeys(ended, now))
        return bool(ended)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _slurm_id(line: bytes) -> int | None:
    """The Slurm job id of one sigsleep record (None for anything else)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    job = record.get("slurm_job_id") if isinstance(record, dict) else None
    return int(job) if isinstance(job, int | str) and str(job).isdigit() else None
