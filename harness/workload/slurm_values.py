"""Slurm's ways of writing a value, read once for every layer: numbers of its JSON, instants,
durations, memory sizes, TRES lists and job states.

Pure functions of text or decoded JSON (no Slurm needed): the sacct reader of the workload
layer uses them on a site's files, the Slurm adapter (``harness.slurm.sacct``,
``harness.slurm.jobcomp``) on the cluster's own output. Each raises :class:`SlurmValueError`
with what was expected; the caller adds where the value came from.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime, tzinfo
from typing import Any

# Slurm's sentinels of a 32- or 64-bit unsigned field that older data_parsers (23.02) print raw
NO_VAL = (0xFFFFFFFE, 0xFFFFFFFFFFFFFFFE)
INFINITE = (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)

# A job's base state (sacct's State, data_parser's state/current) and its SWF status.
BASE_STATES: dict[str, int] = {
    "COMPLETED": 1,
    "CANCELLED": 5,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "OUT_OF_MEMORY": 0,
    "BOOT_FAIL": 0,
    "DEADLINE": 0,
    "PREEMPTED": 0,
    "REQUEUED": 0,
    "REVOKED": 0,
    "SPECIAL_EXIT": 0,
    "PENDING": -1,
    "RUNNING": -1,
    "SUSPENDED": -1,
    "COMPLETING": -1,
    "RESIZING": -1,
    "CONFIGURING": -1,
}
# States of a job still in the system when sacct ran: its end is not known yet.
UNFINISHED_STATES = frozenset({"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "RESIZING", "CONFIGURING"})

_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
_DURATION = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?(?:\.\d+)?")
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)([nc]?)", re.IGNORECASE)
_MB_PER_UNIT = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
NO_LIMIT_WORDS = frozenset({"UNLIMITED", "PARTITION_LIMIT", "INFINITE", "NONE", "INVALID", ""})
UNKNOWN_TIME_WORDS = frozenset({"", "UNKNOWN", "NONE", "N/A"})


class SlurmValueError(ValueError):
    """A value is not written the way Slurm writes it; the message says what was expected."""


def json_number(value: Any) -> float | None:
    """A number of Slurm's JSON: a plain integer or float (23.02's layouts and the times of
    24.11's sacct), or an object ``{"set", "infinite", "number"}`` (23.11 and later). Returns
    None when unset, ``math.inf`` when infinite."""
    if isinstance(value, dict):
        if not {"set", "number"} <= value.keys():
            keys = sorted(value)
            raise SlurmValueError(f"expected a number or an object with 'set' and 'number', got keys {keys}")
        if value.get("infinite"):
            return math.inf
        if not value["set"]:
            return None
        value = value["number"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SlurmValueError(f"expected a number, got {value!r}"[:120])
    return float(value)


def without_sentinel(number: float | None) -> float | None:
    """A 32/64-bit field printed raw by 23.02: NO_VAL is unset (None), INFINITE is ``inf``."""
    if number is None:
        return None
    if number in NO_VAL:
        return None
    if number in INFINITE:
        return math.inf
    return number


def timestamp(text: str, zone: tzinfo = UTC) -> float | None:
    """Slurm's ``2026-11-22T07:27:19`` as epoch seconds, read in ``zone`` (Slurm prints the
    local time of the host, without a zone; the project's containers run in UTC). None for
    ``Unknown``, ``None`` and an empty field."""
    word = text.strip()
    if word.upper() in UNKNOWN_TIME_WORDS:
        return None
    return _instant(word, zone)


@functools.lru_cache(maxsize=1 << 16)
def _instant(word: str, zone: tzinfo) -> float:
    """Cached: a history repeats its instants (submit = eligible, one job's end another's
    start), and strptime was a third of reading an sacct table."""
    try:
        if not _INSTANT.fullmatch(word):
            raise ValueError
        instant = datetime.fromisoformat(word)
    except ValueError:
        raise SlurmValueError(f"expected an instant like 2024-05-01T12:00:00, got {word!r}") from None
    return instant.replace(tzinfo=zone).timestamp()


def duration_s(text: str) -> float | None:
    """Slurm's durations as seconds: ``1-02:03:04``, ``02:03:04``, ``03:04`` (minutes and
    seconds), ``1-02`` (days and hours), ``1-02:03``. None for ``UNLIMITED``,
    ``Partition_Limit`` and the other words of no limit."""
    word = text.strip()
    if word.upper() in NO_LIMIT_WORDS:
        return None
    match = _DURATION.fullmatch(word)
    if not match or (":" not in word and "-" not in word):
        raise SlurmValueError(f"expected a duration like 1-02:03:04 or UNLIMITED, got {text!r}")
    days, a, b, c = match.groups()
    fields = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = [*fields, 0, 0][:3]
        return float(int(days) * 86400 + hours * 3600 + minutes * 60 + seconds)
    if len(fields) == 2:  # MM:SS
        return float(fields[0] * 60 + fields[1])
    return float(fields[0] * 3600 + fields[1] * 60 + fields[2])


def minutes_s(text: str) -> float | None:
    """A raw limit in minutes (``TimelimitRaw``) as seconds; None for the words of no limit."""
    word = text.strip()
    if word.upper() in NO_LIMIT_WORDS:
        return None
    if not word.isdigit():
        raise SlurmValueError(f"expected whole minutes or UNLIMITED, got {text!r}")
    minutes = without_sentinel(float(int(word)))
    return None if minutes is None or math.isinf(minutes) else minutes * 60.0


def memory_mb(text: str) -> tuple[float, str] | None:
    """``4000M``, ``4G``, ``4Gn`` (per node), ``2000Mc`` (per CPU) -> (MB, ``"n"``, ``"c"`` or
    ``""``); a number without unit is MB, as in Slurm. None for an empty field."""
    word = text.strip()
    if not word or word == "0":
        return None
    match = _MEMORY.fullmatch(word)
    if not match:
        raise SlurmValueError(f"expected a memory size like 4000M, 4G or 2000Mc, got {text!r}")
    number, unit, per = match.groups()
    return float(number) * _MB_PER_UNIT[(unit or "M").upper()], per.lower()


def tres_text(text: str) -> list[tuple[str, str, float]]:
    """``cpu=4,mem=16G,node=1,gres/gpu:a100=2,license/bb=100`` -> [(type, name, count)];
    memory in MB (sacct prints it with a unit), the rest as counts."""
    items: list[tuple[str, str, float]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise SlurmValueError(f"expected TRES as type=count,..., got {part!r} in {text!r}"[:160])
        kind, _, name = key.partition("/")
        if kind == "mem":
            size = memory_mb(value)
            items.append((kind, name, size[0] if size else 0.0))
            continue
        try:
            items.append((kind, name, float(value)))
        except ValueError:
            size = memory_mb(value)  # bb/datawarp sizes carry a unit too
            items.append((kind, name, size[0] if size else 0.0))
    return items


def gres_request(tres: list[tuple[str, str, float]], nodes: int | None = None) -> tuple[str, int]:
    """(``--gres`` text, GPUs) of a TRES list's ``gres`` items. Slurm lists a typed request
    under its name too (``gres/gpu=2`` with ``gres/gpu:a100=2``): that is ``gpu:a100:2``, two
    GPUs, not four. A TRES count is the whole job's (``--gres=gpu:2 -N2`` is ``gres/gpu=4``)
    and ``--gres`` is per node: with ``nodes`` each count is divided by them, rounded up when
    it does not divide (``--gpus=3 -N2``: ``gpu:2``, a node held two). GPUs stay the job's."""
    gres = {name: int(count) for kind, name, count in tres if kind == "gres" and name and count > 0}
    typed_names = {name.split(":")[0] for name in gres if ":" in name}
    kept = {name: count for name, count in gres.items() if ":" in name or name not in typed_names}
    gpus = sum(count for name, count in kept.items() if name.split(":")[0] == "gpu")
    per = max(1, nodes or 1)
    return ",".join(f"{name}:{-(-count // per)}" for name, count in kept.items()), gpus


def base_state(words: str | list[str]) -> str:
    """The base state of ``CANCELLED by 1234``, ``["FAILED", "REQUEUED"]`` or ``COMPLETED``:
    the first word that is a job state (flags such as ``REQUEUED`` after a base state are
    left); ``""`` when none is. Upper case."""
    candidates = words if isinstance(words, list) else re.split(r"[\s,]+", words)
    known = [w.upper() for w in candidates if isinstance(w, str) and w.upper() in BASE_STATES]
    return known[0] if known else ""
