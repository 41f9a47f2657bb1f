"""Durations as people read them: one clock form for progress lines and tables, one prose
form for estimates and advice."""

from __future__ import annotations


def clock(seconds: float | None) -> str:
    """``H:MM:SS`` (``1:02:03``; ``-`` when unknown), whole seconds, never negative."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def human_duration(seconds: float) -> str:
    """``33 d 07 h``, ``2 h 05 min``, ``4 min 10 s``, ``12 s``."""
    s = max(0, round(seconds))
    days, hours, minutes, secs = s // 86400, s % 86400 // 3600, s % 3600 // 60, s % 60
    if days:
        return f"{days} d {hours:02d} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"
