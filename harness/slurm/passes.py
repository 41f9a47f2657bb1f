"""How slurmctld's scheduling passes ended during a run, from ``sdiag --json``'s exit counters.

slurmctld counts why each main-scheduler pass and each backfill cycle stopped: at the end of
the queue, or cut short by a limit (``max_sched_time``, ``bf_max_time``, a job count) or by a
change of state while backfill yielded its locks. The counters run from slurmctld's start, so a
run's own are the difference of two readings, one before its first submission and one at its
end. A pass cut by its time limit leaves the rest of the queue to the next one: at a high
speed-up of the virtual clock that is what would change the schedule against x1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

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


def passes_between(before: Mapping[str, Any] | None, after: PassExits | None) -> PassExits | None:
    """The passes that ended between two readings, by kind and exit; None if either is unknown
    or slurmctld restarted in between (a counter went down)."""
    if before is None or after is None:
        return None
    found = {
        kind: {name: count - int(before.get(kind, {}).get(name, 0)) for name, count in exits.items()}
        for kind, exits in after.items()
    }
    if any(count < 0 for exits in found.values() for count in exits.values()):
        return None
    return found


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
