"""Live stage-in and stage-out of a burst-buffer job, run by Slurm's burst_buffer/lua plugin.

``slurm_bb_data_in`` / ``slurm_bb_data_out`` of the rendered ``burst_buffer.lua`` run
``python -m harness.emulation.iolive.staging in|out JOB SCRIPT``; Slurm keeps the job in its
stage-in (pending, ``BurstBufferStageIn``) or stage-out state until the command returns.
The command lasts as long as the transfer would on the platform's links, with the rate
that max-min sharing (:func:`harness.flow.max_min_rates`, the simulator's code) gives it
beside every other transfer active at that moment.

The job script declares its volumes in one comment line, next to Slurm's own directive::

    #BB_LUA pool=bb capacity=4800
    #HARNESS_IO nodes=4 stage_in_mb=4800 stage_out_mb=4800 time_scale=100

(volumes in MB for the whole job; ``time_scale`` = 1 / (1 - shrink): a shrunk run's
second moves that many seconds' worth of bytes, as in the simulator).

**Routes.** Slurm's pool has no placement (the job's nodes are not chosen yet while it
stages in, and already released while it stages out), so a job's data is striped over
all BB nodes: one flow per BB node over the simulator's staging route (BB node -> PFS),
``1 / bb_count`` of the bytes each, weight ``nodes / bb_count`` and capped at that share
of the job's network cards. Alone on the default platform a job stages at the PFS's
5 GB/s; two at once at 2.5 GB/s each.

**Sharing without a daemon.** Every running transfer is a file ``active/<job>.<kind>.json``
in the staging directory; each staging process re-reads the set every ``tick`` seconds,
solves max-min over it (every process gets the same rates from the same set) and
advances its own bytes. Nothing central can die: a transfer whose process is gone is
ignored (its pid no longer exists). Every finished transfer appends one line to
``staging.jsonl``: job, kind, MB, start, end, mean rate, and the time it would have
taken alone.

**Drains.** A stage-out ends only when the job has no checkpoint left draining
(:mod:`harness.emulation.iolive.drains`): the simulator's job ends when its stage-out and every
drain are done, and its wait for the drains counts as staging out (``drain_wait_s`` of
the record; its ``seconds`` include it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from harness.emulation.iolive.contention import flow_rates, known_flows
from harness.emulation.iolive.drains import drains_of
from harness.emulation.iolive.flows import read_flows, staging_flow
from harness.emulation.iolive.io_events import Publication, publish, set_signature, staging_name, withdraw
from harness.emulation.iolive.transfers import Transfer, active_transfers, register
from harness.flow import NO_LINK, max_min_rates
from harness.flow.io_network import MB, IONetwork
from harness.model.clock import VirtualClock, WallClock
from harness.model.jsonio import append_jsonl
from harness.model.rundir import SHARED_IO
from harness.model.rundir import STAGING_RECORDS as RECORDS
from harness.model.timescale import TimeScale
from harness.platform import Machine, load_platform

DIRECTIVE = "#HARNESS_IO"
KINDS = ("in", "out")
FIELDS = {"nodes": int, "stage_in_mb": float, "stage_out_mb": float, "time_scale": float}
DEFAULT_DIR = SHARED_IO
DEFAULT_TICK = 0.1  # seconds between two looks at the set of active transfers
DONE_S = 1e-4  # a transfer with less than this many seconds left at its rate is done


class StagingError(ValueError):
    """A job script whose ``#HARNESS_IO`` line is missing a field or holds a bad value."""


def parse_directive(script: str, source: str = "<script>") -> dict[str, float]:
    """The ``#HARNESS_IO`` fields of a job script (all of :data:`FIELDS`), checked."""
    for number, line in enumerate(script.splitlines(), start=1):
        if not line.startswith(DIRECTIVE + " "):
            continue
        where = f"{source}:{number}"
        values: dict[str, float] = {}
        for token in line.split()[1:]:
            name, sep, text = token.partition("=")
            if not sep or name not in FIELDS:
                raise StagingError(f"{where}: unknown field {token!r} (known: {', '.join(FIELDS)})")
            try:
                value = FIELDS[name](text)
            except ValueError:
                raise StagingError(f"{where}: {name}={text!r} is not a number") from None
            if not value >= 0 or (name in ("nodes", "time_scale") and value <= 0):
                raise StagingError(f"{where}: {name} must be {'positive' if name != 'nodes' else '>= 1'}")
            values[name] = value
        missing = [f for f in FIELDS if f not in values]
        if missing:
            raise StagingError(f"{where}: missing {', '.join(missing)}")
        return values
    raise StagingError(f"{source}: no {DIRECTIVE} line")


