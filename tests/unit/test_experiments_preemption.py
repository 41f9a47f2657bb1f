"""Priority models and suspend/resume in experiment files (Barberato Tables 4.5-4.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiments.cells import run_cell
from harness.experiments.grid import axis_names, expand
from harness.experiments.keys import SpecError
from harness.experiments.spec import load_spec

HEAD = '[policies]\nnames = ["backfill-1"]\n[workload]\ntrace = "bundled"\nfirst_n = 40\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_priority_and_preempt_are_axes_and_reach_the_cells(tmp_path: Path) -> None:
    text = HEAD + 'priority = ["none", "size:8"]\npreempt = ["none", "suspend"]\n'
    text += '[[exclude]]\npriority = "none"\npreempt = "suspend"\n'
    spec = load_spec(write(tmp_path, text))
    assert axis_names(spec) == ["policy", "priority", "preempt", "bb_seed", "rep"]
    cells = expand(spec)
    assert [(c.params["priority"], c.params["preempt"]) for c in cells] == [
        ("none", "none"), ("size:8", "none"), ("size:8", "suspend")]  # fmt: skip
    results = [run_cell(c, str(tmp_path / "exp")) for c in cells]
    assert all(r.ok for r in results), [r.error for r in results]
    assert [r.metrics.get("suspensions") for r in results] == [None, 0, results[2].metrics["suspensions"]]


def test_one_model_is_a_fixed_setting_and_files_without_it_keep_their_keys(tmp_path: Path) -> None:
    plain = expand(load_spec(write(tmp_path, HEAD)))
    assert "priority" not in plain[0].params
    fixed = expand(load_spec(write(tmp_path, HEAD + 'priority = "random:0.2"\n')))
    assert fixed[0].params["priority"] == "random:0.2" and fixed[0].key != plain[0].key


@pytest.mark.parametrize(
    ("line", "says"),
    [('priority = ["size:x"]', "priority"), ('preempt = "requeue"', "preempt"), ("priority = 3", "priority")],
)
def test_bad_values_are_named(tmp_path: Path, line: str, says: str) -> None:
    with pytest.raises(SpecError, match=rf"\[workload\] {says}"):
        load_spec(write(tmp_path, HEAD + line + "\n"))
