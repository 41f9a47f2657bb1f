"""``harness run`` (host side) and ``harness replay`` (head-node side)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from harness.cli.longrun import LONG_RUN_OPTIONS, launch, long_run_options, with_long_run_options
from harness.cli.options import (
    NON_NEGATIVE_SECONDS,
    POSITIVE_SECONDS,
    REPEAT,
    TIME_LIMIT,
    platform_option,
    policy_option,
    seed_option,
    shrink_option,
    user_errors,
)
from harness.cli.workload_options import selection_kwargs, selection_options, trace_kwargs, trace_options
from harness.slurm.client import SlurmCommandError


@click.command("run")
@click.argument("trace", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@shrink_option(0.99)
@policy_option("slurm-backfill-1", "slurm-fcfs, slurm-backfill-D, slurm-backfill-no-future-D, or a policy of "
               "`harness policies` (applied by the ordering agent).")  # fmt: skip
@click.option(
    "--cluster",
    "cluster",
    default="docker",
    show_default=True,
    help="docker (local containers), local (Slurm on this host) or ssh://user@head[:port].",
)
@trace_options
@selection_options
@click.option("--name", "cluster_name", default="bbemu", show_default=True, help="Docker cluster name.")
@click.option("--shuffle", is_flag=True, help="Shuffle submission order, keeping the instants.")
@click.option(
    "--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True
)
@click.option(
    "--warmup", type=NON_NEGATIVE_SECONDS, default=2.0, show_default=True, help="Seconds before t0."
)
@click.option(
    "--drift",
    type=NON_NEGATIVE_SECONDS,
    default=0.0,
    show_default=True,
    help="Seconds added per job to submission instants (Barberato's drift correction).",
)
@click.option(
    "--timeout",
    type=POSITIVE_SECONDS,
    default=None,
    help="Give up this many seconds after the last submission.",
)
@click.option("--keep-jobs", is_flag=True, help="On interruption, leave submitted jobs in Slurm.")
@click.option("-q", "--quiet", is_flag=True, help="A progress line every 30 s instead of a live display.")
@click.option(
    "--repeat", type=REPEAT, default=1, show_default=True,
    help="Run N times (with --shuffle: N submission orders); AVE/SSD/RSD/C95 per metric.",
)  # fmt: skip
@click.option(
    "--compare-sim", is_flag=True, help="Also simulate the plan with the same policy and report the gap."
)
@click.option(
    "--resume", "resume_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
    help="Take up the run in RUN_DIR after its last completed step (e.g. the replay was killed): "
    "its recorded options are used, jobs already submitted are not submitted again.",
)  # fmt: skip
@click.option(
    "--model", type=click.Choice(["alloc-only", "io-aware"]), default="alloc-only", show_default=True,
    help="io-aware: jobs stage their data in and out through Slurm's burst_buffer/lua (docs/io-live.md).",
)  # fmt: skip
@long_run_options
def run_command(
    trace: Path | None,
    shrink: float,
    policy: str,
    cluster: str,
    platform_file: str,
    cluster_name: str,
    shuffle: bool,
    runs_dir: Path,
    warmup: float,
    drift: float,
    timeout: float | None,
    keep_jobs: bool,
    quiet: bool,
    repeat: int,
    compare_sim: bool,
    resume_dir: Path | None,
    model: str,
    **workload_opts: Any,
) -> None:
    """Replay TRACE (default: the bundled KTH slice) on the emulated Slurm; write a run directory.

    The run directory's path is the last line printed.
    """
    from harness.cluster.base import ClusterError
    from harness.emulation.run import Experiment, RunError, resume_options
    from harness.emulation.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec

    long = {name: workload_opts.pop(name) for name in LONG_RUN_OPTIONS}
    prepare = trace_kwargs(workload_opts)
    seed = prepare.pop("seed")
    selection = selection_kwargs(workload_opts)
    opts = RunOptions(
        workload=WorkloadSpec(trace=trace, shrink=shrink, seed=seed, shuffle=shuffle, prepare=prepare,
                              model=model, **selection),
        cluster=ClusterSpec(backend=cluster, name=cluster_name, platform=platform_file),
        replay=ReplaySpec(policy=policy, warmup=warmup, drift=drift, timeout=timeout, keep_jobs=keep_jobs,
                          compare_sim=compare_sim),
        runs_dir=runs_dir, quiet=quiet or bool(os.environ.get("CI")),
    )  # fmt: skip
    opts = with_long_run_options(opts, long)
    try:
        if resume_dir is not None:  # confirmed when it started
            click.echo(str(Experiment(resume_options(resume_dir)).execute(resume=True)))
            return
        launch(opts, repeat, long)
    except (RunError, ClusterError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@click.command("replay")
@click.argument("plan", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--run-id", required=True)
@click.option("--warmup", type=NON_NEGATIVE_SECONDS, default=2.0, show_default=True)
@click.option("--drift", type=NON_NEGATIVE_SECONDS, default=0.0, show_default=True)
@click.option("--bb-license", default="bb", show_default=True)
@click.option("--partition", default="compute", show_default=True)
@click.option("--sigsleep", default="/usr/local/bin/sigsleep", show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Concurrent sbatch processes at most (1: strictly in plan order). [default: ReplayOptions']",
)
@click.option(
    "--resume", is_flag=True, help="Continue the replay in RUN_DIR (same t0; nothing submitted twice)."
)
@user_errors(OSError)
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
) -> None:
    """Submit PLAN's jobs at their wall-clock instants (run this next to slurmctld)."""
    from harness.emulation.replay import DEFAULT_WORKERS, ReplayError, ReplayOptions, replay_plan
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
        workers=workers or DEFAULT_WORKERS,
        resume=resume,
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


