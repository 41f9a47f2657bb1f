"""Standard Workload Format 2.2 reader and writer (``.swf`` and ``.swf.gz``).

An SWF file is a header of ``;`` comment lines (``; Key: value``) followed by one
record per job: 18 whitespace-separated numbers, ``-1`` meaning unknown
(https://www.cs.huji.ac.il/labs/parallel/workload/swf.html).

The reader keeps the records as an ``(n, 18)`` float64 array (exact for every
integer an SWF file holds) plus the header lines verbatim, so writing an
unmodified trace back reproduces it. It validates every record and names file,
line and field on error; ``lenient=True`` skips bad records and lists them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from harness.model import checks
from harness.model.atomic import atomic_write_bytes

N_FIELDS = 18

# (name, meaning, integer-only, minimum allowed value other than -1). In SWF, -1 means
# *unknown* in every field, job number and submit time included: archive logs hold
# placeholder records with only status, user, group, application and partition known.
# The reader accepts them; cleaning rules (harness.workload.cleaning) decide what a
# replay can use.
_FIELD_SPEC: tuple[tuple[str, str, bool, float], ...] = (
    ("job_id", "job number", True, 0),
    ("submit", "submit time", False, 0),
    ("wait", "wait time", False, 0),
    ("runtime", "run time", False, 0),
    ("procs_alloc", "allocated processors", True, 0),
    ("cpu_time_avg", "average CPU time used", False, 0),
    ("mem_used", "used memory", False, 0),
    ("procs_req", "requested processors", True, 0),
    ("time_req", "requested time", False, 0),
    ("mem_req", "requested memory", False, 0),
    ("status", "status", True, 0),
    ("user", "user id", True, 0),
    ("group", "group id", True, 0),
    ("executable", "executable number", True, 0),
    ("queue", "queue number", True, 0),
    ("partition", "partition number", True, 0),
    ("preceding_job", "preceding job number", True, 0),
    ("think_time", "think time from preceding job", False, 0),
)
FIELD_NAMES: tuple[str, ...] = tuple(spec[0] for spec in _FIELD_SPEC)
FIELD_MEANINGS: tuple[str, ...] = tuple(spec[1] for spec in _FIELD_SPEC)

# The largest magnitude a field may have: every integer up to it is exact in the reader's
# float64 and fits the job table's int64 (job numbers and sizes beyond it would wrap or round).
MAX_FIELD = 2**53

_HEADER_KEY = re.compile(r"^;\s{0,3}([A-Za-z][A-Za-z0-9_ ]*?):(?:\s+(.*))?$")
_FIELD_TOKEN = re.compile(r"\s*\S+")


class SwfError(ValueError):
    """A trace cannot be read: names the file and, when known, the line and field."""

    def __init__(self, path: str, message: str, line: int | None = None, field: int | None = None):
        self.path, self.line, self.field, self.reason = path, line, field, message
        where = path if line is None else f"{path}:{line}"
        if field is not None:
            where += f": field {field} ({FIELD_MEANINGS[field - 1]})"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class SkippedRecord:
    """A malformed record that ``lenient`` reading left out."""

    line: int
    field: int | None
    reason: str

    def __str__(self) -> str:
        where = f"line {self.line}" + (f", field {self.field}" if self.field else "")
        return f"{where}: {self.reason}"


@dataclass
class SwfTrace:
    """A parsed SWF file."""

    path: str
    header_lines: list[str]
    records: np.ndarray  # (n, 18) float64, -1 = unknown
    lines: np.ndarray  # (n,) int64, 1-based source line of each record
    skipped: list[SkippedRecord] = field(default_factory=list)
    sha256: str = ""  # of the (decompressed) text
    file_sha256: str = ""  # of the file as stored (gzip bytes for .gz)
    column_widths: tuple[int, ...] | None = None  # of the first record, reused by the writer

    @property
    def metadata(self) -> dict[str, str]:
        return parse_header(self.header_lines)

    def header_int(self, key: str) -> int | None:
        """An integer header value (``MaxNodes``, ``UnixStartTime``, ...), None if absent."""
        value = self.metadata.get(key)
        if value is None:
            return None
        try:
            return int(value.split()[0])
        except (ValueError, IndexError):
            return None

    def __len__(self) -> int:
        return int(self.records.shape[0])


# -- header ---------------------------------------------------------------------------


def parse_header(header_lines: list[str]) -> dict[str, str]:
    """``; Key: value`` lines into a dict. Indented lines without a key continue the
    previous value; a key given twice (``Note``) has its values joined by newlines."""
    meta: dict[str, str] = {}
    last: str | None = None
    for raw in header_lines:
        line = raw.rstrip()
        match = _HEADER_KEY.match(line)
        if match:
            last = match.group(1).strip()
            value = (match.group(2) or "").strip()
            meta[last] = f"{meta[last]}\n{value}" if last in meta else value
        elif last is not None and line.lstrip(";").strip():
            meta[last] = f"{meta[last]}\n{line.lstrip(';').strip()}"
    return meta


# -- reading --------------------------------------------------------------------------


def read_swf(path: str | Path, *, lenient: bool = False) -> SwfTrace:
    """Read and validate an SWF trace (gzip detected by its magic bytes).

    Raises SwfError for the first malformed record, or, with ``lenient``, skips
    malformed records and lists them in ``trace.skipped``. An empty file, a file
    with only header lines and a broken gzip stream are errors in both modes.
    """
    name = str(path)
    try:
        stored = checks.read_input(path, "")  # a FIFO nobody writes to is empty, not a hang
    except checks.InputError as exc:
        raise SwfError(name, str(exc).removeprefix(f"{name}: ")) from None
    except OSError as exc:
        raise SwfError(name, f"cannot read: {exc.strerror or exc}") from None
    data = _decompress(name, stored)
    # surrogateescape: odd bytes in comments survive a write-back unchanged; a UTF-8 byte
    # order mark (some editors write one) is not part of the first line.
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    header, record_texts, line_numbers = _split_lines(text)
    if not record_texts:
        what = "empty file" if not text.strip() else f"header only ({len(header)} comment lines)"
        raise SwfError(name, f"no job records: {what}")
    records, lines, skipped = _parse_records(name, record_texts, line_numbers, lenient)
    if len(records) == 0:
        raise SwfError(name, f"no valid job records: all {len(skipped)} records are malformed")
    return SwfTrace(
        path=name,
        header_lines=header,
        records=records,
        lines=lines,
        skipped=skipped,
        sha256=hashlib.sha256(data).hexdigest(),
        file_sha256=hashlib.sha256(stored).hexdigest(),
        column_widths=_column_widths(record_texts[0]),
    )


def _decompress(name: str, stored: bytes) -> bytes:
    if stored[:2] != b"\x1f\x8b":
        return stored
    limit = checks.expansion_limit(len(stored))  # a gzip bomb never takes its size in memory
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(stored)) as stream:
            data = stream.read(limit + 1)
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        complete = _gzip_prefix(stored).count(b"\n")
        raise SwfError(
            name,
            f"truncated or corrupt gzip stream ({exc}); the data breaks off after {complete} complete lines",
            line=complete + 1,
        ) from None
    if len(data) > limit:
        raise SwfError(name, f"{len(stored):,} gzip bytes expand beyond {limit:,} ({checks.EXPANSION_RULE}): "
                       "not read; decompress it yourself if it is real (zcat T.swf.gz > T.swf)")  # fmt: skip
    return data


def _gzip_prefix(stored: bytes) -> bytes:
    """What a broken gzip stream yields before it breaks (to say where it broke)."""
    decomp = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    try:
        return decomp.decompress(stored)
    except zlib.error:
        return b""


def _split_lines(text: str) -> tuple[list[str], list[str], list[int]]:
    header: list[str] = []
    records: list[str] = []
    numbers: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            header.append(line.rstrip("\r"))
        else:
            records.append(line.rstrip("\r"))  # leading blanks kept: they give the column layout
            numbers.append(number)
    return header, records, numbers


def _parse_records(
    name: str, texts: list[str], numbers: list[int], lenient: bool
) -> tuple[np.ndarray, np.ndarray, list[SkippedRecord]]:
    """Records as numbers plus their source lines; malformed ones raise or are skipped."""
    fast = _fast_numbers(texts)
    if fast is not None:  # every record has 18 numbers: only the domains remain to check
        fast_problems: dict[int, SkippedRecord] = {}
        _check_domains(lambda i: texts[i].split(), list(range(len(texts))), fast, numbers, fast_problems)
        if not fast_problems:
            return fast, np.asarray(numbers, dtype=np.int64), []
    tokens = [t.split() for t in texts]
    problems: dict[int, SkippedRecord] = {}  # record position -> why it is bad
    for i, toks in enumerate(tokens):
        if len(toks) != N_FIELDS:
            problems[i] = SkippedRecord(numbers[i], None, f"expected {N_FIELDS} fields, got {len(toks)}")
    good = [i for i in range(len(tokens)) if i not in problems]
    values = _to_numbers(tokens, good, numbers, problems)
    good = [i for i in good if i not in problems]  # now aligned with the rows of values
    _check_domains(tokens.__getitem__, good, values, numbers, problems)
    if problems and not lenient:
        _raise_first(name, problems)
    keep = [k for k, i in enumerate(good) if i not in problems]
    records = values[keep] if keep else np.empty((0, N_FIELDS))
    lines = np.asarray([numbers[good[k]] for k in keep], dtype=np.int64)
    return records, lines, [problems[i] for i in sorted(problems)]


def _fast_numbers(texts: list[str]) -> np.ndarray | None:
    """All records at once with pandas' C parser (a 447,794-record log in about a second
    instead of ten), or None when any record is not 18 numbers: the careful path then
    names each bad record."""
    if not texts or len(texts[0].split()) != N_FIELDS:  # a wider first line would shift columns
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            frame = pd.read_csv(
                io.StringIO("\n".join(texts)), sep=r"\s+", header=None, names=range(N_FIELDS),
                index_col=False, dtype=np.float64, engine="c", skip_blank_lines=False,
            )  # fmt: skip
    except (ValueError, pd.errors.ParserError, pd.errors.ParserWarning):
        return None
    values = frame.to_numpy(dtype=np.float64)
    if values.shape != (len(texts), N_FIELDS) or not np.isfinite(values).all():
        return None  # a short record (NaN-filled) or a 'nan'/'inf' token
    return values


def _raise_first(name: str, problems: dict[int, SkippedRecord]) -> None:
    first = problems[min(problems)]
    more = ""
    if len(problems) > 1:
        more = f" ({len(problems) - 1} more malformed record(s); --lenient skips them)"
    raise SwfError(name, first.reason + more, line=first.line, field=first.field)


def _to_numbers(
    tokens: list[list[str]], good: list[int], numbers: list[int], problems: dict[int, SkippedRecord]
) -> np.ndarray:
    """Convert the well-sized records; a record with a non-number becomes a problem."""
    try:  # fast path: the whole trace at once
        values = np.array([tokens[i] for i in good], dtype=np.float64).reshape(len(good), N_FIELDS)
        bad_rows = ~np.isfinite(values).all(axis=1)
        if not bad_rows.any():
            return values
    except ValueError:
        pass
    rows = []
    for i in good:
        row = _record_numbers(tokens[i], numbers[i])
        if isinstance(row, SkippedRecord):
            problems[i] = row
        else:
            rows.append(row)
    return np.array(rows, dtype=np.float64).reshape(len(rows), N_FIELDS)


def _record_numbers(toks: list[str], line: int) -> list[float] | SkippedRecord:
    row = []
    for k, tok in enumerate(toks):
        try:
            value = float(tok)
        except ValueError:
            value = float("nan")
        if not np.isfinite(value):
            return SkippedRecord(line, k + 1, f"expected a number, got {tok!r}")
        row.append(value)
    return row


def _check_domains(
    tokens_of: Callable[[int], list[str]],
    good: list[int],
    values: np.ndarray,
    numbers: list[int],
    problems: dict[int, SkippedRecord],
) -> None:
    """Integer-only fields must hold integers; a value is -1 (unknown) or in range."""
    if not len(values):
        return
    bad = np.zeros(values.shape, dtype=bool)
    for k, (_, _, integer, minimum) in enumerate(_FIELD_SPEC):
        col = values[:, k]
        in_range = (col == -1) | (col >= minimum)
        bad[:, k] = ~in_range | (integer & (col != np.floor(col))) | (np.abs(col) > MAX_FIELD)
    for row in np.flatnonzero(bad.any(axis=1)):
        k = int(np.flatnonzero(bad[row])[0])
        i = good[row]
        want = "at most 2**53 (beyond it integers are not exact)" if abs(values[row, k]) > MAX_FIELD else ""
        problems[i] = SkippedRecord(
            numbers[i], k + 1, f"expected {want or _expectation(k)}, got {tokens_of(i)[k]!r}"
        )


def _expectation(k: int) -> str:
    _, _, integer, _ = _FIELD_SPEC[k]
    kind = "integer" if integer else "number"
    return f"-1 (unknown) or a non-negative {kind}"


def _column_widths(first_record: str) -> tuple[int, ...] | None:
    widths = tuple(len(m.group()) for m in _FIELD_TOKEN.finditer(first_record))
    return widths if len(widths) == N_FIELDS else None


# -- writing --------------------------------------------------------------------------


def format_records(records: np.ndarray, widths: tuple[int, ...] | None = None) -> list[str]:
    """Records as right-aligned text lines. Columns are at least ``widths`` wide (the
    layout of the file they came from) and grow when a value needs more room."""
    columns = [_format_column(records[:, k]) for k in range(N_FIELDS)]
    col_widths = []
    for k, col in enumerate(columns):
        need = max((len(s) for s in col), default=1) + (1 if k else 0)
        col_widths.append(max(need, widths[k] if widths else 0))
    return [
        "".join(col[r].rjust(w) for col, w in zip(columns, col_widths, strict=True))
        for r in range(records.shape[0])
    ]


def _format_column(values: np.ndarray) -> list[str]:
    if np.all(values == np.floor(values)):
        return [str(v) for v in values.astype(np.int64).tolist()]
    return [str(int(v)) if v == int(v) else repr(float(v)) for v in values.tolist()]


def write_swf(
    path: str | Path,
    records: np.ndarray,
    header_lines: list[str] | None = None,
    widths: tuple[int, ...] | None = None,
) -> None:
    """Write an SWF file (gzip when the name ends in ``.gz``; reproducible: mtime 0)."""
    records = np.asarray(records, dtype=np.float64)
    if records.ndim != 2 or records.shape[1] != N_FIELDS:
        raise ValueError(f"records must have shape (n, {N_FIELDS}), got {records.shape}")
    lines = list(header_lines or []) + format_records(records, widths)
    data = ("\n".join(lines) + "\n").encode("utf-8", errors="surrogateescape")
    target = Path(path)
    if target.name.endswith(".gz"):
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
            gz.write(data)
        data = buf.getvalue()
    atomic_write_bytes(target, data)


def write_trace(path: str | Path, trace: SwfTrace) -> None:
    """Write a trace back with its header and its column layout."""
    write_swf(path, trace.records, trace.header_lines, trace.column_widths)
