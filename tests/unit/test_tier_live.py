"""The slow-tier copy of a held job (harness.emulation.iolive.tiers): script, comment, options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.emulation.iolive.staging import StagingError
from harness.emulation.iolive.tiers import add_tiers, sbatch_args, slow_tier_comment, slow_tier_script

SCRIPT = """#!/bin/sh
# This script was created by sbatch --wrap.

#BB_LUA pool=bb capacity=4800
#HARNESS_IO nodes=4 stage_in_mb=4800 stage_out_mb=4800 time_scale=10
exec sigsleep --phases compute:120,checkpoint:8000,compute:120,checkpoint:8000.5 --time-scale 10 --job-id 7
"""


def test_script_loses_its_bb_line_and_header_and_all_its_io_goes_to_the_pfs() -> None:
    # The 4,800 MB Slurm would have staged in are read from the PFS first, the 4,800 MB of
    # stage-out written to it last; the checkpoints go to the PFS in between.
    assert slow_tier_script(SCRIPT) == (
        "#HARNESS_IO nodes=4 stage_in_mb=4800 stage_out_mb=4800 time_scale=10\n"
        "exec sigsleep --phases io:pfs:4800.000000,compute:120,io:pfs:8000,compute:120,io:pfs:8000.5,"
        "io:pfs:4800.000000 --time-scale 10 --job-id 7"
    )


def test_lps_copy_reads_its_stage_in_and_writes_its_stage_out_each_only_when_there_is_one() -> None:
    script = SCRIPT.replace("stage_in_mb=4800 stage_out_mb=4800", "stage_in_mb=1200.5 stage_out_mb=0")
    assert slow_tier_script(script).splitlines()[1] == (
        "exec sigsleep --phases io:pfs:1200.500000,compute:120,io:pfs:8000,compute:120,io:pfs:8000.5"
        " --time-scale 10 --job-id 7"
    )
    script = SCRIPT.replace("stage_in_mb=4800 stage_out_mb=4800", "stage_in_mb=0 stage_out_mb=250")
    assert slow_tier_script(script).splitlines()[1] == (
        "exec sigsleep --phases compute:120,io:pfs:8000,compute:120,io:pfs:8000.5,io:pfs:250.000000"
        " --time-scale 10 --job-id 7"
    )


def test_lps_copy_of_a_script_with_a_bad_io_line_is_refused_naming_job_and_line() -> None:
    with pytest.raises(StagingError, match=r"job 7's script:5: stage_out_mb='x' is not a number"):
        slow_tier_script(SCRIPT.replace("stage_out_mb=4800", "stage_out_mb=x"), 7)


def test_script_without_phases_is_kept() -> None:
    assert slow_tier_script("#!/bin/sh\nexec sigsleep --runtime 5") == "exec sigsleep --runtime 5"


def test_comment_holds_no_bb_and_names_the_tier() -> None:
    comment = "trace_id=7 walltime=36.000000 bb_per_node=1200 run=r1"
    assert slow_tier_comment(comment) == "trace_id=7 walltime=36.000000 run=r1 bb_per_node=0 tier=lps"


def test_options_are_kept_held_without_the_bb_license() -> None:
    fields = {"JobName": "t7", "Partition": "batch", "NumNodes": "4-4", "TimeLimit": "00:02:00",
              "WorkDir": "/shared/jobs", "StdOut": "/dev/null", "Licenses": "bb:4800,pfsbw:72"}  # fmt: skip
    assert sbatch_args(fields, "trace_id=7") == [
        "--hold", "--job-name=t7", "--partition=batch", "--nodes=4", "--time=00:02:00",
        "--chdir=/shared/jobs", "--output=/dev/null", "--no-requeue", "--comment=trace_id=7",
        "--licenses=pfsbw:72",
    ]  # fmt: skip
    assert "--licenses" not in " ".join(sbatch_args({**fields, "Licenses": "(null)"}, "x"))


def test_agent_gives_a_tiered_policy_the_bb_request_and_the_comments_volumes() -> None:
    from harness.emulation.head.agent import _job_io
    from harness.policies.tiers import JobIo
    from harness.slurm.client import SlurmJob

    words = {"trace_id": "7", "walltime": "60", "bb_per_node": "1200", "in_mb": "300", "data_mb": "50.5"}
    job = SlurmJob(42, "PENDING", 4, "", words, "JobHeldUser", 0)
    assert _job_io(job) == JobIo(300.0, 0.0, 50.5, 4800)
    assert _job_io(SlurmJob(43, "PENDING", 2, "", {"in_mb": "x"}, "JobHeldUser", 0)) == JobIo(
        0.0, 0.0, 0.0, 0
    )


def test_replay_writes_the_volumes_the_agent_reads() -> None:
    from harness.emulation.head.io_requests import io_volume_words

    job = {
        "nodes": 4,
        "io_stage_in_mb": 1200.0,
        "io_stage_out_mb": 600.0,
        "io_phases": 3,
        "io_checkpoint_mb": 250.0,
    }
    # 2 checkpoints x 4 x 250; no io_time_scale column: 1
    assert io_volume_words(job) == " in_mb=4800.0 out_mb=2400.0 data_mb=2000.0 time_scale=1"  # exact floats
    assert io_volume_words({**job, "io_time_scale": 200.0}).endswith(" time_scale=200")
    assert io_volume_words({"nodes": 4}) == ""


def _platform_with_tiers():  # type: ignore[no-untyped-def]
    """The bundled platform with [machine.io.tiers] lps_mbps = 200, hps_ratio = 2, stage_ratio = 1.25."""
    import dataclasses

    from harness.platform import load_platform
    from harness.platform.bandwidths import bandwidths_from_dict

    io = bandwidths_from_dict({"tiers": {"lps_mbps": 200, "hps_ratio": 2, "stage_ratio": 1.25}})
    return dataclasses.replace(load_platform(), io=io)


def test_tier_rates_in_a_time_scale() -> None:
    from harness.model.timescale import TimeScale
    from harness.policies.tiers import TierRates

    # shrink 0.75: a Slurm second is 4 trace seconds, so 4 times the MB; the 1 s shortest run is 0.25 s
    assert TierRates(200.0, 400.0, 250.0).on_clock(TimeScale(0.75)) == TierRates(800.0, 1600.0, 1000.0, 0.25)


def test_tier_rates_of_a_platform() -> None:
    from harness.platform import load_platform
    from harness.policies.tiers import TierRates

    # R_lps 200 MB/s, R_hps = 2 x 200 = 400, R_stage = 1.25 x 200 = 250
    assert TierRates.of_platform(_platform_with_tiers()) == TierRates(200.0, 400.0, 250.0)
    assert TierRates.of_platform(load_platform()) == TierRates(1000.0, 15_000.0, 5000.0)


def test_agent_plans_sas_with_the_platforms_rates_as_the_simulator() -> None:
    from harness.emulation.head.agent import Agent
    from harness.model.commands import CommandResult
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.slurm.client import SlurmClient

    # One held job of 4 nodes, walltime 60 s, 6,000 MB of input, BB 1,500 MB per node, idle machine.
    # Lackner's defaults (1,000 / 15,000 / 5,000 MB/s): HPS = 6000/5000 + 60 - 6000/1000 + 6000/15000
    #   = 1.2 + 54.4 = 55.6 s < 60 s on LPS: HPS.
    # The platform's (200 / 400 / 250 MB/s): HPS = 6000/250 + 60 - 6000/200 + 6000/400 = 24 + 45 = 69 s
    #   > 60 s: LPS.
    line = "5|PENDING|4||trace_id=5 walltime=60 bb_per_node=1500 in_mb=6000|JobHeldUser|0\n"

    def slurm(cmd: list[str]) -> CommandResult:
        return CommandResult(0, line, "") if cmd[0] == "squeue" else CommandResult(1, "", "no")

    tiers = []
    for platform in (load_platform(), _platform_with_tiers()):
        agent = Agent(get_policy("sas"), platform, SlurmClient(runner=slurm))
        decision = agent.step()
        assert decision is not None and [s.job_id for s in decision.starts] == [5]
        tiers.append(decision.starts[0].tier)  # type: ignore[attr-defined]
    assert tiers == ["hps", "lps"]


def test_agent_plans_sas_in_shrunk_seconds_as_the_simulator_in_original_ones() -> None:
    from harness.emulation.head.agent import Agent
    from harness.model.commands import CommandResult
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.slurm.client import SlurmClient

    # KTH job 19156 at shrink 0.995 (time scale 200): 1 node, walltime 14 s = 0.07 s shrunk,
    # 8,582 MB in and out, BB 8,582 MB. In original seconds (the simulator): LPS 14 s; HPS
    # 2 x 8582 / 5000 = 3.4328 s of staging + max(14 - 17.164 + 1.1443, 1) = 1 s: 4.43 s: HPS.
    # Shrunk (rates x 200, shortest run 1 / 200 s): 0.017164 + 0.005 = 0.022164 s < 0.07 s: HPS.
    # Without the time scale the agent compared 0.07 s with 3.43 + 1 s and chose LPS.
    line = ("3|PENDING|1||trace_id=19156 walltime=0.070000 bb_per_node=8582 in_mb=8582 out_mb=8582 "
            "data_mb=0 time_scale=200|JobHeldUser|0\n")  # fmt: skip

    def slurm(cmd: list[str]) -> CommandResult:
        return CommandResult(0, line, "") if cmd[0] == "squeue" else CommandResult(1, "", "no")

    decision = Agent(get_policy("sas"), load_platform(), SlurmClient(runner=slurm)).step()
    assert decision is not None and [(s.job_id, s.tier) for s in decision.starts] == [(3, "hps")]  # type: ignore[attr-defined]
    line = line.replace(" time_scale=200", "")
    decision = Agent(get_policy("sas"), load_platform(), SlurmClient(runner=slurm)).step()
    assert decision is not None and [(s.job_id, s.tier) for s in decision.starts] == [(3, "lps")]  # type: ignore[attr-defined]


def test_results_say_which_tier_each_job_ran_on() -> None:
    # 1: BB job run as submitted (HPS); 2: BB job the agent submitted again as Slurm job 9 (LPS,
    # then holding no BB); 3: no BB request; 4: BB job never started
    results = pd.DataFrame({
        "job_id": [1, 2, 3, 4], "slurm_job_id": pd.array([5, 9, 7, 8], dtype="Int64"),
        "start": [1.0, 2.0, 3.0, np.nan], "bb_per_node_mb": [1000, 2000, 0, 500],
    })  # fmt: skip
    submissions = [{"job_id": j, "slurm_job_id": s} for j, s in ((1, 5), (2, 6), (3, 7), (4, 8))]
    out = add_tiers(results, submissions)
    assert out["tier"].tolist() == ["hps", "lps", "", ""]
    assert out["bb_per_node_mb"].tolist() == [1000, 0, 0, 500]
    assert results["bb_per_node_mb"].tolist() == [1000, 2000, 0, 500]  # the input is left as it was


def test_agent_draws_a_random_tier_by_the_trace_job_as_the_simulator() -> None:
    from harness.emulation.head.agent import Agent
    from harness.model.commands import CommandResult
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.policies.tiers import stable_uniform
    from harness.slurm.client import SlurmClient

    # Slurm ids 101-116 for trace jobs 1-16 (1 node, BB 100 MB each): the draw must be the trace job's
    lines = "".join(
        f"{100 + t}|PENDING|1||trace_id={t} walltime=60 bb_per_node=100 in_mb=10|JobHeldUser|0\n"
        for t in range(1, 17)
    )

    def slurm(cmd: list[str]) -> CommandResult:
        return CommandResult(0, lines, "") if cmd[0] == "squeue" else CommandResult(1, "", "no")

    agent = Agent(get_policy("sas-random-0.5", seed=3), load_platform(), SlurmClient(runner=slurm))
    decision = agent.step()
    assert decision is not None
    tiers = {s.job_id: s.tier for s in decision.starts}  # type: ignore[attr-defined]
    assert sorted(tiers) == list(range(101, 117))
    expected = {100 + t: "hps" if stable_uniform(3, t) < 0.5 else "lps" for t in range(1, 17)}
    assert tiers == expected
    assert expected != {100 + t: "hps" if stable_uniform(3, 100 + t) < 0.5 else "lps" for t in range(1, 17)}