def directive_line(nodes: int, stage_in_mb: float, stage_out_mb: float, scale: TimeScale) -> str:
    """The ``#HARNESS_IO`` line the replay writes into a job script (with the run's speed-up, which
    the staging command needs on Slurm's clock)."""
    return (
        f"{DIRECTIVE} nodes={nodes} stage_in_mb={stage_in_mb:.6g} stage_out_mb={stage_out_mb:.6g} "
        f"time_scale={scale.speedup:.9g}"
    )


def transfer_of(script: str, job: int, kind: str, source: str = "<script>") -> Transfer:
    if kind not in KINDS:
        raise StagingError(f"staging kind must be one of {KINDS}, not {kind!r}")
    v = parse_directive(script, source)
    return Transfer(job, kind, int(v["nodes"]), v[f"stage_{kind}_mb"], v["time_scale"], os.getpid())


# -- rates: the simulator's links and max-min solver ------------------------------------
def transfer_rates(transfers: list[Transfer], machine: Machine, scale: TimeScale) -> np.ndarray:
    """Bytes per (real) second of each transfer, all sharing ``machine``'s staging links, on the
    run's clock (``scale``: the time scale its directives carry)."""
    if not transfers:
        return np.zeros(0)
    net = IONetwork.from_platform(machine, scale)
    stripes = len(net.bb_links)
    routes = [net.staging(b) for b in range(stripes)]
    width = max(len(r) for r in routes)
    route_rows = np.full((len(transfers) * stripes, width), NO_LINK, dtype=np.int64)
    for i in range(len(transfers)):
        for b, route in enumerate(routes):
            route_rows[i * stripes + b, : len(route)] = route
    nodes = np.repeat([float(t.nodes) for t in transfers], stripes)
    weights = nodes / stripes
    caps = nodes * net.compute_link_bps / stripes
    rates = max_min_rates(route_rows, np.asarray(net.network.capacities), weights, caps)
    return rates.reshape(len(transfers), stripes).sum(axis=1)


# -- one transfer, start to end ------------------------------------------------------------
def run_transfer(
    transfer: Transfer,
    machine: Machine,
    directory: Path,
    *,
    tick: float = DEFAULT_TICK,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    events: bool = False,
) -> dict[str, float | int | str]:
    """Move ``transfer``'s bytes at its fair share until done; returns its record. ``events``:
    on the event clock, publish its end for the driver whenever its set or end changes
    (:mod:`harness.emulation.iolive.io_events`)."""
    solo = float(transfer_rates([transfer], machine, TimeScale.of_speedup(transfer.time_scale))[0])
    left = transfer.mb * MB
    path = register(directory, transfer)
    announce = _Announcer(directory, staging_name(transfer.job, transfer.kind)) if events else None
    start = last = clock()
    read_rate = _RateReader(transfer, machine, directory, by_set=events)
    slowest = float("inf")
    try:
        while True:
            rate, sig = read_rate()
            if left <= rate * DONE_S:
                break
            if announce and sig is not None:
                announce(last, sig, last + left / rate)
            slowest = min(slowest, rate)
            sleep(min(tick, left / rate))
            now = clock()
            left -= rate * (now - last)
            last = now if left >= 0 else now + left / rate  # (a late wake: it ended before)
        moved, waited = last, False
        while transfer.kind == "out" and pending_drains(directory, transfer.job):
            waited = True
            if announce:  # the drains' ends are the service's to publish
                announce(clock(), set_signature(directory), float("inf"))
            sleep(tick)  # the job's checkpoints still draining: Slurm holds its BB meanwhile
    finally:
        path.unlink(missing_ok=True)
        if announce:
            announce.withdraw()
    end = clock() if waited else moved
    seconds = end - start
    record: dict[str, float | int | str] = {
        "job": transfer.job, "kind": transfer.kind, "nodes": transfer.nodes, "mb": transfer.mb,
        "time_scale": transfer.time_scale, "start": round(start, 6), "end": round(end, 6),
        "seconds": round(seconds, 6), "solo_s": round(transfer.mb * MB / solo, 6) if solo else 0.0,
        "mean_mbps": round(transfer.mb / seconds, 3) if seconds > 0 else 0.0,
        "min_mbps": round(slowest / MB, 3) if slowest < float("inf") else 0.0,
        "drain_wait_s": round(end - moved, 6),
    }  # fmt: skip
    append_jsonl(directory / RECORDS, record)
    return record


