"""``harness runs``: the runs of a runs directory (running, complete, incomplete, with progress
and ETA); ``runs watch DIR`` follows one live; ``runs stop DIR`` stops one as Ctrl-C would;
``runs report DIR`` writes a run's report again (``--format`` for its figures)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import click

from harness.cli.options import (
    NON_NEGATIVE_SECONDS,
    HarnessCommand,
    HarnessGroup,
    NumberType,
    json_option,
    user_errors,
)
from harness.cli.output_options import figure_format_option
from harness.model.durations import clock
from harness.model.polling import poll_until

INCOMPLETE_EXIT = 3  # the exit status of a run that did not complete
INTERVAL = NumberType("seconds", 0.1, 3600.0)  # 0 would poll in a busy loop


def _progress(finished: int | None, total: int | None) -> str:
    if total is None:
        return "-"
    return f"{finished if finished is not None else '?'}/{total}"


@click.group(
    "runs",
    cls=HarnessGroup,
    invoke_without_command=True,
    examples=[
        "harness runs",
        "harness runs --dir /data/runs --json",
        "harness runs watch runs/RUN_ID",
        "harness runs report runs/RUN_ID --format png,pdf",
    ],
)
@click.option(
    "--dir", "runs_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
    show_default=True, help="The directory `harness run -o` wrote the run directories into.",
)  # fmt: skip
@json_option
@click.pass_context
def runs_group(ctx: click.Context, runs_dir: Path, as_json: bool) -> None:
    """List the runs of RUNS_DIR: state (running, complete, incomplete), progress, ETA."""
    if ctx.invoked_subcommand is not None:
        return
    from harness.emulation.run.state import list_runs

    states = list_runs(runs_dir)
    if as_json:
        click.echo(json.dumps([s.as_dict() for s in states], indent=2))
        return
    if not states:
        click.echo(f"no runs in {runs_dir}")
        return
    click.echo(f"{'STATE':<11} {'JOBS DONE':>13} {'ETA':>10}  {'POLICY':<24} RUN")
    for s in states:
        click.echo(
            f"{s.state:<11} {_progress(s.finished, s.total):>13} {clock(s.eta_s):>10}  "
            f"{s.policy:<24} {s.path}" + (f"\n{'':<11} {s.reason}" if s.reason else "")
        )


@runs_group.command("watch", cls=HarnessCommand, examples=["harness runs watch runs/RUN_ID"])
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--interval", type=INTERVAL, default=2.0, show_default=True, help="Seconds between looks.")
def watch_command(run_dir: Path, interval: float) -> None:
    """Follow a running run's progress until it ends (exit 0 if complete, 3 if not)."""
    from harness.emulation.run.state import RUNNING, run_state

    tty = sys.stderr.isatty()
    last = ""
    state = run_state(run_dir)
    while state.state == RUNNING:
        line = (
            f"{state.state}  step {state.step or '-'}  finished {_progress(state.finished, state.total)}  "
            f"ETA {clock(state.eta_s)}"
        )
        if line != last:
            click.echo(("\r" + line + "    ") if tty else line, err=True, nl=not tty)
            last = line
        time.sleep(interval)
        state = run_state(run_dir)
    if tty and last:
        click.echo(err=True)
    _finish(run_dir)


def _finish(run_dir: Path) -> None:
    from harness.emulation.run.state import COMPLETE, run_state

    state = run_state(run_dir)
    click.echo(f"{state.state}: {run_dir}" + (f" ({state.reason})" if state.reason else ""))
    if state.state != COMPLETE:
        sys.exit(INCOMPLETE_EXIT)


@runs_group.command("stop", cls=HarnessCommand, examples=["harness runs stop runs/RUN_ID --wait 60"])
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--wait",
    type=NON_NEGATIVE_SECONDS,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the run to stop (its jobs cancelled, its directory written).",
)
def stop_command(run_dir: Path, wait: float) -> None:
    """Stop a running run as Ctrl-C would: stop submitting, cancel its jobs, write its directory."""
    from harness.emulation.run.state import process_alive

    pid = process_alive(run_dir)
    if pid is None:
        raise click.ClickException(f"{run_dir}: no running process on this host (see `harness runs`)")
    os.kill(pid, signal.SIGINT)
    click.echo(f"asked the run (pid {pid}) to stop; waiting for it to write {run_dir}", err=True)
    if not poll_until(lambda: process_alive(run_dir) != pid, wait, interval=0.5):
        raise click.ClickException(f"the run (pid {pid}) is still going after {wait:g} s")
    _finish(run_dir)


@runs_group.command(
    "report",
    cls=HarnessCommand,
    examples=["harness runs report runs/RUN_ID", "harness runs report sim/backfill-1 --format pdf,svg"],
)
@click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))  # fmt: skip
@figure_format_option()
@user_errors(OSError)
def report_command(run_dirs: tuple[Path, ...], figure_formats: tuple[str, ...]) -> None:
    """Write (again) the report and plots of run directories, emulated or simulated: a run's
    figures in other formats, or the report of a run written by an older version."""
    from harness.analysis.report import write_report  # matplotlib: only when a report is written
    from harness.model.rundir import MANIFEST

    for run_dir in run_dirs:
        if not (run_dir / MANIFEST).is_file():
            raise click.ClickException(f"{run_dir}: not a run directory (no {MANIFEST})")
        for path in write_report(run_dir, figure_formats):
            click.echo(str(path))
