"""Fault accounting: events from successive looks at the cluster, Slurm's end state for jobs
without a record, the faults section, the crashed node's processes, resumable options."""

from __future__ import annotations

import pandas as pd

from harness.cluster.containers.faults import doomed_pids
from harness.emulation.collect.results import build_results, cross_check
from harness.emulation.head.faultlog import (
    FaultMonitor,
    fault_section,
    job_outcome,
    note_outage,
    poke_warning,
)
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec, options_from_dict


def test_monitor_notes_each_change_once() -> None:
    monitor = FaultMonitor()
    monitor.observe(10.0, {"s01": "idle", "s02": "allocated"})
    monitor.observe(15.0, {"s01": "idle*", "s02": "allocated"})
    monitor.observe(20.0, {"s01": "down*", "s02": "allocated"})
    monitor.observe(25.0, None)
    monitor.observe(30.0, None)
    monitor.observe(35.0, {"s01": "idle*", "s02": "idle*"})  # restarted: no node registered yet
    monitor.observe(40.0, {"s01": "idle", "s02": "idle"})
    assert monitor.events == [
        {"at": 15.0, "event": "nodes down", "nodes": ["s01"]},
        {"at": 25.0, "event": "slurmctld unreachable"},
        {"at": 35.0, "event": "slurmctld answers again"},
        {"at": 40.0, "event": "nodes back", "nodes": ["s01"]},
    ]


def test_outcomes() -> None:
    statuses = ("completed", "timeout", "node_fail", "timeout_no_record", "cancelled")
    assert [job_outcome(s) for s in statuses] == [
        "completed", "completed", "failed-by-fault", "failed-by-fault", "cancelled"]  # fmt: skip


PLAN = pd.DataFrame({
    "job_id": [1, 2, 3], "submit": [0.0, 1.0, 2.0], "runtime": [5.0] * 3, "walltime": [10.0] * 3,
    "nodes": [1] * 3, "bb_per_node_mb": [0] * 3,
})  # fmt: skip
SUBS = [
    {
        "index": 0,
        "job_id": 1,
        "slurm_job_id": 11,
        "intended": 100.0,
        "actual": 100.0,
        "lag": 0.0,
        "attempts": 1,
    },
    {
        "index": 1,
        "job_id": 2,
        "slurm_job_id": 12,
        "intended": 101.0,
        "actual": 105.5,
        "lag": 4.5,
        "attempts": 3,
    },
    {
        "index": 2,
        "job_id": 3,
        "slurm_job_id": 13,
        "intended": 102.0,
        "actual": None,
        "lag": None,
        "adopted": True,
    },
]
RECORDS = [
    {"job_id": 2, "start": 106.0, "end": 111.0, "running": 5.0, "reason": "completed"},
    {"job_id": 3, "start": 103.0, "end": 108.0, "running": 5.0, "reason": "completed"},
]
SLURM = {
    11: {"state": "NODE_FAIL", "start": 100.0, "end": 120.0},
    12: {"state": "COMPLETED", "start": 106.0, "end": 111.0},
    13: {"state": "COMPLETED", "start": 103.0, "end": 108.0},
}


def test_a_job_without_record_gets_the_state_slurm_ended_it_in() -> None:
    results = build_results(PLAN, SUBS, RECORDS, 100.0, SLURM)
    assert list(results["status"]) == ["node_fail", "completed", "completed"]
    assert results["submit"].isna().tolist() == [True, False, True]  # adopted: submit time unknown
    check = cross_check(results, SLURM, 100.0)
    assert check.ok and check.compared == 2  # the failed job is not a missing record


def test_fault_section_lists_events_and_every_affected_job() -> None:
    results = build_results(PLAN, SUBS, RECORDS, 100.0, SLURM)
    events = [{"at": 112.5, "event": "nodes down", "nodes": ["s01"]}]
    status = {"retries": 2, "retried_jobs": 1, "resumes": 1, "adopted": 1}
    found = fault_section(results, SUBS, events, status, t0=100.0)
    assert found["events"] == [{"at": 12.5, "event": "nodes down", "nodes": ["s01"]}]
    assert found["outcomes"] == {"completed": 2, "failed-by-fault": 1}
    keys = ("submission_retries", "retried_jobs", "resumes", "adopted_at_resume")
    assert [found[k] for k in keys] == [2, 1, 1, 1]
    assert found["affected_jobs"] == [
        {"job_id": 1, "slurm_job_id": 11, "outcome": "failed-by-fault", "what": "Slurm: NODE_FAIL"},
        {"job_id": 2, "slurm_job_id": 12, "outcome": "completed", "what": "submitted after 3 attempts"},
        {"job_id": 3, "slurm_job_id": 13, "outcome": "completed",
         "what": "found in Slurm at the resume (not submitted again)"},
    ]  # fmt: skip
    assert found["n_affected"] == 3
    assert (found["begin_pokes"], found["begin_pokes_failed"]) == (0, 0) and poke_warning(found) is None


