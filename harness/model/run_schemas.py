"""The schemas of the files a run directory is read back from (manifest, steps, progress,
metrics) and of a plan's embedded manifest: what each key read back must hold.

Checked on reading (:func:`check_document`), so a hand-edited or damaged file is one line
naming the file and the key (``runs/r1/metrics.json: mean_wait: expected a number or null,
got 'fast'``) instead of a traceback deep in a report. The files are written by several
versions of the harness, so keys not listed are allowed and the listed ones are optional
unless marked required; a listed key, when present, must have its type. No validation
library is a dependency of the harness: these are the checks layer's own (docs/validation.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.model.checks import show
from harness.model.jsonio import JsonFileError
from harness.model.metric_names import METRIC_SPECS


@dataclass(frozen=True)
class Kind:
    """What a value must be: a test and the words of the message."""

    label: str
    test: Callable[[Any], bool]
    nullable: bool = False

    def accepts(self, value: Any) -> bool:
        return (value is None and self.nullable) or self.test(value)

    def describe(self) -> str:
        return f"{self.label} or null" if self.nullable else self.label

    def or_null(self) -> Kind:
        return Kind(self.label, self.test, nullable=True)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


TEXT = Kind("text", lambda v: isinstance(v, str))
FLAG = Kind("true or false", lambda v: isinstance(v, bool))
NUMBER = Kind("a number", _is_number)
COUNT = Kind("a whole number >= 0", _is_count)
OBJECT = Kind("an object", lambda v: isinstance(v, dict))
TEXT_LIST = Kind("a list of text", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))


@dataclass(frozen=True)
class Schema:
    """The keys of one file: optional ones and the few every reader needs."""

    name: str  # the file, for a message when no path is known (a plan's metadata)
    fields: Mapping[str, Kind]
    required: tuple[str, ...] = ()


MANIFEST = Schema(
    "manifest.json",
    {
        "run_id": TEXT,
        "executor": TEXT,
        "policy": TEXT.or_null(),
        "times": TEXT,
        "complete": FLAG,
        "incomplete_reason": TEXT.or_null(),
        "time_scale": OBJECT.or_null(),
        "repetition_dirs": TEXT_LIST,
        "shrink": NUMBER.or_null(),
        "speedup": NUMBER.or_null(),
        "repeat": COUNT.or_null(),
        "platform": OBJECT.or_null(),
        "settings": OBJECT,
        "plan": OBJECT,
    },
)
PROGRESS = Schema(
    "progress.json",
    {
        "updated": NUMBER,
        "elapsed_s": NUMBER,
        "total": COUNT,
        "submitted": COUNT,
        "pending": COUNT,
        "running": COUNT,
        "finished": COUNT,
        "eta_s": NUMBER.or_null(),
    },
)
STEP = Schema("steps.json", {"name": TEXT, "done_at": TEXT, "info": OBJECT}, required=("name",))
STEPS = Schema("steps.json", {"steps": Kind("a list", lambda v: isinstance(v, list))})
# every metric the harness names is a number (null: not defined, e.g. no job ran); sections
# (staging, phases, drains) are objects of their own
METRICS = Schema(
    "metrics.json",
    {name: NUMBER.or_null() for name in METRIC_SPECS},  # "jobs" too: the mean over repetitions
)
PLAN_MANIFEST = Schema(
    "the plan's manifest",
    {
        "format": TEXT,
        "version": COUNT,
        "seed": COUNT.or_null(),
        "shrink": NUMBER.or_null(),
        "span_s": NUMBER.or_null(),
        "jobs": COUNT,
        "input": OBJECT.or_null(),
    },
    required=("format",),
)


def check_document(data: Mapping[str, Any], schema: Schema, where: str = "") -> Mapping[str, Any]:
    """``data`` if every required key is there and every listed key present has its kind; else
    :class:`JsonFileError` naming ``where`` (the file) and the key."""
    place = where or schema.name
    for key in schema.required:
        if key not in data:
            raise JsonFileError(f"{key}: missing (required in {schema.name})", where=place)
    for key, kind in schema.fields.items():
        if key in data and not kind.accepts(data[key]):
            raise JsonFileError(f"{key}: expected {kind.describe()}, got {show(data[key])}", where=place)
    return data


def check_steps(data: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """The records of ``steps.json``, each an object with a name (and an object ``info``)."""
    check_document(data, STEPS, where)
    records = data.get("steps", [])
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise JsonFileError(f"steps[{index}]: expected an object, got {show(record)}", where=where)
        check_document(record, STEP, f"{where}: steps[{index}]")
    return list(records)
