"""The contention service: one small process beside slurmctld that gives every running
transfer of every job its fair share of the platform's links, live.

``sigsleep --phases ...`` (a job's compute, checkpoint and I/O phases) registers each of
its transfers as a file ``flows/<job>.<phase>.flow`` in the I/O directory (``/shared/io``,
shared by every container), one line of ``key=value`` fields::

    job=17 slurm_job=42 phase=1 channel=checkpoint mb=4000 time_scale=10 pid=311 nodes=c[001-004]

and removes it when the transfer ends. This service watches that directory (its
modification time, every ``tick`` seconds), and when the set changes solves max-min over
all flows with the simulator's links (:class:`harness.flow.io_network.IONetwork`) and
solver (:func:`harness.flow.max_min_rates`), and rewrites ``rates`` atomically (a
temporary file renamed over it: readers see the old set or the new one, never half)::

    17.1 1250.000000

(MB per real second; ``time_scale`` = 1 / (1 - shrink) multiplies the platform's
bandwidths as in the simulator). sigsleep re-reads its line every 0.1 s of running time.

**Channels** (the routes of :mod:`harness.flow.io_network`): ``checkpoint`` (the job's
compute nodes -> the BB node of their chassis, one flow per chassis weighted by its
nodes, as the simulator's checkpoint), ``drain`` (that BB node -> PFS, the simulator's
drain) and ``stage`` (striped over every BB node -> PFS, as the live staging of
:mod:`harness.emulation.iolive.staging`) and ``pfs`` (the compute nodes of a job on the slow tier,
LPS -> the PFS, no BB node: :mod:`harness.emulation.iolive.tiers`). A job split over chassis
moves its bytes in
proportion to its nodes there and progresses at its slowest chassis's pace (the
simulator's transfer ends with its last flow).

**Drains** (:mod:`harness.emulation.iolive.drains`): a checkpoint done, sigsleep rewrites its flow
file as a drain (channel ``drain``, ``pid=0``, with ``start= at= rate= total=``) and goes on;
the service then moves it itself: whenever it publishes a new rate for a drain it writes
back the MB left at that moment (so the file says how far the drain is), and when the
drain ends it appends its record to ``drains.jsonl`` and removes the file.

**Nothing to lose on a restart.** The service keeps no state: the flow files are the
state. Killed and started again (the controller's entrypoint restarts it), it reads
them and rewrites ``rates``; meanwhile every transfer keeps its last published rate.
A flow whose job Slurm no longer runs (killed with SIGKILL, which sigsleep cannot
catch to remove its file) is dropped at the next check of ``squeue`` (every
``stale_every`` seconds, with ``--squeue``); a job in stage-out keeps its drains.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np

from harness.emulation.iolive.drains import end_time, finish_drains, update_drains
from harness.emulation.iolive.flows import FLOWS_DIR, RATES, Flow, read_flows, staging_flow
from harness.emulation.iolive.io_events import ENDS_DIR, SIG_PREFIX, set_signature
from harness.emulation.iolive.transfers import active_transfers
from harness.flow import NO_LINK, max_min_rates
from harness.flow.io_network import MB, IONetwork
from harness.model.clock import VirtualClock
from harness.model.rundir import SHARED_IO
from harness.platform import Machine, load_platform

DEFAULT_DIR = SHARED_IO
DEFAULT_TICK = 0.02  # seconds between two looks at the flows directory
STALE_EVERY = 5.0  # seconds between two checks of squeue for flows of jobs gone


# -- rates: the simulator's routes and solver ------------------------------------------------
def _pieces(
    flow: Flow, net: IONetwork, machine: Machine, index: dict[str, int]
) -> list[tuple[tuple[int, ...], int]]:
    """(route, nodes) of each piece of ``flow``: per chassis, or per BB node when striped."""
    if flow.channel == "stage":
        stripes = len(net.bb_links)
        return [(net.staging(b), 0) for b in range(stripes)]  # 0: weight nodes / stripes, below
    chassis = Counter(machine.chassis_of_compute(index[n]) for n in flow.nodes)
    pieces = []
    for ch, k in sorted(chassis.items()):
        bb = machine.bbs_of_chassis(ch)[0]
        if flow.channel == "pfs":  # a job on the slow tier (LPS): its nodes write to the PFS
            route = net.direct(ch)
        else:
            route = net.checkpoint(bb, ch) if flow.channel == "checkpoint" else net.staging(bb)
        pieces.append((route, k))
    return pieces


def flow_rates(flows: list[Flow], machine: Machine) -> np.ndarray:
    """MB per real second of each flow, all sharing ``machine``'s links (max-min)."""
    if not flows:
        return np.zeros(0)
    net = IONetwork.from_platform(machine)
    index = {name: i for i, name in enumerate(machine.compute_nodes())}
    rows: list[tuple[int, ...]] = []
    weights: list[float] = []
    owner: list[tuple[int, float]] = []  # (flow, its share of the flow's bytes)
    for f, flow in enumerate(flows):
        n = len(flow.nodes)
        pieces = _pieces(flow, net, machine, index)
        for route, k in pieces:
            w = n / len(pieces) if k == 0 else float(k)
            rows.append(route)
            weights.append(w)
            owner.append((f, w / n))
    width = max(len(r) for r in rows)
    routes = np.full((len(rows), width), NO_LINK, dtype=np.int64)
    for i, route in enumerate(rows):
        routes[i, : len(route)] = route
    w_arr = np.asarray(weights)
    rates = max_min_rates(routes, np.asarray(net.network.capacities), w_arr, w_arr * net.compute_link_bps)
    out = np.full(len(flows), np.inf)
    for (f, share), rate in zip(owner, rates, strict=True):
        out[f] = min(out[f], rate / share)  # the job's pace is its slowest piece's
    return out / MB * np.asarray([f.time_scale for f in flows])


