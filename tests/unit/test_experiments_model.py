"""The data model of an experiment file (``[experiment] model``): alloc-only or io-aware."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis.metrics import summary
from harness.experiments.cells import run_cell
from harness.experiments.grid import expand
from harness.experiments.keys import SpecError
from harness.experiments.spec import load_spec
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from harness.workload.plan import prepare, resolve_input

BODY = '[workload]\ntrace = "bundled"\nfirst_n = 20\n[policies]\nnames = ["fcfs", "backfill-1"]\n'
# the keys of BODY's cells before the model key existed (computed on main, commit ad72f06)
KEYS_WITHOUT_MODEL = ["5027a7bea368fe0c", "462427fdf1af4b3c"]


def spec_file(tmp_path: Path, head: str = "") -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(head + BODY)
    return path


def test_files_without_a_model_keep_their_cell_keys(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path))
    assert spec.model == "alloc-only"
    assert [c.key for c in expand(spec)] == KEYS_WITHOUT_MODEL
    explicit = load_spec(spec_file(tmp_path, '[experiment]\nmodel = "alloc-only"\n'))
    assert [c.key for c in expand(explicit)] == KEYS_WITHOUT_MODEL


def test_io_aware_is_a_cell_parameter_and_reaches_the_simulator(tmp_path: Path) -> None:
    cells = expand(load_spec(spec_file(tmp_path, '[experiment]\nmodel = "io-aware"\n')))
    assert [c.params["model"] for c in cells] == ["io-aware", "io-aware"]
    assert not {c.key for c in cells} & set(KEYS_WITHOUT_MODEL)
    result = run_cell(cells[0], str(tmp_path / "out"))
    assert result.ok, result.error
    platform = load_platform("default")
    plan, _ = prepare(resolve_input("bundled"), platform=platform, seed=2020, first_n=20)
    direct = simulate(plan, get_policy("fcfs"), platform, model="io-aware", io_seed=2020)
    alloc = simulate(plan, get_policy("fcfs"), platform)
    expected = summary(direct.jobs, platform, tau=600.0)
    assert result.metrics["mean_wait"] == pytest.approx(expected["mean_wait"], rel=1e-12)
    assert result.metrics["makespan"] == pytest.approx(expected["makespan"], rel=1e-12)
    assert expected["makespan"] != summary(alloc.jobs, platform)["makespan"]  # I/O takes time


def test_an_unknown_model_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(spec_file(tmp_path, '[experiment]\nmodel = "io"\n'))
    assert str(err.value) == (
        f"{tmp_path / 'exp.toml'}: [experiment] model: expected one of alloc-only, io-aware, got 'io'"
    )


def test_a_list_of_models_is_an_axis_whose_alloc_only_cells_keep_their_keys(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, '[experiment]\nmodel = ["alloc-only", "io-aware"]\n'))
    assert spec.models == ("alloc-only", "io-aware")
    cells = expand(spec)
    assert [(c.axes["policy"], c.axes["model"]) for c in cells] == [
        ("fcfs", "alloc-only"), ("fcfs", "io-aware"),
        ("backfill-1", "alloc-only"), ("backfill-1", "io-aware"),
    ]  # fmt: skip
    assert [c.params.get("model") for c in cells] == [None, "io-aware", None, "io-aware"]
    # the alloc-only cells are those of the file without a model, the io-aware ones those of io-aware
    assert [cells[0].key, cells[2].key] == KEYS_WITHOUT_MODEL
    io_only = expand(load_spec(spec_file(tmp_path, '[experiment]\nmodel = "io-aware"\n')))
    assert [cells[1].key, cells[3].key] == [c.key for c in io_only]


def test_a_model_axis_refuses_off_allocation_staging(tmp_path: Path) -> None:
    head = '[experiment]\nmodel = ["alloc-only", "io-aware"]\n[simulate]\nstaging = "outside"\n'
    with pytest.raises(SpecError, match='staging = "outside": needs model = "io-aware"'):
        load_spec(spec_file(tmp_path, head))


def test_an_unknown_model_in_a_list_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"\[experiment\] model: expected names among alloc-only, io-aware"):
        load_spec(spec_file(tmp_path, '[experiment]\nmodel = ["alloc-only", "io"]\n'))
