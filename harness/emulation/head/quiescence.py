"""What the event clock's driver (:mod:`harness.emulation.head.events`) looks at to know that
Slurm is done with the present instant, measured rather than waited for (docs/virtual-time.md):

- slurmctld's own counters (``sdiag --json``): jobs submitted, started and ended, main and
  backfill cycles, and when the last backfill pass ran; RPC agents and a backfill pass in
  flight;
- ``squeue``: the states of the run's jobs;
- sigsleep's start markers (``sigsleep --started``): a job Slurm started has read its start
  on the clock it was started on.

One look runs ``squeue`` and ``sdiag`` in a shell kept open beside slurmctld for the whole
run (:class:`ControllerShell`): about 20 ms, where a ``docker exec`` of each took 100-200 ms
on the shared 2-core host.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.slurm.jobcomp import slurm_time

END = "@@harness-look-end"
LOOK_TIMEOUT_S = 30.0
# sdiag's counters that move when slurmctld accepts, starts or ends a job or runs a pass
COUNTERS = ("jobs_submitted", "jobs_started", "jobs_completed", "schedule_cycle_total", "bf_cycle_counter")


@dataclass(frozen=True)
class SlurmActivity:
    """slurmctld's side of one look (``sdiag --json``)."""

    counters: tuple[int, ...]  # COUNTERS, in order
    backfill_at: float  # slurmctld's instant of its last backfill pass
    busy: bool  # an RPC agent (launch, terminate) or a backfill pass in flight

    @property
    def accepted_or_ended(self) -> tuple[int, int]:
        return self.counters[0], self.counters[2]

    @property
    def main_cycles(self) -> int:
        return self.counters[3]

    def main_cycles_since(self, before: int) -> bool:
        """Whether slurmctld ran a main cycle since its counter read ``before``. It sets its
        counters to 0 at its midnight: a lower count is then the cycles since that reset, and
        a reset is not a cycle."""
        now = self.main_cycles
        return now > before or 0 < now < before


def parse_sdiag(text: str) -> SlurmActivity | None:
    """The activity in ``sdiag --json``'s output; None if it is not sdiag's JSON."""
    try:
        stats = json.loads(text)["statistics"]
        counters = tuple(int(stats[name]) for name in COUNTERS)
        when = stats["bf_when_last_cycle"]
        backfill_at = float(when["number"] if isinstance(when, dict) else when)
        busy = bool(stats["agent_queue_size"] or stats["agent_count"] or stats["bf_active"])
    except (ValueError, KeyError, TypeError):
        return None
    return SlurmActivity(counters, backfill_at, busy)


def look_script(squeue: list[str]) -> str:
    """The shell lines of one look: squeue's rows, its status, sdiag's JSON, then END."""
    return f'{shlex.join(squeue)}; echo "@@rc $?"; sdiag --json 2>/dev/null; echo; echo {END}\n'


def poke_script(partition: str) -> str:
    """The shell lines that ask slurmctld for a main scheduling cycle without changing
    anything: a partition update to the state it has (every update RPC queues the scheduler),
    then END."""
    update = ["scontrol", "update", f"PartitionName={partition}", "State=UP"]
    return f"{shlex.join(update)} >/dev/null 2>&1; echo {END}\n"


def split_look(text: str) -> tuple[list[str] | None, SlurmActivity | None]:
    """(squeue's lines or None if it failed, sdiag's activity or None) of one look's output."""
    head, sep, tail = text.partition("@@rc ")
    if not sep:
        return None, None
    status, _, sdiag = tail.partition("\n")
    lines = [line for line in head.splitlines() if line.strip()] if status.strip() == "0" else None
    return lines, parse_sdiag(sdiag.replace(END, ""))


class ControllerShell:
    """A shell beside slurmctld, kept open for a run: :meth:`run` sends it lines and returns
    what they print up to the END marker (None if the shell died or did not answer in time;
    the next call starts a new one)."""

    def __init__(self, start: Callable[[], subprocess.Popen]) -> None:
        self._start = start
        self._proc: subprocess.Popen | None = None
        self._buffer = b""

    def run(self, script: str, timeout: float = LOOK_TIMEOUT_S) -> str | None:
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._restart()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(script.encode())
            proc.stdin.flush()
        except OSError:
            self.close()
            return None
        return self._read_until_end(proc, time.monotonic() + timeout)

    def _read_until_end(self, proc: subprocess.Popen, deadline: float) -> str | None:
        assert proc.stdout is not None
        marker = (END + "\n").encode()
        fd = proc.stdout.fileno()
        while marker not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()  # a look that hangs: start afresh next time
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self.close()
                return None
            self._buffer += chunk
        text, _, self._buffer = self._buffer.partition(marker)
        return text.decode(errors="replace")

    def _restart(self) -> subprocess.Popen:
        self.close()
        self._proc = self._start()
        self._buffer = b""
        return self._proc

    def close(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()


def queue_row(fields: list[str]) -> tuple[str, ...]:
    """(state, name, start, ...) of one squeue row; a pending job's planned start is left out (it
    moves with every backfill pass and says nothing of the cluster working). Fields after the
    third (live I/O's Slurm job id and burst-buffer state) are kept."""
    state, name, start = [*fields, "", "", ""][:3]
    return state, name, start if state in ("RUNNING", "COMPLETING") else "", *fields[3:]


def running_since(rows: list[list[str]]) -> dict[int, float]:
    """Plan job id -> start instant of the running jobs, from squeue's ``%T %j %S`` rows
    (the replay names a job ``t<plan job id>``)."""
    found = {}
    for row in rows:
        if len(row) >= 3 and row[0] in ("RUNNING", "COMPLETING") and row[1][1:].isdigit():
            start = slurm_time(row[2])
            if start is not None:
                found[int(row[1][1:])] = start
    return found
