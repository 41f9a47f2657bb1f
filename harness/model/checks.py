"""The one validation layer: typed checks of a value a user typed or wrote in a file.

Every checker takes the value and ``where`` it came from (``exp.toml: [workload] drift``,
``--bb-constant``) and returns the value typed, or raises :class:`InputError` whose message
starts with ``where`` and says what was expected. The command line turns an
:class:`InputError` into one line ``Error: ...`` and exit status 2 (a usage error); the
option types of ``harness.cli.options`` and the loaders of the experiment and platform files
use these checks, so a value refused in one place is refused in the other. What is checked
is listed in ``docs/validation.md``.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_INT64 = 2**63 - 1  # numpy's int64 columns: a larger value wraps silently
MAX_INT32 = 2**31 - 1  # Slurm keeps counts, CPUs and memory (MB) in 32-bit fields
MAX_JOBS = 1_000_000  # jobs a generator may make (KTH-SP2 has 28,000; its Python loop: minutes)
MAX_REPETITIONS = 1_000  # repetitions of one job (Feitelson's model) or of one experiment cell
MAX_PARTS = 10_000  # equal periods of a trace (Kopanski: 16)
MAX_CELLS = 100_000  # cells of an experiment's grid (a simulated cell takes seconds: days of work)
MAX_TRACE_BYTES = 2**31  # a trace once decompressed (the largest archive traces are far smaller)
MAX_CONFIG_BYTES = 64 * 2**20  # a platform or experiment file (the shipped ones: a few kB)
# A gzip trace expands ~7 times (KTH-SP2: 388 kB -> 2.6 MB); a gzip of blank lines 1000 times
# (200 kB -> 200 MB, then GBs of lines in memory): above this ratio it is not read.
MAX_EXPANSION = 100
MIN_EXPANSION_BYTES = 16 * 2**20  # a small file may expand more (its header lines compress well)
EXPANSION_RULE = f"at most {MAX_EXPANSION} times and {MAX_TRACE_BYTES:,} bytes; archive traces: ~7 times"
MAX_NAME = 128
# A name that becomes a file or directory name, a container name or a word of a Slurm file
# (Docker's rule for container names).
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SAFE_NAME_RULE = "a letter or digit, then letters, digits, '.', '_' or '-' (no '/', '..' or spaces)"
# A name that is only written into files (a platform's, in slurm.conf's comment): '+' too.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
LABEL_RULE = "a letter or digit, then letters, digits, '.', '_', '+' or '-' (no '/', '..' or spaces)"


class InputError(ValueError):
    """A value a user gave is refused; the message names where it came from and the rule."""

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where


def show(value: Any) -> str:
    """``repr`` of a value for a message, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def refuse(where: str, expected: str, value: Any) -> InputError:
    """The error of a refused value: ``where: expected EXPECTED, got VALUE``."""
    return InputError(f"expected {expected}, got {show(value)}", where=where)


@dataclass(frozen=True)
class Range:
    """An interval of numbers: ``low``/``high`` None for unbounded, ``*_open`` excludes the bound."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, number: float) -> bool:
        above = self.low is None or (number > self.low if self.low_open else number >= self.low)
        below = self.high is None or (number < self.high if self.high_open else number <= self.high)
        return above and below

    def describe(self) -> str:
        """``a finite number``, ``... > 0``, ``... <= 1`` or ``... in [0, 1)``."""
        if self.low is not None and self.high is not None:
            lb, rb = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"a finite number in {lb}{self.low:g}, {self.high:g}{rb}"
        if self.low is not None:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"a finite number {'<' if self.high_open else '<='} {self.high:g}"
        return "a finite number"


ANY_NUMBER = Range()
POSITIVE = Range(0.0, low_open=True)
NON_NEGATIVE = Range(0.0)


def number(value: Any, where: str, allowed: Range = ANY_NUMBER, note: str = "") -> float:
    """A finite number (an int or a float, not a bool or text) inside ``allowed``; ``note``
    says why the bounds are what they are."""
    try:
        parsed = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    except OverflowError:  # an int beyond a float
        parsed = None
    if parsed is None or not math.isfinite(parsed) or parsed not in allowed:
        raise refuse(where, allowed.describe() + (f" ({note})" if note else ""), value)
    return parsed


def numbers(values: Iterable[Any], where: str, allowed: Range = ANY_NUMBER) -> tuple[float, ...]:
    """Every value of a list checked by :func:`number`."""
    return tuple(number(v, where, allowed) for v in values)


def integer(value: Any, where: str, minimum: int | None = None, maximum: int = MAX_INT64) -> int:
    """An integer (not a bool, a float or text) in ``minimum..maximum``; never above int64."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(where, integer_rule(minimum, maximum), value)
    if (minimum is not None and value < minimum) or value > maximum:
        raise refuse(where, integer_rule(minimum, maximum, value > MAX_INT64), value)
    return value


