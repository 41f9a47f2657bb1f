"""The event clock with live I/O (io-aware): the jobs with phases end when their last phase
says, the clock stops between two seconds at a transfer's end, and a job in a Lua step of
Slurm's burst-buffer life cycle holds it (hand-built plans, rows and directories)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.emulation.head.event_times import job_durations, next_event, next_second, with_finals
from harness.emulation.head.io_watch import LiveIOWatch
from harness.emulation.iolive.io_events import IOState, Publication, publish, set_signature, staging_name
from harness.emulation.iolive.phases import PLAN_COLUMN

NOW = 1_700_000_100.0


def _plan() -> pd.DataFrame:
    # job 1: runtime 100 < walltime 600; job 2: phases, walltime 900 (its plan runtime 50 says nothing)
    return pd.DataFrame({
        "job_id": [1, 2], "submit": [0.0, 0.0], "runtime": [100.0, 50.0], "walltime": [600.0, 900.0],
        PLAN_COLUMN: ["", "compute:20,checkpoint:4000,compute:20"],
    })  # fmt: skip


def test_a_job_with_phases_lasts_its_walltime_until_its_last_phase_publishes_its_end() -> None:
    durations = job_durations(_plan())
    assert durations == {1: 100.0, 2: 900.0}
    running = {1: NOW - 10.0, 2: NOW - 30.0}
    assert with_finals(durations, None, running) == durations
    io = IOState(True, NOW + 12.5, finals=((2, NOW + 12.5),))
    assert with_finals(durations, io, running) == {1: 100.0, 2: 42.5}  # started 30 s ago, 12.5 s left
    # its end (NOW + 12.5) then comes before job 1's (NOW + 90): Slurm's whole second after it
    assert next_event(NOW, None, [], 0, running, with_finals(durations, io, running)) == NOW + 13.0


def test_the_next_second_after_an_instant_between_two() -> None:
    assert (next_second(NOW), next_second(NOW + 0.6), next_second(NOW + 0.99)) == (NOW + 1.0,) * 3
    # within a microsecond of a second is that second (instants are published to the microsecond)
    assert next_second(NOW + 0.9999999) == NOW + 2.0


def test_a_lua_step_or_a_transfer_not_registered_holds_the_clock(tmp_path: Path) -> None:
    watch = LiveIOWatch(tmp_path, _plan())
    assert watch.phase_jobs == {2}
    rows = [("PENDING", "t3", "", "44", "pending"), ("RUNNING", "t1", "x", "41", "running")]
    assert watch.state(NOW, set(), rows).settled
    for bb_state in ("pre-run", "post-run", "teardown", "staging-in"):
        held = watch.state(NOW, set(), [("PENDING", "t3", "", "44", bb_state)])
        assert not held.settled and held.waiting_for == f"job 44 {bb_state}"
    # job 44's stage-in registered and published: its transfer, not Slurm, holds the clock now
    (tmp_path / "active").mkdir()
    (tmp_path / "active" / "44.in.json").write_text(
        '{"job": 44, "kind": "in", "nodes": 2, "mb": 1, "pid": 0}'
    )
    publish(tmp_path, staging_name(44, "in"), Publication(NOW, set_signature(tmp_path), NOW + 1.6))
    state = watch.state(NOW, set(), [("PENDING", "t3", "", "44", "staging-in")])
    assert state.settled and state.next_end == NOW + 1.6
    # job 2 runs (it has phases) and has not published: the clock waits for it
    assert watch.state(NOW, {1, 2}, rows).waiting_for == "job.2"
    assert watch.state(NOW, {1}, rows).settled  # job 1 has no phases: its plan says its end