@click.command("agent")
@policy_option(None, "A policy of `harness policies` (e.g. plan-square-0, backfill-1).")
@platform_option
@seed_option(0, "Seed of randomised policies.")
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write decisions.jsonl here; stop when a STOP file appears.",
)
@click.option(
    "--poll", type=POSITIVE_SECONDS, default=0.1, show_default=True, help="Seconds between looks at Slurm."
)
@click.option("--user", default="emu", show_default=True, help="Manage this user's jobs.")
@click.option(
    "--time-limit",
    type=TIME_LIMIT,
    default=0.4,
    show_default=True,
    help="Wall-clock limit of one plan search: a live scheduler must answer promptly.",
)
@click.option(
    "--release-all", is_flag=True, help="Release every held job (hand the queue back to Slurm) and exit."
)
@user_errors(SlurmCommandError)
def agent_command(
    policy: str | None,
    platform_file: str,
    seed: int,
    run_dir: Path | None,
    poll: float,
    user: str,
    time_limit: float,
    release_all: bool,
) -> None:
    """The ordering agent: apply a simulator policy inside the live Slurm (run beside slurmctld)."""
    from harness.emulation import agent as agent_mod
    from harness.model.rundir import DECISIONS, STOP_FILE
    from harness.platform import load_platform
    from harness.policies.registry import get_policy
    from harness.slurm.client import SlurmClient

    client = SlurmClient(user=user)
    if release_all:
        click.echo(f"released {agent_mod.release_all(client)} held job(s)")
        return
    if not policy:
        raise click.UsageError("--policy is required (or --release-all)")
    log = run_dir / DECISIONS if run_dir else None
    runner = agent_mod.Agent(
        get_policy(policy, seed=seed, time_limit_s=time_limit or None),
        load_platform(platform_file),
        client,
        log_path=log,
    )
    stop_file = run_dir / STOP_FILE if run_dir else None
    runner.run(poll=poll, should_stop=lambda: bool(stop_file and stop_file.exists()))
    click.echo(f"agent {policy}: {runner.calls} decision(s)")
