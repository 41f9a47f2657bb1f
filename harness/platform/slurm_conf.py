"""slurm.conf as text: logical lines of ``Key=Value`` pairs, with where each came from.

Slurm's syntax, as ``slurm.conf(5)`` gives it and as its parser reads it:

* ``#`` starts a comment to the end of the line (``\\#`` is a literal ``#``);
* a line ending in ``\\`` continues on the next one;
* a line holds one or more ``Key=Value`` pairs separated by whitespace; a value may be
  double-quoted to hold spaces; keys are case-insensitive (``nodename=`` is ``NodeName=``);
* ``Include FILE`` reads another file in place (a relative name is relative to the
  including file's folder, as Slurm resolves it).

Nothing here knows what a key means (:mod:`harness.platform.from_slurm` does); this module
only says where every pair is, so that an error can name the file, the line and the key.
Slurm's time and count formats are here too: they are the value syntax of the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.model import checks
from harness.platform.errors import PlatformError

MAX_INCLUDE_DEPTH = 16  # a file including itself, directly or not, is refused long before this
MAX_CONF_BYTES = 64 * 2**20  # the largest real slurm.conf files are a few MB
_PAIR = re.compile(r'\s*([^\s=]+)=("(?:[^"]*)"|\S*)')
_UNLIMITED = ("unlimited", "infinite")


class SlurmConfError(PlatformError):
    """A slurm.conf (or scontrol JSON) the platform cannot be made from; names file, line, key."""


@dataclass(frozen=True)
class Where:
    """A place in the site's files: ``slurm.conf:12``."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    def error(self, key: str, message: str) -> SlurmConfError:
        """The one-line error of ``key`` at this place."""
        return SlurmConfError(f"{self}: {key}: {message}" if key else f"{self}: {message}")


@dataclass(frozen=True)
class ConfLine:
    """One logical line: its pairs in order, keys as written (compare with :meth:`key`)."""

    where: Where
    pairs: tuple[tuple[str, str], ...]

    @property
    def first_key(self) -> str:
        return self.pairs[0][0]

    @property
    def first_value(self) -> str:
        return self.pairs[0][1]


def canonical(key: str) -> str:
    """The case-insensitive form of a key (``NodeName`` and ``nodename`` are one key)."""
    return key.lower()


def read_slurm_conf(path: str | Path) -> list[ConfLine]:
    """Every logical line of ``path`` and of the files it includes, in reading order."""
    return _read(Path(path), depth=0, shown=str(path), including=None)


def _read(path: Path, depth: int, shown: str, including: Where | None) -> list[ConfLine]:
    if depth > MAX_INCLUDE_DEPTH:
        raise (including or Where(shown, 0)).error(
            "Include", f"includes nest deeper than {MAX_INCLUDE_DEPTH}"
        )
    text = _text(path, shown, including)
    lines: list[ConfLine] = []
    for where, logical in _logical_lines(text, shown):
        if re.match(r"(?i)include\s", logical):
            lines += _include(logical.split(None, 1)[1].strip(), path, where, depth)
            continue
        lines.append(ConfLine(where, _pairs(logical, where)))
    return lines


