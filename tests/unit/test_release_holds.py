"""At a fixed speed-up the clock stands still at each job's end until Slurm has released the
job (harness.emulation.head.release_holds): on a real clock page, with a stand-in queue."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.emulation.head import release_holds
from harness.emulation.head.release_holds import PAST_END_S, EndQueue, HoldTally, ReleaseHolds, releasing
from harness.model.clock import VirtualClock


def test_slurm_is_releasing_while_an_ended_job_runs_or_any_job_completes() -> None:
    assert releasing([("RUNNING", "t7", "x"), ("PENDING", "t8", "")], [7])
    assert releasing([("COMPLETING", "t9", "x")], [7])  # any job's release holds the clock
    assert not releasing([("RUNNING", "t8", "x"), ("PENDING", "t7", "")], [7])
    assert not releasing([("RUNNING", "other", "x")], [7])  # not a job of the replay
    assert not releasing([], [7])


def test_the_end_queue_gives_each_end_once_in_order_and_ignores_unknown_jobs() -> None:
    ends = EndQueue({1: 50.0, 2: 10.0})
    ends.add([(1, 100.0), (2, 120.0), (3, 110.0)])  # job 3 has no duration: no end known
    assert ends.next_end() == 130.0
    assert ends.pop_until(140.0) == [2]
    assert ends.next_end() == 150.0
    assert ends.pop_until(149.0) == []
    assert ends.pop_until(150.0) == [1]  # an end at the instant is due
    assert ends.next_end() is None
    resumed = EndQueue({1: 50.0, 2: 10.0}, since=140.0)  # a resumed run reads its old markers
    resumed.add([(1, 100.0), (2, 120.0)])
    assert resumed.pop_until(200.0) == [1]  # job 2's end (130) came before the run was taken up


class StandIn:
    """Start markers given once, and squeue's answers in turn (the last one repeated); each
    look records the clock's instant and rate."""

    def __init__(
        self, clock: VirtualClock, markers: list[tuple[int, float]], answers: list, late: int
    ) -> None:
        self.clock, self.markers, self.answers, self.late = clock, markers, answers, late
        self.seen: list[tuple[float, float]] = []

    def new_starts(self) -> list[tuple[int, float]]:
        """The markers at the call after ``late`` calls (each 50 real ms, 5 virtual s apart)."""
        self.late -= 1
        if self.late >= 0:
            return []
        markers, self.markers = self.markers, []
        return markers

    def look(self):
        reading = self.clock.reading()
        self.seen.append((reading.at(time.time()), reading.rate))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def run_holds(
    tmp_path: Path, markers, answers, durations, wait_s: float, late: int = 0
) -> tuple[StandIn, HoldTally]:  # fmt: skip
    clock = VirtualClock.create(tmp_path / "page", start=1000.0, rate=100.0)
    stand_in = StandIn(clock, markers, answers, late)
    holds = ReleaseHolds(clock, 100.0, durations, stand_in.new_starts, stand_in.look)
    holds.start()
    time.sleep(wait_s)
    tally = holds.stop()
    stand_in.final = clock.reading()  # type: ignore[attr-defined]
    return stand_in, tally


def test_the_clock_stands_at_a_jobs_end_until_slurm_has_released_it(tmp_path: Path) -> None:
    running = [("RUNNING", "t1", "1000")]
    # job 1 ends at 1010 (0.1 real s away at x100); Slurm answers running twice, then released
    stand_in, tally = run_holds(tmp_path, [(1, 1000.0)], [running, running, []], {1: 10.0}, 0.5)
    assert stand_in.seen[:3] == [(1010.0 + PAST_END_S, 0.0)] * 3  # held just past the end, for every look
    assert len(stand_in.seen) == 3
    assert stand_in.final.rate == 100.0 and stand_in.final.base_v == 1010.0 + PAST_END_S  # on at its pace
    assert (tally.holds, tally.ends, tally.late, tally.unreleased, tally.missed) == (1, 1, 0, 0, 0)


def test_jobs_ending_at_one_instant_share_one_hold(tmp_path: Path) -> None:
    stand_in, tally = run_holds(tmp_path, [(1, 1000.0), (2, 1005.0)], [[]], {1: 10.0, 2: 5.0}, 0.4)
    assert (tally.holds, tally.ends) == (1, 2)
    assert stand_in.seen == [(1010.0 + PAST_END_S, 0.0)]


def test_an_end_already_past_when_its_marker_comes_is_not_held(tmp_path: Path) -> None:
    # job 1 started at 1000 and ran 2 s; its marker is read at the second look, at about 1005
    stand_in, tally = run_holds(tmp_path, [(1, 1000.0)], [[]], {1: 2.0}, 0.3, late=1)
    assert (tally.holds, tally.missed) == (0, 1)
    assert stand_in.seen == [] and stand_in.final.rate == 100.0


def test_a_release_slurm_never_reports_holds_the_clock_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    monkeypatch.setattr(release_holds, "RELEASE_WAIT_S", 0.2)
    # squeue does not answer at all: the clock stays held (no answer is not a release), then goes on
    stand_in, tally = run_holds(tmp_path, [(1, 1000.0)], [None], {1: 10.0}, 0.6)
    assert {seen for seen in stand_in.seen} == {(1010.0 + PAST_END_S, 0.0)} and len(stand_in.seen) >= 5
    assert (tally.holds, tally.unreleased) == (1, 1)
    assert stand_in.final.rate == 100.0


def test_a_look_that_fails_leaves_the_clock_running_and_says_why(tmp_path: Path) -> None:
    clock = VirtualClock.create(tmp_path / "page", start=1000.0, rate=100.0)

    def broken_look():
        raise OSError("the controller's shell is gone")

    holds = ReleaseHolds(clock, 100.0, {1: 10.0}, lambda: [(1, 1000.0)], broken_look)
    holds.start()
    time.sleep(0.3)
    tally = holds.stop()
    assert clock.reading().rate == 100.0 and clock.reading().base_v == 1010.0 + PAST_END_S
    assert tally.error == "OSError: the controller's shell is gone"
    assert tally.summary().endswith(
        "; stopped by OSError: the controller's shell is gone, the clock ran on without holds"
    )


def test_the_tally_says_what_the_holds_did() -> None:
    tally = HoldTally(holds=3, ends=4, held_s=1.25, longest_s=0.8, late=1, unreleased=0, missed=2)
    assert tally.summary() == (
        "release holds: 4 job ends in 3 holds, 1.2 real s held (longest 0.80 s); 1 late, "
        "0 not released in 5 s, 2 ends seen too late to hold"
    )
