"""How slurmctld's scheduling passes ended during a run, from ``sdiag --json``'s exit counters.

slurmctld counts why each main-scheduler pass and each backfill cycle stopped: at the end of
the queue, or cut short by a limit (``max_sched_time``, ``bf_max_time``, a job count) or by a
change of state while backfill yielded its locks. The counters run from slurmctld's start
or its last midnight, so a run's own are summed over readings taken while it goes
(:class:`PassTally`). A pass cut by its time limit leaves the rest of the queue to the next
one: at a high speed-up of the virtual clock that is what would change the schedule against x1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.model.commands import CommandResult

# sdiag's names of the exits that cut a pass short by its time limit
TIME_LIMIT_EXITS = {"main": "max_sched_time", "backfill": "bf_max_time"}
_SDIAG_EXITS = {"main": "schedule_exit", "backfill": "bf_exit"}
PassExits = dict[str, dict[str, int]]  # {"main" | "backfill": {exit name: passes}}


def parse_pass_exits(text: str) -> PassExits | None:
    """The exit counters in ``sdiag --json``'s output; None if it is not sdiag's JSON."""
    try:
        stats = json.loads(text)["statistics"]
        return {
            kind: {name: int(count) for name, count in stats[key].items()}
            for kind, key in _SDIAG_EXITS.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def read_pass_exits(run: Callable[[list[str]], CommandResult]) -> PassExits | None:
    """slurmctld's exit counters now (``run`` executes a command beside it); None if unknown."""
    try:
        answer = run(["sdiag", "--json"])
    except Exception:  # a diagnostic: no answer leaves it unknown, never the run
        return None
    return parse_pass_exits(answer.stdout) if answer.ok else None


@dataclass
class PassTally:
    """The passes of a run, summed over readings taken while it goes.

    slurmctld resets its counters at midnight of its own clock, which on the virtual clock at
    x100 comes every 14.4 real minutes: a reading with a counter lower than the last one's
    starts a new count from zero. The passes between the last reading before a reset and the
    reset are then not counted (``resets`` says how many resets there were)."""

    base: PassExits | None = None  # where the current count started (the first reading, or 0)
    last: PassExits | None = None
    closed: PassExits = field(default_factory=dict)  # the counts before the last reset
    resets: int = 0

    def add(self, reading: PassExits | None) -> None:
        if reading is None:
            return
        if self.base is None or self.last is None:
            self.base = self.last = reading
            return
        if any(
            n < self.last.get(kind, {}).get(name, 0)
            for kind, exits in reading.items()
            for name, n in exits.items()
        ):
            self.closed = _plus(self.closed, _minus(self.last, self.base))
            self.base, self.resets = {}, self.resets + 1
        self.last = reading

    def passes(self) -> PassExits | None:
        """By kind and exit, the passes that ended since the first reading; None: no reading."""
        if self.base is None or self.last is None:
            return None
        return _plus(self.closed, _minus(self.last, self.base))


def _minus(a: PassExits, b: PassExits) -> PassExits:
    return {
        kind: {name: n - b.get(kind, {}).get(name, 0) for name, n in exits.items()}
        for kind, exits in a.items()
    }


def _plus(a: PassExits, b: PassExits) -> PassExits:
    return {
        kind: {
            name: a.get(kind, {}).get(name, 0) + b.get(kind, {}).get(name, 0)
            for name in a.get(kind, {}).keys() | b.get(kind, {}).keys()
        }
        for kind in a.keys() | b.keys()
    }


def cut_by_time(passes: PassExits) -> str | None:
    """One line on the passes cut by their time limit, or None if none was."""
    cut = {kind: passes.get(kind, {}).get(name, 0) for kind, name in TIME_LIMIT_EXITS.items()}
    if not any(cut.values()):
        return None
    total = {kind: sum(passes.get(kind, {}).values()) for kind in cut}
    parts = [
        f"{cut[kind]} of {total[kind]} {kind} passes at {TIME_LIMIT_EXITS[kind]}" for kind in cut if cut[kind]
    ]
    return "slurmctld cut " + " and ".join(parts) + " (its own clock): the rest of the queue waited a pass"
