"""``harness run --slurm KEY=VALUE``: one slurm.conf setting for one run, checked as an
experiment file's ``[slurm]``, rendered over the run's own and recorded in its directory."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import harness.cli.run as run_cli
from harness.cli import main
from harness.emulation.run.settings_record import write_settings_record
from harness.emulation.run.specs import options_from_dict
from harness.model import rundir
from harness.platform import load_platform
from harness.slurm.conf_settings import SettingError, parse_assignment
from harness.slurm.native import scheduler_for


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CompleteWait=120", ("CompleteWait", 120)),
        (" CompleteWait = 0 ", ("CompleteWait", 0)),
        ("SchedulerParameters.bf_continue=true", ("SchedulerParameters.bf_continue", True)),
        ("SchedulerParameters.bf_continue=False", ("SchedulerParameters.bf_continue", False)),
        ("Partition.MaxTime=2-00:00:00", ("Partition.MaxTime", "2-00:00:00")),
        ("Partition.MaxTime=90", ("Partition.MaxTime", 90)),
        ("Partition.MaxNodes=unlimited", ("Partition.MaxNodes", "UNLIMITED")),
        ("PriorityType=priority/multifactor", ("PriorityType", "priority/multifactor")),
        ("SchedulerParameters.sched_interval=-1", ("SchedulerParameters.sched_interval", -1)),
    ],
)
def test_a_setting_from_the_command_line_is_typed_as_the_experiment_file_would_give_it(
    text: str, expected: tuple[str, Any]
) -> None:
    assert parse_assignment(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CompleteWait", "give KEY=VALUE"),
        ("=5", "give KEY=VALUE"),
        ("CompleteWait=", "give KEY=VALUE"),
        ("CompleteWiat=5", "did you mean CompleteWait?"),
        ("CompleteWait=65536", "CompleteWait=65536: CompleteWait takes an integer in 0..65535 (seconds)"),
        ("CompleteWait=soon", "CompleteWait takes an integer in 0..65535"),
        ("SchedulerParameters.bf_continue=yes", "bf_continue takes true or false"),
        ("Partition.MaxTime=soon", "MaxTime takes minutes >= 0 or a Slurm time"),
    ],
)
def test_a_bad_setting_names_the_key_and_what_slurm_takes(text: str, message: str) -> None:
    with pytest.raises(SettingError) as err:
        parse_assignment(text)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--slurm", "CompleteWait=soon"], "CompleteWait takes an integer in 0..65535"),
        (["--slurm", "CompleteWait=5", "--slurm", "CompleteWait=6"], "CompleteWait given twice"),
        (["-p", "backfill-1", "--slurm", "CompleteWait=5"], "'backfill-1' runs in the ordering agent"),
        (["-p", "slurm-fcfs", "--slurm", "SchedulerParameters.bf_window=10"], "only sched/backfill reads it"),
        (["--slurm", "PriorityWeightAge=10"], "set PriorityType"),
    ],
)
def test_run_refuses_a_bad_slurm_setting_in_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["run", *args, "--dry-run"])
    assert result.exit_code == 2 and message in result.output and "'--slurm'" in result.output, result.output
    assert "Traceback" not in result.output


def test_the_settings_reach_the_run_in_the_order_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(run_cli, "launch", lambda opts, repeat, long: seen.append(opts) or [])
    args = ["run", "--speedup", "100", "--slurm", "SchedulerParameters.bf_continue=true",
            "--slurm", "CompleteWait=120", "-o", str(tmp_path / "runs")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert seen[0].replay.slurm_settings == (("SchedulerParameters.bf_continue", True), ("CompleteWait", 120))
    assert seen[0].as_dict()["replay"]["slurm_settings"] == seen[0].replay.slurm_settings  # for --resume
    recorded = json.loads(json.dumps(seen[0].as_dict()))  # as the plan step records the options
    assert options_from_dict(recorded).replay.slurm_settings == seen[0].replay.slurm_settings


def test_the_run_records_its_settings_and_the_lines_they_change(tmp_path: Path) -> None:
    """At x100 the harness sets CompleteWait=300; the run's own 120 replaces that line, and
    the record names it against the policy's rendering."""
    platform = load_platform()
    base = replace(scheduler_for("slurm-backfill-1"), clock="virtual", complete_wait_s=300)
    write_settings_record(tmp_path, platform, replace(base, settings=(("CompleteWait", 120),)))
    record = json.loads((tmp_path / rundir.SETTINGS_RECORD).read_text())
    assert record == {"settings": {"CompleteWait": 120}, "baseline": "policy",
                      "slurm_conf_diff": ["-CompleteWait=300", "+CompleteWait=120"]}  # fmt: skip
    assert (tmp_path / rundir.SETTINGS_DIFF).read_text() == "-CompleteWait=300\n+CompleteWait=120\n"
