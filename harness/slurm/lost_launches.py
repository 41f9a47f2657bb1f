"""Batch launches lost with a dead slurmctld, handed back to Slurm to requeue.

slurmctld allocates a job, saves it RUNNING, then sends the batch launch to the node from an
agent thread. Killed in between (``docker stop``/``restart`` of its container, a host reboot),
it comes back believing the job runs while no node ever got it: the nodes stay allocated until
the job's time limit, and the job ends TIMEOUT without having run. Slurm finds such a job when
its batch node registers: a batch job the node does not report and that started more than
``BatchStartTimeout + MessageTimeout`` before is requeued ("missing from batch node",
``job_mgr.c``). A restarted slurmctld asks every node to register at once (``ping_nodes.c``,
``restart_flag``), too soon for a job launched in the last such seconds before the death; the
next registration of that node comes only every ~20 pings. So, after a revival, the jobs
started that close to the controller's boot are the ones at risk: once their window has
passed, ``scontrol reconfigure`` makes every node register again and Slurm decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.model.commands import CommandResult

Exec = Callable[..., CommandResult]
MARGIN_S = 2.0  # past the window: Slurm compares whole seconds


@dataclass(frozen=True)
class RestartFacts:
    boot_time: float  # slurmctld's start (BOOT_TIME)
    window_s: float  # BatchStartTimeout + MessageTimeout: a younger job is not judged missing


def parse_config(text: str) -> RestartFacts:
    """BOOT_TIME (as epoch seconds: SLURM_TIME_FORMAT=%s), BatchStartTimeout and MessageTimeout
    from ``scontrol show config``."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    try:
        boot = float(values["BOOT_TIME"])
        window = sum(float(values[k].split()[0]) for k in ("BatchStartTimeout", "MessageTimeout"))
    except (KeyError, ValueError, IndexError) as exc:
        raise ValueError(f"scontrol show config: no usable {exc} in its output") from exc
    return RestartFacts(boot, window)


def parse_running(text: str) -> dict[int, float]:
    """Slurm job id -> start (epoch) of the RUNNING jobs in ``squeue --format=%i|%T|%S``."""
    running: dict[int, float] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[1] == "RUNNING" and parts[0].isdigit():
            try:
                running[int(parts[0])] = float(parts[2])
            except ValueError:
                continue
    return running


def at_risk(running: dict[int, float], facts: RestartFacts) -> dict[int, float]:
    """The running jobs started in the window before slurmctld's boot: the node registrations
    at the boot cannot tell whether their launch reached a node."""
    oldest = facts.boot_time - facts.window_s - MARGIN_S
    return {job: start for job, start in running.items() if oldest <= start <= facts.boot_time}


def decided_at(risky: dict[int, float], facts: RestartFacts) -> float:
    """When a registration judges every job at risk: its start plus the window, past."""
    return max(risky.values()) + facts.window_s + MARGIN_S


def recheck_lost_launches(
    run: Exec,
    say: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
    rate: float = 1.0,
) -> list[int]:
    """After a revived slurmctld: when jobs were started just before its boot, wait out their
    window and have every node register again (Slurm requeues a lost launch). The jobs at risk.
    ``rate``: Slurm's seconds per real second (a virtual clock's speed-up)."""
    config = run(["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show", "config"], timeout=30)
    queue = run(["env", "SLURM_TIME_FORMAT=%s", "squeue", "--noheader", "--states=RUNNING",
                 "--format=%i|%T|%S"], timeout=30)  # fmt: skip
    if not (config.ok and queue.ok):
        say("cannot tell whether a launch was lost with the controller (scontrol/squeue failed)")
        return []
    try:
        facts = parse_config(config.stdout)
    except ValueError as exc:
        say(f"cannot tell whether a launch was lost with the controller ({exc})")
        return []
    risky = at_risk(parse_running(queue.stdout), facts)
    if not risky:
        return []
    # capped: on a virtual clock Slurm's times are not the host's, and its window passes `rate`
    # times as fast
    wait = min(decided_at(risky, facts) - now(), (facts.window_s + MARGIN_S) / max(rate, 1.0))
    say(f"{len(risky)} job(s) started just before slurmctld stopped: making the nodes register "
        f"in {max(wait, 0):.0f} s, so that Slurm requeues a launch that never reached its node")  # fmt: skip
    if wait > 0:
        sleep(wait)
    res = run(["scontrol", "reconfigure"], timeout=120)
    if not res.ok:
        say(f"scontrol reconfigure failed: {(res.stderr or res.stdout).strip()}")
    _wait_answering(run, sleep)
    return sorted(risky)


def _wait_answering(run: Exec, sleep: Callable[[float], None], timeout_s: float = 60.0) -> None:
    """slurmctld restarts itself on a reconfigure: back when ``scontrol ping`` answers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not run(["scontrol", "ping"], timeout=15).ok:
        sleep(1.0)
