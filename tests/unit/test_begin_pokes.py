"""At a fixed speed-up, the replay pokes slurmctld at each begin of a job sent ahead: Slurm
would otherwise see a begin pass only at its periodic main pass (60 s of the clock)."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pytest

from harness.emulation.head.begin_pokes import BeginPokes, poke_slurm
from harness.model.rundir import STATUS
from tests.unit.test_replay import FakeClock, make_replayer


def recording_poke(answers: list[bool] | None = None):
    """A poke that records how often it ran and answers from ``answers`` (True when empty)."""
    runs: list[int] = []

    def poke() -> bool:
        runs.append(len(runs))
        return answers.pop(0) if answers else True

    return poke, runs


def test_each_begin_is_poked_once_when_the_clock_has_passed_it() -> None:
    poke, runs = recording_poke()
    pokes = BeginPokes([1003.0, None, 1002.0, 1003.0, 1008.0], poke)
    assert pokes.last == 1008.0
    assert pokes.poke_passed(1001.0) == 1.0 and runs == []  # nothing due: 1 s to 1002
    assert pokes.poke_passed(1002.0) == 1.0 and len(runs) == 1  # 1002 poked; 1003 next
    assert pokes.poke_passed(1002.5) == 0.5 and len(runs) == 1
    assert pokes.poke_passed(1007.0) == 1.0 and len(runs) == 2  # 1003 (twice in the plan): once
    assert pokes.poke_passed(1009.0) == math.inf and len(runs) == 3
    assert pokes.poke_passed(1010.0) == math.inf and len(runs) == 3
    assert (pokes.pokes, pokes.failed) == (3, 0)


def test_begins_that_passed_together_cost_one_poke() -> None:
    poke, runs = recording_poke()
    pokes = BeginPokes([10.0, 11.0, 12.0, 20.0], poke)
    assert pokes.poke_passed(12.5) == 7.5
    assert len(runs) == 1


def test_a_poke_slurmctld_refused_is_counted_and_the_next_begin_pokes_again() -> None:
    poke, runs = recording_poke([False, True])
    pokes = BeginPokes([1.0, 2.0], poke)
    pokes.poke_passed(1.0)
    pokes.poke_passed(2.0)
    assert (pokes.pokes, pokes.failed, len(runs)) == (1, 1, 2)


def test_without_begins_nothing_is_poked() -> None:
    poke, runs = recording_poke()
    pokes = BeginPokes([None, None], poke)
    assert pokes.last == -math.inf
    assert pokes.poke_passed(5.0) == math.inf and runs == []


def test_a_replay_with_a_lead_pokes_at_each_begin_even_after_its_last_submission(tmp_path: Path) -> None:
    clock = FakeClock()  # starts at 1000, t0 = 1002
    pokes: list[float] = []
    replayer, calls = make_replayer(
        tmp_path, [0.0, 1.0, 1.0, 5.5], clock, ahead=True, ahead_by=3.0, pokes=pokes
    )  # fmt: skip
    status = replayer.run()
    # begins 1002, 1003, 1003, 1008 (5.5 s after t0 is 1007.5: its whole second); sent 3 s ahead
    assert [t for t, _ in calls] == [1000.0, 1000.0, 1000.0, 1005.0]
    assert pokes == [1002.0, 1003.0, 1008.0]  # the last one after the last submission
    assert status.done and status.begin_pokes == 3
    assert json.loads((tmp_path / STATUS).read_text())["begin_pokes"] == 3


def test_the_event_clock_and_the_wall_clock_replays_do_not_poke(tmp_path: Path) -> None:
    pokes: list[float] = []
    replayer, _ = make_replayer(tmp_path, [0.0, 1.0], FakeClock(), ahead=True, pokes=pokes)  # the event clock
    assert replayer.run().begin_pokes == 0
    replayer, _ = make_replayer(tmp_path / "wall", [0.0, 1.0], FakeClock(), pokes=pokes)
    replayer.run()
    assert pokes == []


@pytest.mark.parametrize(("exit_code", "taken"), [(0, True), (1, False)])
def test_the_poke_is_a_partition_update_to_its_own_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int, taken: bool
) -> None:
    args = tmp_path / "args"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f'#!/bin/sh\necho "$@" > {args}\nexit {exit_code}\n')
    scontrol.chmod(scontrol.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert poke_slurm("batch")() is taken
    assert args.read_text() == "update PartitionName=batch State=UP\n"


def test_a_poke_without_scontrol_says_it_was_not_taken(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol there
    assert poke_slurm("compute")() is False
