"""Slurm hostlist expressions such as ``c[001-003,007],bb01``: expand them into node names
and compress names into them (:func:`compress_hostlist`). Slurm's rules:

* items are separated by commas (or whitespace) outside brackets;
* ``[...]`` holds comma-separated numbers and ``lo-hi`` ranges; the zero padding is the
  width of ``lo`` (``[08-10]`` gives ``08 09 10``);
* a name may hold several bracket groups (``r[1-2]n[1-2]``), expanded left to right as
  a cartesian product, and text after a bracket (``c[1-2]-ib``) is kept.

Order and duplicates are preserved, as ``scontrol show hostnames`` does.
"""

from __future__ import annotations

import itertools
import re

_NUMBER = re.compile(r"\d+")
# Guards against a typo like c[1-99999999] eating all memory.
MAX_HOSTS = 1_000_000


class HostlistError(ValueError):
    """A hostlist expression that Slurm would reject."""


def expand_hostlist(text: str | None) -> list[str]:
    """Every node name of ``text`` in order; ``""`` and ``None`` give ``[]``."""
    if text is None:
        return []
    names: list[str] = []
    for item in _split_top_level(text):
        names.extend(_expand_item(item))
        if len(names) > MAX_HOSTS:
            raise HostlistError(f"hostlist {text[:60]!r} expands to more than {MAX_HOSTS} names")
    return names


def _split_top_level(text: str) -> list[str]:
    """Split on commas and whitespace that are not inside brackets."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in hostlist {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {text!r}")
        if depth == 0 and (ch == "," or ch.isspace()):
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise HostlistError(f"unclosed '[' in hostlist {text!r}")
    items.append("".join(current))
    return [item for item in items if item]


def _expand_item(item: str) -> list[str]:
    """One item, e.g. ``r[1-2]n[01-02]``: literal parts alternate with bracket groups."""
    parts = re.split(r"\[([^\]]*)\]", item)
    # re.split with one capture group: even indices are literal text, odd ones bracket bodies.
    choices: list[list[str]] = []
    for i, part in enumerate(parts):
        choices.append(_expand_ranges(part, item) if i % 2 else [part])
    return ["".join(combo) for combo in itertools.product(*choices)]


def _expand_ranges(body: str, item: str) -> list[str]:
    out: list[str] = []
    for piece in body.split(","):
        piece = piece.strip()
        lo, sep, hi = piece.partition("-")
        if not _NUMBER.fullmatch(lo) or (sep and not _NUMBER.fullmatch(hi)):
            raise HostlistError(f"bad range {piece!r} in {item!r}")
        if not sep:
            out.append(lo)
            continue
        first, last = int(lo), int(hi)
        if last < first:
            raise HostlistError(f"descending range {piece!r} in {item!r}")
        if last - first >= MAX_HOSTS:
            raise HostlistError(f"range {piece!r} in {item!r} is too large")
        width = len(lo)
        out.extend(f"{n:0{width}d}" for n in range(first, last + 1))
    return out


def compress_hostlist(names: list[str]) -> str:
    """Compress consecutive names sharing a prefix and width, e.g. ``c[001-096]``."""
    if not names:
        return ""
    groups: list[tuple[str, int, int, int]] = []  # prefix, width, first, last
    for name in names:
        prefix = name.rstrip("0123456789")
        digits = name[len(prefix) :]
        if not digits:
            groups.append((name, 0, -1, -1))
            continue
        num, width = int(digits), len(digits)
        last = groups[-1] if groups else None
        if last and last[0] == prefix and last[1] == width and last[3] == num - 1:
            groups[-1] = (prefix, width, last[2], num)
        else:
            groups.append((prefix, width, num, num))
    return ",".join(_format_range(*g) for g in groups)


def _format_range(prefix: str, width: int, first: int, last: int) -> str:
    if first < 0:
        return prefix
    if first == last:
        return f"{prefix}{first:0{width}d}"
    return f"{prefix}[{first:0{width}d}-{last:0{width}d}]"
