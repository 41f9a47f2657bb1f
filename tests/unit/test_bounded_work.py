"""Bounded work (issue #33 item 2): a size a user types is limited by the input it applies to,
or by an estimate of the work checked before starting; the refusal says the estimate and the
way out, in one line with exit 2, and nothing is written."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.experiments import grid
from harness.experiments.keys import SpecError
from harness.experiments.spec import load_spec
from harness.model import checks
from harness.workload import transforms
from harness.workload.feitelson96 import Feitelson96
from harness.workload.swf import SwfError, read_swf

SMALL = Path(__file__).resolve().parents[1] / "data" / "small.swf"  # 6 jobs once cleaned, 10 records
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's harness, not another installed one


def test_periods_are_at_most_the_jobs_of_known_submit_time() -> None:
    df = pd.DataFrame({"submit": [0.0, np.nan, 50.0]})  # two jobs have a submit time
    assert transforms.check_period_count(df, 2) == 2
    with pytest.raises(transforms.PeriodCountError) as refused:
        transforms.check_period_count(df, 3)
    assert (
        str(refused.value)
        == "K = 3 periods of 2 jobs: at most one period a job (K in 1..2); choose a smaller K"
    )
    assert isinstance(refused.value, checks.InputError)  # exit 2 on the command line


@pytest.mark.parametrize(
    "args",
    [
        ["workload", "split", str(SMALL), "-k", "7", "-o", "{tmp}/parts"],
        ["workload", "prepare", str(SMALL), "--period", "1/7", "-o", "{tmp}/p.parquet"],
        ["simulate", str(SMALL), "--period", "7/7", "-p", "fcfs", "-o", "{tmp}/jobs.parquet"],
    ],
)
def test_more_periods_than_jobs_is_one_line_and_nothing_written(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == 2, result.output
    assert result.output == (
        "Error: K = 7 periods of 6 jobs: at most one period a job (K in 1..6); choose a smaller K\n"
    )
    assert list(tmp_path.iterdir()) == []  # not even the parts' folder


def test_split_swf_counts_the_records_not_the_cleaned_jobs(tmp_path: Path) -> None:
    """--format swf cuts the trace's own 10 records: K = 7 is allowed there, 11 is not."""
    out = tmp_path / "parts"
    ok = CliRunner().invoke(
        main, ["workload", "split", str(SMALL), "-k", "7", "-o", str(out), "--format", "swf"]
    )
    assert ok.exit_code == 0, ok.output
    refused = CliRunner().invoke(
        main, ["workload", "split", str(SMALL), "-k", "11", "-o", str(tmp_path / "x")]
    )
    assert refused.exit_code == 2 and "K = 11 periods of 6 jobs" in refused.output


def test_feitelson96_estimates_its_work_before_drawing() -> None:
    assert Feitelson96(jobs=50_000, machine_nodes=100_000).jobs == 50_000  # 5e9 jobs x nodes: the bound
    with pytest.raises(checks.InputError) as slow:
        Feitelson96(jobs=50_000, machine_nodes=100_001)  # 5,000,050,000 x 8 ns = 40.0 s
    assert str(slow.value) == (
        "feitelson96: 50,000 jobs on 100,001 nodes would take about 40 s to generate "
        "(jobs x nodes = 5e+09); at most 5e+09 jobs x nodes: fewer --jobs or --nodes"
    )
    with pytest.raises(checks.InputError, match=r"a size table of 10,000,001 nodes needs about 0.4 GB"):
        Feitelson96(jobs=1, machine_nodes=10**7 + 1)  # 40 B a node


