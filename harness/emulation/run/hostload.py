"""The load of the machine running ``harness run`` while the replay goes on.

An emulated figure is only as good as the host it ran on: on the wall clock (and at a fixed
speed-up) every millisecond of latency the load adds is multiplied into the trace's time, so
each run records the 1-minute load average (``os.getloadavg``) at its start and end, its mean
and its highest value, sampled every ``INTERVAL_S``, and the share of CPU time stolen by the
hypervisor (``/proc/stat``) over the run (``metrics.json``: ``host_load``). With the Docker
cluster this is the host of every daemon; with a cluster elsewhere (``ssh://``), only the
machine that drives it. A run on the wall clock on a host busier than its cores gets a warning
(:func:`overload_warning`); on the event clock the clock waits for Slurm, so the load costs
time, not fidelity.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

INTERVAL_S = 5.0
PROC_STAT = Path("/proc/stat")
STEAL_WARN_PCT = 5.0  # CPU time stolen by the hypervisor above which a run is flagged


class LoadSampler:
    """A context manager that samples the 1-minute load average in a thread."""

    def __init__(
        self,
        interval: float = INTERVAL_S,
        read: Callable[[], tuple[float, float, float]] = os.getloadavg,
        cpu_times: Callable[[], tuple[int, int] | None] = lambda: read_cpu_times(PROC_STAT),
    ) -> None:
        self.interval = interval
        self.read = read
        self.cpu_times = cpu_times
        self.stat: list[tuple[int, int]] = []  # (steal, total) ticks at the start and the end
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="host-load", daemon=True)

    def __enter__(self) -> LoadSampler:
        self._stat()
        self._sample()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:  # fmt: skip
        self._stop.set()
        self._thread.join(timeout=self.interval + 1.0)
        self._sample()
        self._stat()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        with contextlib.suppress(OSError):  # no load average on this system: nothing to say
            self.samples.append(float(self.read()[0]))

    def _stat(self) -> None:
        times = self.cpu_times()
        if times is not None:
            self.stat.append(times)

    def summary(self) -> dict[str, Any]:
        """start, end, mean and max of the 1-minute load, the samples taken and the CPU count."""
        if not self.samples:
            return {}
        values = self.samples
        summary = {
            "start_1min": round(values[0], 2),
            "end_1min": round(values[-1], 2),
            "mean_1min": round(sum(values) / len(values), 2),
            "max_1min": round(max(values), 2),
            "samples": len(values),
            "cpus": os.cpu_count() or 0,
        }
        if len(self.stat) == 2 and self.stat[1][1] > self.stat[0][1]:
            (steal0, total0), (steal1, total1) = self.stat
            summary["steal_pct"] = round(100.0 * (steal1 - steal0) / (total1 - total0), 2)
        return summary


def cpu_ticks(path: Path = PROC_STAT) -> list[int] | None:
    """user, nice, system, idle, iowait, irq, softirq and steal jiffies of all CPUs from
    /proc/stat's ``cpu`` line; None without one."""
    try:
        first = path.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu" or len(first) < 9:
        return None
    return [int(x) for x in first[1:9]]


def read_cpu_times(path: Path) -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs from /proc/stat's ``cpu`` line; None without one."""
    ticks = cpu_ticks(path)
    return None if ticks is None else (ticks[7], sum(ticks))


def overload_warning(load: dict[str, Any], wall_clock: bool) -> str | None:
    """A warning when the run's figures may carry the host's load: on the wall clock (or a
    fixed speed-up), a mean load above the host's cores or CPU time stolen by a hypervisor."""
    if not load or not wall_clock:
        return None
    why = []
    if load.get("cpus") and load["mean_1min"] > load["cpus"]:
        why.append(f"a mean load of {load['mean_1min']:g} on {load['cpus']} CPUs (max {load['max_1min']:g})")
    if load.get("steal_pct", 0.0) > STEAL_WARN_PCT:
        why.append(f"{load['steal_pct']:g} % of CPU time stolen by the hypervisor")
    if not why:
        return None
    return (
        f"warning: the host was busier than it has cores while the replay ran ({'; '.join(why)}): "
        "on the wall clock that latency is multiplied into the trace's time; repeat on a quiet "
        "host before trusting a difference (or use the event clock, which waits for Slurm)"
    )


def load_line(load: dict[str, Any]) -> str:
    """One line for the run's progress: the load while it ran (``LoadSampler.summary``)."""
    if not load:
        return "host load: not known on this system"
    return (
        f"host load (1 min) while it ran: {load['start_1min']:g} at the start, mean {load['mean_1min']:g}, "
        f"max {load['max_1min']:g}, {load['end_1min']:g} at the end ({load['cpus']} CPUs)"
    )


def said_load(load: dict[str, Any], wall_clock: bool, say: Callable[[str], None]) -> dict[str, Any]:
    """The load line said, and the warning if any (also kept in the summary it returns)."""
    say(load_line(load))
    if warning := overload_warning(load, wall_clock):
        say(warning)
        return {**load, "warning": warning}
    return load
