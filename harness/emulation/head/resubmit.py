"""Submissions that survive a slurmctld restart, and never twice: one ``sbatch``
(:func:`submit`), its retries (:func:`submit_retrying`) and, at a resume, the jobs a dead
replay had submitted (:func:`jobs_to_adopt`).

While slurmctld is down (restarted, crashed, or too busy to answer) sbatch fails with a
*transient* error; the replay retries such a submission with a growing delay
(:func:`backoff`) until slurmctld answers again or ``retry_for`` seconds have passed. A
failed sbatch may still have reached slurmctld (the answer was lost), so before each new
attempt the replay asks Slurm whether the job is already there: every job carries its
run's id in its comment (``run=<id>``) and its trace id in its name (``t<id>``).

A resumed replay (``harness replay --resume``, after the replay process was killed or its
controller container restarted) asks the same question for the whole run once: jobs found in
Slurm (or, once Slurm has forgotten them, in the jobs' own sigsleep log) but missing from the
submissions file (killed between sbatch's answer and the record) are *adopted*, not
submitted again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness.slurm.jobspec import parse_comment

# sbatch's messages when slurmctld does not answer (down, restarting or overloaded)
TRANSIENT_ERRORS = (
    "unable to contact slurm controller",
    "socket timed out",
    "temporarily unable",
    "connection refused",
    "zero bytes were transmitted",
    "connect failure",
    "timed out",
    "communication connection failure",
    "connection reset by peer",  # slurmctld stopping while it read the request
    "broken pipe",
)
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 4.0
ATTEMPT_TIMEOUT_S = 60.0  # one sbatch at most; it then counts as a transient failure
SQUEUE_FORMAT = "%i|%j|%k"


class SlurmUnavailable(RuntimeError):
    """slurmctld did not answer a query: nothing can be concluded about the queue."""


def is_transient(error: str) -> bool:
    """Whether a failed sbatch is worth retrying (slurmctld unreachable, not a refused job)."""
    low = error.lower()
    return any(marker in low for marker in TRANSIENT_ERRORS)


def backoff(attempt: int) -> float:
    """Seconds to wait after the ``attempt``-th failure (1-based): 0.5, 1, 2, 4, 4, ..."""
    return float(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (attempt - 1)))


def parse_run_jobs(text: str, run_id: str) -> dict[int, int]:
    """Trace id -> Slurm job id of the run's jobs in ``squeue --format=%i|%j|%k`` output.

    A requeued job keeps its id; should a trace id appear twice, the first (lowest) id wins.
    """
    found: dict[int, int] = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        fields = parse_comment(parts[2])
        if fields.get("run") != run_id or not fields.get("trace_id", "").isdigit():
            continue
        trace_id, slurm_id = int(fields["trace_id"]), int(parts[0])
        found[trace_id] = min(slurm_id, found.get(trace_id, slurm_id))
    return found


def squeue_run_jobs(run_id: str, name: str | None = None) -> dict[int, int]:
    """The run's jobs Slurm knows (pending, running, or finished within MinJobAge)."""
    cmd = ["squeue", "--noheader", "--states=all", f"--format={SQUEUE_FORMAT}"]
    if name:
        cmd.append(f"--name={name}")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=ATTEMPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable("squeue timed out") from None
    if res.returncode != 0:
        raise SlurmUnavailable(res.stderr.strip() or f"squeue exited {res.returncode}")
    return parse_run_jobs(res.stdout, run_id)


Submit = Callable[[list[str]], tuple[int | None, str]]
Find = Callable[[int], int | None]  # trace id -> Slurm id already there, None; SlurmUnavailable


@dataclass
class Outcome:
    slurm_id: int | None
    error: str
    attempts: int  # sbatch calls made
    found: bool = False  # a failed attempt had reached Slurm after all


def submit(cmd: list[str]) -> tuple[int | None, str]:
    """Run sbatch; (Slurm job id, '') or (None, error message)."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=ATTEMPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"sbatch timed out after {ATTEMPT_TIMEOUT_S:g} s"
    if res.returncode != 0:
        return None, (res.stderr.strip() or f"sbatch exited {res.returncode}").splitlines()[-1]
    try:
        return int(res.stdout.strip().split(";")[0]), ""
    except ValueError:
        return None, f"unexpected sbatch output {res.stdout.strip()!r}"


def submit_retrying(
    cmd: list[str], trace_id: int, submit: Submit, find: Find, *, retry_for: float,
    clock: Callable[[], float], sleep: Callable[[float], None], stop: Callable[[], bool],
) -> Outcome:  # fmt: skip
    """sbatch ``cmd``; on a transient failure wait, check the job is not in Slurm, try again."""
    deadline = clock() + retry_for
    attempts, failures = 0, 0
    while True:
        attempts += 1
        slurm_id, error = submit(cmd)
        if slurm_id is not None or not is_transient(error):
            return Outcome(slurm_id, error, attempts)
        while True:  # until Slurm can say whether the failed attempt got through
            failures += 1
            delay = backoff(failures)
            if clock() + delay > deadline or stop():
                return Outcome(None, f"{error} (gave up after {attempts} attempt(s))", attempts)
            sleep(delay)
            try:
                found = find(trace_id)
            except SlurmUnavailable:
                continue
            if found is not None:
                return Outcome(found, "", attempts, found=True)
            break


def jobs_to_adopt(
    plan_ids: Iterable[int], recorded: set[int], in_slurm: dict[int, int], ran: dict[int, int]
) -> dict[int, int]:
    """Plan job id -> Slurm id of the jobs a dead replay submitted without recording them (it
    died between sbatch's answer and the record): those Slurm holds (``in_slurm``), and those
    it has forgotten since (past ``MinJobAge``) whose job wrote its own record (``ran``: the
    sigsleep log). None of them is submitted again; every other unrecorded job is."""
    plan = set(plan_ids)
    found = {**ran, **in_slurm}  # Slurm's id first: the log's may be an ordering agent's copy
    return {job: slurm for job, slurm in sorted(found.items()) if job in plan and job not in recorded}
