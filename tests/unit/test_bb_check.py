"""Slurm's burst-buffer view beside the harness's staging records, on output recorded from the
real Slurm 24.11 (tests/data/bb_lua: burst_buffer/lua, slurmdbd): one 2-node job staging 6,000 MB
in (4.8 s at 1,250 MB/s) and 4,000 MB out (3.2 s), running 3 s. Recorded with
``scontrol show job --json`` polled every 0.5 s: BurstBufferResources/staging-in,
BurstBufferStageIn/staging-in, staged-in, RUNNING/running, COMPLETED+STAGE_OUT/staging-out,
COMPLETED/complete."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.emulation.collect.bb_check import parse_bb_states, staging_check
from harness.emulation.iolive.staging_results import add_staging
from harness.model.jsonio import parse_jsonl
from harness.slurm.sacct import parse_sacct

DATA = Path(__file__).parents[1] / "data" / "bb_lua"
T0 = 1795472260.0
ELIGIBLE, START, END = 1795472270.0, 1795472276.0, 1795472279.0


@pytest.fixture
def recorded() -> tuple[pd.DataFrame, dict[int, dict], dict[int, dict]]:
    slurm = parse_sacct((DATA / "sacct.json").read_text())
    bb = parse_bb_states((DATA / "scontrol_show_job.json").read_text(), {1})
    staging = parse_jsonl((DATA / "staging.jsonl").read_text())
    results = add_staging(
        pd.DataFrame({"job_id": [7], "slurm_job_id": [1], "nodes": [2], "bb_per_node_mb": [2000]}),
        staging,
        T0,
    )
    return results, slurm, bb


def test_sacct_has_the_times_but_no_burst_buffer_field(recorded) -> None:
    _, slurm, _ = recorded
    rec = slurm[1]
    assert (rec["eligible"], rec["start"], rec["end"]) == (ELIGIBLE, START, END)
    assert rec["state"] == "COMPLETED" and rec["reason"] == "BurstBufferStageIn"
    assert rec["licenses"] == ""  # the pool is the plugin's, not a license
    raw = json.loads((DATA / "sacct.json").read_text())["jobs"][0]
    assert not [key for key in raw if "burst" in key]


def test_scontrol_keeps_the_request_and_the_final_state(recorded) -> None:
    _, _, bb = recorded
    assert bb == {
        1: {
            "burst_buffer": "#BB_LUA pool=bb capacity=4000",
            "burst_buffer_state": "complete",
            "job_state": ["COMPLETED"],
            "state_reason": "None",
        }
    }
    assert parse_bb_states((DATA / "scontrol_show_job.json").read_text(), {2}) == {}
    assert parse_bb_states("not json", {1}) == {}


def test_recorded_staging_agrees_with_slurm(recorded) -> None:
    results, slurm, bb = recorded
    # staging.jsonl: in 1795472271.108415 + 4.801435 s, out from 1795472280.468825
    assert results.loc[0, "stage_in_begin"] == pytest.approx(11.108415, abs=1e-6)
    check = staging_check(results, slurm, T0, bb)
    assert check["ok"] and check["disagreements"] == []
    assert (check["compared_in"], check["compared_out"]) == (1, 1)
    # Slurm started the job 0.09 s after the transfer ended (276 - 275.90985) ...
    assert check["max_stage_in_to_start_s"] == pytest.approx(0.09015, abs=1e-5)
    assert check["min_stage_in_to_start_s"] == check["max_stage_in_to_start_s"]
    # ... and the stage-out began 1.47 s after the end of the run (280.468825 - 279)
    assert check["max_end_to_stage_out_s"] == pytest.approx(1.468825, abs=1e-5)
    assert check["slurm_bb_states"] == {"complete": 1}


def test_staging_outside_slurms_times_is_a_disagreement(recorded) -> None:
    results, slurm, bb = recorded
    early_start = {1: {**slurm[1], "start": START - 3}}  # transfer ends 2.91 s after Slurm's start
    found = staging_check(results, early_start, T0)["disagreements"]
    assert found == [{"job_id": 7, "stage": "in", "begin": 1795472271.108, "end": 1795472275.91,
                      "slurm_eligible": ELIGIBLE, "slurm_start": START - 3}]  # fmt: skip
    late_eligible = {1: {**slurm[1], "eligible": 1795472273.0}}  # 1.89 s after the stage-in began
    assert staging_check(results, late_eligible, T0)["disagreements"][0]["stage"] == "in"
    late_end = {1: {**slurm[1], "end": 1795472282.0}}  # the stage-out began 1.53 s before it
    check = staging_check(results, late_end, T0)
    assert check["disagreements"] == [{"job_id": 7, "stage": "out", "begin": 1795472280.469,
                                       "slurm_end": 1795472282.0}]  # fmt: skip
    assert not check["ok"] and "slurm_bb_states" not in check
    no_request = {1: {**bb[1], "burst_buffer": ""}}
    assert staging_check(results, slurm, T0, no_request)["disagreements"] == [
        {"job_id": 7, "stage": "request", "plan_mb": 4000, "slurm_burst_buffer": ""}
    ]
    other = {1: {**bb[1], "burst_buffer": "#BB_LUA pool=bb capacity=40000"}}
    assert staging_check(results, slurm, T0, other)["disagreements"][0]["plan_mb"] == 4000


def test_within_a_second_of_slurms_stamps_is_agreement(recorded) -> None:
    results, slurm, _ = recorded
    # Slurm's whole-second start may read up to 1 s before the transfer's end, plus the tolerance
    edge = {1: {**slurm[1], "start": START - 1.9, "eligible": 1795472272.0, "end": 1795472281.0}}
    assert staging_check(results, edge, T0)["ok"]


def test_jobs_without_staging_or_slurm_record_are_not_compared(recorded) -> None:
    results, slurm, _ = recorded
    unstaged = pd.DataFrame({"job_id": [8], "slurm_job_id": [1], "nodes": [1], "bb_per_node_mb": [0]}).pipe(
        add_staging, [], T0
    )
    check = staging_check(unstaged, slurm, T0)
    assert (check["compared_in"], check["compared_out"], check["ok"]) == (0, 0, True)
    assert check["max_stage_in_to_start_s"] is None
    assert staging_check(results, {}, T0)["compared_in"] == 0
