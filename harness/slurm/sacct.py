"""Slurm's own view of a run from its accounting database: ``sacct --json``.

With ``[deployment.accounting]`` enabled the collection reads every job of the run here
(submit, eligible, start, end, state, node list, licenses, whole seconds); without it,
from the ``jobcomp/filetxt`` log (:mod:`harness.slurm.jobcomp`). Both readers give the
same keys per job, so the cross-check does not care which one it got.

slurmctld sends a job's record to slurmdbd when the job ends, asynchronously (and
spools it while slurmdbd is away), so :func:`fetch_sacct` polls until every job it asks
for has its end time or the time runs out.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from harness.model.commands import CommandResult
from harness.workload.slurm_values import json_number

Runner = Callable[[list[str]], CommandResult]
CHUNK = 500  # job ids per sacct call (keeps the command line short)
UNSET = (None, 0)  # Slurm's JSON gives 0 for a time that is not set


class SacctError(RuntimeError):
    pass


# sacct given --jobs ends its window "now" on the host's clock: a run on the virtual clock is
# ahead of it, and its later jobs would be left out (197 of the slice's 200 were)
SACCT_END = "--endtime=now+520weeks"


def sacct_command(job_ids: Iterable[int]) -> list[str]:
    ids = ",".join(str(j) for j in job_ids)
    return ["sacct", "--json", "--allusers", "--duplicates", SACCT_END, f"--jobs={ids}"]


def _time(value: Any) -> float | None:
    """A time field of sacct's JSON: an integer, or ``{"set", "infinite", "number"}``; None
    when unset, infinite or 0 (read by :func:`harness.workload.slurm_values.json_number`)."""
    if value is None or (isinstance(value, dict) and "set" not in value):  # an absent key read as {}
        return None
    number = json_number(value)
    return None if number in UNSET or number == math.inf else number


def job_record(job: dict[str, Any]) -> dict[str, Any]:
    """One job of sacct's JSON in the keys of :func:`harness.slurm.jobcomp.read_jobcomp`, plus
    eligible, licenses, reason and the seconds suspended."""
    times = job.get("time", {})
    state = job.get("state", {})
    exit_code = job.get("exit_code", {})
    return {
        "state": ",".join(state.get("current", [])),
        "reason": state.get("reason", ""),
        "submit": _time(times.get("submission")),
        "eligible": _time(times.get("eligible")),
        "start": _time(times.get("start")),
        "end": _time(times.get("end")),
        "suspended": float(times.get("suspended") or 0),
        "nodelist": job.get("nodes", "") or "",
        "licenses": job.get("licenses", "") or "",
        "exit": _exit_text(exit_code),
    }


def _exit_text(code: dict[str, Any]) -> str:
    rc = code.get("return_code", {})
    number = _time(rc) if isinstance(rc, dict) else rc
    signal = code.get("signal", {}).get("id", {})
    sig = _time(signal) if isinstance(signal, dict) else signal
    return f"{int(number or 0)}:{int(sig or 0)}"


def parse_sacct(text: str) -> dict[int, dict[str, Any]]:
    """Slurm job id -> record, from ``sacct --json`` output. The last record of a job id wins
    (``--duplicates`` lists a requeued job once per run)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SacctError(f"sacct --json gave no JSON ({exc}): {text[:200]!r}") from None
    errors = [e.get("description") or e.get("error") for e in data.get("errors", [])]
    if errors:
        raise SacctError(f"sacct reported: {'; '.join(str(e) for e in errors)}")
    return {int(job["job_id"]): job_record(job) for job in data.get("jobs", [])}


def fetch_sacct(
    run: Runner, job_ids: list[int], timeout: float = 30.0, poll: float = 0.5
) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """(records by job id, the raw JSON jobs) of ``job_ids``; waits up to ``timeout`` s for
    every job's end time to reach the database."""
    deadline = time.monotonic() + timeout
    while True:
        records, raw = _query(run, job_ids)
        pending = [j for j in job_ids if records.get(j, {}).get("end") is None]
        if not pending or time.monotonic() >= deadline:
            return records, raw
        time.sleep(poll)


def _query(run: Runner, job_ids: list[int]) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    records: dict[int, dict[str, Any]] = {}
    raw: list[dict[str, Any]] = []
    for i in range(0, len(job_ids), CHUNK):
        res = run(sacct_command(job_ids[i : i + CHUNK]))
        if not res.ok:
            raise SacctError(f"sacct failed (rc {res.rc}): {res.stderr.strip()[:300]}")
        records.update(parse_sacct(res.stdout))
        raw += json.loads(res.stdout).get("jobs", [])
    return records, raw
