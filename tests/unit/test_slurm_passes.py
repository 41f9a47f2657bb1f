"""How slurmctld's passes ended during a run (harness.slurm.passes), from sdiag's JSON."""

from __future__ import annotations

import json

from harness.model.commands import CommandResult
from harness.slurm.passes import cut_by_time, parse_pass_exits, passes_between, read_pass_exits


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


def test_a_runs_passes_are_the_difference_of_two_readings() -> None:
    found = passes_between(parse_pass_exits(BEFORE), parse_pass_exits(AFTER))
    assert found == {
        "main": {"end_job_queue": 15, "max_sched_time": 0},
        "backfill": {"end_job_queue": 5, "bf_max_time": 12},
    }


def test_a_restart_in_between_or_a_missing_reading_leaves_them_unknown() -> None:
    assert passes_between(parse_pass_exits(AFTER), parse_pass_exits(BEFORE)) is None  # counters went down
    assert passes_between(None, parse_pass_exits(AFTER)) is None
    assert passes_between(parse_pass_exits(BEFORE), None) is None


def test_passes_cut_at_their_time_limit_are_said_in_one_line() -> None:
    found = passes_between(parse_pass_exits(BEFORE), parse_pass_exits(AFTER))
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
