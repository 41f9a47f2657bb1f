"""Issue 15, item 4: property-based tests (hypothesis) of the SWF reader/writer, cleaning,
the transforms and the plan schema. Random traces with unknown fields, extreme values and
odd spacing never fail outside the named errors, and a write-then-read is the identity."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.model.timescale import ShrinkError
from harness.platform import load_platform
from harness.workload import plan as wp
from harness.workload import transforms
from harness.workload.bbmodel import BBModelError
from harness.workload.cleaning import CleaningError, clean
from harness.workload.nodes import NodeSizeError
from harness.workload.schema import SchemaError, validate_plan
from harness.workload.swf import MAX_FIELD, N_FIELDS, SwfError, read_swf, write_swf
from harness.workload.table import trace_to_table

PLATFORM = load_platform()
NAMED = (SwfError, CleaningError, SchemaError, transforms.TransformError, BBModelError, ShrinkError,
         NodeSizeError, wp.PlanError)  # fmt: skip
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INTEGER_FIELDS = {0, 4, 7, 10, 11, 12, 13, 14, 15, 16}  # job, procs, status, user, ... (SWF 2.2)

unknown = st.just(-1.0)
big_int = st.integers(0, MAX_FIELD).map(float)
small_int = st.integers(0, 200).map(float)
seconds = st.one_of(
    st.integers(0, 10**7).map(float),
    st.floats(0, 1e9, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 0.5, 1e-9, float(MAX_FIELD)]),
)


def _field(k: int) -> st.SearchStrategy[float]:
    """Mostly known values (so that many traces survive cleaning), sometimes -1 (unknown)."""
    if k in (4, 7):  # processors: around the 96 compute nodes of the platform
        known = st.integers(0, 120).map(float)
    elif k in INTEGER_FIELDS:
        known = st.one_of(small_int, big_int) if k in (0, 11, 12) else small_int
    else:
        known = seconds
    return st.one_of(known, known, known, unknown)


records = st.lists(st.tuples(*(_field(k) for k in range(N_FIELDS))), min_size=1, max_size=25).map(
    lambda rows: np.array(rows, dtype=np.float64)
)
headers = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=30).map(lambda t: "; " + t),
    max_size=4,
)


_SCRATCH: list[Path] = []  # the module's scratch folder, removed at its end


@pytest.fixture(scope="module", autouse=True)
def _scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _SCRATCH.append(tmp_path_factory.mktemp("swfprop"))
    yield
    shutil.rmtree(_SCRATCH.pop())


def _tmp(name: str) -> Path:
    """A fresh folder for each Hypothesis example (a function fixture would be shared by all)."""
    return Path(tempfile.mkdtemp(dir=_SCRATCH[-1])) / name


@SETTINGS
@given(records, headers, st.sampled_from(["t.swf", "t.swf.gz"]))
def test_swf_write_then_read_is_the_identity(rows, header, name):
    path = _tmp(name)
    write_swf(path, rows, header)
    trace = read_swf(path)
    assert trace.records.tobytes() == rows.tobytes()
    assert trace.header_lines == header
    write_swf(path, trace.records, trace.header_lines, trace.column_widths)
    assert read_swf(path).records.tobytes() == rows.tobytes()


spacing = st.sampled_from([" ", "   ", "\t", " \t "])


@SETTINGS
@given(records, spacing, spacing, st.sampled_from(["\n", "\r\n"]))
def test_odd_spacing_reads_the_same_records(rows, sep, lead, newline):
    path = _tmp("t.swf")
    write_swf(path, rows)
    respaced = _tmp("odd.swf")
    text = path.read_text().splitlines()
    respaced.write_text(newline.join(lead + sep.join(line.split()) + sep for line in text) + newline)
    assert read_swf(respaced).records.tobytes() == rows.tobytes()


token = st.one_of(
    st.integers(-3, 10**6).map(str),
    st.sampled_from(["-1", "nan", "inf", "-inf", "1e400", "1.5", "x", "0x10", "99999999999999999999", ""]),
    st.floats(allow_nan=False).map(repr),
)
lines = st.lists(
    st.tuples(spacing, st.lists(token, min_size=0, max_size=20)).map(lambda t: t[0].join(t[1])),
    min_size=1,
    max_size=12,
)


@SETTINGS
@given(lines, st.booleans())
def test_swf_reader_fails_only_with_named_errors(text_lines, lenient):
    path = _tmp("t.swf")
    path.write_text("\n".join(text_lines) + "\n")
    try:
        trace = read_swf(path, lenient=lenient)
    except SwfError as exc:
        assert str(exc).startswith(str(path))
        return
    assert trace.records.shape[1] == N_FIELDS and len(trace) >= 1
    assert np.isfinite(trace.records).all() and (np.abs(trace.records) <= MAX_FIELD).all()


@SETTINGS
@given(records, st.sampled_from(["drop", "keep"]), st.sampled_from(["drop", "runtime", "factor"]))
def test_cleaning_and_prepare_fail_only_with_named_errors(rows, zero_runtime, unknown_walltime):
    path = _tmp("t.swf")
    write_swf(path, rows)
    cleaning = {"zero_runtime": zero_runtime, "unknown_walltime": unknown_walltime}
    try:
        table, _report = clean(trace_to_table(read_swf(path)), PLATFORM, actions=cleaning)
    except NAMED:
        return
    assert len(table) <= len(rows)
    if len(table):
        assert table["nodes"].between(1, PLATFORM.compute_count).all()
        assert (table["walltime"] > 0).all() and (table["runtime"] >= 0).all()
    try:
        plan, manifest = wp.prepare(path, cleaning=cleaning, bb_model="constant", bb_constant_mb=10)
    except NAMED:
        return
    validate_plan(plan)
    assert manifest["jobs"] == len(plan) == len(table)
    assert plan["submit"].iloc[0] == 0.0 and plan["submit"].is_monotonic_increasing


def _table(submits: list[float]) -> pd.DataFrame:
    n = len(submits)
    return pd.DataFrame({"job_id": np.arange(1, n + 1), "submit": submits, "runtime": np.ones(n)})


submit_lists = st.lists(st.floats(0, 1e9, allow_nan=False), min_size=1, max_size=40)


@SETTINGS
@given(submit_lists, st.integers(1, 50))
def test_periods_partition_the_jobs(submits, k):
    df = _table(submits)
    parts = [transforms.period_part(df, k, i) for i in range(k)]
    assert sum(len(p) for p in parts) == len(df)
    assert sorted(j for p in parts for j in p["job_id"]) == list(range(1, len(df) + 1))
    assert [len(p) for p in parts] == [len(p) for p in transforms.split_periods(df, k)]


@SETTINGS
@given(submit_lists, st.integers(0, 2**32))
def test_rebase_and_shuffle_keep_the_instants(submits, seed):
    df = _table(submits)
    rebased, offset = transforms.rebase(df)
    assert rebased["submit"].min() == 0.0 and offset == min(submits)
    shuffled = transforms.shuffle(rebased, seed)
    assert sorted(shuffled["submit"]) == sorted(rebased["submit"])
    assert sorted(shuffled["job_id"]) == sorted(rebased["job_id"])


finite_or_not = st.one_of(
    st.floats(-10, 1e7, allow_nan=False, allow_infinity=False), st.sampled_from([np.inf, -np.inf, np.nan])
)


@SETTINGS
@given(st.lists(st.tuples(finite_or_not, finite_or_not, finite_or_not, st.integers(-1, 200)), max_size=8))
def test_plan_schema_accepts_only_usable_plans(rows):
    df = pd.DataFrame(
        {
            "job_id": np.arange(1, len(rows) + 1, dtype=np.int64),
            "submit": [r[0] for r in rows],
            "runtime": [r[1] for r in rows],
            "walltime": [r[2] for r in rows],
            "nodes": np.array([r[3] for r in rows], dtype=np.int64),
            "bb_per_node_mb": np.zeros(len(rows), dtype=np.int64),
        }
    ).astype({"submit": "float64", "runtime": "float64", "walltime": "float64"})
    try:
        validate_plan(df)
    except SchemaError:
        return
    assert len(df) >= 1
    times = df[["submit", "runtime", "walltime"]].to_numpy()
    assert np.isfinite(times).all() and (times[:, :2] >= 0).all() and (times[:, 2] > 0).all()
    assert (df["nodes"] >= 1).all()
    path = _tmp("p.parquet")
    wp.save_plan(df, {"format": wp.MANIFEST_FORMAT, "seed": 1}, path)
    back, manifest = wp.load_plan(path)
    pd.testing.assert_frame_equal(back, df)
    assert manifest == {"format": wp.MANIFEST_FORMAT, "seed": 1}
