"""The options of ``harness run`` for long runs: the estimate printed before anything starts,
``--dry-run``, the confirmation over a threshold (``--yes`` without a terminal), ``--detach``
and the interval of interim results (docs/run.md, "Long runs")."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harness.emulation.run.specs import RunOptions

if TYPE_CHECKING:
    from harness.emulation.run.steps import Prepared

F = TypeVar("F", bound=Callable[..., Any])


class DurationType(click.ParamType):
    """``90s``, ``45m``, ``2h``, ``1d`` (a bare number: seconds) -> seconds."""

    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from harness.emulation.run.estimate import parse_duration

        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


LONG_RUN_OPTIONS = ("dry_run", "yes", "confirm_over", "detach", "interim_every")


def long_run_options(func: F) -> F:
    options = [
        click.option("--dry-run", is_flag=True, help="Print what the run would do (jobs, span, expected "
                     "wall time) and exit."),
        click.option("--yes", "-y", is_flag=True, help="Start without asking, however long the run."),
        click.option("--confirm-over", type=DurationType(), default="2h", show_default=True,
                     envvar="HARNESS_CONFIRM_OVER",
                     help="Ask before starting a run expected to take longer (refuse without --yes when "
                          "not on a terminal)."),
        click.option("--detach", is_flag=True, help="Run in the background, beyond this shell; print the run "
                     "directory and return (see `harness runs`)."),
        click.option("--interim-every", type=DurationType(), default="15m", show_default=True,
                     help="Refresh interim/ (metrics and report of the jobs done so far) this often; "
                          "0: never."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def with_long_run_options(opts: RunOptions, long: dict[str, Any]) -> RunOptions:
    interim = float(long.get("interim_every", 900.0))
    return replace(opts, replay=replace(opts.replay, interim_every=interim))


def on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def gate(opts: RunOptions, repeat: int, long: dict[str, Any]) -> Prepared | None:
    """Print the estimate; the plan it prepared, or None when nothing is to run (``--dry-run``).
    Asks on a terminal over the threshold; raises :class:`click.ClickException` over it without
    a terminal or ``--yes``."""
    from harness.emulation.run.estimate import (
        Decision,
        decide,
        describe,
        estimate_plan,
        fixed_rate_note,
        policies_of,
        suggestions,
    )
    from harness.emulation.run.specs import plan_for
    from harness.model.durations import human_duration
    from harness.model.io_models import IO_AWARE
    from harness.model.timescale import TimeScale
    from harness.platform import load_platform

    platform = load_platform(opts.cluster.platform)
    prepared = plan_for(opts.workload, platform)
    plan = prepared[0]
    cluster = opts.cluster.backend + (f" ({opts.cluster.name})" if opts.cluster.backend == "docker" else "")
    policies = policies_of(opts.replay.policy)
    est = estimate_plan(plan, TimeScale(opts.workload.shrink), opts.replay.warmup, cluster, policies, repeat,
                        trace=opts.workload.source.name, speedup=opts.replay.speedup or 1.0,
                        events=opts.replay.events, live_io=opts.workload.model == IO_AWARE)  # fmt: skip
    note = fixed_rate_note(opts.replay.speedup, platform.node_count)
    block = describe(est) + (f"\n{note}" if note else "")
    if long.get("dry_run"):
        click.echo(block)
        return None
    click.echo(block, err=True)
    limit = float(long.get("confirm_over", 7200.0))
    decision = decide(est.wall_s, limit, bool(long.get("yes")), on_terminal())
    if decision is Decision.PROCEED:
        return prepared
    shorter = suggestions(est, plan, limit)
    advice = "\n".join([f"Over {human_duration(limit)} (--confirm-over). Shorter runs:",
                        *(f"  {line}" for line in shorter)]) if shorter else ""  # fmt: skip
    if decision is Decision.REFUSE:
        raise click.ClickException(
            f"this run is expected to take at least {human_duration(est.wall_s)}; not on a terminal, so "
            f"not starting it without --yes.\n{advice}\nOr start it detached: --detach --yes"
        )
    click.echo(advice, err=True)
    if not click.confirm(f"Start a run of at least {human_duration(est.wall_s)}?", default=False, err=True):
        raise click.ClickException("not started")
    return prepared


def launch(opts: RunOptions, repeat: int, long: dict[str, Any]) -> list[Path]:
    """After the estimate (:func:`gate`): start the run detached, or run each policy in turn
    (``--repeat`` times each); the run directories made here (none when detached or a dry run)."""
    from harness.emulation.run.estimate import policies_of
    from harness.emulation.run.experiment import Experiment
    from harness.emulation.run.repetitions import run_repetitions

    prepared = gate(opts, repeat, long)
    if prepared is None:
        return []
    policies = policies_of(opts.replay.policy)
    if long["detach"]:
        from harness.emulation.run.detach import start_detached

        if len(policies) > 1:
            raise click.UsageError("--detach runs one policy: start one detached run per policy")
        path = start_detached(opts, repeat)
        click.echo(f"detached; follow with `harness runs watch {path}`", err=True)
        click.echo(str(path))
        return []
    run_dirs = []
    for one in policies:  # several policies: one run after the other
        opts = replace(opts, replay=replace(opts.replay, policy=one))
        # one plan for every policy; repetitions prepare their own (each its shuffle)
        one_run = (
            run_repetitions(opts, repeat) if repeat > 1 else Experiment(opts, prepared=prepared).execute()
        )
        run_dirs.append(one_run)
    return run_dirs
