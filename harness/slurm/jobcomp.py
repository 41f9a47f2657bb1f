"""Slurm's own view of finished jobs, from ``jobcomp/filetxt`` (whole-second times).

jobcomp/filetxt writes one line per finished job, as ``key=value`` pairs; we read it
instead of ``sacct`` because it needs no slurmdbd and records the same submit, start
and end instants (Slurm keeps them in whole seconds either way).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from harness.workload.slurm_values import timestamp

TIME_KEYS = ("SubmitTime", "StartTime", "EndTime")


def parse_line(line: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for token in line.strip().split(" "):
        if "=" in token and token.split("=", 1)[0].isidentifier():
            key, value = token.split("=", 1)
            fields[key] = value
        elif key is not None:  # a value with spaces (e.g. a job name)
            fields[key] += " " + token
    return fields


def slurm_time(text: str) -> float | None:
    """Slurm's ``2026-11-22T07:27:19`` (the containers run in UTC) as epoch seconds."""
    return timestamp(text, UTC)


def slurm_instant(epoch: float) -> str:
    """Epoch seconds (whole) as the ``2026-11-22T07:27:19`` Slurm's options take (``--begin``)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def read_jobcomp(path: Path) -> dict[int, dict]:
    """Slurm job id -> {state, start, end, submit, eligible, nodelist, exit}."""
    jobs: dict[int, dict] = {}
    if not path.exists():
        return jobs
    for line in path.read_text(errors="replace").splitlines():
        fields = parse_line(line)
        if "JobId" not in fields:
            continue
        jobs[int(fields["JobId"])] = {
            "state": fields.get("JobState", ""),
            "submit": slurm_time(fields.get("SubmitTime", "")),
            "eligible": slurm_time(fields.get("EligibleTime", "")),
            "start": slurm_time(fields.get("StartTime", "")),
            "end": slurm_time(fields.get("EndTime", "")),
            "nodelist": fields.get("NodeList", ""),
            "exit": fields.get("ExitCode", ""),
        }
    return jobs


def keep_jobs(path: Path, job_ids: set[int]) -> int:
    """Rewrite the jobcomp file at ``path`` with only the records of ``job_ids`` (one run's jobs:
    the cluster's log holds every earlier run's too); returns how many records were dropped."""
    if not path.exists():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(errors="replace").splitlines():
        job_id = parse_line(line).get("JobId", "")
        if job_id.isdigit() and int(job_id) not in job_ids:
            dropped += 1
        else:
            kept.append(line)
    path.write_text("".join(f"{line}\n" for line in kept))
    return dropped
