"""What went wrong during a run, and which jobs it touched.

While the replay runs, the host's watcher looks at the nodes (``sinfo``) and at slurmctld
(does ``squeue`` answer?) and a :class:`FaultMonitor` notes every change: nodes going
down or not responding and coming back, slurmctld unreachable and back. After the run,
:func:`fault_section` sets those events beside the jobs they touched: jobs Slurm ended
without letting them finish (``NODE_FAIL``, ``FAILED``, ...: *failed by fault*), jobs
cancelled by the harness (with the reason), submissions that needed retries, and jobs a
resumed replay found already in Slurm. Every job of the plan is then accounted for as
completed, failed by fault or cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from harness.model.records import Submission

# how sigsleep ends a job it ran to its end (its record's reason)
FINISHED = ("completed", "timeout")
# Slurm's states of a job that ended without its own record: killed by a fault
# (a job killed at Slurm's time limit without sigsleep's record: ``timeout_no_record``)
FAULT_STATES = (
    "node_fail", "failed", "boot_fail", "out_of_memory", "deadline", "timeout_no_record", "preempted",
)  # fmt: skip
DOWN_MARKS = ("down", "fail", "not_responding", "unknown", "*")
MAX_LISTED = 200


def node_is_down(state: str) -> bool:
    return any(mark in state for mark in DOWN_MARKS)


@dataclass
class FaultMonitor:
    """Turns successive looks at the cluster into events (wall-clock ``at``)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    down: set[str] = field(default_factory=set)
    ctld_down: bool = False

    def observe(self, now: float, node_states: dict[str, str] | None) -> None:
        """``node_states`` from sinfo, or None when slurmctld did not answer."""
        if node_states is None:
            if not self.ctld_down:
                self.events.append({"at": round(now, 3), "event": "slurmctld unreachable"})
            self.ctld_down = True
            return
        if self.ctld_down:
            self.events.append({"at": round(now, 3), "event": "slurmctld answers again"})
            self.ctld_down = False
            return  # a restarted slurmctld shows every node not responding until it registers
        down = {n for n, s in node_states.items() if node_is_down(s)}
        for event, nodes in (("nodes down", down - self.down), ("nodes back", self.down - down)):
            if nodes:
                self.events.append({"at": round(now, 3), "event": event, "nodes": sorted(nodes)})
        self.down = down


def job_outcome(status: str, slurm_state: str = "") -> str:
    """completed | failed-by-fault | cancelled | missing | rejected, from a result's status (and
    Slurm's end state: a job sigsleep saw ``killed`` was cancelled, or killed by a fault)."""
    if status in FINISHED:
        return "completed"
    if status.startswith("cancelled") or (status == "killed" and slurm_state.upper().startswith("CANCELLED")):
        return "cancelled"
    if status in FAULT_STATES or status == "killed":
        return "failed-by-fault"
    return status


def note_outage(outages: list[list[float]], start: float, end: float) -> None:
    """Add the interval in which a submission kept failing, merged with those it overlaps."""
    for span in outages:
        if start <= span[1] and end >= span[0]:
            span[0], span[1] = min(span[0], start), max(span[1], end)
            return
    outages.append([start, end])


def _outage_events(replay_status: dict) -> list[dict[str, Any]]:
    return [
        {"at": float(a), "event": "slurmctld unreachable (submissions failing)", "until": float(b)}
        for a, b in replay_status.get("outages", [])
    ]


def fault_section(
    results: pd.DataFrame, submissions: list[Submission], events: list[dict], replay_status: dict, t0: float,
    slurm_jobs: dict[int, dict] | None = None, cancel_reason: str = "",
) -> dict[str, Any]:  # fmt: skip
    """The report's ``faults`` section: events (seconds since t0), affected jobs, outcome counts;
    ``cancel_reason`` says why the harness cancelled the jobs still queued (the run stopped early)."""
    subs = {int(s["job_id"]): s for s in submissions if "job_id" in s}
    affected, outcomes = [], []
    for row in results.itertuples(index=False):
        sub = subs.get(int(row.job_id), {})
        status = str(row.status)
        known = {} if pd.isna(row.slurm_job_id) else (slurm_jobs or {}).get(int(row.slurm_job_id), {})
        state = str(known.get("state", "")).split(" ")[0]
        outcome = job_outcome(status, state)
        outcomes.append(outcome)
        notes = []
        if outcome != "completed":
            slurm = f"Slurm: {state or status.upper()}"
            notes.append(("killed; " if status == "killed" else "") + slurm if outcome != status else status)
            if outcome == "cancelled" and cancel_reason:
                notes.append(f"the run stopped: {cancel_reason}")
        if int(sub.get("attempts", 1)) > 1:
            notes.append(f"submitted after {int(sub['attempts'])} attempts")
        if sub.get("adopted"):
            notes.append("found in Slurm at the resume (not submitted again)")
        if notes:
            affected.append({
                "job_id": int(row.job_id),
                "slurm_job_id": None if pd.isna(row.slurm_job_id) else int(row.slurm_job_id),
                "outcome": outcome, "what": "; ".join(notes),
            })  # fmt: skip
    counts = pd.Series(outcomes, dtype=object).value_counts()
    timeline = sorted([*events, *_outage_events(replay_status)], key=lambda e: float(e["at"]))
    return {
        "events": [
            {
                **e,
                "at": round(float(e["at"]) - t0, 3),
                **({"until": round(e["until"] - t0, 3)} if "until" in e else {}),
            }
            for e in timeline
        ],
        "outcomes": {str(k): int(v) for k, v in counts.items()},
        "submission_retries": int(replay_status.get("retries", 0)),
        "retried_jobs": int(replay_status.get("retried_jobs", 0)),
        "found_after_failure": int(replay_status.get("found_after_failure", 0)),
        "resumes": int(replay_status.get("resumes", 0)),
        "adopted_at_resume": int(replay_status.get("adopted", 0)),
        "begin_pokes": int(replay_status.get("begin_pokes", 0)),
        "begin_pokes_failed": int(replay_status.get("begin_pokes_failed", 0)),
        "affected_jobs": affected[:MAX_LISTED],
        "n_affected": len(affected),
    }


def poke_warning(faults: dict[str, Any]) -> str | None:
    """A warning when pokes at the begins of jobs sent ahead (begin_pokes.py) were not taken:
    those jobs may have waited for Slurm's periodic pass, which a submission at x1 never does."""
    failed = faults.get("begin_pokes_failed", 0)
    if not failed:
        return None
    tried = failed + faults.get("begin_pokes", 0)
    return (
        f"warning: {failed} of {tried} pokes of slurmctld at the begins of jobs sent ahead were not "
        "taken (slurmctld away, or no job of the run in Slurm for that begin): those jobs may have "
        "waited up to Slurm's sched_interval for its periodic pass (the report's faults section)"
    )
