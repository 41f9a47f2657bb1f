"""Emulation transforms (Barberato 2018, Chapter 4) with hand-computed expectations."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from harness.model.timescale import ShrinkError, TimeScale
from harness.platform import load_platform
from harness.workload import transforms as tf
from harness.workload.cleaning import clean
from harness.workload.swf import read_swf
from harness.workload.table import trace_to_table
from tests.kth import KTH, needs_kth


@pytest.fixture(scope="module")
def kth_raw():
    return trace_to_table(read_swf(KTH))


@pytest.fixture(scope="module")
def kth_jobs(kth_raw):
    return clean(kth_raw, load_platform())[0]


def three_jobs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit": [100.0, 200.0, 400.0],
            "runtime": [50.0, 10.0, 1000.0],
            "walltime": [60.0, 100.0, 2000.0],
            "nodes": [1, 2, 4],
            "trace_submit": [100.0, 200.0, 400.0],
        }
    )


def ten_jobs() -> pd.DataFrame:
    """Position p is submitted at 10 p; (nodes, runtime, walltime) chosen to exercise the sorts."""
    spec = [
        (4, 100, 200), (1, 50, 100), (2, 30, 60), (1, 10, 100), (4, 20, 60),
        (2, 30, 30), (1, 50, 60), (8, 10, 20), (2, 5, 60), (1, 10, 100),
    ]  # fmt: skip
    return pd.DataFrame(
        {
            "job_id": np.arange(10),
            "submit": 10.0 * np.arange(10),
            "nodes": [s[0] for s in spec],
            "runtime": [float(s[1]) for s in spec],
            "walltime": [float(s[2]) for s in spec],
        }
    )


# -- time -------------------------------------------------------------------------------


def test_shrink_09_on_three_jobs():
    out = TimeScale(0.9).slurm_table(three_jobs())
    assert out["submit"].tolist() == pytest.approx([10.0, 20.0, 40.0], rel=1e-12)
    assert out["runtime"].tolist() == pytest.approx([5.0, 1.0, 100.0], rel=1e-12)
    assert out["walltime"].tolist() == pytest.approx([6.0, 10.0, 200.0], rel=1e-12)
    assert out["trace_submit"].tolist() == [100.0, 200.0, 400.0]  # the link to the trace stays
    assert out["nodes"].tolist() == [1, 2, 4]


def test_speedup_and_back_to_trace_time():
    assert TimeScale(0.9).speedup == pytest.approx(10.0)
    assert TimeScale(0.99).speedup == pytest.approx(100.0)
    assert TimeScale(0.9).to_trace(6.0) == pytest.approx(60.0)
    assert TimeScale(0.9).to_slurm(60.0) == pytest.approx(6.0)
    assert TimeScale().speedup == 1.0 and TimeScale().to_slurm(7.5) == 7.5
    assert TimeScale.of_speedup(4.0) == TimeScale(0.75)
    assert TimeScale(0.9).shrink_for(0.5) == pytest.approx(0.95)  # Slurm times halved again


def test_trace_table_undoes_slurm_table():
    back = TimeScale(0.75).trace_table(TimeScale(0.75).slurm_table(three_jobs()))
    assert back["submit"].tolist() == three_jobs()["submit"].tolist()
    assert back["walltime"].tolist() == three_jobs()["walltime"].tolist()


@pytest.mark.parametrize("s", [1.0, -0.1, 1.5])
def test_shrink_factor_out_of_range(s):
    with pytest.raises(ShrinkError, match=r"shrink factor must be in \[0, 1\)"):
        TimeScale(s)


def test_rebase_returns_offset():
    out, offset = tf.rebase(three_jobs())
    assert offset == 100.0
    assert out["submit"].tolist() == [0.0, 100.0, 300.0]


# -- order ------------------------------------------------------------------------------


def test_shuffle_keeps_submit_instants_and_job_attributes():
    df = ten_jobs()
    out = tf.shuffle(df, seed=5)
    assert sorted(out["submit"]) == sorted(df["submit"])
    assert out["submit"].is_monotonic_increasing
    assert out["job_id"].tolist() != df["job_id"].tolist()
    # every job travels with its own size and times
    merged = out.merge(df, on="job_id", suffixes=("", "_orig"))
    assert (merged["nodes"] == merged["nodes_orig"]).all()
    assert (merged["runtime"] == merged["runtime_orig"]).all()
    assert tf.shuffle(df, seed=5)["job_id"].tolist() == out["job_id"].tolist()


@needs_kth
def test_shuffle_keeps_multiset_of_submits_on_kth(kth_jobs):
    out = tf.shuffle(kth_jobs, seed=1)
    assert Counter(out["submit"]) == Counter(kth_jobs["submit"])
    assert sorted(out["job_id"]) == sorted(kth_jobs["job_id"])


# -- selection --------------------------------------------------------------------------


def test_first_n_and_time_window():
    df = ten_jobs()
    assert tf.first_n(df, 3)["job_id"].tolist() == [0, 1, 2]
    # seconds after the first submission, half open
    assert tf.time_window(df, 20, 50)["job_id"].tolist() == [2, 3, 4]
    assert tf.time_window(df, 75)["job_id"].tolist() == [8, 9]
    with pytest.raises(tf.TransformError, match="must be after its start"):
        tf.time_window(df, 50, 20)


def test_split_periods_by_hand():
    df = ten_jobs()  # submits 0..90: 3 periods of 30 s: [0, 30), [30, 60), [60, 90]
    parts = tf.split_periods(df, 3)
    assert [p["job_id"].tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]


@needs_kth
def test_split_16_covers_every_job_once(kth_jobs):
    parts = tf.split_periods(kth_jobs, 16)
    assert len(parts) == 16
    ids = np.concatenate([p["job_id"].to_numpy() for p in parts])
    assert len(ids) == len(kth_jobs) == 28453
    assert sorted(ids.tolist()) == sorted(kth_jobs["job_id"].tolist())
    span = kth_jobs["submit"].max() - kth_jobs["submit"].min()
    assert span / 16 / 86400 == pytest.approx(20.81, abs=0.005)  # Kopański: about 20.8 days


@needs_kth
def test_split_16_of_all_records_matches_kopanski(kth_raw):
    """Counted over all 28,476 records, periods hold 1222 to 2940 jobs (Kopański, Section 4.1)."""
    sizes = [len(p) for p in tf.split_periods(kth_raw, 16)]
    assert (min(sizes), max(sizes), sum(sizes)) == (1222, 2940, 28476)


# -- sampling ---------------------------------------------------------------------------


def test_ordered_sampling_by_hand():
    # sort by size, then runtime, then walltime, then position: 3 9 6 1 | 8 5 2 | 4 0 | 7
    # s_p = 10 / 3: picks floor(s_p i) + o_f
    df = ten_jobs()
    assert tf.sample_ordered(df, 3)["job_id"].tolist() == [1, 2, 3]  # positions 0, 3, 6
    assert tf.sample_ordered(df, 3, offset=2)["job_id"].tolist() == [0, 5, 6]  # 2, 5, 8
    assert tf.sample_ordered(df, 3, offset=3)["job_id"].tolist() == [1, 2, 7]  # 3, 6, 9
    assert tf.sample_ordered(df, ratio=5)["job_id"].tolist() == [3, 5]  # positions 0, 5
    with pytest.raises(tf.TransformError, match="offset must be in"):
        tf.sample_ordered(df, 3, offset=4)


def test_su_balanced_sampling_by_hand():
    # groups (size, walltime within 60 s), each in submission order: 1 3 6 9 | 2 5 8 | 4 | 0 | 7
    # service units in that order: 50 10 50 10 | 60 60 10 | 80 | 400 | 80; chunks [0,3) [3,6) [6,10)
    # chunk 1: mean 36.7 -> 50 (job 1), carry -13.3; chunk 2: 43.3 - 13.3 = 30 -> 10 (job 9), carry 20;
    # chunk 3: 142.5 + 20 = 162.5 -> 80 (job 4, the first of the two 80s)
    out = tf.sample_su_balanced(ten_jobs(), 3, window=60)
    assert out["job_id"].tolist() == [1, 4, 9]


def test_su_balanced_window_zero_separates_walltimes():
    # window 0: nodes-1 jobs split into walltime 60 (job 6) and 100 (1 3 9): order 6 1 3 9 | 5 2 8 | 4 | 0 | 7
    # SU: 50 50 10 10 | 60 60 10 | 80 | 400 | 80; chunk 1 mean 36.7 -> 50 (job 6), carry -13.3;
    # chunk 2: [10 60 60] mean 43.3 - 13.3 = 30 -> 10 (job 9); chunk 3 as before -> job 4
    out = tf.sample_su_balanced(ten_jobs(), 3, window=0)
    assert out["job_id"].tolist() == [4, 6, 9]


def test_sampling_argument_checks():
    df = ten_jobs()
    with pytest.raises(tf.TransformError, match="exactly one"):
        tf.sample_ordered(df)
    with pytest.raises(tf.TransformError, match="sample size must be in"):
        tf.sample_su_balanced(df, 11)


def _size_class(nodes: pd.Series) -> pd.Series:
    return np.ceil(np.log2(nodes)).astype(int)  # 1 | 2 | 3-4 | 5-8 | ...


@needs_kth
@pytest.mark.parametrize("method", ["ordered", "su"])
def test_sampling_preserves_size_distribution_on_kth(kth_jobs, method):
    """Barberato Figure 4.10: the scaled size histogram of the sample matches the original."""
    n = 2000
    sp = len(kth_jobs) / n
    if method == "ordered":
        sample = tf.sample_ordered(kth_jobs, n, offset=7)
    else:
        sample = tf.sample_su_balanced(kth_jobs, n)
    assert len(sample) == n
    assert sample["job_id"].is_unique
    orig = _size_class(kth_jobs["nodes"]).value_counts()
    got = _size_class(sample["nodes"]).value_counts().reindex(orig.index, fill_value=0)
    # size is the primary sort key, so a size class of c jobs yields c / s_p picks, +-1
    # (ordered) or +-2 (su: a chunk may straddle a class boundary at both ends)
    slack = 1 if method == "ordered" else 2
    assert ((got - orig / sp).abs() <= slack).all()


@needs_kth
def test_su_sampling_keeps_service_units_in_proportion(kth_jobs):
    n = 2000
    sample = tf.sample_su_balanced(kth_jobs, n)
    su = (kth_jobs["nodes"] * kth_jobs["runtime"]).sum()
    su_sample = (sample["nodes"] * sample["runtime"]).sum()
    assert su_sample * len(kth_jobs) / n == pytest.approx(su, rel=0.01)
