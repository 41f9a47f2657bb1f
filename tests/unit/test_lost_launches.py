"""Lost batch launches after a revived slurmctld: which jobs are at risk, when Slurm can judge them."""

from __future__ import annotations

import pytest

from harness.model.commands import CommandResult
from harness.slurm.lost_launches import (
    RestartFacts,
    at_risk,
    decided_at,
    parse_config,
    parse_running,
    recheck_lost_launches,
)

CONFIG = """Configuration data as of 1795797400
AccountingStorageType   = (null)
BatchStartTimeout       = 10 sec
BOOT_TIME               = 1795797349
MessageTimeout          = 10 sec
"""


def test_the_config_gives_the_boot_and_the_window_of_both_timeouts() -> None:
    assert parse_config(CONFIG) == RestartFacts(1795797349.0, 20.0)


def test_a_config_without_boot_time_is_an_error_naming_the_key() -> None:
    with pytest.raises(ValueError, match="BOOT_TIME"):
        parse_config("MessageTimeout = 10 sec\nBatchStartTimeout = 10 sec\n")


def test_only_running_jobs_with_a_start_are_read() -> None:
    text = "88|RUNNING|1795797346\n89|PENDING|N/A\n90|RUNNING|N/A\nbad line\n91|RUNNING|1795797300\n"
    assert parse_running(text) == {88: 1795797346.0, 91: 1795797300.0}


def test_at_risk_are_the_jobs_started_within_window_and_margin_before_the_boot() -> None:
    facts = RestartFacts(boot_time=1000.0, window_s=20.0)
    running = {1: 977.0, 2: 978.0, 3: 997.0, 4: 1000.0, 5: 1001.0}
    # oldest judged-able start: 1000 - 20 - 2 = 978; later than the boot: launched by the new one
    assert at_risk(running, facts) == {2: 978.0, 3: 997.0, 4: 1000.0}
    assert decided_at({2: 978.0, 3: 997.0}, facts) == 997.0 + 20.0 + 2.0


class FakeSlurm:
    """Answers the three commands as Slurm would, and records them."""

    def __init__(self, squeue: str) -> None:
        self.squeue = squeue
        self.calls: list[str] = []

    def __call__(self, cmd: list[str], timeout: float | None = None) -> CommandResult:
        name = next(c for c in cmd if c in ("scontrol", "squeue"))
        words = " ".join(cmd[cmd.index(name) :])
        self.calls.append(words)
        if words == "scontrol show config":
            return CommandResult(0, CONFIG, "")
        if name == "squeue":
            return CommandResult(0, self.squeue, "")
        return CommandResult(0, "", "")


def test_no_job_at_risk_means_no_reconfigure() -> None:
    slurm = FakeSlurm("81|RUNNING|1795797300\n")
    assert recheck_lost_launches(slurm, lambda _m: None, sleep=lambda _s: None) == []
    assert "scontrol reconfigure" not in slurm.calls


def test_a_job_started_just_before_the_boot_makes_the_nodes_register_after_its_window() -> None:
    slurm = FakeSlurm("88|RUNNING|1795797346\n81|RUNNING|1795797300\n")
    said: list[str] = []
    slept: list[float] = []
    assert recheck_lost_launches(slurm, said.append, sleep=slept.append, now=lambda: 1795797350.0) == [88]
    assert slurm.calls[-2:] == ["scontrol reconfigure", "scontrol ping"]
    assert said and "1 job(s)" in said[0]
    assert slept == [1795797346.0 + 20.0 + 2.0 - 1795797350.0]  # 18 s: until its window is past


def test_on_a_virtual_clock_the_wait_is_the_window_in_real_seconds() -> None:
    # Slurm's instants are virtual (far from the host's now): the wait is the window, 20 s plus
    # the 2-s margin, passed at x50: 0.44 real s
    slurm = FakeSlurm("88|RUNNING|1795797346\n")
    slept: list[float] = []
    recheck_lost_launches(slurm, lambda _m: None, sleep=slept.append, now=lambda: 0.0, rate=50.0)
    assert slept == [pytest.approx(22.0 / 50.0)]
