"""The commands that run on the head node beside slurmctld during a run: ``harness replay``
(submits the plan) and ``harness agent`` (the ordering agent); ``harness run`` starts both."""

from __future__ import annotations

import functools
import math
import sys
import time
from pathlib import Path

import click

from harness.cli.options import (
    NON_NEGATIVE_SECONDS,
    POSITIVE_SECONDS,
    WORKERS,
    HarnessCommand,
    NameType,
    platform_option,
    policy_option,
    policy_param_option,
    policy_seed_option,
    time_limit_option,
    user_errors,
)
from harness.cli.run import drift_option
from harness.slurm.client import SlurmCommandError


def check_ahead_by(ahead: bool, ahead_by: float | None) -> None:
    if ahead_by is not None and not (ahead and math.isfinite(ahead_by) and ahead_by > 0):
        raise click.UsageError(
            f"--ahead-by {ahead_by:g}: needs --submit-ahead and a positive number of seconds"
        )


@click.command(
    "replay",
    cls=HarnessCommand,
    examples=["harness replay /shared/runs/X/plan.parquet --run-dir /shared/runs/X --run-id X"],
)
@click.argument("plan", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Shared run directory: submissions, status and jobs' records go here; a STOP file stops.",
)
@click.option(
    "--run-id", type=NameType(), required=True, help="The run's id (names the run's files and jobs' records)."
)
@click.option(
    "--warmup",
    type=NON_NEGATIVE_SECONDS,
    default=2.0,
    show_default=True,
    help="Seconds (wall clock) between the start and the first submission instant t0.",
)
@drift_option
@click.option(
    "--bb-license",
    default="bb",
    show_default=True,
    help="Slurm license that stands for burst-buffer capacity (the platform's bb_license).",
)
@click.option("--partition", default="compute", show_default=True, help="Slurm partition of the jobs.")
@click.option(
    "--sigsleep",
    default="/usr/local/bin/sigsleep",
    show_default=True,
    help="Path of the dummy job binary on the nodes.",
)
@click.option(
    "--workers",
    type=WORKERS,
    default=None,
    help="Concurrent sbatch processes at most (1: strictly in plan order; default: 8).",
)
@click.option(
    "--resume", is_flag=True, help="Continue the replay in RUN_DIR (same t0; nothing submitted twice)."
)
@click.option(
    "--clock-page", "clock_page", type=click.Path(exists=True, dir_okay=False), default=None,
    help="Pace by the emulation's virtual clock (its page, harness.model.clock); jobs run on it too.",
)  # fmt: skip
@click.option(
    "--from-slurm-start", "from_slurm_start", is_flag=True,
    help="With --clock-page at a fixed speed-up: each job counts its runtime from Slurm's start, "
    "so the launch's real milliseconds, sped up, are not part of it (sigsleep --from-slurm-start).",
)  # fmt: skip
@click.option(
    "--submit-ahead", "ahead", is_flag=True,
    help="Submit each job at the previous submission instant with sbatch --begin at its own (whole) "
    "second, one at a time (the event clock: Slurm's passes of that second see it; default workers 1).",
)  # fmt: skip
@click.option(
    "--ahead-by", "ahead_by", type=float, default=None, metavar="SECONDS",
    help="With --submit-ahead: send each job this many clock seconds before its begin instead of at "
    "the previous instant (a fixed speed-up, where no driver waits for the replay).",
)  # fmt: skip
@click.option(
    "--site-requests", "site_requests", is_flag=True,
    help="Give each job the partition, CPUs, memory and GRES its plan has (a site's sacct history "
    "on the site's own machine: harness.emulation.head.site_requests).",
)  # fmt: skip
@click.option(
    "--site-users", "site_users", is_flag=True,
    help="Submit each job as its plan user with its account (sbatch --uid, run as root; the users "
    "and associations exist: harness.emulation.head.site_users).",
)  # fmt: skip
@click.option(
    "--no-bandwidth-license", "no_bandwidth_license", is_flag=True,
    help="Do not ask for the PFS bandwidth license of a job with a drain rate (the ordering agent "
    "schedules the bandwidth; slurm.conf then declares no such license).",
)  # fmt: skip
@user_errors(OSError, ValueError)
def replay_command(
    plan: Path,
    run_dir: Path,
    run_id: str,
    warmup: float,
    drift: float,
    bb_license: str,
    partition: str,
    sigsleep: str,
    workers: int | None,
    resume: bool,
    clock_page: str | None,
    from_slurm_start: bool,
    ahead: bool,
    ahead_by: float | None,
    site_requests: bool,
    site_users: bool,
    no_bandwidth_license: bool,
) -> None:
    """Submit PLAN's jobs at their wall-clock instants (run this next to slurmctld)."""
    if from_slurm_start and clock_page is None:
        raise click.UsageError("--from-slurm-start needs --clock-page (Slurm's start on the virtual clock)")
    check_ahead_by(ahead, ahead_by)
    from harness.emulation.head.replay import DEFAULT_WORKERS, ReplayError, ReplayOptions, replay_plan
    from harness.workload.plan import load_plan

    df, _ = load_plan(plan)
    opts = ReplayOptions(
        run_dir=run_dir,
        run_id=run_id,
        warmup=warmup,
        drift=drift,
        partition=partition,
        bb_license=bb_license,
        sigsleep=sigsleep,
        # submitted ahead, the jobs of one instant go in plan order: Slurm numbers (and, under
        # priority/basic, orders) them as the trace does, the same in every run
        workers=workers or (1 if ahead else DEFAULT_WORKERS),
        resume=resume,
        clock=clock_page,
        from_slurm_start=from_slurm_start,
        ahead=ahead,
        ahead_by=ahead_by,
        site_requests=site_requests,
        site_users=site_users,
        bandwidth_license=not no_bandwidth_license,
    )
    try:
        status = replay_plan(df, opts)
    except ReplayError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"replay {run_id}: submitted {status.submitted}, rejected {status.failed}, "
        f"max lag {status.max_lag * 1000:.1f} ms{', STOPPED' if status.stopped else ''}"
    )
    sys.exit(0 if status.done else 3)


