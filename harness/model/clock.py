"""The emulation's clock: the wall clock, or a virtual clock every process of the emulation shares.

A virtual clock is one page of a file (layout in ``sigsleep/vclock.h``), written by its
controller and mapped read-only by every reader (the Slurm daemons through their time
preload, sigsleep with ``--clock``, the replay)::

    V(real) = base_v + (real - base_real) * rate        (rate 0: the clock stands still)

A fixed speed-up is ``rate = S`` set once; an event-driven clock holds still (rate 0)
while the cluster works and jumps to the next event when it is quiescent. The controller
writes the page under a sequence lock (``seq`` odd while it writes). The clock only moves
forward: a jump backwards is refused.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0x314B434F4C435648  # "HVCLOCK1" little-endian, as vclock.h
PAGE_SIZE = 4096
LAYOUT = struct.Struct("<QQdddd")  # magic, seq, base_v, base_real, rate, poll_s (as vclock.h)
# after them, read by the daemons' side only (sigsleep reads the fields above): how far the
# daemons' instant is behind the page's (the event clock lets an instant's jobs end before
# Slurm's passes of that instant run; 0 on a page written before it existed)
DAEMONS_LAG = struct.Struct("<d")
DAEMONS_LAG_OFFSET = LAYOUT.size
DEFAULT_POLL_S = 0.1  # longest real wait of a reader before it reads the page again
HELD_POLL_S = 0.02  # the same while the clock moves by jumps


# The daemons read the clock through Debian's libfaketime (docs/virtual-time.md): its
# timestamp file in freeze mode ("<epoch> x<S>": every process reads the file's instant;
# S only scales waits), re-read at every time call.
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
TICK_S = 0.01  # how often the faketime file follows the page while the clock runs
HELD_WAIT_MS = 50  # every timed condvar wait of slurmctld returns after this many real ms
WRITING_WAIT_S = 0.0002  # a reader's pause while the controller moves the clock
NODES_WAIT_MS = 1000  # ... of slurmd and slurmstepd (a kill of a step takes less)
# how far a nudge moves the daemons within a held instant: Slurm's main cycle runs again once
# gettimeofday has passed sched_min_interval (2 us) since the last one, while time() still
# reads the instant (whole seconds), so a job started then is stamped the same second
NUDGE_S = 0.001
MAX_SPEEDUP = 100.0  # the highest speed-up measured to keep Slurm healthy (docs/virtual-time.md)


def preload_env(faketime_file: str, wait_ms: int = HELD_WAIT_MS) -> dict[str, str]:
    """The environment that puts a Slurm daemon on the virtual clock. Every timed condvar wait
    lasts ``wait_ms`` real ms (libfaketime's FAKETIME_WAIT_MS), so that a daemon's sleeping
    loops see a jump of the clock (slurmctld: HELD_WAIT_MS). The cut wait returns ETIMEDOUT,
    which slurmstepd's terminate monitor takes for an unkillable step: the slurmd daemons (and
    their slurmstepd) get NODES_WAIT_MS, longer than any kill takes, or their nodes are drained
    ("Kill task failed", docs/virtual-time.md). Their waits stay cut (not unbounded) as at
    50 ms, the setting measured healthy before; whether an uncut wait could spin is not known."""
    return {
        "LD_PRELOAD": LIBFAKETIME,
        "FAKETIME_TIMESTAMP_FILE": faketime_file,
        "FAKETIME_FMT": "%s",
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DISABLE_SHM": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
        "FAKETIME_WAIT_MS": str(wait_ms),
    }


def faketime_line(reading: Reading, real: float) -> str:
    """The faketime file's content for the clock at ``real``: the daemons' instant and how fast
    waits go."""
    scale = reading.rate if reading.rate > 0 else 1.0
    return f"{reading.daemons_at(real):.6f} x{scale:.9g}\n"


def write_faketime(path: Path, line: str) -> None:
    """Replace the faketime file whole (a reader never sees half a line)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(line)
    tmp.chmod(0o644)
    tmp.replace(path)


