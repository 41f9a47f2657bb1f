"""``harness run``: prepare a plan, replay it on the emulated Slurm, collect, measure, report.

The host side of an experiment. The replay itself runs on the head node (``harness
replay``); an :class:`Experiment` brings the cluster up, configures the policy, watches
progress through the shared directory and writes the run directory (its layout:
:mod:`harness.model.rundir`), one named step after the other (:mod:`harness.emulation.run.steps`).
Each completed step is recorded in ``steps.json``; a run started again on the same
directory with ``resume=True`` skips them.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from harness.cluster.base import ClusterBackend, ClusterError
from harness.emulation.head.watch import HeadProcessDied
from harness.emulation.run.io_tree import bound_to_tree
from harness.emulation.run.manifest import write_manifest
from harness.emulation.run.settings_record import write_settings_record
from harness.emulation.run.specs import ClusterSpec, RunOptions, options_from_dict, run_id_for
from harness.emulation.run.state import mark_process
from harness.emulation.run.steps import (
    STEPS,
    Prepared,
    Progress,
    RunContext,
    fit_to_plan,
    plugins_for,
)
from harness.model import rundir
from harness.platform import Machine, load_platform
from harness.policies.io_platform import NoIoTreeError
from harness.policies.registry import UnknownPolicyError, get_policy
from harness.slurm.config import ClockMode, SchedulerConfig
from harness.slurm.native import is_native, scheduler_for
from harness.slurm.settings import FIXED_RATE_COMPLETE_WAIT_REAL_S
from harness.workload.priority import parse_priority


class RunError(RuntimeError):
    pass


class RunToResume(RunError):
    """The head node's processes died mid-run: the run is incomplete, its jobs left in Slurm,
    and ``harness run --resume RUN_DIR`` takes it up."""


def scheduler_for_run(policy: str) -> SchedulerConfig:
    """Slurm-native policies configure slurmctld; the others run in the ordering agent."""
    if is_native(policy):
        return scheduler_for(policy)
    try:
        get_policy(policy)
    except UnknownPolicyError as exc:
        raise RunError(
            f"{exc}; or a Slurm-native one: slurm-fcfs, slurm-backfill-D, slurm-backfill-no-future-D"
        ) from None
    # sched/builtin only starts what the agent released, on the nodes it chose
    return SchedulerConfig(mode="builtin", external_ordering=True)


def check_io_tree(policy: str, machine: Machine) -> None:
    """Herbein's I/O-aware policies run live only on a platform that describes its I/O tree."""
    try:
        bound_to_tree(policy, machine)
    except NoIoTreeError as exc:
        raise RunError(str(exc)) from None


def clock_for(opts: RunOptions) -> ClockMode:
    """The clock of the run's Slurm; on the virtual clock the trace is replayed in its own
    times, unshrunk."""
    if not opts.replay.virtual:
        return "wall"
    flag = "--clock events" if opts.replay.events else "--speedup"
    if opts.workload.shrink != 0.0:
        raise RunError(f"{flag} replays the trace in its own time: give no --shrink (or --shrink 0)")
    if opts.cluster.backend != "docker":
        raise RunError(
            f"{flag} needs the local Docker cluster (--cluster docker): hosts deployed by Ansible "
            "have a clock each and no shared clock page (docs/virtual-time.md)"
        )
    if opts.replay.events and opts.replay.drift:
        raise RunError("--clock events: --drift corrects a wall-clock launch delay; it has no meaning here")
    return "virtual"


def complete_wait_for(opts: RunOptions) -> int:
    """slurm.conf's CompleteWait: set at a fixed speed-up of the virtual clock only (the event
    clock stands still while nodes are released, the wall clock releases them at x1): the real
    seconds a release may take, on the clock (300 s at x100)."""
    speedup = opts.replay.speedup
    return math.ceil(FIXED_RATE_COMPLETE_WAIT_REAL_S * speedup) if speedup is not None else 0


def with_priorities(sched: SchedulerConfig, opts: RunOptions) -> SchedulerConfig:
    """The urgent tier for a priority model; preemption by suspension on top with --preempt."""
    tiers, preempt = parse_priority(opts.workload.priority).enabled, opts.replay.preempt == "suspend"
    if preempt and not tiers:
        raise RunError("--preempt suspend needs high-priority jobs: give --priority random:F or size:N")
    if tiers and sched.external_ordering:
        raise RunError(
            f"--priority works with Slurm's own scheduler (slurm-fcfs, slurm-backfill-D), "
            f"not with the agent's policy {opts.replay.policy!r}"
        )
    return replace(sched, priority_tiers=tiers, preempt_suspend=preempt)


def with_settings(sched: SchedulerConfig, opts: RunOptions) -> SchedulerConfig:
    """An experiment cell's slurm.conf settings on top of the policy's (Slurm's own policies only)."""
    settings = opts.replay.slurm_settings
    if settings and sched.external_ordering:
        policy = opts.replay.policy
        raise RunError(
            f"slurm.conf settings are for Slurm's own policies (slurm-*), not the agent's {policy!r}"
        )
    return replace(sched, settings=tuple(settings))


