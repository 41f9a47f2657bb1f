"""What a run directory holds, loaded for the report: manifest, metrics, per-job results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.model import rundir
from harness.model.columns import EMULATION_TIME_COLUMNS, IO_RESULT_TIME_COLUMNS
from harness.model.timescale import TimeScale


@dataclass
class RunData:
    run_dir: Path
    manifest: dict[str, Any]
    metrics: dict[str, Any]
    results: pd.DataFrame | None  # None when results.parquet is absent
    notes: list[str] = field(default_factory=list)  # what was missing or unreadable

    @property
    def speedup(self) -> float:
        """Trace seconds per second of the run's clock (1: the simulator, or no speed-up)."""
        return float(self.manifest.get("speedup") or self.manifest.get("time_scale") or 1.0)

    @property
    def platform(self) -> dict[str, Any]:
        return self.manifest.get("platform") or {}

    def jobs(self) -> pd.DataFrame:
        """The jobs that ran, with submit/start/end in the trace's seconds since t0."""
        if self.results is None:
            return pd.DataFrame(columns=["job_id", "submit", "start", "end", "nodes", "bb_per_node_mb"])
        ran = self.results[self.results["start"].notna() & self.results["end"].notna()].copy()
        return ran.sort_values(["start", "job_id"], kind="stable").reset_index(drop=True)


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    notes: list[str] = []
    manifest = _read_json(run_dir / rundir.MANIFEST, notes)
    metrics = _read_json(run_dir / rundir.METRICS, notes)
    results = None
    path = run_dir / rundir.RESULTS
    if path.exists():
        results = in_trace_time(pd.read_parquet(path), manifest)
    else:
        notes.append("results.parquet is missing: no plots")
    return RunData(run_dir, manifest, metrics, results, notes)


def in_trace_time(results: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """The results of a run; a run written before results kept the trace's time stored Slurm's
    seconds (its manifest has no ``times``, and a ``time_scale`` or a ``shrink``): converted."""
    if manifest.get(rundir.TIMES) == rundir.TRACE_TIME:
        return results
    if manifest.get("time_scale") is not None:
        scale = TimeScale.of_speedup(float(manifest["time_scale"]))
    else:
        scale = TimeScale(float(manifest.get("shrink") or 0.0))
    return scale.trace_table(results, (*EMULATION_TIME_COLUMNS, *IO_RESULT_TIME_COLUMNS))


def _read_json(path: Path, notes: list[str]) -> dict[str, Any]:
    if not path.exists():
        notes.append(f"{path.name} is missing")
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        notes.append(f"{path.name} is unreadable: {exc}")
        return {}
    return data if isinstance(data, dict) else {}
