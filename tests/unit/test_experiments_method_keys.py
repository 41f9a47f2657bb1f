"""Barberato's method in experiment files: sampling offset/ratio sweeps, drift, the twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiments.grid import axis_names, expand
from harness.experiments.keys import SpecError
from harness.experiments.spec import load_spec
from harness.experiments.spec_simulate import SimulateSpec

HEAD = '[policies]\nnames = ["fcfs"]\n[workload]\ntrace = "bundled"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_offsets_are_an_axis_and_reach_the_cells(tmp_path: Path) -> None:
    text = HEAD + '[workload.sampling]\nmethod = "ordered"\nratio = 4.0\noffset = [0, 1, 3]\n'
    spec = load_spec(write(tmp_path, text))
    cells = expand(spec)
    assert axis_names(spec) == ["policy", "offset", "bb_seed", "rep"]
    assert [c.axes["offset"] for c in cells] == [0, 1, 3]
    assert [c.params["sampling"]["offset"] for c in cells] == [0, 1, 3]
    assert {c.params["sampling"]["ratio"] for c in cells} == {4.0}
    assert len({c.key for c in cells}) == 3


def test_ratios_are_an_axis(tmp_path: Path) -> None:
    text = HEAD + '[workload.sampling]\nmethod = "su"\nratio = [2.0, 5.0]\n'
    cells = expand(load_spec(write(tmp_path, text)))
    assert [(c.axes["ratio"], c.params["sampling"]["ratio"]) for c in cells] == [(2.0, 2.0), (5.0, 5.0)]
    assert {c.params["sampling"]["offset"] for c in cells} == {0}


def test_one_offset_keeps_the_cell_key_of_a_scalar(tmp_path: Path) -> None:
    scalar = expand(load_spec(write(tmp_path, HEAD + "[workload.sampling]\nratio = 4.0\noffset = 2\n")))
    listed = expand(load_spec(write(tmp_path, HEAD + "[workload.sampling]\nratio = [4.0]\noffset = [2]\n")))
    assert [c.key for c in scalar] == [c.key for c in listed]
    assert scalar[0].params["sampling"] == {
        "method": "ordered",
        "n": None,
        "ratio": 4.0,
        "offset": 2,
        "window": 60.0,
    }


def test_drift_axis_and_twin(tmp_path: Path) -> None:
    text = HEAD.replace('"bundled"\n', '"bundled"\ndrift = [0.0, 0.5]\n') + "[simulate]\nlaunch_delay = 0.5\n"
    spec = load_spec(write(tmp_path, text))
    assert spec.workload.drift == (0.0, 0.5) and spec.simulate == SimulateSpec(0.0, 0.5)
    cells = expand(spec)
    assert [(c.axes["drift"], c.params["drift"]) for c in cells] == [(0.0, 0.0), (0.5, 0.5)]
    assert cells[0].params["twin"] == [0.0, 0.5]


def test_without_the_new_keys_the_params_are_unchanged(tmp_path: Path) -> None:
    (cell,) = expand(load_spec(write(tmp_path, HEAD)))
    assert "drift" not in cell.params and "twin" not in cell.params


def test_staging_outside_reaches_the_cells_and_runs_three_phases(tmp_path: Path) -> None:
    from harness.experiments.cells import _simulate

    text = (
        '[experiment]\nmodel = "io-aware"\n[policies]\nnames = ["cerberus-3phase"]\n'
        '[workload]\ntrace = "bundled"\nfirst_n = 12\n[simulate]\nstaging = "outside"\n'
    )
    spec = load_spec(write(tmp_path, text))
    assert spec.simulate == SimulateSpec(0.0, 0.0, "outside")
    (cell,) = expand(spec)
    assert cell.params["staging"] == "outside" and "twin" not in cell.params
    jobs, _ = _simulate(cell)
    # off the allocation the BB hold begins at stage-in, before the run on the nodes
    assert len(jobs) == 12 and bool((jobs["bb_start"] <= jobs["start"]).all())


def test_a_stage_in_axis_runs_each_rule_in_its_own_cell(tmp_path: Path) -> None:
    """The simulate command's case (tests/unit/test_sim_slurm_stage_in.py) as a grid: on the
    slice's first 60 jobs the policies decide the stage-ins apart, Slurm's rule the same for both."""
    from harness.experiments.cells import _simulate

    text = (
        '[experiment]\nmodel = "io-aware"\n[policies]\nnames = ["fcfs", "backfill-1"]\n'
        '[workload]\ntrace = "bundled"\nfirst_n = 60\n'
        '[simulate]\nstaging = "pool"\nstage_in = ["policy", "slurm"]\n'
    )
    spec = load_spec(write(tmp_path, text))
    assert spec.simulate.stage_in == ("policy", "slurm")
    cells = expand(spec)
    assert [(c.axes["policy"], c.axes["stage_in"], c.params.get("stage_in")) for c in cells] == [
        ("fcfs", "policy", None), ("fcfs", "slurm", "slurm"),
        ("backfill-1", "policy", None), ("backfill-1", "slurm", "slurm"),
    ]  # fmt: skip
    # the policy's cell is the cell of the same file without stage_in: one result for both
    without = expand(load_spec(write(tmp_path, text.replace('stage_in = ["policy", "slurm"]\n', ""))))
    assert [c.key for c in without] == [cells[0].key, cells[2].key]
    wait = {(c.axes["policy"], c.axes["stage_in"]): _simulate(c)[1]["mean_wait"] for c in cells}
    assert wait[("fcfs", "policy")] > 2 * wait[("backfill-1", "policy")]
    assert wait[("fcfs", "slurm")] == wait[("backfill-1", "slurm")] < wait[("backfill-1", "policy")]


SAMPLING = HEAD + "[workload.sampling]\n"
S = "[workload.sampling] "
DRIFT = HEAD.replace('"bundled"\n', '"bundled"\ndrift = ')
BAD = [
    (SAMPLING + "ratio = 4.0\noffset = [0, 4]\n", S + "offset: expected offsets below the sampling ratio 4"),
    (SAMPLING + "ratio = 4.0\noffset = [-1]\n", S + "offset: expected an integer >= 0, got -1"),
    (SAMPLING + "ratio = 4.0\noffset = [1, 1]\n", S + "offset: expected distinct integers"),
    (SAMPLING + "ratio = [0.5, 2.0]\n", S + "ratio: expected a finite number >= 1, got 0.5"),
    (SAMPLING + 'method = "su"\nratio = 4.0\noffset = [1]\n', S + 'offset: expected method = "ordered"'),
    (DRIFT + "-0.1\n", "[workload] drift: expected a finite number >= 0, got -0.1"),
    (DRIFT + '"x"\n', "[workload] drift: expected a number or a list"),
    (HEAD + "[simulate]\ntick = -1\n", "[simulate] tick: expected a finite number >= 0, got -1"),
    (HEAD + "[simulate]\nlaunch = 1\n", "[simulate] unknown key launch"),
    (HEAD + '[simulate]\nstaging = "outside"\n', '[simulate] staging = "outside": needs model = "io-aware"'),
    (HEAD + '[simulate]\nstaging = "beside"\n', "[simulate] staging: expected one of inside, outside, pool"),
    (HEAD + '[simulate]\nstage_in = "eager"\n', "[simulate] stage_in: expected one of policy, slurm"),
    (HEAD + '[simulate]\nstage_in = ["slurm", "x"]\n', "stage_in: expected names among policy, slurm"),
    (HEAD + '[simulate]\nstage_in = "slurm"\n', '[simulate] stage_in = "slurm": needs staging = "pool"'),
    (
        '[experiment]\nmodel = "io-aware"\n' + HEAD.replace('"fcfs"', '"fcfs", "sas"')
        + '[simulate]\nstaging = "pool"\nstage_in = "slurm"\n',
        '[simulate] stage_in = "slurm": sas chooses a storage tier for each job and begins its stage-ins',
    ),
    (
        '[experiment]\nmode = "emulate"\n' + HEAD + "[emulate]\nshrink = 0.9\n[simulate]\ntick = 1\n",
        '[simulate]: only for mode = "simulate"',
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_values_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert str(err.value).startswith(str(tmp_path / "exp.toml") + ": ")
    assert message in str(err.value)
