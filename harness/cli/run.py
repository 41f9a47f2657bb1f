"""``harness run`` (host side) and ``harness replay`` (head-node side)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from harness.cli.longrun import LONG_RUN_OPTIONS, launch, long_run_options, with_long_run_options
from harness.cli.options import (
    NON_NEGATIVE_SECONDS,
    POSITIVE_SECONDS,
    REPEAT,
    SPEEDUP,
    HarnessCommand,
    NameType,
    json_option,
    output_option,
    policy_option,
    policy_param_option,
    policy_seed_option,
    priority_options,
    quiet_option,
    shrink_option,
    verbose_option,
)
from harness.cli.output_options import figure_format_option, force_option
from harness.cli.sizing import size_options, sized_platform_file
from harness.cli.workload_options import selection_kwargs, selection_options, trace_kwargs, trace_options
from harness.model.clock import MAX_SPEEDUP
from harness.model.exitcodes import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    INTERRUPTED,
    Terminated,
    stop_signal_reason,
)
from harness.model.io_models import ALLOC_ONLY, MODELS

drift_option = click.option(
    "--drift", type=NON_NEGATIVE_SECONDS, default=0.0, show_default=True,
    help="Seconds added per job to submission instants (Barberato's drift correction).",
)  # fmt: skip

RUN_POLICY_HELP = (
    "slurm-fcfs, slurm-backfill-D or slurm-backfill-no-future-D (Slurm's own scheduler, D the "
    "reservation depth), or any policy of `harness policies` (applied by the ordering agent)."
)


@click.command(
    "run",
    cls=HarnessCommand,
    renamed={"--seed": "--bb-seed", "--runs-dir": "--output"},
    examples=[
        "harness run --shrink 0.99 -p slurm-backfill-1         # the bundled KTH slice, ~11 min",
        "harness run --first-n 50 -p plan-square-0 kth.swf --json",
    ],
)
@click.argument("trace", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@shrink_option(0.99)
@click.option(
    "--speedup", type=SPEEDUP, default=None,
    help="Instead of --shrink: run Slurm, the jobs and the replay on a shared virtual clock S times "
    "faster than the wall clock, in the trace's own times (minute limits and Slurm's passes stay "
    "exact; the clock stands still while Slurm releases an ended job's nodes; "
    f"at most x{MAX_SPEEDUP:g}, the highest measured to keep Slurm healthy; docs/virtual-time.md).",
)  # fmt: skip
@click.option(
    "--clock", type=click.Choice(["auto", "wall", "events"]), default="auto", show_default=True,
    help="events: Slurm, the jobs and the replay on a virtual clock that stands still while Slurm works "
    "and jumps to the next submission or job end when the cluster is quiescent (docs/virtual-time.md). "
    "wall: the wall clock with --shrink. auto: events, unless the run needs the wall clock "
    "(--shrink, --priority, --preempt, --drift, a cluster other than local Docker, "
    "or one already up on the wall clock). With --speedup the virtual clock goes at a fixed rate.",
)  # fmt: skip
@policy_option("slurm-backfill-1", RUN_POLICY_HELP)
@click.option(
    "--cluster",
    "cluster",
    default="docker",
    show_default=True,
    help="docker (local containers), local (Slurm on this host) or ssh://user@head[:port].",
)
@trace_options
@selection_options
@click.option("--name", "cluster_name", type=NameType(), default="bbemu", show_default=True,
              help="Docker cluster name (containers NAME-ctld, NAME-nodesK).")  # fmt: skip
@policy_seed_option
@click.option("--shuffle", is_flag=True, help="Shuffle submission order, keeping the instants.")
@output_option("Directory the run directory is created in.", default=Path("runs"), file_okay=False)
@force_option
@click.option("--warmup", type=NON_NEGATIVE_SECONDS, default=2.0, show_default=True,
              help="Seconds (wall clock) between the replay's start and the first submission.")  # fmt: skip
@drift_option
@click.option(
    "--timeout",
    type=POSITIVE_SECONDS,
    default=None,
    help="Give up this many seconds (wall clock) after the last submission (default: never).",
)
@click.option("--keep-jobs", is_flag=True, help="On interruption, leave submitted jobs in Slurm.")
@quiet_option("A progress line every 30 s instead of a live display.")
@verbose_option("A progress line every second even without a terminal.")
@json_option
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
    "--model", type=click.Choice(MODELS), default=ALLOC_ONLY, show_default=True,
    help="io-aware: jobs stage their data in and out through Slurm's burst_buffer/lua (docs/io-live.md).",
)  # fmt: skip
@click.option(
    "--as-emu", "as_emu", is_flag=True,
    help="Submit every job as the emulation's one user, emu, even when the plan says who ran it "
    "(a plan from from-sacct is otherwise replayed as its users and accounts: docs/site-whatif.md).",
)  # fmt: skip
@click.option(
    "--slurm", "slurm_settings", multiple=True, metavar="KEY=VALUE",
    help="A slurm.conf setting for Slurm's own policies, as an experiment file's [slurm] "
    "(CompleteWait=120, SchedulerParameters.bf_window=2880, Partition.MaxTime=2-00:00:00); "
    "repeat for more. The run records them and the lines they change (docs/site-whatif.md).",
)  # fmt: skip
@priority_options
@long_run_options
@size_options
@policy_param_option
@figure_format_option()
def run_command(trace: Path | None, **kw: Any) -> None:
    """Replay TRACE (default: the bundled KTH slice) on the emulated Slurm; write a run directory.

    Ends with a summary block (stderr) and the run directory's path as the last line (stdout);
    with --json, one JSON object instead. Exit status: 0 complete, 1 error, 3 incomplete run,
    130 interrupted by Ctrl-C (docs/cli.md).
    """
    from harness.cluster.base import ClusterError
    from harness.emulation.run.experiment import Experiment, RunError, RunToResume, resume_options
    from harness.model.outputs import RUNS_FOLDER, check_output_folder

    check_output_folder(kw["output"], RUNS_FOLDER, force=kw.pop("force"))

    long = {name: kw.pop(name) for name in LONG_RUN_OPTIONS}
    opts = with_long_run_options(_run_options(trace, kw), long)
    previous = signal.signal(signal.SIGTERM, _terminate)
    # Ctrl-C (and `harness runs stop`, which sends SIGINT) stop the run cleanly even when it
    # was started with SIGINT ignored (a background job of a non-interactive shell)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if kw["resume_dir"] is not None:  # confirmed when it started
            opts = resume_options(kw["resume_dir"])
            run_dirs = [Experiment(opts).execute(resume=True)]
        else:
            run_dirs = launch(opts, kw["repeat"], long)
    except RunToResume as exc:  # not an error of the command: an incomplete run, to be taken up
        click.echo(f"INCOMPLETE run: {exc}", err=True)
        sys.exit(EXIT_INCOMPLETE)
    except (RunError, ClusterError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt as exc:
        click.echo(f"\n{exc or INTERRUPTED}: stopped", err=True)
        sys.exit(EXIT_INCOMPLETE if isinstance(exc, Terminated) else EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    if run_dirs:  # none after --dry-run or --detach
        sys.exit(max(_finish(run_dir, opts.cluster, kw["as_json"]) for run_dir in run_dirs))


def _run_options(trace: Path | None, kw: dict[str, Any]) -> Any:
    from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec

    kw["clock"] = _clock(kw)
    prepare = trace_kwargs(kw)
    seed = prepare.pop("seed")
    return RunOptions(
        workload=WorkloadSpec(trace=trace, shrink=_shrink(kw), seed=seed, shuffle=kw["shuffle"],
                              prepare=prepare, model=kw["model"], priority=kw["priority"],
                              **selection_kwargs(kw)),
        cluster=ClusterSpec(backend=kw["cluster"], name=kw["cluster_name"],
                            platform=sized_platform_file(kw["platform_file"], kw)),
        replay=ReplaySpec(policy=kw["policy"], policy_seed=kw["policy_seed"], warmup=kw["warmup"],
                          drift=kw["drift"], timeout=kw["timeout"], keep_jobs=kw["keep_jobs"],
                          compare_sim=kw["compare_sim"], preempt=kw["preempt"], speedup=kw["speedup"],
                          events=kw["clock"] == "events", policy_params=_policy_params(kw),
                          slurm_settings=_slurm_settings(kw), as_emu=kw["as_emu"]),
        runs_dir=kw["output"], quiet=kw["quiet"] or bool(os.environ.get("CI")), verbose=kw["verbose"],
        figure_formats=kw["figure_formats"],
    )  # fmt: skip


def _policy_params(kw: dict[str, Any]) -> tuple[str, ...]:
    """``--policy-param``, checked against the policies of the run (the ordering agent's)."""
    from harness.emulation.run.estimate import policies_of
    from harness.policies.registry import params_for
    from harness.policies.tunables import PolicyParamError, parse_assignments
    from harness.slurm.native import is_native

    pairs = tuple(kw.pop("policy_param"))
    if not pairs:
        return ()
    names = policies_of(kw["policy"])
    hint = "'--policy-param'"
    if any(is_native(name) for name in names):
        raise click.BadParameter("Slurm's own schedulers (slurm-*) take no policy tunables", param_hint=hint)
    try:
        params_for(list(names), parse_assignments(pairs))
    except PolicyParamError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None
    return pairs


def _slurm_settings(kw: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``--slurm``, each checked as an experiment's ``[slurm]`` key, against the run's policies."""
    from harness.emulation.run.estimate import policies_of
    from harness.slurm.conf_settings import SettingError, parse_assignment, policies_problem

    hint, settings = "'--slurm'", {}
    for text in kw.pop("slurm_settings"):
        try:
            key, value = parse_assignment(text)
        except SettingError as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from None
        if key in settings:
            raise click.BadParameter(f"{key} given twice", param_hint=hint)
        settings[key] = value
    if not settings:
        return ()
    problem = policies_problem({key: (value,) for key, value in settings.items()}, policies_of(kw["policy"]))
    if problem:
        raise click.BadParameter(problem, param_hint=hint)
    return tuple(settings.items())


def _clock(kw: dict[str, Any]) -> str:
    """``--clock auto``: the event clock, exact and the fastest on the bundled slice (3 min 40 s
    against 11-12 min at shrink 0.99 or x100: docs/virtual-time.md), unless the run needs the
    wall clock (or gives --speedup: the virtual clock at a fixed rate)."""
    if kw["clock"] != "auto":
        return kw["clock"]
    reason = _wall_clock_reason(kw)
    if reason and reason.startswith("cluster"):
        click.echo(f"clock: wall ({reason}; `harness cluster down --name {kw['cluster_name']}` "
                   "for the event clock)", err=True)  # fmt: skip
    return "wall" if reason is not None else "events"


def _wall_clock_reason(kw: dict[str, Any]) -> str | None:
    """Why the run stays off the event clock (None: nothing keeps it off)."""
    from harness.cluster.containers.clock import running_clock

    source = click.get_current_context().get_parameter_source
    wanted = {
        "--shrink": source("shrink") is not ParameterSource.DEFAULT,
        "--speedup": kw["speedup"] is not None,
        "--preempt": kw["preempt"] != "none",
        "--priority": str(kw["priority"]) != "none",
        "--drift": bool(kw["drift"]),
        "--cluster": kw["cluster"] != "docker",
        "--resume": kw.get("resume_dir") is not None,
    }
    given = next((flag for flag, on in wanted.items() if on), None)
    if given is not None:
        return given
    if running_clock(kw["cluster_name"]) == "wall":
        return f"cluster '{kw['cluster_name']}' is up on the wall clock"
    return None


def _shrink(kw: dict[str, Any]) -> float:
    """``--shrink``, or 0 on the virtual clock (it runs the trace in its own time)."""
    virtual = (
        "--speedup" if kw["speedup"] is not None else "--clock events" if kw["clock"] == "events" else ""
    )
    if not virtual:
        return float(kw["shrink"])
    given = click.get_current_context().get_parameter_source("shrink") is not ParameterSource.DEFAULT
    if given and kw["shrink"] != 0.0:
        raise click.UsageError(
            f"{virtual} runs the trace in its own times: give {virtual} or --shrink, not both"
        )
    if kw["speedup"] is not None and kw["clock"] == "events":
        raise click.UsageError("--clock events moves the clock by events: it takes no --speedup")
    return 0.0


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated(stop_signal_reason(signum))


def _finish(run_dir: Path, cluster: Any, as_json: bool) -> int:
    """Print the summary block and the run directory (or the JSON); the exit status."""
    from harness.emulation.run.summary import format_run_summary, run_summary

    state = {"backend": cluster.backend, "name": cluster.name, "up": _still_up(cluster)}
    summary = run_summary(run_dir, state)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(format_run_summary(summary), err=True)
        click.echo(str(run_dir))
    return int(summary["exit_code"])


def _still_up(cluster: Any) -> bool | None:
    if cluster.backend != "docker":
        return None
    from harness.cluster.containers.backend import DockerCluster

    try:
        return bool(DockerCluster(name=cluster.name).containers())
    except Exception:  # no Docker engine to ask: say nothing about it
        return None
