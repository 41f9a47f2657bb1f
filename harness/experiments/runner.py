"""Run the cells of an experiment that have not run yet, writing the table as they finish.

The experiment directory::

    <dir>/experiment.toml   the file as last run
    <dir>/manifest.json     versions, checksums, seeds, one entry per session
    <dir>/cells.jsonl       the grid: key, axes and parameters of every cell
    <dir>/results.parquet   one row per finished cell and metric
    <dir>/failed.json       cells whose last attempt failed (retried next time)
    <dir>/cells/<key>/      each cell's job table and result (see harness.experiments.cells)
    <dir>/.slots/           emulate mode with -j N: the slots' platforms and locks (emulate_slots)

Running again resumes: finished cells (in the table, or with a result in their folder
because they finished after the runner died) are not run again, so a crash or Ctrl-C
loses at most the cells that were in flight.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.experiments.cells import read_cell_result
from harness.experiments.executors import Executor
from harness.experiments.grid import Cell, describe, expand
from harness.experiments.manifest import record_session
from harness.experiments.progress import Progress
from harness.experiments.results import ResultTable
from harness.experiments.spec import ExperimentSpec
from harness.model.atomic import atomic_write_text
from harness.model.expdir import GRID_FILE
from harness.model.jsonio import json_default

SPEC_COPY = "experiment.toml"
POLL_S = 1.0
Say = Callable[[str], None]


@dataclass
class RunSummary:
    exp_dir: Path
    cells: int
    already_done: int
    finished: int
    failed: int
    seconds: float
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return not self.interrupted and self.already_done + self.finished == self.cells


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_experiment(
    spec: ExperimentSpec,
    exp_dir: Path,
    make_executor: Callable[[Path], Executor],
    say: Say = _stderr,
    executor_name: str = "local",
) -> RunSummary:
    """Run every cell of ``spec`` not yet in ``exp_dir``'s table."""
    exp_dir.mkdir(parents=True, exist_ok=True)
    cells = expand(spec)
    atomic_write_text(exp_dir / SPEC_COPY, spec.text)
    write_grid(exp_dir, cells)
    table = ResultTable(exp_dir)
    _recover(exp_dir, cells, table)
    done = table.done_keys()
    out = _screened_out(spec, cells, exp_dir, say)
    todo = interleave([c for c in cells if c.key not in done and c.key not in out])
    record_session(exp_dir, spec, executor_name, len(cells), len(todo))
    say(f"{spec.name}: {describe(spec, cells)}; {len(cells) - len(todo)} already done, {len(todo)} to run")
    began = time.monotonic()
    kept = len(cells) - len(out)
    if not todo:
        return RunSummary(exp_dir, kept, kept, 0, 0, 0.0)
    executor = make_executor(exp_dir)
    progress = Progress(kept, todo, say, executor.slots, table.durations())
    try:
        executor.submit(todo)
        _drain(executor, table, progress)
    except KeyboardInterrupt:
        executor.close(cancel=True)
        say("interrupted: finished cells are in the table; run again to resume")
        return _summary(exp_dir, progress, time.monotonic() - began, interrupted=True)
    executor.close(cancel=False)
    summary = _summary(exp_dir, progress, time.monotonic() - began)
    say(f"{summary.finished} cells finished, {summary.failed} failed, in {summary.seconds:.1f} s")
    return summary


def _screened_out(spec: ExperimentSpec, cells: list[Cell], exp_dir: Path, say: Say) -> set[str]:
    """With ``[screen]``: the cells of the settings the twin ranks below the ``keep`` best."""
    if spec.screen is None:
        return set()
    from harness.experiments.screen import screen_experiment, screened_out

    say(f"screening {len(cells)} cells with the twin ({spec.screen.metric}, keep {spec.screen.keep})")
    out = screened_out(screen_experiment(spec, cells, exp_dir))
    say(f"{len(out)} cells screened out by the twin (screening.json)")
    return out


def _summary(exp_dir: Path, progress: Progress, seconds: float, interrupted: bool = False) -> RunSummary:
    p = progress
    return RunSummary(exp_dir, p.total, p.total - p.todo, p.done, p.failed, seconds, interrupted)


def _drain(executor: Executor, table: ResultTable, progress: Progress) -> None:
    while True:
        waiting, running = executor.counts()
        if not waiting and not running:
            return
        finished = executor.poll(POLL_S)
        if finished:
            table.add(finished)
            for cell, result in finished:
                progress.finished(cell, result)
        progress.show(*executor.counts())


def interleave(cells: list[Cell]) -> list[Cell]:
    """Round-robin over policies: the ETA then averages cheap and costly policies from the
    start, and an unfinished grid already holds every policy of its first periods."""
    queues: dict[str, list[Cell]] = {}
    for cell in cells:
        queues.setdefault(cell.axes["policy"], []).append(cell)
    columns = list(queues.values())
    return [col[i] for i in range(max(map(len, columns), default=0)) for col in columns if i < len(col)]


def write_grid(exp_dir: Path, cells: list[Cell]) -> None:
    records = ({"key": c.key, "axes": c.axes, "params": c.params} for c in cells)
    lines = [json.dumps(r, default=json_default) for r in records]
    atomic_write_text(exp_dir / GRID_FILE, "\n".join(lines) + "\n")


def read_grid(exp_dir: Path) -> list[dict]:
    path = Path(exp_dir) / GRID_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _recover(exp_dir: Path, cells: list[Cell], table: ResultTable) -> None:
    """Cells that finished after the runner stopped (their folder has a result): into the table."""
    done = table.done_keys()
    found = []
    for cell in cells:
        if cell.key not in done:
            result = read_cell_result(exp_dir, cell.key)
            if result is not None and result.ok:
                found.append((cell, result))
    if found:
        table.add(found)
