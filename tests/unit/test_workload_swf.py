"""SWF reader/writer: the real KTH trace, round trips, and the malformed corpus."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

from harness.workload.swf import SwfError, format_records, parse_header, read_swf, write_swf, write_trace
from harness.workload.table import table_to_records, trace_to_table
from tests.kth import KTH, needs_kth

DATA = Path(__file__).resolve().parents[1] / "data"
KTH_SHA256 = "fba36494c4e4257f72182e8b629ebb0bcb054b3b82851ef957445bd627adcc87"  # README beside it


@pytest.fixture(scope="module")
def kth():
    return read_swf(KTH)


@needs_kth
def test_kth_records_checksum_and_header(kth):
    assert len(kth) == 28476
    assert kth.sha256 == KTH_SHA256
    assert kth.skipped == []
    assert kth.header_int("MaxNodes") == 100
    assert kth.header_int("MaxProcs") == 100
    assert kth.header_int("UnixStartTime") == 843480031
    assert kth.metadata["Computer"] == "IBM SP2"


@needs_kth
def test_kth_first_and_last_record_exactly(kth):
    first = [15, 599850, 192180, 3477, 4, -1, -1, 4, 53940, -1, 1, 12, 12, -1, -1, -1, -1, -1]
    last = [28490, 29363618, 720, 8, 1, -1, -1, 1, 30000, -1, 1, 98, 198, -1, -1, -1, -1, -1]
    assert kth.records[0].tolist() == first
    assert kth.records[-1].tolist() == last
    # 24 header lines, so the first record is on line 25 and the last on 24 + 28476
    assert (kth.lines[0], kth.lines[-1]) == (25, 28500)


@needs_kth
def test_kth_write_back_reproduces_the_file(kth, tmp_path):
    target = tmp_path / "kth.swf"
    write_trace(target, kth)
    assert target.read_bytes() == gzip.decompress(KTH.read_bytes())


@needs_kth
def test_kth_gzip_round_trip_records(kth, tmp_path):
    target = tmp_path / "kth.swf.gz"
    write_trace(target, kth)
    again = read_swf(target)
    assert np.array_equal(again.records, kth.records)
    assert again.header_lines == kth.header_lines
    assert again.sha256 == KTH_SHA256


@needs_kth
def test_kth_table_round_trip_records(kth):
    """trace -> job table -> records gives the records back (NA <-> -1)."""
    assert np.array_equal(table_to_records(trace_to_table(kth)), kth.records)


def test_header_continuations_and_repeated_keys():
    meta = parse_header(
        [
            "; Version: 2.2",
            "; Information: http://a.example/",
            ";              http://b.example/",
            "; Note: first",
            "; Note: second",
            ";       more of second",
            ";",
        ]
    )
    assert meta == {
        "Version": "2.2",
        "Information": "http://a.example/\nhttp://b.example/",
        "Note": "first\nsecond\nmore of second",
    }


def test_small_table_nodes_fall_back_to_allocated_processors():
    table = trace_to_table(read_swf(DATA / "small.swf"))
    nodes = table.set_index("job_id")["nodes"]
    assert nodes[1] == 4
    assert nodes[5] == 3  # field 8 is -1, field 5 is 3
    assert nodes.isna()[4]  # both -1
    assert table.set_index("job_id")["runtime"].isna()[9]
    assert table.set_index("job_id")["walltime"].isna()[8]


def test_writer_widens_columns_that_need_room():
    rec = np.full((2, 18), -1.0)
    rec[:, 0] = [1, 123456]
    rec[:, 1] = [0, 2.5]
    # column 1 needs 6 characters (> 3 given); column 2 holds "2.5": 3 + 1 separator = 4
    assert format_records(rec, widths=(3,) + (4,) * 17) == [
        "     1" + "   0" + "  -1" * 16,
        "123456" + " 2.5" + "  -1" * 16,
    ]


def test_write_swf_rejects_wrong_shape(tmp_path):
    with pytest.raises(ValueError, match=r"shape \(n, 18\)"):
        write_swf(tmp_path / "x.swf", np.zeros((2, 17)))


@pytest.mark.parametrize(
    ("name", "line", "field", "reason"),
    [
        ("bad_field_count.swf", 4, None, "expected 18 fields, got 17"),
        ("bad_text_field.swf", 5, 4, "expected a number, got '12a'"),
        ("bad_negative_size.swf", 3, 8, "expected -1 (unknown) or a non-negative integer, got '-4'"),
    ],
)
def test_malformed_record_names_file_line_and_field(name, line, field, reason):
    with pytest.raises(SwfError) as err:
        read_swf(DATA / name)
    assert (err.value.line, err.value.field, err.value.reason) == (line, field, reason)
    assert str(err.value).startswith(f"{DATA / name}:{line}: ")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.swf", "no job records: empty file"),
        ("header_only.swf", "no job records: header only (2 comment lines)"),
    ],
)
@pytest.mark.parametrize("lenient", [False, True])
def test_empty_and_header_only_fail_even_when_lenient(name, message, lenient):
    with pytest.raises(SwfError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_swf(DATA / name, lenient=lenient)


@pytest.mark.parametrize("lenient", [False, True])
def test_truncated_gzip_says_where_it_breaks(lenient):
    with pytest.raises(SwfError, match="truncated or corrupt gzip stream") as err:
        read_swf(DATA / "truncated.swf.gz", lenient=lenient)
    # the intact prefix holds 6 whole lines of the 18-line file; the break is in line 7
    assert err.value.line == 7


def test_missing_file_is_an_swf_error(tmp_path):
    with pytest.raises(SwfError, match="cannot read"):
        read_swf(tmp_path / "nope.swf")


def test_strict_reports_first_problem_and_how_many_more():
    with pytest.raises(SwfError, match=r"mixed_bad.swf:4: expected 18 fields, got 17 \(3 more malformed"):
        read_swf(DATA / "mixed_bad.swf")


def test_lenient_skips_and_lists_bad_records():
    trace = read_swf(DATA / "mixed_bad.swf", lenient=True)
    assert trace.records[:, 0].tolist() == [1, 2, 3]
    assert trace.lines.tolist() == [3, 6, 9]
    assert [str(s) for s in trace.skipped] == [
        "line 4: expected 18 fields, got 17",
        "line 5, field 4: expected a number, got 'ten'",
        "line 7, field 5: expected -1 (unknown) or a non-negative integer, got '2.5'",
        "line 8, field 8: expected -1 (unknown) or a non-negative integer, got '-2'",
    ]


def test_sha256_is_of_the_decompressed_text(tmp_path):
    text = (DATA / "small.swf").read_bytes()
    packed = tmp_path / "small.swf.gz"
    packed.write_bytes(gzip.compress(text))
    trace = read_swf(packed)
    assert trace.sha256 == hashlib.sha256(text).hexdigest()
    assert trace.file_sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()


def test_placeholder_records_parse():
    """-1 is 'unknown' in every field, job number and submit time included."""
    trace = read_swf(DATA / "placeholders.swf")
    assert len(trace) == 8 and not trace.skipped
    assert trace.records[1].tolist() == [-1] * 10 + [5, 7, 7, 3, -1, 2, -1, -1]
    assert trace.records[:, 0].tolist() == [1, -1, 2, -1, -1, 3, 17, 2]
    table = trace_to_table(trace)
    assert table["submit"].isna().tolist() == [False, True, False, True, False, False, True, False]
    assert table["job_id"].isna().sum() == 3


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        (1, "expected 18 fields, got 19"),  # a wide first record must not shift the columns
        (3, "expected 18 fields, got 19"),
        (2, "expected 18 fields, got 17"),
        (3, "expected a number, got 'nan'"),
    ],
)
def test_fast_parser_falls_back_and_names_the_bad_record(tmp_path, bad_line, reason):
    good = "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1"
    bad = {"got 19": good + " 7", "got 17": good.rsplit(" ", 1)[0], "'nan'": good.replace(" 10 ", " nan ")}
    lines = [good.replace("1 0 ", f"{n} {n} ", 1) for n in range(1, 5)]
    lines[bad_line - 1] = next(v for k, v in bad.items() if k in reason)
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SwfError) as err:
        read_swf(path)
    assert (err.value.line, err.value.reason) == (bad_line, reason)
    assert len(read_swf(path, lenient=True)) == 3
