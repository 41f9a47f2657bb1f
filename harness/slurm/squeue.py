"""States of jobs and job-array tasks from ``squeue --format=%i|%T``.

squeue lists a running array task as ``123_4`` and the tasks still pending as one
line ``123_[5-9,11%2]`` (``%2``: at most two at once); a job that is not an array is
``124``. Tasks not listed at all have left the queue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.model.hostlist import expand_hostlist

_PENDING_RANGE = re.compile(r"^(?P<base>\d+)_\[(?P<inner>[^\]%]+)(?:%\d+)?\]$")


@dataclass
class TaskStates:
    listed: dict[str, str]  # "123_4" or "124" -> state
    ranges: list[tuple[str, set[str], str]]  # (base id, task ids, state) of bracketed lines

    def state_of(self, job_id: str) -> str | None:
        """The state of ``123_4`` or ``124``; None if squeue did not list it."""
        if job_id in self.listed:
            return self.listed[job_id]
        base, _, task = job_id.partition("_")
        for rbase, tasks, state in self.ranges:
            if rbase == base and task in tasks:
                return state
        return None


def parse_squeue(text: str) -> TaskStates:
    listed: dict[str, str] = {}
    ranges: list[tuple[str, set[str], str]] = []
    for line in text.splitlines():
        ident, sep, state = line.strip().partition("|")
        if not sep:
            continue
        match = _PENDING_RANGE.match(ident)
        if match:
            tasks = {name[1:] for name in expand_hostlist(f"t[{match['inner']}]")}
            ranges.append((match["base"], tasks, state.strip()))
        else:
            listed[ident] = state.strip()
    return TaskStates(listed, ranges)