class ClockError(ValueError):
    """A clock file that is missing, not a clock page, or a clock asked to go backwards."""


@dataclass(frozen=True)
class Reading:
    base_v: float
    base_real: float
    rate: float
    poll_s: float
    daemons_lag: float = 0.0  # the daemons read this much less than the page's readers

    def at(self, real: float) -> float:
        return self.base_v + (real - self.base_real) * self.rate

    def daemons_at(self, real: float) -> float:
        return self.at(real) - self.daemons_lag


class WallClock:
    """The host's own clock: what a time-shrunk run is paced by."""

    rate = 1.0

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class VirtualClock:
    """A virtual clock page, mapped: read it (any process), or move it (its controller).

    ``faketime``: the daemons' libfaketime file that follows this page. The controller
    writes it while the page's readers wait (its sequence odd), under the page's lock
    (:meth:`locked`, which the clock ticker takes too): no reader of the page (sigsleep, the
    replay) ever sees an instant the daemons do not see yet (a job that ends at a jump of a held
    clock would be stamped by slurmstepd and slurmctld with the instant before the jump), and
    none reads the old instant once the daemons have the new one (a job Slurm starts at the
    jump would take its start a jump early; docs/virtual-time.md).
    """

    def __init__(self, path: Path, writable: bool = False, faketime: Path | None = None) -> None:
        self.path = Path(path)
        self.faketime = Path(faketime) if faketime is not None else None
        self._lock_fd: int | None = None
        try:
            fd = os.open(self.path, os.O_RDWR if writable else os.O_RDONLY)
        except OSError as exc:
            raise ClockError(f"{self.path}: cannot open the virtual clock: {exc.strerror}") from None
        try:
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            self._page = mmap.mmap(fd, PAGE_SIZE, access=access)
        except (OSError, ValueError) as exc:
            raise ClockError(f"{self.path}: not a virtual clock page ({exc})") from None
        finally:
            os.close(fd)
        if LAYOUT.unpack_from(self._page)[0] != MAGIC:
            raise ClockError(f"{self.path}: not a virtual clock page (no HVCLOCK1 magic)")

    @classmethod
    def create(cls, path: Path, start: float, rate: float, poll_s: float = DEFAULT_POLL_S) -> VirtualClock:
        """A new clock page at ``path`` reading ``start`` now and going at ``rate``."""
        check_rate(rate)
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        data = bytearray(PAGE_SIZE)
        LAYOUT.pack_into(data, 0, MAGIC, 0, float(start), time.time(), float(rate), float(poll_s))
        tmp.write_bytes(bytes(data))
        tmp.chmod(0o644)
        tmp.replace(path)  # a reader never maps half a page
        return cls(path, writable=True)

    def reading(self) -> Reading:
        while True:
            _, before, base_v, base_real, rate, poll_s = LAYOUT.unpack_from(self._page)
            (lag,) = DAEMONS_LAG.unpack_from(self._page, DAEMONS_LAG_OFFSET)
            after = LAYOUT.unpack_from(self._page)[1]
            if before == after and not before & 1:
                return Reading(base_v, base_real, rate, poll_s, lag)
            if before & 1:
                time.sleep(WRITING_WAIT_S)  # the controller is between the daemons and the page

    def now(self) -> float:
        return self.reading().at(time.time())

    def daemons_now(self) -> float:
        """The instant the Slurm daemons read (behind :meth:`now` by the page's daemons' lag)."""
        return self.reading().daemons_at(time.time())

    def daemons_caught_up(self) -> bool:
        """Whether the daemons read the page's instant (no lead of a held clock's page; a nudge
        puts them a millisecond past it)."""
        return self.reading().daemons_lag <= 0

    @property
    def rate(self) -> float:
        return self.reading().rate

    def sleep(self, seconds: float) -> None:
        """Wait up to ``seconds`` of virtual time, and never longer than the page's ``poll_s`` of
        real time: a caller that loops on its own deadline (the replay) checks for a stop in
        between, even while the clock stands still."""
        c = self.reading()
        poll = c.poll_s if c.poll_s > 0 else DEFAULT_POLL_S
        time.sleep(max(0.0, min(seconds / c.rate if c.rate > 0 else poll, poll)))

    # -- the controller's side ------------------------------------------------------------
    def set(
        self, instant: float | None, rate: float, poll_s: float | None = None, daemons_lag: float = 0.0
    ) -> float:  # fmt: skip
        """From now on the clock reads ``instant`` (None: where it is) and goes at ``rate``;
        never backwards; the daemons read ``daemons_lag`` seconds less (they never go backwards
        either). Returns the instant it reads now."""
        check_rate(rate)
        with self.locked():
            now_real = time.time()
            current = self.reading()
            here = current.at(now_real)
            instant = here if instant is None else float(instant)
            if instant < here - 1e-6:
                raise ClockError(f"the clock only goes forward: {instant:.6f} < {here:.6f}")
            if instant - daemons_lag < current.daemons_at(now_real) - 1e-6:
                raise ClockError(f"the daemons' clock only goes forward: {instant - daemons_lag:.6f}")
            poll = float(current.poll_s if poll_s is None else poll_s)
            new = Reading(instant, now_real, float(rate), poll, float(daemons_lag))
            # The page's readers wait (odd seq) from before the daemons move until the page has
            # moved too: a job Slurm starts at the new instant never reads the old one (its
            # start would be a jump early), and a reader never sees an instant the daemons
            # do not see yet (a job ending at the jump would be stamped a jump early).
            seq = LAYOUT.unpack_from(self._page)[1]
            struct.pack_into("<Q", self._page, 8, seq + 1)
            try:
                if self.faketime is not None:
                    write_faketime(self.faketime, faketime_line(new, now_real))
                struct.pack_into("<dddd", self._page, 16, new.base_v, new.base_real, new.rate, new.poll_s)
                DAEMONS_LAG.pack_into(self._page, DAEMONS_LAG_OFFSET, new.daemons_lag)
            finally:
                struct.pack_into("<Q", self._page, 8, seq + 2)  # never leave the readers waiting
        return instant

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The page's lock (``flock`` on the page file, shared by the host and the containers
        through the bind mount): the controller holds it while it writes the faketime file and
        the page, the ticker while it reads the page and rewrites the file."""
        if self._lock_fd is None:
            self._lock_fd = os.open(self.path, os.O_RDONLY)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def hold(self) -> float:
        """Stop the clock where it is; its reading."""
        return self.set(None, 0.0, HELD_POLL_S)

    def jump(self, instant: float, daemons_lag: float = 0.0) -> None:
        """Move a held clock forward to ``instant`` (it stays held), the daemons to ``instant -
        daemons_lag``, or where they are if a nudge put them past that within its second."""
        daemons = self.daemons_now()
        if math.floor(daemons + 1e-6) == instant - daemons_lag < daemons:
            daemons_lag = instant - daemons  # (the nudged daemons stay: never backwards)
        self.set(instant, 0.0, HELD_POLL_S, daemons_lag)

    def nudge(self) -> float:
        """Move a held clock's daemons ``NUDGE_S`` on within their second, the page not at all:
        slurmctld's main cycle, which runs once per instant on a held clock, may run again at
        the same second (the event clock's driver, after the ordering agent released jobs).
        Returns the daemons' new instant."""
        reading = self.reading()
        here = reading.at(time.time())
        self.set(here, 0.0, HELD_POLL_S, reading.daemons_lag - NUDGE_S)
        return here - reading.daemons_lag + NUDGE_S

    def close(self) -> None:
        self._page.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def check_rate(rate: float) -> float:
    if not (math.isfinite(rate) and rate >= 0):
        raise ClockError(f"a clock's rate must be a finite number >= 0, not {rate}")
    return float(rate)
