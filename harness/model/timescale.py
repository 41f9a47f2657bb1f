"""The one conversion between the trace's own time and the time Slurm lives in.

Plans, results, metrics and reports are in the trace's seconds. Only where the trace meets
the cluster's clock is a time converted: the replay's submission instants, sigsleep's
runtimes, Slurm's time limits and the staging rates (trace to Slurm), and the times read
back from Slurm and sigsleep (Slurm to trace).

On the wall clock with time shrinking (Barberato Section 4.2.4) a trace second lasts
``1 - shrink`` Slurm seconds; on a virtual clock Slurm's seconds are the trace's own
(``TimeScale()``), whatever the clock's speed against real time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from harness.model.columns import PLAN_TIME_COLUMNS


class ShrinkError(ValueError):
    """A shrink factor outside [0, 1)."""


@dataclass(frozen=True)
class TimeScale:
    """``shrink``: the fraction of every trace time taken away on Slurm's clock (0: none)."""

    shrink: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.shrink < 1.0:
            raise ShrinkError(f"shrink factor must be in [0, 1), got {self.shrink}")

    @classmethod
    def of_speedup(cls, speedup: float) -> TimeScale:
        """The scale of a run whose trace went ``speedup`` times faster than Slurm's clock."""
        return cls(1.0 - 1.0 / speedup)

    @property
    def speedup(self) -> float:
        """Trace seconds per Slurm second, ``1 / (1 - shrink)``."""
        return 1.0 / (1.0 - self.shrink)

    def shrink_for(self, ratio: float) -> float:
        """The shrink whose Slurm times are ``ratio`` (< 1: shorter) times this one's (not
        checked: below 0 when the ratio is too large)."""
        return 1.0 - (1.0 - self.shrink) * ratio

    def to_slurm(self, trace_s: Any) -> Any:
        """A trace time (number or array) in Slurm's seconds."""
        return trace_s * (1.0 - self.shrink)

    def to_trace(self, slurm_s: Any) -> Any:
        """A time of Slurm's clock (number or array) in the trace's seconds."""
        return slurm_s / (1.0 - self.shrink)

    def slurm_table(self, table: Any, columns: Iterable[str] = PLAN_TIME_COLUMNS) -> Any:
        """A copy of a pandas table with the given trace times in Slurm's seconds.

        ``trace_submit`` is never among the default columns: it is the link back to the trace.
        """
        return _map_columns(table, columns, self.to_slurm)

    def trace_table(self, table: Any, columns: Iterable[str] = PLAN_TIME_COLUMNS) -> Any:
        """A copy of a pandas table with the given Slurm times in the trace's seconds."""
        return _map_columns(table, columns, self.to_trace)

    def per_slurm_second(self, per_trace_second: Any) -> Any:
        """A rate (bytes, work) per trace second as the same rate per Slurm second."""
        return per_trace_second * self.speedup


TRACE_TIME = TimeScale()  # Slurm's seconds are the trace's: a virtual clock, or no shrink


def _map_columns(table: Any, columns: Iterable[str], change: Callable[[Any], Any]) -> Any:
    out = table.copy()
    for name in columns:
        if name in out.columns:
            out[name] = change(out[name])
    return out
