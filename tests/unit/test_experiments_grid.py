"""Grid expansion: which cells, in which order, and keys that only change with the cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiments.grid import axis_names, cell_key, describe, expand
from harness.experiments.keys import SpecError
from harness.experiments.spec import load_spec

BASE = """
[experiment]
repetitions = 2
[workload]
trace = "bundled"
first_n = 40
periods = 4
period = [2, 3]
[policies]
names = ["fcfs", "backfill-{depth}"]
[sweep]
depth = [1, 2, 3]
"""


def spec_of(tmp_path: Path, text: str):
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return load_spec(path)


def test_expansion_order_and_count(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, BASE)
    cells = expand(spec)
    # (fcfs + 3 backfill depths) x 2 periods x 1 seed x 2 repetitions
    assert len(cells) == 4 * 2 * 2
    assert axis_names(spec) == ["policy", "family", "depth", "period", "bb_seed", "rep"]
    first = [(c.axes["policy"], c.axes["period"], c.axes["rep"]) for c in cells[:5]]
    assert first == [("fcfs", 2, 0), ("fcfs", 2, 1), ("fcfs", 3, 0), ("fcfs", 3, 1), ("backfill-1", 2, 0)]
    assert cells[0].axes["depth"] is None
    assert cells[4].axes == {"policy": "backfill-1", "family": "backfill-{depth}", "depth": 1,
                             "period": 2, "bb_seed": 2020, "rep": 0}  # fmt: skip
    assert describe(spec, cells) == "16 cells: 4 policy x 3 depth x 2 period x 1 bb_seed x 2 rep"


def test_repetitions_shift_the_seeds(tmp_path: Path) -> None:
    cells = expand(
        spec_of(tmp_path, BASE.replace("first_n = 40", "first_n = 40\nshuffle = true\nshuffle_seed = 7"))
    )
    assert [(c.params["policy_seed"], c.params["shuffle_seed"]) for c in cells[:2]] == [(0, 7), (1, 8)]


def test_keys_are_unique_and_stable(tmp_path: Path) -> None:
    cells = expand(spec_of(tmp_path, BASE))
    assert len({c.key for c in cells}) == len(cells)
    assert all(c.key == cell_key(c.params) and len(c.key) == 16 for c in cells)
    assert [c.key for c in expand(spec_of(tmp_path, BASE))] == [c.key for c in cells]


def test_key_ignores_order_but_not_values() -> None:
    assert cell_key({"a": 1, "b": [1, 2]}) == cell_key({"b": [1, 2], "a": 1})
    assert cell_key({"a": 1}) != cell_key({"a": 2})


def test_editing_the_file_keeps_old_keys(tmp_path: Path) -> None:
    before = {c.key for c in expand(spec_of(tmp_path, BASE))}
    edited = BASE.replace('names = ["fcfs", ', 'names = ["fcfs", "filler", ').replace(
        "period = [2, 3]", "period = [2, 3, 4]"
    )
    after = {c.key for c in expand(spec_of(tmp_path, edited))}
    assert before < after and len(after) == 5 * 3 * 2
    # Settings that change what a cell computes change every key.
    other = {c.key for c in expand(spec_of(tmp_path, BASE.replace("first_n = 40", "first_n = 41")))}
    assert not other & before


def test_exclusions(tmp_path: Path) -> None:
    text = BASE + '\n[[exclude]]\npolicy = "backfill-3"\n[[exclude]]\nperiod = 3\nrep = 1\n'
    cells = expand(spec_of(tmp_path, text))
    assert len(cells) == 3 * 3  # 3 policies x (period 2 rep 0/1, period 3 rep 0)
    assert not [
        c for c in cells if c.axes["policy"] == "backfill-3" or (c.axes["period"], c.axes["rep"]) == (3, 1)
    ]


def test_bad_exclusion_names_the_axis(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"\[\[exclude\]\] #1: unknown axis shrink"):
        expand(spec_of(tmp_path, BASE + "\n[[exclude]]\nshrink = 0.9\n"))
    with pytest.raises(SpecError, match="the grid is empty"):
        expand(spec_of(tmp_path, BASE + "\n[[exclude]]\nbb_seed = 2020\n"))


def test_processors_per_node_reach_each_cells_plan(tmp_path: Path) -> None:
    """A trace without a header (RICC) needs its machine's processors per node, as `harness
    run --procs-per-node`: a job of P processors asks ceil(P / 4) nodes with 4."""
    import math

    from harness.experiments.cells import cell_plan
    from harness.platform import load_platform

    plain = expand(spec_of(tmp_path, BASE))[0]
    four = expand(spec_of(tmp_path, BASE.replace("first_n = 40", "first_n = 40\nprocs_per_node = 4")))[0]
    assert four.params["procs_per_node"] == 4 and "procs_per_node" not in plain.params
    assert four.key != plain.key  # another machine: another cell
    platform = load_platform("default")
    by_one = cell_plan(plain, platform).set_index("job_id")["nodes"]
    by_four = cell_plan(four, platform).set_index("job_id")["nodes"]
    both = by_one.index.intersection(by_four.index)
    assert len(both) > 20 and (by_one[both] > 4).any()
    assert all(by_four[j] == math.ceil(by_one[j] / 4) for j in both)
    with pytest.raises(SpecError, match="procs_per_node"):
        spec_of(tmp_path, BASE.replace("first_n = 40", "first_n = 40\nprocs_per_node = 0"))
