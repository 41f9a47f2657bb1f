"""How metric values are printed: in reports, comparison tables and terminal tables."""

from __future__ import annotations

import math
from typing import Any

from harness.model.metric_names import metric_spec

HOUR = 3600.0
UNITS = {"count": "jobs", "seconds": "s", "ratio": "", "fraction": "of capacity"}
# Terse cells of terminal tables (harness simulate): whole seconds, 2 decimals for ratios.
TERSE = {"count": "{:.0f}", "seconds": "{:.0f}", "ratio": "{:.2f}", "fraction": "{:.3f}"}


def format_number(kind: str, value: Any) -> str:
    """The main figure: 2 decimals for seconds and ratios, 4 for fractions, integers for counts."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_number(kind, v) for v in value) + "]"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, int | float):
        return str(value)
    if kind == "count":
        return f"{value:.0f}"
    if kind == "fraction":
        return f"{value:.4f}"
    return f"{value:.2f}"


def format_alternative(kind: str, value: Any) -> str:
    """The same figure in a friendlier unit: hours for seconds, percent for fractions."""
    if isinstance(value, list | tuple):
        parts = [format_alternative(kind, v) for v in value]
        return "[" + ", ".join(parts) + "]" if all(parts) else ""
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        return ""
    if kind == "seconds":
        return f"{value / HOUR:.2f} h"
    if kind == "fraction":
        return f"{100 * value:.2f} %"
    return ""


def format_metric(key: str, value: Any) -> str:
    """One compact cell, e.g. ``1234.56 s``, ``73.45 %``, ``2.10``: for terminal tables."""
    spec = metric_spec(key, value)
    if spec.kind == "fraction" and isinstance(value, int | float) and not math.isnan(value):
        return f"{100 * value:.2f} %"
    text = format_number(spec.kind, value)
    return f"{text} s" if spec.kind == "seconds" and text != "n/a" else text


def format_terse(key: str, value: Any) -> str:
    """A terse cell: ``-`` for a missing or NaN value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return TERSE[metric_spec(key, value).kind].format(value)