class _RateReader:
    """The transfer's rate at each look. ``by_set`` (the event clock, which looks every 20 real
    ms while it stands still): solved again only when the set of transfers changed (max-min
    rates depend on the set alone), and returned with the set's signature (None: the set
    changed while it was solved: not to be published)."""

    def __init__(self, transfer: Transfer, machine: Machine, directory: Path, by_set: bool) -> None:
        self.transfer, self.machine, self.directory, self.by_set = transfer, machine, directory, by_set
        self._solved: tuple[str, float] | None = None

    def __call__(self) -> tuple[float, str | None]:
        if not self.by_set:
            return self._solve(), None
        sig = set_signature(self.directory)
        if self._solved is not None and self._solved[0] == sig:
            return self._solved[1], sig
        rate = self._solve()
        self._solved = (sig, rate) if set_signature(self.directory) == sig else None
        return rate, sig if self._solved is not None else None

    def _solve(self) -> float:
        return _own_rate(self.transfer, active_transfers(self.directory), self.machine, self.directory)


class _Announcer:
    """One staging process's publications for the event clock (written only when they change)."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory, self.name = directory, name
        self._said: str | None = None  # the set and end last published

    def __call__(self, at: float, sig: str, end: float) -> None:
        pub = Publication(at, sig, end)
        said = pub.line().split(maxsplit=1)[1]
        if said != self._said:  # a new set or end, not a new instant alone
            publish(self.directory, self.name, pub)
            self._said = said

    def withdraw(self) -> None:
        withdraw(self.directory, self.name)


def pending_drains(directory: Path, slurm_job: int) -> bool:
    """Whether the job has checkpoints still draining (:mod:`harness.emulation.iolive.drains`)."""
    return bool(drains_of(read_flows(directory, report=lambda _: None), slurm_job))


def _own_rate(transfer: Transfer, active: Iterable[Transfer], machine: Machine, directory: Path) -> float:
    """Bytes per second of ``transfer`` beside the other stagings and the jobs' own transfers
    (sigsleep's phases, registered for the contention service in ``flows/``): the same
    solve as the service's, so both agree on every rate."""
    others = [t for t in active if t.key != transfer.key]
    stagings = [staging_flow(t.job, t.kind, t.nodes, t.mb, t.time_scale) for t in [transfer, *others]]
    phases = known_flows(read_flows(directory, report=lambda _: None), machine, report=lambda _: None)
    return float(flow_rates([*stagings, *phases], machine)[0]) * MB


def read_records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.emulation.iolive.staging", description=__doc__)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("job", type=int)
    parser.add_argument("script", type=Path, help="the job script (with its #HARNESS_IO line)")
    parser.add_argument("--platform", default=None, help="platform TOML (default: the built-in one)")
    parser.add_argument("--dir", type=Path, default=Path(DEFAULT_DIR), help="staging directory")
    parser.add_argument("--tick", type=float, default=DEFAULT_TICK, help="real seconds between two looks")
    parser.add_argument(
        "--clock-page", type=Path, default=None, help="the virtual clock's page (default: wall clock)"
    )
    args = parser.parse_args(argv)
    try:
        transfer = transfer_of(args.script.read_text(), args.job, args.kind, str(args.script))
        machine = load_platform(args.platform)
        clock = VirtualClock(args.clock_page) if args.clock_page else WallClock()
    except (OSError, ValueError) as exc:
        print(f"harness staging: {exc}", file=sys.stderr)
        return 2
    if transfer.mb > 0 or (transfer.kind == "out" and pending_drains(args.dir, transfer.job)):
        args.dir.mkdir(parents=True, exist_ok=True)
        tick = args.tick * max(clock.rate, 1.0)  # looks every --tick real seconds, whatever the speed-up
        held = isinstance(clock, VirtualClock) and clock.rate == 0  # the event clock
        run_transfer(transfer, machine, args.dir, tick=tick, clock=clock.now, sleep=clock.sleep, events=held)
    return 0


if __name__ == "__main__":
    sys.exit(main())