def test_pokes_slurmctld_did_not_take_are_counted_and_warned() -> None:
    results = build_results(PLAN, SUBS, RECORDS, 100.0, SLURM)
    found = fault_section(results, SUBS, [], {"begin_pokes": 37, "begin_pokes_failed": 3}, t0=100.0)
    assert (found["begin_pokes"], found["begin_pokes_failed"]) == (37, 3)
    warning = poke_warning(found)
    assert warning is not None and warning.startswith("warning: 3 of 40 pokes of slurmctld")


PS = """    PID    PPID COMMAND
      1       0 /sbin/docker-init -- /usr/local/sbin/harness-entrypoint nodes s01,s02,s03
     24       8 /bin/bash /usr/local/sbin/harness-entrypoint nodes s01,s02,s03
     30      26 /usr/sbin/slurmd -D -N s03
     31      25 /usr/sbin/slurmd -D -N s02
     32      24 /usr/sbin/slurmd -D -N s01
     40       1 slurmstepd: [7.extern]
     45       1 slurmstepd: [7.batch]
     46      45 /bin/sh /var/spool/slurm/d/s01/job00007/slurm_script
     47      46 /usr/local/bin/sigsleep --runtime 5
     50       1 slurmstepd: [8.batch]
     51      50 /usr/local/bin/sigsleep --runtime 5
"""


def test_a_crashed_node_takes_its_slurmd_and_its_jobs_processes() -> None:
    assert doomed_pids(PS, "s01", [7]) == [32, 40, 45, 46, 47]
    assert doomed_pids(PS, "s02", []) == [31]


def test_recorded_options_give_the_same_run_options() -> None:
    opts = RunOptions(WorkloadSpec(shrink=0.9, period=(1, 4)), ClusterSpec(name="x", platform="p.toml"),
                      ReplaySpec(policy="slurm-fcfs", timeout=30.0), label="t")  # fmt: skip
    assert options_from_dict(opts.as_dict()) == opts


def test_outages_merge_when_they_overlap() -> None:
    outages: list[list[float]] = []
    for span in ((10.0, 14.0), (12.0, 15.5), (20.0, 21.0), (9.0, 10.5)):
        note_outage(outages, *span)
    assert outages == [[9.0, 15.5], [20.0, 21.0]]


def test_a_job_sigsleep_saw_killed_takes_slurms_reason() -> None:
    assert job_outcome("killed", "NODE_FAIL") == "failed-by-fault"
    assert job_outcome("killed", "CANCELLED by 1000") == "cancelled"
    results = build_results(PLAN, SUBS[:1], [{**RECORDS[0], "job_id": 1, "reason": "killed"}], 100.0, SLURM)
    found = fault_section(results, SUBS[:1], [], {"outages": [[103.0, 109.5]]}, 100.0, SLURM)
    assert found["affected_jobs"][0]["what"] == "killed; Slurm: NODE_FAIL"
    assert found["events"] == [
        {"at": 3.0, "event": "slurmctld unreachable (submissions failing)", "until": 9.5}]  # fmt: skip


def test_a_cancelled_job_carries_the_reason_the_run_stopped() -> None:
    slurm = {11: {"state": "CANCELLED by 0", "start": 100.0, "end": 101.0}}
    results = build_results(PLAN, SUBS[:1], [], 100.0, slurm)
    found = fault_section(results, SUBS[:1], [], {}, 100.0, slurm, "interrupted by the user (Ctrl-C)")
    assert found["outcomes"] == {"cancelled": 1, "missing": 2}
    assert found["affected_jobs"][0] == {
        "job_id": 1, "slurm_job_id": 11, "outcome": "cancelled",
        "what": "cancelled; the run stopped: interrupted by the user (Ctrl-C)",
    }  # fmt: skip
