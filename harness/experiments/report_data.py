"""What an experiment's report reads: the grid, the table, the manifest, per-job metrics,
and the intervals drawn around a group of cells."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.metrics import bootstrap_ci
from harness.experiments.manifest import read_manifest
from harness.experiments.results import FAILED_FILE, cell_jobs, load_table
from harness.experiments.runner import read_grid
from harness.experiments.stats import bootstrap_interval
from harness.model.metric_names import DEFAULT_TAU_S


@dataclass
class ExperimentData:
    exp_dir: Path
    manifest: dict[str, Any]
    table: pd.DataFrame  # rows of the cells of the current grid
    grid: list[dict[str, Any]]
    failed: dict[str, str]
    _jobs: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def settings(self) -> dict[str, Any]:
        """baseline, metrics, job_metrics, tau and sweep of the experiment file."""
        return self.manifest.get("report", {})

    @property
    def sweep(self) -> list[str]:
        return list(self.settings.get("sweep", []))

    @property
    def policies(self) -> list[str]:
        return list(dict.fromkeys(cell["axes"]["policy"] for cell in self.grid))

    def keys(self, **where: Any) -> list[str]:
        """Keys of the finished cells whose axes have these values."""
        mask = np.ones(len(self.table), dtype=bool)
        for column, value in where.items():
            mask &= (self.table[column] == value).to_numpy()
        return list(dict.fromkeys(self.table.loc[mask, "key"]))

    def jobs(self, keys: list[str]) -> pd.DataFrame:
        """Per-job metrics of these cells, pooled."""
        tau = float(self.settings.get("tau", DEFAULT_TAU_S))
        for key in keys:
            if key not in self._jobs:
                self._jobs[key] = cell_jobs(self.exp_dir, key, tau)
        parts = [self._jobs[k] for k in keys if len(self._jobs[k])]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def interval(self, metric: str, group: pd.DataFrame) -> tuple[float, float]:
        """Bootstrap 95 % interval of the mean of a group of cells (rows of one metric): over
        the cells' values when there are several (periods, seeds, repetitions: a t interval
        across periods of different workloads would mean little and can go below 0), over
        the jobs of a single cell (Kopański's intervals)."""
        values = group["value"].to_numpy(np.float64)
        if len(values) >= 2:
            return bootstrap_ci(values)
        lo, hi = bootstrap_interval(metric, self.jobs(list(group["key"])))
        return (lo, hi) if np.isfinite(lo) else (float(values[0]), float(values[0]))


def load_experiment(exp_dir: Path) -> ExperimentData:
    exp_dir = Path(exp_dir)
    grid = read_grid(exp_dir)
    keys = {cell["key"] for cell in grid}
    table = load_table(exp_dir)
    table = table[table["key"].isin(keys)].reset_index(drop=True) if len(table) else table
    failed_path = exp_dir / FAILED_FILE
    failed = json.loads(failed_path.read_text()) if failed_path.exists() else {}
    return ExperimentData(exp_dir, read_manifest(exp_dir), table, grid, failed)
