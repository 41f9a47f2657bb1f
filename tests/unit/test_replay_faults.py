"""The replay through slurmctld outages and its own death: retries with backoff, never a job
submitted twice, resume from the submissions file (a fake clock and a fake sbatch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.emulation.head.replay import Replayer, ReplayError, ReplayOptions
from harness.emulation.head.resubmit import SlurmUnavailable, backoff, is_transient, parse_run_jobs
from harness.model.rundir import STATUS, SUBMISSIONS
from tests.unit.test_replay import FakeClock, plan_of

DOWN = "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"


def test_backoff_doubles_from_half_a_second_up_to_four() -> None:
    assert [backoff(a) for a in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_only_an_unreachable_controller_is_transient() -> None:
    assert is_transient(DOWN)
    assert is_transient("sbatch: error: Socket timed out on send/recv operation")
    assert is_transient("sbatch timed out after 60 s")
    assert is_transient("sbatch: error: Batch job submission failed: Connection reset by peer")
    assert not is_transient("sbatch: error: Batch job submission failed: Invalid license specification")


def test_run_jobs_are_the_ones_with_the_runs_id_in_their_comment() -> None:
    text = (
        "41|t7|trace_id=7 walltime=36.000000 bb_per_node=0 run=r1\n"
        "42|t8|trace_id=8 walltime=36.000000 bb_per_node=0 run=other\n"
        "40|t7|trace_id=7 walltime=36.000000 bb_per_node=0 run=r1\n"
        "43|t9|(null)\n"
        "garbage\n"
    )
    assert parse_run_jobs(text, "r1") == {7: 40}


def replayer_with_outage(
    tmp_path: Path, clock: FakeClock, down: tuple[float, float], lost: frozenset[int] = frozenset()
) -> tuple[Replayer, list[tuple[float, int]], dict[int, int]]:
    """sbatch fails while ``down[0] <= now < down[1]``; attempts numbered in ``lost`` reach Slurm
    although sbatch reports the failure (the answer was lost)."""
    calls: list[tuple[float, int]] = []
    in_slurm: dict[int, int] = {}

    def fake_submit(cmd: list[str]) -> tuple[int | None, str]:
        trace_id = int(next(a for a in cmd if a.startswith("--job-name=t"))[len("--job-name=t") :])
        calls.append((clock.now, trace_id))
        if len(calls) in lost:
            in_slurm[trace_id] = 500 + len(calls)
            return None, "sbatch: error: Socket timed out on send/recv operation"
        if down[0] <= clock.now < down[1]:
            return None, DOWN
        in_slurm[trace_id] = 500 + len(calls)
        return 500 + len(calls), ""

    def run_jobs(name: str | None) -> dict[int, int]:
        if down[0] <= clock.now < down[1]:
            raise SlurmUnavailable("squeue: error: Unable to contact slurm controller")
        return {t: j for t, j in in_slurm.items() if name in (None, f"t{t}")}

    opts = ReplayOptions(run_dir=tmp_path, run_id="r1", warmup=2.0, workers=1, retry_for=60.0)
    replayer = Replayer(plan_of([0.0, 1.0, 10.0]), opts, submit_fn=fake_submit, clock=clock.time,
                        sleep=clock.sleep, run_jobs=run_jobs)  # fmt: skip
    return replayer, calls, in_slurm


def test_submissions_failing_while_slurmctld_is_down_are_retried_with_backoff(tmp_path: Path) -> None:
    clock = FakeClock()
    # t0 = 1002: job 100 goes at 1002 (fine); job 101 at 1003, slurmctld down from 1002.5 to 1005
    replayer, calls, in_slurm = replayer_with_outage(tmp_path, clock, down=(1002.5, 1005.0))
    status = replayer.run()
    # 101: fails at 1003, waits 0.5 (squeue down), 1.0 (squeue down), 2.0 -> 1006.5 squeue
    # answers "not there", sbatch again at 1006.5: accepted
    assert [(round(t, 6), j) for t, j in calls] == [
        (1002.0, 100),
        (1003.0, 101),
        (1006.5, 101),
        (1012.0, 102),
    ]
    assert status.done and status.submitted == 3 and status.failed == 0
    assert (status.retries, status.retried_jobs, status.found_after_failure) == (1, 1, 0)
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [ln["attempts"] for ln in lines] == [1, 2, 1]
    assert sorted(in_slurm) == [100, 101, 102]


def test_a_failed_attempt_that_reached_slurm_is_not_submitted_again(tmp_path: Path) -> None:
    clock = FakeClock()
    replayer, calls, _ = replayer_with_outage(tmp_path, clock, down=(0.0, 0.0), lost=frozenset({2}))
    status = replayer.run()
    assert [j for _, j in calls] == [100, 101, 102]  # 101 not resubmitted: squeue found it
    assert status.found_after_failure == 1 and status.retries == 0
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [ln["slurm_job_id"] for ln in lines] == [501, 502, 503]


def test_a_submission_gives_up_after_retry_for(tmp_path: Path) -> None:
    clock = FakeClock()
    replayer, calls, _ = replayer_with_outage(tmp_path, clock, down=(1002.5, 2000.0))
    status = replayer.run()
    # 101 at 1003: waits 0.5+1+2+4*13 = 55.5 s (next 4 s would pass 1063) -> gives up at 1058.5;
    # 102 (due 1012) goes at 1058.5 and gives up the same way
    assert [j for _, j in calls] == [100, 101, 102]
    assert status.failed == 2 and status.submitted == 1
    assert "gave up after 1 attempt(s)" in status.errors[0]


def test_resume_keeps_t0_and_submits_only_what_is_missing(tmp_path: Path) -> None:
    clock = FakeClock()
    first, calls, in_slurm = replayer_with_outage(tmp_path, clock, down=(0.0, 0.0))
    # the killed replay: job 100 recorded, job 101 accepted by Slurm but not recorded
    (tmp_path / STATUS).write_text(json.dumps({"run_id": "r1", "jobs": 3, "t0": 1002.0, "submitted": 1}))
    (tmp_path / SUBMISSIONS).write_text(json.dumps({"index": 0, "job_id": 100, "slurm_job_id": 401}) + "\n")
    in_slurm.update({100: 401, 101: 402})
    clock.now = 1005.0
    opts = ReplayOptions(run_dir=tmp_path, run_id="r1", workers=1, resume=True)
    resumed = Replayer(first.plan, opts, submit_fn=first.submit_fn, clock=clock.time, sleep=clock.sleep,
                       run_jobs=first.run_jobs)  # fmt: skip
    status = resumed.run()
    assert [(round(t, 6), j) for t, j in calls] == [(1012.0, 102)]  # on its original instant
    assert status.t0 == 1002.0 and status.done
    assert (status.submitted, status.adopted, status.resumes, status.resumed_with) == (3, 1, 1, 1)
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [(ln["job_id"], ln["slurm_job_id"], ln.get("adopted", False)) for ln in lines] == [
        (100, 401, False), (101, 402, True), (102, 501, False)]  # fmt: skip


def test_resume_without_a_started_replay_is_an_error(tmp_path: Path) -> None:
    opts = ReplayOptions(run_dir=tmp_path, run_id="r1", resume=True)
    with pytest.raises(ReplayError, match="no replay to resume"):
        Replayer(plan_of([0.0]), opts, run_jobs=lambda name: {}).run()
