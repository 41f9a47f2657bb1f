"""Options shared by every command (harness.cli.options): one base for --period everywhere."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import COMMANDS, main
from harness.workload.plan import load_plan


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_simulate_and_prepare_select_the_same_jobs_for_period_1_of_4(tmp_path) -> None:
    plan_file = tmp_path / "p1.parquet"
    prepared = invoke("workload", "prepare", "bundled", "-o", str(plan_file), "--period", "1/4")
    assert prepared.exit_code == 0, prepared.output
    jobs_file = tmp_path / "jobs.csv"
    simulated = invoke("simulate", "bundled", "-p", "fcfs", "--period", "1/4", "-o", str(jobs_file))
    assert simulated.exit_code == 0, simulated.output
    plan, manifest = load_plan(plan_file)
    assert manifest["selection"]["period"] == [0, 4]  # stored 0-based, as Python indexes
    simulated_ids = sorted(pd.read_csv(jobs_file)["job_id"])
    assert simulated_ids == sorted(plan["job_id"]) and len(simulated_ids) > 0


PERIOD_ERRORS = [("0/16", "period I must be in 1..K, counted from 1"), ("17/16", "the last 16/16"),
                 ("a/b", "expected I/K")]  # fmt: skip


@pytest.mark.parametrize("command", [("simulate", "bundled", "-p", "fcfs"),
                                     ("workload", "prepare", "bundled", "-o", "x.parquet")])  # fmt: skip
@pytest.mark.parametrize(("period", "message"), PERIOD_ERRORS)
def test_period_outside_1_to_k_is_a_usage_error(command: tuple[str, ...], period: str, message: str) -> None:
    result = invoke(*command, "--period", period)
    assert result.exit_code == 2
    assert "Invalid value for '--period'" in result.stderr and message in result.stderr


def test_every_command_of_the_table_loads() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for name in COMMANDS:
        assert main.get_command(None, name) is not None  # type: ignore[arg-type]
        assert f"  {name} " in result.output
    assert main.get_command(None, "nope") is None  # type: ignore[arg-type]
