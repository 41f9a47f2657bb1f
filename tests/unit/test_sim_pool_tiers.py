"""Storage tiers in Slurm's pool (harness.sim.pool_tiers): the twin of a live tier-choosing run.

The tiny platform of ``test_simulator_io``: one chassis, one BB node, every link (compute
card, BB node, PFS) 100 MB/s, so that 100 MB take 1 s. The job: 2 nodes, 25 MB of BB per
node, 50 MB per node staged in and out, two compute phases of 10 s with a checkpoint of
25 MB per node between them.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.analysis.metrics import summary
from harness.cli import main
from harness.emulation.head.io_requests import io_volume_words
from harness.policies.registry import get_policy
from harness.policies.tiers import JobIo, io_of_words
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from harness.sim.pool_tiers import pool_tier_setup
from harness.slurm.jobspec import parse_comment
from tests.unit.test_simulator_io import io_plan, job, tiny

STAGED = {"io_compute_s": 20.0, "io_phases": 2, "io_checkpoint_mb": 25.0, "io_stage_in_mb": 50.0,
          "io_stage_out_mb": 50.0}  # fmt: skip


def run(policy: str, rows: list[dict], compute_per_chassis: int = 2, capacity_mb: int = 100, **kw: object):
    platform = tiny(1, compute_per_chassis, capacity_mb)
    result = simulate(io_plan(rows), get_policy(policy), platform, model="io-aware", staging="pool", **kw)  # type: ignore[arg-type]
    assert check_schedule(result.jobs, platform) == []
    return result, result.jobs.set_index("job_id")


def test_an_lps_job_alone_reads_computes_checkpoints_and_writes_on_the_pfs() -> None:
    # No BB, no Slurm staging: it starts at 0 and, on its nodes, reads 2 x 50 MB from the
    # PFS (1 s), computes 10 s, writes its 2 x 25 MB checkpoint to the PFS (0.5 s), computes
    # 10 s, writes 2 x 50 MB (1 s): 1 + 10 + 0.5 + 10 + 1 = 22.5 s, all on its nodes.
    result, jobs = run("sas-lps", [job(1, **STAGED)])
    one = jobs.loc[1]
    assert (one["tier"], one["bb_per_node_mb"], one["start"], one["end"]) == ("lps", 0, 0.0, 22.5)
    assert (one["compute_s"], one["io_s"], one["io_bytes"]) == pytest.approx((20.0, 2.5, 250e6))
    assert one["checkpoint_s"] == 0.0 and one["dilation"] == 1.0 and one["status"] == "completed"
    assert one[["bb_start", "bb_end", "stage_in_s", "stage_out_s"]].isna().all()  # no Slurm staging
    figures = summary(result.jobs, tiny(1, 2, 100))
    assert (figures["makespan"], figures["util_bb"], figures["util_compute"]) == (22.5, 0.0, 1.0)
    assert result.link_bytes == {"bb01": 0.0, "pfs": pytest.approx(250e6)}


def test_an_hps_job_is_staged_by_the_pool() -> None:
    # The BB share held over [0, 22.5]: stage-in 100 MB through bb01 to the PFS [0, 1];
    # run [1, 21.5] (checkpoint 50 MB to bb01 in 0.5 s, drained during the second phase);
    # stage-out [21.5, 22.5].
    result, jobs = run("sas-hps", [job(1, **STAGED)])
    one = jobs.loc[1]
    assert (one["tier"], one["bb_per_node_mb"]) == ("hps", 25)
    assert (one["bb_start"], one["start"], one["end"], one["bb_end"]) == (0.0, 1.0, 21.5, 22.5)
    assert (one["stage_in_s"], one["checkpoint_s"], one["stage_out_s"]) == pytest.approx((1.0, 0.5, 1.0))
    assert result.link_bytes == {"bb01": pytest.approx(300e6), "pfs": pytest.approx(250e6)}


def test_sas_puts_a_job_on_lps_while_the_bb_is_held_and_both_share_the_pfs() -> None:
    # 4 nodes, 50 MB of BB: job 1 takes all of it (HPS, faster alone); job 2 would wait for
    # it on HPS, so SAS starts it on LPS at once. Both move 100 MB over the PFS at 0
    # (stage-in, read): 50 MB/s each, [0, 2]. Both compute [2, 12]; the checkpoints (to bb01,
    # to the PFS) share no link: [12, 12.5]; job 1's drain runs alone [12.5, 13]; both
    # compute [12.5, 22.5]; the stage-out and the write share the PFS again: [22.5, 24.5].
    # Alone each would take 22.5 s: dilation 24.5 / 22.5.
    _, jobs = run("sas", [job(1, **STAGED), job(2, **STAGED)], compute_per_chassis=4, capacity_mb=50)
    assert list(jobs["tier"]) == ["hps", "lps"] and list(jobs["bb_per_node_mb"]) == [25, 0]
    assert (jobs.loc[1, "start"], jobs.loc[1, "end"], jobs.loc[1, "bb_end"]) == pytest.approx(
        (2.0, 22.5, 24.5)
    )
    assert (jobs.loc[1, "stage_in_s"], jobs.loc[1, "stage_out_s"]) == pytest.approx((2.0, 2.0))
    assert (jobs.loc[2, "start"], jobs.loc[2, "end"], jobs.loc[2, "io_s"]) == pytest.approx((0.0, 24.5, 4.5))
    assert list(jobs["dilation"]) == pytest.approx([24.5 / 22.5] * 2)
    assert list(jobs["contention_free_s"]) == pytest.approx([22.5, 22.5])
    # job 1 holds the whole BB (2 x 25 MB) over the whole span [0, 24.5]; job 2 none
    assert summary(jobs.reset_index(), tiny(1, 4, 50))["util_bb"] == pytest.approx(1.0)
    # under sas-hps job 2 waits for job 1's BB (held to 22.5): staged in [22.5, 23.5]
    _, hps = run("sas-hps", [job(1, **STAGED), job(2, **STAGED)], compute_per_chassis=4, capacity_mb=50)
    assert (hps.loc[2, "bb_start"], hps.loc[2, "start"], hps.loc[2, "end"]) == pytest.approx(
        (22.5, 23.5, 44.0)
    )


def test_under_the_agent_an_lps_job_takes_its_nodes_at_the_decision_and_starts_on_slurms_pass() -> None:
    # Decided at 0.4 (the agent's 0.1 s poll), its nodes held from then; Slurm starts it on
    # its pass at 1, 0.2 later: run [1.2, 23.7], 0.8 s waiting for the pass.
    _, jobs = run("sas-lps", [job(1, submit=0.35, **STAGED)], staged_start="reserved", tick=1.0,
                  decision_tick=0.1, launch_delay=0.2)  # fmt: skip
    one = jobs.loc[1]
    assert (one["start"], one["end"], one["node_wait_s"]) == pytest.approx((1.2, 23.7, 0.8))
    assert one["dilation"] == pytest.approx(1.0)


def test_an_lps_job_killed_at_its_walltime_writes_nothing_after() -> None:
    # walltime 12: read [0, 1], compute [1, 11], checkpoint [11, 11.5], killed at 12.
    _, jobs = run("sas-lps", [job(1, walltime=12.0, **STAGED)])
    one = jobs.loc[1]
    assert (one["status"], one["end"], one["compute_s"]) == ("timeout", 12.0, pytest.approx(10.5))
    assert one["io_bytes"] == pytest.approx(150e6)


def test_the_policy_gets_the_io_the_live_agent_reads_from_the_replays_comment() -> None:
    plan = io_plan([job(1, **STAGED)])
    plan, policy = pool_tier_setup(plan, get_policy("sas"), tiny(1, 2, 100), seed=0)
    expected = JobIo(input_mb=100.0, output_mb=100.0, data_mb=50.0, storage_mb=50)
    assert policy.io == {1: expected}  # type: ignore[attr-defined]
    words = parse_comment("walltime=1000 bb_per_node=25" + io_volume_words(plan.iloc[0].to_dict()))
    assert io_of_words(words, 2 * 25) == expected


def test_simulate_command_runs_sas_in_the_pool() -> None:
    args = ["simulate", "--model", "io-aware", "--staging", "pool", "--policy", "sas", "--first-n", "30",
            "--json", "bundled"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert json.loads(result.output)["sas"]["jobs"] == 30
    refused = CliRunner().invoke(main, [*args[:4], "outside", *args[5:]])
    assert refused.exit_code != 0 and "drop --staging outside" in refused.output