def _text(path: Path, shown: str, including: Where | None) -> str:
    try:
        data = checks.read_config(path, limit=MAX_CONF_BYTES)  # a FIFO would block for ever
    except checks.InputError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        if including is not None:
            raise including.error("Include", f"{shown}: cannot read ({reason})") from None
        raise SlurmConfError(f"{shown}: cannot read ({reason})") from None
    if len(data) > MAX_CONF_BYTES:
        raise SlurmConfError(f"{shown}: larger than {MAX_CONF_BYTES:,} bytes: not a slurm.conf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SlurmConfError(f"{shown}: not UTF-8 text (byte {exc.start})") from None


def _include(target: str, path: Path, where: Where, depth: int) -> list[ConfLine]:
    """The lines of an included file, which must exist (relative to the including file)."""
    name = target.strip('"')
    if not name:
        raise where.error("Include", "no file named")
    included = Path(name) if Path(name).is_absolute() else path.parent / name
    if not included.is_file():
        raise where.error(
            "Include",
            f"{name}: no such file beside {where.path} (copy it there, or inline it, to read the machine)",
        )
    return _read(included, depth + 1, str(included), where)


def _logical_lines(text: str, shown: str) -> list[tuple[Where, str]]:
    """Comments removed, continuations joined; each with the line it starts on."""
    out: list[tuple[Where, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        body = _strip_comment(raw)
        if not pending:
            start = number
        if body.endswith("\\"):
            pending.append(body[:-1])
            continue
        pending.append(body)
        joined = "".join(pending).strip()  # Slurm joins a continuation as written, no space added
        pending = []
        if joined:
            out.append((Where(shown, start), joined))
    if pending and "".join(pending).strip():
        out.append((Where(shown, start), "".join(pending).strip()))
    return out


def _strip_comment(raw: str) -> str:
    """The line before an unescaped ``#``, with ``\\#`` made ``#``; trailing space removed."""
    kept: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and raw[i + 1 : i + 2] == "#":
            kept.append("#")
            i += 2
            continue
        if ch == "#":
            break
        kept.append(ch)
        i += 1
    return "".join(kept).rstrip()


def _pairs(logical: str, where: Where) -> tuple[tuple[str, str], ...]:
    """``Key=Value`` pairs of a logical line; anything else is a syntax error naming it."""
    pairs: list[tuple[str, str]] = []
    pos = 0
    while pos < len(logical):
        match = _PAIR.match(logical, pos)
        if match is None:
            rest = logical[pos:].split()[0] if logical[pos:].split() else logical[pos:]
            raise where.error("", f"syntax error at {rest[:40]!r}: expected Key=Value")
        key, value = match.group(1), match.group(2)
        if value.startswith('"'):
            value = value[1:-1]
        pairs.append((key, value))
        pos = match.end()
        if pos < len(logical) and not logical[pos].isspace():
            raise where.error(key, f"syntax error after {key}={value[:40]}: expected a space")
        while pos < len(logical) and logical[pos].isspace():
            pos += 1
    return tuple(pairs)


# -- Slurm's value formats ---------------------------------------------------------------------
_TIME = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")


def slurm_minutes(text: str) -> int | None:
    """A time limit in whole minutes (None: ``UNLIMITED``/``INFINITE``), as Slurm reads it:
    ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``; seconds round up to a minute.
    Raises ValueError on anything else."""
    value = text.strip()
    if value.lower() in _UNLIMITED:
        return None
    match = _TIME.fullmatch(value)
    if match is None:
        raise ValueError(f"{text!r} is not a Slurm time (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S or UNLIMITED)")
    days, first, second, third = match.groups()
    parts = [int(p) for p in (first, second, third) if p is not None]
    if days is None:  # no day part: M, M:S or H:M:S
        if len(parts) == 3:
            seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
        else:
            seconds = parts[0] * 60 + (parts[1] if len(parts) == 2 else 0)
    else:  # D-H, D-H:M, D-H:M:S
        hours, mins, secs = [*parts, 0, 0][:3]
        seconds = int(days) * 86400 + hours * 3600 + mins * 60 + secs
    return -(-seconds // 60)


def format_minutes(minutes: int | None) -> str:
    """Minutes in Slurm's ``D-HH:MM:SS`` form (``INFINITE`` for None): what slurm.conf shows."""
    if minutes is None:
        return "INFINITE"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    clock = f"{hours:02d}:{mins:02d}:00"
    return f"{days}-{clock}" if days else clock


def slurm_count(text: str) -> int | None:
    """A count or ``UNLIMITED``/``INFINITE`` (None); raises ValueError otherwise."""
    value = text.strip()
    if value.lower() in _UNLIMITED:
        return None
    if not value.isascii() or not value.isdigit():
        raise ValueError(f"{text!r} is not a whole number or UNLIMITED")
    return int(value)


def slurm_bool(text: str) -> bool:
    """``YES``/``NO`` (Slurm also takes ``TRUE``/``FALSE``, ``1``/``0``)."""
    value = text.strip().lower()
    if value in ("yes", "true", "1"):
        return True
    if value in ("no", "false", "0"):
        return False
    raise ValueError(f"{text!r} is not YES or NO")
