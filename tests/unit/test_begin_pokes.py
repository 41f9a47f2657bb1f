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
    """A poke that records the jobs it poked and answers from ``answers`` (True when empty)."""
    poked: list[tuple[int, str]] = []

    def poke(slurm_id: int, name: str) -> bool:
        poked.append((slurm_id, name))
        return answers.pop(0) if answers else True

    return poke, poked


def test_each_begin_is_poked_once_when_the_clock_has_passed_it() -> None:
    poke, poked = recording_poke()
    pokes = BeginPokes([1003.0, None, 1002.0, 1003.0, 1008.0], poke)
    for begin, slurm_id in ((1002.0, 1), (1003.0, 2), (1003.0, 3), (1008.0, 4)):
        pokes.note(begin, slurm_id, f"t{slurm_id}")
    assert pokes.last == 1008.0
    assert pokes.poke_passed(1001.0) == 1.0 and poked == []  # nothing due: 1 s to 1002
    assert pokes.poke_passed(1002.0) == 1.0 and poked == [(1, "t1")]  # 1002 poked; 1003 next
    assert pokes.poke_passed(1002.5) == 0.5 and len(poked) == 1
    # 1003 (two jobs): once, with the first job noted for it
    assert pokes.poke_passed(1007.0) == 1.0 and poked[1:] == [(2, "t2")]
    assert pokes.poke_passed(1009.0) == math.inf and poked[2:] == [(4, "t4")]
    assert pokes.poke_passed(1010.0) == math.inf and len(poked) == 3
    assert (pokes.pokes, pokes.failed) == (3, 0)


def test_begins_that_passed_together_cost_one_poke_with_the_latest_job() -> None:
    poke, poked = recording_poke()
    pokes = BeginPokes([10.0, 11.0, 12.0, 20.0], poke)
    pokes.note(10.0, 5, "t5")
    pokes.note(11.0, 6, "t6")  # 12's sbatch failed: no job for it
    assert pokes.poke_passed(12.5) == 7.5
    assert poked == [(6, "t6")]


def test_a_poke_slurmctld_refused_or_without_a_job_is_counted_as_failed() -> None:
    poke, poked = recording_poke([False, True])
    pokes = BeginPokes([1.0, 2.0, 3.0], poke)
    pokes.note(1.0, 1, "t1")
    pokes.note(2.0, 2, "t2")
    pokes.poke_passed(1.0)  # refused
    pokes.poke_passed(2.0)  # taken
    pokes.poke_passed(3.0)  # no job was sent for 3: nothing to poke with
    assert (pokes.pokes, pokes.failed, poked) == (1, 2, [(1, "t1"), (2, "t2")])


def test_without_begins_nothing_is_poked() -> None:
    poke, poked = recording_poke()
    pokes = BeginPokes([None, None], poke)
    assert pokes.last == -math.inf
    assert pokes.poke_passed(5.0) == math.inf and poked == []


def test_a_replay_with_a_lead_pokes_at_each_begin_even_after_its_last_submission(tmp_path: Path) -> None:
    clock = FakeClock()  # starts at 1000, t0 = 1002
    pokes: list[tuple[float, int, str]] = []
    replayer, calls = make_replayer(
        tmp_path, [0.0, 1.0, 1.0, 5.5], clock, ahead=True, ahead_by=3.0, pokes=pokes
    )  # fmt: skip
    status = replayer.run()
    # begins 1002, 1003, 1003, 1008 (5.5 s after t0 is 1007.5: its whole second); sent 3 s ahead
    assert [t for t, _ in calls] == [1000.0, 1000.0, 1000.0, 1005.0]
    # each with the first job sent for its begin (Slurm ids 1-4 in order); the last one after
    # the last submission
    assert pokes == [(1002.0, 1, "t100"), (1003.0, 2, "t101"), (1008.0, 4, "t103")]
    assert status.done and status.begin_pokes == 3 and status.begin_pokes_failed == 0
    assert json.loads((tmp_path / STATUS).read_text())["begin_pokes"] == 3


def test_the_event_clock_and_the_wall_clock_replays_do_not_poke(tmp_path: Path) -> None:
    pokes: list[tuple[float, int, str]] = []
    replayer, _ = make_replayer(tmp_path, [0.0, 1.0], FakeClock(), ahead=True, pokes=pokes)  # the event clock
    assert replayer.run().begin_pokes == 0
    replayer, _ = make_replayer(tmp_path / "wall", [0.0, 1.0], FakeClock(), pokes=pokes)
    replayer.run()
    assert pokes == []


@pytest.mark.parametrize(("exit_code", "taken"), [(0, True), (1, False)])
def test_the_poke_is_an_update_of_a_jobs_name_to_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int, taken: bool
) -> None:
    args = tmp_path / "args"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f'#!/bin/sh\necho "$@" > {args}\nexit {exit_code}\n')
    scontrol.chmod(scontrol.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert poke_slurm(42, "t260102") is taken
    assert args.read_text() == "update JobId=42 Name=t260102\n"


def test_a_poke_without_scontrol_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol there
    assert poke_slurm(1, "t1") is False