# -- the files -------------------------------------------------------------------------------
def known_flows(flows: list[Flow], machine: Machine, report: Callable[[str], None]) -> list[Flow]:
    """The flows whose nodes are all compute nodes of ``machine`` (the others reported)."""
    known = set(machine.compute_nodes())
    kept = []
    for f in flows:
        if f.channel == "stage" or known.issuperset(f.nodes):
            kept.append(f)
        else:
            report(f"harness contention: flow {f.key}: nodes {','.join(f.nodes)} are not all compute nodes")
    return kept


def write_rates(directory: Path, flows: list[Flow], rates: Iterable[float], sig: str = "") -> None:
    """``rates`` rewritten atomically (no fsync: it is rebuilt from the flows on a restart),
    after a first line with the signature of the set solved (for the event clock:
    :mod:`harness.emulation.iolive.io_events`)."""
    text = f"{SIG_PREFIX}{sig}\n" if sig else ""
    text += "".join(f"{f.key} {r:.6f}\n" for f, r in zip(flows, rates, strict=True))
    tmp = directory / f".{RATES}.{os.getpid()}.tmp"
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, directory / RATES)


def publish(directory: Path, machine: Machine, report: Callable[[str], None] = print,
            running: set[int] | None = None, now: float | None = None) -> list[Flow]:  # fmt: skip
    """One look: read the flows, drop those of jobs Slurm no longer runs, write the rates,
    move the drains whose rate changed on to ``now`` (their files rewritten)."""
    now = time.time() if now is None else now
    sig = set_signature(directory)  # before the read: a change meanwhile shows as a new set
    flows = read_flows(directory, report)
    if running is not None:
        gone = [f for f in flows if f.slurm_job is not None and f.slurm_job not in running]
        for f in gone:
            (directory / FLOWS_DIR / f"{f.key}.flow").unlink(missing_ok=True)
        flows = [f for f in flows if f not in gone]
        sig = "" if gone else sig  # solved for no set seen whole: the next look publishes it
    flows = known_flows(flows, machine, report)
    rates = flow_rates([*flows, *active_stagings(directory)], machine)  # stagings share the links
    moved = update_drains(directory / FLOWS_DIR, flows, rates[: len(flows)], now)
    write_rates(directory, flows, rates[: len(flows)], sig)  # the drains' files first: then their ends hold
    return moved


