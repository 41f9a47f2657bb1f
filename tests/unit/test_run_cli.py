"""`harness run` option handling, without a cluster: bad choices fail clearly, early."""

from __future__ import annotations

from click.testing import CliRunner

from harness.cli import main
from harness.run import scheduler_for_run, simulator_twin


def test_unknown_cluster_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["run", "--cluster", "nowhere", "--repeat", "1", "--compare-sim"])
    assert result.exit_code != 0
    assert "unknown cluster 'nowhere'" in result.output


def test_unknown_policy_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["run", "--policy", "fastest-first"])
    assert result.exit_code != 0
    assert "unknown policy" in result.output and "slurm-fcfs" in result.output


def test_policy_kinds() -> None:
    assert scheduler_for_run("slurm-backfill-2").reserve_depth == 2
    agent = scheduler_for_run("plan-square-0")
    assert agent.external_ordering and agent.mode == "builtin"
    assert simulator_twin("slurm-fcfs") == "fcfs"
    assert simulator_twin("slurm-backfill-no-future-1") == "backfill-no-future-1"
    assert simulator_twin("plan-square-0") == "plan-square-0"
