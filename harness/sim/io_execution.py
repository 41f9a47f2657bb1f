"""Jobs as phases whose I/O shares bandwidth (Kopański's IO-Aware model, Figure 2.4).

A started job stages its BB request in (PFS -> its BB nodes), then runs ``p``
compute phases with a checkpoint (compute nodes -> BB nodes, the job suspended)
between two of them; each checkpoint is drained BB -> PFS in the background while
the next phase computes; after the last phase it stages out (BB -> PFS) and ends
when the stage-out and every drain are done, or is killed at its walltime.

Transfers are flows of the :class:`~harness.flow.FlowEngine`: one flow per BB node
of the job (per BB node and chassis for checkpoints), weighted by the number of
compute nodes it stands for. The engine's next completion is one event of the
queue, moved whenever a flow starts or ends; compute phases and walltime kills are
fixed events. Staging happens inside the allocation, as in the thesis. ``striped``
(Slurm's burst-buffer pool, which has no placement) stages every job over all BB nodes
instead of its own: ``1 / B`` of the bytes per BB node, weight ``nodes / B``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from harness.flow import FlowEngine
from harness.flow.io_network import MB, IONetwork
from harness.sim.events import EventQueue

FLOWS = ("flows", -1)  # the event key of the engine's next completion
# A flow: (job row, kind, sequence number); an event: (what, job row).
FlowKey = tuple[int, str, int]
EventKey = tuple[str, int]
PHASES = ("stage_in", "compute", "checkpoint", "stage_out")


@dataclass(frozen=True)
class JobIO:
    """Per plan row: what the I/O model says about each job (times in plan seconds)."""

    nodes: np.ndarray
    walltime: np.ndarray
    compute_s: np.ndarray
    phases: np.ndarray
    comm_mb: np.ndarray
    checkpoint_mb: np.ndarray
    stage_in_mb: np.ndarray
    stage_out_mb: np.ndarray

    def take(self, row: int) -> JobIO:
        """The one job of ``row`` alone (as row 0)."""
        return JobIO(*(getattr(self, f)[row : row + 1] for f in self.__dataclass_fields__))


@dataclass
class _Job:
    row: int
    start: float
    by_bb: list[tuple[int, int]]  # (BB node, compute nodes on it)
    by_bb_chassis: list[tuple[int, int, int]]  # (BB node, chassis of the compute nodes, count)
    phase: str = "stage_in"
    done_phases: int = 0
    blocking: int = 0  # flows the current phase waits for
    drains: int = 0
    began: float = 0.0
    flows: set[FlowKey] = field(default_factory=set)


class IOExecution:
    """Runs started jobs through their phases; reports when each ends."""

    def __init__(
        self,
        net: IONetwork,
        jobs: JobIO,
        chassis_of_compute: tuple[int, ...],
        *,
        kills: bool = True,
        striped: bool = False,
    ) -> None:
        self.net = net
        self.jobs = jobs
        self.chassis = chassis_of_compute
        self.kills = kills
        self.striped = striped
        n = len(jobs.nodes)
        self.engine: FlowEngine[FlowKey] = FlowEngine(net.network.capacities, max_route=4)
        self.queue: EventQueue[EventKey] = EventQueue()
        self.running: dict[int, _Job] = {}
        self.end = np.full(n, np.nan)
        self.timeout = np.zeros(n, dtype=bool)
        self.phase_s = {p: np.zeros(n) for p in PHASES}
        self.io_bytes = np.zeros(n)
        self._ended: list[int] = []
        self._seq = 0
        # bandwidth over time: (time, bytes/s on the PFS link, on all BB-node links), one
        # row per change of the set of flows
        self.timeline: list[tuple[float, float, float]] = []
        self._recorded = -1

    # -- the simulator's side ---------------------------------------------------
    def busy(self) -> bool:
        return bool(self.running)

    def next_time(self) -> float:
        return self.queue.peek_time()

    def start(self, row: int, now: float, compute: tuple[int, ...], bb: tuple[int, ...]) -> None:
        self.engine.advance(now)  # flows started now progress from now
        by_bb = sorted(Counter(bb).items())
        by_bc = sorted(
            (b, self.chassis[c], k) for (b, c), k in Counter(zip(bb, compute, strict=True)).items()
        )
        merged: Counter[tuple[int, int]] = Counter()
        for b, ch, k in by_bc:
            merged[(b, ch)] += k
        job = _Job(row, now, by_bb, [(b, ch, k) for (b, ch), k in sorted(merged.items())], began=now)
        self.running[row] = job
        if self.kills:
            self.queue.push(now + float(self.jobs.walltime[row]), ("kill", row))
        self._stage(job, now, "stage_in", self.jobs.stage_in_mb[row])
        self._refresh_flows()

    def advance(self, now: float) -> list[int]:
        """Process every event up to ``now``; rows of the jobs that ended meanwhile."""
        self._ended = []
        while self.queue.peek_time() <= now:
            t, key = self.queue.pop()
            self.engine.advance(t)
            if key == FLOWS:
                self._flows_done(t)
            else:
                self._event(t, key)
            self._refresh_flows()
        return self._ended

    def _event(self, now: float, key: EventKey) -> None:
        """A timed event of a job: the end of a compute phase or its walltime."""
        if key[0] == "phase":
            self._compute_done(self.running[key[1]], now)
        else:
            self._kill(self.running[key[1]], now)

    # -- phases -----------------------------------------------------------------
    def _stage(self, job: _Job, now: float, phase: str, mb_per_node: float) -> None:
        job.phase, job.began = phase, now
        if self.striped:
            stripes = len(self.net.bb_links)
            share = int(self.jobs.nodes[job.row]) / stripes  # compute nodes each stripe stands for
            for b in range(stripes):
                self._add(job, "blocking", self.net.staging(b), share * mb_per_node * MB, share)
        else:
            for b, k in job.by_bb:
                self._add(job, "blocking", self.net.staging(b), k * mb_per_node * MB, k)
        if job.blocking == 0:
            self._phase_done(job, now)

    def _checkpoint(self, job: _Job, now: float) -> None:
        job.phase, job.began = "checkpoint", now
        size = float(self.jobs.checkpoint_mb[job.row]) * MB
        for b, ch, k in job.by_bb_chassis:
            self._add(job, "blocking", self.net.checkpoint(b, ch), k * size, k)
        if job.blocking == 0:
            self._phase_done(job, now)

    def _compute(self, job: _Job, now: float) -> None:
        r = job.row
        job.phase, job.began = "compute", now
        comm = float(self.jobs.comm_mb[r]) * MB * (int(self.jobs.nodes[r]) - 1) / self.net.compute_link_bps
        length = max(float(self.jobs.compute_s[r]) / int(self.jobs.phases[r]), comm)
        self.queue.push(now + length, ("phase", r))

    def _compute_done(self, job: _Job, now: float) -> None:
        self.phase_s["compute"][job.row] += now - job.began
        job.done_phases += 1
        if job.done_phases < int(self.jobs.phases[job.row]):
            self._checkpoint(job, now)
        else:
            self._stage(job, now, "stage_out", self.jobs.stage_out_mb[job.row])

    def _phase_done(self, job: _Job, now: float) -> None:
        """The blocking transfers of the current phase are all done."""
        self.phase_s[job.phase][job.row] += now - job.began
        if job.phase == "stage_in":
            self._compute(job, now)
        elif job.phase == "checkpoint":
            size = float(self.jobs.checkpoint_mb[job.row]) * MB
            for b, k in job.by_bb:
                self._add(job, "drain", self.net.staging(b), k * size, k)
            self._compute(job, now)
        else:
            job.phase, job.began = "draining", now
            if job.drains == 0:
                self._finish(job, now, timeout=False)

    # -- flows ------------------------------------------------------------------
    def _add(self, job: _Job, kind: str, route: tuple[int, ...], size: float, k: float) -> None:
        if size <= 0:
            return
        self._seq += 1
        key = (job.row, kind, self._seq)
        cap = k * self.net.compute_link_bps
        self.engine.add(key, route, size, weight=k, cap=cap, group=job.row)
        job.flows.add(key)
        if kind == "blocking":
            job.blocking += 1
        else:
            job.drains += 1
        self.io_bytes[job.row] += size

    def _flows_done(self, now: float) -> None:
        for key in self.engine.finished():
            self.engine.remove(key)
            job = self.running[key[0]]
            job.flows.discard(key)
            if key[1] == "blocking":
                job.blocking -= 1
                if job.blocking == 0:
                    self._phase_done(job, now)
            else:
                job.drains -= 1
                if job.drains == 0 and job.phase == "draining":
                    self._finish(job, now, timeout=False)

    def _refresh_flows(self) -> None:
        nxt = self.engine.next_completion()
        if self.engine.recomputes != self._recorded:
            self._recorded = self.engine.recomputes
            load = self.engine.link_load()
            bb = float(load[list(self.net.bb_links)].sum())
            self.timeline.append((self.engine.now, float(load[self.net.pfs]), bb))
        if nxt is None:
            self.queue.cancel(FLOWS)
        elif self.queue.time_of(FLOWS) != nxt[0]:
            self.queue.push(nxt[0], FLOWS)

    # -- ends -------------------------------------------------------------------
    def _kill(self, job: _Job, now: float) -> None:
        for key in sorted(job.flows):  # in a fixed order: the set's depends on the hash seed
            self.io_bytes[job.row] -= self.engine.remove(key)
        job.flows.clear()
        if job.phase in PHASES:
            self.phase_s[job.phase][job.row] += now - job.began
        self._finish(job, now, timeout=True)

    def _finish(self, job: _Job, now: float, *, timeout: bool) -> None:
        self.queue.cancel(("kill", job.row))
        self.queue.cancel(("phase", job.row))
        if job.phase == "draining":  # waiting for the drains counts as staging out
            self.phase_s["stage_out"][job.row] += now - job.began
        del self.running[job.row]
        self.end[job.row] = now
        self.timeout[job.row] = timeout
        self._ended.append(job.row)

    def columns(self) -> dict[str, np.ndarray]:
        """Per-row I/O figures for the results table."""
        n = len(self.end)
        io_s = (
            self.engine.group_io_s[:n]
            if len(self.engine.group_io_s) >= n
            else _pad(self.engine.group_io_s, n)
        )
        slow = self.engine.group_contended_s
        slow = slow[:n] if len(slow) >= n else _pad(slow, n)
        cols = {f"{p}_s": self.phase_s[p] for p in PHASES}
        cols.update({"io_s": io_s, "io_bytes": self.io_bytes, "contended_s": slow})
        return cols


def solo_runtime(
    net: IONetwork,
    jobs: JobIO,
    chassis: tuple[int, ...],
    row: int,
    compute: tuple[int, ...],
    bb: tuple[int, ...],
    *,
    striped: bool = False,
) -> float:
    """The job's runtime alone on the machine (no other transfer, no walltime): the
    contention-free reference of its dilation."""
    alone = IOExecution(net, jobs.take(row), chassis, kills=False, striped=striped)
    alone.start(0, 0.0, compute, bb)
    while alone.busy():
        alone.advance(alone.next_time())
    return float(alone.end[0])


def _pad(arr: np.ndarray, n: int) -> np.ndarray:
    return np.concatenate((arr, np.zeros(n - len(arr))))
