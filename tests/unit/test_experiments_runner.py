"""The runner: a whole grid, resumption after the runner is killed, failures, edited files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.experiments.executors import LocalExecutor
from harness.experiments.grid import expand
from harness.experiments.results import load_table
from harness.experiments.runner import run_experiment
from harness.experiments.spec import SUMMARY_METRICS, load_spec
from harness.model.metric_names import HEADLINE_METRICS

REPO = Path(__file__).resolve().parents[2]
GRID = """
[workload]
trace = "bundled"
first_n = 120
periods = 2
[policies]
names = ["fcfs", "backfill-1", "backfill-sjf-1", "filler"]
[experiment]
repetitions = 2
metrics = ["mean_wait", "mean_bsld"]
"""


def spec_file(tmp_path: Path, text: str = GRID) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def run(spec_path: Path, exp_dir: Path, jobs: int = 1):
    return run_experiment(load_spec(spec_path), exp_dir, lambda d: LocalExecutor(d, jobs), say=lambda _: None)


def by_cell(table: pd.DataFrame) -> dict[tuple[str, str], float]:
    assert not table.duplicated(["key", "metric"]).any(), "a cell's metric appears twice"
    return {(k, m): v for k, m, v in zip(table["key"], table["metric"], table["value"], strict=True)}


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """The grid run in one go with two workers: the reference the other tests compare to."""
    root = tmp_path_factory.mktemp("whole")
    path = spec_file(root)
    return path, run(path, root / "out", jobs=2)


def test_whole_grid_then_nothing_left(whole: tuple[Path, object]) -> None:
    path, first = whole
    out = path.parent / "out"
    assert (first.cells, first.finished, first.failed, first.complete) == (16, 16, 0, True)
    table = load_table(out)
    keys = {c.key for c in expand(load_spec(path))}
    # An alloc-only cell reports the headline metrics, not the I/O-only ones.
    reported = set(table["metric"])
    assert set(HEADLINE_METRICS) <= reported < set(SUMMARY_METRICS)
    assert set(table["key"]) == keys and len(by_cell(table)) == len(table) == 16 * len(reported)
    assert set(table.columns) >= {"policy", "period", "bb_seed", "rep", "metric", "value", "seconds", "host"}
    again = run(path, out)
    assert (again.already_done, again.finished) == (16, 0)
    assert load_table(out).equals(table)


def test_resumes_after_the_runner_is_killed(tmp_path: Path, whole: tuple[Path, object]) -> None:
    path = spec_file(tmp_path)
    out = tmp_path / "killed"
    argv = [sys.executable, "-m", "harness", "experiment", "run", str(path), "-o", str(out), "--no-report"]
    proc = subprocess.Popen(argv, cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        done_at_kill = _wait_for_cells(out, 3, proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its worker, mid-cell
        proc.wait()
    assert 3 <= done_at_kill < 16, "the kill did not land mid-grid"
    resumed = run(path, out)
    assert resumed.already_done >= done_at_kill and resumed.already_done + resumed.finished == 16
    assert by_cell(load_table(out)) == by_cell(load_table(whole[0].parent / "out"))


def _wait_for_cells(out: Path, count: int, proc: subprocess.Popen, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            done = load_table(out)["key"].nunique()
        except (OSError, KeyError, ValueError):
            done = 0
        if done >= count:
            return done
        time.sleep(0.02)
    raise AssertionError(f"the runner did not finish {count} cells in time (exit {proc.poll()})")


def test_failed_cells_are_listed_and_retried(tmp_path: Path) -> None:
    # 200 periods of the first 120 jobs: some periods hold no job, their cells fail.
    text = GRID.replace("periods = 2", "periods = 200\nperiod = [1, 2]").replace("repetitions = 2", "")
    summary = run(spec_file(tmp_path, text), tmp_path / "out")
    failed = json.loads((tmp_path / "out" / "failed.json").read_text())
    assert summary.failed == len(failed) == 4 and summary.finished == 4
    assert all("the selection left no jobs" in e for e in failed.values())
    assert (tmp_path / "out" / "cells" / next(iter(failed)) / "error.txt").exists()
    again = run(spec_file(tmp_path, text), tmp_path / "out")
    assert (again.already_done, again.failed) == (4, 4)


def test_an_edited_file_runs_only_new_cells(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(spec_file(tmp_path, GRID.replace("repetitions = 2", "")), out)
    edited = GRID.replace("repetitions = 2", "").replace('"filler"]', '"filler", "backfill-2"]')
    summary = run(spec_file(tmp_path, edited), out)
    assert (summary.already_done, summary.finished) == (8, 2)
    assert load_table(out)["key"].nunique() == 10


def test_eta_weights_each_policy_by_its_own_pace() -> None:
    from harness.experiments.cells import CellResult
    from harness.experiments.grid import Cell
    from harness.experiments.progress import Progress

    cells = [Cell(f"k{i}", {"policy": p}, {}, {}) for i, p in enumerate(["A", "A", "B", "C", "A"])]
    lines: list[str] = []
    progress = Progress(6, cells, lines.append, slots=2, durations={"A": [1.0, 3.0]})
    assert progress.eta_seconds() == pytest.approx((2 + 2 + 2 + 2 + 2) / 2)  # B, C: overall mean 2
    progress.finished(cells[2], CellResult("k2", True, seconds=10.0))
    # left: A, A, C, A; A takes 2 s, C the mean of 1, 3, 10; two at once
    assert progress.eta_seconds() == pytest.approx((2 + 2 + 14 / 3 + 2) / 2)
    progress.finished(cells[3], CellResult("k3", False, error="boom"))
    assert lines == ["cell k3 policy=C failed: boom"] and (progress.done, progress.failed) == (1, 1)
    progress.show(waiting=1, running=2)
    assert lines[-1].startswith("cells 2/6 done, 2 running, 1 failed, 1 waiting; ")  # 1 before, 1 now
