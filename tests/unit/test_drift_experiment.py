"""experiments/barberato-drift.toml (Barberato Table 4.9): back-to-back starts accumulate the
launch delay without the drift correction, and not with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.experiments.cells import JOBS_FILE, cell_dir, run_cell
from harness.experiments.grid import expand
from harness.experiments.spec import load_spec
from harness.model.paths import repo_path


def waits_by_drift(tmp_path: Path) -> dict[float, list[float]]:
    spec = load_spec(repo_path("experiments", "barberato-drift.toml"))
    out = {}
    for cell in expand(spec):
        assert run_cell(cell, str(tmp_path)).ok
        jobs = pd.read_parquet(cell_dir(tmp_path, cell.key) / JOBS_FILE).sort_values("job_id")
        out[cell.axes["drift"]] = (jobs["start"] - jobs["submit"]).tolist()
    return out


def test_drift_accumulates_without_correction_and_not_with_it(tmp_path: Path) -> None:
    waits = waits_by_drift(tmp_path)
    assert sorted(waits) == [0.0, 0.1]
    # launch delay 0.1 s per start: job k (k >= 2) waits 60 + 0.1 k without the correction ...
    assert waits[0.0] == pytest.approx([0.1] + [60.0 + 0.1 * k for k in range(2, 11)])
    accumulated = waits[0.0][-1] - waits[0.0][1]
    assert accumulated == pytest.approx(0.8)
    # ... and a constant 60.1 s with 0.1 s per job added to the submissions
    assert waits[0.1] == pytest.approx([0.1] + [60.1] * 9)
    assert float(np.ptp(waits[0.1][1:])) == pytest.approx(0.0, abs=1e-9)
