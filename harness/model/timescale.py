"""Time shrinking (Barberato Section 4.2.4): every time of a replay is multiplied by
``1 - shrink``; ``time_scale = 1 / (1 - shrink)`` turns shrunk times back into original ones.

The one place that knows the conversion: plans, metrics, reports and the fidelity check
all go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from harness.model.columns import SHRINK_COLUMNS


class ShrinkError(ValueError):
    """A shrink factor outside [0, 1)."""


def check_shrink(shrink: float) -> float:
    if not 0.0 <= shrink < 1.0:
        raise ShrinkError(f"shrink factor must be in [0, 1), got {shrink}")
    return float(shrink)


def time_scale_of(shrink: float) -> float:
    """The factor that turns shrunk times back into original ones (the replay's speed-up)."""
    return 1.0 / (1.0 - check_shrink(shrink))


def unshrink(value: Any, shrink: float) -> Any:
    """A shrunk time (number or array) in original seconds."""
    return value / (1.0 - check_shrink(shrink))


def shrink_table(table: Any, shrink: float, columns: Iterable[str] = SHRINK_COLUMNS) -> Any:
    """A copy of a plan (a pandas DataFrame) with every time multiplied by ``1 - shrink``.

    ``trace_submit`` is never among the default columns: it is the link back to the trace.
    """
    factor = 1.0 - check_shrink(shrink)
    return _map_columns(table, columns, lambda col: col * factor)


def unshrink_table(table: Any, shrink: float, columns: Iterable[str] = SHRINK_COLUMNS) -> Any:
    """A copy of a shrunk plan or results table with the given times in original seconds."""
    factor = 1.0 - check_shrink(shrink)
    return _map_columns(table, columns, lambda col: col / factor)


def _map_columns(table: Any, columns: Iterable[str], change: Callable[[Any], Any]) -> Any:
    out = table.copy()
    for name in columns:
        if name in out.columns:
            out[name] = change(out[name])
    return out
