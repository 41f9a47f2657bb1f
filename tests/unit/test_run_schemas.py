"""The schemas of the files read back from a run directory and of a plan's manifest
(harness/model/run_schemas.py, issue #33 item 1): a value of the wrong type is one line naming
the file and the key, not a traceback in a report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.model import rundir
from harness.model.checks import InputError
from harness.model.jsonio import JsonFileError
from harness.model.run_schemas import (
    MANIFEST,
    METRICS,
    PLAN_MANIFEST,
    PROGRESS,
    Kind,
    check_document,
    check_steps,
)
from harness.workload import plan as wp


def test_a_listed_key_must_have_its_kind_and_others_are_free() -> None:
    assert check_document({"mean_wait": 12, "util_bb": None, "staging": {"x": 1}}, METRICS, "m.json")
    with pytest.raises(JsonFileError) as refused:
        check_document({"mean_wait": "fast"}, METRICS, "runs/r1/metrics.json")
    assert str(refused.value) == "runs/r1/metrics.json: mean_wait: expected a number or null, got 'fast'"
    assert isinstance(refused.value, InputError)  # exit 2 on the command line


def test_a_bool_is_not_a_number_nor_a_count() -> None:
    with pytest.raises(JsonFileError, match="makespan: expected a number or null, got True"):
        check_document({"makespan": True}, METRICS, "m.json")
    with pytest.raises(JsonFileError, match=r"finished: expected a whole number >= 0, got -1"):
        check_document({"finished": -1}, PROGRESS, "p.json")
    with pytest.raises(JsonFileError, match=r"eta_s: expected a number or null, got 'soon'"):
        check_document({"eta_s": "soon"}, PROGRESS, "p.json")


def test_steps_records_are_objects_with_a_name() -> None:
    records = check_steps({"steps": [{"name": "plan", "info": {"jobs": 2}}]}, "s.json")
    assert records == [{"name": "plan", "info": {"jobs": 2}}]
    with pytest.raises(JsonFileError, match=r"^s\.json: steps\[1\]: expected an object, got 'cluster'$"):
        check_steps({"steps": [{"name": "plan"}, "cluster"]}, "s.json")


def test_compare_names_the_metrics_file_and_key(tmp_path: Path) -> None:
    run = tmp_path / "r1"
    run.mkdir()
    (run / rundir.MANIFEST).write_text(json.dumps({"policy": "fcfs", "complete": True}))
    (run / rundir.METRICS).write_text(json.dumps({"mean_wait": "12 s"}))
    result = CliRunner().invoke(main, ["compare", str(run)])
    assert result.exit_code == 2, result.output
    assert result.output == f"Error: {run}/metrics.json: mean_wait: expected a number or null, got '12 s'\n"


def test_read_progress_and_manifest_check_what_they_read(tmp_path: Path) -> None:
    (tmp_path / rundir.PROGRESS).write_text(json.dumps({"total": 80, "finished": "5"}))
    with pytest.raises(
        JsonFileError, match=r"progress\.json: finished: expected a whole number >= 0, got '5'"
    ):
        rundir.read_progress(tmp_path)
    assert rundir.read_manifest(tmp_path) == {}  # absent: nothing to check


def test_a_plan_whose_manifest_has_a_wrong_type_is_named(tmp_path: Path) -> None:
    df = pd.DataFrame({"job_id": [1], "submit": [0.0], "runtime": [10.0], "walltime": [20.0],
                       "nodes": [1], "bb_per_node_mb": [0]})  # fmt: skip
    target = tmp_path / "p.parquet"
    wp.save_plan(df, {"format": wp.MANIFEST_FORMAT, "seed": "one"}, target)
    with pytest.raises(wp.PlanError) as refused:
        wp.load_plan(target)
    assert (
        str(refused.value)
        == f"{target}: the plan's manifest: seed: expected a whole number >= 0 or null, got 'one'"
    )
    wp.save_plan(df, {"format": wp.MANIFEST_FORMAT, "seed": 3, "shrink": None}, target)
    assert wp.load_plan(target)[1]["seed"] == 3


def test_the_plan_manifest_needs_its_format() -> None:
    with pytest.raises(JsonFileError, match=r"^x: format: missing \(required in the plan's manifest\)$"):
        check_document({}, PLAN_MANIFEST, "x")


# -- generated: every key of every run-directory schema, given a value of another kind ------


def wrong_value(kind: Kind) -> object:
    """A JSON value the kind refuses: a number where text goes, text anywhere else."""
    return 7 if kind.label.startswith(("text", "a list of text")) else "x"


LISTED = [(MANIFEST, rundir.MANIFEST), (PROGRESS, rundir.PROGRESS)]  # what `harness runs` reads
LISTING_CASES = [
    pytest.param(file, key, kind, id=f"{file}:{key}")
    for schema, file in LISTED
    for key, kind in schema.fields.items()
]


def test_every_schema_key_is_tried() -> None:
    assert {c.values[0] for c in LISTING_CASES} == {rundir.MANIFEST, rundir.PROGRESS}
    assert len(LISTING_CASES) == len(MANIFEST.fields) + len(PROGRESS.fields)


@pytest.mark.parametrize(("file", "key", "kind"), LISTING_CASES)
def test_a_wrong_kind_makes_the_run_damaged_and_the_listing_goes_on(
    tmp_path: Path, file: str, key: str, kind: Kind
) -> None:
    runs = tmp_path / "runs"
    good, bad = runs / "2026-01-a", runs / "2026-01-b"
    for run in (good, bad):
        run.mkdir(parents=True)
        (run / rundir.STEPS).write_text(json.dumps({"steps": [{"name": "plan", "info": {"jobs": 5}}]}))
    (good / rundir.MANIFEST).write_text(json.dumps({"complete": True, "policy": "fcfs"}))
    value = wrong_value(kind)
    (bad / file).write_text(json.dumps({key: value}))  # progress.json is read when no manifest is
    before = {p: p.read_bytes() for p in bad.iterdir()}
    result = CliRunner().invoke(main, ["runs", "--dir", str(runs)])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    lines = result.output.splitlines()
    assert lines[1].split()[0] == "complete" and lines[2].split()[0] == "damaged", result.output
    assert f"{file}: {key}: expected {kind.describe()}, got {value!r}" in result.output
    assert {p: p.read_bytes() for p in bad.iterdir()} == before


@pytest.mark.parametrize("key", sorted(METRICS.fields))
def test_every_metric_of_a_wrong_kind_is_named_by_compare(tmp_path: Path, key: str) -> None:
    run = tmp_path / "r1"
    run.mkdir()
    (run / rundir.MANIFEST).write_text(json.dumps({"policy": "fcfs", "complete": True}))
    (run / rundir.METRICS).write_text(json.dumps({key: "x"}))
    result = CliRunner().invoke(main, ["compare", str(run)])
    assert result.exit_code == 2
    assert result.output == f"Error: {run}/metrics.json: {key}: expected a number or null, got 'x'\n"
