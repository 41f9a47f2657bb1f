"""Several cells per Slurm task: chunking, a failing cell in a task, who reports a task's cells."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.experiments.batches import chunks, run_cells, settle
from harness.experiments.cells import CellResult, cell_dir, read_cell_result
from harness.experiments.grid import Cell, expand
from harness.experiments.spec import load_spec

GRID = """
[workload]
trace = "bundled"
first_n = 20
bb_seed = [1, 2, 3]
[policies]
names = ["backfill-1"]
"""


def cell(key: str) -> Cell:
    return Cell(key, {}, {}, {})


def keys(tasks: list[list[Cell]]) -> list[list[str]]:
    return [[c.key for c in task] for task in tasks]


def test_chunks_keep_the_order_and_cut_the_last_task_short() -> None:
    cells = [cell(k) for k in "abcde"]
    assert keys(chunks(cells, 2)) == [["a", "b"], ["c", "d"], ["e"]]
    assert keys(chunks(cells, 1)) == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert keys(chunks(cells, 5)) == [["a", "b", "c", "d", "e"]]
    assert keys(chunks(cells, 8)) == [["a", "b", "c", "d", "e"]]
    assert chunks([], 3) == []


def test_chunks_refuse_less_than_one_cell_per_task() -> None:
    with pytest.raises(ValueError, match=r"--cells-per-task must be >= 1, got 0"):
        chunks([cell("a")], 0)


def test_settle_prefers_the_tasks_result_then_the_stored_one_then_fails() -> None:
    a_ok, b_failed = CellResult("a", True, {"m": 1.0}), CellResult("b", False, error="ValueError: x")
    b_stored, c_stored = CellResult("b", True, {"m": 2.0}), CellResult("c", True, {"m": 3.0})
    pending = [cell("a"), cell("b"), cell("c"), cell("d")]
    out = settle(pending, [a_ok, b_failed], {"b": b_stored, "c": c_stored}, "task died")
    assert [(c.key, r) for c, r in out] == [
        ("a", a_ok), ("b", b_failed), ("c", c_stored), ("d", CellResult("d", False, error="task died")),
    ]  # fmt: skip
    # A task that died: the cells it finished keep their stored results, the others fail.
    out = settle(pending[2:], None, {"c": c_stored}, "Slurm job 7_1 ended without a result")
    assert [(c.key, r.ok, r.error) for c, r in out] == [
        ("c", True, ""), ("d", False, "Slurm job 7_1 ended without a result"),
    ]  # fmt: skip


def test_a_failing_cell_fails_only_itself(tmp_path: Path) -> None:
    spec_path = tmp_path / "exp.toml"
    spec_path.write_text(GRID)
    first, second, third = expand(load_spec(spec_path))
    bad_policy = replace(second, params={**second.params, "policy": "no-such-policy"})
    cell_dir(tmp_path, third.key).parent.mkdir(parents=True)
    cell_dir(tmp_path, third.key).write_text("a file where the cell's folder goes")  # run_cell itself raises

    results = run_cells([first, bad_policy, third], str(tmp_path))

    assert [(r.key, r.ok) for r in results] == [(first.key, True), (second.key, False), (third.key, False)]
    assert "no-such-policy" in results[1].error
    assert results[2].error.startswith("FileExistsError: ")
    assert read_cell_result(tmp_path, first.key) == results[0]
    assert read_cell_result(tmp_path, second.key) is None
