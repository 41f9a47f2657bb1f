"""Burst-buffer request model (Kopański 2020, Sections 2.2 and 2.5)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from harness.platform import load_platform
from harness.workload import bbmodel
from harness.workload.bbmodel import BBModel, BBModelError, apply_model, assign, fit_limit_mb
from harness.workload.cleaning import clean
from harness.workload.plan import DEFAULT_SEED, prepare
from harness.workload.swf import read_swf
from harness.workload.table import trace_to_table
from tests.kth import KTH, needs_kth

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def kth_plan():
    return prepare(KTH)[0]


@pytest.fixture(scope="module")
def small_jobs():
    # the study's cleaning: jobs without requested time dropped (jobs 1, 5, 6, 7, 10 remain)
    table = trace_to_table(read_swf(DATA / "small.swf"))
    return clean(table, max_nodes=96, actions={"unknown_walltime": "drop"})[0]


def test_distribution_mean_is_4_58_gib():
    mean = bbmodel.lognormal_mean_kb()
    expected = sps.lognorm(
        s=bbmodel.LOGNORMAL_S, loc=bbmodel.LOGNORMAL_LOC_KB, scale=bbmodel.LOGNORMAL_SCALE_KB
    ).mean()
    assert mean == pytest.approx(expected, rel=1e-12)
    assert round(mean * 1024 / 2**30, 2) == 4.58  # KB are KiB in the thesis
    assert math.floor(mean) == 4804884  # Table 2.4


def test_sample_mean_of_unclipped_draws_within_2_percent():
    draws = bbmodel.draw_lognormal_kb(200_000, DEFAULT_SEED)
    assert abs(draws.mean() / bbmodel.lognormal_mean_kb() - 1) < 0.02


def test_draws_follow_the_fitted_law():
    draws = bbmodel.draw_lognormal_kb(20_000, 7)
    law = sps.lognorm(s=bbmodel.LOGNORMAL_S, loc=bbmodel.LOGNORMAL_LOC_KB, scale=bbmodel.LOGNORMAL_SCALE_KB)
    assert sps.kstest(draws, law.cdf).statistic < 0.015


def test_draws_are_keyed_by_job_number():
    seed = 11
    stream = bbmodel.draw_lognormal_kb(6, seed)
    assert bbmodel.job_draws_kb(np.array([5, 1, 3]), seed).tolist() == stream[[5, 1, 3]].tolist()


def test_fit_limit_by_hand():
    # 12 BB nodes of 40,000 MB: up to 12 nodes one share per BB node, 13-24 two, ..., 96 eight
    nodes = np.array([1, 12, 13, 24, 25, 96])
    assert fit_limit_mb(nodes, 12, 40000).tolist() == [40000, 40000, 20000, 20000, 13333, 5000]


def test_assign_by_hand():
    raw = np.array([50.0, 5000.4, 50000.0, 30000.0, 3000.0, 7000.0])
    nodes = np.array([1, 1, 1, 13, 4, 96])
    wall = np.array([200.0, 200.0, 200.0, 200.0, 120.0, 121.0])
    per_node, counts = assign(raw, nodes, wall, model=BBModel(), bb_count=12, capacity_mb=40000)
    # clip low -> 100; round; clip high -> 40000; 13 nodes -> 20000; walltime 120 -> 10; 96 nodes -> 5000
    assert per_node.tolist() == [100, 5000, 40000, 20000, 10, 5000]
    assert counts == {"clipped_low": 1, "clipped_high": 1, "reduced_to_fit": 2, "short": 1}


@needs_kth
def test_same_seed_same_requests_other_seed_other_requests(kth_plan):
    again = prepare(KTH)[0]
    other = prepare(KTH, seed=DEFAULT_SEED + 1)[0]
    assert again["bb_per_node_mb"].tolist() == kth_plan["bb_per_node_mb"].tolist()
    assert (other["bb_per_node_mb"] != kth_plan["bb_per_node_mb"]).mean() > 0.5


@needs_kth
def test_kth_requests_bounds_short_jobs_and_fit(kth_plan):
    per_node = kth_plan["bb_per_node_mb"]
    assert str(per_node.dtype) == "int64"
    assert per_node.between(10, 40000).all()
    short = kth_plan["walltime"] <= 120
    assert short.sum() == 2451
    assert (per_node[short] == 10).all()
    assert (per_node[~short] >= 100).all()
    # one BB node per compute node's share: the fullest of the 12 BB nodes holds ceil(nodes / 12) shares
    per_bb = np.ceil(kth_plan["nodes"] / 12)
    assert (per_bb * per_node <= 40000).all()
    assert (kth_plan["bb_total_mb"] == kth_plan["nodes"] * per_node).all()


@needs_kth
def test_kth_clipping_happens_at_both_ends(kth_plan):
    long_jobs = kth_plan[kth_plan["walltime"] > 120]
    assert (long_jobs["bb_per_node_mb"] == 100).sum() > 0
    assert (long_jobs["bb_per_node_mb"] == 40000).sum() > 0


@needs_kth
def test_request_does_not_depend_on_selection(kth_plan):
    first = prepare(KTH, first_n=100)[0]
    assert first["bb_per_node_mb"].tolist() == kth_plan["bb_per_node_mb"].head(100).tolist()


def test_constant_model_on_small(small_jobs):
    platform = load_platform()
    out, counts = apply_model(
        small_jobs, BBModel("constant", constant_mb=8000), bb_count=12, capacity_mb=40000, seed=0
    )
    # jobs 1, 5, 6, 7, 10: job 7 has walltime 120 (10 MB); job 10 has 96 nodes (5000 MB at most)
    assert out["bb_per_node_mb"].tolist() == [8000, 8000, 8000, 10, 5000]
    assert out["bb_total_mb"].tolist() == [32000, 24000, 64000, 10, 480000]
    assert counts["reduced_to_fit"] == 1
    assert platform.bb_total_mb == 480000  # job 10 takes all of it


def test_column_model_converts_kib_and_fills_unknown(small_jobs):
    model = BBModel("column", column="mem_req_kb", min_mb=1, short_walltime_s=0)
    out, counts = apply_model(small_jobs, model, bb_count=12, capacity_mb=40000, seed=0)
    # job 7 asks 2048 KiB = 2.097152 MB -> 2 MB; the four others are unknown -> min_mb
    assert out["bb_per_node_mb"].tolist() == [1, 1, 1, 2, 1]
    assert counts["unknown_filled"] == 4


def test_column_model_needs_an_existing_column(small_jobs):
    with pytest.raises(BBModelError, match="'nope' is not in the job table"):
        apply_model(small_jobs, BBModel("column", column="nope"), bb_count=12, capacity_mb=40000, seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "uniform"}, "unknown BB model 'uniform'"),
        ({"kind": "constant"}, "needs constant_mb"),
        ({"kind": "column"}, "needs a column name"),
        ({"min_mb": 500, "max_mb": 100}, "min_mb <= max_mb"),
    ],
)
def test_bad_model_parameters(kwargs, message):
    with pytest.raises(BBModelError, match=message):
        BBModel(**kwargs)


def test_job_numbers_beyond_the_limit_are_refused():
    with pytest.raises(BBModelError, match="job numbers must be in"):
        bbmodel.job_draws_kb(np.array([bbmodel.MAX_JOB_NUMBER + 1]), 0)


def test_manifest_view_records_parameters():
    d = BBModel().as_dict()
    assert d["lognormal"] == {"s": 1.0972516604, "loc_kb": -150361.595, "scale_kb": 2714115.572}
    assert (d["min_mb"], d["short_walltime_s"], d["short_mb"]) == (100, 120.0, 10)
    assert math.isclose(d["kb_to_mb"], 0.001024)
