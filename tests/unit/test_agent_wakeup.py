"""When the ordering agent looks again (emulation.head.wakeup): after the replay has caught up
with new submissions, after a job's own end record, or on its poll; with a fake clock."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.emulation.head.wakeup import (
    ENDED,
    ENDING,
    ENDING_GIVE_UP_S,
    ENDING_RELOOK_S,
    POLL,
    SUBMITTED,
    WATCH_S,
    Wakeup,
)
from harness.model.rundir import SIGSLEEP_LOG, STATUS


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def write_status(run_dir: Path, caught_up: bool, submitted: int, failed: int = 0) -> None:
    """As the replay does: a new file replaces the old one (a new inode each time)."""
    tmp = run_dir / ".status.tmp"
    tmp.write_text(json.dumps({"caught_up": caught_up, "submitted": submitted, "failed": failed}))
    os.replace(tmp, run_dir / STATUS)


def end_record(slurm_id: int) -> str:
    return json.dumps({"format": 1, "job_id": 7, "slurm_job_id": slurm_id, "reason": "completed"}) + "\n"


def wakeup_in(run_dir: Path) -> tuple[Wakeup, FakeTime]:
    clock = FakeTime()
    return Wakeup(run_dir, sleep=clock.sleep, monotonic=clock.monotonic), clock


def test_without_news_it_waits_the_poll_out(tmp_path: Path) -> None:
    wakeup, clock = wakeup_in(tmp_path)
    assert wakeup.wait(0.1) == POLL
    assert abs(clock.now - 100.1) < 1e-9


def test_it_wakes_once_per_catch_up_of_the_replay_with_new_submissions(tmp_path: Path) -> None:
    wakeup, clock = wakeup_in(tmp_path)
    write_status(tmp_path, caught_up=False, submitted=2)  # a burst still in flight: not yet
    assert wakeup.wait(0.1) == POLL
    write_status(tmp_path, caught_up=True, submitted=3, failed=1)
    clock.now = 200.0
    assert wakeup.wait(0.1) == SUBMITTED
    assert clock.now == 200.0  # at once, not after a watch interval
    write_status(tmp_path, caught_up=True, submitted=3, failed=1)  # a heartbeat: same answers
    assert wakeup.wait(0.1) == POLL
    write_status(tmp_path, caught_up=True, submitted=4, failed=1)
    assert wakeup.wait(0.1) == SUBMITTED


def test_submissions_made_before_the_agent_started_are_not_news(tmp_path: Path) -> None:
    write_status(tmp_path, caught_up=True, submitted=5)
    wakeup, _ = wakeup_in(tmp_path)
    assert wakeup.wait(0.1) == POLL


def test_a_job_end_wakes_it_and_it_looks_again_soon_while_slurm_still_lists_the_job(tmp_path: Path) -> None:
    log = tmp_path / SIGSLEEP_LOG
    log.write_text(end_record(1))  # an end from before the agent started: not news
    wakeup, clock = wakeup_in(tmp_path)
    assert wakeup.wait(0.1) == POLL
    with open(log, "a") as handle:
        handle.write(end_record(41) + end_record(42))
    assert wakeup.wait(0.1) == ENDED
    assert set(wakeup.ending) == {41, 42}
    wakeup.looked({42, 50})  # Slurm no longer lists 41; 42 is still completing
    start = clock.now
    assert wakeup.wait(0.1) == ENDING
    assert abs(clock.now - start - ENDING_RELOOK_S) < 1e-9
    wakeup.looked({50})
    assert wakeup.ending == {}
    start = clock.now
    assert wakeup.wait(0.1) == POLL
    assert abs(clock.now - start - 0.1) < 1e-9


def test_a_half_written_record_is_read_once_complete(tmp_path: Path) -> None:
    log = tmp_path / SIGSLEEP_LOG
    wakeup, _ = wakeup_in(tmp_path)
    record = end_record(9)
    with open(log, "a") as handle:
        handle.write(record[:20])
    assert wakeup.wait(0.05) == POLL
    with open(log, "a") as handle:
        handle.write(record[20:] + "not json\n" + json.dumps({"slurm_job_id": None}) + "\n")
    assert wakeup.wait(0.05) == ENDED
    assert set(wakeup.ending) == {9}


def test_an_ended_job_slurm_keeps_listing_is_given_up_after_a_while(tmp_path: Path) -> None:
    wakeup, clock = wakeup_in(tmp_path)
    (tmp_path / SIGSLEEP_LOG).write_text(end_record(3))
    assert wakeup.wait(0.1) == ENDED
    clock.now += ENDING_GIVE_UP_S - WATCH_S
    wakeup.looked({3})
    assert set(wakeup.ending) == {3}
    clock.now += 2 * WATCH_S
    wakeup.looked({3})
    assert wakeup.ending == {}


def test_on_a_queue_whose_look_is_slow_it_looks_again_no_sooner_than_a_look_takes(tmp_path: Path) -> None:
    wakeup, clock = wakeup_in(tmp_path)
    (tmp_path / SIGSLEEP_LOG).write_text(end_record(3))
    assert wakeup.wait(0.1) == ENDED
    wakeup.looked({3}, took=0.04)
    start = clock.now
    assert wakeup.wait(0.1) == ENDING
    assert abs(clock.now - start - 0.04) < 1e-9
