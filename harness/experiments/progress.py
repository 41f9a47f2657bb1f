"""The runner's progress line: cells done / running / failed / waiting, pace and ETA.

The ETA sums, over the cells still to run, the mean duration of the finished cells of
the same policy (from earlier sessions too), divided by the cells that run at once:
policies differ by orders of magnitude (backfilling 1 s, plan search minutes per period),
so one overall pace would promise the end long before it comes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.experiments.grid import Cell
from harness.model.durations import clock

Say = Callable[[str], None]


class Progress:
    def __init__(
        self,
        total: int,
        todo: list[Cell],
        say: Say,
        slots: int,
        durations: dict[str, list[float]] | None = None,
        every_s: float = 60.0,
    ) -> None:
        self.total, self.todo, self.say, self.slots, self.every_s = total, len(todo), say, slots, every_s
        self.left = {c.key: c.axes["policy"] for c in todo}
        self.durations = {k: list(v) for k, v in (durations or {}).items()}
        self.began = time.monotonic()
        self.done = 0
        self.failed = 0
        self.last_shown = 0.0
        self.last_counts: tuple[int, ...] = ()

    def finished(self, cell: Cell, result: object) -> None:
        ok = bool(getattr(result, "ok", False))
        self.done += ok
        self.failed += not ok
        self.left.pop(cell.key, None)
        if ok:
            self.durations.setdefault(cell.axes["policy"], []).append(float(getattr(result, "seconds", 0.0)))
        else:
            self.say(f"cell {cell.key} {_axes(cell)} failed: {getattr(result, 'error', '?')}")

    def show(self, waiting: int, running: int) -> None:
        """A line when the counts change, else one every ``every_s`` (the ETA moves on)."""
        now = time.monotonic()
        counts = (self.done, self.failed, waiting, running)
        if counts == self.last_counts and now - self.last_shown < self.every_s:
            return
        self.last_shown, self.last_counts = now, counts
        done = self.total - self.todo + self.done
        self.say(
            f"cells {done}/{self.total} done, {running} running, {self.failed} failed, "
            f"{waiting} waiting; {self.pace()}"
        )

    def pace(self) -> str:
        finished = self.done + self.failed
        elapsed = time.monotonic() - self.began
        rate = f"{60 * finished / elapsed:.1f} cells/min, " if finished and elapsed > 0 else ""
        eta = self.eta_seconds()
        return rate + ("ETA unknown" if eta is None else f"ETA {clock(eta)}")

    def eta_seconds(self) -> float | None:
        everything = [s for v in self.durations.values() for s in v]
        if not self.left:
            return 0.0
        if not everything:
            return None
        overall = sum(everything) / len(everything)
        means = {p: sum(v) / len(v) for p, v in self.durations.items() if v}
        work = sum(means.get(policy, overall) for policy in self.left.values())
        return work / max(1, min(self.slots, len(self.left)))


def _axes(cell: Cell) -> str:
    return " ".join(f"{k}={v}" for k, v in cell.axes.items() if v is not None)