def make_backend(spec: ClusterSpec) -> ClusterBackend:
    """``docker`` (local containers), ``local`` (Slurm on this host) or ``ssh://user@head[:port]``."""
    platform = load_platform(spec.platform)
    if spec.backend == "docker":
        from harness.cluster.containers.backend import DockerCluster

        return DockerCluster(name=spec.name, platform=platform)
    if spec.backend == "local":
        from harness.cluster.hosts.backend import local_cluster

        return local_cluster(platform=platform)
    if spec.backend.startswith("ssh://"):
        from harness.cluster.hosts.backend import ssh_cluster

        return ssh_cluster(spec.backend, platform=platform)
    raise RunError(f"unknown cluster '{spec.backend}': use docker, local or ssh://user@head[:port]")


class Experiment:
    """One replay of one plan under one policy, from plan to report, as named steps."""

    def __init__(
        self, opts: RunOptions, progress: Progress | None = None, prepared: Prepared | None = None
    ) -> None:
        """``prepared``: the plan of ``opts.workload`` when the caller has already prepared it."""
        self.opts = opts
        self.prepared = prepared
        self.say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.sched = scheduler_for_run(opts.replay.policy)
        for plugin in plugins_for(opts):
            self.sched = plugin.configure(self.sched)
        self.sched = replace(self.sched, clock=clock_for(opts), complete_wait_s=complete_wait_for(opts))
        self.sched = with_priorities(self.sched, opts)
        self.sched = with_settings(self.sched, opts)
        self.backend = make_backend(opts.cluster)
        if self.sched.external_ordering:  # an I/O-aware policy needs the platform's I/O tree
            check_io_tree(opts.replay.policy, self.backend.platform)

    def run_dir(self) -> tuple[Path, str]:
        """The run directory and the run's id (a repetition's id names its parent too)."""
        if self.opts.run_dir is None:
            path = self.opts.runs_dir / run_id_for(self.opts)
            return path, path.name
        path = self.opts.run_dir
        recorded = (
            rundir.done_steps(path).get("plan", {}).get("info", {}).get("run_id") if path.is_dir() else None
        )
        return path, self.opts.run_id or recorded or f"{path.parent.parent.name}-{path.name}"

    def execute(self, resume: bool = False) -> Path:
        """Run every step not yet recorded as done; returns the run directory.

        ``resume`` continues the run directory ``opts.run_dir`` after its last completed step.
        """
        run_dir, run_id = self.run_dir()
        run_dir.mkdir(parents=True, exist_ok=resume)
        mark_process(run_dir)
        started_at = datetime.now().astimezone().isoformat(timespec="seconds")
        ctx = RunContext(self.opts, run_dir, run_id, self.backend, self.sched, self.say, started_at,
                         None if resume else self.prepared, resumed=resume)  # fmt: skip
        try:
            run_steps(ctx, rundir.done_steps(run_dir) if resume else {})
            self.sched = ctx.sched  # as the plan made it (a site's priority with its users)
            if self.opts.replay.slurm_settings:
                write_settings_record(run_dir, self.backend.platform, self.sched)
        except BaseException:
            if {p.name for p in run_dir.iterdir()} <= {rundir.PROCESS}:  # e.g. an unreadable trace:
                (run_dir / rundir.PROCESS).unlink(missing_ok=True)  # leave no empty run directory
                run_dir.rmdir()
            raise
        return run_dir


def resume_options(run_dir: Path) -> RunOptions:
    """The options a run in ``run_dir`` was started with (recorded by its plan step)."""
    recorded = rundir.done_steps(run_dir).get("plan", {}).get("info", {}).get("options")
    if not isinstance(recorded, dict):
        raise RunError(f"{run_dir}: not a run directory that can be resumed (no plan step in {rundir.STEPS})")
    return replace(options_from_dict(recorded), run_dir=run_dir)


def run_steps(ctx: RunContext, done: dict[str, dict]) -> None:
    """Every step of :data:`STEPS` not in ``done``, each recorded in ``steps.json`` once over."""
    if "plan" in done:  # the plan step decided whose jobs they are: the same again
        fit_to_plan(ctx, ctx.plan()[0])
    for name, step in STEPS:
        if name in done:
            continue
        try:
            info = step(ctx)
        except ClusterError as exc:
            write_manifest(ctx, False, f"{name}: {exc}")
            raise
        except HeadProcessDied as exc:  # not a verdict: the step stays undone, to be resumed
            advice = (
                f"its jobs are left in Slurm; take the run up again with `harness run --resume {ctx.run_dir}`"
            )
            write_manifest(ctx, False, f"{name}: {exc.what}; {advice}")
            raise RunToResume(f"{exc}\n{advice}") from None
        rundir.record_step(ctx.run_dir, name, info)
