"""What a run directory holds, loaded for the report: manifest, metrics, per-job results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.model import rundir
from harness.model.timescale import time_scale_of


@dataclass
class RunData:
    run_dir: Path
    manifest: dict[str, Any]
    metrics: dict[str, Any]
    results: pd.DataFrame | None  # None when results.parquet is absent
    notes: list[str] = field(default_factory=list)  # what was missing or unreadable

    @property
    def time_scale(self) -> float:
        if self.manifest.get("time_scale") is not None:
            return float(self.manifest["time_scale"])
        return time_scale_of(float(self.manifest.get("shrink", 0.0)))

    @property
    def platform(self) -> dict[str, Any]:
        return self.manifest.get("platform") or {}

    def jobs(self) -> pd.DataFrame:
        """The jobs that ran, with submit/start/end in original seconds since t0."""
        if self.results is None:
            return pd.DataFrame(columns=["job_id", "submit", "start", "end", "nodes", "bb_per_node_mb"])
        ran = self.results[self.results["start"].notna() & self.results["end"].notna()].copy()
        for col in ("submit", "start", "end"):
            ran[col] = ran[col].astype("float64") * self.time_scale
        return ran.sort_values(["start", "job_id"], kind="stable").reset_index(drop=True)


def load_run(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    notes: list[str] = []
    manifest = _read_json(run_dir / rundir.MANIFEST, notes)
    metrics = _read_json(run_dir / rundir.METRICS, notes)
    results = None
    path = run_dir / rundir.RESULTS
    if path.exists():
        results = pd.read_parquet(path)
    else:
        notes.append("results.parquet is missing: no plots")
    return RunData(run_dir, manifest, metrics, results, notes)


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
