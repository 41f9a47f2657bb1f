"""``harness shrink-limit``: how far can time be shrunk before the metrics move?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from harness.cli.options import (
    NON_NEGATIVE_SECONDS,
    POSITIVE_NUMBER,
    REPEAT,
    HarnessCommand,
    NameType,
    policy_option,
    user_errors,
)
from harness.cli.output_options import figure_format_option, force_option
from harness.cli.workload_options import selection_kwargs, selection_options, trace_kwargs, trace_options


def _shrink_list(ctx: click.Context, param: click.Parameter, value: str) -> list[float]:
    from harness.experiments.shrink_limit import check_shrinks

    try:
        return check_shrinks([float(x) for x in value.split(",") if x.strip()])
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix("--shrinks: "), ctx, param) from None


@click.command(
    "shrink-limit",
    cls=HarnessCommand,
    renamed={"--out": "--output"},
    examples=[
        "harness shrink-limit --against sim --first-n 100",
        "harness shrink-limit -p slurm-backfill-1 --shrinks 0.9,0.99 --repeat 2 kth.swf",
    ],
)
@click.argument("trace", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@policy_option("slurm-backfill-1", "The run's policy (as `harness run --policy`).")
@click.option(
    "--tolerance",
    type=POSITIVE_NUMBER,
    default=0.05,
    show_default=True,
    help="Largest relative gap of a metric's mean from the lowest shrink's.",
)
@click.option("--repeat", type=REPEAT, default=3, show_default=True, help="Repetitions per shrink.")
@click.option(
    "--shrinks",
    default="0.5,0.8,0.9,0.95,0.98,0.99,0.995",
    show_default=True,
    callback=_shrink_list,
    help="Comma-separated; the lowest is the reference.",
)
@click.option(
    "--against",
    type=click.Choice(["emu", "sim"]),
    default="emu",
    show_default=True,
    help="emu: replays on Slurm; sim: the tick-aware simulator twin (no Slurm).",
)
@click.option(
    "--tick",
    type=NON_NEGATIVE_SECONDS,
    default=1.0,
    show_default=True,
    help="--against sim: emulated seconds between Slurm's scheduling passes.",
)
@click.option(
    "--launch-delay",
    type=NON_NEGATIVE_SECONDS,
    default=0.0,
    show_default=True,
    help="--against sim: emulated seconds from a start decision to the job's start.",
)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output directory (default: <runs-dir>/shrink-limit-<policy>-<against>).",
)
@click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Directory the runs' own run directories are created in.",
)
@click.option(
    "--cluster",
    "cluster",
    default="docker",
    show_default=True,
    help="--against emu: docker, local or ssh://user@head[:port].",
)
@click.option(
    "--name",
    "cluster_name",
    type=NameType(),
    default="bbemu",
    show_default=True,
    help="Docker cluster name (containers NAME-ctld, NAME-nodesK).",
)
@click.option(
    "--timeout",
    type=POSITIVE_NUMBER,
    default=None,
    help="Per run: give up this many seconds after the last submission.",
)
@force_option
@trace_options
@selection_options
@figure_format_option()
@user_errors()
def shrink_limit_command(
    trace: Path | None,
    policy: str,
    tolerance: float,
    repeat: int,
    shrinks: list[float],
    against: str,
    tick: float,
    launch_delay: float,
    out_dir: Path | None,
    runs_dir: Path,
    cluster: str,
    cluster_name: str,
    timeout: float | None,
    platform_file: str,
    figure_formats: tuple[str, ...],
    force: bool,
    **workload_opts: Any,
) -> None:
    """Replay TRACE (default: the bundled KTH slice) at increasing shrink and report the largest
    shrink whose mean wait, mean BSLD, utilisation and makespan stay within the tolerance."""
    from harness.experiments.shrink_limit import find_limit, sweep
    from harness.experiments.shrink_report import text_table, write_limit
    from harness.model.outputs import RUNS_FOLDER, SHRINK_LIMIT_FOLDER, check_output_folder

    target = out_dir or runs_dir / f"shrink-limit-{policy}-{against}"
    check_output_folder(target, SHRINK_LIMIT_FOLDER, force=force)  # before the sweep, not after it
    check_output_folder(runs_dir, RUNS_FOLDER, force=force)
    if against == "sim":
        runner = _sim_runner(trace, policy, platform_file, tick, launch_delay, workload_opts)
    else:
        runner = _emu_runner(
            trace, policy, platform_file, (cluster, cluster_name), runs_dir, timeout, workload_opts
        )
    points = sweep(runner, shrinks, repeat, progress=lambda line: click.echo(line, err=True))
    result = find_limit(points, tolerance)
    title = f"{policy} ({'simulator, tick ' + format(tick, 'g') + ' s' if against == 'sim' else 'emulation'})"
    paths = write_limit(result, target, title, figure_formats)
    click.echo(text_table(result))
    click.echo(f"table, JSON and plot in {paths[0].parent}")


def _sim_runner(
    trace: Path | None, policy: str, platform_file: str, tick: float, delay: float, opts: dict[str, Any]
) -> Any:
    from harness.experiments.shrink_limit import simulator_runner
    from harness.platform import load_platform
    from harness.workload.plan import bundled_slice_path

    prepare = {**trace_kwargs(opts), **selection_kwargs(opts)}
    platform = load_platform(platform_file)
    return simulator_runner(trace or bundled_slice_path(), policy, platform, prepare, tick, delay)


def _emu_runner(
    trace: Path | None,
    policy: str,
    platform_file: str,
    where: tuple[str, str],
    runs_dir: Path,
    timeout: float | None,
    opts: dict[str, Any],
) -> Any:
    from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
    from harness.experiments.shrink_limit import emulation_runner

    prepare = trace_kwargs(opts)
    seed = prepare.pop("seed")
    run = RunOptions(
        workload=WorkloadSpec(trace=trace, seed=seed, prepare=prepare, **selection_kwargs(opts)),
        cluster=ClusterSpec(backend=where[0], name=where[1], platform=platform_file),
        replay=ReplaySpec(policy=policy, timeout=timeout),
        runs_dir=runs_dir,
        quiet=True,
    )
    return emulation_runner(run)
