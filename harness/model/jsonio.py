"""JSON as the harness writes it: one encoder for numpy scalars and paths, and JSON lines
(files that grow while they are read: a last line without a newline is still being written)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from harness.model.atomic import atomic_write_text
from harness.model.checks import InputError


def json_default(value: Any) -> Any:
    """``json.dumps(default=...)``: numpy scalars become Python numbers, paths strings."""
    if hasattr(value, "item") and callable(value.item):  # numpy scalars and 0-d arrays
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__} {value!r}")


def to_json(data: Any) -> str:
    """Indented JSON of ``data`` with :func:`json_default`, no trailing newline."""
    return json.dumps(data, indent=2, default=json_default)


def nulls_for_non_finite(data: Any) -> Any:
    """``data`` with NaN and infinities as ``None``: strict JSON (``null``) for other programs."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: nulls_for_non_finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [nulls_for_non_finite(value) for value in data]
    return data


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as indented JSON with a final newline, atomically; returns ``path``."""
    return atomic_write_text(path, to_json(data) + "\n")


class JsonFileError(InputError):
    """A JSON file that cannot be read or parsed, or holds no object; the message names it."""


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file; ``{}`` if the file is absent. A file that is not JSON, not
    UTF-8, unreadable or not an object raises :class:`JsonFileError` naming the file."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise JsonFileError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", where=str(path)
        ) from None
    except UnicodeDecodeError as exc:
        raise JsonFileError(f"not UTF-8 text: byte {exc.start}", where=str(path)) from None
    except OSError as exc:
        raise JsonFileError(f"cannot read ({exc.strerror or exc})", where=str(path)) from None
    if not isinstance(data, dict):
        raise JsonFileError(f"expected a JSON object, got {type(data).__name__}", where=str(path))
    return data


def json_line(record: dict[str, Any]) -> str:
    """One line of a JSON-lines file, newline included."""
    return json.dumps(record, default=json_default) + "\n"


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one line with a single ``write`` on an O_APPEND file: processes appending to one
    file at once never interleave their lines."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, json_line(record).encode())
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete JSON line of a file (a line being written right now is skipped)."""
    try:
        return parse_jsonl(path.read_text())
    except FileNotFoundError:
        return []


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    """The complete JSON lines of ``text``; a last line without newline is still being written."""
    records = []
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
