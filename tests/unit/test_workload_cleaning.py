"""Cleaning rules: the thesis's KTH counts and one hand-made job per rule."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.platform import load_platform
from harness.workload.cleaning import RULES, CleaningError, clean
from harness.workload.swf import read_swf
from harness.workload.table import trace_to_table
from tests.kth import KTH, needs_kth

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def small():
    return trace_to_table(read_swf(DATA / "small.swf"))


@needs_kth
def test_kth_thesis_cleaning_keeps_28453():
    table = trace_to_table(read_swf(KTH))
    jobs, report = clean(table, load_platform())
    assert report.records == 28476
    assert report.jobs == len(jobs) == 28453
    counts = report.counts()
    assert (counts["too_large"], counts["zero_runtime"], counts["unknown_size"]) == (14, 8, 1)
    assert (counts["unknown_runtime"], counts["unknown_walltime"]) == (0, 0)
    # 475 records ran past their walltime; one of them is among the dropped ones
    assert counts["runtime_above_walltime"] == 474
    assert int(jobs["timeout"].sum()) == 474
    assert jobs["nodes"].max() == 96
    assert str(jobs["nodes"].dtype) == "int64"


NEW_RULES = ("unknown_submit", "unknown_job_id", "duplicate_job_id")  # tested on placeholders.swf


def test_default_rules_on_small_trace(small):
    jobs, report = clean(small, max_nodes=96, actions={"unknown_walltime": "drop"})
    assert report.counts() == {name: 0 if name in NEW_RULES else 1 for name in RULES}
    assert jobs["job_id"].tolist() == [1, 5, 6, 7, 10]
    job6 = jobs.set_index("job_id").loc[6]
    assert (job6["runtime"], job6["walltime"], job6["timeout"]) == (600.0, 600.0, True)
    assert jobs["timeout"].sum() == 1


def test_unknown_walltime_defaults_to_twice_the_runtime(small):
    jobs, report = clean(small, max_nodes=96)
    assert report.actions()["unknown_walltime"] == "factor"
    assert jobs["job_id"].tolist() == [1, 5, 6, 7, 8, 10]
    assert jobs.set_index("job_id").loc[8, "walltime"] == 60.0  # runtime 30 x 2


def test_walltime_factor_and_partition_max(small):
    jobs, _ = clean(small, max_nodes=96, walltime_factor=3.5)
    assert jobs.set_index("job_id").loc[8, "walltime"] == 105.0
    table = small.copy()
    table["partition"] = pd.array([1, 1, 1, 1, 1, 2, 2, 2, 2, 3], dtype="Int64")
    jobs, _ = clean(table, max_nodes=96, actions={"unknown_walltime": "partition_max"})
    # job 8 is in partition 2 whose known walltimes are 600 (job 6), 120 (job 7), 600 (job 9)
    assert jobs.set_index("job_id").loc[8, "walltime"] == 600.0


def test_partition_max_needs_one_known_walltime(small):
    table = small.copy()
    table["walltime"] = float("nan")
    with pytest.raises(CleaningError, match="no job has a known requested time"):
        clean(table, max_nodes=96, actions={"unknown_walltime": "partition_max"})


def test_placeholder_records_are_counted_by_their_rules():
    table = trace_to_table(read_swf(DATA / "placeholders.swf"))
    jobs, report = clean(table, max_nodes=96)
    counts = report.counts()
    assert (counts["unknown_submit"], counts["unknown_job_id"], counts["duplicate_job_id"]) == (3, 1, 1)
    assert jobs["job_id"].tolist() == [1, 2, 3]
    assert str(jobs["job_id"].dtype) == "int64"


def test_platform_size_sets_the_limit(small):
    _, report = clean(small, max_nodes=8)
    # jobs 2 (100 nodes) and 10 (96 nodes) are above 8
    assert report.counts()["too_large"] == 2


def test_alternative_actions(small):
    jobs, report = clean(
        small,
        max_nodes=96,
        actions={"zero_runtime": "keep", "unknown_walltime": "runtime", "runtime_above_walltime": "extend"},
    )
    by_id = jobs.set_index("job_id")
    assert jobs["job_id"].tolist() == [1, 3, 5, 6, 7, 8, 10]
    assert by_id.loc[3, "runtime"] == 0.0
    assert by_id.loc[8, "walltime"] == 30.0  # took its runtime
    assert (by_id.loc[6, "runtime"], by_id.loc[6, "walltime"]) == (700.0, 700.0)
    assert report.actions()["runtime_above_walltime"] == "extend"


def test_keep_leaves_overrunning_runtime_but_flags_it(small):
    jobs, _ = clean(small, max_nodes=96, actions={"runtime_above_walltime": "keep"})
    job6 = jobs.set_index("job_id").loc[6]
    assert (job6["runtime"], job6["walltime"], job6["timeout"]) == (700.0, 600.0, True)


def test_drop_overrunning(small):
    jobs, report = clean(small, max_nodes=96, actions={"runtime_above_walltime": "drop"})
    assert jobs["job_id"].tolist() == [1, 5, 7, 8, 10]  # job 8: walltime 2 x runtime
    assert report.as_dict()["rules"]["runtime_above_walltime"] == 1


def test_rules_count_only_what_earlier_rules_left(small):
    """Job 2 is too large; making it also have zero runtime must not count it twice."""
    table = small.copy()
    table.loc[table["job_id"] == 2, "runtime"] = 0.0
    _, report = clean(table, max_nodes=96)
    assert report.counts()["too_large"] == 1
    assert report.counts()["zero_runtime"] == 1


def test_input_table_is_not_modified(small):
    before = small.copy()
    clean(small, max_nodes=96)
    assert small.equals(before)


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ({"no_such_rule": "drop"}, "unknown cleaning rule 'no_such_rule'"),
        ({"too_large": "keep"}, "rule 'too_large': action 'keep' not one of drop"),
    ],
)
def test_bad_rule_or_action(small, actions, message):
    with pytest.raises(CleaningError, match=message):
        clean(small, max_nodes=96, actions=actions)


def test_needs_a_limit(small):
    with pytest.raises(CleaningError, match="needs a platform or max_nodes"):
        clean(small)


def test_zero_walltime_counts_as_unknown(small):
    table = small.copy()
    table.loc[table["job_id"] == 1, "walltime"] = 0.0
    jobs, report = clean(table, max_nodes=96, actions={"unknown_walltime": "runtime"})
    assert report.counts()["unknown_walltime"] == 2  # job 8 (-1) and job 1 (0)
    assert report.counts()["size_from_allocated"] == 1  # job 5: field 8 -1, 3 allocated
    assert jobs.set_index("job_id").loc[1, "walltime"] == 100.0
