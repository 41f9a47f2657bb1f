"""sigsleep ``--from-slurm-start``: at a fixed speed-up a job counts its runtime from Slurm's
start (``SLURM_JOB_START_TIME``, whole seconds) instead of its own launch, and only there."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.emulation.head.replay import ReplayOptions, sbatch_command
from harness.model.clock import VirtualClock
from tests.unit import test_sigsleep as base
from tests.unit.test_sigsleep import on_a_quiet_moment, start, wait_exit

# the build and the clean-up of test_sigsleep, as fixtures of this module too
binary, no_leftovers = base.sigsleep, base._no_leftovers

V0 = 1_900_000_000.0  # a virtual epoch far from the real one, a whole second


def job_env(slurm_start: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_START_TIME"}
    return env if slurm_start is None else {**env, "SLURM_JOB_START_TIME": slurm_start}


def run_job(
    binary: str, log: Path, clock: VirtualClock, slurm_start: str | None, *args: str, status: int = 0
) -> dict:
    proc = start(
        binary, log, *args, "--clock", str(clock.path), "--from-slurm-start", env=job_env(slurm_start)
    )
    wait_exit(proc, 10)
    assert proc.returncode == status, proc.stderr.read() if proc.stderr else ""
    [rec] = [json.loads(line) for line in log.read_text().splitlines()]
    return rec


def x50(log: Path) -> VirtualClock:
    """A fresh clock at V0 for each attempt of a timing check (on_a_quiet_moment)."""
    return VirtualClock.create(log.with_suffix(".clock"), start=V0, rate=50.0)


def test_a_job_launched_late_ends_where_slurms_start_and_its_runtime_put_it(
    binary: str, tmp_path: Path
) -> None:
    """x50, Slurm started the job 5 virtual s before it launched: 100 s of runtime take 95 s
    (1.9 real s) after the launch, and the record's start is Slurm's."""

    def check(log: Path) -> None:
        began = time.monotonic()
        rec = run_job(binary, log, x50(log), f"{V0 - 5:.0f}", "--runtime", "100")
        took = time.monotonic() - began
        assert rec["start"] == V0 - 5 and rec["reason"] == "completed"
        assert V0 <= rec["launched"] < V0 + 50 * 0.5  # its own start (virtual), kept beside it
        # 1 virtual s of slack: 20 ms real for the wake-up under load
        assert rec["running"] == pytest.approx(100.0, abs=1.0)
        assert rec["end"] == pytest.approx(V0 + 95.0, abs=1.0)
        assert 1.8 < took < 2.5  # 95 / 50 real s, plus start-up

    on_a_quiet_moment(check, tmp_path)


def test_a_job_never_counts_from_before_its_submission(binary: str, tmp_path: Path) -> None:
    """Slurm stamps by the daemons' clock, up to a tick behind the page: a job submitted at
    V0 - 2 that Slurm stamped V0 - 3 counts from V0 - 2."""

    def check(log: Path) -> None:
        submitted = ("--submit-intended", f"{V0 - 2:.6f}")
        rec = run_job(binary, log, x50(log), f"{V0 - 3:.0f}", "--runtime", "20", *submitted)
        assert rec["start"] == V0 - 2 and rec["running"] == pytest.approx(20.0, abs=1.0)

    on_a_quiet_moment(check, tmp_path)


def test_the_walltime_counts_from_slurms_start_as_slurms_limit_does(binary: str, tmp_path: Path) -> None:
    def check(log: Path) -> None:
        limited = ("--runtime", "500", "--walltime", "60")
        rec = run_job(binary, log, x50(log), f"{V0 - 10:.0f}", *limited, status=124)
        assert rec["reason"] == "timeout"
        assert rec["end"] == pytest.approx(V0 + 50.0, abs=1.0)  # Slurm's start + 60

    on_a_quiet_moment(check, tmp_path)


@pytest.mark.parametrize(
    ("slurm_start", "why"),
    [
        (None, "no SLURM_JOB_START_TIME"),
        ("soon", "not a number"),
        (f"{V0 + 30:.0f}", "a start after the launch"),
        (f"{V0 - 61:.0f}", "a start more than 60 s before the launch"),
    ],
)
def test_the_job_counts_from_its_own_launch_when_slurms_start_does_not_apply(
    binary: str, tmp_path: Path, slurm_start: str | None, why: str
) -> None:
    def check(log: Path) -> None:
        rec = run_job(binary, log, x50(log), slurm_start, "--runtime", "20")
        assert "launched" not in rec, why
        assert V0 <= rec["start"] < V0 + 50 * 0.5 and rec["running"] == pytest.approx(20.0, abs=1.0)

    on_a_quiet_moment(check, tmp_path)


def test_a_held_clock_counts_from_the_launch(binary: str, tmp_path: Path) -> None:
    """The event clock: the launch takes no virtual time there (a whole second of Slurm's
    start would only shorten the job)."""
    clock = VirtualClock.create(tmp_path / "clock", start=V0, rate=0.0)
    clock.hold()
    log = tmp_path / "jobs.jsonl"
    proc = start(binary, log, "--runtime", "20", "--clock", str(clock.path), "--from-slurm-start",
                 env=job_env(f"{V0 - 1:.0f}"))  # fmt: skip
    time.sleep(0.3)
    clock.jump(V0 + 20.0)  # its end when counted from its launch; from Slurm's it would be V0 + 19
    wait_exit(proc, 5)
    rec = json.loads(log.read_text())
    assert "launched" not in rec
    assert rec["start"] == V0 and rec["end"] == V0 + 20.0
    assert rec["running"] == pytest.approx(20.0, abs=1.0)


def test_phases_count_from_their_launch(binary: str, tmp_path: Path) -> None:
    """A transfer cannot move before the job runs: a job with phases ignores Slurm's start."""
    phases = ("--phases", "compute:20", "--io-dir", str(tmp_path))
    rec = run_job(binary, tmp_path / "jobs.jsonl", x50(tmp_path / "jobs.jsonl"), f"{V0 - 5:.0f}", *phases)
    assert "launched" not in rec and rec["start"] >= V0


def test_without_a_virtual_clock_the_option_is_refused(binary: str, tmp_path: Path) -> None:
    proc = start(binary, tmp_path / "jobs.jsonl", "--runtime", "1", "--from-slurm-start")
    wait_exit(proc, 5)
    error = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 2 and "--from-slurm-start needs --clock" in error


def test_the_replay_asks_for_it_only_on_a_virtual_clock(tmp_path: Path) -> None:
    job = {"job_id": 5, "nodes": 4, "runtime": 330.0, "walltime": 600.0, "bb_per_node_mb": 1000}
    page = str(tmp_path / "clock")

    def wrap(**kw: object) -> str:
        return sbatch_command(job, ReplayOptions(run_dir=tmp_path, run_id="r", **kw), 0.0)[-1]  # type: ignore[arg-type]

    assert "--from-slurm-start" in wrap(clock=page, from_slurm_start=True)
    assert "--from-slurm-start" not in wrap(clock=page)  # the event clock
    assert "--from-slurm-start" not in wrap(from_slurm_start=True)  # the wall clock


def test_the_replay_command_refuses_it_without_a_clock_page(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    plan = tmp_path / "plan.parquet"
    plan.write_bytes(b"")  # never read: the options are checked first
    args = ["replay", str(plan), "--run-dir", str(tmp_path), "--run-id", "r", "--from-slurm-start"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "--from-slurm-start needs --clock-page" in result.output
