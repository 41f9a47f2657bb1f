"""Staging semantics of the io-aware simulator: *inside* the allocation or *outside* it.

``inside`` (the thesis, :class:`~harness.sim.io_execution.IOExecution`): a started
job holds its compute nodes and its burst buffer from stage-in start to stage-out end.

``outside`` (Slurm's burst-buffer life cycle, which Cerberus assumes): a policy's
start takes the job's BB shares and begins its stage-in; the compute nodes stay free.
Once staged in, the job takes compute nodes (jobs staged in take nodes first come,
first served, before the policy is asked again): the nodes the policy chose when they
are still free, else the lowest free ones, each keeping the BB node of the share it
replaces. It frees them when its last compute phase ends, or at ``run start +
walltime`` (the walltime bounds the run only, as in Slurm), then stages out; its burst
buffer is held until the stage-out and every checkpoint drain are done. Results:
``start``/``end`` bound the run on the compute nodes (Slurm's start and end);
``bb_start``/``bb_end`` bound the BB hold; ``node_wait_s`` is the time between the
end of stage-in and the run start.

``pool`` (Slurm's ``burst_buffer/lua`` pool, what a live ``--model io-aware`` run does):
``outside``, but the pool has no placement: a job's stage-in and stage-out are striped
over every BB node (``1 / B`` of the bytes each, weight ``nodes / B``, capped at that
share of its cards), and its checkpoints go to the BB node of each compute node's
chassis, as the live contention service routes them (docs/io-live.md); staged-in jobs
take nodes as Slurm's backfill gives them: in order, and a later one when it does not
delay the first (or, as :class:`SlurmPasses` says, strictly in order for ``sched/builtin``,
or on the nodes the ordering agent released them on, held from the release).

The tick-aware twin adds when Slurm acts (:class:`SlurmPasses`): a stage-in begins a
little after the pass that picked the job (Slurm runs it through its script daemon), and
a staged-in job takes nodes only on a later pass, when it is launched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.flow.io_network import IONetwork
from harness.model.io_models import IO_AWARE
from harness.model.staging_names import OFF_ALLOCATION, STAGE_INS, STAGINGS
from harness.platform import Machine
from harness.policies.state import Allocation, Topology
from harness.sim.events import next_pass
from harness.sim.io_execution import EventKey, IOExecution, JobIO, _Job
from harness.sim.io_mode import io_columns, job_io
from harness.sim.machine import SimulationError
from harness.sim.staged_machine import PoolMachine, StagedMachine


def check_staging(staging: str, model: str, stage_in: str = "policy") -> None:
    if staging not in STAGINGS:
        raise ValueError(f"unknown staging '{staging}' (stagings: {', '.join(STAGINGS)})")
    if staging in OFF_ALLOCATION and model != IO_AWARE:
        raise ValueError("staging outside the allocation needs the io-aware job model (--model io-aware)")
    check_stage_in(stage_in)
    if stage_in == "slurm" and staging not in OFF_ALLOCATION:
        raise ValueError("Slurm begins the stage-ins only off the allocation (--staging outside or pool)")
    if stage_in == "slurm" and staging != "pool":  # outside places shares on BB nodes: no pool
        raise ValueError("Slurm's stage-in rule is that of its pool: --staging pool, not outside")


def check_stage_in(stage_in: str) -> None:
    if stage_in not in STAGE_INS:
        raise ValueError(f"unknown stage-in rule '{stage_in}' (known: {', '.join(STAGE_INS)})")


STAGED_STARTS = ("in-order", "backfill", "reserved")


@dataclass(frozen=True)
class SlurmPasses:
    """When Slurm acts on a job with a burst buffer (plan time; all 0: the ideal twin).

    Slurm begins a stage-in ``stage_delay`` after the pass that picked the job (its script
    daemon runs the Lua call, which starts the staging), and starts a staged-in job on
    the first pass after (every ``tick``), ``start_delay`` after that pass (the launch).
    ``staged_start``, how staged-in jobs get nodes: ``in-order`` (first come, first served:
    ``sched/builtin``), ``backfill`` (in order, and a later one when it does not delay the
    first: ``sched/backfill``) or ``reserved`` (the ordering agent: a job keeps the nodes it
    was released on from its release, so they idle while it stages in). ``stage_in``, who
    begins a stage-in: the ``policy``, or ``slurm``'s own scheduler as soon as the pool has
    room (:mod:`harness.sim.slurm_stage_in`); staged-in jobs then take nodes in queue order.
    """

    tick: float = 0.0
    stage_delay: float = 0.0
    start_delay: float = 0.0
    staged_start: str = "in-order"
    stage_in: str = "policy"

    def __post_init__(self) -> None:
        if self.staged_start not in STAGED_STARTS:
            raise ValueError(
                f"unknown staged start {self.staged_start!r} (known: {', '.join(STAGED_STARTS)})"
            )
        check_stage_in(self.stage_in)
        if self.stage_in == "slurm" and self.staged_start == "reserved":
            raise ValueError("Slurm begins the stage-ins itself only without the ordering agent")

    def start_at(self, now: float) -> float:
        return next_pass(now, self.tick) + self.start_delay


PLACE: EventKey = ("place", -1)  # the next placement of staged-in jobs on compute nodes


class OutsideStaging(IOExecution):
    """:class:`IOExecution` with Slurm's life cycle: stage-in and stage-out off the compute nodes.

    ``advance`` reports the rows whose resources changed (nodes freed at the end of the
    run, burst buffer at the end of stage-out): the simulator then asks the policy.
    ``end`` is the end of the run; ``bb_end`` that of the BB hold.
    """

    def __init__(
        self,
        net: IONetwork,
        jobs: JobIO,
        chassis: tuple[int, ...],
        machine: StagedMachine,
        job_ids: np.ndarray,
        pool_bb: tuple[int, ...] | None = None,
        passes: SlurmPasses | None = None,
    ) -> None:
        super().__init__(net, jobs, chassis, striped=pool_bb is not None)
        self.machine = machine
        self.job_ids = job_ids
        self.pool_bb = pool_bb  # pool: the BB node of each compute node's chassis (checkpoints)
        self.passes = passes or SlurmPasses()
        n = len(jobs.nodes)
        self.bb_start, self.bb_end = np.full(n, np.nan), np.full(n, np.nan)
        self.run_start = np.full(n, np.nan)
        self.node_wait = np.zeros(n)
        self.stage_wait = np.zeros(n)  # from the pass that picked the job to its stage-in
        self.allocation: list[Allocation | None] = [None] * n  # the policy's (BB shares held)
        self.io_allocation: list[Allocation | None] = [None] * n  # the BB nodes checkpoints go to
        self.waiting: list[int] = []  # staged in, waiting for compute nodes (first come, first served)
        # A policy's choice of the staged-in rows to run now (harness.sim.staged_runs), else the order
        self.run_selector: Callable[[list[int], float], list[int]] | None = None
        self._wanted: dict[int, Allocation] = {}

    def start(self, row: int, now: float, compute: tuple[int, ...], bb: tuple[int, ...]) -> None:
        self.engine.advance(now)
        job = _Job(row, now, sorted(Counter(bb).items()), [], began=now)
        self.running[row] = job
        self.bb_start[row] = now
        self._wanted[row] = Allocation(compute, bb)
        if self.passes.staged_start == "reserved":
            self.machine.take_nodes(int(self.job_ids[row]), compute, now)
        if self.passes.stage_delay > 0:
            job.phase = "queued"  # the BB is allocated; the staging starts a little later
            self.stage_wait[row] = self.passes.stage_delay
            self.queue.push(now + self.passes.stage_delay, ("stage", row))
            return
        self._stage(job, now, "stage_in", self.jobs.stage_in_mb[row])
        self._refresh_flows()

    def _event(self, now: float, key: EventKey) -> None:
        if key == PLACE:
            self._place(now)
        elif key[0] == "stage":
            self._stage(self.running[key[1]], now, "stage_in", self.jobs.stage_in_mb[key[1]])
        else:
            super()._event(now, key)

    def _place_soon(self, now: float) -> None:
        """Staged-in jobs take free nodes now, or (tick-aware) on the next pass. A policy's
        selection waits for every event of this instant, so that it sees all jobs staged in."""
        at = self.passes.start_at(now)
        if at <= now and self.run_selector is None:
            self._place(now)
            return
        queued = self.queue.time_of(PLACE)
        if queued is None or at < queued:
            self.queue.push(at, PLACE)

    # -- the run on compute nodes --------------------------------------------------
    def _phase_done(self, job: _Job, now: float) -> None:
        if job.phase != "stage_in":
            super()._phase_done(job, now)
            return
        self.phase_s["stage_in"][job.row] += now - job.began
        job.phase, job.began = "waiting", now
        self.waiting.append(job.row)
        self._place_soon(now)

    def first_waiting(self) -> int | None:
        """The first plan row (in queue order) of the staged-in jobs waiting for nodes."""
        return min(self.waiting, default=None)

    def _place(self, now: float) -> None:
        """Give compute nodes to the staged-in jobs (see :class:`SlurmPasses`): in order,
        while the first one fits, then with ``backfill`` to later ones (:meth:`_backfill`);
        ``reserved`` jobs hold theirs already."""
        if self.passes.staged_start == "reserved":
            for row in self.waiting:
                self._take_nodes(row, now)
            self.waiting.clear()
            return
        if self.run_selector is not None:
            for row in self.run_selector(list(self.waiting), now) if self.waiting else []:
                if int(self.jobs.nodes[row]) > self.machine.free_count:
                    raise SimulationError(f"job {int(self.job_ids[row])} was chosen to run on busy nodes")
                self.waiting.remove(row)
                self._take_nodes(row, now)
            return
        if self.passes.stage_in == "slurm":
            self.waiting.sort()  # Slurm's priority order: the queue's (rows are in submission order)
        while self.waiting and self.machine.free_count >= int(self.jobs.nodes[self.waiting[0]]):
            self._take_nodes(self.waiting.pop(0), now)
        if self.passes.staged_start == "backfill" and len(self.waiting) > 1:
            self._backfill(now)

    def _backfill(self, now: float) -> None:
        """A later staged-in job takes free nodes if it does not delay the first: its run
        ends (by its walltime) before the first's reserved start, or it leaves the nodes
        the first needs then (Slurm reserves nodes for its highest-priority waiting job)."""
        need = int(self.jobs.nodes[self.waiting[0]])
        shadow, extra = self._reservation(need, now)
        for row in list(self.waiting[1:]):
            nodes = int(self.jobs.nodes[row])
            if nodes > self.machine.free_count:
                continue
            ends_before = now + float(self.jobs.walltime[row]) <= shadow
            if ends_before or nodes <= extra:
                extra -= 0 if ends_before else nodes
                self.waiting.remove(row)
                self._take_nodes(row, now)

    def _reservation(self, need: int, now: float) -> tuple[float, int]:
        """When ``need`` nodes are free at the latest (running jobs end by their walltime),
        and how many more than ``need`` are free then."""
        free = self.machine.free_count
        for end, nodes in sorted((j.expected_end, j.nodes) for j in self.machine.running.values()):
            free += nodes
            if free >= need:
                return max(end, now), free - need
        return float("inf"), 0

    def _take_nodes(self, row: int, now: float) -> None:
        free = self.machine.free
        wanted = self._wanted.pop(row)
        compute = wanted.compute  # reserved: taken at the decision
        if self.passes.staged_start != "reserved":
            chosen = set(wanted.compute)
            spare = iter(c for c in range(len(free)) if free[c] and c not in chosen)
            compute = tuple(c if free[c] else next(spare) for c in wanted.compute)
            self.machine.take_nodes(int(self.job_ids[row]), compute, now)
        bb = wanted.bb if self.pool_bb is None else tuple(self.pool_bb[c] for c in compute)
        # Slurm's pool places no share (the policy's shares are nominal): the results show the
        # BB node each compute node checkpoints to
        self.allocation[row] = Allocation(compute, bb if self.passes.stage_in == "slurm" else wanted.bb)
        self.io_allocation[row] = Allocation(compute, bb)
        job = self.running[row]
        job.by_bb = sorted(Counter(bb).items())  # the drains' BB nodes
        merged: Counter[tuple[int, int]] = Counter(
            (b, self.chassis[c]) for b, c in zip(bb, compute, strict=True)
        )
        job.by_bb_chassis = [(b, ch, k) for (b, ch), k in sorted(merged.items())]
        self.run_start[row] = now
        self.node_wait[row] = now - job.began
        if self.kills:
            self.queue.push(now + float(self.jobs.walltime[row]), ("kill", row))
        self._compute(job, now)

    def _compute_done(self, job: _Job, now: float) -> None:
        if job.done_phases + 1 >= int(self.jobs.phases[job.row]):
            self._release_nodes(job, now)
        super()._compute_done(job, now)

    def _release_nodes(self, job: _Job, now: float) -> None:
        self.end[job.row] = now
        self.queue.cancel(("kill", job.row))
        self.machine.release_nodes(int(self.job_ids[job.row]))
        self._ended.append(job.row)
        self._place_soon(now)

    # -- ends ------------------------------------------------------------------------
    def _kill(self, job: _Job, now: float) -> None:
        """At run start + walltime: transfers in flight are lost; the nodes are freed; stage-out."""
        for key in sorted(job.flows):  # in a fixed order: the set's depends on the hash seed
            self.io_bytes[job.row] -= self.engine.remove(key)
        job.flows.clear()
        job.blocking = job.drains = 0
        self.queue.cancel(("phase", job.row))
        if job.phase in ("compute", "checkpoint"):
            self.phase_s[job.phase][job.row] += now - job.began
        self.timeout[job.row] = True
        self._release_nodes(job, now)
        self._stage(job, now, "stage_out", self.jobs.stage_out_mb[job.row])

    def _finish(self, job: _Job, now: float, *, timeout: bool) -> None:
        if job.phase == "draining":  # waiting for the drains counts as staging out
            self.phase_s["stage_out"][job.row] += now - job.began
        del self.running[job.row]
        self.bb_end[job.row] = now
        self.machine.release_bb(int(self.job_ids[job.row]))
        self._ended.append(job.row)

    def solo_allocations(self) -> list[Allocation | None]:
        """Where each job's dilation reference runs alone (None: no reference computed)."""
        return self.io_allocation

    def result_columns(self) -> dict[str, np.ndarray]:
        """The io-aware columns, plus the BB hold and the wait for nodes.

        Dilation compares the life cycle without the waits for Slurm (for its staging to
        begin, for nodes: stage-in, run, stage-out) with the job alone, which never waits.
        """
        busy = self.bb_end - self.bb_start - self.node_wait - self.stage_wait
        cols = io_columns(self, self.end - busy, self.solo_allocations())
        cols.update({"bb_start": self.bb_start, "bb_end": self.bb_end, "node_wait_s": self.node_wait})
        return cols


