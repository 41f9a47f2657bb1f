"""``harness experiment run | report``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harness.cli.options import MINUTES, WORKERS, HarnessGroup, IntegerType, output_option, quiet_option
from harness.cli.output_options import force_option, metrics_option, report_format_option
from harness.experiments.keys import SpecError
from harness.model.outputs import EXPERIMENT_DIR, check_output_folder

if TYPE_CHECKING:
    from harness.experiments.emulate_slots import Slot
    from harness.experiments.executors import Executor
    from harness.experiments.spec import ExperimentSpec

T = TypeVar("T")

EXECUTORS = ("local", "slurm")
DEFAULT_ROOT = Path("runs") / "experiments"


@click.group(
    "experiment",
    cls=HarnessGroup,
    examples=[
        "harness experiment run experiments/thesis.toml -j 2",
        "harness experiment report runs/experiments/thesis",
    ],
)
def experiment() -> None:
    """Grids of simulations or emulations from an experiment file (see docs/experiments.md)."""


@experiment.command(
    "run",
    renamed={"--out": "--output"},
    examples=[
        "harness experiment run exp.toml --dry-run",
        "harness experiment run exp.toml -j 2 -o runs/exp",
    ],
)
@click.argument("spec_path", metavar="EXP.toml", type=click.Path(path_type=Path))
@output_option(
    f"Experiment directory (default: {DEFAULT_ROOT}/<name>); running again resumes it.", file_okay=False
)
@force_option
@click.option(
    "-j",
    "--jobs",
    type=WORKERS,
    default=1,
    show_default=True,
    help="Cells run at once (local: worker processes; slurm: array tasks at once). Emulate mode: N Docker "
    "clusters side by side, <cluster_name> and <cluster_name>-1 ... on shifted ports, refused when the host "
    "cannot hold them.",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="local",
    show_default=True,
    help="Run cells in local processes or as jobs of the Slurm cluster this machine submits to.",
)
@click.option("--partition", default=None, help="Slurm partition of the cells' jobs (slurm executor).")
@click.option(
    "--cell-time",
    type=MINUTES,
    default=60,
    show_default=True,
    help="Time limit of one cell in minutes; a Slurm task gets it times --cells-per-task (slurm executor).",
)
@click.option(
    "--cells-per-task",
    type=IntegerType(1, 100_000),
    default=1,
    show_default=True,
    help="Cells one Slurm array task runs in turn, paying Python's imports once (slurm executor).",
)
@click.option(
    "--slurm-option",
    "slurm_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Another sbatch option for the cells' jobs, e.g. account=proj (repeatable).",
)
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="Write the report when every cell has finished.",
)
@report_format_option
@click.option("--dry-run", is_flag=True, help="Only show the grid and what is left to run.")
@quiet_option("No progress messages: only the experiment directory, and errors.")
def run_command(
    spec_path: Path,
    output: Path | None,
    jobs: int,
    executor: str,
    partition: str | None,
    cell_time: int,
    cells_per_task: int,
    slurm_options: tuple[str, ...],
    report: bool,
    report_formats: tuple[str, ...],
    dry_run: bool,
    quiet: bool,
    force: bool,
) -> None:
    """Run the cells of EXP.toml that have not run yet; the last line is the experiment directory."""
    from harness.experiments.grid import check_periods, describe, expand
    from harness.experiments.runner import run_experiment
    from harness.experiments.spec import load_spec

    spec = _or_fail(load_spec, spec_path)
    _or_fail(check_periods, spec)
    exp_dir = check_output_folder(output or DEFAULT_ROOT / spec.name, EXPERIMENT_DIR, force=force)
    if dry_run:
        cells = _or_fail(expand, spec)
        left = _cells_left(spec, exp_dir)
        click.echo(f"{describe(spec, cells)}; {len(cells) - left} done, {left} to run in {exp_dir}")
        return
    from harness.experiments.emulate_cell import check_executor, sigterm_stops_the_run
    from harness.experiments.emulate_slots import build_image_once, left_up_line
    from harness.experiments.executors import slotted_executor

    _or_fail(check_executor, spec.mode, executor)  # emulated cells replay on this machine's clusters
    slurm = SlurmSettings(partition, cell_time, cells_per_task, _parse_options(slurm_options))
    slots = _emulate_slots(spec, exp_dir, jobs)
    say = _quiet if quiet else _to_stderr
    _or_fail(build_image_once, slots, say)
    make = slotted_executor(slots) if slots else _executor_factory(executor, jobs, slurm)
    with sigterm_stops_the_run():  # as Ctrl-C: the running cells stop their replays and cancel their jobs
        summary = _or_fail(run_experiment, spec, exp_dir, make, say=say, executor_name=executor)
    ran = summary.finished or summary.failed or summary.interrupted
    if ran and spec.emulate is not None and spec.emulate.cluster == "docker":
        say(left_up_line(slots))
    if summary.interrupted:
        raise SystemExit(130)
    if report and summary.complete:
        from harness.experiments.report import write_experiment_report
        from harness.experiments.report_options import ReportOptions

        _or_fail(write_experiment_report, exp_dir, ReportOptions.from_formats(report_formats))
    click.echo(str(exp_dir))
    if summary.failed:
        raise click.ClickException(f"{summary.failed} cell(s) failed (see {exp_dir}/failed.json); run again")


@experiment.command(
    "report",
    examples=[
        "harness experiment report runs/experiments/thesis",
        "harness experiment report runs/experiments/offsets --over offset --metrics mean_wait,mean_bsld "
        "--format md,csv,latex,pdf",
        "harness experiment report runs/experiments/site-bf-sweep --rank mean_wait,mean_bsld",
    ],
)
@click.argument("exp_dir", metavar="DIR", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--over",
    metavar="AXIS",
    default=None,
    help="Pool the cells over this axis of the grid (e.g. period, offset, bb_seed) and the repetitions: "
    "AVE, SSD, RSD and C95 per metric across its values (Barberato's Table 4.8).",
)
@metrics_option("Metrics of the tables and plots, a comma list of metric names (default: the file's).")
@metrics_option(
    "Rank the settings combinations (groups of cells differing only by repetition, e.g. a [slurm] "
    "sweep) by these metrics, with 95 % intervals over the repetitions and each one's slurm.conf diff.",
    name="rank",
)
@report_format_option
def report_command(
    exp_dir: Path,
    over: str | None,
    metrics: tuple[str, ...] | None,
    rank: tuple[str, ...] | None,
    report_formats: tuple[str, ...],
) -> None:
    """Write the report of an experiment directory (report.md and report.html with tables and
    plots by default; CSV and LaTeX with --format)."""
    from harness.experiments.report import write_experiment_report
    from harness.experiments.report_options import ReportOptions

    options = ReportOptions.from_formats(report_formats, metrics or (), over, rank or ())
    for path in _or_fail(write_experiment_report, exp_dir, options):
        click.echo(str(path))


@dataclass(frozen=True)
class SlurmSettings:
    partition: str | None
    minutes: int  # per cell
    cells_per_task: int
    options: dict[str, str]


def _quiet(_: str) -> None:
    pass


def _to_stderr(message: str) -> None:
    click.echo(message, err=True)


def _emulate_slots(spec: ExperimentSpec, exp_dir: Path, jobs: int) -> list[Slot]:
    """An emulate-mode experiment's clusters, one per worker (none in simulate mode); refused
    before anything runs when the host cannot hold them."""
    if spec.mode != "emulate":
        return []
    from harness.experiments.emulate_slots import plan_slots

    return _or_fail(plan_slots, spec, exp_dir, max(1, min(jobs, _cells_left(spec, exp_dir))))


def _cells_left(spec: ExperimentSpec, exp_dir: Path) -> int:
    """Cells not in the table yet: no more clusters than that are started."""
    from harness.experiments.grid import expand
    from harness.experiments.results import ResultTable

    done = ResultTable(exp_dir).done_keys() if exp_dir.exists() else set()
    return sum(c.key not in done for c in _or_fail(expand, spec))


def _executor_factory(kind: str, jobs: int, slurm: SlurmSettings) -> Callable[[Path], Executor]:
    if kind == "local":
        from harness.experiments.executors import LocalExecutor

        return lambda exp_dir: LocalExecutor(exp_dir, jobs)
    from harness.experiments.slurm_executor import SlurmExecutor

    s = slurm
    return lambda exp_dir: SlurmExecutor(
        exp_dir,
        jobs,
        partition=s.partition,
        minutes=s.minutes,
        options=s.options,
        cells_per_task=s.cells_per_task,
    )


def _parse_options(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--slurm-option")
        out[key.strip()] = value.strip()
    return out


def _or_fail(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Bad input is the user's to fix: one clear line, no traceback."""
    try:
        return func(*args, **kwargs)
    except (SpecError, FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
