"""-1 (unknown) in every SWF field in turn, and every archive trace on this machine:
``harness workload inspect --json`` never refuses valid SWF and counts every cleaning rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.model.paths import REPO_ROOT
from harness.workload.swf import FIELD_NAMES, read_swf

DATA = Path(__file__).resolve().parents[1] / "data"
_ARCHIVE_DIRS = (REPO_ROOT.parent / "shared" / "data", Path("/work/shared/data"))
ARCHIVE = next((d for d in _ARCHIVE_DIRS if d.is_dir()), None)
ARCHIVE_TRACES = sorted(ARCHIVE.glob("*.swf.gz")) if ARCHIVE else []

HEADER = "; Version: 2.2\n; MaxNodes: 8\n; MaxProcs: 64\n"
# four jobs, all usable: 16, 8, 24 and 64 processors (2, 1, 3 and 8 nodes)
RECORDS = [
    [1, 0, 5, 100, 16, 90, 1000, 16, 200, 2000, 1, 1, 1, 1, 1, 1, -1, -1],
    [2, 10, 0, 50, 8, 40, 1000, 8, 300, 2000, 1, 2, 1, 2, 1, 1, 1, 5],
    [3, 20, 0, 70, 24, 60, 1000, 24, 100, 2000, 0, 1, 1, 1, 1, 2, 2, 0],
    [4, 30, 9, 10, 64, 9, 1000, 64, 600, 2000, 5, 3, 2, 3, 1, 2, -1, -1],
]
# field (1-based) set to -1 in every record -> the rule counts it changes from the all-known trace
EXPECTED: dict[int, dict[str, int]] = {
    1: {"unknown_job_id": 4},
    2: {"unknown_submit": 4},
    4: {"unknown_runtime": 4},
    8: {"size_from_allocated": 4},
    9: {"unknown_walltime": 4},
}


def inspect_json(path: Path, *extra: str) -> dict:
    result = CliRunner().invoke(main, ["workload", "inspect", str(path), "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def dropped(summary: dict) -> int:
    return sum(n for rule, n in summary["rules"].items() if summary["rule_actions"][rule] == "drop")


@pytest.mark.parametrize("field", range(1, 19), ids=lambda k: f"{k}-{FIELD_NAMES[k - 1]}")
def test_unknown_in_each_field_in_turn(tmp_path, field):
    lines = [" ".join(str(-1 if k == field - 1 else v) for k, v in enumerate(r)) for r in RECORDS]
    trace = tmp_path / f"unknown_{field}.swf"
    trace.write_text(HEADER + "\n".join(lines) + "\n")
    s = inspect_json(trace)
    assert (s["records"], s["skipped"]) == (4, 0)
    changed = {rule: n for rule, n in s["rules"].items() if n}
    assert changed == EXPECTED.get(field, {})
    assert s["jobs"] == 4 - dropped(s)
    if field == 5:  # allocated unknown, requested known: sizes unchanged
        assert s["size_distribution"]["2"] == 1 and s["nodes"]["max"] == 8.0


def test_unknown_request_and_allocation_drop_by_unknown_size(tmp_path):
    lines = [" ".join(str(-1 if k in (4, 7) else v) for k, v in enumerate(r)) for r in RECORDS]
    trace = tmp_path / "no_size.swf"
    trace.write_text(HEADER + "\n".join(lines) + "\n")
    s = inspect_json(trace)
    assert (s["jobs"], s["rules"]["unknown_size"]) == (0, 4)


def test_placeholders_counted_by_unknown_submit():
    s = inspect_json(DATA / "placeholders.swf")
    assert (s["records"], s["jobs"], s["rules"]["unknown_submit"]) == (8, 3, 3)


# the counts of docs/traces.md (default options, built-in 96-node platform)
ARCHIVE_COUNTS = {
    "KTH-SP2-1996-2.1-cln.swf.gz": (28476, 28453, {"unknown_size": 1, "too_large": 14, "zero_runtime": 8}),
    "CEA-Curie-2011-2.1-cln.swf.gz": (312826, 277931, {"unknown_size": 19, "too_large": 19822,
                                                       "zero_runtime": 15054}),
    "METACENTRUM-2009-2.swf.gz": (103656, 99944, {"zero_runtime": 3712}),
    "RICC-2010-2.swf.gz": (447794, 431734, {"too_large": 16050, "zero_runtime": 10}),
}  # fmt: skip


@pytest.mark.skipif(not ARCHIVE_TRACES, reason="no archive traces beside the checkout (../shared/data)")
@pytest.mark.parametrize("trace", ARCHIVE_TRACES, ids=lambda p: p.name)
def test_inspect_json_on_every_archive_trace(trace):
    s = inspect_json(trace)
    assert s["jobs"] == s["records"] - s["skipped"] - dropped(s) > 0
    assert set(s["rules"]) >= {"unknown_submit", "unknown_size", "unknown_runtime", "unknown_walltime"}
    assert s["node_size"]["procs_per_node"] >= 1
    if trace.name in ARCHIVE_COUNTS:
        records, jobs, drops = ARCHIVE_COUNTS[trace.name]
        assert (s["records"], s["jobs"]) == (records, jobs)
        assert {r: n for r, n in s["rules"].items() if n and s["rule_actions"][r] == "drop"} == drops


def test_split_swf_leaves_placeholders_out_and_says_so(tmp_path):
    result = CliRunner().invoke(
        main, ["workload", "split", str(DATA / "placeholders.swf"), "-k", "2", "--format", "swf",
               "-o", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "3 record(s) of unknown submit time are in no period" in result.stderr
    written = sum(len(read_swf(p)) for p in tmp_path.glob("*.swf"))
    assert written == 5


def test_prepare_names_the_rules_when_cleaning_leaves_nothing(tmp_path):
    lines = [" ".join(str(-1 if k == 1 else v) for k, v in enumerate(r)) for r in RECORDS]
    trace = tmp_path / "no_submit.swf"
    trace.write_text(HEADER + "\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["workload", "prepare", str(trace), "-o", str(tmp_path / "p.parquet")])
    assert result.exit_code == 1
    assert "cleaning left no jobs of 4 records (unknown_submit 4)" in result.output


def test_inspect_json_is_strict_when_every_job_is_dropped(tmp_path):
    trace = tmp_path / "unknown.swf"
    trace.write_text("1 -1 -1 -1 -1 -1 -1 -1 -1 -1 0 1 1 -1 -1 -1 -1 -1\n")
    result = CliRunner().invoke(main, ["workload", "inspect", "--json", str(trace)])
    assert result.exit_code == 0, result.output

    def refuse(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    summary = json.loads(result.stdout, parse_constant=refuse)
    assert summary["jobs"] == 0 and summary["rules"]["unknown_submit"] == 1
    assert summary["offered_load"] is None  # no span to divide by: unknown, not NaN
