"""Issue 15, item 2 and the misc list: options, plans, platform files and traces that are
nonsense are refused with an error naming the option, key or row, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.platform import PlatformError, load_platform
from harness.platform.loading import bundled_platform_file
from harness.workload import plan as wp
from harness.workload import transforms
from harness.workload.schema import SchemaError, validate_plan
from harness.workload.swf import SwfError, read_swf

DATA = Path(__file__).parent.parent / "data"
SMALL = str(DATA / "small.swf")
DEFAULT_TOML = bundled_platform_file().read_text()


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


# -- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["simulate", SMALL, "--bb-seed", "-1"], "--bb-seed"),
        (["simulate", SMALL, "--policy-seed", "-1"], "--policy-seed"),
        (["simulate", SMALL, "--tau", "0"], "--tau"),
        (["simulate", SMALL, "--tau", "-5"], "--tau"),
        (["simulate", SMALL, "--tau", "nan"], "--tau"),
        (["simulate", SMALL, "--time-limit", "0"], "--time-limit"),
        (["simulate", SMALL, "--time-limit", "-1"], "--time-limit"),
        (["workload", "prepare", SMALL, "-o", "x.parquet", "--sample", "su", "--sample-window", "nan"],
         "--sample-window"),
        (["workload", "prepare", SMALL, "-o", "x.parquet", "--sample", "ordered", "--sample-ratio", "0.5"],
         "--sample-ratio"),
        (["workload", "prepare", SMALL, "-o", "x.parquet", "--sample", "ordered", "--sample-n", "0"],
         "--sample-n"),
        (["workload", "prepare", SMALL, "-o", "x.parquet", "--window", "nan:"], "--window"),
        (["workload", "prepare", SMALL, "-o", "x.parquet", "--walltime-factor", "0"], "--walltime-factor"),
        (["workload", "split", SMALL, "-k", "0", "-o", "parts"], "-k"),
        (["workload", "generate", "feitelson96", "-o", "x.parquet", "--jobs", "0"], "--jobs"),
        (["run", "--repeat", "-1"], "--repeat"),
        (["run", "--warmup", "inf"], "--warmup"),
        (["agent", "--poll", "0"], "--poll"),
    ],
)  # fmt: skip
def test_nonsense_options_are_usage_errors_naming_the_option(args, option, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}" in result.output
    assert not (tmp_path / "x.parquet").exists()


def test_window_policy_of_no_jobs_is_refused():
    result = cli("simulate", SMALL, "-p", "window-0-1")
    assert result.exit_code == 1
    assert "policy 'window-0-1': N must be >= 1, got 0" in result.output


def test_period_counts_from_one_in_prepare_and_simulate(tmp_path):
    """``--period 1/2`` is the first half in both commands (simulate once took it 0-based)."""
    plan_file = tmp_path / "p.parquet"
    assert cli("workload", "prepare", SMALL, "-o", str(plan_file), "--period", "1/2").exit_code == 0
    prepared = wp.load_plan(plan_file)[0]
    whole = wp.prepare(SMALL)[0]
    first_half = transforms.period_part(wp.load_trace_table(SMALL)[1], 2, 0)
    assert len(prepared) == len(first_half) < len(whole)
    simulated = json.loads(cli("simulate", SMALL, "--period", "1/2", "--json").output)
    assert simulated["backfill-1"]["jobs"] == len(prepared)
    assert "counted from 1" in cli("simulate", SMALL, "--period", "0/2").output


# -- plans ----------------------------------------------------------------------------------


@pytest.fixture
def plan_df() -> pd.DataFrame:
    return wp.prepare(SMALL)[0]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("walltime", np.inf, "column 'walltime' must be finite; row 1 has inf"),
        ("submit", np.inf, "column 'submit' must be finite; row 1 has inf"),
        ("runtime", -np.inf, "column 'runtime' must be finite; row 1 has -inf"),
        ("submit", -1.0, "column 'submit' must be >= 0; row 1 has -1.0"),
        ("walltime", 0.0, "column 'walltime' must be > 0 (1 row(s) are not)"),
    ],
)
def test_plan_schema_names_column_and_row(plan_df, column, value, message):
    plan_df.loc[1, column] = value
    with pytest.raises(SchemaError, match=f"^p.parquet: {message.replace('(', '[(]').replace(')', '[)]')}"):
        validate_plan(plan_df, where="p.parquet")


def test_plan_without_jobs_is_refused_on_load(plan_df, tmp_path):
    """A 0-row plan used to run ('0 jobs', exit 0)."""
    target = tmp_path / "p.parquet"
    wp.save_plan(plan_df, wp.prepare(SMALL)[1], target)
    table = __import__("pyarrow").parquet.read_table(target)
    __import__("pyarrow").parquet.write_table(table.slice(0, 0), target)
    with pytest.raises(SchemaError, match="the plan has no jobs"):
        wp.load_plan(target)
    result = cli("simulate", str(target))
    assert result.exit_code == 1 and "the plan has no jobs" in result.output


def test_infinite_walltime_in_a_stored_plan_is_a_named_error(plan_df, tmp_path):
    target = tmp_path / "p.parquet"
    wp.save_plan(plan_df, wp.prepare(SMALL)[1], target)
    pq = __import__("pyarrow.parquet").parquet
    table = pq.read_table(target)
    df = table.to_pandas()
    df.loc[2, "walltime"] = np.inf
    pq.write_table(__import__("pyarrow").Table.from_pandas(df, preserve_index=False).replace_schema_metadata(
        table.schema.metadata), target)  # fmt: skip
    result = cli("simulate", str(target))
    assert result.exit_code == 1
    assert "column 'walltime' must be finite; row 2 has inf" in result.output


# -- traces ---------------------------------------------------------------------------------

RECORD = "1 0 -1 10 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1"


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ("99999999999999999999 5 -1 10 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1", 1, "at most 2**53"),
        ("2 5 -1 10 9223372036854775808 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1", 5, "at most 2**53"),
        ("2 5 -1 10 1 -1 -1 1 1e400 -1 1 1 1 -1 -1 -1 -1 -1", 9, "expected a number"),
        ("2 5 -1 nan 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1", 4, "expected a number"),
        ("2 inf -1 10 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1", 2, "expected a number"),
    ],
)
def test_trace_fields_beyond_int64_or_not_finite_are_named(tmp_path, record, field, message):
    trace = tmp_path / "t.swf"
    trace.write_text(f"{RECORD}\n{record}\n")
    with pytest.raises(SwfError, match=rf"t.swf:2: field {field} .*{message.replace('*', '[*]')}"):
        read_swf(trace)
    assert len(read_swf(trace, lenient=True)) == 1


# -- platform files -------------------------------------------------------------------------


def _platform(tmp_path: Path, old: str, new: str) -> Path:
    assert old in DEFAULT_TOML
    path = tmp_path / "p.toml"
    path.write_text(DEFAULT_TOML.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("controller_port = 6817", "controller_port = 70000",
         "deployment.controller_port: must be at most 65535"),
        ("slurmd_base_port = 17001", "slurmd_base_port = 0", "deployment.slurmd_base_port: must be positive"),
        ('prefix = "c"', 'prefix = "c 1"',
         "machine.compute.prefix: 'c 1' is not a name Slurm's config can hold"),
        ('partition = "compute"', 'partition = "a=b"', "machine.compute.partition: 'a=b' is not a name"),
        ('bb_license = "bb"', 'bb_license = "bb,x"', "deployment.bb_license: 'bb,x' is not a name"),
        ('controller_host = "localhost"', 'controller_host = "local host"', "controller_host: 'local host'"),
        ("cpus = 1\nreal_memory_mb = 1000\npartition = \"compute\"",
         "cpus = 9999999999\nreal_memory_mb = 1000\npartition = \"compute\"",
         "machine.compute.cpus: must be at most 2147483647"),
        ("capacity_mb = 40000", "capacity_mb = 400000000", "exceeds Slurm's license count limit"),
    ],
)  # fmt: skip
def test_platform_values_that_break_slurm_conf_are_named(tmp_path, old, new, message):
    path = _platform(tmp_path, old, new)
    with pytest.raises(PlatformError, match=f"^{path}: .*{message}".replace("(", "[(]")):
        load_platform(path)


def test_platform_files_that_are_not_text_are_named(tmp_path):
    utf16 = tmp_path / "utf16.toml"
    utf16.write_text(DEFAULT_TOML, encoding="utf-16")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(PlatformError, match=r"utf16.toml: not UTF-8 text"):
        load_platform(utf16)
    with pytest.raises(PlatformError, match=r"binary.toml: not UTF-8 text"):
        load_platform(binary)
    with pytest.raises(PlatformError, match="is a directory, not a platform file"):
        load_platform(tmp_path)
    result = cli("simulate", SMALL, "--platform", str(utf16))
    assert result.exit_code == 2 and "Traceback" not in result.output  # a refused input: a usage error


# -- commands that did not catch their own errors -------------------------------------------


def test_cluster_render_agent_and_replay_report_their_errors_in_one_line(tmp_path):
    bad = _platform(tmp_path, "controller_port = 6817", "controller_port = 70000")
    render = cli("cluster", "render", "--platform", str(bad), "--state-dir", str(tmp_path / "s"))
    assert render.exit_code == 2 and "controller_port: must be at most 65535" in render.output
    agent = cli("agent", "--policy", "no-such-policy")
    assert agent.exit_code == 1 and "unknown policy 'no-such-policy'" in agent.output
    not_a_plan = tmp_path / "x.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(not_a_plan)
    replay = cli("replay", str(not_a_plan), "--run-dir", str(tmp_path / "r"), "--run-id", "r")
    assert replay.exit_code == 1 and "missing column" in replay.output
    for result in (render, agent, replay):
        assert result.exc_info is None or result.exc_info[0] is SystemExit


# -- misc -------------------------------------------------------------------------------------


def test_split_builds_each_part_once(monkeypatch):
    """``split -k K`` built all K parts for each of the K parts (K = 1,000 on 200 jobs: 95 s)."""

    def every_part(*args, **kwargs):
        raise AssertionError("split_periods builds all K parts")

    monkeypatch.setattr(transforms, "split_periods", every_part)
    parts = wp.prepare_split(SMALL, 5, bb_model="constant", bb_constant_mb=10)  # 6 jobs: K <= 6
    whole = wp.prepare(SMALL, bb_model="constant", bb_constant_mb=10)[0]
    assert len(parts) == 5
    assert sum(len(p[0]) for p in parts if p is not None) == len(whole)


def test_inspect_of_a_trace_cleaned_to_nothing(tmp_path):
    trace = tmp_path / "zero.swf"
    trace.write_text(
        "1 0 -1 0 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 -1 0 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
    )
    result = cli("workload", "inspect", str(trace))
    assert result.exit_code == 0, result.output
    assert "jobs           0" in result.output