def test_feitelson96_command_refuses_hours_of_work_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "f.parquet"
    args = ["workload", "generate", "feitelson96", "-o", str(out), "--jobs", "1000000", "--nodes", "100000"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert (
        "would take about 13 min to generate (jobs x nodes = 1e+11)" in result.output
    )  # 1e11 x 8 ns = 800 s
    assert not out.exists()


def test_a_grid_above_the_cell_bound_is_refused_before_it_is_built(tmp_path: Path) -> None:
    spec_path = tmp_path / "exp.toml"
    spec_path.write_text(
        '[workload]\ntrace = "bundled"\nperiods = 100\n[policies]\nnames = ["fcfs", "backfill-1", "filler"]\n'
        "[experiment]\nrepetitions = 334\n"
    )
    spec = load_spec(spec_path)
    with pytest.raises(SpecError) as refused:
        grid.expand(spec)  # 3 x 100 x 1 x 334 = 100,200 cells
    assert str(refused.value) == (
        f"{spec_path}: the grid has 100,200 cells (3 policy x 100 period x 1 bb_seed x 334 rep); at most "
        "100,000: fewer periods, repetitions, seeds or policies, or split it into several experiment files"
    )


def test_the_cell_bound_is_inclusive(tmp_path: Path) -> None:
    spec_path = tmp_path / "exp.toml"
    spec_path.write_text('[workload]\ntrace = "bundled"\n[policies]\nnames = ["fcfs"]\n')
    spec = load_spec(spec_path)
    grid._check_size(spec, 1, [("rep", tuple(range(checks.MAX_CELLS)))])  # 100,000: allowed
    with pytest.raises(SpecError, match="the grid has 100,001 cells"):
        grid._check_size(spec, 1, [("rep", tuple(range(checks.MAX_CELLS + 1)))])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["platform", "show", "{fifo}"], "{fifo}: is a FIFO, not a regular file"),
        (["simulate", str(SMALL), "--platform", "{fifo}"], "{fifo}: is a FIFO, not a regular file"),
        (["experiment", "run", "{fifo}", "--dry-run"], "{fifo}: cannot read the experiment file (is a FIFO"),
        (["platform", "from-slurm", "{fifo}"], "{fifo}: cannot read (is a FIFO, not a regular file)"),
        (["platform", "show", "/dev/zero"], "/dev/zero: is a special file, not a regular file"),
    ],
)
def test_a_fifo_or_device_as_a_configuration_file_is_refused_not_waited_on(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """Nobody writes to the FIFO: reading it would block for ever (in a process, so a hang is a
    failure after the timeout, not a hung test run)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "harness", *(a.replace("{fifo}", str(fifo)) for a in args)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO, env=ENV)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: " + says.replace("{fifo}", str(fifo))), lines


def test_an_experiments_periods_are_at_most_the_traces_records(tmp_path: Path) -> None:
    (tmp_path / "small.swf").write_bytes(SMALL.read_bytes())  # 10 records
    spec_path = tmp_path / "exp.toml"
    spec_path.write_text('[workload]\ntrace = "small.swf"\nperiods = 11\n[policies]\nnames = ["fcfs"]\n')
    result = CliRunner().invoke(main, ["experiment", "run", str(spec_path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"Error: {spec_path}: [workload] periods: 11 periods of a trace of 10 jobs; "
        "at most one period a job (1..10)\n"
    )
    spec_path.write_text(spec_path.read_text().replace("periods = 11", "periods = 10"))
    grid.check_periods(load_spec(spec_path))  # one period a record: allowed


def test_a_gzip_expanding_past_the_ratio_is_refused_without_taking_its_size(tmp_path: Path) -> None:
    """17 MiB of blank lines compress to ~17 kB: read, they became GBs of lines in memory."""
    bomb = tmp_path / "blank.swf.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (17 * 2**20), mtime=0))
    stored = bomb.stat().st_size
    assert checks.expansion_limit(stored) == 16 * 2**20  # the floor: 100 x 17 kB is below 16 MiB
    assert checks.expansion_limit(10**6) == 10**8 and checks.expansion_limit(10**8) == 2**31
    with pytest.raises(SwfError) as refused:
        read_swf(bomb)
    assert f"{stored:,} gzip bytes expand beyond 16,777,216 (at most 100 times" in str(refused.value)
    fine = tmp_path / "small.swf.gz"
    fine.write_bytes(gzip.compress(SMALL.read_bytes(), mtime=0))
    assert len(read_swf(fine).records) == 10


def test_a_sweep_is_counted_before_its_policies_are_built(tmp_path: Path) -> None:
    """A template swept over 100 values counts 100 policies: with 991 repetitions, 101 x 991 =
    100,091 cells, refused from the counts (several long swept lists multiply the same way)."""
    values = list(range(1, 101))
    spec_path = tmp_path / "exp.toml"
    spec_path.write_text(
        '[workload]\ntrace = "bundled"\n[policies]\nnames = ["plan-sum-{a}", "fcfs"]\n'
        f"[sweep]\na = {values}\n"
    )
    assert len(grid.expand(load_spec(spec_path))) == 101  # 100 + 1 policies, one cell each
    spec_path.write_text(
        spec_path.read_text().replace("[experiment]", "") + "[experiment]\nrepetitions = 991\n"
    )
    with pytest.raises(SpecError, match=r"the grid has 100,091 cells \(101 policy x 1 bb_seed x 991 rep\)"):
        grid.expand(load_spec(spec_path))
