"""``harness workload inspect | prepare | split`` through click's test runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.workload.plan import load_plan
from harness.workload.swf import read_swf
from tests.kth import KTH, needs_kth

DATA = Path(__file__).resolve().parents[1] / "data"


def run(*args: str):
    return CliRunner().invoke(main, ["workload", *args], catch_exceptions=False)


@needs_kth
def test_inspect_json_on_kth():
    result = run("inspect", str(KTH), "--json")
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)
    assert (s["records"], s["jobs"], s["skipped"]) == (28476, 28453, 0)
    assert s["span_s"] == 29363618 - 599850
    assert s["rules"] == {
        "unknown_submit": 0,
        "unknown_job_id": 0,
        "duplicate_job_id": 0,
        "unknown_size": 1,
        "size_from_allocated": 0,
        "too_large": 14,
        "unknown_runtime": 0,
        "zero_runtime": 8,
        "unknown_walltime": 0,
        "runtime_above_walltime": 474,
    }
    assert sum(s["size_distribution"].values()) == 28453
    assert sum(s["walltime_accuracy"].values()) == 28453
    # runtimes in the trace above the walltime land in the two top buckets
    assert s["walltime_accuracy"]["(1.0,1.1]"] + s["walltime_accuracy"][">1.1"] == 474
    assert s["bb"]["short"] == 2451


def test_inspect_text_on_small_trace():
    result = run("inspect", str(DATA / "small.swf"), "--unknown-walltime", "drop")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "records        10 read, 0 skipped as malformed" in out
    assert "jobs           5" in out
    assert "  too_large                drop            1" in out
    # jobs 1 5 6 7 10 have 4, 3, 8, 1 and 96 nodes
    assert "             1        1  20.0%" in out
    assert "         65-96        1  20.0%" in out
    assert "span           90 s" in out


def test_inspect_runtime_and_accuracy_buckets_on_small_trace():
    s = json.loads(run("inspect", str(DATA / "small.swf"), "--json", "--unknown-walltime", "drop").stdout)
    # runtimes 100, 60, 600 (clipped from 700), 30, 3000
    assert s["runtime_distribution"]["<=1m"] == 2
    assert s["runtime_distribution"]["1-10m"] == 2
    assert s["runtime_distribution"]["10m-1h"] == 1
    # runtime / walltime in the trace: 0.5, 0.0667, 1.1667, 0.25, 0.8333
    assert s["walltime_accuracy"]["(0.0,0.1]"] == 1
    assert s["walltime_accuracy"]["(0.2,0.3]"] == 1
    assert s["walltime_accuracy"]["(0.4,0.5]"] == 1
    assert s["walltime_accuracy"]["(0.8,0.9]"] == 1
    assert s["walltime_accuracy"][">1.1"] == 1
    assert s["offered_load"] == pytest.approx((400 + 180 + 4800 + 30 + 288000) / (96 * 90))


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("bad_field_count.swf", "bad_field_count.swf:4: expected 18 fields, got 17"),
        ("bad_text_field.swf", "bad_text_field.swf:5: field 4 (run time): expected a number, got '12a'"),
        ("bad_negative_size.swf", "bad_negative_size.swf:3: field 8 (requested processors)"),
        ("truncated.swf.gz", "truncated.swf.gz:7: truncated or corrupt gzip stream"),
        ("empty.swf", "empty.swf: no job records: empty file"),
        ("header_only.swf", "header_only.swf: no job records: header only"),
    ],
)
def test_malformed_traces_give_one_clear_error(name, where):
    result = run("inspect", str(DATA / name))
    assert result.exit_code == 1
    assert where in result.stderr
    assert "Traceback" not in result.output


def test_lenient_reports_counts():
    result = run("inspect", str(DATA / "mixed_bad.swf"), "--lenient")
    assert result.exit_code == 0, result.output
    assert "skipped 4 malformed record(s):" in result.stderr
    assert "line 5, field 4: expected a number, got 'ten'" in result.stderr
    assert "records        3 read, 4 skipped as malformed" in result.stdout
    s = json.loads(run("inspect", str(DATA / "mixed_bad.swf"), "--lenient", "--json").stdout)
    assert (s["records"], s["skipped"], s["jobs"]) == (3, 4, 3)


def test_prepare_writes_plan_and_manifest(tmp_path):
    target = tmp_path / "out" / "plan.parquet"
    result = run("prepare", str(DATA / "three_jobs.swf"), "-o", str(target), "--bb-seed", "7")
    assert result.exit_code == 0, result.output
    df, m = load_plan(target)
    assert df["submit"].tolist() == pytest.approx([0.0, 100.0, 300.0])  # the trace's own seconds
    assert m["seed"] == 7 and "shrink" not in m
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["plan.parquet"]
    assert "3 jobs" in result.stdout


def test_prepare_options_reach_the_pipeline(tmp_path):
    target = tmp_path / "p.parquet"
    result = run(
        "prepare", str(DATA / "small.swf"), "-o", str(target),
        "--zero-runtime", "keep", "--runtime-above-walltime", "keep",
        "--bb-model", "constant", "--bb-constant", "700", "--period", "1/2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    df, m = load_plan(target)
    # kept jobs 1 3 5 6 7 10 at 0..90 s; first half of [0, 90) is submits < 45: jobs 1 3 5
    assert df["job_id"].tolist() == [1, 3, 5]
    assert m["cleaning"]["actions"]["zero_runtime"] == "keep"
    assert m["selection"]["period"] == [0, 2]
    assert df["bb_per_node_mb"].tolist() == [700, 700, 700]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shrink", "0.5"], "No such option '--shrink'"),  # plans keep the trace's time
        (["--sample-n", "3"], "--sample-n/--sample-ratio need --sample"),
        (["--period", "3/2"], "period I must be in 1..K"),
        (["--bb-model", "constant"], "needs constant_mb"),
    ],
)
def test_prepare_bad_options(tmp_path, args, message):
    result = run("prepare", str(DATA / "small.swf"), "-o", str(tmp_path / "p.parquet"), *args)
    usage_error = message.startswith(("--", "period", "No such"))  # click's exit code 2; our errors give 1
    assert result.exit_code == (2 if usage_error else 1)
    assert message in result.stderr


def test_split_swf_parts_hold_the_records(tmp_path):
    result = run("split", str(DATA / "small.swf"), "-k", "3", "-o", str(tmp_path), "--format", "swf")
    assert result.exit_code == 0, result.output
    # submits 0..90 in 3 periods of 30 s (the last closed): jobs 1-3, 4-6, 7-10
    parts = sorted(tmp_path.glob("small.part*of03.swf"))
    assert [read_swf(p).records[:, 0].tolist() for p in parts] == [[1, 2, 3], [4, 5, 6], [7, 8, 9, 10]]
    assert read_swf(parts[0]).metadata["UnixStartTime"] == "1000000000"


def test_split_plan_parts(tmp_path):
    result = run("split", str(DATA / "small.swf"), "-k", "3", "-o", str(tmp_path), "--unknown-walltime=drop")
    assert result.exit_code == 0, result.output
    # cleaned jobs 1 5 6 7 10 at 0 40 50 60 90: periods [0,30) [30,60) [60,90]
    ids = [load_plan(p)[0]["job_id"].tolist() for p in sorted(tmp_path.glob("small.part*.parquet"))]
    assert ids == [[1], [5, 6], [7, 10]]


def test_bundled_name_works_on_the_command_line():
    s = json.loads(run("inspect", "bundled", "--json").stdout)
    assert (s["records"], s["jobs"]) == (200, 200)


def test_inspect_shows_the_selection_a_plan_would_keep(tmp_path):
    """docs/emulation-method.md's Figure 4.10 command: inspect a sample of the trace."""
    sample = ["--sample", "ordered", "--sample-ratio", "10", "--sample-offset", "3"]
    res = CliRunner().invoke(main, ["workload", "inspect", "bundled", "--json", *sample])
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)
    # 200 jobs, none dropped by the cleaning: one in 10 from the 4th on is 20 jobs
    assert shown["jobs"] == 20 and shown["selection"] == "sample ordered (ratio 10.0, offset 3)"
    out = tmp_path / "plan.parquet"
    res = CliRunner().invoke(main, ["workload", "prepare", "bundled", "-o", str(out), *sample])
    assert res.exit_code == 0, res.output
    plan, _ = load_plan(out)
    assert len(plan) == 20 and shown["span_s"] == float(plan["submit"].max() - plan["submit"].min())
    res = CliRunner().invoke(main, ["workload", "inspect", "bundled", "--period", "2/4"])
    assert res.exit_code == 0 and "(selected: period 2/4)" in res.output
    whole = json.loads(CliRunner().invoke(main, ["workload", "inspect", "bundled", "--json"]).output)
    assert whole["jobs"] == 200 and whole["selection"] == ""
