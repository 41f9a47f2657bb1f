"""The result table of an experiment: one row per finished cell and metric, in parquet.

Columns: ``key``, the grid's axes (``policy``, ``period``, ...), ``metric``, ``value``,
then ``seconds`` and ``host`` (where and how long the cell ran; they differ between
runs of the same cell, the rest does not). The table is rewritten atomically (a temporary
file renamed over the old one) whenever cells finish, so a crash leaves either the old
table or the new one, never half of one. Cells that failed are listed in ``failed.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from harness.experiments.cells import JOBS_FILE, CellResult, cell_dir, read_cell_result
from harness.experiments.grid import Cell
from harness.model.atomic import atomic_write_parquet, atomic_write_text
from harness.model.expdir import FAILED_FILE, TABLE_FILE

RUN_COLUMNS = ("seconds", "host")  # how a cell ran, not what it found


def cell_rows(cell: Cell, result: CellResult) -> pd.DataFrame:
    """The rows of one finished cell: its axes, and every Slurm setting it ran with (a setting
    given one value is a column too: a later grid may sweep it), repeated for each numeric metric."""
    metrics = {k: float(v) for k, v in result.metrics.items() if _is_number(v)}
    columns = {**cell.params.get("slurm", {}), **cell.axes}
    rows = [{"key": cell.key, **columns, "metric": m, "value": v} for m, v in metrics.items()]
    df = pd.DataFrame(rows)
    df["seconds"] = float(result.seconds)
    df["host"] = result.host
    return df


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ResultTable:
    """The table on disk and in memory, with the cells that failed."""

    def __init__(self, exp_dir: Path) -> None:
        self.path = Path(exp_dir) / TABLE_FILE
        self.failed_path = Path(exp_dir) / FAILED_FILE
        self.frame = pd.read_parquet(self.path) if self.path.exists() else pd.DataFrame()
        self.failed: dict[str, str] = (
            json.loads(self.failed_path.read_text()) if self.failed_path.exists() else {}
        )

    def done_keys(self) -> set[str]:
        return set(self.frame["key"]) if len(self.frame) else set()

    def add(self, finished: list[tuple[Cell, CellResult]]) -> None:
        """Record finished cells (successes and failures) and write both files."""
        parts = [self.frame] if len(self.frame) else []
        done = self.done_keys()
        for cell, result in finished:
            if result.ok and cell.key not in done:
                parts.append(cell_rows(cell, result))
                done.add(cell.key)
                self.failed.pop(cell.key, None)
            elif not result.ok:
                self.failed[cell.key] = result.error
        if parts:
            self.frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        self.save()

    def durations(self) -> dict[str, list[float]]:
        """Seconds of every finished cell, per policy (the runner's ETA)."""
        if not len(self.frame):
            return {}
        cells = self.frame.drop_duplicates("key")
        return {str(p): g["seconds"].astype(float).tolist() for p, g in cells.groupby("policy", sort=False)}

    def save(self) -> None:
        if len(self.frame):
            atomic_write_parquet(self.path, self.frame)
        atomic_write_text(self.failed_path, json.dumps(self.failed, indent=1, sort_keys=True))


def cell_jobs(exp_dir: Path | str, key: str, tau: float) -> pd.DataFrame:
    """Per-job metrics (wait, turnaround, slowdown, bsld, ...) of a finished cell, in the trace's
    time; jobs that never ran are left out. Empty if the cell left no job table."""
    from harness.analysis.metrics import job_metrics
    from harness.model.columns import RESULT_TIME_COLUMNS
    from harness.model.timescale import TimeScale

    result = read_cell_result(exp_dir, key)
    path = cell_dir(exp_dir, key) / JOBS_FILE
    if result is None or not path.exists():
        return pd.DataFrame()
    jobs = pd.read_parquet(path)
    ran = jobs[jobs["start"].notna() & jobs["end"].notna()]
    if result.time_scale != 1.0:  # an emulated cell of an older version: Slurm's seconds
        ran = TimeScale.of_speedup(result.time_scale).trace_table(ran, RESULT_TIME_COLUMNS)
    return job_metrics(ran, tau=tau)


def load_table(exp_dir: Path | str) -> pd.DataFrame:
    """The result table of an experiment directory (empty if no cell finished)."""
    path = Path(exp_dir) / TABLE_FILE
    return pd.read_parquet(path) if path.exists() else pd.DataFrame()
