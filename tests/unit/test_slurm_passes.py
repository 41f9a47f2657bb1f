"""How slurmctld's passes ended during a run (harness.slurm.passes), from sdiag's JSON."""

from __future__ import annotations

import json

from harness.model.commands import CommandResult
from harness.slurm.passes import PassTally, cut_by_time, parse_pass_exits, read_pass_exits


def sdiag(main: dict[str, int], backfill: dict[str, int]) -> str:
    """sdiag --json's shape in Slurm 24.11 (only what the module reads, plus a neighbour)."""
    return json.dumps({"statistics": {"schedule_exit": main, "bf_exit": backfill, "jobs_started": 7}})


BEFORE = sdiag({"end_job_queue": 10, "max_sched_time": 1}, {"end_job_queue": 4, "bf_max_time": 2})
AFTER = sdiag({"end_job_queue": 25, "max_sched_time": 1}, {"end_job_queue": 9, "bf_max_time": 14})


def test_the_counters_are_read_by_kind_and_exit() -> None:
    assert parse_pass_exits(BEFORE) == {
        "main": {"end_job_queue": 10, "max_sched_time": 1},
        "backfill": {"end_job_queue": 4, "bf_max_time": 2},
    }


def test_anything_but_sdiags_json_is_unknown() -> None:
    assert parse_pass_exits("sdiag: error: Unable to contact slurm controller") is None
    assert parse_pass_exits(json.dumps({"statistics": {"schedule_exit": {}}})) is None  # no bf_exit
    assert parse_pass_exits(json.dumps({"statistics": {"schedule_exit": [], "bf_exit": {}}})) is None


def test_a_runs_passes_are_the_difference_of_its_first_and_last_readings() -> None:
    tally = PassTally()
    assert tally.passes() is None  # no reading yet
    for reading in (BEFORE, "not sdiag", AFTER):  # a reading without an answer counts nothing
        tally.add(parse_pass_exits(reading))
    assert tally.passes() == {
        "main": {"end_job_queue": 15, "max_sched_time": 0},
        "backfill": {"end_job_queue": 5, "bf_max_time": 12},
    }
    assert tally.resets == 0


def test_a_reset_at_slurmctlds_midnight_starts_a_new_count() -> None:
    """slurmctld sets its counters to 0 at its midnight: the passes before the last reading
    of the day and those after the reset add up; the ones in between are not seen."""
    tally = PassTally()
    for reading in (
        BEFORE,  # main 10 + 1 cut, backfill 4 + 2 cut
        AFTER,  # main 25 + 1, backfill 9 + 14: 15 and 17 more
        sdiag({"end_job_queue": 3, "max_sched_time": 0}, {"end_job_queue": 2, "bf_max_time": 1}),
        sdiag({"end_job_queue": 7, "max_sched_time": 2}, {"end_job_queue": 2, "bf_max_time": 1}),
    ):
        tally.add(parse_pass_exits(reading))
    assert tally.resets == 1
    assert tally.passes() == {
        "main": {"end_job_queue": 15 + 7, "max_sched_time": 0 + 2},
        "backfill": {"end_job_queue": 5 + 2, "bf_max_time": 12 + 1},
    }


def test_passes_cut_at_their_time_limit_are_said_in_one_line() -> None:
    tally = PassTally()
    tally.add(parse_pass_exits(BEFORE))
    tally.add(parse_pass_exits(AFTER))
    found = tally.passes()
    assert found is not None
    assert cut_by_time(found) == (
        "slurmctld cut 12 of 17 backfill passes at bf_max_time (its own clock): "
        "the rest of the queue waited a pass"
    )
    both = {"main": {"end_job_queue": 3, "max_sched_time": 1}, "backfill": {"bf_max_time": 2}}
    assert cut_by_time(both) == (
        "slurmctld cut 1 of 4 main passes at max_sched_time and 2 of 2 backfill passes at bf_max_time "
        "(its own clock): the rest of the queue waited a pass"
    )
    assert cut_by_time({"main": {"end_job_queue": 3}, "backfill": {"end_job_queue": 1}}) is None


def test_reading_them_never_fails_the_run() -> None:
    def refused(cmd: list[str]) -> CommandResult:
        assert cmd == ["sdiag", "--json"]
        return CommandResult(1, "", "sdiag: error: Access/permission denied")

    def broken(cmd: list[str]) -> CommandResult:
        raise TimeoutError("no answer in 30 s")

    assert read_pass_exits(refused) is None
    assert read_pass_exits(broken) is None
    assert read_pass_exits(lambda cmd: CommandResult(0, AFTER, "")) == parse_pass_exits(AFTER)
