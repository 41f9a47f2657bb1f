"""The run directory's contract: the name of every file a run writes, in one place.

    runs/<time>-<trace>-<policy>-s<shrink>/
        manifest.json   every parameter, seed, versions, input checksum, completeness
        steps.json      the steps done so far (plan, cluster, replay, collect, ...) and their findings
        plan.parquet    the replayed plan (+ plan.manifest.json)
        results.parquet, results.csv   per-job results (sigsleep times, Slurm ids)
        metrics.json    summary in the trace's time (same keys as `harness simulate --json`)
        raw/            submissions.jsonl, jobs.jsonl (sigsleep), replay.json, decisions.jsonl;
                        with live I/O staging.jsonl and drains.jsonl; plan.parquet, the plan as
                        the head node replays it (in Slurm's seconds: all else is in the trace's)
        slurm/          the rendered Slurm files of the run, daemon logs, jobcomp.log,
                        sacct.json (accounting on), jobs.json (Slurm's record of every job)
        simulation/     results.parquet of the simulator twin (with --compare-sim)
        repetitions/NN/ one run directory per repetition (with --repeat)
        plots/, report.md, report.html
        process.json    the process running the run (pid, host); progress.json: its latest progress
        interim/        while the run goes: metrics.json, results.parquet, report.md of the jobs done
        request.json, run.log, detach.log   a detached run's options, its (rotated) log, a crash
        suspensions.csv with a priority model: the suspensions (and in simulation/ the twin's)

The replay, the ordering agent and the sigsleep jobs write the files of ``raw/`` into
the cluster's shared directory (``runs/<run id>/`` there); the host copies them back.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from harness.model import run_schemas
from harness.model.jsonio import read_json, write_json

MANIFEST = "manifest.json"
STEPS = "steps.json"  # the steps of the run that are done, in order, with what each found
METRICS = "metrics.json"
PLAN = "plan.parquet"
RESULTS = "results.parquet"
RESULTS_CSV = "results.csv"
PLATFORM_FILE = "platform.toml"

RAW_DIR = "raw"
REPLAY_PLAN = f"{RAW_DIR}/{PLAN}"  # the plan in Slurm's seconds, as the replay submits it
# manifest.json's key saying results.parquet is in the trace's own time (runs written before
# kept Slurm's: the report converts those when it reads them)
TIMES = "times"
TRACE_TIME = "trace"
SLURM_DIR = "slurm"
SIMULATION_DIR = "simulation"
REPETITIONS_DIR = "repetitions"
PLOTS_DIR = "plots"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
PROCESS = "process.json"  # the process running the run: pid, host, command
HEAD_DEATHS = "head_deaths.jsonl"  # one line per death of the replay/agent: why, the faults seen until then
PROGRESS = "progress.json"  # the run's latest progress (submitted, finished, ETA), refreshed
INTERIM_DIR = "interim"  # metrics, results and report of the jobs finished so far
REQUEST = "request.json"  # a detached run: its options
RUN_LOG = "run.log"  # a detached run: what it prints (rotated)
SETTINGS_RECORD = "slurm-settings.json"  # a run's slurm.conf settings, their baseline, the lines changed
SETTINGS_DIFF = "slurm.conf.diff"  # those slurm.conf lines alone

# Written on the head node, in the shared run directory.
SUBMISSIONS = "submissions.jsonl"  # the replay: one line per submitted job
STATUS = "replay.json"  # the replay: t0, counts, done/stopped, errors
SIGSLEEP_LOG = "jobs.jsonl"  # the jobs themselves (sigsleep): start, end, suspension
STARTED = "started.jsonl"  # sigsleep on a virtual clock: one line per job once it has read its start
DECISIONS = "decisions.jsonl"  # the ordering agent: one line per policy call
AGENT_STATUS = "agent.json"  # the agent on a virtual clock: when its last look began (wall clock)
STOP_FILE = "STOP"  # created by the host: the replay and the agent stop
RAW_FILES = (SUBMISSIONS, SIGSLEEP_LOG, STATUS, DECISIONS, STARTED)

SIMULATOR = "simulator"  # manifest.json's executor of a run made in the simulator (harness simulate -o DIR)
SHARED = "/shared"  # the directory every container (and host of an Ansible cluster) shares
SHARED_RUNS = "runs"  # the folder of run directories inside the shared directory
SHARED_JOBS = f"{SHARED}/jobs"  # the replay's job scripts and the jobs' output
SHARED_IO = f"{SHARED}/io"  # live I/O: flow files, rates, the staging registry and records
# A cluster on the virtual clock (harness.model.clock), in the shared directory
CLOCK_PAGE = "clock/page"  # the clock: one page, read by sigsleep, the replay and the host
FAKETIME_FILE = "clock/faketime"  # the same clock for the daemons' libfaketime, ticked from the page
# Written in SHARED_IO by live I/O, copied into raw/
STAGING_RECORDS = "staging.jsonl"  # the staging command: one line per stage-in/out
DRAIN_RECORDS = "drains.jsonl"  # the contention service: one line per checkpoint drained
# Written by the host
SUSPENSIONS_CSV = "suspensions.csv"  # with a priority model: every suspension (and simulation/'s)
DETACH_LOG = "detach.log"  # a detached run: what its process prints outside Python's streams
JOBCOMP_LOG = "jobcomp.log"
SACCT_JSON = "sacct.json"  # in slurm/: `sacct --json` of the run's jobs, as Slurm gave them
BB_STATES = "burst_buffer.json"  # in slurm/: scontrol's burst-buffer request and state per job (lua)
SLURM_JOBS = "jobs.json"  # in slurm/: Slurm's record of every job (from sacct or jobcomp)


def repetition_name(index: int) -> str:
    """``repetitions/NN`` of the 0-based repetition ``index``."""
    return f"{REPETITIONS_DIR}/{index:02d}"


def done_steps(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Step name -> its record (``done_at`` and what the step found), in the order they ran."""
    path = run_dir / STEPS
    return {s["name"]: s for s in run_schemas.check_steps(read_json(path), str(path))}


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """``manifest.json`` (``{}`` if absent), its keys checked (:mod:`harness.model.run_schemas`)."""
    return _read_checked(run_dir / MANIFEST, run_schemas.MANIFEST)


def read_metrics(run_dir: Path) -> dict[str, Any]:
    """``metrics.json`` (``{}`` if absent): every metric a number or null."""
    return _read_checked(run_dir / METRICS, run_schemas.METRICS)


def read_progress(run_dir: Path) -> dict[str, Any]:
    """``progress.json`` (``{}`` if absent), its counts and times checked."""
    return _read_checked(run_dir / PROGRESS, run_schemas.PROGRESS)


def _read_checked(path: Path, schema: run_schemas.Schema) -> dict[str, Any]:
    data = read_json(path)
    run_schemas.check_document(data, schema, str(path))
    return data


def record_step(run_dir: Path, name: str, info: dict[str, Any]) -> None:
    """Note that step ``name`` is done; written whole and renamed, so a crash leaves the last
    complete record (a resumed run redoes at most the step that was under way)."""
    steps = [s for s in done_steps(run_dir).values() if s["name"] != name]
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    steps.append({"name": name, "done_at": stamp, "info": info})
    write_json(run_dir / STEPS, {"steps": steps})
