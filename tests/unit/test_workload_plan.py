"""prepare / save_plan / load_plan / load_plan_or_trace and the bundled KTH slice."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.model.columns import PLAN_COLUMNS
from harness.workload import plan as wp
from harness.workload.schema import SchemaError
from harness.workload.swf import read_swf
from tests.kth import KTH, needs_kth

DATA = Path(__file__).resolve().parents[1] / "data"
THREE = DATA / "three_jobs.swf"


@pytest.fixture(scope="module")
def three():
    return wp.prepare(THREE, bb_model="constant", bb_constant_mb=500)


def test_prepare_three_jobs_by_hand(three):
    df, _ = three
    assert tuple(df.columns[: len(PLAN_COLUMNS)]) == PLAN_COLUMNS
    # submits 100 200 400 -> rebased 0 100 300, in the trace's seconds
    assert df["submit"].tolist() == [0.0, 100.0, 300.0]
    assert df["runtime"].tolist() == [50.0, 10.0, 1000.0]
    assert df["walltime"].tolist() == [60.0, 100.0, 2000.0]
    assert df["nodes"].tolist() == [1, 2, 4]
    # walltimes 60 and 100 s are <= 120 s: 10 MB
    assert df["bb_per_node_mb"].tolist() == [10, 10, 500]
    assert df["bb_total_mb"].tolist() == [10, 20, 2000]
    assert df["trace_submit"].tolist() == [100.0, 200.0, 400.0]


def test_manifest_records_parameters_and_checksum(three):
    _, m = three
    assert (m["seed"], m["rebase_offset_s"]) == (wp.DEFAULT_SEED, 100.0)
    assert "shrink" not in m and "speedup" not in m  # a plan knows no clock
    assert m["input"]["sha256"] == hashlib.sha256(THREE.read_bytes()).hexdigest()
    assert m["input"]["records"] == 3
    assert m["input"]["unix_start_time"] == 1000000000
    assert m["cleaning"]["jobs"] == 3
    assert m["bb_model"]["kind"] == "constant"
    assert m["bb_model"]["constant_mb"] == 500
    assert m["jobs"] == 3
    assert m["span_s"] == 300.0
    assert m["platform"]["compute_count"] == 96


def test_default_seed_is_recorded():
    _, m = wp.prepare(THREE)
    assert m["seed"] == wp.DEFAULT_SEED == 2020
    assert m["bb_model"]["kind"] == "lognormal"


def test_save_and_load_round_trip(three, tmp_path):
    df, m = three
    target = tmp_path / "plan.parquet"
    assert wp.save_plan(df, m, target) == target
    assert [p.name for p in tmp_path.iterdir()] == ["plan.parquet"]  # no sidecar, no temporary
    df2, m2 = wp.load_plan(target)
    pd.testing.assert_frame_equal(df2, df)
    assert m2 == json.loads(json.dumps(m))


def test_stale_sidecar_of_an_old_plan_is_ignored_and_removed(three, tmp_path):
    df, m = three
    target = tmp_path / "plan.parquet"
    side = tmp_path / "plan.manifest.json"
    wp.save_plan(df, m, target)
    side.write_text(json.dumps({**m, "seed": 1}))  # an old plan's sidecar, now stale
    assert wp.load_plan(target)[1]["seed"] == wp.DEFAULT_SEED  # the embedded manifest is the one read
    wp.save_plan(df, m, target)
    assert not side.exists()


def test_load_plan_errors(three, tmp_path):
    with pytest.raises(wp.PlanError, match="no such plan file"):
        wp.load_plan(tmp_path / "missing.parquet")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(wp.PlanError, match="not a readable parquet plan"):
        wp.load_plan(tmp_path / "bad.parquet")
    df = three[0]
    df.to_parquet(tmp_path / "p.parquet", index=False)
    with pytest.raises(wp.PlanError, match="no manifest embedded"):
        wp.load_plan(tmp_path / "p.parquet")
    (tmp_path / "p.manifest.json").write_text("{}")
    with pytest.raises(wp.PlanError, match=r"an old plan whose manifest is only in p.manifest.json"):
        wp.load_plan(tmp_path / "p.parquet")


def test_plan_without_required_column_is_refused(tmp_path):
    pd.DataFrame({"job_id": [1], "submit": [0.0]}).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(SchemaError, match="missing column"):
        wp.load_plan(tmp_path / "x.parquet")


def test_load_plan_or_trace_accepts_both(three, tmp_path):
    df, m = three
    target = tmp_path / "plan.parquet"
    wp.save_plan(df, m, target)
    from_plan, m1 = wp.load_plan_or_trace(target)
    from_trace, m2 = wp.load_plan_or_trace(THREE, bb_model="constant", bb_constant_mb=500)
    pd.testing.assert_frame_equal(from_plan, from_trace)
    assert m1["span_s"] == m2["span_s"] == 300.0


def test_a_plan_written_shrunk_loads_in_trace_time(three, tmp_path):
    """Plans of earlier versions could be stored shrunk: they load back in the trace's time."""
    df, m = three
    target = tmp_path / "old.parquet"
    shrunk = df.assign(submit=df["submit"] * 0.1, runtime=df["runtime"] * 0.1, walltime=df["walltime"] * 0.1)
    wp.save_plan(shrunk, {**m, "shrink": 0.9, "speedup": 10.0, "span_s": 30.0}, target)
    loaded, manifest = wp.load_plan(target)
    assert loaded["submit"].tolist() == pytest.approx([0.0, 100.0, 300.0])
    assert loaded["walltime"].tolist() == pytest.approx([60.0, 100.0, 2000.0])
    assert loaded["trace_submit"].tolist() == [100.0, 200.0, 400.0]  # never shrunk
    assert manifest["shrunk_when_written"] == 0.9 and "shrink" not in manifest
    assert manifest["span_s"] == pytest.approx(300.0)


