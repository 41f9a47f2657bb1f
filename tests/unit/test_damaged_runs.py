"""Issue 33, item 3: one corrupt file of a run directory makes that run ``damaged`` (the reason
names the file), and ``harness runs`` still lists every other run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.emulation.run.state import COMPLETE, DAMAGED, list_runs
from harness.model.jsonio import JsonFileError, read_json


def _good(run: Path) -> None:
    run.mkdir(parents=True)
    (run / "steps.json").write_text(json.dumps({"steps": [{"name": "plan", "info": {"jobs": 5}}]}))
    (run / "manifest.json").write_text(json.dumps({"complete": True, "policy": "fcfs"}))


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("manifest.json", "{broken", "manifest.json: not valid JSON: Expecting property name enclosed in "
         "double quotes (line 1, column 2)"),
        ("steps.json", "[1, 2]", "steps.json: expected a JSON object, got list"),
        ("steps.json", '{"steps": [{"name": "plan", "info": 3}]}',
         "steps.json: steps[0]: info: expected an object, got 3"),
        ("steps.json", '{"steps": [{"info": {}}]}',
         "steps.json: steps[0]: name: missing (required in steps.json)"),
        ("steps.json", '{"steps": {"plan": {}}}', "steps.json: steps: expected a list, got {'plan': {}}"),
        ("manifest.json", '{"complete": "yes"}',
         "manifest.json: complete: expected true or false, got 'yes'"),
        ("manifest.json", '{"policy": 7}', "manifest.json: policy: expected text or null, got 7"),
        ("manifest.json", '{"repetition_dirs": "01"}',
         "manifest.json: repetition_dirs: expected a list of text"),
        ("progress.json", "\ufeff{}", "progress.json: not valid JSON: Unexpected UTF-8 BOM"),
        ("manifest.json", "\xff", "manifest.json: not UTF-8 text: byte 0"),
    ],
)  # fmt: skip
def test_a_corrupt_file_makes_its_run_damaged_and_the_listing_goes_on(tmp_path, name, text, says):
    _good(tmp_path / "runs" / "2026-01-a")
    bad = tmp_path / "runs" / "2026-01-b"
    _good(bad)
    (bad / "manifest.json").unlink()
    if name == "manifest.json" and text == "\xff":
        (bad / name).write_bytes(b"\xff")
    else:
        (bad / name).write_text(text, encoding="utf-8")
    states = list_runs(tmp_path / "runs")
    assert [s.state for s in states] == [COMPLETE, DAMAGED]
    assert states[1].reason.startswith(f"unreadable: {bad}/{says}")
    before = {p: p.read_bytes() for p in bad.iterdir()}
    result = CliRunner().invoke(main, ["runs", "--dir", str(tmp_path / "runs")])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert result.output.splitlines()[1].split()[:2] == ["complete", "?/5"]
    assert result.output.splitlines()[2].split()[0] == "damaged"
    assert {p: p.read_bytes() for p in bad.iterdir()} == before  # nothing rewritten


def test_watch_of_a_damaged_run_ends_with_its_reason(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "steps.json").write_text("{")
    result = CliRunner().invoke(main, ["runs", "watch", str(run)])
    assert result.exit_code == 3
    assert result.output == (
        f"damaged: {run} (unreadable: {run}/steps.json: not valid JSON: Expecting property name "
        "enclosed in double quotes (line 1, column 2))\n"
    )


@pytest.mark.parametrize("interval", ["0", "-1", "nan", "inf"])
def test_watch_interval_is_bounded(tmp_path, interval):
    result = CliRunner().invoke(main, ["runs", "watch", str(tmp_path), "--interval", interval])
    assert result.exit_code == 2
    assert f"'--interval': expected a finite number in [0.1, 3600], got '{interval}'" in result.output


def test_read_json_absent_is_empty_and_a_directory_is_named(tmp_path):
    assert read_json(tmp_path / "absent.json") == {}
    (tmp_path / "d.json").mkdir()
    with pytest.raises(JsonFileError, match=f"^{tmp_path}/d.json: cannot read [(]Is a directory[)]$"):
        read_json(tmp_path / "d.json")
