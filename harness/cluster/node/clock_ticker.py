"""Keeps the daemons' clock on the virtual clock: rewrites the libfaketime timestamp file from
the clock page every ``TICK_S`` while the clock runs (a held clock's file changes only when
the clock jumps; the controller writes it itself first, :class:`~harness.model.clock.VirtualClock`).
Runs beside slurmctld on the real clock, never preloaded::

    python -m harness.cluster.node.clock_ticker /shared/clock/page /shared/clock/faketime

The page stays the clock's one source of truth: this process keeps no state, so when it is
restarted it only rewrites the file.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from harness.model.clock import TICK_S, VirtualClock, faketime_line, write_faketime


def tick(page: Path, target: Path, every: float = TICK_S, until: float | None = None) -> None:
    """Follow the page until ``until`` (real epoch seconds; None: for ever)."""
    clock = VirtualClock(page)
    written = ""
    while until is None or time.time() < until:
        with clock.locked():  # never between the controller's write of the file and of the page
            line = faketime_line(clock.reading(), time.time())
            if line != written:
                write_faketime(target, line)
                written = line
        time.sleep(every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cluster.node.clock_ticker", description=__doc__)
    parser.add_argument("page", type=Path, help="the virtual clock page")
    parser.add_argument("faketime", type=Path, help="the timestamp file the daemons' libfaketime reads")
    parser.add_argument("--every", type=float, default=TICK_S, help="real seconds between two rewrites")
    args = parser.parse_args(argv)
    tick(args.page, args.faketime, args.every)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
