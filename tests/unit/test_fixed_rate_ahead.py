"""At a fixed speed-up, Slurm's own backfill gets each job ahead of its instant, with its begin
(``harness replay --submit-ahead --ahead-by``): a burst's sbatch calls, real milliseconds each,
would otherwise enter the queue seconds of the clock late and in the order they returned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.emulation.head.ahead import ahead_options, lead_release_instants
from harness.model.rundir import SUBMISSIONS
from tests.unit.test_replay import FakeClock, make_replayer


def test_each_job_is_sent_its_lead_before_its_eligible_instant() -> None:
    assert lead_release_instants([1002.0, 1003.0, 1003.0, 1008.0], 500.0) == [502.0, 503.0, 503.0, 508.0]
    assert lead_release_instants([], 500.0) == []


@pytest.mark.parametrize(
    ("ahead_by", "sent", "entered"),
    [
        # sent at the previous instant (the event clock): the third job's sbatch starts after
        # its begin (1003) because the second's took 1.5 s, and it enters the queue late
        (None, [1000.0, 1002.0, 1003.5, 1005.0], [1002.0, 1003.0, 1003.5, 1008.0]),
        # a lead of 3 s: releases 999, 1000, 1000, 1005; every job is in the queue by its begin
        (3.0, [1000.0, 1001.5, 1003.0, 1005.0], [1002.0, 1003.0, 1003.0, 1008.0]),
    ],
)
def test_a_lead_puts_a_slow_burst_in_the_queue_by_its_instant(
    tmp_path: Path, ahead_by: float | None, sent: list[float], entered: list[float]
) -> None:
    clock = FakeClock(submit_cost=1.5)  # the replay starts at 1000, t0 = 1002
    replayer, calls = make_replayer(tmp_path, [0.0, 1.0, 1.0, 5.5], clock, ahead=True, ahead_by=ahead_by)
    assert replayer.run().submitted == 4
    assert [round(t, 6) for t, _ in calls] == sent
    lines = [json.loads(x) for x in (tmp_path / SUBMISSIONS).read_text().splitlines()]
    assert [ln["actual"] for ln in lines] == entered
    assert [ln["job_id"] for ln in lines] == [100, 101, 102, 103]  # one at a time, in plan order


def test_the_run_asks_for_a_lead_at_a_fixed_speed_up_with_backfill_only() -> None:
    assert ahead_options(False, False, 100.0, True) == ["--submit-ahead", "--ahead-by", "500"]
    assert ahead_options(False, False, 20.0, True) == ["--submit-ahead", "--ahead-by", "100"]
    assert ahead_options(False, True, None, True) == ["--submit-ahead"]  # events: the previous instant
    assert ahead_options(False, False, None, True) == []  # the wall clock
    # slurm-fcfs: only Slurm's periodic main pass would see a begin come
    assert ahead_options(False, False, 100.0, False) == []
    assert ahead_options(False, False, 100.0, True, io=True) == []  # live I/O: at its instant
    assert ahead_options(False, True, None, True, io=True) == ["--submit-ahead"]  # the event clock
    # the agent would see, and start, a held job before its instant
    assert ahead_options(True, False, 100.0, True) == ahead_options(True, True, None, True) == []


@pytest.mark.parametrize(
    "extra", [[], ["--submit-ahead", "--ahead-by", "0"], ["--submit-ahead", "--ahead-by", "nan"]]
)
def test_the_replay_refuses_a_lead_it_cannot_honour(tmp_path: Path, extra: list[str]) -> None:
    plan = tmp_path / "plan.parquet"
    plan.write_bytes(b"")  # never read: the options are checked first
    args = ["replay", str(plan), "--run-dir", str(tmp_path), "--run-id", "r", *extra]
    result = CliRunner().invoke(main, [*args, "--ahead-by", "5"] if not extra else args)
    assert result.exit_code == 2
    assert "needs --submit-ahead and a positive number of seconds" in result.output
