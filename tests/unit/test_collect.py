"""Joining replay submissions, sigsleep records and Slurm's jobcomp; native policy names."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.collect.results import agent_copies, build_results, cross_check, finished, lag_stats
from harness.slurm.jobcomp import parse_line, read_jobcomp, slurm_instant, slurm_time
from harness.slurm.native import UnknownPolicy, scheduler_for

T0 = 1_795_000_000.0
PLAN = pd.DataFrame({
    "job_id": [1, 2, 3], "submit": [0.0, 1.0, 2.0], "runtime": [5.0, 5.0, 5.0],
    "walltime": [10.0, 10.0, 10.0], "nodes": [1, 2, 4], "bb_per_node_mb": [10, 20, 30],
})  # fmt: skip
SUBS = [
    {"index": 0, "job_id": 1, "slurm_job_id": 11, "intended": T0, "actual": T0 + 0.001, "lag": 0.001},
    {"index": 1, "job_id": 2, "slurm_job_id": 12, "intended": T0 + 1, "actual": T0 + 1.002, "lag": 0.002},
    {
        "index": 2,
        "job_id": 3,
        "slurm_job_id": None,
        "intended": T0 + 2,
        "actual": T0 + 2.0,
        "lag": 0.0,
        "error": "x",
    },
]
RECORDS = [
    {"job_id": 1, "start": T0 + 0.5, "end": T0 + 5.5, "running": 5.0, "reason": "completed",
     "nodelist": "c001", "suspended": 0.0},
    {"job_id": 2, "start": T0 + 5.7, "end": T0 + 10.7, "running": 5.0, "reason": "completed",
     "nodelist": "c[001-002]", "suspended": 0.0},
]  # fmt: skip


def test_build_results_times_relative_to_t0_and_statuses() -> None:
    df = build_results(PLAN, SUBS, RECORDS, T0)
    assert list(df["status"]) == ["completed", "completed", "rejected"]
    assert df.loc[0, "submit"] == pytest.approx(0.001, abs=1e-6)
    assert df.loc[1, "start"] == pytest.approx(5.7, abs=1e-6)
    assert df.loc[1, "end"] == pytest.approx(10.7, abs=1e-6)
    assert df.loc[1, "nodelist"] == "c[001-002]"
    assert list(finished(df)["job_id"]) == [1, 2]


def test_job_without_record_is_missing() -> None:
    df = build_results(PLAN, SUBS[:2], RECORDS[:1], T0)
    assert list(df["status"]) == ["completed", "missing", "missing"]


def test_cross_check_allows_whole_second_truncation_only() -> None:
    df = build_results(PLAN, SUBS, RECORDS, T0)
    slurm = {11: {"start": T0, "end": T0 + 5.0}, 12: {"start": T0 + 5.0, "end": T0 + 10.0}}
    check = cross_check(df, slurm, T0)
    assert check.ok and check.compared == 2
    assert check.max_start_diff == pytest.approx(0.7, abs=1e-6)
    slurm[12]["end"] = T0 + 13.0  # Slurm says it ended 2.3 s after the job's own clock
    bad = cross_check(df, slurm, T0)
    assert not bad.ok and bad.disagreements[0]["job_id"] == 2
    missing = cross_check(df, {11: slurm[11]}, T0)
    assert missing.missing_in_slurm == [2]


def test_lag_stats() -> None:
    stats = lag_stats(SUBS)
    assert stats["submitted"] == 2 and stats["rejected"] == 1
    assert stats["lag_p50_s"] == pytest.approx(0.0015)
    assert stats["lag_max_s"] == pytest.approx(0.002)
    assert stats["order_inversions"] == 0
    swapped = [{**SUBS[0], "slurm_job_id": 13}, SUBS[1], {**SUBS[2], "slurm_job_id": 14}]
    assert lag_stats(swapped)["order_inversions"] == 1


def test_jobcomp_parsing(tmp_path: Path) -> None:
    line = (
        "JobId=12 UserId=emu(1000) GroupId=emu(1000) Name=t2 JobState=COMPLETED Partition=compute "
        "TimeLimit=1 StartTime=2026-11-22T07:27:19 EndTime=2026-11-22T07:27:21 NodeList=c[001-002] "
        "NodeCnt=2 ExitCode=0:0"
    )
    assert parse_line(line)["NodeList"] == "c[001-002]"
    path = tmp_path / "jobcomp.log"
    path.write_text(line + "\n")
    job = read_jobcomp(path)[12]
    assert job["state"] == "COMPLETED"
    assert job["end"] - job["start"] == 2.0
    assert slurm_time("2026-11-22T07:27:19") == 1_795_332_439.0
    assert slurm_time("Unknown") is None
    assert slurm_instant(1_795_332_439.0) == "2026-11-22T07:27:19"


def test_a_job_submitted_ahead_agrees_with_slurms_eligible_time(tmp_path: Path) -> None:
    line = (
        "JobId=12 Name=t2 JobState=COMPLETED SubmitTime=2026-11-22T07:27:10 "
        "EligibleTime=2026-11-22T07:27:19 StartTime=2026-11-22T07:27:19 EndTime=2026-11-22T07:27:24"
    )
    (tmp_path / "jobcomp.log").write_text(line + "\n")
    slurm = read_jobcomp(tmp_path / "jobcomp.log")[12]
    assert slurm["eligible"] - slurm["submit"] == 9.0
    # the replay says job 2 entered the queue at its begin, 07:27:19 (sent 9 s before)
    t0 = slurm["eligible"] - 1.0
    subs = [{**SUBS[1], "actual": t0 + 1.0, "sent": t0 - 8.0}]
    records = [{**RECORDS[1], "start": t0 + 1.2, "end": t0 + 6.2}]
    df = build_results(PLAN, subs, records, t0)
    check = cross_check(df, {12: slurm}, t0, submitted_ahead={2})
    assert check.ok and check.mismatches == [] and check.max_submit_diff == 0.0
    # not submitted ahead, the same job is 9 s off Slurm's submit
    plain = cross_check(df, {12: slurm}, t0)
    assert [(m["field"], m["slurm"]) for m in plain.mismatches] == [("submit", slurm["submit"])]


def test_native_policies_map_to_slurm_configs() -> None:
    assert scheduler_for("slurm-fcfs").mode == "builtin"
    b = scheduler_for("slurm-backfill-4")
    assert (b.mode, b.bf_licenses, b.reserve_depth) == ("backfill", True, 4)
    nf = scheduler_for("slurm-backfill-no-future-1")
    assert (nf.bf_licenses, nf.reserve_depth) == (False, 1)
    for bad in ("slurm-backfill-0", "slurm-sjf", "backfill-1"):
        with pytest.raises(UnknownPolicy):
            scheduler_for(bad)


def test_a_job_submitted_again_by_the_agent_is_the_slurm_job_that_ran() -> None:
    # job 2 was moved to the slow tier: its own record names the copy (15), not the submission (12)
    records = [RECORDS[0], {**RECORDS[1], "slurm_job_id": 15}]
    df = build_results(PLAN, SUBS, records, T0)
    assert list(df["slurm_job_id"])[:2] == [11, 15]


def test_agent_copies_are_the_ids_that_ran_but_were_not_submitted() -> None:
    records = [{**RECORDS[0], "slurm_job_id": 11}, {**RECORDS[1], "slurm_job_id": 15}, {"slurm_job_id": "-"}]
    assert agent_copies(SUBS, records) == [{"slurm_job_id": 15}]


@pytest.mark.parametrize(
    ("slurm_start", "ok"),
    [
        (T0 + 0.5 - 2.0, True),  # sigsleep 2.0 s after Slurm's stamp: tolerance 1 + the truncated second
        (T0 + 0.5 - 2.01, False),
        (T0 + 0.5 + 1.0, True),  # sigsleep 1.0 s before Slurm: the tolerance, no more
        (T0 + 0.5 + 1.01, False),
    ],
)
def test_the_cross_check_says_the_range_it_accepts(slurm_start: float, ok: bool) -> None:
    """The check once printed "tolerance 1.0 s" while accepting -1..+2 s (issue #33)."""
    df = build_results(PLAN, SUBS[:1], RECORDS[:1], T0)  # job 1 started at T0 + 0.5 by sigsleep
    check = cross_check(df, {11: {"start": slurm_start, "end": slurm_start + 5.0}}, T0)
    assert check.accepted_s == (-1.0, 2.0)
    assert check.describe_tolerance() == "-1..+2 s (sigsleep - Slurm; Slurm truncates to the second)"
    assert check.as_dict()["accepted_s"] == [-1.0, 2.0]
    assert check.ok is ok
