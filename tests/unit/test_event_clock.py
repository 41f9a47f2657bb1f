"""The event-driven clock's decisions (harness.emulation.head.events), computed by hand: when
the cluster counts as quiescent and where the clock goes next."""

from __future__ import annotations

import pandas as pd

from harness.emulation.head.events import Observation, job_durations, next_event, quiescent, submissions_due

INSTANTS = [0.0, 30.0, 30.0, 95.5]  # the plan's submission offsets, sorted


def test_a_job_runs_its_runtime_cut_at_its_walltime() -> None:
    plan = pd.DataFrame({"job_id": [1, 2], "runtime": [100.0, 900.0], "walltime": [600.0, 600.0]})
    assert job_durations(plan) == {1: 100.0, 2: 600.0}


def test_the_clock_goes_to_the_next_submission_or_job_end_whichever_comes_first() -> None:
    t0 = 1000.0
    # two submissions made (offsets 0 and 30): the next is the third, also at 30 -> 1030
    assert next_event(1010.0, t0, INSTANTS, 2, {}, {}) == 1030.0
    # a job started at 1002 for 20 s ends at 1022, before that submission
    assert next_event(1010.0, t0, INSTANTS, 2, {7: 1002.0}, {7: 20.0}) == 1022.0
    # a fractional instant is rounded up to Slurm's whole second (1095.5 -> 1096)
    assert next_event(1040.0, t0, INSTANTS, 3, {}, {}) == 1096.0
    # an event already due (a job's end not seen yet) is a one-second step away, never behind
    assert next_event(1040.0, t0, INSTANTS, 3, {7: 1002.0}, {7: 20.0}) == 1041.0
    # nothing left: one second on
    assert next_event(1200.0, t0, INSTANTS, 4, {}, {}) == 1201.0
    # the replay not started (no t0): one second on, to let it start
    assert next_event(5.0, None, INSTANTS, 0, {}, {}) == 6.0


def test_submissions_due_count_every_instant_reached() -> None:
    assert submissions_due(999.0, 1000.0, INSTANTS) == 0
    assert submissions_due(1000.0, 1000.0, INSTANTS) == 1
    assert submissions_due(1030.0, 1000.0, INSTANTS) == 3
    assert submissions_due(1030.0, None, INSTANTS) == 0


def test_quiescent_needs_an_answer_no_job_completing_and_the_replay_caught_up() -> None:
    idle = (("RUNNING", "t1", "1000"), ("PENDING", "t2", ""))
    assert quiescent(Observation(1000.0, 3, idle, False), 1030.0, INSTANTS)
    assert not quiescent(Observation(1000.0, 2, idle, False), 1030.0, INSTANTS)  # one due not made
    assert not quiescent(Observation(1000.0, 3, None, False), 1030.0, INSTANTS)  # squeue did not answer
    ending = (("COMPLETING", "t1", "1000"),)
    assert not quiescent(Observation(1000.0, 3, ending, False), 1030.0, INSTANTS)
    assert quiescent(Observation(1000.0, 4, (), True), 5000.0, INSTANTS)