@click.command(
    "agent",
    cls=HarnessCommand,
    renamed={"--seed": "--policy-seed"},
    examples=["harness agent -p plan-square-0 --run-dir /shared/runs/X", "harness agent --release-all"],
)
@policy_option(None, "A policy of `harness policies` (e.g. plan-square-0, backfill-1).")
@platform_option
@policy_seed_option
@policy_param_option
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write decisions.jsonl here; stop when a STOP file appears (default: run until Ctrl-C).",
)
@click.option(
    "--poll", type=POSITIVE_SECONDS, default=0.1, show_default=True, help="Seconds between looks at Slurm."
)
@click.option("--user", default="emu", show_default=True, help="Manage this user's jobs.")
@time_limit_option(0.4, "a live scheduler must answer promptly.")
@click.option(
    "--release-all", is_flag=True, help="Release every held job (hand the queue back to Slurm) and exit."
)
@click.option(
    "--clock-page", "clock_page", type=click.Path(exists=True, dir_okay=False), default=None,
    help="Decide on the emulation's virtual clock (its page); with --run-dir, say after each look when "
    "it began (agent.json), for the event clock.",
)  # fmt: skip
@user_errors(SlurmCommandError, ValueError)  # ValueError: e.g. io-easy on a platform without an I/O tree
def agent_command(
    policy: str | None,
    platform_file: str,
    policy_seed: int,
    run_dir: Path | None,
    poll: float,
    user: str,
    time_limit: float,
    release_all: bool,
    policy_param: tuple[str, ...],
    clock_page: str | None,
) -> None:
    """The ordering agent: apply a simulator policy inside the live Slurm (run beside slurmctld)."""
    from harness.emulation.head import agent as agent_mod
    from harness.emulation.head.wakeup import Wakeup
    from harness.model.clock import VirtualClock
    from harness.model.rundir import AGENT_STATUS, DECISIONS, STOP_FILE
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.policies.tunables import parse_assignments
    from harness.slurm.client import SlurmClient

    client = SlurmClient(user=user)
    if release_all:
        click.echo(f"released {agent_mod.release_all(client)} held job(s)")
        return
    if not policy:
        raise click.UsageError("--policy is required (or --release-all)")
    log = run_dir / DECISIONS if run_dir else None
    clock = VirtualClock(Path(clock_page)) if clock_page else None
    runner = agent_mod.Agent(
        get_policy(
            policy, seed=policy_seed, time_limit_s=time_limit or None, params=parse_assignments(policy_param)
        ),
        load_platform(platform_file),
        client,
        log_path=log,
        clock=clock.now if clock else time.time,
        in_step=clock.daemons_caught_up if clock else lambda: True,
        status_path=run_dir / AGENT_STATUS if clock_page and run_dir else None,
        origin=functools.partial(agent_mod.replay_t0, run_dir) if clock_page and run_dir else None,
        wakeup=Wakeup(run_dir) if run_dir else None,
    )
    stop_file = run_dir / STOP_FILE if run_dir else None
    runner.run(poll=poll, should_stop=lambda: bool(stop_file and stop_file.exists()))
    click.echo(f"agent {policy}: {runner.calls} decision(s)")