def end_drains(directory: Path, machine: Machine, flows: list[Flow], now: float | None = None) -> list[Flow]:
    """Record and remove the drains done at ``now`` (each with its time alone); the flows left."""
    now = time.time() if now is None else now
    alone = lambda f: float(flow_rates([replace(f, at=None)], machine)[0])  # noqa: E731
    return finish_drains(directory, directory / FLOWS_DIR, flows, now, alone)


def active_stagings(directory: Path) -> list[Flow]:
    """The staging command's running transfers (``active/``), as flows."""
    return [staging_flow(t.job, t.kind, t.nodes, t.mb, t.time_scale) for t in active_transfers(directory)]


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def squeue_running() -> set[int] | None:
    """Slurm job ids running, suspended, completing or staging out (the drains of a job in
    stage-out are kept: the stage-out waits for them); ``None`` if squeue does not answer."""
    try:
        res = subprocess.run(["squeue", "-h", "-t", "R,S,CG,SO", "-o", "%A"], capture_output=True, text=True,
                             timeout=30, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return {int(tok) for tok in res.stdout.split() if tok.isdigit()}


def drains_end(flows: list[Flow]) -> float:
    """When the first drain among ``flows`` ends (infinity without one)."""
    return min((end_time(f) for f in flows if f.at is not None), default=float("inf"))


def serve(directory: Path, machine: Machine, *, tick: float = DEFAULT_TICK, squeue: bool = False,
          stale_every: float = STALE_EVERY, stop: Callable[[], bool] = lambda: False,
          clock: Callable[[], float] = time.time) -> None:  # fmt: skip
    """Publish the rates whenever the set of flows changes, until ``stop()``; the drains move on
    ``clock`` (the jobs' clock: the wall clock, or the virtual clock's page)."""
    flows_dir = directory / FLOWS_DIR
    for shared in (flows_dir, directory / ENDS_DIR):
        shared.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):
            os.chmod(shared, 0o1777)  # jobs run as an unprivileged user
    seen: tuple[int, int] | None = None
    flows: list[Flow] = []
    next_stale = time.monotonic() + stale_every
    while not stop():
        changed = (flows_dir.stat().st_mtime_ns, _mtime(directory / "active"))
        running = None
        if squeue and time.monotonic() >= next_stale:
            running, next_stale = squeue_running(), time.monotonic() + stale_every
        if changed != seen or running is not None:
            seen = changed
            flows = publish(
                directory, machine, lambda m: print(m, file=sys.stderr, flush=True), running, clock()
            )
        if drains_end(flows) <= clock():  # the removal changes the directory: a new look
            flows = end_drains(directory, machine, flows, clock())
        time.sleep(tick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.emulation.iolive.contention",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--platform", default=None, help="platform TOML (default: the built-in one)")
    parser.add_argument("--dir", type=Path, default=Path(DEFAULT_DIR), help="the I/O directory")
    parser.add_argument("--tick", type=float, default=DEFAULT_TICK, help="seconds between two looks")
    parser.add_argument("--squeue", action="store_true", help="drop flows of jobs Slurm no longer runs")
    parser.add_argument(
        "--clock-page", type=Path, default=None, help="the virtual clock's page (default: wall clock)"
    )
    args = parser.parse_args(argv)
    try:
        machine = load_platform(args.platform)
        clock = VirtualClock(args.clock_page).now if args.clock_page else time.time
    except (OSError, ValueError) as exc:
        print(f"harness contention: {exc}", file=sys.stderr)
        return 2
    if not args.tick > 0:
        print(f"harness contention: --tick must be positive, not {args.tick}", file=sys.stderr)
        return 2
    serve(args.dir, machine, tick=args.tick, squeue=args.squeue, clock=clock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
