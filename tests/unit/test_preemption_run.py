"""--priority / --preempt on the emulation side: slurm.conf, the sbatch partition, the run's
checks, the suspension intervals from the jobs' own records, and the counts and figure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.analysis.preemption import plot_suspensions, running_spans, step_count, suspension_counts
from harness.emulation.collect.preemption import emulated_spans
from harness.emulation.head.replay import ReplayOptions, sbatch_command
from harness.emulation.run.experiment import RunError, with_priorities
from harness.emulation.run.specs import ReplaySpec, RunOptions, WorkloadSpec
from harness.platform import load_platform
from harness.slurm.config import SchedulerConfig, render_slurm_files

JOB = {"job_id": 7, "submit": 0.0, "runtime": 5.0, "walltime": 10.0, "nodes": 2, "bb_per_node_mb": 0}


def test_priority_tiers_without_preemption_render_two_exclusive_partitions() -> None:
    conf = render_slurm_files(load_platform(), SchedulerConfig(priority_tiers=True))["slurm.conf"]
    lines = conf.splitlines()
    assert not any(line.startswith("Preempt") for line in lines)
    assert [line for line in lines if line.startswith("PartitionName=")][:2] == [
        "PartitionName=compute Nodes=c[001-096] Default=YES MaxTime=INFINITE OverSubscribe=EXCLUSIVE "
        "PriorityTier=1 State=UP",
        "PartitionName=urgent Nodes=c[001-096] Default=NO MaxTime=INFINITE OverSubscribe=EXCLUSIVE "
        "PriorityTier=2 State=UP",
    ]


def test_a_high_priority_job_is_submitted_to_the_urgent_partition(tmp_path: Path) -> None:
    opts = ReplayOptions(run_dir=tmp_path, run_id="x")
    assert "--partition=compute" in sbatch_command(JOB, opts, 0.0)
    assert "--partition=compute" in sbatch_command({**JOB, "priority": 0}, opts, 0.0)
    assert "--partition=urgent" in sbatch_command({**JOB, "priority": 1}, opts, 0.0)


def test_the_run_configures_tiers_and_preemption_or_says_why_not() -> None:
    def sched(policy: str, priority: str, preempt: str) -> SchedulerConfig:
        opts = RunOptions(WorkloadSpec(priority=priority), replay=ReplaySpec(policy=policy, preempt=preempt))
        return with_priorities(SchedulerConfig(external_ordering=policy == "backfill-1"), opts)

    assert sched("slurm-backfill-1", "size:4", "suspend").preempt_suspend
    tiers = sched("slurm-backfill-1", "random:0.2", "none")
    assert tiers.priority_tiers and not tiers.preempt_suspend
    with pytest.raises(RunError, match="--preempt suspend needs high-priority jobs"):
        sched("slurm-backfill-1", "none", "suspend")
    with pytest.raises(RunError, match="Slurm's own scheduler"):
        sched("backfill-1", "size:4", "none")
    with pytest.raises(ValueError, match="unknown priority model 'size:'"):
        WorkloadSpec(priority="size:")
    with pytest.raises(ValueError, match="unknown preemption mode 'requeue'"):
        ReplaySpec(preempt="requeue")


def test_suspension_intervals_come_from_the_jobs_records_since_t0() -> None:
    records = [{"job_id": 2, "suspensions": [[105.0, 108.5]]}, {"job_id": 1, "suspensions": []},
               {"job_id": 3, "suspensions": [[102.0, 104.0], [106.0, 107.0]]}]  # fmt: skip
    spans = emulated_spans(records, t0=100.0)
    assert spans.values.tolist() == [[3, 2.0, 4.0], [2, 5.0, 8.5], [3, 6.0, 7.0]]


def test_counts_levels_and_running_intervals() -> None:
    spans = pd.DataFrame({"job_id": [1, 2, 1], "start": [2.0, 3.0, 8.0], "end": [5.0, 5.0, 9.0]})
    jobs = pd.DataFrame({"job_id": [1, 2, 3], "start": [0.0, 1.0, 2.0], "end": [12.0, 9.0, 5.0],
                         "nodes": [2, 1, 3], "priority": [0, 0, 1]})  # fmt: skip
    counts = suspension_counts(jobs, spans)
    assert counts == {"high_priority_jobs": 1, "suspensions": 3, "suspended_jobs": 2,
                      "suspended_s_total": 6.0, "suspended_s_mean": 2.0,  # 3 + 2 + 1
                      "max_suspended_at_once": 2}  # fmt: skip
    t, level = step_count(spans)
    assert t.tolist() == [2.0, 3.0, 5.0, 5.0, 8.0, 9.0] and level.tolist() == [1, 2, 1, 0, 1, 0]
    running = running_spans(jobs, spans)
    assert running[running["job_id"] == 1][["start", "end"]].values.tolist() == [[0, 2], [5, 8], [9, 12]]


def test_the_figure_is_written(tmp_path: Path) -> None:
    spans = pd.DataFrame({"job_id": [1], "start": [2.0], "end": [5.0]})
    jobs = pd.DataFrame({"job_id": [1, 2], "start": [0.0, 2.0], "end": [9.0, 5.0], "nodes": [2, 2],
                         "priority": [0, 1]})  # fmt: skip
    out = plot_suspensions(jobs, spans, 4, tmp_path / "s.png")
    assert out.stat().st_size > 1000


def test_simulate_runs_the_twin_and_names_bad_options(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from harness.cli import main

    run = CliRunner()
    args = ["simulate", "bundled", "--priority", "size:8",
            "--preempt", "suspend", "--json", "--output", str(tmp_path / "j.csv")]  # fmt: skip
    out = run.invoke(main, args)
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout)["backfill-1"]
    assert row["jobs"] == 200 and row["priority"] == "size:8"
    assert (row["high_priority_jobs"], row["suspensions"], row["suspended_jobs"]) == (50, 82, 28)
    assert (tmp_path / "j.suspensions.csv").exists() and (tmp_path / "j.suspended.png").exists()
    bad = run.invoke(main, ["simulate", "bundled", "--priority", "random:2"])
    assert bad.exit_code == 2 and "'--priority'" in bad.output
    assert "fraction: expected a finite number in [0, 1], got 2.0" in bad.output
    alone = run.invoke(main, ["simulate", "bundled", "--preempt", "suspend"])
    assert alone.exit_code == 2 and "--preempt suspend needs high-priority jobs" in alone.output
    other = run.invoke(main, ["simulate", "bundled", "-p", "fcfs", "--priority", "size:8"])
    assert other.exit_code == 2 and "policy backfill-1" in other.output
