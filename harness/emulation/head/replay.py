"""Replay a job plan on the head node: submit every job at t0 + its (shrunk) submit time.

Runs beside slurmctld (in the controller container, locally or over SSH): no remote round
trip inflates the submission lag. Pacing follows Barberato's ``runWorkload`` (Algorithm
3.2): every instant is computed from the replay's start, never from the previous submission,
so sbatch's time does not accumulate; an optional ``drift`` per job (Section 4.2.4) stretches
the instants against Slurm's per-job launch delay; a warm-up period precedes t0.

A small pool of submitter threads starts each sbatch at its job's instant: a slow sbatch
(slurmctld busy) never delays the next, and jobs of one instant go out concurrently, so two
in flight may swap Slurm's FCFS order (``order_inversions`` counts the swaps from the
submissions file's starts and returns). ``workers=1`` submits strictly in order.

A submission that fails while slurmctld does not answer (restarted, crashed) is retried
with backoff, never twice (:mod:`harness.emulation.head.resubmit`). A replay killed mid-run is
taken up again with ``resume``: same t0, the jobs of the submissions file (or found in
Slurm, or in the jobs' own log: :func:`jobs_to_adopt`) are not submitted again, the others
are submitted when due (at once if overdue, their lag recorded).

Files written in ``run_dir`` (the host reads them through the shared mount):
    submissions.jsonl  one line per job: trace id, Slurm id, intended and actual submit, attempts
    replay.json        status: t0, counts, retries, resumes, done/stopped, errors
and the jobs' own sigsleep records go to ``jobs.jsonl`` there.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shlex
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

import pandas as pd

from harness.emulation.head.ahead import send_plan
from harness.emulation.head.begin_pokes import BeginPokes, poke_slurm
from harness.emulation.head.faultlog import note_outage
from harness.emulation.head.io_requests import PFS_RATE, io_directives, io_volume_words, pfs_license
from harness.emulation.head.resubmit import (
    SlurmUnavailable,
    jobs_to_adopt,
    squeue_run_jobs,
    submit,
    submit_retrying,
)
from harness.emulation.head.site_requests import site_partition, site_request_words
from harness.emulation.head.site_users import SHARED_LOGS_PREAMBLE, submit_as_words
from harness.emulation.iolive.phases import PLAN_COLUMN
from harness.model.clock import VirtualClock
from harness.model.jsonio import read_json, read_jsonl
from harness.model.records import Submission
from harness.model.rundir import SHARED_JOBS, SIGSLEEP_LOG, STARTED, STATUS, STOP_FILE, SUBMISSIONS
from harness.slurm.config import URGENT_PARTITION
from harness.slurm.jobcomp import slurm_instant
from harness.slurm.jobspec import encode_comment, job_name, slurm_time_limit

DEFAULT_SIGSLEEP = "/usr/local/bin/sigsleep"
DEFAULT_WORKERS = 8  # concurrent sbatch processes at most


@dataclass(frozen=True)
class ReplayOptions:
    run_dir: Path
    run_id: str
    warmup: float = 2.0  # seconds between start and t0: lets the submitter settle
    drift: float = 0.0  # seconds added per job index (Barberato's drift correction)
    partition: str = "compute"
    bb_license: str = "bb"
    sigsleep: str = DEFAULT_SIGSLEEP
    job_dir: str = SHARED_JOBS
    extra_sbatch: tuple[str, ...] = ()
    workers: int = DEFAULT_WORKERS
    retry_for: float = 300.0  # seconds a submission is retried while slurmctld does not answer
    resume: bool = False  # continue the run in run_dir (same t0; no job submitted twice)
    clock: str | None = None  # the virtual clock's page (harness.model.clock); None: the wall clock
    from_slurm_start: bool = False  # with clock, at a fixed speed-up: jobs count from Slurm's start
    ahead: bool = False  # each job sent one instant early with sbatch --begin (harness.emulation.head.ahead)
    ahead_by: float | None = None  # with ahead: sent this many clock seconds early instead
    site_requests: bool = False  # partition, CPUs, memory, GRES from the plan (emulation.head.site_requests)
    site_users: bool = False  # each job as its plan user and account (emulation.head.site_users); as root
    bandwidth_license: bool = True  # a job with a PFS rate holds it as a license (slurm-backfill-io-aware-D)


@dataclass
class ReplayStatus:
    run_id: str
    jobs: int
    t0: float = 0.0
    submitted: int = 0
    failed: int = 0
    done: bool = False
    stopped: bool = False
    max_lag: float = 0.0
    retries: int = 0  # sbatch attempts beyond the first, over all jobs
    retried_jobs: int = 0  # jobs that needed more than one attempt
    found_after_failure: int = 0  # failed attempts that had reached Slurm (not resubmitted)
    resumes: int = 0  # times the replay was taken up again
    resumed_with: int = 0  # submissions already made at the last resume
    adopted: int = 0  # jobs found in Slurm at a resume without a record (not resubmitted)
    outages: list[list[float]] = field(default_factory=list)  # [from, to]: submissions kept failing
    errors: list[str] = field(default_factory=list)
    updated: float = 0.0
    caught_up: bool = False  # every submission due so far has returned (the ordering agent looks then)
    begin_pokes: int = 0  # with a lead (ahead_by): pokes of slurmctld at the begins (begin_pokes.py)
    begin_pokes_failed: int = 0  # ... that slurmctld refused, or begins with no job of the run in Slurm


def sbatch_command(job: dict, opts: ReplayOptions, intended: float, begin: float | None = None) -> list[str]:
    """The sbatch invocation of one plan row (a dict of the plan columns); ``begin``: the
    instant it becomes eligible, when it is submitted ahead."""
    bb_total = int(job["nodes"]) * int(job["bb_per_node_mb"])
    phases = str(job.get(PLAN_COLUMN) or "")  # io-aware: compute and checkpoint phases
    work = ["--phases", phases, "--time-scale", f"{float(job['io_time_scale']):.9g}"] if phases else [
        "--runtime", f"{float(job['runtime']):.6f}"]  # fmt: skip
    sigsleep = [
        opts.sigsleep,
        *work,
        "--walltime", f"{float(job['walltime']):.6f}",
        "--job-id", str(int(job["job_id"])),
        "--log", str(opts.run_dir / SIGSLEEP_LOG),
        # on a virtual clock, a start marker: an event-driven clock waits for it before it moves
        *(["--clock", opts.clock, "--started", str(opts.run_dir / STARTED)] if opts.clock else []),
        *(["--from-slurm-start"] if opts.clock and opts.from_slurm_start else []),
        "--submit-intended", f"{intended:.6f}",
        "--meta", f"run={opts.run_id}",
    ]  # fmt: skip
    cmd = [
        "sbatch", "--parsable",
        f"--job-name={job_name(job['job_id'])}",
        # a high-priority job (the plan's priority column) goes to the urgent tier
        f"--partition={URGENT_PARTITION if job.get('priority', 0) else own_partition(job, opts)}",
        f"--nodes={int(job['nodes'])}",
        f"--time={slurm_time_limit(float(job['walltime']))}",
        f"--chdir={opts.job_dir}",
        "--output=/dev/null",
        # a job whose node fails ends NODE_FAIL (reported as failed by the fault), instead of
        # being requeued and run a second time after Slurm's requeue delay (~2 min)
        "--no-requeue",
        # the ordering agent reads the exact walltime, per-node BB request and PFS rate from here
        # (and the replay, after a failure or a resume, finds the run's jobs by ``run=``)
        "--comment="
        + encode_comment(job["job_id"], job["walltime"], job["bb_per_node_mb"], job.get(PFS_RATE))
        + f" run={opts.run_id}" + io_volume_words(job),
    ]  # fmt: skip
    io = io_directives(job, opts.bb_license)
    licenses = [f"{opts.bb_license}:{bb_total}"] if bb_total > 0 and not io else []
    licenses += pfs_license(job) if opts.bandwidth_license else []  # not with the agent (it has no license)
    if licenses:
        cmd.append("--licenses=" + ",".join(licenses))
    if begin is not None:
        cmd.append(f"--begin={slurm_instant(begin)}")
    cmd += site_request_words(job) if opts.site_requests else []
    cmd += submit_as_words(job) if opts.site_users else []
    cmd += list(opts.extra_sbatch)
    preamble = [*(SHARED_LOGS_PREAMBLE if opts.site_users else ()), *io]
    cmd.append("--wrap=" + "".join(line + "\n" for line in preamble) + "exec " + shlex.join(sigsleep))
    return cmd


def own_partition(job: dict, opts: ReplayOptions) -> str:
    """The run's partition, or the site's partition the job ran in (``site_requests``)."""
    return (site_partition(job) if opts.site_requests else None) or opts.partition


class ReplayError(RuntimeError):
    pass


class Replayer:
    """Submits the plan's jobs at their wall-clock instants."""

    def __init__(
        self,
        plan: pd.DataFrame,
        opts: ReplayOptions,
        submit_fn: Callable[[list[str]], tuple[int | None, str]] = submit,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        run_jobs: Callable[[str | None], dict[int, int]] | None = None,
        poke: Callable[[int, str], bool] = poke_slurm,
    ) -> None:
        self.plan = plan.sort_values("submit", kind="stable").reset_index(drop=True)
        self.opts = opts
        self.submit_fn = submit_fn
        self.clock = clock
        self.sleep = sleep
        self.pokes = BeginPokes((), poke)  # the run's begins: expected in run()
        # the run's jobs Slurm knows (trace id -> Slurm id), optionally of one job name
        self.run_jobs = run_jobs or (lambda name: squeue_run_jobs(opts.run_id, name))
        self.status = ReplayStatus(run_id=opts.run_id, jobs=len(self.plan))
        self._stop = False
        self._last_status_write = 0.0
        self._lock = threading.Lock()
        self._in_flight = 0  # submissions begun and not yet returned
        self._waiting = False  # for the next job's instant

    def intended_instants(self, t0: float) -> list[float]:
        submits = self.plan["submit"].to_numpy(float)
        return [t0 + s + self.opts.drift * i for i, s in enumerate(submits)]

    def request_stop(self, *_: object) -> None:
        self._stop = True

    def _should_stop(self) -> bool:
        return self._stop or (self.opts.run_dir / STOP_FILE).exists()

    def run(self) -> ReplayStatus:
        self.opts.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.opts.run_dir / SUBMISSIONS, "a", buffering=1) as out:
            done = self._resume(out) if self.opts.resume else set()
            if not self.opts.resume:  # on a whole second where jobs count from Slurm's (whole) start
                t0 = self.clock() + self.opts.warmup
                self.status.t0 = float(math.ceil(t0)) if self.opts.from_slurm_start else t0
            t0 = self.status.t0
            self._write_status(force=True)
            rows = self.plan.to_dict("records")
            intended = self.intended_instants(t0)
            begins, releases = send_plan(intended, self.opts.ahead, self.opts.ahead_by)
            pool = ThreadPoolExecutor(self.opts.workers) if self.opts.workers > 1 else None
            to_come = [b for b, job in zip(begins, rows, strict=True) if int(job["job_id"]) not in done]
            self.pokes.expect(to_come if self.opts.ahead_by is not None else ())
            try:
                for index, job in enumerate(rows):
                    if int(job["job_id"]) in done:
                        continue
                    if not self._wait_until(releases[index]):
                        self.status.stopped = True
                        break
                    with self._lock:
                        self._in_flight += 1
                        self.status.caught_up = False
                    if pool is None:
                        self._submit_one(out, index, job, intended[index], begins[index])
                    else:
                        pool.submit(self._submit_one, out, index, job, intended[index], begins[index])
                if self.pokes.begins and not self._wait_until(self.pokes.last):  # a lead after the last
                    self.status.stopped = True
                with self._lock:  # nothing more is due: caught up once the last ones return
                    self._waiting = True
                    self._tell_caught_up()
            finally:
                if pool is not None:
                    pool.shutdown(wait=True)
        self.status.begin_pokes, self.status.begin_pokes_failed = self.pokes.pokes, self.pokes.failed
        self.status.done = not self.status.stopped
        self._write_status(force=True)
        return self.status

    def _wait_until(self, instant: float) -> bool:
        """Sleep until ``instant`` (clock s), waking to honour a stop request and to poke at begins."""
        while True:
            if self._should_stop():
                return False
            now = self.clock()
            to_begin, remaining = self.pokes.poke_passed(now), instant - now  # a poke at a passed begin
            with self._lock:
                self._waiting = remaining > 0
                self._tell_caught_up()
            if remaining <= 0:
                return True
            self.sleep(min(remaining, 0.5, to_begin))
            self._write_status()

    def _submit_one(self, out: TextIO, index: int, job: dict, intended: float, begin: float | None) -> None:
        cmd = sbatch_command(job, self.opts, intended, begin)
        before = self.clock()
        # submitted ahead, the job enters Slurm's eligible queue at its begin (or at once if late)
        entered = before if begin is None else max(begin, before)
        outcome = submit_retrying(
            cmd, int(job["job_id"]), self.submit_fn, self._find, retry_for=self.opts.retry_for,
            clock=self.clock, sleep=self.sleep, stop=self._should_stop,
        )  # fmt: skip
        slurm_id, error = outcome.slurm_id, outcome.error
        after = self.clock()
        record: Submission = {
            "index": index,
            "job_id": int(job["job_id"]),
            "slurm_job_id": slurm_id,
            "intended": round(intended, 6),
            "actual": round(entered, 6),
            "returned": round(after, 6),
            "lag": round(entered - intended, 6),
            "attempts": outcome.attempts,
        }
        if begin is not None:
            record["sent"] = round(before, 6)
        with self._lock:
            self.status.retries += outcome.attempts - 1
            self.status.retried_jobs += outcome.attempts > 1
            self.status.found_after_failure += outcome.found
            if outcome.attempts > 1 and len(self.status.outages) < 100:
                note_outage(self.status.outages, round(before, 3), round(after, 3))
            if slurm_id is None:
                record["error"] = error
                self.status.failed += 1
                if len(self.status.errors) < 20:
                    self.status.errors.append(f"job {int(job['job_id'])}: {error}")
            else:
                self.status.submitted += 1
                if begin is not None:
                    self.pokes.note(begin, slurm_id, job_name(job["job_id"]))
            self.status.max_lag = max(self.status.max_lag, entered - intended)
            out.write(json.dumps(record) + "\n")
            self._in_flight -= 1
            # on the virtual clock every submission is told at once: an event-driven clock
            # moves only once the replay has made every submission due
            if not self._tell_caught_up():
                self._write_status(force=self.opts.clock is not None)

    def _tell_caught_up(self) -> bool:
        """(With the lock held.) Once every submission due has returned, say so at once: the
        ordering agent then looks at the whole burst (:mod:`harness.emulation.head.wakeup`)."""
        if self.status.caught_up or not self._waiting or self._in_flight:
            return False
        self.status.caught_up = True
        self._write_status(force=True)
        return True

    def _find(self, trace_id: int) -> int | None:
        return self.run_jobs(job_name(trace_id)).get(trace_id)

    def _resume(self, out: TextIO) -> set[int]:
        """Take up the run where the killed replay left it: its t0 and counts; the trace ids
        already submitted (recorded, or found in Slurm and recorded now as adopted)."""
        old = read_json(self.opts.run_dir / STATUS)
        if not old.get("t0"):
            raise ReplayError(f"{self.opts.run_dir}: no replay to resume (no t0 in {STATUS})")
        known = {f for f in ReplayStatus.__dataclass_fields__ if f not in ("jobs", "done", "stopped")}
        for key in known & set(old):
            setattr(self.status, key, old[key])
        records = [r for r in read_jsonl(self.opts.run_dir / SUBMISSIONS) if "job_id" in r]
        done = {int(r["job_id"]) for r in records}
        self.status.submitted = sum(1 for r in records if r.get("slurm_job_id") is not None)
        self.status.failed = len(records) - self.status.submitted
        self.status.resumes += 1
        self.status.resumed_with = len(done)
        plan_ids = [int(j) for j in self.plan["job_id"]]
        instants = dict(zip(plan_ids, enumerate(self.intended_instants(self.status.t0)), strict=True))
        for trace_id, slurm_id in jobs_to_adopt(plan_ids, done, self._slurm_run_jobs(), self._ran()).items():
            index, intended = instants[trace_id]
            out.write(json.dumps({
                "index": index, "job_id": trace_id, "slurm_job_id": slurm_id,
                "intended": round(intended, 6), "actual": None, "returned": None, "lag": None,
                "attempts": 1, "adopted": True,
            }) + "\n")  # fmt: skip
            self.status.submitted += 1
            self.status.adopted += 1
            done.add(trace_id)
        return done

    def _slurm_run_jobs(self) -> dict[int, int]:
        """The run's jobs Slurm holds; slurmctld may itself be restarting: the answer is needed."""
        while True:
            try:
                return self.run_jobs(None)
            except SlurmUnavailable:
                self.sleep(1.0)

    def _ran(self) -> dict[int, int]:
        """Plan job id -> Slurm id of the jobs that wrote their own record (the sigsleep log)."""
        records = read_jsonl(self.opts.run_dir / SIGSLEEP_LOG)
        ran = [r for r in records if r.get("job_id") and r.get("slurm_job_id")]
        return {int(r["job_id"]): int(r["slurm_job_id"]) for r in ran}

    def _write_status(self, force: bool = False) -> None:
        now = self.clock()
        # at most every half second of real time (a held virtual clock does not move)
        real = time.monotonic() if self.opts.clock is not None else now
        if not force and real - self._last_status_write < 0.5:
            return
        self._last_status_write = real
        # a heartbeat, on the wall clock whatever clock paces the replay
        self.status.updated = now if self.opts.clock is None else time.time()
        path = self.opts.run_dir / STATUS
        # a name per write: a shared "replay.tmp" renamed away ended a replay with ENOENT once
        tmp = path.with_name(f".{STATUS}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        tmp.write_text(json.dumps(asdict(self.status)) + "\n")
        os.replace(tmp, path)


def replay_plan(plan: pd.DataFrame, opts: ReplayOptions) -> ReplayStatus:
    """Replay with SIGTERM/SIGINT turned into a clean stop (the status file says so), paced by
    the wall clock or by the virtual clock of ``opts.clock``."""
    if opts.clock is None:
        replayer = Replayer(plan, opts)
    else:
        clock = VirtualClock(Path(opts.clock))
        replayer = Replayer(plan, opts, clock=clock.now, sleep=clock.sleep)
    signal.signal(signal.SIGTERM, replayer.request_stop)
    signal.signal(signal.SIGINT, replayer.request_stop)
    return replayer.run()
