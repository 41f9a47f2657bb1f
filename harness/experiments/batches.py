"""Several cells per Slurm task: the chunking, the task's loop, and who reports what.

A fresh Python on a compute node spends seconds importing the simulator before its first
cell (docs/experiments.md, "Throughput"); a task that runs ``n`` cells pays that once.
A task runs its cells one after the other (:func:`run_cells`); each finished cell's
``result.json`` appears in its folder at once, so the runner takes it into the table while
the task goes on. A failing cell fails only itself: the task goes on with the next one.
A task that dies (killed, out of time, out of memory) fails only the cells it had not
finished; those are retried by the next run, like cells in flight when the runner dies.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.experiments.cells import CellResult, run_cell
from harness.experiments.grid import Cell


def chunks(cells: Sequence[Cell], per_task: int) -> list[list[Cell]]:
    """``cells`` in order, cut into tasks of ``per_task`` cells (the last one may be shorter)."""
    if per_task < 1:
        raise ValueError(f"--cells-per-task must be >= 1, got {per_task}")
    return [list(cells[first : first + per_task]) for first in range(0, len(cells), per_task)]


def run_cells(cells: list[Cell], exp_dir: str) -> list[CellResult]:
    """What one Slurm task runs: each cell in turn; one cell's failure does not stop the others."""
    results = []
    for cell in cells:
        try:
            results.append(run_cell(cell, exp_dir))
        except Exception as exc:  # run_cell catches the simulation's errors; this is the rest (disk full...)
            results.append(CellResult(cell.key, False, error=f"{type(exc).__name__}: {exc}"))
    return results


def settle(
    pending: list[Cell],
    task_results: list[CellResult] | None,
    stored: dict[str, CellResult],
    error: str,
) -> list[tuple[Cell, CellResult]]:
    """The outcome of each cell of an ended task not reported yet.

    ``task_results`` is what the task returned (None when it died without returning),
    ``stored`` the results found in the cells' folders. A cell's own result wins, then
    its stored one; a cell with neither failed with the task's ``error``.
    """
    returned = {r.key: r for r in task_results or []}
    out = []
    for cell in pending:
        result = returned.get(cell.key) or stored.get(cell.key)
        out.append((cell, result if result is not None else CellResult(cell.key, False, error=error)))
    return out
