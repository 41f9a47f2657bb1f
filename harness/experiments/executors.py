"""Where cells run: the executor interface and the local process pool.

An executor takes cells, runs :func:`harness.experiments.cells.run_cell` on each
somewhere, and hands back results as they finish. The runner never waits for more than
a poll's timeout, so it can show progress and write the table between completions.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Protocol

from harness.experiments.cells import CellResult, run_cell
from harness.experiments.emulate_slots import SLOTS_DIR, Slot, hold_a_slot
from harness.experiments.grid import Cell

Finished = list[tuple[Cell, CellResult]]
PRELOAD = [
    "harness.experiments.cells", "harness.sim.engine", "harness.sim.checks", "harness.policies.registry",
    "harness.analysis.metrics", "harness.workload.plan",
]  # fmt: skip


class Executor(Protocol):
    slots: int  # cells that run at once

    def submit(self, cells: list[Cell]) -> None:
        """Queue cells to run."""
        ...

    def poll(self, timeout: float) -> Finished:
        """Cells finished since the last call; waits at most ``timeout`` seconds for one."""
        ...

    def counts(self) -> tuple[int, int]:
        """(cells waiting, cells running)."""
        ...

    def close(self, cancel: bool) -> None:
        """Stop; with ``cancel``, abandon the cells in flight."""
        ...


class LocalExecutor:
    """A pool of ``jobs`` worker processes on this machine.

    Workers are forked from a fork server that imported the simulator once: a fork of
    the runner itself (which may hold threads of pyarrow) is not safe, and a fresh
    interpreter per worker costs seconds of imports (0.09 s instead of 3.9 s for a pool of
    two, measured).
    """

    def __init__(
        self,
        exp_dir: Path,
        jobs: int = 1,
        initializer: Callable[..., None] | None = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        if jobs < 1:
            raise ValueError(f"-j/--jobs must be >= 1, got {jobs}")
        self.exp_dir = str(exp_dir)
        self.jobs = self.slots = jobs
        self.initializer, self.initargs = initializer, initargs  # run once in each worker
        self.waiting: deque[Cell] = deque()
        self.running: dict[Future[CellResult], Cell] = {}
        self.pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        return ProcessPoolExecutor(
            max_workers=self.jobs, mp_context=context, initializer=self.initializer, initargs=self.initargs
        )

    def submit(self, cells: list[Cell]) -> None:
        self.waiting.extend(cells)
        self._top_up()

    def _top_up(self) -> None:
        # Only `jobs` cells are handed to the pool at a time, so "in flight" means running.
        while self.waiting and len(self.running) < self.jobs:
            cell = self.waiting.popleft()
            self.running[self.pool.submit(run_cell, cell, self.exp_dir)] = cell

    def poll(self, timeout: float) -> Finished:
        if not self.running:
            return []
        done, _ = wait(list(self.running), timeout=timeout, return_when=FIRST_COMPLETED)
        finished = []
        for future in done:
            cell = self.running.pop(future)
            finished.append((cell, _outcome(cell, future)))
        if getattr(self.pool, "_broken", False):
            # A worker died (killed, out of memory): the pool fails every cell it holds.
            # Those come back as failures; the cells still waiting get a fresh pool.
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool()
        self._top_up()
        return finished

    def counts(self) -> tuple[int, int]:
        return len(self.waiting), len(self.running)

    def close(self, cancel: bool) -> None:
        self.waiting.clear()
        if cancel:
            for process in list(getattr(self.pool, "_processes", {}).values()):
                process.terminate()  # a cell can run for minutes: do not wait for it
        self.pool.shutdown(wait=not cancel, cancel_futures=True)


def slotted_executor(slots: list[Slot]) -> Callable[[Path], LocalExecutor]:
    """An emulate-mode experiment's pool: one worker per slot, each holding its slot (and so its
    cluster) for its whole life (:func:`harness.experiments.emulate_slots.hold_a_slot`)."""
    return lambda exp_dir: LocalExecutor(exp_dir, len(slots), hold_a_slot, (slots, str(exp_dir / SLOTS_DIR)))


def _outcome(cell: Cell, future: Future[CellResult]) -> CellResult:
    """The cell's own result, or a failure if its worker died (killed, out of memory)."""
    try:
        return future.result()
    except Exception as exc:
        return CellResult(cell.key, False, error=f"worker died: {type(exc).__name__}: {exc}")
