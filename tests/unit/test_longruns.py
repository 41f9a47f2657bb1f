"""Long runs ([long-runs]): the estimate's arithmetic on hand-built plans, the threshold and
``--yes`` without a terminal, and ``harness runs`` on hand-made run directories of every state."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.emulation.run.detach import RotatingLog
from harness.emulation.run.estimate import (
    OVERHEAD_S,
    Decision,
    decide,
    estimate_plan,
    faster_shrink,
    parse_duration,
    suggestions,
)
from harness.emulation.run.specs import ReplaySpec, RunOptions, WorkloadSpec, options_from_dict
from harness.emulation.run.state import COMPLETE, INCOMPLETE, RUNNING, list_runs, run_state
from harness.model.durations import human_duration
from harness.model.timescale import TimeScale
from harness.workload.plan import Sampling

SMALL = Path(__file__).parents[1] / "data" / "small.swf"  # 6 jobs kept; 3090 s first submission to last end


def plan_of(submits: list[float], runtimes: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"submit": submits, "runtime": runtimes})


# -- the estimate ---------------------------------------------------------------------------


def test_estimate_arithmetic() -> None:
    # the last job can end at max(0+1000, 100+50, 200+500) = 1000 s of the trace; shrink 0.9: 100 s
    plan = plan_of([0, 100, 200], [1000, 50, 500])
    est = estimate_plan(plan, TimeScale(0.9), 2.0, "docker", ("a", "b"), repeat=3)
    assert OVERHEAD_S == 60.0
    assert est.jobs == 3
    assert est.span_s == 1000.0
    assert est.runs == 6
    assert est.per_run_s == pytest.approx(162.0)  # 60 overhead + 2 warm-up + 100 replay
    assert est.wall_s == pytest.approx(972.0)
    assert est.as_dict()["expected_wall_s"] == pytest.approx(972.0)


def test_span_is_measured_from_the_first_submission() -> None:
    assert estimate_plan(plan_of([50, 60], [10, 100]), TimeScale(0.5), 0.0, "local", ("x",)).span_s == 110.0


def test_durations() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "45m", "2h", "1.5d")] == [90, 90, 2700, 7200, 129600]
    with pytest.raises(ValueError, match="2h"):
        parse_duration("two hours")
    assert human_duration(12) == "12 s"
    assert human_duration(250) == "4 min 10 s"
    assert human_duration(7500) == "2 h 05 min"
    assert human_duration(2876377.6) == "33 d 06 h"  # 33 d 6 h 59 min


def test_suggestions_when_the_longest_job_alone_is_too_long() -> None:
    # 11 jobs of 10 s every 20 s, then one of 800 s at 220 s: span 1020 s of the trace, 510 s at
    # shrink 0.5; budget 260 - 60 = 200 s, 400 s of the trace
    plan = plan_of([20.0 * i for i in range(12)], [10.0] * 11 + [800.0])
    est = estimate_plan(plan, TimeScale(0.5), 0.0, "docker", ("p",))
    lines = suggestions(est, plan, 260.0)
    assert lines[0].split() == ["--first-n", "11", "the", "first", "11", "jobs"]
    assert "no --period or --window fits" in lines[1] and "6 min 40 s" in lines[1]
    # 1 - 0.5 * 400 / 1020 = 0.80392..., rounded up to 4 decimals (shorter, not longer)
    assert lines[2].startswith("--shrink 0.804 ")
    assert len(lines) == 3


def test_suggestions_of_period_window_and_shrink() -> None:
    # 12 jobs of 10 s every 20 s: span 230 s of the trace (115 s at shrink 0.5); budget
    # 120 - 60 = 60 s, 120 s of the trace, 110 s of submissions
    plan = plan_of([20.0 * i for i in range(12)], [10.0] * 12)
    est = estimate_plan(plan, TimeScale(0.5), 0.0, "docker", ("p",))
    lines = suggestions(est, plan, 120.0)
    assert [line.split()[:2] for line in lines] == [
        ["--period", "1/2"],  # ceil(220 / 110)
        ["--window", "0:110"],  # 110 s of the trace (first-n 6 < 10 jobs: not offered)
        ["--shrink", "0.7392"],  # 1 - 0.5 * 120 / 230 = 0.73913...
    ]
    assert suggestions(est, plan, 10_000.0) == []  # it fits: nothing to suggest


def test_faster_shrink_stays_below_one() -> None:
    assert faster_shrink(TimeScale(0.9), 0.5) == 0.95
    assert faster_shrink(TimeScale(0.9), 0.0006) == 0.99994


def test_threshold_and_yes_without_a_terminal() -> None:
    assert decide(7200.0, 7200.0, yes=False, tty=False) is Decision.PROCEED  # at the threshold: go
    assert decide(7201.0, 7200.0, yes=False, tty=False) is Decision.REFUSE
    assert decide(7201.0, 7200.0, yes=False, tty=True) is Decision.ASK
    assert decide(7201.0, 7200.0, yes=True, tty=False) is Decision.PROCEED
    assert decide(10.0, 7200.0, yes=False, tty=False) is Decision.PROCEED


def test_run_refuses_a_long_run_without_yes_off_a_terminal(tmp_path: Path) -> None:
    args = ["run", str(SMALL), "--shrink", "0", "-o", str(tmp_path), "--confirm-over", "30m"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "expected wall    at least 52 min 32 s per run" in result.output  # 60 + 2 + 3090 s
    assert "without --yes" in result.output and "--shrink 0.4" in result.output
    assert not list(tmp_path.iterdir())
    # with --yes it goes on (and fails at once on a cluster that does not exist)
    result = CliRunner().invoke(main, [*args, "--yes", "--cluster", "nowhere"])
    assert "unknown cluster 'nowhere'" in result.output


def test_dry_run_prints_and_exits(tmp_path: Path) -> None:
    args = ["run", str(SMALL), "--shrink", "0.5", "--dry-run", "--repeat", "2", "-p", "slurm-fcfs,fcfs"]
    result = CliRunner().invoke(main, [*args, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "jobs             6" in result.output
    assert "original span    51 min 30 s (3090 s)" in result.output
    assert "policies         slurm-fcfs, fcfs; each repeated 2 times" in result.output
    # 4 runs of 60 + 2 + 1545 s
    assert "at least 26 min 47 s per run x 4 runs: 1 h 47 min in all" in result.output
    assert not list(tmp_path.iterdir())


# -- the run listing ------------------------------------------------------------------------


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _steps(run: Path, *names: str, jobs: int = 10) -> None:
    info = {"plan": {"jobs": jobs}, "metrics": {"jobs": jobs}}
    _write(
        run / "steps.json", {"steps": [{"name": n, "done_at": "t", "info": info.get(n, {})} for n in names]}
    )


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def make_runs(root: Path) -> None:
    host = socket.gethostname()
    done = root / "20260101-000000-kth-slurm-fcfs-s0.9"
    _steps(done, "plan", "cluster", "replay", "collect", "fidelity", "metrics", "manifest", "report")
    _write(done / "manifest.json", {"complete": True, "policy": "slurm-fcfs", "incomplete_reason": ""})
    _write(done / "process.json", {"pid": _dead_pid(), "host": host})
    stopped = root / "20260101-000001-kth-fcfs-s0.9"
    _steps(
        stopped, "plan", "cluster", "replay", "collect", "fidelity", "metrics", "manifest", "report", jobs=4
    )
    _write(stopped / "manifest.json", {"complete": False, "policy": "fcfs",
                                       "incomplete_reason": "interrupted by the user (Ctrl-C)"})  # fmt: skip
    running = root / "20260101-000002-kth-backfill-1-s0.9"
    _steps(running, "plan", "cluster")
    _write(running / "process.json", {"pid": os.getpid(), "host": host})
    _write(running / "request.json", {"options": {"replay": {"policy": "backfill-1"}}})
    _write(running / "progress.json", {"total": 10, "finished": 4, "eta_s": 100.0, "updated": 1000.0})
    killed = root / "20260101-000003-kth-slurm-backfill-1-s0.9"
    _steps(killed, "plan", "cluster")
    _write(killed / "process.json", {"pid": _dead_pid(), "host": host})
    _write(killed / "progress.json", {"total": 10, "finished": 7, "eta_s": 50.0, "updated": 1000.0})
    repeated = root / "20260101-000004-kth-fcfs-s0.9"
    for rep in ("00", "01"):
        _steps(repeated / "repetitions" / rep, "plan", "report")
        _write(repeated / "repetitions" / rep / "manifest.json", {"complete": True, "policy": "fcfs"})
    _write(repeated / "manifest.json", {"complete": True, "repeat": 2})
    (root / "notes").mkdir()  # not a run directory


def test_run_listing_of_every_state(tmp_path: Path) -> None:
    make_runs(tmp_path)
    got = {s.path.name[:15]: s for s in list_runs(tmp_path)}
    assert list(got) == [f"20260101-00000{i}" for i in range(5)]
    done, stopped, running, killed, repeated = got.values()
    assert (done.state, done.policy, done.finished, done.total, done.pid) == (
        COMPLETE,
        "slurm-fcfs",
        10,
        10,
        None,
    )
    assert (stopped.state, stopped.finished, stopped.reason) == (
        INCOMPLETE,
        4,
        "interrupted by the user (Ctrl-C)",
    )
    assert (running.state, running.policy, running.step) == (RUNNING, "backfill-1", "cluster")
    assert (running.finished, running.total, running.pid) == (4, 10, os.getpid())
    assert run_state(running.path, now=1030.0).eta_s == 70.0  # 100 s left when written, 30 s ago
    assert (killed.state, killed.finished, killed.total) == (INCOMPLETE, 7, 10)
    assert killed.reason == "stopped during the step after 'cluster' without a verdict"
    assert (repeated.state, repeated.finished, repeated.total, repeated.policy) == (COMPLETE, 2, 2, "fcfs")


def test_runs_command_table_and_json(tmp_path: Path) -> None:
    make_runs(tmp_path)
    result = CliRunner().invoke(main, ["runs", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["state"] for r in rows] == [COMPLETE, INCOMPLETE, RUNNING, INCOMPLETE, COMPLETE]
    table = CliRunner().invoke(main, ["runs", "--dir", str(tmp_path)]).output.splitlines()
    assert table[0].split() == ["STATE", "JOBS", "DONE", "ETA", "POLICY", "RUN"]
    assert table[1].split()[:4] == ["complete", "10/10", "-", "slurm-fcfs"]
    assert "interrupted by the user (Ctrl-C)" in table[3]
    stop = CliRunner().invoke(main, ["runs", "stop", str(tmp_path / "20260101-000000-kth-slurm-fcfs-s0.9")])
    assert stop.exit_code == 1 and "no running process" in stop.output
    watch = CliRunner().invoke(main, ["runs", "watch", str(tmp_path / "20260101-000001-kth-fcfs-s0.9")])
    assert watch.exit_code == 3 and watch.output.startswith("incomplete:")


# -- detached runs --------------------------------------------------------------------------


def test_options_survive_the_request_file() -> None:
    workload = WorkloadSpec(
        trace=SMALL,
        shrink=0.9,
        period=(1, 4),
        window=(0.0, None),
        sampling=Sampling("su", n=10),
        prepare={"cleaning": {"a": "drop"}, "lenient": True},
    )
    opts = RunOptions(workload,
                      replay=ReplaySpec(policy="fcfs", interim_every=60.0), runs_dir=Path("x"))  # fmt: skip
    assert options_from_dict(json.loads(json.dumps(opts.as_dict()))) == opts


def test_log_rotates(tmp_path: Path) -> None:
    log = RotatingLog(tmp_path / "run.log", max_bytes=100)
    for i in range(30):
        log.write(f"line {i:02d}\r")
    assert (tmp_path / "run.log.1").stat().st_size <= 100 + 8
    assert (tmp_path / "run.log").stat().st_size <= 100 + 8
    assert (tmp_path / "run.log").read_text().endswith("line 29\n")
    assert time.time()  # the streams stay usable


# -- interim results ------------------------------------------------------------------------


def test_interim_results_cover_the_finished_jobs(tmp_path: Path) -> None:
    from harness.emulation.head.progress import write_interim
    from harness.platform import load_platform

    plan = pd.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit": [0.0, 1.0, 2.0],
            "runtime": [5.0, 5.0, 5.0],
            "walltime": [10.0] * 3,
            "nodes": [1, 2, 4],
            "bb_per_node_mb": [100, 100, 100],
        }
    )
    t0 = 1000.0
    subs = [{"job_id": j, "slurm_job_id": 10 + j, "lag": 0.01, "actual": t0 + j - 1} for j in (1, 2, 3)]
    records = [
        {"job_id": 1, "start": t0 + 0.5, "end": t0 + 5.5, "running": 5.0, "reason": "completed"},
        {"job_id": 3, "start": t0 + 2.5, "end": t0 + 7.5, "running": 5.0, "reason": "completed"},
    ]
    metrics = write_interim(tmp_path, plan, subs, records, t0, load_platform(), TimeScale(0.5))
    assert metrics["jobs"] == 2
    assert metrics["mean_wait"] == 1.0  # 0.5 s and 0.5 s of Slurm's seconds, x2 in the trace's time
    assert metrics["makespan"] == 15.0  # 0 to 7.5 Slurm seconds
    stored = json.loads((tmp_path / "interim" / "metrics.json").read_text())
    assert stored.pop("interim")["finished"] == 2 and stored == pytest.approx(metrics)
    assert list(pd.read_parquet(tmp_path / "interim" / "results.parquet")["job_id"]) == [1, 3]
    report = (tmp_path / "interim" / "report.md").read_text()
    assert report.startswith("# INTERIM report") and "2 of 3 jobs finished (66.7%)" in report


def test_a_detached_run_finds_the_package_and_not_inside_it() -> None:
    """The detached process's PYTHONPATH is the folder holding ``harness``: the package folder
    itself would hide the standard library's ``platform`` behind the harness's."""
    from harness.emulation.run.detach import _package_root

    root = Path(_package_root())
    assert (root / "harness" / "__init__.py").is_file() and not (root / "platform").exists()