def outside_execution(
    plan: pd.DataFrame,
    platform: Machine,
    topology: Topology,
    *,
    seed: int,
    pool: bool = False,
    passes: SlurmPasses | None = None,
    kind: type[OutsideStaging] = OutsideStaging,
) -> tuple[OutsideStaging, StagedMachine]:
    """The execution (a ``kind``) and the machine it shares with the simulator (``plan``
    sorted as simulated)."""
    net = IONetwork.from_platform(platform)
    passes = passes or SlurmPasses(staged_start="backfill" if pool else "in-order")
    machine = PoolMachine(topology) if passes.stage_in == "slurm" else StagedMachine(topology)
    ids = plan["job_id"].to_numpy(np.int64)
    chassis = topology.chassis_of_compute
    pool_bb = tuple(chassis_bb_node(platform, ch) for ch in chassis) if pool else None
    execution = kind(net, job_io(plan, seed), chassis, machine, ids, pool_bb, passes)
    return execution, machine


def chassis_bb_node(platform: Machine, chassis: int) -> int:
    """The BB node a chassis's compute nodes checkpoint to (its first, as the live service)."""
    local = platform.bbs_of_chassis(chassis)
    if not local:
        raise SimulationError(f"chassis {chassis} has no BB node: its checkpoints have nowhere to go")
    return local[0]