def integer_rule(minimum: int | None, maximum: int = MAX_INT64, show_int64: bool = False) -> str:
    """``an integer >= 1``, ``an integer in 1..1000`` (int64's bound said only when passed)."""
    if maximum == MAX_INT64 and not show_int64:
        return "an integer" + ("" if minimum is None else f" >= {minimum}")
    high = "2**63-1" if maximum == MAX_INT64 else str(maximum)
    return f"an integer in {minimum}..{high}" if minimum is not None else f"an integer <= {high}"


def safe_name(
    value: Any, where: str, pattern: re.Pattern[str] = SAFE_NAME, rule: str = SAFE_NAME_RULE
) -> str:
    """A name that can become a path component, a container name or a Slurm word: no path
    separator, no ``..``, no whitespace or control character, at most 128 characters."""
    ok = isinstance(value, str) and len(value) <= MAX_NAME and pattern.fullmatch(value) is not None
    if not ok or ".." in value:
        raise refuse(where, f"a name of {rule}, at most {MAX_NAME} characters", value)
    return str(value)


def one_line(value: Any, where: str, maximum: int = 1000) -> str:
    """Free text that goes into a comment of a generated file: one line, no control characters."""
    if not isinstance(value, str) or len(value) > maximum or any(ord(c) < 32 or ord(c) == 127 for c in value):
        wanted = f"one line of text without control characters, at most {maximum} characters"
        raise refuse(where, wanted, value)
    return value


def readable_file(path: str | Path, where: str) -> Path:
    """An existing regular file this process can read (a FIFO, a device or a directory would
    block or mislead a reader)."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except OSError as exc:
        raise InputError(f"{target}: cannot read ({exc.strerror or exc})", where=where) from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
        raise InputError(f"{target}: is {kind}, not a regular file", where=where)
    if not os.access(target, os.R_OK):
        raise InputError(f"{target}: cannot read (permission denied)", where=where)
    return target


def expansion_limit(stored_bytes: int) -> int:
    """The most bytes a compressed input of ``stored_bytes`` may expand to (``EXPANSION_RULE``)."""
    return min(MAX_TRACE_BYTES, max(stored_bytes * MAX_EXPANSION, MIN_EXPANSION_BYTES))


def read_config(path: str | Path, where: str = "", limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of a configuration file (platform, experiment, slurm.conf): a regular file
    (a FIFO would block the reader for ever, ``/dev/zero`` never end) of at most ``limit``."""
    target = readable_file(path, where)
    try:
        with open(target, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{target}: cannot read ({exc.strerror or exc})", where=where) from None
    if len(data) > limit:
        raise InputError(f"{target}: larger than {limit:,} bytes: not a configuration file", where=where)
    return data


def read_input(path: str | Path, where: str, limit: int = MAX_TRACE_BYTES) -> bytes:
    """The bytes of an input file or pipe (``<(zcat t.swf.gz)``), at most ``limit``. A named
    FIFO nobody writes to reads as empty instead of blocking for ever; a directory or a
    device (``/dev/zero`` never ends) is refused."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            kind = "a directory" if stat.S_ISDIR(mode) else "a device or special file"
            raise InputError(f"{target}: is {kind}, not a file", where=where)
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO would wait for a writer
    except OSError as exc:
        raise InputError(f"{target}: cannot read ({exc.strerror or exc})", where=where) from None
    os.set_blocking(fd, True)  # now a pipe's reads wait for its writer, and end when it closes
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{target}: larger than {limit:,} bytes", where=where)
    return data


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``known``, else ``""``."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def known_keys(data: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Refuse the first key of ``data`` not in ``known``, suggesting the closest."""
    allowed = sorted(known)
    for key in sorted(set(data) - set(allowed)):
        listed = ", ".join(allowed) or "none"
        raise InputError(f"unknown key '{key}'{did_you_mean(key, allowed)} (known: {listed})", where=where)


def choice(value: Any, choices: Iterable[str], where: str) -> str:
    """One of ``choices``, suggesting the closest when it is not."""
    allowed = list(choices)
    if isinstance(value, str) and value in allowed:
        return value
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    raise InputError(f"expected one of {', '.join(allowed)}, got {show(value)}{hint}", where=where)


def choices(text: Any, allowed: Iterable[str], where: str) -> tuple[str, ...]:
    """A comma-separated list of ``allowed`` words (``png,pdf``), in the order given, each once;
    an empty list or an unknown word is refused with the valid ones listed."""
    known = list(allowed)
    words = [w.strip() for w in text.split(",")] if isinstance(text, str) else []
    if not any(words):
        raise refuse(where, f"a comma-separated list of {', '.join(known)}", text)
    for word in words:
        if word not in known:
            hint = did_you_mean(word, known)
            raise InputError(f"unknown '{word}'{hint} (valid: {', '.join(known)})", where=where)
    return tuple(dict.fromkeys(words))
