"""The load of the machine running ``harness run`` while the replay goes on.

An emulated figure is only as good as the host it ran on: on the wall clock (and at a fixed
speed-up) every millisecond of latency the load adds is multiplied into the trace's time, so
each run records the 1-minute load average (``os.getloadavg``) at its start and end, its mean
and its highest value, sampled every ``INTERVAL_S`` (``metrics.json``: ``host_load``). With the
Docker cluster this is the host of every daemon; with a cluster elsewhere (``ssh://``), only
the machine that drives it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

INTERVAL_S = 5.0


class LoadSampler:
    """A context manager that samples the 1-minute load average in a thread."""

    def __init__(
        self, interval: float = INTERVAL_S, read: Callable[[], tuple[float, float, float]] = os.getloadavg
    ) -> None:  # fmt: skip
        self.interval = interval
        self.read = read
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="host-load", daemon=True)

    def __enter__(self) -> LoadSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:  # fmt: skip
        self._stop.set()
        self._thread.join(timeout=self.interval + 1.0)
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        with contextlib.suppress(OSError):  # no load average on this system: nothing to say
            self.samples.append(float(self.read()[0]))

    def summary(self) -> dict[str, Any]:
        """start, end, mean and max of the 1-minute load, the samples taken and the CPU count."""
        if not self.samples:
            return {}
        values = self.samples
        return {
            "start_1min": round(values[0], 2),
            "end_1min": round(values[-1], 2),
            "mean_1min": round(sum(values) / len(values), 2),
            "max_1min": round(max(values), 2),
            "samples": len(values),
            "cpus": os.cpu_count() or 0,
        }


def load_line(load: dict[str, Any]) -> str:
    """One line for the run's progress: the load while it ran (``LoadSampler.summary``)."""
    if not load:
        return "host load: not known on this system"
    return (
        f"host load (1 min) while it ran: {load['start_1min']:g} at the start, mean {load['mean_1min']:g}, "
        f"max {load['max_1min']:g}, {load['end_1min']:g} at the end ({load['cpus']} CPUs)"
    )