def test_load_plan_or_trace_warns(three, tmp_path):
    df, m = three
    target = tmp_path / "plan.parquet"
    wp.save_plan(df, m, target)
    with pytest.warns(UserWarning, match="ignoring seed"):
        wp.load_plan_or_trace(target, seed=3)
    with pytest.raises(wp.PlanError, match="no such plan or trace"):
        wp.load_plan_or_trace(tmp_path / "nothing")


def test_selection_and_sampling_are_recorded():
    _, m = wp.prepare(
        DATA / "small.swf",
        window=(0.0, 60.0),
        first_n=2,
        sampling=wp.Sampling("ordered", n=1, offset=1),
        shuffle=True,
    )
    assert m["selection"] == {"first_n": 2, "window_s": [0.0, 60.0], "period": None}
    assert m["sampling"] == {"method": "ordered", "n": 1, "ratio": None, "offset": 1}
    assert m["shuffle"] is True
    assert m["jobs"] == 1


def test_selection_that_leaves_nothing_is_an_error():
    with pytest.raises(wp.transforms.TransformError, match="left no jobs"):
        wp.prepare(DATA / "small.swf", window=(10_000.0, None))


# -- the bundled slice -----------------------------------------------------------------


def test_bundled_slice_is_a_200_record_swf_with_the_archive_header():
    path = wp.bundled_slice_path()
    trace = read_swf(path)
    assert len(trace) == 200
    assert trace.metadata["Installation"] == "Swedish Royal Institute of Technology (KTH)"
    assert "http://www.cs.huji.ac.il/labs/parallel/workload/" in trace.metadata["Information"]
    assert "benchmarks/kth_slice.py" in trace.metadata["Note"]
    assert np.all(np.diff(trace.records[:, 0]) == 1)  # consecutive job numbers


@needs_kth
def test_bundled_slice_is_a_verbatim_run_of_kth():
    kth = read_swf(KTH)
    piece = read_swf(wp.bundled_slice_path())
    start = int(np.flatnonzero(kth.records[:, 0] == piece.records[0, 0])[0])
    assert start == 19139
    assert np.array_equal(kth.records[start : start + 200], piece.records)


@needs_kth
def test_bundled_slice_jobs_get_the_same_bb_requests_as_in_full_kth():
    full, _ = wp.prepare(KTH)
    part, _ = wp.prepare(wp.BUNDLED)
    merged = part.merge(full, on="job_id", suffixes=("", "_full"))
    assert len(merged) == 200
    assert (merged["bb_per_node_mb"] == merged["bb_per_node_mb_full"]).all()


def test_prepare_bundled_slice():
    df, m = wp.prepare(wp.BUNDLED)
    assert len(df) == 200
    assert df["submit"].iloc[0] == 0.0
    # the slice's submissions span 26,064 trace seconds
    assert m["span_s"] == pytest.approx(26064.0)
    assert m["input"]["path"].endswith("kth-slice.swf")


@needs_kth
def test_prepare_split_16_on_kth():
    parts = wp.prepare_split(KTH, 16)
    assert all(p is not None for p in parts)
    assert sum(len(p[0]) for p in parts) == 28453
    assert [p[1]["selection"]["period"] for p in parts[:2]] == [[0, 16], [1, 16]]
    assert all(p[0]["submit"].iloc[0] == 0.0 for p in parts)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"walltime": [0.0, 10.0, 200.0]}, "'walltime' must be > 0"),
        ({"job_id": [1, 1, 3]}, "job_id must be unique; 1 repeated, e.g. 1"),
        ({"nodes": [0, 2, 4]}, "'nodes' must be >= 1"),
    ],
)
def test_save_refuses_plans_the_simulator_cannot_run(three, tmp_path, change, message):
    df = three[0].copy()
    for col, values in change.items():
        df[col] = pd.Series(values, dtype=df[col].dtype)
    with pytest.raises(SchemaError, match=message):
        wp.save_plan(df, three[1], tmp_path / "p.parquet")
